//! A writer killed with `kill -9` leaves a file that readers still read consistently; a slot it
//! left mid-write is reported by every reader (Rust, CLI, Python), never waited on; and a
//! running reader (`ticklane top`, the Python reader's `--watch`) follows the writer restarted
//! on the same path.

use std::io::{BufRead, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use ticklane_engine::snapshot::{wall_clock_ns, ReadError, SnapshotReader, SnapshotWriter};
use ticklane_feed::itch::Locate;
use ticklane_testkit::process::rerun_test;

use crate::util::snapshot::{check_state, day, expected_states, publish_pass};
use crate::util::{ticklane, Watched};

const CHILD_ENV: &str = "TICKLANE_SNAPSHOT_KILLED_WRITER";
const RESTARTED_ENV: &str = "TICKLANE_SNAPSHOT_RESTARTED_WRITER";
const DEPTH: usize = 4;

fn the_day() -> Vec<u8> {
    day(10_000, 9, 5, true)
}

fn run(program: &str, args: &[&str]) -> (Output, Duration) {
    let started = Instant::now();
    let output = Command::new(program).args(args).output().expect("run");
    (output, started.elapsed())
}

#[test]
fn a_writer_killed_while_publishing_leaves_a_consistent_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("killed.snap");
    let mut child = rerun_test(module_path!(), "killed_writer_child")
        .env(CHILD_ENV, &path)
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn writer");
    let lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    let ready = lines
        .map_while(Result::ok)
        .any(|line| line.ends_with("READY"));
    assert!(ready, "the writer child should publish a pass");
    // The writer is publishing at full speed: kill it wherever it is.
    child.kill().expect("SIGKILL");
    assert!(!child.wait().expect("reap").success());

    let reader = SnapshotReader::open(&path).expect("a killed writer's file still opens");
    assert!(!reader.header().is_closed(), "nobody closed it");
    let expected = expected_states(&the_day(), DEPTH);
    let mut readable = 0;
    for slot in reader.slots() {
        match reader.read(slot) {
            Ok(state) => {
                check_state(&state, &expected);
                readable += 1;
            }
            // The one slot caught mid-write, if the kill landed inside a write.
            Err(ReadError::WriteInProgress { sequence, .. }) => assert_eq!(sequence % 2, 1),
            Err(e) => panic!("slot {slot}: {e}"),
        }
    }
    assert!(
        readable + 1 >= reader.slots().len(),
        "at most one slot mid-write"
    );
    let (output, took) = run(
        env!("CARGO_BIN_EXE_ticklane"),
        &["book", "--snapshot", path.to_str().expect("UTF-8"), "--csv"],
    );
    assert!(took < Duration::from_secs(10), "bounded: {took:?}");
    if !output.status.success() {
        assert!(String::from_utf8_lossy(&output.stderr).contains("mid-write"));
    }
}

/// The writer side: runs only as the child of the test above, until it is killed.
#[test]
fn killed_writer_child() {
    let Some(path) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let day = the_day();
    let mut writer = SnapshotWriter::create(&path, 16, DEPTH).expect("create");
    publish_pass(&day, &mut writer, |_| {});
    println!("READY");
    // Bounded in case the parent dies first: a killed parent cannot kill us.
    let until = Instant::now() + Duration::from_secs(20);
    while Instant::now() < until {
        publish_pass(&day, &mut writer, |_| {});
        writer.heartbeat(wall_clock_ns());
    }
}

#[test]
fn a_slot_left_mid_write_is_reported_by_every_reader() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("odd.snap");
    let day = the_day();
    let mut writer = SnapshotWriter::create(&path, 16, DEPTH).expect("create");
    publish_pass(&day, &mut writer, |_| {});
    let victim = Locate(2);
    let slot = writer.slot_of(victim).expect("published");
    // What `kill -9` inside a write leaves: an odd sequence, and no close.
    writer.abandon_write_for_tests(victim);
    std::mem::forget(writer);

    let reader = SnapshotReader::open(&path).expect("open");
    let expected = expected_states(&day, DEPTH);
    let started = Instant::now();
    assert!(matches!(
        reader.read(slot),
        Err(ReadError::WriteInProgress { sequence, .. }) if sequence % 2 == 1
    ));
    assert!(started.elapsed() < Duration::from_secs(2), "bounded");
    let mut symbol = None;
    for other in reader.slots() {
        if other == slot {
            continue;
        }
        let state = reader.read(other).expect("other slots unaffected");
        check_state(&state, &expected);
        symbol.get_or_insert(state.symbol().to_vec());
    }
    let path_str = path.to_str().expect("UTF-8");
    let ticklane = env!("CARGO_BIN_EXE_ticklane");

    let (csv, took) = run(ticklane, &["book", "--snapshot", path_str, "--csv"]);
    assert!(!csv.status.success() && took < Duration::from_secs(10));
    let stderr = String::from_utf8_lossy(&csv.stderr);
    assert!(
        stderr.contains(&format!("slot {slot}")) && stderr.contains("mid-write"),
        "{stderr}"
    );

    let (top, took) = run(ticklane, &["top", "--snapshot", path_str, "--once"]);
    assert!(top.status.success() && took < Duration::from_secs(10));
    let frame = String::from_utf8_lossy(&top.stdout);
    assert!(
        frame.contains(&format!("(slot {slot}) unreadable")),
        "{frame}"
    );

    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/oracle/snapshot_reader.py"
    );
    let (python, took) = run("python3", &[script, path_str, "--csv"]);
    assert!(!python.status.success() && took < Duration::from_secs(30));
    assert!(String::from_utf8_lossy(&python.stderr).contains("stayed mid-write"));

    // A stock in a healthy slot still shows.
    let symbol = String::from_utf8(symbol.expect("another slot")).expect("ASCII");
    let (book, _) = run(ticklane, &["book", "--snapshot", path_str, &symbol]);
    assert!(
        book.status.success(),
        "{}",
        String::from_utf8_lossy(&book.stderr)
    );
}

/// Starts a writer child on `path` that publishes a pass, says READY, then heartbeats until
/// it is killed; returns it once it is READY.
fn start_heartbeating_writer(path: &Path) -> Child {
    let mut child = rerun_test(module_path!(), "heartbeating_writer_child")
        .env(RESTARTED_ENV, path)
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn writer");
    let lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    let ready = lines
        .map_while(Result::ok)
        .any(|line| line.ends_with("READY"));
    assert!(ready, "the writer child should publish a pass");
    child
}

/// The writer side of the restart test: runs only as its child, until it is killed.
#[test]
fn heartbeating_writer_child() {
    let Some(path) = std::env::var_os(RESTARTED_ENV) else {
        return;
    };
    let mut writer = SnapshotWriter::create(&path, 16, DEPTH).expect("create");
    publish_pass(&the_day(), &mut writer, |_| {});
    writer.heartbeat(wall_clock_ns());
    println!("READY");
    // Bounded in case the parent dies first: a killed parent cannot kill us.
    let until = Instant::now() + Duration::from_secs(60);
    while Instant::now() < until {
        writer.heartbeat(wall_clock_ns());
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `python3`, if it runs; `None` (said where a person sees it) if not, and a failure under
/// `CI=true`, where the oracle must be there.
fn python3() -> Option<Command> {
    let runs = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if runs {
        return Some(Command::new("python3"));
    }
    assert!(
        !std::env::var("CI").is_ok_and(|v| v == "true"),
        "python3 is not installed: the Python reader cannot be checked"
    );
    let _ = std::io::stderr()
        .write_all(b"\n!!!! SKIPPED the Python reader's restart check: python3 is not installed\n");
    None
}

#[test]
fn running_readers_follow_a_writer_restarted_after_kill_9() {
    const WITHIN: Duration = Duration::from_secs(20);
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("restarted.snap");
    let path_str = path.to_str().expect("UTF-8");
    let mut first = start_heartbeating_writer(&path);
    let first_pid = first.id();

    // Bounded: 5,000 frames of 20 ms, far past the test's own deadlines.
    let mut top = Watched::spawn(ticklane().args([
        "top",
        "--snapshot",
        path_str,
        "--interval-ms",
        "20",
        "--iterations",
        "5000",
    ]));
    let top_frame = |pid: u32| format!("ticklane top  {path_str}  pid {pid}  ");
    top.wait_for_line(&top_frame(first_pid), WITHIN);
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/oracle/snapshot_reader.py"
    );
    let mut python = python3().map(|mut python| {
        let mut watched = Watched::spawn(python.args([
            script,
            path_str,
            "--watch",
            "--interval-ms",
            "20",
            "--iterations",
            "5000",
        ]));
        watched.wait_for_line(&format!("pid {first_pid}  "), WITHIN);
        watched
    });

    first.kill().expect("SIGKILL");
    assert!(!first.wait().expect("reap").success());
    let mut second = start_heartbeating_writer(&path);
    let second_pid = second.id();
    assert_ne!(first_pid, second_pid);

    let said = top.wait_for_line("ticklane top: reopened", WITHIN);
    assert_eq!(
        said,
        format!(
            "ticklane top: reopened: a new writer (pid {second_pid}, was {first_pid}) replaced \
             the file"
        )
    );
    let frame = top.wait_for_line("ticklane top  ", WITHIN);
    assert!(frame.starts_with(&top_frame(second_pid)), "{frame}");
    assert!(!frame.contains("WRITER SILENT"), "{frame}");
    if let Some(python) = python.as_mut() {
        let said = python.wait_for_line("reopened", WITHIN);
        assert_eq!(
            said,
            format!("reopened: a new writer (pid {second_pid}, was {first_pid}) replaced the file")
        );
        let line = python.wait_for_line("pid ", WITHIN);
        assert!(line.starts_with(&format!("pid {second_pid}  ")), "{line}");
    }

    for mut reader in [Some(top), python].into_iter().flatten() {
        reader.child.kill().expect("stop the reader");
        let _ = reader.child.wait();
    }
    second.kill().expect("stop the writer");
    let _ = second.wait();
}
