//! A reader in another process reads continuously while the writer publishes at full speed:
//! every slot it copies must be exactly one publication, never a mix of two.
//!
//! The reader is this test binary run again with an environment variable naming the file; it
//! derives every publication's expected contents from the same generated day, independently
//! of the writer.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use ticklane_engine::snapshot::{ReadError, SnapshotReader, SnapshotWriter};
use ticklane_testkit::process::rerun_test;

use crate::util::snapshot::{check_state, day, expected_states, publish_pass};

const CHILD_ENV: &str = "TICKLANE_SNAPSHOT_STRESS_READER";
const DEPTH: usize = 5;
/// How long the child reads for.
const READ_FOR: Duration = Duration::from_millis(1500);

fn the_day() -> Vec<u8> {
    day(20_000, 3, 6, true)
}

#[test]
fn a_reader_in_another_process_never_sees_a_torn_slot() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("stress.snap");
    let day = the_day();
    let mut writer = SnapshotWriter::create(&path, 16, DEPTH).expect("create");
    // One pass before the reader starts, so that every slot exists.
    publish_pass(&day, &mut writer, |_| {});

    let mut child = rerun_test(module_path!(), "stress_reader_child")
        .env(CHILD_ENV, &path)
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn reader");
    let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    for line in lines.by_ref() {
        // libtest may print `test stress_reader_child ... ` on the same line.
        if line.expect("child stdout").ends_with("READY") {
            break;
        }
    }

    // Publish as fast as possible until the reader is done.
    let started = Instant::now();
    let mut passes = 0u64;
    let mut stopped = false;
    while !stopped {
        publish_pass(&day, &mut writer, |seq| {
            if seq % 1024 == 0 && child.try_wait().expect("poll child").is_some() {
                stopped = true;
            }
        });
        passes += 1;
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the reader should have stopped after {READ_FOR:?}"
        );
        stopped |= child.try_wait().expect("poll child").is_some();
    }
    writer.close().expect("close");
    let status = child.wait().expect("reader exit");
    let report: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(status.success(), "the reader found a problem: {report:?}");
    let stats = report
        .iter()
        .find_map(|l| l.split_once("STATS ").map(|(_, stats)| stats))
        .unwrap_or_else(|| panic!("no stats in {report:?}"));
    let stats: HashMap<&str, u64> = stats
        .split(' ')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k, v.parse().expect("number")))
        .collect();
    eprintln!("reader {stats:?}; writer {passes} passes");
    assert!(passes >= 1);
    assert!(stats["consistent"] > 100, "{stats:?}");
    assert!(
        stats["changed"] > 100,
        "the writer ran while the reader read: {stats:?}"
    );
}

/// The reader side: runs only as the child of the test above.
#[test]
fn stress_reader_child() {
    let Some(path) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let expected = expected_states(&the_day(), DEPTH);
    let reader = SnapshotReader::open(&path).expect("open");
    let slots = reader.slots().len();
    assert!(slots > 0, "the parent published a pass first");
    println!("READY");
    let (mut consistent, mut changed, mut contended) = (0u64, 0u64, 0u64);
    let mut last_sequence = vec![0u64; slots];
    let until = Instant::now() + READ_FOR;
    while Instant::now() < until {
        for (slot, last) in last_sequence.iter_mut().enumerate() {
            match reader.read(slot) {
                Ok(state) => {
                    check_state(&state, &expected);
                    assert!(state.sequence % 2 == 0 && state.sequence >= *last);
                    changed += u64::from(state.sequence != *last);
                    *last = state.sequence;
                    consistent += 1;
                }
                // Possible while the writer is at full speed on a shared core; never torn.
                Err(ReadError::Contended { .. } | ReadError::WriteInProgress { .. }) => {
                    contended += 1
                }
                Err(e) => panic!("slot {slot}: {e}"),
            }
        }
    }
    println!("\nSTATS consistent={consistent} changed={changed} contended={contended}");
}
