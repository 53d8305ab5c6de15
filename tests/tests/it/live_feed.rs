//! End to end over loopback: the exchange simulator → the live pipeline (real sockets,
//! reader thread, ring, book thread) → the snapshot file. At the end of the session the
//! snapshot's books (read back the way `ticklane book --csv` reads them) must equal a plain
//! replay of the same messages, and the pipeline must stop by itself.
//!
//! Both sides of those `..._transports_the_replayed_book` checks run through the same books
//! and CSV writer, so they prove the transport (sessions, recovery, ring, snapshot), not the
//! books. The books themselves are checked on the live path by
//! `moldudp64_with_recovered_loss_ends_on_itch_books_book`, against itch-book (PyPI), code we
//! did not write.
//!
//! Bounded: each run sends at most a few hundred thousand messages and gives up after a
//! time limit; an unfilled gap fails the test naming its range.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::Arc;
use std::time::Duration;

use ticklane_engine::live::{LineSource, LineSourceReport};
use ticklane_engine::pipeline::{
    MoldFeedConfig, MoldSource, PipelineConfig, SoupFeedConfig, SoupSource, SourceEnd,
    DEFAULT_LINE_BREAKER,
};
use ticklane_feed::moldudp64::{RecoveryConfig, Session};
use ticklane_feed::net::UdpFeedConfig;
use ticklane_feed::resilience::BackoffConfig;
use ticklane_feed::soupbintcp::{ClientConfig, Credentials};
use ticklane_sim::{
    Faults, MessageLog, MoldSimConfig, MoldSimulator, Rate, SoupSimConfig, SoupSimulator,
};
use ticklane_testkit::loopback;

use crate::util;
use crate::util::{books, log, replayed_book};

const DEPTH: usize = 10;

/// Runs `source` into a fresh snapshot; returns the snapshot's book CSV, the reader's
/// report and the messages the book thread applied.
fn run_into_snapshot(source: LineSource) -> (String, LineSourceReport, u64) {
    let (csv, run) = util::run_into_snapshot(source, DEPTH);
    (csv, run.report.source, run.report.book.messages)
}

fn mold_line(bind: SocketAddr, group: Option<Ipv4Addr>) -> MoldSource {
    let feed = MoldFeedConfig {
        udp: UdpFeedConfig {
            bind,
            multicast_group: group,
            ..UdpFeedConfig::default()
        },
        recovery: RecoveryConfig {
            start_sequence: Some(1),
            retransmit_timeout: Duration::from_millis(20),
            max_retries: 20,
            ..RecoveryConfig::default()
        },
        silence_timeout: Duration::from_secs(5),
        max_duration: Some(Duration::from_secs(60)),
        ..MoldFeedConfig::default()
    };
    MoldSource::open(feed, PipelineConfig::default().wait).expect("bind the feed socket")
}

fn check_mold(report: &LineSourceReport, messages: u64, log: &MessageLog) {
    let LineSourceReport::Mold(r) = report else {
        panic!("a MoldUDP64 report")
    };
    assert!(r.lost.is_empty(), "unfilled gaps: {:?}", r.lost);
    assert_eq!(r.recovery.messages_lost, 0);
    assert_eq!(
        r.end,
        SourceEnd::EndOfSession,
        "the line stops by itself at end of session"
    );
    assert_eq!(messages, log.len() as u64, "every message applied once");
}

/// Serves `log` over loopback MoldUDP64 at 400 k msg/s, dropping `drop_ratio` of the packets
/// (seeded), with the simulator's retransmission server answering; runs the line into a
/// snapshot. Asserts the fault really dropped packets and the line's own accounting
/// ([`check_mold`]); returns the snapshot's depth CSV and the reader's report.
fn lossy_mold_run(
    log: &Arc<MessageLog>,
    session: &[u8],
    seed: u64,
    drop_ratio: f64,
) -> (String, LineSourceReport) {
    let mut source = mold_line(loopback(0), None);
    let mut sim = MoldSimConfig::new(
        Session::new(session).expect("fits"),
        source.local_addr().expect("bound"),
    );
    sim.rate = Rate::per_second(400_000);
    sim.faults = Faults {
        seed,
        drop_ratio,
        ..Faults::default()
    };
    let sim = MoldSimulator::start(Arc::clone(log), sim).expect("simulator");
    source.set_request_server(sim.request_addr());
    let (csv, report, messages) = run_into_snapshot(LineSource::Mold(source));
    let stats = sim.stop().expect("simulator stops");
    assert!(
        stats.packets_dropped > 0,
        "the fault really dropped packets"
    );
    check_mold(&report, messages, log);
    (csv, report)
}

#[test]
fn moldudp64_paced_with_one_percent_loss_transports_the_replayed_book() {
    let log = log(200_000, 11);
    let (csv, report) = lossy_mold_run(&log, b"E2E", 5, 0.01);
    let LineSourceReport::Mold(r) = &report else {
        unreachable!()
    };
    assert!(
        r.recovery.gaps > 0 && r.recovery.recovered > 0,
        "gaps were seen and filled: {:?}",
        r.recovery
    );
    assert_eq!(csv, replayed_book(&log, books(), DEPTH));
}

#[test]
fn moldudp64_multicast_on_loopback_transports_the_replayed_book() {
    let group = Ipv4Addr::new(239, 255, 43, 21);
    // A fixed port for the group: find a free one first.
    let port = std::net::UdpSocket::bind(loopback(0))
        .expect("probe")
        .local_addr()
        .expect("addr")
        .port();
    let bind = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port));
    let log = log(50_000, 12);
    let mut source = mold_line(bind, Some(group));
    let destination = SocketAddr::V4(SocketAddrV4::new(group, port));
    let sim = MoldSimulator::start(
        Arc::clone(&log),
        MoldSimConfig::new(Session::new(b"MCAST").expect("fits"), destination),
    )
    .expect("simulator");
    source.set_request_server(sim.request_addr());
    let (csv, report, messages) = run_into_snapshot(LineSource::Mold(source));
    sim.stop().expect("simulator stops");
    check_mold(&report, messages, &log);
    assert_eq!(csv, replayed_book(&log, books(), DEPTH));
}

fn soup_line(server: SocketAddr) -> SoupSource {
    let mut client = ClientConfig::new(Credentials::new(b"e2e", b"secret").expect("fits"));
    client.next_sequence = 1;
    SoupSource::new(
        SoupFeedConfig {
            server,
            client,
            connect_timeout: Duration::from_secs(5),
            max_reconnects: 20,
            reconnect: BackoffConfig {
                base: Duration::from_millis(20),
                cap: Duration::from_millis(640),
            },
            reconnect_seed: Some(14),
            max_duration: Some(Duration::from_secs(60)),
            breaker: DEFAULT_LINE_BREAKER,
        },
        PipelineConfig::default().wait,
    )
}

fn soup_sim(log: &Arc<MessageLog>, disconnect_after: Option<u64>) -> SoupSimulator {
    let mut c = SoupSimConfig::new(
        loopback(0),
        Credentials::new(b"e2e", b"secret").expect("fits"),
        Session::new(b"SOUP").expect("fits"),
    );
    c.disconnect_after = disconnect_after;
    SoupSimulator::start(Arc::clone(log), c).expect("simulator")
}

#[test]
fn soupbintcp_session_transports_the_replayed_book() {
    let log = log(200_000, 13);
    let sim = soup_sim(&log, None);
    let (csv, report, messages) = run_into_snapshot(LineSource::Soup(soup_line(sim.local_addr())));
    let LineSourceReport::Soup(r) = &report else {
        panic!("a SoupBinTCP report")
    };
    assert_eq!(r.end, SourceEnd::EndOfSession);
    assert_eq!((r.connections, messages), (1, log.len() as u64));
    assert_eq!(csv, replayed_book(&log, books(), DEPTH));
}

#[test]
fn soupbintcp_reconnects_after_disconnects_and_transports_the_replayed_book() {
    let log = log(120_000, 14);
    let sim = soup_sim(&log, Some(50_000));
    let (csv, report, messages) = run_into_snapshot(LineSource::Soup(soup_line(sim.local_addr())));
    let stats = sim.stop();
    let LineSourceReport::Soup(r) = &report else {
        panic!("a SoupBinTCP report")
    };
    assert_eq!(r.end, SourceEnd::EndOfSession);
    assert_eq!(
        stats.disconnects, 2,
        "the server cut the first two connections"
    );
    assert_eq!(
        (r.connections, messages),
        (3, log.len() as u64),
        "resumed without loss or repeat"
    );
    assert_eq!(csv, replayed_book(&log, books(), DEPTH));
}

/// The messages of `log` as an ITCH50 file (2-byte length before each), for the oracle.
fn write_itch50_file(log: &MessageLog, path: &std::path::Path) {
    let mut bytes = Vec::new();
    for seq in 1..=log.len() as u64 {
        let message = log.get(seq).expect("in the log");
        let len = u16::try_from(message.len()).expect("an ITCH message fits a u16 prefix");
        bytes.extend_from_slice(&len.to_be_bytes());
        bytes.extend_from_slice(message);
    }
    std::fs::write(path, bytes).expect("write the day");
}

#[test]
fn moldudp64_with_recovered_loss_ends_on_itch_books_book() {
    let test = "moldudp64_with_recovered_loss_ends_on_itch_books_book";
    let Some(python) = util::oracle::python(test) else {
        return;
    };
    let log = log(100_000, 15);
    let (live_depth, report) = lossy_mold_run(&log, b"ORACLE", 9, 0.03);
    let LineSourceReport::Mold(r) = &report else {
        unreachable!()
    };
    assert!(
        r.recovery.recovered > 0,
        "the loss was recovered by retransmission: {:?}",
        r.recovery
    );
    assert!(live_depth.lines().count() > 50, "a real book");

    // itch-book's book for the same messages, read from a file by its own parser.
    let dir = tempfile::tempdir().expect("tempdir");
    let day = dir.path().join("day.itch50");
    write_itch50_file(&log, &day);
    let ours = dir.path().join("live.book.csv");
    std::fs::write(&ours, &live_depth).expect("write");
    let theirs = dir.path().join("theirs.book.csv");
    let depth = DEPTH.to_string();
    util::oracle::run(
        &python,
        "itch_book_oracle.py",
        &[
            &day,
            std::path::Path::new("--book-out"),
            &theirs,
            std::path::Path::new("--depth"),
            std::path::Path::new(&depth),
        ],
        &[],
    );
    // The generator's hard cases take some levels past 2^32 shares, which itch-book sums
    // in 32 bits: quantities are compared modulo 2^32 (see compare.py).
    let verdict = util::oracle::run(
        &python,
        "compare.py",
        &[&ours, &theirs],
        &["--depth-only", "--mod32"],
    );
    assert!(verdict.contains("ORACLE OK"), "{verdict}");
    let rows = live_depth.lines().count() - 1;
    assert!(
        verdict.contains(&format!("{rows} depth rows equal")),
        "every row of the live depth was compared: {verdict}"
    );
}
