//! Staggered start, in process: a line whose instance must wait answers
//! Starting from the moment it starts, opens its socket only after the wait, stays Starting
//! until its first message, and is Healthy once the session ends cleanly.
//!
//! The packets are hand-laid from the MoldUDP64 1.0 and ITCH 5.0 specifications. Bounded:
//! every wait has a deadline; the only timing asserted is a lower bound (the stagger is at
//! least as long as asked).

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use ticklane_engine::book::BookConfig;
use ticklane_engine::health::{Condition, Health, HealthState};
use ticklane_engine::live::{run_line_watched, stagger_delay, stagger_start, LineSource};
use ticklane_engine::overload::OverloadConfig;
use ticklane_engine::pipeline::{MoldFeedConfig, MoldSource, PipelineConfig, SourceEnd};
use ticklane_feed::moldudp64::RecoveryConfig;
use ticklane_feed::net::UdpFeedConfig;
use ticklane_testkit::itch::START_OF_MESSAGES;
use ticklane_testkit::moldudp64;

const DEADLINE: Duration = Duration::from_secs(20);

/// A MoldUDP64 packet of session `STAGGER001` whose header announces `count` messages.
fn packet(seq: u64, count: u16, messages: &[&[u8]]) -> Vec<u8> {
    moldudp64::packet_with_count(b"STAGGER001", seq, count, messages)
}

#[test]
fn a_staggered_line_answers_starting_until_its_first_message() {
    // Instance 2 of step 300 ms, cap 10 s: at least 600 ms (the jitter adds under 300 ms).
    let step = Duration::from_millis(300);
    let delay = stagger_delay(2, step, Duration::from_secs(10), 99);
    let floor = Duration::from_millis(600);
    assert!(delay >= floor && delay < floor + step, "{delay:?}");

    let health = Arc::new(Health::new());
    let (addr_tx, addr_rx) = mpsc::channel::<SocketAddr>();
    let started = Instant::now();
    let line = {
        let health = Arc::clone(&health);
        std::thread::spawn(move || {
            let stop = AtomicBool::new(false);
            assert!(stagger_start(Some(&health), delay, &stop));
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
                max_duration: Some(DEADLINE),
                ..MoldFeedConfig::default()
            };
            let source = MoldSource::open(feed, PipelineConfig::default().wait).expect("bind");
            addr_tx
                .send(source.local_addr().expect("bound"))
                .expect("send");
            let pipeline = PipelineConfig {
                books: BookConfig {
                    max_orders: 1 << 10,
                    max_books: 16,
                    levels_per_side: 16,
                },
                ring_slots: 1 << 10,
                ..PipelineConfig::default()
            };
            run_line_watched(
                LineSource::Mold(source),
                pipeline,
                None,
                OverloadConfig::default(),
                &stop,
                Some(health),
            )
            .expect("the line runs")
        })
    };

    // The first state anyone reads that is not the empty report of a process not yet begun
    // is Starting.
    let first = loop {
        let r = health.report();
        if !r.reasons.is_empty() {
            break r;
        }
        assert!(started.elapsed() < DEADLINE, "Starting never raised");
        std::thread::yield_now();
    };
    assert_eq!(first.state, HealthState::Starting, "{first:?}");
    assert_eq!(first.http_status(), 200);

    let to = addr_rx
        .recv_timeout(DEADLINE)
        .expect("the line opens its socket");
    assert!(
        started.elapsed() >= delay,
        "the socket opened after {:?}, before the stagger of {delay:?}",
        started.elapsed()
    );
    // Open, but nothing received yet: still Starting.
    assert!(health.is_raised(Condition::Starting));

    let sender = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind the sender");
    // ITCH 5.0 System Event 'S' (12 bytes), then end of session (count 0xFFFF) at 2.
    let event: &[u8] = &START_OF_MESSAGES;
    sender.send_to(&packet(1, 1, &[event]), to).expect("send");
    sender.send_to(&packet(2, 0xFFFF, &[]), to).expect("send");
    let run = line.join().expect("the line thread");
    assert!(
        matches!(run.report.source.end(), SourceEnd::EndOfSession),
        "{:?}",
        run.report.source.end()
    );
    assert_eq!(run.report.book.messages, 1);
    let end = health.report();
    assert_eq!(end.state, HealthState::Healthy, "{end:?}");
    assert!(end.reasons.is_empty(), "{end:?}");
}
