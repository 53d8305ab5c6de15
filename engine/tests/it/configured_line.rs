//! `ticklane run --config` through the library, without a process: the line and what runs
//! beside it (here the admin server and the snapshot), with the notices the binary prints
//! taken as values. The simulator is started at the `Ready` notice, once the line's socket
//! is bound, so nothing is sent before anyone listens.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use ticklane_engine::config::RunConfig;
use ticklane_engine::health::Health;
use ticklane_engine::live::{run_configured_line, ConfiguredLineOptions, LineSource, RunNotice};
use ticklane_engine::snapshot::SnapshotReader;
use ticklane_feed::moldudp64::Session;
use ticklane_sim::{MoldSimConfig, MoldSimulator, Rate};

use crate::util::log;

#[test]
fn a_configured_line_runs_with_its_admin_server_and_snapshot_through_the_library() {
    let dir = tempfile::tempdir().expect("tempdir");
    let snapshot = dir.path().join("line.snap");
    let path = dir.path().join("line.toml");
    std::fs::write(
        &path,
        format!(
            "[feed]\nkind = \"moldudp64\"\nbind = \"127.0.0.1:0\"\nsilence_timeout_s = 2.0\n\n\
             [snapshot]\npath = \"{}\"\n",
            snapshot.display()
        ),
    )
    .expect("write config");
    let config = RunConfig::load(&path).expect("a valid config");
    let log = log(20_000, 41);
    let options = ConfiguredLineOptions {
        admin: Some("127.0.0.1:0".parse().expect("address")),
        ..ConfiguredLineOptions::default()
    };
    let (mut said, mut admin, mut sim) = (Vec::new(), None, None);
    let mut health_seen = None;
    let ended = run_configured_line(
        &config,
        options,
        Arc::new(Health::new()),
        &Arc::new(AtomicBool::new(false)),
        &mut |notice| match notice {
            RunNotice::NoRequestServer => said.push("no request server"),
            RunNotice::Admin { addr, token } => {
                said.push("admin");
                assert!(!token, "no token configured");
                admin = Some(addr);
            }
            RunNotice::Ready(LineSource::Mold(source)) => {
                said.push("ready");
                // The admin server answers before the line runs: Starting or Healthy, 200.
                health_seen = admin.map(get_health);
                let to = source.local_addr().expect("bound");
                let mut c = MoldSimConfig::new(Session::new(b"LIBRARY").expect("fits"), to);
                c.rate = Rate::per_second(200_000);
                sim = Some(MoldSimulator::start(Arc::clone(&log), c).expect("simulator"));
            }
            _ => said.push("other"),
        },
        None,
    )
    .expect("the line runs");
    sim.expect("started at Ready")
        .stop()
        .expect("simulator stops");
    assert_eq!(said, ["no request server", "admin", "ready"]);
    let health = health_seen.expect("asked");
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    assert!(ended.unrecoverable, "no retransmission server");
    assert!(ended.served.is_none(), "no subscriber server asked for");
    assert_eq!(ended.run.report.book.messages, log.len() as u64);
    let header = SnapshotReader::open(&snapshot).expect("open").header();
    assert!(header.is_closed() && !header.is_maybe_bad(), "{header:?}");
}

/// `GET /health` on the admin server: the whole answer.
fn get_health(addr: std::net::SocketAddr) -> String {
    let mut stream = TcpStream::connect(addr).expect("connect to admin");
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    stream
        .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .expect("send");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
}
