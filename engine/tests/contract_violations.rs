//! Contract violations are not weather (issue 9, item 5): a live MoldUDP64 line fed, over
//! loopback, hand-laid packets from the MoldUDP64 1.0 and ITCH 5.0 specifications, two of
//! which break them: a packet whose header promises more message blocks than it holds, and
//! an ITCH message one byte shorter than its type's length. Both are counted by kind, health
//! turns Degraded with `contract_violation` and stays so to the end of the run, and the good
//! messages around them are applied.
//!
//! Every packet is sent before the line runs (the socket is bound at open, so the kernel
//! holds them): nothing here depends on timing.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use ticklane_engine::book::BookConfig;
use ticklane_engine::health::{Condition, Health, HealthState};
use ticklane_engine::live::{run_line_watched, LineSource};
use ticklane_engine::overload::OverloadConfig;
use ticklane_engine::pipeline::{
    MoldFeedConfig, MoldSource, PipelineConfig, SourceEnd, ViolationKind,
};
use ticklane_feed::moldudp64::RecoveryConfig;
use ticklane_feed::net::UdpFeedConfig;

const SESSION: &[u8; 10] = b"VIOLATION1";

/// A MoldUDP64 header (spec: session 10 ASCII bytes, sequence u64, count u16, big-endian).
fn header(seq: u64, count: u16) -> Vec<u8> {
    let mut p = SESSION.to_vec();
    p.extend_from_slice(&seq.to_be_bytes());
    p.extend_from_slice(&count.to_be_bytes());
    p
}

/// An ITCH 5.0 System Event ('S', 12 bytes: type, locate 2, tracking 2, timestamp 6, event
/// code), cut to `len` bytes.
fn system_event(len: usize) -> Vec<u8> {
    let mut m = vec![b'S', 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, b'O'];
    m.truncate(len);
    m
}

fn block(message: &[u8]) -> Vec<u8> {
    let mut b = (message.len() as u16).to_be_bytes().to_vec();
    b.extend_from_slice(message);
    b
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
    let pipeline = PipelineConfig {
        books: BookConfig {
            max_orders: 1 << 10,
            max_books: 16,
            levels_per_side: 16,
        },
        ring_slots: 1 << 10,
        ..PipelineConfig::default()
    };
    let run = run_line_watched(
        LineSource::Mold(source),
        pipeline,
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
