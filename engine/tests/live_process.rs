//! The `ticklane` processes end to end over loopback: `ticklane sim` feeds
//! `ticklane run --config`, which stops by itself at end of session and exits 0, and whose
//! snapshot (`ticklane book --csv`) equals `ticklane replay --book-out` of the same file;
//! the live demo (the README's main command); and a graceful stop on SIGTERM.

use std::net::UdpSocket;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn ticklane() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ticklane"))
}

fn ok(output: Output) -> String {
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "exit {}:\n{text}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    text
}

/// A free loopback UDP port (released at once; the race with other processes is benign
/// here, and the test would fail loudly rather than pass wrongly).
fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .map(|a| a.port())
        .expect("probe port")
}

/// Waits for `child` at most `limit`; kills it and fails if it runs longer.
fn wait_bounded(mut child: Child, limit: Duration) -> Output {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if child.try_wait().expect("poll child").is_some() {
            return child.wait_with_output().expect("collect output");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let out = child.wait_with_output().expect("collect output");
    panic!(
        "still running after {limit:?}:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
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
fn sim_to_run_ends_by_itself_with_the_replayed_book() {
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

    let run = ticklane()
        .args(["run", "--config", config.to_str().expect("utf-8")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start run");
    // The line binds at start; give it a moment before the first packet.
    std::thread::sleep(Duration::from_millis(300));
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
    let run_out = ok(wait_bounded(run, Duration::from_secs(60)));
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
fn the_live_demo_runs_and_agrees_with_replay() {
    let out = ok(wait_bounded(
        ticklane()
            .args(["run", "--messages", "200000", "--rate", "500000"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start demo"),
        Duration::from_secs(60),
    ));
    assert!(out.contains("books equal a replay"), "{out}");
    assert!(out.contains("receive -> published"), "{out}");
}

#[test]
fn sigterm_stops_the_line_gracefully() {
    let dir = tempfile::tempdir().expect("tempdir");
    let snapshot = dir.path().join("quiet.snap");
    let config = dir.path().join("line.toml");
    write_config(&config, free_port(), free_port(), &snapshot);
    let run = ticklane()
        .args(["run", "--config", config.to_str().expect("utf-8")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start run");
    std::thread::sleep(Duration::from_millis(300));
    let pid = run.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill")
        .success());
    let started = Instant::now();
    let out = ok(wait_bounded(run, Duration::from_secs(5)));
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
