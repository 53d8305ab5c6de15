//! The `ticklane` processes end to end over loopback: `ticklane sim` feeds
//! `ticklane run --config`, which stops by itself at end of session and exits 0, and whose
//! snapshot (`ticklane book --csv`) equals `ticklane replay --book-out` of the same file;
//! the live demo (the README's main command); and a graceful stop on SIGTERM. These prove
//! the transport (both sides run the same book code), not the books.
//!
//! No test sleeps hoping a child is ready: `ticklane run --config` prints
//! `ticklane run: ready (...)` once its sockets are bound and its signal handlers installed,
//! and the tests wait for that line, bounded.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{free_port, ok, ticklane, wait_bounded, Watched, READY_WITHIN};

/// `ticklane run --config CONFIG`, once it has said it is ready.
fn run_ready(config: &Path) -> Watched {
    let mut run =
        Watched::spawn(ticklane().args(["run", "--config", config.to_str().expect("utf-8")]));
    let ready = run.wait_for_line("ticklane run: ready (", READY_WITHIN);
    assert!(ready.contains("MoldUDP64 bound on 127.0.0.1:"), "{ready}");
    run
}

fn write_config(path: &Path, data: u16, request: u16, snapshot: &Path) {
    let toml = format!(
        "[snapshot]\npath = {snapshot:?}\ndepth = 10\ncapacity = 256\n\n\
         [engine]\nmax_orders = 262144\nmax_books = 256\nlevels_per_side = 2048\n\n\
         [feed]\nkind = \"moldudp64\"\nbind = \"127.0.0.1:{data}\"\nrequest_server = \"127.0.0.1:{request}\"\n\
         silence_timeout_s = 10.0\nretransmit_timeout_ms = 20\nmax_duration_s = 60.0\n"
    );
    std::fs::write(path, toml).expect("write config");
}

#[test]
fn sim_to_run_transports_the_replayed_book() {
    let dir = tempfile::tempdir().expect("tempdir");
    let day = dir.path().join("day.itch50");
    ok(ticklane()
        .args([
            "gen",
            day.to_str().expect("utf-8"),
            "--messages",
            "150000",
            "--stocks",
            "10",
            "--seed",
            "3",
        ])
        .output()
        .expect("gen"));
    let (data, request) = (free_port(), free_port());
    let snapshot = dir.path().join("live.snap");
    let config = dir.path().join("line.toml");
    write_config(&config, data, request, &snapshot);

    // The line's socket is bound once it says it is ready: no packet can miss it.
    let run = run_ready(&config);
    let sim = ticklane()
        .args(["sim", day.to_str().expect("utf-8")])
        .args([
            "--udp",
            &format!("127.0.0.1:{data}"),
            "--request",
            &format!("127.0.0.1:{request}"),
        ])
        .args(["--rate", "300000", "--drop", "0.01", "--seed", "9"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start sim");
    let run_out = ok(run.finish(Duration::from_secs(60)));
    assert!(run_out.contains("end of session"), "{run_out}");
    assert!(run_out.contains("lost 0"), "every gap filled:\n{run_out}");
    let sim_out = ok(wait_bounded(sim, Duration::from_secs(60)));
    assert!(
        !sim_out.contains("dropped 0,"),
        "the simulator dropped packets on purpose:\n{sim_out}"
    );

    let live = ok(ticklane()
        .args([
            "book",
            "--snapshot",
            snapshot.to_str().expect("utf-8"),
            "--csv",
        ])
        .output()
        .expect("book"));
    let replay_csv = dir.path().join("replay.csv");
    ok(ticklane()
        .args([
            "replay",
            day.to_str().expect("utf-8"),
            "-q",
            "--book-out",
            replay_csv.to_str().expect("utf-8"),
        ])
        .output()
        .expect("replay"));
    let replayed = std::fs::read_to_string(&replay_csv).expect("replay csv");
    assert!(replayed.lines().count() > 50, "a real book");
    assert_eq!(live, replayed);
}

#[test]
fn the_live_demo_transports_the_replayed_book() {
    let out = ok(wait_bounded(
        ticklane()
            .args(["run", "--messages", "200000", "--rate", "500000"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start demo"),
        Duration::from_secs(60),
    ));
    assert!(
        out.contains("books equal a replay of the 200,000 messages received"),
        "{out}"
    );
    assert!(!out.contains("interrupted"), "{out}");
    assert!(out.contains("receive -> published"), "{out}");
}

#[test]
fn sigterm_stops_the_line_gracefully() {
    let dir = tempfile::tempdir().expect("tempdir");
    let snapshot = dir.path().join("quiet.snap");
    let config = dir.path().join("line.toml");
    write_config(&config, free_port(), free_port(), &snapshot);
    // Ready means the SIGTERM handler is installed: the signal cannot kill it outright.
    let run = run_ready(&config);
    let pid = run.child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill")
        .success());
    let started = Instant::now();
    let out = ok(run.finish(Duration::from_secs(5)));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "stopped within the bound"
    );
    assert!(out.contains("stopped"), "{out}");
    let book = ok(ticklane()
        .args([
            "book",
            "--snapshot",
            snapshot.to_str().expect("utf-8"),
            "--csv",
        ])
        .output()
        .expect("book"));
    assert_eq!(
        book, "locate,stock,side,level,price,qty,orders\n",
        "a readable, empty snapshot"
    );
}

#[test]
fn a_demo_stopped_by_a_signal_says_so_and_checks_what_it_received() {
    // A day that takes about 20 s at this rate: the signal comes long before its end.
    let mut demo =
        Watched::spawn(ticklane().args(["run", "--messages", "1000000", "--rate", "50000"]));
    // The first line is printed after the signal handlers are installed.
    demo.wait_for_line("ticklane live demo:", READY_WITHIN);
    assert!(Command::new("kill")
        .args(["-INT", &demo.child.id().to_string()])
        .status()
        .expect("kill")
        .success());
    let output = demo.finish(Duration::from_secs(30));
    let out = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(130), "{out}");
    assert!(out.contains("  interrupted  by a signal"), "{out}");
    assert!(
        out.contains("books equal a replay of the ") && out.contains(" messages received"),
        "compared with what arrived, not the whole day:\n{out}"
    );
    assert!(!out.contains("1,000,000 messages received"), "{out}");
}
