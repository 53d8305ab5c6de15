//! Circuit breakers wired to live lines over loopback, and late joins:
//!
//! - a SoupBinTCP line whose port refuses every connect trips its breaker: after the
//!   minimum calls, every further attempt waits the open interval for its probe; the
//!   `Dependency` mirrors the breaker and the storm counters, health says `breaker_open`;
//! - a live MoldUDP64 line isolated and closed by hand through its `Dependency`: while
//!   isolated its packets are ignored and the snapshot's header and slots say `STALE` with
//!   line state "isolated"; closed, the books are live again, the packets missed are
//!   recovered from the simulator's retransmission server, and health is clear;
//! - a MoldUDP64 line that joins late (a relay in this test drops the first packets, reading
//!   each header itself, from the specification) with `start_sequence = 1`: the gap from 1 is
//!   recovered from the retransmission server; without one it is declared lost and the
//!   line's exit status is 3 (documented, written here rather than taken from the code).
//!
//! Bounded: every wait polls with a deadline; nothing sleeps hoping a condition holds.

use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ticklane_engine::dependency::{BreakerMirror, Dependency, DependencyKind, ManualCommand};
use ticklane_engine::health::{Condition, Health};
use ticklane_engine::live::{run_line, LineRun, LineSource, LineSourceReport};
use ticklane_engine::overload::OverloadConfig;
use ticklane_engine::pipeline::{
    DropReason, GuardHandles, MoldFeedConfig, MoldSource, PipelineConfig, SoupFeedConfig,
    SoupSource, SourceEnd, SourceError,
};
use ticklane_engine::snapshot::{LineState, SnapshotHeader, SnapshotReader, SnapshotWriter};
use ticklane_engine::views::line_run_status;
use ticklane_feed::moldudp64::{GapRange, LossReason, LostRange, RecoveryConfig, Session};
use ticklane_feed::net::UdpFeedConfig;
use ticklane_feed::resilience::{BackoffConfig, BreakerConfig};
use ticklane_feed::soupbintcp::{ClientConfig, Credentials};
use ticklane_sim::{MessageLog, MoldSimConfig, MoldSimulator, Rate};
use ticklane_testkit::loopback;
use ticklane_testkit::moldudp64::{Header, END_OF_SESSION, HEARTBEAT};

use crate::util::{books, log};

const MS: Duration = Duration::from_millis(1);
/// Longest any condition is waited for.
const DEADLINE: Duration = Duration::from_secs(30);
/// The documented exit status for "messages were declared lost" (README, `--help`).
const DECLARED_LOST: u8 = 3;

fn pipeline() -> PipelineConfig {
    PipelineConfig {
        books: books(),
        ring_slots: 1 << 14,
        ..PipelineConfig::default()
    }
}

#[test]
fn a_refused_soupbintcp_port_trips_the_line_breaker_and_each_later_attempt_waits_for_a_probe() {
    let addr = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port");
    let line = Arc::new(Dependency::new("soup", DependencyKind::Line));
    let health = Arc::new(Health::new());
    let open_interval = 200 * MS;
    let source = SoupSource::new(
        SoupFeedConfig {
            server: addr,
            client: ClientConfig::new(Credentials::new(b"e2e", b"secret").expect("fits")),
            connect_timeout: Duration::from_secs(2),
            max_reconnects: 5,
            reconnect: BackoffConfig {
                base: MS,
                cap: 2 * MS,
            },
            reconnect_seed: Some(7),
            max_duration: Some(Duration::from_secs(20)),
            breaker: BreakerConfig {
                window: Duration::from_secs(60),
                min_calls: 3,
                failure_percent: 50,
                slow_percent: 100,
                slow_threshold: Duration::from_secs(1),
                open_interval,
                probes: 1,
            },
        },
        PipelineConfig::default().wait,
    )
    .with_handles(GuardHandles {
        line: Some(Arc::clone(&line)),
        retransmission: None,
        health: Some(Arc::clone(&health)),
    });
    let run = run_line(
        LineSource::Soup(source),
        pipeline(),
        None,
        OverloadConfig::default(),
        &AtomicBool::new(false),
    )
    .expect("pipeline");
    let LineSourceReport::Soup(r) = run.report.source else {
        panic!("not a SoupBinTCP report");
    };
    assert!(
        matches!(
            r.end,
            SourceEnd::Error(SourceError::ReconnectsExhausted {
                reconnects: 5,
                last: DropReason::Connect { .. }
            })
        ),
        "{:?}",
        r.end
    );
    // Six attempts, all refused by the OS: faults. The third opened the breaker; each of
    // attempts 4, 5 and 6 waited for the breaker to turn half-open (one refusal counted per
    // wait), was the probe, faulted, and opened it again.
    let c = line.counts();
    assert_eq!((c.calls, c.faults, c.successes, c.refused), (6, 6, 0, 3));
    assert_eq!(
        c.distinct, 1,
        "never connected: one resume point asked six times"
    );
    // Closed -> Open, then (HalfOpen -> Open) three times.
    assert_eq!(c.breaker_transitions, 7);
    assert_eq!(line.breaker(), BreakerMirror::Open);
    assert!(health.is_raised(Condition::BreakerOpen));
    // The drops' own timestamps: attempts 4, 5 and 6 each came at least the open interval
    // after the drop before them (the backoff alone is under 2 ms).
    let at: Vec<u64> = r.drops.last.iter().map(|d| d.at_ns).collect();
    assert_eq!(at.len(), 6);
    for i in 3..6 {
        assert!(
            at[i] - at[i - 1] >= open_interval.as_nanos() as u64,
            "attempt {} came {} ms after the one before",
            i + 1,
            (at[i] - at[i - 1]) / 1_000_000
        );
    }
}

/// Polls `reader` until `done` holds for the header, or the deadline passes.
fn poll_until(
    reader: &SnapshotReader,
    what: &str,
    done: impl Fn(&SnapshotHeader, &SnapshotReader) -> bool,
) -> SnapshotHeader {
    let start = Instant::now();
    loop {
        let header = reader.header();
        if done(&header, reader) {
            return header;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "{what}: not seen within {DEADLINE:?}; header {header:?}"
        );
        std::thread::yield_now();
    }
}

/// Whether every slot in use reads stale as `want`.
fn every_slot_stale(reader: &SnapshotReader, want: bool) -> bool {
    let slots = reader.slots();
    !slots.is_empty()
        && slots
            .into_iter()
            .all(|i| reader.read(i).is_ok_and(|s| s.flags.is_stale() == want))
}

fn spawn_line(
    source: MoldSource,
    writer: Option<SnapshotWriter>,
) -> std::thread::JoinHandle<std::io::Result<LineRun>> {
    std::thread::spawn(move || {
        run_line(
            LineSource::Mold(source),
            pipeline(),
            writer,
            OverloadConfig::default(),
            &AtomicBool::new(false),
        )
    })
}

/// Recovery that starts at sequence 1 and asks quickly; `max_retries` tries after the first
/// before a gap is declared.
fn from_1(max_retries: u32) -> RecoveryConfig {
    RecoveryConfig {
        start_sequence: Some(1),
        retransmit_timeout: 20 * MS,
        max_retries,
        gap_deadline: Duration::from_secs(20),
        ..RecoveryConfig::default()
    }
}

fn mold_source(recovery: RecoveryConfig) -> MoldSource {
    let feed = MoldFeedConfig {
        udp: UdpFeedConfig {
            bind: loopback(0),
            ..UdpFeedConfig::default()
        },
        recovery,
        silence_timeout: Duration::from_secs(4),
        max_duration: Some(Duration::from_secs(60)),
        ..MoldFeedConfig::default()
    };
    MoldSource::open(feed, PipelineConfig::default().wait).expect("bind the feed socket")
}

#[test]
fn a_mold_line_isolated_by_hand_is_flagged_stale_then_live_and_recovered_after_close() {
    let log = log(300_000, 31);
    let line = Arc::new(Dependency::new("mold", DependencyKind::Line));
    let health = Arc::new(Health::new());
    let mut source = mold_source(from_1(50)).with_handles(GuardHandles {
        line: Some(Arc::clone(&line)),
        retransmission: None,
        health: Some(Arc::clone(&health)),
    });
    let mut sim = MoldSimConfig::new(
        Session::new(b"ISOLATE").expect("fits"),
        source.local_addr().expect("bound"),
    );
    sim.rate = Rate::per_second(100_000);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("isolate.snap");
    let writer = SnapshotWriter::create(&path, 256, 5).expect("snapshot");
    let reader = SnapshotReader::open(&path).expect("open snapshot");
    let sim = MoldSimulator::start(Arc::clone(&log), sim).expect("simulator");
    source.set_request_server(sim.request_addr());
    let running = spawn_line(source, Some(writer));

    poll_until(&reader, "books live", |h, r| {
        h.line() == Some(LineState::Live) && every_slot_stale(r, false)
    });
    line.post(ManualCommand::Isolate);
    let isolated = poll_until(&reader, "isolated and STALE on every slot", |h, r| {
        h.line() == Some(LineState::Isolated) && h.is_stale() && every_slot_stale(r, true)
    });
    assert!(isolated.stale_since().is_some());
    // Let the simulator send 50 more packets while the line is isolated, then close it.
    let sent = sim.stats().packets_sent;
    let start = Instant::now();
    while sim.stats().packets_sent < sent + 50 {
        assert!(start.elapsed() < DEADLINE, "the simulator stopped sending");
        std::thread::yield_now();
    }
    assert!(health.is_raised(Condition::LineIsolated));
    assert_eq!(line.breaker(), BreakerMirror::Isolated);
    line.post(ManualCommand::Close);
    poll_until(&reader, "live again after close", |h, r| {
        h.line() == Some(LineState::Live) && !h.is_stale() && every_slot_stale(r, false)
    });

    let run = running.join().expect("line thread").expect("pipeline");
    sim.stop().expect("simulator stops");
    let LineSourceReport::Mold(m) = &run.report.source else {
        panic!("not a MoldUDP64 report");
    };
    assert_eq!(m.end, SourceEnd::EndOfSession);
    assert!(m.ignored_packets >= 1, "packets ignored while isolated");
    // What was ignored was a gap once closed, recovered from the retransmission server.
    assert!(m.recovery.recovered > 0 && m.lost.ranges().is_empty());
    assert_eq!(run.report.book.messages, log.len() as u64);
    assert!(!health.is_raised(Condition::LineIsolated));
    assert_eq!(line.breaker(), BreakerMirror::Closed);
    assert!(reader.header().is_closed());
}

/// Forwards the datagrams arriving on `socket` to `to`, except the data packets whose first
/// sequence is below `join`: the line joins there. Reads the MoldUDP64 header by hand
/// (the session in 10 bytes, sequence u64, count u16, big-endian).
fn late_join_relay(socket: UdpSocket, to: SocketAddr, join: u64, stop: Arc<AtomicBool>) -> u64 {
    socket
        .set_read_timeout(Some(20 * MS))
        .expect("read timeout");
    let mut buf = vec![0u8; 65_536];
    let mut dropped = 0;
    while !stop.load(Ordering::Relaxed) {
        let Ok(n) = socket.recv(&mut buf) else {
            continue;
        };
        if let Some(Header {
            sequence, count, ..
        }) = Header::read(&buf[..n])
        {
            if sequence < join && count != HEARTBEAT && count != END_OF_SESSION {
                dropped += u64::from(count);
                continue;
            }
        }
        // A send to a reader that already ended is no failure of the relay.
        let _ = socket.send_to(&buf[..n], to);
    }
    dropped
}

fn late_join(with_server: bool) -> (LineRun, Arc<MessageLog>, u64) {
    let log = log(20_000, 41);
    // Without a server to ask, two retries into nothing (20, 40, 80 ms) before the gap is
    // declared.
    let mut source = mold_source(from_1(if with_server { 50 } else { 2 }));
    let relay = UdpSocket::bind("127.0.0.1:0").expect("relay socket");
    let mut sim = MoldSimConfig::new(
        Session::new(b"LATE").expect("fits"),
        relay.local_addr().expect("relay address"),
    );
    sim.rate = Rate::per_second(50_000);
    let stop = Arc::new(AtomicBool::new(false));
    let to = source.local_addr().expect("bound");
    let relay = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || late_join_relay(relay, to, 500, stop))
    };
    let sim = MoldSimulator::start(Arc::clone(&log), sim).expect("simulator");
    if with_server {
        source.set_request_server(sim.request_addr());
    }
    let run = spawn_line(source, None)
        .join()
        .expect("line thread")
        .expect("pipeline");
    sim.stop().expect("simulator stops");
    stop.store(true, Ordering::Relaxed);
    let dropped = relay.join().expect("relay");
    (run, log, dropped)
}

#[test]
fn a_late_join_with_start_sequence_1_is_recovered_from_the_retransmission_server() {
    let (run, log, dropped) = late_join(true);
    let LineSourceReport::Mold(m) = &run.report.source else {
        panic!("not a MoldUDP64 report");
    };
    assert!(dropped > 0, "the relay dropped the first packets");
    let joined = m.recovery.joined_at.expect("joined");
    assert!(joined > 1, "joined late, at {joined}");
    assert_eq!(m.recovery.recovered, joined - 1);
    assert!(m.lost.ranges().is_empty());
    assert_eq!(run.report.book.messages, log.len() as u64);
    assert_eq!(line_run_status(&run).code(), 0);
}

#[test]
fn a_late_join_with_start_sequence_1_and_no_server_is_declared_lost_and_exits_3() {
    let (run, log, dropped) = late_join(false);
    let LineSourceReport::Mold(m) = &run.report.source else {
        panic!("not a MoldUDP64 report");
    };
    let joined = m.recovery.joined_at.expect("joined");
    assert_eq!(dropped, joined - 1, "the relay's count of what it dropped");
    assert_eq!(
        m.lost.ranges(),
        [LostRange {
            range: GapRange {
                first: 1,
                last: joined - 1
            },
            reason: LossReason::NoServer
        }]
    );
    assert_eq!(run.report.book.messages, log.len() as u64 - dropped);
    assert_eq!(line_run_status(&run).code(), DECLARED_LOST);
}
