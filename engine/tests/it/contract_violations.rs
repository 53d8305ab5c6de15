//! Contract violations are not weather: never retried, never masked, counted and reported.
//!
//! - A live MoldUDP64 line fed, over loopback, hand-laid packets from the MoldUDP64 1.0 and
//!   ITCH 5.0 specifications, two of which break them: a packet whose header promises more
//!   message blocks than it holds, and an ITCH message one byte shorter than its type's
//!   length. Both are counted by kind, health turns Degraded with `contract_violation` and
//!   stays so to the end of the run, and the good messages around them are applied.
//! - A SoupBinTCP line whose server, after a good login and one message, sends a Login
//!   Accepted frame of the wrong length: counted, and the line ends in error without
//!   reconnecting (a reconnect would resume into the same bytes).
//!
//! Every MoldUDP64 packet is sent before the line runs (the socket is bound at open, so the
//! kernel holds them); the SoupBinTCP server is a thread with a fixed script. Nothing here
//! depends on timing.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, UdpSocket};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use ticklane_engine::book::BookConfig;
use ticklane_engine::health::{Condition, Health, HealthState};
use ticklane_engine::live::{run_line_watched, LineSource, LineSourceReport};
use ticklane_engine::overload::OverloadConfig;
use ticklane_engine::pipeline::{
    MoldFeedConfig, MoldSource, PipelineConfig, SoupFeedConfig, SoupSource, SourceEnd, SourceError,
    ViolationKind,
};
use ticklane_feed::moldudp64::RecoveryConfig;
use ticklane_feed::net::UdpFeedConfig;
use ticklane_feed::resilience::BackoffConfig;
use ticklane_feed::soupbintcp::{ClientConfig, Credentials};
use ticklane_testkit::itch::START_OF_MESSAGES;
use ticklane_testkit::moldudp64::{self, block};
use ticklane_testkit::soupbintcp::frame as soup_frame;

const SESSION: &[u8; 10] = b"VIOLATION1";

/// A MoldUDP64 header (spec: the session in 10 ASCII bytes, sequence u64, count u16, big-endian).
fn header(seq: u64, count: u16) -> Vec<u8> {
    moldudp64::header(SESSION, seq, count)
}

/// An ITCH 5.0 System Event ('S', 12 bytes: type, locate 2, tracking 2, timestamp 6, event
/// code), cut to `len` bytes.
fn system_event(len: usize) -> Vec<u8> {
    let mut m = START_OF_MESSAGES.to_vec();
    m.truncate(len);
    m
}

fn pipeline() -> PipelineConfig {
    PipelineConfig {
        books: BookConfig {
            max_orders: 1 << 10,
            max_books: 16,
            levels_per_side: 16,
        },
        ring_slots: 1 << 10,
        ..PipelineConfig::default()
    }
}

#[test]
fn malformed_packets_and_wrong_lengths_are_counted_and_degrade_health_for_the_run() {
    let feed = MoldFeedConfig {
        udp: UdpFeedConfig {
            bind: SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)),
            ..UdpFeedConfig::default()
        },
        recovery: RecoveryConfig {
            start_sequence: Some(1),
            retransmission: false,
            ..RecoveryConfig::default()
        },
        silence_timeout: Duration::from_secs(10),
        max_duration: Some(Duration::from_secs(30)),
        ..MoldFeedConfig::default()
    };
    let source = MoldSource::open(feed, PipelineConfig::default().wait).expect("bind");
    let to = source.local_addr().expect("bound address");
    let sender = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind the sender");

    // 1: sequence 1, one good message.
    let mut p1 = header(1, 1);
    p1.extend(block(&system_event(12)));
    // 2: the header promises two blocks, the packet holds one: malformed (the second block's
    // length field would start at byte 20 + 2 + 12 = 34, where the packet ends).
    let mut p2 = header(2, 2);
    p2.extend(block(&system_event(12)));
    // 3: sequence 2 again, well formed, but its message is 11 bytes where ITCH says 12.
    let mut p3 = header(2, 1);
    p3.extend(block(&system_event(11)));
    // 4: sequence 3, good.
    let mut p4 = header(3, 1);
    p4.extend(block(&system_event(12)));
    // 5: end of session (count 0xFFFF), next sequence 4.
    let p5 = header(4, 0xFFFF);
    for p in [&p1, &p2, &p3, &p4, &p5] {
        sender.send_to(p, to).expect("send");
    }

    let health = Arc::new(Health::new());
    let run = run_line_watched(
        LineSource::Mold(source),
        pipeline(),
        None,
        OverloadConfig::default(),
        &AtomicBool::new(false),
        Some(Arc::clone(&health)),
    )
    .expect("the line runs");

    assert!(
        matches!(run.report.source.end(), SourceEnd::EndOfSession),
        "{:?}",
        run.report.source.end()
    );
    assert_eq!(run.violations.of(ViolationKind::MalformedPacket), 1);
    assert_eq!(run.violations.of(ViolationKind::MessageLength), 1);
    assert_eq!(run.violations.of(ViolationKind::MalformedFrame), 0);
    // The two good messages are applied; the short one is skipped, not masked.
    assert_eq!(run.report.book.decode_errors, 1);
    assert_eq!(run.report.book.messages, 2);

    let report = health.report();
    assert_eq!(report.state, HealthState::Degraded, "{report:?}");
    let raised: Vec<Condition> = report.reasons.iter().map(|r| r.condition).collect();
    assert_eq!(raised, [Condition::ContractViolation], "{report:?}");
    assert_eq!(report.http_status(), 200, "Degraded still serves");
}

#[test]
fn a_malformed_soupbintcp_frame_ends_the_line_and_is_never_retried() {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("listen");
    let server_addr = listener.local_addr().expect("bound");
    let server = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().expect("the line connects");
        // The login request (spec: 'L', username 6, password 10, the session in 10, sequence 20).
        let mut login = [0u8; 49];
        conn.read_exact(&mut login).expect("login request");
        assert_eq!(login[2], b'L');
        // Login Accepted: session (10, left-justified) and sequence (20, right-justified).
        let mut accepted = b"SESSION001".to_vec();
        accepted.extend_from_slice(format!("{:>20}", 1).as_bytes());
        conn.write_all(&soup_frame(b'A', &accepted)).expect("send");
        conn.write_all(&soup_frame(b'S', &system_event(12)))
            .expect("send");
        // A Login Accepted frame of 4 payload bytes where the spec says 30.
        conn.write_all(&soup_frame(b'A', b"oops")).expect("send");
        // Until the client closes its end; the listener goes back to the test, which
        // checks that nobody connected again once the line has returned.
        let mut rest = Vec::new();
        let _ = conn.read_to_end(&mut rest);
        listener
    });
    let source = SoupSource::new(
        SoupFeedConfig {
            server: server_addr,
            client: ClientConfig::new(Credentials::new(b"user", b"pass").expect("fits")),
            connect_timeout: Duration::from_secs(2),
            max_reconnects: 5,
            reconnect: BackoffConfig {
                base: Duration::from_millis(1),
                cap: Duration::from_millis(2),
            },
            reconnect_seed: Some(1),
            max_duration: Some(Duration::from_secs(20)),
            breaker: ticklane_engine::pipeline::DEFAULT_LINE_BREAKER,
        },
        PipelineConfig::default().wait,
    );
    let health = Arc::new(Health::new());
    let run = run_line_watched(
        LineSource::Soup(source),
        pipeline(),
        None,
        OverloadConfig::default(),
        &AtomicBool::new(false),
        Some(Arc::clone(&health)),
    )
    .expect("the line runs");
    assert!(
        matches!(
            run.report.source.end(),
            SourceEnd::Error(SourceError::Protocol(_))
        ),
        "{:?}",
        run.report.source.end()
    );
    assert_eq!(run.violations.of(ViolationKind::MalformedFrame), 1);
    assert_eq!(run.violations.total(), 1);
    assert_eq!(run.report.book.messages, 1, "the message before it applied");
    match &run.report.source {
        LineSourceReport::Soup(r) => assert_eq!(r.connections, 1, "{r:?}"),
        other => panic!("not SoupBinTCP: {other:?}"),
    }
    // The line has returned: any reconnect would be waiting in the listener's queue.
    let listener = server.join().expect("server");
    listener.set_nonblocking(true).expect("nonblocking");
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the line reconnected"
    );
    assert!(health.is_raised(Condition::ContractViolation));
    assert!(health.is_raised(Condition::LineEnded));
}
