//! Stale books are flagged, never passed off as live: live MoldUDP64 lines over loopback,
//! fed by the exchange simulator, with the snapshot header polled from the test thread the
//! way another process would read it.
//!
//! - a line whose simulator goes silent (heartbeats included) for longer than the stale
//!   threshold: the header and every slot carry `STALE` during the silence, with the time the
//!   silence began, and lose it when data flows again; the session then ends `CLOSED`;
//! - a line with no retransmission server and a lossy simulator: every declared loss flags the
//!   header and every slot `MAYBE_BAD`, with the count the line's own report declares;
//! - a line that ends because it went silent: `STALE`, line state "ended silent", not `CLOSED`;
//! - a line that joins past its opening (`feed.start_sequence = "join"`): `MAYBE_BAD` on the
//!   header and every slot, with no loss counted; one that joins at sequence 1: no flag.
//!
//! Bounded: every wait polls with a deadline; nothing sleeps hoping a condition holds.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ticklane_engine::live::{run_line, LineRun, LineSource, LineSourceReport};
use ticklane_engine::overload::OverloadConfig;
use ticklane_engine::pipeline::{MoldFeedConfig, MoldSource, PipelineConfig, SourceEnd};
use ticklane_engine::snapshot::{
    wall_clock_ns, LineState, SnapshotHeader, SnapshotReader, SnapshotWriter,
};
use ticklane_feed::moldudp64::{RecoveryConfig, Session};
use ticklane_feed::net::UdpFeedConfig;
use ticklane_sim::{
    Faults, Interruption, MessageLog, MoldSimConfig, MoldSimulator, Rate, ReplyFault,
};
use ticklane_testkit::loopback;

use crate::util::{books, log};

const DEPTH: usize = 5;
/// Longest any condition is waited for.
const DEADLINE: Duration = Duration::from_secs(30);

fn mold_line(silence_timeout: Duration, recovery: RecoveryConfig) -> MoldSource {
    let feed = MoldFeedConfig {
        udp: UdpFeedConfig {
            bind: loopback(0),
            ..UdpFeedConfig::default()
        },
        recovery,
        silence_timeout,
        max_duration: Some(Duration::from_secs(60)),
        ..MoldFeedConfig::default()
    };
    MoldSource::open(feed, PipelineConfig::default().wait).expect("bind the feed socket")
}

fn recovering() -> RecoveryConfig {
    RecoveryConfig {
        start_sequence: Some(1),
        retransmit_timeout: Duration::from_millis(20),
        max_retries: 20,
        ..RecoveryConfig::default()
    }
}

/// Runs `source` into `writer` on a thread; the caller reads the snapshot meanwhile.
fn spawn_line(
    source: MoldSource,
    writer: SnapshotWriter,
) -> std::thread::JoinHandle<std::io::Result<LineRun>> {
    std::thread::spawn(move || {
        let pipeline = PipelineConfig {
            books: books(),
            ring_slots: 1 << 14,
            ..PipelineConfig::default()
        };
        run_line(
            LineSource::Mold(source),
            pipeline,
            Some(writer),
            OverloadConfig::default(),
            &AtomicBool::new(false),
        )
    })
}

/// Runs `source` until its line ends, fed by a simulator sending `log` as `sim` says (its
/// destination set to the source's socket, its request server given to the source), into
/// a fresh snapshot; returns the run and a reader of the snapshot (the folder with it).
fn run_to_end(
    mut source: MoldSource,
    log: &Arc<MessageLog>,
    session: &[u8],
    faults: Faults,
) -> (LineRun, SnapshotReader, tempfile::TempDir) {
    let mut sim = MoldSimConfig::new(
        Session::new(session).expect("fits"),
        source.local_addr().expect("bound"),
    );
    sim.rate = Rate::per_second(200_000);
    sim.faults = faults;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("line.snap");
    let writer = SnapshotWriter::create(&path, 256, DEPTH).expect("snapshot");
    let reader = SnapshotReader::open(&path).expect("open snapshot");
    let sim = MoldSimulator::start(Arc::clone(log), sim).expect("simulator");
    source.set_request_server(sim.request_addr());
    let run = spawn_line(source, writer)
        .join()
        .expect("line thread")
        .expect("pipeline");
    sim.stop().expect("simulator stops");
    (run, reader, dir)
}

/// Polls `reader` until `done` holds for the header and every slot in use, or the deadline
/// passes; returns the header that satisfied it and when it was read (wall-clock ns).
fn poll_until(
    reader: &SnapshotReader,
    what: &str,
    done: impl Fn(&SnapshotHeader, &SnapshotReader) -> bool,
) -> (SnapshotHeader, u64) {
    let start = Instant::now();
    loop {
        let header = reader.header();
        if done(&header, reader) {
            return (header, wall_clock_ns());
        }
        assert!(
            start.elapsed() < DEADLINE,
            "{what}: not seen within {DEADLINE:?}; header {header:?}"
        );
        std::thread::yield_now();
    }
}

/// Whether every slot in use reads with `flag` as `want`.
fn every_slot(
    reader: &SnapshotReader,
    want: bool,
    flag: fn(&ticklane_engine::snapshot::InstrumentState) -> bool,
) -> bool {
    let slots = reader.slots();
    !slots.is_empty()
        && slots
            .into_iter()
            .all(|i| reader.read(i).is_ok_and(|s| flag(&s) == want))
}

#[test]
fn a_silent_line_is_stale_since_the_silence_began_and_live_again_when_data_flows() {
    let log = log(40_000, 21);
    // Stale after min(4 s / 2, 2 s) = 2 s of silence; the simulator is silent for 3.5 s, well
    // short of the 4 s silence timeout that would end the line.
    let silence_timeout = Duration::from_secs(4);
    let mut source = mold_line(silence_timeout, recovering());
    let stale_after = Duration::from_secs(2);
    assert_eq!(
        MoldFeedConfig {
            silence_timeout,
            ..MoldFeedConfig::default()
        }
        .stale_after(),
        stale_after
    );
    let mut sim = MoldSimConfig::new(
        Session::new(b"STALE").expect("fits"),
        source.local_addr().expect("bound"),
    );
    sim.rate = Rate::per_second(200_000);
    sim.faults = Faults {
        disconnect: Some(Interruption {
            after_messages: 20_000,
            duration: Duration::from_millis(3_500),
        }),
        ..Faults::default()
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("stale.snap");
    let writer = SnapshotWriter::create(&path, 256, DEPTH).expect("snapshot");
    let reader = SnapshotReader::open(&path).expect("open snapshot");
    let started_ns = wall_clock_ns();
    let sim = MoldSimulator::start(Arc::clone(&log), sim).expect("simulator");
    source.set_request_server(sim.request_addr());
    let line = spawn_line(source, writer);

    let (stale, seen_ns) = poll_until(&reader, "STALE on the header and every slot", |h, r| {
        h.is_stale() && every_slot(r, true, |s| s.flags.is_stale())
    });
    assert_eq!(stale.line(), Some(LineState::Silent));
    let since = stale.stale_since().expect("a stale header says since when");
    assert!(
        (started_ns..=seen_ns).contains(&since),
        "since {since} within the run ({started_ns} ..= {seen_ns})"
    );
    assert!(
        seen_ns - since >= stale_after.as_nanos() as u64 - 50_000_000,
        "since-when is when the silence began, not when it was noticed: \
         seen {} ms after it",
        (seen_ns - since) / 1_000_000
    );
    assert!(!stale.is_closed() && !stale.is_maybe_bad());

    let (live, _) = poll_until(&reader, "STALE cleared when data flows", |h, r| {
        !h.is_stale() && every_slot(r, false, |s| s.flags.is_stale())
    });
    assert_eq!(live.line(), Some(LineState::Live));
    assert_eq!(live.stale_since(), None);

    let run = line.join().expect("line thread").expect("pipeline");
    let stats = sim.stop().expect("simulator stops");
    assert_eq!(stats.disconnects, 1, "the simulator really went silent");
    assert_eq!(*run.report.source.end(), SourceEnd::EndOfSession);
    assert_eq!(run.report.book.messages, log.len() as u64);
    let end = reader.header();
    assert!(end.is_closed() && !end.is_stale(), "a clean end: {end:?}");
}

#[test]
fn declared_loss_flags_every_book_maybe_bad_to_the_end() {
    let log = log(40_000, 22);
    // No retransmission server: every gap is declared lost once its retries run out.
    let recovery = RecoveryConfig {
        start_sequence: Some(1),
        retransmit_timeout: Duration::from_millis(5),
        reply_timeout_bounds: (Duration::from_millis(1), Duration::from_millis(10)),
        max_retries: 1,
        gap_deadline: Duration::from_millis(100),
        ..RecoveryConfig::default()
    };
    let source = mold_line(Duration::from_secs(5), recovery);
    let mut sim = MoldSimConfig::new(
        Session::new(b"LOSS").expect("fits"),
        source.local_addr().expect("bound"),
    );
    sim.rate = Rate::per_second(200_000);
    sim.faults = Faults {
        seed: 9,
        drop_ratio: 0.02,
        ..Faults::default()
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("loss.snap");
    let writer = SnapshotWriter::create(&path, 256, DEPTH).expect("snapshot");
    let reader = SnapshotReader::open(&path).expect("open snapshot");
    let started_ns = wall_clock_ns();
    let sim = MoldSimulator::start(Arc::clone(&log), sim).expect("simulator");
    let run = spawn_line(source, writer)
        .join()
        .expect("line thread")
        .expect("pipeline");
    let stats = sim.stop().expect("simulator stops");
    assert!(
        stats.packets_dropped > 0,
        "the fault really dropped packets"
    );
    let LineSourceReport::Mold(report) = &run.report.source else {
        panic!("a MoldUDP64 report")
    };
    let lost = report.recovery.messages_lost;
    assert!(lost > 0, "losses were declared: {:?}", report.recovery);
    // Every message is either applied or declared lost (the simulator sent them all once).
    assert_eq!(run.report.book.messages + lost, log.len() as u64);
    let header = reader.header();
    assert!(header.is_maybe_bad(), "{header:?}");
    assert_eq!(
        header.lost_messages, lost,
        "the header counts what the line declared"
    );
    assert!((started_ns..=wall_clock_ns()).contains(&header.maybe_bad_since_ns));
    assert!(
        header.is_closed(),
        "the session ended: a clean exit, flags kept"
    );
    assert!(every_slot(&reader, true, |s| s.flags.is_maybe_bad()));
}

#[test]
fn a_line_that_joins_past_its_opening_flags_every_book_maybe_bad_without_counting_loss() {
    let log = log(20_000, 24);
    // `feed.start_sequence = "join"`, no retransmission server: the simulator's first packets
    // never arrive, so the line joins past sequence 1 and nothing will ever bring the
    // opening (the stock directory, the first orders) back.
    let recovery = RecoveryConfig {
        start_sequence: None,
        ..RecoveryConfig::default()
    };
    let source = mold_line(Duration::from_secs(5), recovery);
    let started_ns = wall_clock_ns();
    let faults = Faults {
        lose_sequences: Some((1, 500)),
        ..Faults::default()
    };
    let (run, reader, _dir) = run_to_end(source, &log, b"JOIN", faults);
    let LineSourceReport::Mold(report) = &run.report.source else {
        panic!("a MoldUDP64 report")
    };
    let joined = report.recovery.joined_at.expect("the line joined");
    assert!(joined > 500, "joined past the lost opening: {joined}");
    assert_eq!(report.recovery.messages_lost, 0, "nothing was asked for");
    assert_eq!(run.report.book.messages, log.len() as u64 - (joined - 1));
    let header = reader.header();
    assert!(header.is_maybe_bad(), "never-seen opening: {header:?}");
    assert_eq!(
        header.lost_messages, 0,
        "a late join is not a declared loss"
    );
    assert!((started_ns..=wall_clock_ns()).contains(&header.maybe_bad_since_ns));
    assert!(header.is_closed(), "the session ended cleanly: {header:?}");
    assert!(every_slot(&reader, true, |s| s.flags.is_maybe_bad()));
}

#[test]
fn a_line_that_joins_at_its_opening_leaves_the_books_unflagged() {
    let log = log(20_000, 25);
    let recovery = RecoveryConfig {
        start_sequence: None,
        ..RecoveryConfig::default()
    };
    let source = mold_line(Duration::from_secs(5), recovery);
    let (run, reader, _dir) = run_to_end(source, &log, b"JOIN1", Faults::default());
    let LineSourceReport::Mold(report) = &run.report.source else {
        panic!("a MoldUDP64 report")
    };
    assert_eq!(report.recovery.joined_at, Some(1));
    assert_eq!(run.report.book.messages, log.len() as u64);
    let header = reader.header();
    assert!(!header.is_maybe_bad() && header.is_closed(), "{header:?}");
    assert!(every_slot(&reader, false, |s| s.flags.is_maybe_bad()));
}

#[test]
fn a_line_waiting_out_its_gaps_after_the_end_of_session_is_not_stale() {
    let log = log(20_000, 26);
    // Stale after 0.6 s of silence; the last gap waits 2.5 s for a server that never
    // answers, all of it after the end of session, when silence is the feed's design.
    let silence_timeout = Duration::from_millis(1_200);
    let recovery = RecoveryConfig {
        start_sequence: Some(1),
        retransmit_timeout: Duration::from_millis(100),
        max_retries: 100,
        gap_deadline: Duration::from_millis(2_500),
        ..RecoveryConfig::default()
    };
    let source = mold_line(silence_timeout, recovery);
    let faults = Faults {
        lose_sequences: Some((19_000, 19_200)),
        replies: ReplyFault::Silent,
        ..Faults::default()
    };
    let (run, reader, _dir) = run_to_end(source, &log, b"ENDGAP", faults);
    assert_eq!(*run.report.source.end(), SourceEnd::EndOfSession);
    let LineSourceReport::Mold(report) = &run.report.source else {
        panic!("a MoldUDP64 report")
    };
    assert!(report.recovery.messages_lost > 0, "the gap was declared");
    let header = reader.header();
    assert!(header.is_closed() && header.is_maybe_bad(), "{header:?}");
    assert!(
        !header.is_stale(),
        "the session's last books, not stale: {header:?}"
    );
    assert_ne!(header.line(), Some(LineState::Silent), "{header:?}");
    assert!(every_slot(&reader, false, |s| s.flags.is_stale()));
}

#[test]
fn a_line_that_ends_silent_leaves_the_snapshot_stale_not_closed() {
    let log = log(20_000, 23);
    // Silent for 6 s after 10,000 messages: the 1.2 s silence timeout ends the line first.
    let silence_timeout = Duration::from_millis(1_200);
    let mut source = mold_line(silence_timeout, recovering());
    let mut sim = MoldSimConfig::new(
        Session::new(b"SILENT").expect("fits"),
        source.local_addr().expect("bound"),
    );
    sim.rate = Rate::per_second(200_000);
    sim.faults = Faults {
        disconnect: Some(Interruption {
            after_messages: 10_000,
            duration: Duration::from_secs(6),
        }),
        ..Faults::default()
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("silent.snap");
    let writer = SnapshotWriter::create(&path, 256, DEPTH).expect("snapshot");
    let reader = SnapshotReader::open(&path).expect("open snapshot");
    let sim = MoldSimulator::start(Arc::clone(&log), sim).expect("simulator");
    source.set_request_server(sim.request_addr());
    let run = spawn_line(source, writer)
        .join()
        .expect("line thread")
        .expect("pipeline");
    assert_eq!(*run.report.source.end(), SourceEnd::Silent(silence_timeout));
    let header = reader.header();
    assert!(
        !header.is_closed(),
        "a silent end is not a clean exit: {header:?}"
    );
    assert!(header.is_stale());
    assert_eq!(header.line(), Some(LineState::EndedSilent));
    assert!(header.stale_since().is_some());
    assert!(every_slot(&reader, true, |s| s.flags.is_stale()));
    sim.stop().expect("simulator stops");
}
