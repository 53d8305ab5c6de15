//! Shutdown and restart with real processes: `ticklane sim --tcp` serves a
//! generated day over SoupBinTCP, paced, to `ticklane run --config`.
//!
//! - SIGTERM mid-stream: the engine drains and exits 0 within `engine.shutdown_timeout_s`,
//!   and its snapshot is marked `CLOSED`.
//! - `kill -9` mid-stream, while a reader thread reads every slot of the snapshot without
//!   pause: a restarted engine starts on the same snapshot path with no manual step (the
//!   kernel released the lock; the new file is renamed over the old one, so the reader keeps
//!   a whole file mapped until it notices the new writer and reopens), rebuilds its books
//!   from SoupBinTCP sequence 1, ends cleanly, and its final books equal `ticklane replay` of
//!   the same day. The reader never sees a torn slot: every read either fails as a write in
//!   progress (the killed writer's last slot) or returns a state whose levels are ordered,
//!   non-empty, and whose feed sequence never goes backwards under one writer.
//!
//! The reference books come from `replay`, which shares the book code with `run`: this
//! proves the restart (transport and rebuild), not the book rules, which other tests check
//! against independent oracles. The test lives with the engine's process tests (not in
//! `tests/`) because only the engine's own tests are handed the `ticklane` binary by cargo.
//!
//! Bounded: every wait has a deadline; readiness is a printed line or a snapshot state
//! polled with a deadline, never a sleep.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ticklane_engine::snapshot::{InstrumentState, ReadError, SnapshotReader};

use crate::util::{free_port, ok, ticklane, utf8, Watched, READY_WITHIN};

const MESSAGES: &str = "200000";
/// Paced so that the line is mid-stream for seconds: 200,000 messages at 40,000 a second.
const RATE: &str = "40000";
const DEADLINE: Duration = Duration::from_secs(60);
/// `engine.shutdown_timeout_s` in the test's configuration.
const SHUTDOWN_BOUND: Duration = Duration::from_secs(5);

struct Day {
    dir: tempfile::TempDir,
    file: PathBuf,
    snapshot: PathBuf,
    config: PathBuf,
    port: u16,
}

/// A generated day, a configuration for a SoupBinTCP line from sequence 1 into a snapshot.
fn day() -> Day {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("day.itch50");
    ok(ticklane()
        .args(["gen", utf8(&file), "--messages", MESSAGES])
        .args(["--stocks", "10", "--seed", "17"])
        .output()
        .expect("gen"));
    let snapshot = dir.path().join("live.snap");
    let config = dir.path().join("line.toml");
    let port = free_port();
    let toml = format!(
        "[snapshot]\npath = {snapshot:?}\ndepth = 10\ncapacity = 256\n\n\
         [engine]\nmax_orders = 262144\nmax_books = 256\nlevels_per_side = 2048\n\
         shutdown_timeout_s = {}\n\n\
         [feed]\nkind = \"soupbintcp\"\nserver = \"127.0.0.1:{port}\"\nusername = \"user\"\n\
         password = \"pass\"\nnext_sequence = 1\nserver_timeout_s = 10\nmax_reconnects = 5\n\
         max_duration_s = 60\n",
        SHUTDOWN_BOUND.as_secs()
    );
    std::fs::write(&config, toml).expect("write config");
    Day {
        dir,
        file,
        snapshot,
        config,
        port,
    }
}

fn start_sim(day: &Day) -> Watched {
    let mut sim = Watched::spawn(
        ticklane()
            .args(["sim", utf8(&day.file)])
            .args(["--tcp", &format!("127.0.0.1:{}", day.port)])
            .args(["--rate", RATE]),
    );
    sim.wait_for_line("serving ", READY_WITHIN);
    sim
}

fn start_run(day: &Day) -> Watched {
    let mut run = Watched::spawn(ticklane().args(["run", "--config", utf8(&day.config)]));
    run.wait_for_line("ticklane run: ready (", READY_WITHIN);
    run
}

/// Polls the snapshot until it is written by `pid` and holds `slots` instruments.
fn wait_for_instruments(path: &Path, pid: u32, slots: u64) {
    let start = Instant::now();
    loop {
        if let Ok(reader) = SnapshotReader::open(path) {
            let h = reader.header();
            if h.writer_pid == pid && h.instruments >= slots {
                return;
            }
        }
        assert!(
            start.elapsed() < DEADLINE,
            "snapshot of {pid} never held {slots} instruments"
        );
        std::thread::yield_now();
    }
}

fn signal(pid: u32, name: &str) {
    assert!(Command::new("kill")
        .args([name, &pid.to_string()])
        .status()
        .expect("kill")
        .success());
}

fn replayed_books(day: &Day) -> String {
    let csv = day.dir.path().join("replay.csv");
    ok(ticklane()
        .args(["replay", utf8(&day.file), "-q", "--book-out", utf8(&csv)])
        .output()
        .expect("replay"));
    std::fs::read_to_string(&csv).expect("replay csv")
}

fn snapshot_books(path: &Path) -> String {
    ok(ticklane()
        .args(["book", "--snapshot", utf8(path), "--csv"])
        .output()
        .expect("book"))
}

#[test]
fn sigterm_drains_exits_0_within_the_bound_and_closes_the_snapshot() {
    let day = day();
    let sim = start_sim(&day);
    let run = start_run(&day);
    let pid = run.child.id();
    wait_for_instruments(&day.snapshot, pid, 3);
    let reader = SnapshotReader::open(&day.snapshot).expect("open the snapshot");
    assert!(!reader.header().is_closed(), "mid-stream, not closed");

    signal(pid, "-TERM");
    let signalled = Instant::now();
    let output = run.finish(SHUTDOWN_BOUND + Duration::from_secs(5));
    let took = signalled.elapsed();
    let out = ok(output);
    assert!(took < SHUTDOWN_BOUND, "drained in {took:?}");
    assert!(out.contains("stopped"), "{out}");
    // The reader that kept the file mapped sees it closed, as does a new one.
    assert!(reader.header().is_closed(), "{:?}", reader.header());
    assert!(SnapshotReader::open(&day.snapshot)
        .expect("reopen")
        .header()
        .is_closed());

    signal(sim.child.id(), "-TERM");
    let _ = sim.finish(DEADLINE);
}

/// What the continuous reader saw.
#[derive(Debug, Default)]
struct ReaderLog {
    reads: u64,
    in_progress: u64,
    writers: Vec<u32>,
}

/// The checks a torn copy would fail: levels ordered and non-empty.
fn assert_whole(state: &InstrumentState) {
    for side in [&state.bids, &state.asks] {
        for level in side.iter() {
            assert!(level.qty > 0 && level.orders > 0, "empty level: {state:?}");
        }
    }
    assert!(
        state.bids.windows(2).all(|w| w[0].price > w[1].price),
        "bids out of order: {state:?}"
    );
    assert!(
        state.asks.windows(2).all(|w| w[0].price < w[1].price),
        "asks out of order: {state:?}"
    );
}

/// Reads every slot, again and again, until `done`; reopens when a new writer has renamed
/// its file over the path.
fn read_continuously(path: PathBuf, done: Arc<AtomicBool>, seen: Arc<AtomicU32>) -> ReaderLog {
    let mut log = ReaderLog::default();
    let mut reader: Option<SnapshotReader> = None;
    let mut last_seq: Vec<u64> = Vec::new();
    let mut pass = 0u64;
    while !done.load(Ordering::Acquire) {
        pass += 1;
        if reader.is_none() || pass.is_multiple_of(64) {
            if let Ok(fresh) = SnapshotReader::open(&path) {
                let pid = fresh.header().writer_pid;
                if log.writers.last() != Some(&pid) {
                    log.writers.push(pid);
                    seen.store(pid, Ordering::Release);
                    last_seq.clear();
                    reader = Some(fresh);
                }
            }
        }
        let Some(r) = &reader else {
            std::thread::yield_now();
            continue;
        };
        for slot in r.slots() {
            match r.read(slot) {
                Ok(state) => {
                    log.reads += 1;
                    assert_whole(&state);
                    if last_seq.len() <= slot {
                        last_seq.resize(slot + 1, 0);
                    }
                    assert!(
                        state.feed_seq >= last_seq[slot],
                        "slot {slot} went back from {} to {}",
                        last_seq[slot],
                        state.feed_seq
                    );
                    last_seq[slot] = state.feed_seq;
                }
                Err(ReadError::WriteInProgress { .. }) => log.in_progress += 1,
                Err(ReadError::Contended { .. }) => {}
                Err(e @ ReadError::NoSuchSlot { .. }) => panic!("slot {slot}: {e}"),
            }
        }
    }
    log
}

#[test]
fn kill_9_mid_stream_then_restart_rebuilds_the_books_under_a_reader() {
    let day = day();
    let sim = start_sim(&day);
    let first = start_run(&day);
    let first_pid = first.child.id();
    wait_for_instruments(&day.snapshot, first_pid, 3);

    let done = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(AtomicU32::new(0));
    let reader = {
        let (path, done, seen) = (day.snapshot.clone(), Arc::clone(&done), Arc::clone(&seen));
        std::thread::spawn(move || read_continuously(path, done, seen))
    };
    // The reader is reading the first writer's file before the kill.
    let start = Instant::now();
    while seen.load(Ordering::Acquire) != first_pid {
        assert!(
            start.elapsed() < DEADLINE,
            "the reader never opened the snapshot"
        );
        std::thread::yield_now();
    }

    signal(first_pid, "-KILL");
    let killed = first.finish(DEADLINE);
    assert_eq!(killed.status.code(), None, "killed by a signal");

    let second = start_run(&day);
    let second_pid = second.child.id();
    let out = ok(second.finish(DEADLINE));
    assert!(out.contains("end of session"), "{out}");

    // The reader has moved on to the restarted writer's file before it is told to stop.
    let start = Instant::now();
    while seen.load(Ordering::Acquire) != second_pid {
        assert!(
            start.elapsed() < DEADLINE,
            "the reader never saw the new snapshot"
        );
        std::thread::yield_now();
    }
    done.store(true, Ordering::Release);
    let log = reader.join().expect("the reader never saw a torn slot");
    eprintln!("reader: {log:?}");
    assert!(log.reads > 0, "{log:?}");
    assert_eq!(log.writers, [first_pid, second_pid], "{log:?}");

    let header = SnapshotReader::open(&day.snapshot).expect("open").header();
    assert_eq!(header.writer_pid, second_pid);
    assert!(header.is_closed(), "{header:?}");
    let live = snapshot_books(&day.snapshot);
    let replayed = replayed_books(&day);
    assert!(replayed.lines().count() > 20, "a real book");
    assert_eq!(live, replayed);

    signal(sim.child.id(), "-TERM");
    let _ = sim.finish(DEADLINE);
}
