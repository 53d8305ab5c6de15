//! Recovery at rates, end to end over loopback: the exchange simulator as `ticklane sim` runs
//! it (`ExchangeSim`: the paced MoldUDP64 stream, its retransmission server, the linger after
//! the end of session) against a line read from a configuration file as `ticklane run` reads
//! it (`RunConfig`, `LineSource`, `run_line` into a snapshot), with `start_sequence = 1` and
//! a generous `gap_deadline_ms = 60000`. Each case must end as a clean run does (exit status
//! 0: nothing declared lost, the line ended at end of session) with the snapshot's books
//! (`ticklane book --csv`) equal to a plain replay of the same day (`replay --book-out`).
//! Both sides go through the same books and CSV writer, so this proves the transport
//! (sessions, recovery, ring, snapshot), not the books.
//!
//! The cases: late joins of 0.5, 1 and 2 s at 100k, 200k and 400k msg/s (the line's socket
//! is bound only once the simulator has released that many seconds of messages; everything
//! before it, the stock directory included, must come from the retransmission server), and
//! bursts of 1,000 and 3,000 consecutive packets lost at 100k msg/s. Each case also checks
//! that its fault really happened.
//!
//! A table goes to stderr (libtest does not capture it: see `util::skip`) and to
//! `target/recovery_table.txt`.
//! `RECOVERY_CASES=join,3000` runs only the cases whose names contain one of those words.
//!
//! Bounded: days of 0.15 to 1.4 M messages (the join plus 1.5 s of traffic after it); each
//! line is stopped after `CASE_LIMIT` whatever it is doing (a stop declares its open gaps
//! lost, which fails the case).

use std::io::Write;
use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use ticklane_engine::book::BookConfig;
use ticklane_engine::config::RunConfig;
use ticklane_engine::csv::write_snapshot_book_csv;
use ticklane_engine::live::{
    run_line, ExchangeSim, ExchangeSimConfig, LineRun, LineSource, LineSourceReport,
};
use ticklane_engine::overload::OverloadConfig;
use ticklane_engine::snapshot::{SnapshotReader, SnapshotWriter};
use ticklane_engine::views::{line_run_status, write_line_run, ExitStatus};
use ticklane_sim::{
    BurstLoss, FaultInjector, Faults, GenConfig, MessageLog, PacketFate, Rate, SimCounts,
};
use ticklane_testkit::poll_until;

use crate::util;
use crate::util::replayed_book;

/// Depth of the books compared.
const DEPTH: usize = 10;
/// Traffic after the join: long enough for the live packets that arrive while the opening
/// gap is recovered to outnumber the reorder store's [`STORE_PACKETS`].
const AFTER_JOIN: Duration = Duration::from_millis(1_500);
/// The line's reorder store, far below the default so that every case fills it: what it
/// lets go must be asked for again, never declared lost.
const STORE_PACKETS: usize = 1_024;
/// A line still running this long is stopped (its open gaps declared lost).
const CASE_LIMIT: Duration = Duration::from_secs(40);

/// One case: a paced day, a late join or a burst of lost packets.
#[derive(Clone, Copy, Debug)]
struct Case {
    name: &'static str,
    /// Messages per second.
    rate: u64,
    /// The line binds its socket once this much of the day has been released.
    join_after: Duration,
    /// Consecutive packets lost per burst, and the chance per packet that one starts.
    burst: Option<BurstLoss>,
    /// Messages in the day.
    messages: u64,
    seed: u64,
}

fn late_join(name: &'static str, rate: u64, join_ms: u64, seed: u64) -> Case {
    let join_after = Duration::from_millis(join_ms);
    Case {
        name,
        rate,
        join_after,
        burst: None,
        messages: (rate as f64 * (join_after + AFTER_JOIN).as_secs_f64()) as u64,
        seed,
    }
}

/// Packets in a burst case's day, at the least: at 100k msg/s a packet carries up to about
/// 20 messages (the simulator's 100 µs batch window, and more when it runs late), so a
/// 500,000-message day is 24,000 to 50,000 packets.
const BURST_DAY_PACKETS: u64 = 24_000;

/// Bursts of `packets` lost packets at 100k msg/s, about two a day, the first well inside
/// it. The faults' draws are made packet by packet from the seed, whatever the timing, so
/// the first seed from `seed` on whose draws start a burst within the day's first half is
/// taken: the case's fault then happens on every run. The line binds its socket as soon as
/// the simulator has started, so the first few messages may come from the retransmission
/// server too.
fn burst(name: &'static str, packets: u32, seed: u64) -> Case {
    let burst = BurstLoss {
        probability: 2.0 / BURST_DAY_PACKETS as f64,
        packets,
    };
    let seed = (seed..)
        .find(|&seed| {
            let mut fates = FaultInjector::new(&Faults {
                seed,
                burst_loss: Some(burst),
                ..Faults::default()
            });
            (0..BURST_DAY_PACKETS / 2).any(|_| fates.next_fate() == PacketFate::Drop)
        })
        .expect("a seed whose draws start a burst");
    Case {
        name,
        rate: 100_000,
        join_after: Duration::ZERO,
        burst: Some(burst),
        messages: 500_000,
        seed,
    }
}

fn cases() -> Vec<Case> {
    vec![
        late_join("join 0.5 s @ 100k", 100_000, 500, 1),
        late_join("join 1 s @ 100k", 100_000, 1_000, 2),
        late_join("join 2 s @ 100k", 100_000, 2_000, 3),
        late_join("join 0.5 s @ 200k", 200_000, 500, 4),
        late_join("join 1 s @ 200k", 200_000, 1_000, 5),
        late_join("join 2 s @ 200k", 200_000, 2_000, 6),
        late_join("join 0.5 s @ 400k", 400_000, 500, 7),
        late_join("join 1 s @ 400k", 400_000, 1_000, 8),
        late_join("join 2 s @ 400k", 400_000, 2_000, 9),
        burst("bursts of 1000 packets", 1_000, 10),
        burst("bursts of 3000 packets", 3_000, 11),
    ]
}

fn books() -> BookConfig {
    BookConfig {
        max_orders: 1 << 20,
        max_books: 256,
        levels_per_side: 2048,
    }
}

/// The line's configuration file, as a user of `ticklane run` writes it.
fn line_config(dir: &Path, data: SocketAddr, request: SocketAddr) -> RunConfig {
    let b = books();
    let text = format!(
        "[engine]\n\
         max_orders = {}\n\
         max_books = {}\n\
         levels_per_side = {}\n\
         [snapshot]\n\
         path = \"{}\"\n\
         depth = {DEPTH}\n\
         capacity = 256\n\
         [feed]\n\
         kind = \"moldudp64\"\n\
         bind = \"{data}\"\n\
         request_server = \"{request}\"\n\
         start_sequence = 1\n\
         gap_deadline_ms = 60000\n\
         reorder_store_packets = {STORE_PACKETS}\n\
         silence_timeout_s = 10\n",
        b.max_orders,
        b.max_books,
        b.levels_per_side,
        dir.join("rates.snap").display()
    );
    let path = dir.join("line.toml");
    RunConfig::parse(&text, &path).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// What one case did.
struct Outcome {
    run: LineRun,
    sim: SimCounts,
    csv: String,
    took: Duration,
}

fn run_case(case: &Case, log: &Arc<MessageLog>) -> Outcome {
    let started = Instant::now();
    let dir = tempfile::tempdir().expect("tempdir");
    // The line's port is held by a socket nobody reads until the join: what goes there
    // before, the line never sees.
    let early = UdpSocket::bind("127.0.0.1:0").expect("early socket");
    let data = early.local_addr().expect("bound");
    let sim = ExchangeSim::start(
        log,
        ExchangeSimConfig {
            udp: Some(data),
            request: "127.0.0.1:0".parse().expect("address"),
            tcp: None,
            glimpse: None,
            rate: Rate::per_second(case.rate),
            faults: Faults {
                seed: case.seed,
                burst_loss: case.burst,
                ..Faults::default()
            },
            line_b: None,
            disconnect_after: None,
            linger: CASE_LIMIT,
        },
    )
    .expect("simulator");
    let request = sim.request_addr().expect("a retransmission server");
    let join_at = (case.rate as f64 * case.join_after.as_secs_f64()) as u64;
    assert!(
        poll_until(Duration::from_secs(20), || sim
            .mold_stats()
            .is_some_and(|s| s.messages_released >= join_at)),
        "{}: the simulator released {join_at} messages within 20 s",
        case.name
    );
    drop(early);
    let config = line_config(dir.path(), data, request);
    let pipeline = config.pipeline().expect("pipeline");
    let feed = config.feed_config().expect("feed");
    let source = LineSource::open(&feed, &pipeline).expect("bind the line");
    let writer = SnapshotWriter::create(
        config.snapshot.path.as_ref().expect("snapshot.path"),
        config.snapshot.capacity,
        config.snapshot.depth,
    )
    .expect("snapshot");

    let stop_sim = Arc::new(AtomicBool::new(false));
    let serving = {
        let stop = Arc::clone(&stop_sim);
        std::thread::spawn(move || sim.serve(&stop))
    };
    // The bound: stops the line after CASE_LIMIT unless it ended first.
    let stop_line = Arc::new(AtomicBool::new(false));
    let (ended, watch) = mpsc::channel::<()>();
    let watchdog = {
        let stop = Arc::clone(&stop_line);
        std::thread::spawn(move || {
            if watch.recv_timeout(CASE_LIMIT) == Err(mpsc::RecvTimeoutError::Timeout) {
                stop.store(true, Ordering::Relaxed);
            }
        })
    };
    let run = run_line(
        source,
        pipeline,
        Some(writer),
        OverloadConfig::default(),
        &stop_line,
    )
    .expect("pipeline");
    let _ = ended.send(());
    watchdog.join().expect("watchdog");
    stop_sim.store(true, Ordering::Relaxed);
    let report = serving
        .join()
        .expect("simulator thread")
        .expect("simulator");
    let reader =
        SnapshotReader::open(config.snapshot.path.as_ref().expect("path")).expect("snapshot");
    let csv = write_snapshot_book_csv(&reader, DEPTH, Vec::new()).expect("csv");
    Outcome {
        run,
        sim: report.mold.expect("MoldUDP64 ran"),
        csv: String::from_utf8(csv).expect("ascii"),
        took: started.elapsed(),
    }
}

/// What went wrong with one case, if anything.
fn verify(case: &Case, out: &Outcome, replayed: &str) -> Vec<String> {
    let mut failed = Vec::new();
    let LineSourceReport::Mold(m) = &out.run.report.source else {
        return vec!["not a MoldUDP64 line".into()];
    };
    let status = line_run_status(&out.run);
    if status != ExitStatus::Success {
        failed.push(format!(
            "exit status {} ({} messages declared lost in {} ranges; ended {})",
            status.code(),
            m.lost.messages(),
            m.lost.ranges().len(),
            m.end
        ));
    }
    if out.run.report.book.messages != case.messages {
        failed.push(format!(
            "{} of {} messages applied",
            out.run.report.book.messages, case.messages
        ));
    }
    if out.csv != replayed {
        failed.push("the snapshot's books differ from the replay's".into());
    }
    let st = m.recovery;
    match case.burst {
        Some(b) => {
            if out.sim.packets_dropped < u64::from(b.packets) {
                failed.push(format!(
                    "the fault did not happen: {} packets dropped, bursts of {}",
                    out.sim.packets_dropped, b.packets
                ));
            }
        }
        None => {
            let joined = st.joined_at.unwrap_or(0);
            let join_at = (case.rate as f64 * case.join_after.as_secs_f64()) as u64;
            if joined < join_at {
                failed.push(format!(
                    "joined at sequence {joined}, not after {join_at} messages had gone"
                ));
            }
        }
    }
    failed
}

fn row(case: &Case, out: &Outcome, failed: &[String]) -> String {
    let (joined, recovered, lost, gaps, deferred) = match &out.run.report.source {
        LineSourceReport::Mold(m) => (
            m.recovery.joined_at.unwrap_or(0),
            m.recovery.recovered,
            m.lost.messages(),
            m.recovery.gaps,
            m.recovery.packets_deferred,
        ),
        LineSourceReport::Soup(_) => (0, 0, 0, 0, 0),
    };
    format!(
        "{:<24} {:>9} {:>9} {:>9} {:>9} {:>9} {:>6} {:>9} {:>7.1}  {}",
        case.name,
        case.messages,
        joined,
        out.sim.packets_dropped,
        gaps,
        recovered,
        deferred,
        lost,
        out.took.as_secs_f64(),
        if failed.is_empty() {
            "ok".to_owned()
        } else {
            format!("FAILED: {}", failed.join("; "))
        }
    )
}

#[test]
fn late_joins_and_bursts_at_rates_end_on_the_replayed_book() {
    let only: Vec<String> = std::env::var("RECOVERY_CASES")
        .map(|v| v.split(',').map(str::to_owned).collect())
        .unwrap_or_default();
    let header = format!(
        "{:<24} {:>9} {:>9} {:>9} {:>9} {:>9} {:>6} {:>9} {:>7}",
        "case", "messages", "joined", "dropped", "gaps", "recovered", "let go", "lost", "s"
    );
    let mut stderr = std::io::stderr();
    let _ = writeln!(stderr, "\n{header}");
    let mut table = vec![header];
    let mut failures = Vec::new();
    for case in cases()
        .iter()
        .filter(|c| only.is_empty() || only.iter().any(|w| c.name.contains(w.as_str())))
    {
        let log = Arc::new(MessageLog::from_generator(GenConfig {
            messages: case.messages,
            seed: case.seed,
            stocks: 20,
            hard_cases: true,
            crossing: false,
        }));
        let replayed = replayed_book(&log, books(), DEPTH);
        let out = run_case(case, &log);
        let failed = verify(case, &out, &replayed);
        let line = row(case, &out, &failed);
        let _ = writeln!(stderr, "{line}");
        table.push(line);
        if !failed.is_empty() {
            let mut summary = Vec::new();
            let _ = write_line_run(&mut summary, &out.run, false);
            failures.push(format!(
                "{}: {}\n{}",
                case.name,
                failed.join("; "),
                String::from_utf8_lossy(&summary)
            ));
        }
    }
    let text = table.join("\n") + "\n";
    let target = util::repo_root().join("target");
    let _ = std::fs::create_dir_all(&target);
    std::fs::write(target.join("recovery_table.txt"), &text)
        .expect("write target/recovery_table.txt");
    assert!(failures.is_empty(), "{}\n\n{}", text, failures.join("\n"));
}
