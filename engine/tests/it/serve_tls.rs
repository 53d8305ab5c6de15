//! The subscriber server over TLS on loopback, with certificates made in the test: a client
//! that trusts the server's CA gets the image and every update in order; a client that does
//! not speak TLS, trusts another CA, or expects another name is refused, and the server
//! counts each failed handshake; a connection that never starts its handshake is dropped at
//! the handshake timeout and counted.

use std::io::Read;
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ticklane_engine::book::{LevelView, Side};
use ticklane_engine::overload::{EventFanout, SubscriberHub};
use ticklane_engine::serve::client::{ClientError, ClientTls, Received, Session};
use ticklane_engine::serve::protocol::{Secret, ServerMessage};
use ticklane_engine::serve::tls::{client_config, server_config, server_name};
use ticklane_engine::serve::{
    start_secure_server, AdmitAll, ServeConfig, ServeCounts, ServeHandle, ServeSecurity,
};
use ticklane_feed::itch::Price;
use ticklane_testkit::certs::TestCa;
use ticklane_testkit::{loopback, poll_until};

use crate::util::serve::{hub_config, ModelBook, SharedModel};

const AAPL: [u8; 8] = *b"AAPL    ";
const TIMEOUT: Duration = Duration::from_secs(5);

struct TlsServer {
    server: ServeHandle,
    fanout: EventFanout,
    model: SharedModel,
    _dir: tempfile::TempDir,
    ca: std::path::PathBuf,
}

fn tls_server(config: ServeConfig) -> TlsServer {
    let dir = tempfile::tempdir().expect("dir");
    let ca = TestCa::new("ticklane test CA");
    let files = ca.issue(dir.path(), "server", &["localhost", "127.0.0.1"]);
    let ca_path = ca.write(dir.path(), "ca.pem");
    let tls = server_config(&files.cert, &files.key).expect("a good certificate");
    let model = SharedModel::default();
    model.add_symbol(&AAPL, 1);
    let (hub, mut fanout) = SubscriberHub::new(hub_config());
    let server = start_secure_server(
        config,
        ServeSecurity {
            tls: Some(tls),
            ..ServeSecurity::default()
        },
        Some(hub),
        Box::new(model.clone()),
        Box::new(AdmitAll),
        Arc::default(),
    )
    .expect("server starts");
    fanout.accept_subscribers();
    TlsServer {
        server,
        fanout,
        model,
        _dir: dir,
        ca: ca_path,
    }
}

fn trusting(ca: &Path, name: &str) -> ClientTls {
    ClientTls {
        config: client_config(Some(ca)).expect("client config"),
        server_name: server_name(name).expect("name"),
    }
}

fn counts_when(server: &ServeHandle, done: impl Fn(&ServeCounts) -> bool) -> ServeCounts {
    let counters = server.counters();
    assert!(
        poll_until(Duration::from_secs(10), || done(&counters.load())),
        "counts never got there: {:?}",
        counters.load()
    );
    counters.load()
}

#[test]
fn a_client_that_trusts_the_ca_gets_the_image_and_every_update_in_order() {
    let mut s = tls_server(ServeConfig::new(loopback(0)));
    // A starting book, so that the image stands at a feed sequence of its own.
    let mut feed_seq = 1;
    let start = LevelView {
        price: Price(100_0100),
        qty: 500,
        orders: 2,
    };
    s.model
        .level(&mut s.fanout, &AAPL, feed_seq, Side::Ask, start);
    let tls = trusting(&s.ca, "127.0.0.1");
    let mut client = Session::connect_over(
        s.server.local_addr(),
        Some(&tls),
        "alice",
        &Secret::NONE,
        TIMEOUT,
    )
    .expect("logged in over TLS");
    client.subscribe("AAPL", TIMEOUT).expect("subscribe");
    let mut book = ModelBook::default();
    let mut imaged = false;
    let mut last_shares = 0;
    // Enough updates to pass the TLS session's own send buffer many times over.
    const UPDATES: u64 = 20_000;
    loop {
        match client.recv().expect("the session stays up") {
            Received::Message(m) => {
                book.apply(&m);
                if matches!(m, ServerMessage::BookImage { .. }) && !imaged {
                    imaged = true;
                    for i in 1..=UPDATES {
                        feed_seq += 1;
                        let level = LevelView {
                            price: Price(100_0000 - (i % 50) as u32 * 100),
                            qty: i,
                            orders: 1,
                        };
                        s.model
                            .level(&mut s.fanout, &AAPL, feed_seq, Side::Bid, level);
                    }
                }
                if let ServerMessage::Level { level, .. } = m {
                    assert_eq!(level.qty, last_shares + 1, "in order, none missing");
                    last_shares = level.qty;
                    if level.qty == UPDATES {
                        break;
                    }
                }
            }
            Received::Gap { expected, got } => panic!("gap: expected {expected}, got {got}"),
        }
    }
    assert_eq!(book, s.model.book(&AAPL), "the book the engine holds");
    let counts = counts_when(&s.server, |c| c.tls_established == 1);
    assert_eq!((counts.tls_failed, counts.tls_timed_out), (0, 0));
    drop(client);
    s.server.stop().expect("stops");
}

#[test]
fn plain_tcp_another_ca_and_another_name_are_refused_and_counted() {
    let s = tls_server(ServeConfig::new(loopback(0)));
    let addr = s.server.local_addr();

    let plain = Session::connect(addr, "alice", TIMEOUT);
    assert!(plain.is_err(), "a plain login on a TLS server: {plain:?}");
    counts_when(&s.server, |c| c.tls_failed == 1);

    let dir = tempfile::tempdir().expect("dir");
    let other = TestCa::new("someone else").write(dir.path(), "other.pem");
    match Session::connect_over(
        addr,
        Some(&trusting(&other, "127.0.0.1")),
        "alice",
        &Secret::NONE,
        TIMEOUT,
    ) {
        Err(ClientError::Tls { why, .. }) => {
            assert!(why.to_string().contains("certificate"), "{why}");
        }
        other => panic!("another CA: {other:?}"),
    }
    counts_when(&s.server, |c| c.tls_failed == 2);

    match Session::connect_over(
        addr,
        Some(&trusting(&s.ca, "feed.example")),
        "alice",
        &Secret::NONE,
        TIMEOUT,
    ) {
        Err(ClientError::Tls { why, .. }) => {
            assert!(why.to_string().contains("certificate"), "{why}");
        }
        other => panic!("another name: {other:?}"),
    }
    let counts = counts_when(&s.server, |c| c.tls_failed == 3);
    assert_eq!(counts.accepted, 0, "nobody logged in");
    assert_eq!(counts.tls_established, 0);
    s.server.stop().expect("stops");
}

#[test]
fn a_connection_that_never_shakes_hands_is_dropped_at_the_handshake_timeout() {
    let s = tls_server(ServeConfig {
        tls_handshake_timeout: Duration::from_millis(200),
        ..ServeConfig::new(loopback(0))
    });
    let started = Instant::now();
    let mut silent = TcpStream::connect(s.server.local_addr()).expect("connect");
    silent
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut buf = [0u8; 16];
    let n = silent.read(&mut buf).unwrap_or(0);
    assert_eq!(n, 0, "closed without a byte");
    assert!(started.elapsed() >= Duration::from_millis(200));
    let counts = counts_when(&s.server, |c| c.tls_timed_out == 1);
    assert_eq!(counts.tls_failed, 0);
    s.server.stop().expect("stops");
}
