//! One writer per snapshot path, across processes: a second writer is refused with an error
//! naming the path and the holder's pid, the holder's file is not replaced, and after the
//! holder is killed with SIGKILL a new writer starts on the same path with no manual step.
//!
//! The holder is this test binary run again as a child (`lock_holder_child`, which does
//! nothing unless `TICKLANE_LOCK_CHILD` names a path): it creates the writer, says `ready` on
//! stdout, and holds it until its stdin closes. No sleeps: the parent waits for the line.
//! The holder's stdout stays open in the parent until the holder ends, so its last words do not
//! meet a closed pipe.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Stdio};

use ticklane_engine::snapshot::{SnapshotError, SnapshotReader, SnapshotWriter};
use ticklane_testkit::process::rerun_test;

const CHILD_ENV: &str = "TICKLANE_LOCK_CHILD";
/// What the holder prints once it holds the lock.
const READY: &str = "lock-holder-ready";

/// In the child: hold a writer on the path in `TICKLANE_LOCK_CHILD` until stdin closes.
#[test]
fn lock_holder_child() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return; // an ordinary run of the suite: nothing to do
    };
    let writer = SnapshotWriter::create(&path, 4, 2).expect("the child creates the snapshot");
    // libtest prints its own words on the same line: look for the token, not the line.
    println!("{READY}");
    let mut rest = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut rest);
    drop(writer);
}

/// Starts a child holding a writer on `path`; returns once it said `ready`.
fn holder(path: &Path) -> Holder {
    let mut child = rerun_test(module_path!(), "lock_holder_child")
        .env(CHILD_ENV, path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the holder");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut line = String::new();
    while !line.contains(READY) {
        line.clear();
        let n = stdout
            .read_line(&mut line)
            .expect("read the holder's stdout");
        assert!(n > 0, "the holder ended without saying it was ready");
    }
    Holder {
        child,
        _stdout: stdout,
    }
}

/// The holder process, with its stdout kept open.
struct Holder {
    child: Child,
    _stdout: BufReader<std::process::ChildStdout>,
}

#[test]
fn a_second_engine_is_refused_and_a_kill_9_needs_no_manual_step() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("books.snap");
    let mut holder = holder(&path);
    let child = &mut holder.child;
    let pid = child.id();
    let created = SnapshotReader::open(&path)
        .expect("the holder's file")
        .header();
    assert_eq!(created.writer_pid, pid);

    let refused = SnapshotWriter::create(&path, 4, 2).expect_err("a second writer");
    match &refused {
        SnapshotError::Locked {
            path: p,
            holder_pid,
            ..
        } => {
            assert_eq!(p, &path);
            assert_eq!(*holder_pid, Some(pid));
        }
        other => panic!("expected Locked, got {other:?}"),
    }
    let text = refused.to_string();
    assert!(
        text.contains(&path.display().to_string()) && text.contains(&format!("pid {pid}")),
        "the error names the path and the holder: {text}"
    );
    // Never a silent replacement: the holder's file is the one at the path still.
    let still = SnapshotReader::open(&path).expect("open").header();
    assert_eq!(
        (still.writer_pid, still.created_ns),
        (pid, created.created_ns)
    );

    // kill -9: the kernel drops the lock with the process.
    child.kill().expect("SIGKILL the holder");
    child.wait().expect("reap the holder");
    let left = SnapshotReader::open(&path).expect("open").header();
    assert!(!left.is_closed(), "a killed writer does not close the file");
    let writer = SnapshotWriter::create(&path, 4, 2).expect("a restart on the same path");
    let header = SnapshotReader::open(&path).expect("open").header();
    assert_eq!(header.writer_pid, std::process::id());
    assert!(!header.is_closed());
    drop(writer);
}

#[test]
fn a_holder_that_exits_cleanly_frees_the_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("books.snap");
    let mut holder = holder(&path);
    let child = &mut holder.child;
    assert!(SnapshotWriter::create(&path, 4, 2).is_err(), "held");
    drop(child.stdin.take()); // the holder drops its writer and exits
    assert!(child.wait().expect("reap").success());
    assert!(SnapshotReader::open(&path)
        .expect("open")
        .header()
        .is_closed());
    SnapshotWriter::create(&path, 4, 2).expect("free again");
}
