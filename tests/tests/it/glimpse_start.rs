//! A line started mid-day from a GLIMPSE snapshot, with no retransmission server at all:
//! the simulator serves a day as MoldUDP64 (to a multicast group, so that a line can join it
//! late) and GLIMPSE snapshots of it; the line joins 0.5, 1, 2 and 5 s into the day, loads a
//! snapshot while it holds the live packets, applies the live stream from the sequence the
//! snapshot names, and ends with the whole day's books, every level of them. A second after
//! the join (time for the first snapshot to load on a busy 2-core machine, so that the loss
//! comes after it) the live line loses 5,000 messages: with no server to ask, the line
//! rebuilds its books from a new snapshot, and with a server it does the same for a gap
//! past `max_recovery_gap` rather than ask for it. Nothing is declared lost either way.
//!
//! Bounded: each day is some 6.4 s at 125,000 msg/s, and each line gives up after 60 s.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ticklane_engine::live::LineSourceReport;
use ticklane_engine::live::{ExchangeSim, ExchangeSimConfig, GlimpseServer, LineSource};
use ticklane_engine::pipeline::{
    GlimpseConfig, MoldFeedConfig, MoldSource, PipelineConfig, SourceEnd,
};
use ticklane_feed::moldudp64::RecoveryConfig;
use ticklane_feed::net::UdpFeedConfig;
use ticklane_feed::soupbintcp::Credentials;
use ticklane_sim::{Faults, MessageLog, Rate};
use ticklane_testkit::loopback;

use crate::util::{books, log, replayed_book, run_into_snapshot};

/// Levels per side in the snapshot file: every level the generated days hold.
const DEPTH: usize = 64;
const RATE: u64 = 125_000;

/// A port free for the multicast group now.
fn free_port() -> u16 {
    std::net::UdpSocket::bind(loopback(0))
        .and_then(|s| s.local_addr())
        .expect("probe a port")
        .port()
}

/// Messages the live line loses a second after the join.
const LOST: u64 = 5_000;
/// How long after the join the loss comes (ms).
const LOSS_AFTER_MS: u64 = 1_000;

/// Serves `log` to a multicast group with GLIMPSE beside it, starts a line `after` into the
/// day, and runs it to the end of session into a snapshot file; returns the file's books
/// as `--book-out` CSV and the line's report. The live line loses [`LOST`] messages a
/// second after the join; `with_server` gives the line the retransmission server, with a
/// `max_recovery_gap` below that loss.
fn start_late(
    log: &Arc<MessageLog>,
    after: Duration,
    group: Ipv4Addr,
    with_server: bool,
) -> (String, LineSourceReport) {
    let first_lost = RATE * (after.as_millis() as u64 + LOSS_AFTER_MS) / 1_000;
    let port = free_port();
    let credentials = Credentials::parse("glimps:secret").expect("login");
    let sim = ExchangeSim::start(
        log,
        ExchangeSimConfig {
            udp: Some(SocketAddr::V4(SocketAddrV4::new(group, port))),
            request: loopback(0),
            tcp: None,
            glimpse: Some(GlimpseServer::new(loopback(0), credentials)),
            rate: Rate::per_second(RATE),
            faults: Faults {
                lose_sequences: Some((first_lost, first_lost + LOST - 1)),
                ..Faults::default()
            },
            line_b: None,
            disconnect_after: None,
            linger: Duration::ZERO,
        },
    )
    .expect("simulator");
    let glimpse = sim.glimpse_addr().expect("GLIMPSE served");
    let request_server = sim.request_addr().filter(|_| with_server);
    let stop = Arc::new(AtomicBool::new(false));
    let serving = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || sim.serve(&stop))
    };
    let began = Instant::now();
    std::thread::sleep(after);
    let feed = MoldFeedConfig {
        udp: UdpFeedConfig {
            bind: SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port)),
            multicast_group: Some(group),
            ..UdpFeedConfig::default()
        },
        recovery: RecoveryConfig {
            start_sequence: Some(1),
            ..RecoveryConfig::default()
        },
        silence_timeout: Duration::from_secs(5),
        max_duration: Some(Duration::from_secs(60)),
        glimpse: Some(GlimpseConfig {
            max_recovery_gap: LOST / 5,
            ..GlimpseConfig::new(glimpse, credentials)
        }),
        request_server,
        ..MoldFeedConfig::default()
    };
    let source = MoldSource::open(feed, PipelineConfig::default().wait).expect("join the group");
    let joined = began.elapsed();
    let (csv, run) = run_into_snapshot(LineSource::Mold(source), DEPTH);
    stop.store(true, Ordering::Relaxed);
    serving
        .join()
        .expect("simulator thread")
        .expect("simulator");
    assert!(
        joined < after + Duration::from_secs(1),
        "the line joined {joined:?} into the day, meant {after:?}"
    );
    (csv, run.report.source)
}

#[test]
fn a_line_started_mid_day_from_a_snapshot_ends_with_the_whole_days_books() {
    let log = log(800_000, 25);
    let whole = replayed_book(&log, books(), DEPTH);
    let runs = [
        (500u64, false),
        (1_000, false),
        (2_000, false),
        (5_000, false),
        (1_000, true),
    ];
    for (i, (after_ms, with_server)) in runs.into_iter().enumerate() {
        let after = Duration::from_millis(after_ms);
        let group = Ipv4Addr::new(239, 255, 44, 30 + i as u8);
        let (books, report) = start_late(&log, after, group, with_server);
        let LineSourceReport::Mold(r) = report else {
            panic!("a MoldUDP64 report")
        };
        let run = format!("{after:?} in, server {with_server}");
        let glimpse = r.glimpse.as_ref().expect("started from a snapshot");
        let next = glimpse.next_sequence.expect("a snapshot was loaded");
        // At 125,000 msg/s the day is well under way: the snapshot stands for most of what
        // was sent before the line joined, and the rebuild's for the loss after it.
        let lost_from = RATE * (after_ms + LOSS_AFTER_MS) / 1_000;
        assert!(
            next > lost_from + LOST,
            "{run}: the latest snapshot ends at {next}, the loss at {}",
            lost_from + LOST
        );
        // The loss is one rebuild; a datagram the kernel dropped under load would be another.
        assert!(glimpse.rebuilds >= 1, "{run}: {glimpse:?}");
        assert_eq!(glimpse.attempts, 1 + glimpse.rebuilds, "{run}: {glimpse:?}");
        assert_eq!(glimpse.rebuild_failures, 0, "{run}: {glimpse:?}");
        assert!(
            glimpse.messages > 0 && glimpse.violations == 0,
            "{run}: {glimpse:?}"
        );
        let recovery = r.recovery;
        assert!(recovery.gaps_rebuilt >= 1, "{run}: {recovery:?}");
        assert_eq!(recovery.messages_lost, 0, "{run}: {recovery:?}");
        if with_server {
            assert_eq!(
                recovery.requests_sent, 0,
                "{run}: a gap past the bound is not asked for"
            );
        }
        assert!(r.lost.is_empty(), "{run}: declared lost {:?}", r.lost);
        assert_eq!(r.end, SourceEnd::EndOfSession, "{run}");
        assert!(
            books == whole,
            "{run}: the books depart from the whole day's"
        );
    }
}
