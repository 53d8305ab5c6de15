//! A logged-in client that goes silent is cut loose with reason `I`
//! within a bound, and a library client that subscribes to nothing keeps itself alive with
//! heartbeats past the idle timeout. The login bytes are laid by hand from the protocol's
//! field table (`ticklane_engine::serve::protocol`), not encoded by the code under test.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use ticklane_engine::overload::{EventFanout, SubscriberHub};
use ticklane_engine::serve::client::{ClientError, Ended, Session};
use ticklane_engine::serve::protocol::Reason;
use ticklane_engine::serve::{start_server, AdmitAll, ServeConfig, ServeHandle};

use crate::util::serve::{hub_config, SharedModel};

const TIMEOUT: Duration = Duration::from_secs(5);

fn serve(heartbeat_ms: u32, idle_timeout: Duration) -> (ServeHandle, EventFanout) {
    let model = SharedModel::default();
    model.add_symbol(b"AAPL    ", 1);
    let (hub, mut fanout) = SubscriberHub::new(hub_config());
    let server = start_server(
        ServeConfig {
            heartbeat_ms,
            idle_timeout,
            ..ServeConfig::new("127.0.0.1:0".parse().unwrap())
        },
        Some(hub),
        Box::new(model),
        Box::new(AdmitAll),
    )
    .unwrap();
    fanout.accept_subscribers();
    (server, fanout)
}

/// `L`, version 1, account "quiet" padded to 16: length 19 (type byte + 18).
fn login_bytes() -> Vec<u8> {
    let mut bytes = vec![0, 19, b'L', 0, 1];
    bytes.extend_from_slice(b"quiet           ");
    bytes
}

#[test]
fn a_client_that_logs_in_then_goes_silent_is_cut_with_the_idle_reason() {
    let idle = Duration::from_millis(200);
    let (server, _fanout) = serve(50, idle);
    let addr: SocketAddr = server.local_addr();
    let mut raw = TcpStream::connect(addr).unwrap();
    raw.set_read_timeout(Some(TIMEOUT)).unwrap();
    // The server last heard the client when the login arrived, which is after this instant
    // and before the `A` came back: timed from here, the cut can come no sooner than the
    // idle timeout (timed from the `A`, it could, by the login's round trip).
    let logged_in = Instant::now();
    raw.write_all(&login_bytes()).unwrap();
    // `A`: length 7, version 1, heartbeat 50 ms.
    let mut accepted = [0u8; 9];
    raw.read_exact(&mut accepted).unwrap();
    assert_eq!(accepted, [0, 7, b'A', 0, 1, 0, 0, 0, 50]);
    // From here on the client says nothing: the server heartbeats (`H`), then cuts.
    let mut said = Vec::new();
    raw.read_to_end(&mut said).unwrap();
    let took = logged_in.elapsed();
    let heartbeats = said.chunks(3).take_while(|f| *f == [0, 1, b'H']).count();
    assert!(heartbeats >= 1, "no heartbeat before the cut: {said:?}");
    assert_eq!(
        &said[heartbeats * 3..],
        [0, 2, b'C', b'I'],
        "the frames after the heartbeats"
    );
    assert!(took >= idle, "cut after {took:?}, before the idle timeout");
    assert!(
        took < idle + Duration::from_secs(3),
        "cut only after {took:?}"
    );
    let counts = server.counters().load();
    assert_eq!((counts.cut_idle, counts.cut_loose), (1, 0));
    assert_eq!(
        Reason::Idle.to_string(),
        "idle: nothing heard within the server's idle timeout"
    );
}

#[test]
fn a_library_client_subscribed_to_nothing_stays_past_the_idle_timeout() {
    let idle = Duration::from_millis(400);
    let (server, _fanout) = serve(50, idle);
    let mut session = Session::connect(server.local_addr(), "idle-ok", TIMEOUT).unwrap();
    // The client only reads: recv answers the server's heartbeats with its own and returns
    // only when the session ends, which here is the server's stop (reason `R`), not a cut.
    let reader = std::thread::spawn(move || match session.recv() {
        Ok(m) => panic!("unexpected message {m:?}"),
        Err(ClientError::Ended { why, .. }) => why,
        Err(e) => panic!("{e}"),
    });
    // Five idle timeouts of doing nothing: this wait is the point of the test, not a
    // guess at when something happens.
    std::thread::sleep(5 * idle);
    assert_eq!(
        server.counters().load().clients,
        1,
        "the client was dropped"
    );
    let counts = server.stop().unwrap();
    let end = reader.join().unwrap();
    assert!(
        matches!(end, Ended::ComeBackLater(Reason::Restarting, _)),
        "{end:?}"
    );
    assert_eq!(counts.cut_idle, 0);
}
