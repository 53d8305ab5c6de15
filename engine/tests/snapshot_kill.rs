//! A writer killed with `kill -9` leaves a file that readers still read consistently; a slot it
//! left mid-write is reported by every reader (Rust, CLI, Python), never waited on.

mod snapshot_util;

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use snapshot_util::{check_state, day, expected_states, publish_pass};
use ticklane_engine::snapshot::{wall_clock_ns, ReadError, SnapshotReader, SnapshotWriter};
use ticklane_feed::itch::Locate;

const CHILD_ENV: &str = "TICKLANE_SNAPSHOT_KILLED_WRITER";
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
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "killed_writer_child",
            "--nocapture",
            "--test-threads=1",
        ])
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

    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/snapshot_reader.py");
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
