//! A/B line arbitration end to end over loopback: the exchange simulator serves one
//! MoldUDP64 session on two lines with independent seeded faults, the live pipeline reads
//! both sockets into one sequencer, and the snapshot's books must equal a plain replay of
//! the same messages.
//!
//! The per-line counters are checked against what the faults did (the simulator's own
//! drop counters) and against each other: every message delivered was won by line A, line
//! B or a retransmission, exactly once. A gap one line had that the other filled must never
//! be requested or counted as a gap: with loss on one line only, nothing is asked of the
//! retransmission server at all.
//!
//! Bounded: 60,000 messages at 200 k msg/s per run, each run capped at 60 s.

use std::net::UdpSocket;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use ticklane_engine::csv::write_snapshot_book_csv;
use ticklane_engine::live::{run_line, LineSource, LineSourceReport};
use ticklane_engine::overload::OverloadConfig;
use ticklane_engine::pipeline::{
    ArbitrationReport, KernelOverruns, MoldFeedConfig, MoldSource, MoldSourceReport,
    PipelineConfig, SourceEnd,
};
use ticklane_engine::snapshot::{SnapshotReader, SnapshotWriter};
use ticklane_feed::moldudp64::{encode_end_of_session, PacketWriter, RecoveryConfig, Session};
use ticklane_feed::net::UdpFeedConfig;
use ticklane_sim::{Faults, LineB, MessageLog, MoldSimConfig, MoldSimulator, Rate, SimCounts};
use ticklane_testkit::loopback;

use crate::util::{books, log, replayed_book};

const DEPTH: usize = 10;
const MESSAGES: u64 = 60_000;

fn loss(seed: u64, drop_ratio: f64) -> Faults {
    Faults {
        seed,
        drop_ratio,
        ..Faults::default()
    }
}

/// An A/B line on two loopback sockets, joining at sequence 1, otherwise with `recovery`'s
/// settings, silent for `silence` at most, and ended after 60 s in any case.
fn ab_feed(recovery: RecoveryConfig, silence: Duration) -> MoldFeedConfig {
    MoldFeedConfig {
        udp: UdpFeedConfig {
            bind: loopback(0),
            ..UdpFeedConfig::default()
        },
        line_b: Some(UdpFeedConfig {
            bind: loopback(0),
            ..UdpFeedConfig::default()
        }),
        recovery: RecoveryConfig {
            start_sequence: Some(1),
            ..recovery
        },
        silence_timeout: silence,
        max_duration: Some(Duration::from_secs(60)),
        ..MoldFeedConfig::default()
    }
}

/// Serves `log` on lines A and B with `a` and `b` faults, the retransmission server
/// answering; runs the A/B line into a snapshot. Returns the snapshot's book CSV, the
/// reader's report and the simulator's counters.
fn ab_run(log: &Arc<MessageLog>, a: Faults, b: Faults) -> (String, MoldSourceReport, SimCounts) {
    let recovery = RecoveryConfig {
        retransmit_timeout: Duration::from_millis(20),
        max_retries: 20,
        // Far above the loopback skew between the lines, so that a reader thread held up
        // by a busy machine still sees the other line's copy within the wait.
        arbitration_wait: Duration::from_millis(20),
        ..RecoveryConfig::default()
    };
    let feed = ab_feed(recovery, Duration::from_secs(5));
    let mut source = MoldSource::open(feed, PipelineConfig::default().wait).expect("bind");
    let mut sim = MoldSimConfig::new(
        Session::new(b"AB").expect("fits"),
        source.local_addr().expect("A bound"),
    );
    sim.rate = Rate::per_second(200_000);
    sim.faults = a;
    sim.line_b = Some(LineB {
        destination: source.local_addr_b().expect("B bound").expect("a line B"),
        faults: b,
    });
    let sim = MoldSimulator::start(Arc::clone(log), sim).expect("simulator");
    source.set_request_server(sim.request_addr());

    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("ab.snap");
    let writer = SnapshotWriter::create(&path, 256, DEPTH).expect("snapshot");
    let pipeline = PipelineConfig {
        books: books(),
        ..PipelineConfig::default()
    };
    let run = run_line(
        LineSource::Mold(source),
        pipeline,
        Some(writer),
        OverloadConfig::default(),
        &AtomicBool::new(false),
    )
    .expect("pipeline");
    let stats = sim.stop().expect("simulator stops");
    let reader = SnapshotReader::open(&path).expect("open snapshot");
    let csv = write_snapshot_book_csv(&reader, DEPTH, Vec::new()).expect("csv");
    let LineSourceReport::Mold(report) = run.report.source else {
        panic!("a MoldUDP64 report")
    };
    assert_eq!(
        run.report.book.messages, MESSAGES,
        "every message applied once"
    );
    (String::from_utf8(csv).expect("ascii"), *report, stats)
}

/// What every A/B run must hold: nothing lost, a clean end, the wins adding up to what was
/// delivered, each line's packets and messages as the simulator sent them.
fn check_common(r: &MoldSourceReport, sim: &SimCounts) -> ArbitrationReport {
    assert!(r.lost.is_empty(), "unfilled gaps: {:?}", r.lost);
    assert_eq!(r.end, SourceEnd::EndOfSession);
    let lines = r.lines.expect("per-line counters of an A/B line");
    assert_eq!(lines.delivered(), r.recovery.delivered, "{lines:?}");
    assert_eq!(r.recovery.delivered, MESSAGES);
    // Loopback loses nothing the faults did not, unless the kernel dropped datagrams from a
    // full receive buffer (a busy machine running other tests): then that line carries
    // less, never more, and the other line or the retransmission server filled the rest.
    // The reader reads both lines to their end of session, so neither line's tail is
    // missed because the other line finished first.
    let overran = |k: Option<KernelOverruns>| k.is_some_and(|k| k.dropped > 0);
    for (line, carried, sent, overruns) in [
        (
            "A",
            lines.a,
            (sim.packets_sent, sim.messages_sent),
            r.kernel_overruns,
        ),
        (
            "B",
            lines.b,
            (sim.b_packets_sent, sim.b_messages_sent),
            r.kernel_overruns_b,
        ),
    ] {
        if overran(overruns) {
            assert!(carried.messages <= sent.1, "line {line} carried {lines:?}");
        } else {
            assert_eq!(
                carried.messages, sent.1,
                "line {line}: {lines:?} {overruns:?}"
            );
            assert!(carried.packets >= sent.0, "line {line}: {lines:?}");
        }
    }
    // Every request belongs to a gap counted after its arbitration wait.
    assert_eq!(
        r.recovery.first_requests, r.recovery.gaps,
        "{:?}",
        r.recovery
    );
    lines
}

#[test]
fn loss_on_line_a_only_is_filled_by_line_b_and_nothing_is_requested() {
    let log = log(MESSAGES, 21);
    let (csv, r, sim) = ab_run(&log, loss(7, 0.2), Faults::default());
    let lines = check_common(&r, &sim);
    assert!(sim.packets_dropped > 0 && sim.b_packets_dropped == 0);
    assert!(lines.a.gaps > 0, "A had gaps of its own: {lines:?}");
    assert_eq!(lines.b.gaps, 0, "{lines:?}");
    assert!(lines.b.won > 0, "B's copies filled A's gaps: {lines:?}");
    assert_eq!(
        (r.recovery.gaps, r.recovery.requests_sent),
        (0, 0),
        "{:?}",
        r.recovery
    );
    assert_eq!((lines.retransmitted_won, r.recovery.recovered), (0, 0));
    assert_eq!(csv, replayed_book(&log, books(), DEPTH));
}

#[test]
fn loss_on_line_b_only_is_no_gap_and_nothing_is_requested() {
    let log = log(MESSAGES, 22);
    let (csv, r, sim) = ab_run(&log, Faults::default(), loss(8, 0.2));
    let lines = check_common(&r, &sim);
    assert!(sim.packets_dropped == 0 && sim.b_packets_dropped > 0);
    assert!(lines.b.gaps > 0, "B had gaps of its own: {lines:?}");
    assert_eq!(lines.a.gaps, 0, "{lines:?}");
    assert_eq!(
        (r.recovery.gaps, r.recovery.requests_sent),
        (0, 0),
        "{:?}",
        r.recovery
    );
    assert_eq!(lines.retransmitted_won, 0);
    assert_eq!(csv, replayed_book(&log, books(), DEPTH));
}

#[test]
fn independent_loss_on_both_lines_is_mostly_arbitrated_and_the_rest_retransmitted() {
    let log = log(MESSAGES, 23);
    // The same seed on both lines: their patterns are still independent (B's stream is
    // its own), so about 4 % of packets are lost on both.
    let (csv, r, sim) = ab_run(&log, loss(9, 0.2), loss(9, 0.2));
    let lines = check_common(&r, &sim);
    assert!(sim.packets_dropped > 0 && sim.b_packets_dropped > 0);
    assert!(lines.a.gaps > 0 && lines.b.gaps > 0, "{lines:?}");
    assert!(lines.a.won > 0 && lines.b.won > 0, "{lines:?}");
    let s = &r.recovery;
    assert!(s.gaps > 0, "some packets were lost on both lines: {s:?}");
    assert!(
        s.gaps < lines.a.gaps + lines.b.gaps,
        "gaps one line filled are not gaps: {s:?} {lines:?}"
    );
    assert!(
        lines.retransmitted_won > 0 && s.recovered > 0,
        "{s:?} {lines:?}"
    );
    // Recovered counts every message delivered into a gap that outlived its wait, by
    // whichever copy: the retransmitted ones, and a line's late copies of part of it.
    assert!(s.recovered >= lines.retransmitted_won, "{s:?} {lines:?}");
    assert_eq!(csv, replayed_book(&log, books(), DEPTH));
}

/// Line B's copy of the session's last packet comes after line A's end of session (here
/// 30 ms after it, sent by hand): the reader reads on until B's own end of session, so B is
/// counted as carrying everything, and B's lateness is not mistaken for loss. Its end of
/// session arrives well inside the wait, so the run ends on it, not on the wait.
#[test]
fn line_b_trailing_line_a_past_the_end_of_session_is_still_counted() {
    const SENT: u64 = 12;
    let log = log(MESSAGES, 24);
    let recovery = RecoveryConfig {
        arbitration_wait: Duration::from_secs(20),
        ..RecoveryConfig::default()
    };
    let feed = ab_feed(recovery, Duration::from_secs(30));
    let source = MoldSource::open(feed, PipelineConfig::default().wait).expect("bind");
    let a = source.local_addr().expect("A bound");
    let b = source.local_addr_b().expect("B bound").expect("a line B");
    let session = Session::new(b"TAIL").expect("fits");
    let mut data = [0u8; 1400];
    let mut packet = PacketWriter::new(&mut data, session, 1).expect("header fits");
    for seq in 1..=SENT {
        packet
            .push(log.get(seq).expect("in the log"))
            .expect("fits");
    }
    let len = packet.finish();
    let mut end = [0u8; 20];
    encode_end_of_session(&mut end, session, SENT + 1).expect("fits");
    let sender = std::thread::spawn(move || {
        let socket = UdpSocket::bind(loopback(0)).expect("sender");
        for (bytes, to) in [(&data[..len], a), (&end[..], a)] {
            socket.send_to(bytes, to).expect("sent");
        }
        std::thread::sleep(Duration::from_millis(30));
        for bytes in [&data[..len], &end[..]] {
            socket.send_to(bytes, b).expect("sent");
        }
    });
    let started = std::time::Instant::now();
    let run = run_line(
        LineSource::Mold(source),
        PipelineConfig {
            books: books(),
            ..PipelineConfig::default()
        },
        None,
        OverloadConfig::default(),
        &AtomicBool::new(false),
    )
    .expect("pipeline");
    sender.join().expect("sender");
    let LineSourceReport::Mold(r) = run.report.source else {
        panic!("a MoldUDP64 report")
    };
    assert_eq!(r.end, SourceEnd::EndOfSession);
    let lines = r.lines.expect("per-line counters");
    assert_eq!((lines.a.messages, lines.a.won), (SENT, SENT), "{lines:?}");
    assert_eq!((lines.b.messages, lines.b.won), (SENT, 0), "{lines:?}");
    assert_eq!((lines.a.packets, lines.b.packets), (2, 2), "{lines:?}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "ended on B's end of session, not on the 20 s wait"
    );
}
