//! A restart mid-day with real processes and no retransmission server: `ticklane sim`
//! serves a generated day as MoldUDP64 to a multicast group, paced, with GLIMPSE snapshots
//! beside it; `ticklane run --config` (a line with `feed.glimpse_server`) is killed with
//! `kill -9` at three points of the day and started again at once with the same command. The
//! restarted engine takes the snapshot path over, starts from a snapshot, ends at the end of
//! session with exit 0, and its books equal `ticklane replay` of the whole day.
//!
//! The time to live (the restart's spawn to its first book in the snapshot file, written by
//! the new process) is printed for each point, and bounded.
//!
//! Bounded: every wait has a deadline; each day is five seconds at 200,000 msg/s.

use std::net::Ipv4Addr;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use ticklane_engine::snapshot::SnapshotReader;

use crate::util::{free_port, ok, ticklane, utf8, Watched, READY_WITHIN};

const MESSAGES: &str = "1000000";
const RATE: &str = "200000";
const DEADLINE: Duration = Duration::from_secs(60);
/// A restarted line must have books within this long (a snapshot of some 10,000 orders).
const LIVE_WITHIN: Duration = Duration::from_secs(10);

/// Polls the snapshot until the process `pid` wrote a book into it; how long that took.
fn wait_for_books(path: &Path, pid: u32, since: Instant) -> Duration {
    loop {
        if let Ok(reader) = SnapshotReader::open(path) {
            if reader.header().writer_pid == pid && reader.header().instruments > 0 {
                return since.elapsed();
            }
        }
        assert!(
            since.elapsed() < DEADLINE,
            "the restarted engine never wrote a book"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn kill_9_and_restart_mid_day_starts_from_a_snapshot_and_ends_exact() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("day.itch50");
    ok(ticklane()
        .args(["gen", utf8(&file), "--messages", MESSAGES])
        .args(["--stocks", "12", "--seed", "31"])
        .output()
        .expect("gen"));
    let reference = dir.path().join("replay.csv");
    ok(ticklane()
        .args(["replay", utf8(&file), "-q", "--book-out", utf8(&reference)])
        .output()
        .expect("replay"));
    let whole_day = std::fs::read_to_string(&reference).expect("replay csv");
    for (i, kill_after_ms) in [1_000u64, 2_500, 4_000].into_iter().enumerate() {
        let group = Ipv4Addr::new(239, 255, 46, 10 + i as u8);
        let (port, glimpse) = (free_port(), free_port());
        let snapshot = dir.path().join(format!("live-{i}.snap"));
        let config = dir.path().join(format!("line-{i}.toml"));
        let toml = format!(
            "[snapshot]\npath = {snapshot:?}\ndepth = 10\ncapacity = 256\n\n\
             [engine]\nmax_orders = 262144\nmax_books = 256\nlevels_per_side = 2048\n\n\
             [feed]\nkind = \"moldudp64\"\nbind = \"0.0.0.0:{port}\"\n\
             multicast_group = \"{group}\"\nglimpse_server = \"127.0.0.1:{glimpse}\"\n\
             glimpse_username = \"user\"\nglimpse_password = \"pass\"\n\
             silence_timeout_s = 5\nmax_duration_s = 60\n"
        );
        std::fs::write(&config, toml).expect("write config");
        let mut sim = Watched::spawn(
            ticklane()
                .args(["sim", utf8(&file), "--rate", RATE, "--linger-s", "1"])
                .args(["--udp", &format!("{group}:{port}")])
                .args(["--glimpse", &format!("127.0.0.1:{glimpse}")]),
        );
        sim.wait_for_line("serving ", READY_WITHIN);
        let day_began = Instant::now();
        let run = || Watched::spawn(ticklane().args(["run", "--config", utf8(&config)]));
        let mut first = run();
        first.wait_for_line("ticklane run: ready (", READY_WITHIN);
        wait_for_books(&snapshot, first.child.id(), day_began);
        let kill_at = Duration::from_millis(kill_after_ms);
        std::thread::sleep(kill_at.saturating_sub(day_began.elapsed()));
        assert!(Command::new("kill")
            .args(["-KILL", &first.child.id().to_string()])
            .status()
            .expect("kill")
            .success());
        let _ = first.finish(DEADLINE);
        let restarted_at = Instant::now();
        let second = run();
        let live = wait_for_books(&snapshot, second.child.id(), restarted_at);
        eprintln!(
            "killed {:?} into the day; restarted; books live {live:?} after the restart",
            kill_at
        );
        assert!(
            live < LIVE_WITHIN,
            "books live only {live:?} after the restart"
        );
        let out = ok(second.finish(DEADLINE));
        assert!(out.contains("snapshot     GLIMPSE to sequence"), "{out}");
        let books = ok(ticklane()
            .args(["book", "--snapshot", utf8(&snapshot), "--csv"])
            .output()
            .expect("book"));
        assert!(
            books == whole_day,
            "killed {kill_at:?} in: the restarted engine's books depart from the whole day's"
        );
        let _ = sim.finish(DEADLINE);
    }
}
