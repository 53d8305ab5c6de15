//! `ticklane sim` paced: over SoupBinTCP with `--rate` or `--speed` it serves every message
//! (it once served none), and `--rate max` says at start that it may overrun a reader while
//! the paced default does not. The count served comes from `--messages`, the messages
//! themselves are counted by the feed crate's own SoupBinTCP client.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Stdio;
use std::time::{Duration, Instant};

use ticklane_feed::soupbintcp::{ClientConfig, ClientEvent, Credentials, SoupClient};

use crate::util::{free_port, ticklane, wait_bounded, Watched, READY_WITHIN};

const MESSAGES: u64 = 3_000;

/// Logs in to `addr` from sequence 1 and counts the sequenced messages until end of
/// session, at most 20 s.
fn receive_all(addr: SocketAddr) -> (u64, bool) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_millis(50)))
        .expect("timeout");
    let origin = Instant::now();
    let mut config = ClientConfig::new(Credentials::new(b"user", b"pass").expect("fits"));
    config.next_sequence = 1;
    let mut client = SoupClient::new(config);
    client.on_connected(origin.elapsed()).expect("login queued");
    stream.write_all(client.output()).expect("send login");
    let n = client.output().len();
    client.consume_output(n);
    let (mut messages, mut ended) = (0, false);
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut buf = [0u8; 8192];
    while Instant::now() < deadline && !ended {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                client.feed(&buf[..n], origin.elapsed());
            }
            Err(_) => continue,
        }
        while let Some(event) = client.poll_event() {
            match event.expect("a valid stream") {
                ClientEvent::Sequenced { .. } => messages += 1,
                ClientEvent::EndOfSession { .. } => ended = true,
                _ => {}
            }
        }
    }
    (messages, ended)
}

/// Runs `ticklane sim --tcp` with `pace`, waits for the line naming its address, and
/// receives the whole session. (`free_port` picks a port the kernel never hands out by
/// itself, so no other test takes it before the sim binds it.)
fn serve_paced(pace: &[&str]) {
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port())
        .parse()
        .expect("address");
    let mut sim = Watched::spawn(
        ticklane()
            .args(["sim", "--tcp", &addr.to_string(), "--messages"])
            .arg(MESSAGES.to_string())
            .args(pace),
    );
    sim.wait_for_line("SoupBinTCP on", READY_WITHIN);
    let received = receive_all(addr);
    let _ = sim.child.kill();
    let _ = sim.child.wait();
    assert_eq!(
        received,
        (MESSAGES, true),
        "sim {pace:?}: (messages, end of session)"
    );
}

#[test]
fn soupbintcp_at_a_rate_serves_every_message() {
    serve_paced(&["--rate", "100000"]);
}

#[test]
fn soupbintcp_at_the_files_speed_serves_every_message() {
    serve_paced(&["--speed", "1000"]);
}

#[test]
fn soupbintcp_paced_by_default_serves_every_message() {
    serve_paced(&[]);
}

/// `ticklane sim --udp` to a socket nobody reads, with `rate`; its stdout.
fn udp_sim(rate: &[&str]) -> String {
    let sink = std::net::UdpSocket::bind("127.0.0.1:0").expect("sink");
    let to = sink.local_addr().expect("address").to_string();
    let child = ticklane()
        .args(["sim", "--udp", &to, "--messages", "2000"])
        .args(rate)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start sim");
    let out = wait_bounded(child, Duration::from_secs(30));
    assert!(out.status.success(), "sim {rate:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn only_an_unpaced_simulator_warns_that_it_may_overrun_the_reader() {
    let warning = "unpaced (--rate max): a reader may be overrun";
    assert!(udp_sim(&["--rate", "max"]).contains(warning));
    assert!(!udp_sim(&[]).contains(warning));
    assert!(!udp_sim(&["--rate", "50000"]).contains(warning));
}

#[test]
fn a_rate_that_is_neither_a_number_nor_max_is_a_usage_error() {
    for bad in ["0", "fast", "-1"] {
        let out = ticklane()
            .args(["sim", "--udp", "127.0.0.1:9", &format!("--rate={bad}")])
            .output()
            .expect("run sim");
        assert_eq!(out.status.code(), Some(2), "--rate {bad}: {out:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--rate"));
    }
}
