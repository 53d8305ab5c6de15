//! `ticklane book`, `ticklane top` and the Python example reader, against a snapshot that the
//! Rust writer filled from a generated day.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ticklane_engine::book::Books;
use ticklane_engine::snapshot::{SnapshotReader, SnapshotWriter};

use crate::util;
use crate::util::snapshot::{book_csv, day, publish_day};

fn ticklane(args: &[&str]) -> Output {
    util::ticklane().args(args).output().expect("run ticklane")
}

fn stdout_of(output: &Output) -> String {
    assert!(
        output.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).expect("UTF-8")
}

/// A closed snapshot of a generated day at `depth`, with its final books.
fn published(dir: &Path, depth: usize) -> (PathBuf, Books) {
    let path = dir.join(format!("day{depth}.snap"));
    let mut writer = SnapshotWriter::create(&path, 64, depth).expect("create");
    let books = publish_day(&day(40_000, 5, 9, true), &mut writer);
    writer.close().expect("close");
    (path, books)
}

#[test]
fn book_csv_into_a_closed_pipe_exits_141_as_a_sigpipe_death_would() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (path, _) = published(dir.path(), 10);
    // The pipe's reader is gone before the command starts: its first write fails, as under
    // `ticklane book --csv | head -1` once head has its line.
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let output = util::ticklane()
        .args(["book", "--snapshot", path.to_str().expect("UTF-8"), "--csv"])
        .stdout(writer)
        .output()
        .expect("run ticklane");
    assert_eq!(
        output.status.code(),
        Some(141),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn book_csv_equals_book_out() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (path, books) = published(dir.path(), 10);
    let path = path.to_str().expect("UTF-8 path");
    let csv = stdout_of(&ticklane(&["book", "--snapshot", path, "--csv"]));
    assert_eq!(csv, book_csv(&books, 10));
    let csv = stdout_of(&ticklane(&[
        "book",
        "--snapshot",
        path,
        "--csv",
        "--depth",
        "3",
    ]));
    assert_eq!(csv, book_csv(&books, 3));
    // More levels than the file keeps: what it keeps, and a note on stderr.
    let output = ticklane(&["book", "--snapshot", path, "--csv", "--depth", "50"]);
    assert_eq!(stdout_of(&output), book_csv(&books, 10));
    assert!(String::from_utf8_lossy(&output.stderr).contains("keeps 10 levels"));
}

#[test]
fn book_shows_one_stock() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (path, books) = published(dir.path(), 5);
    let reader = SnapshotReader::open(&path).expect("open");
    let traded = (0..reader.slots().len())
        .map(|slot| reader.read(slot).expect("readable"))
        .find(|s| s.last_trade.is_some() && !s.bids.is_empty() && !s.symbol().is_empty())
        .expect("a traded stock with bids");
    let symbol = String::from_utf8(traded.symbol().to_vec()).expect("ASCII");
    let path = path.to_str().expect("UTF-8 path");
    let view = stdout_of(&ticklane(&["book", "--snapshot", path, &symbol]));
    assert!(
        view.starts_with(&format!("{symbol}  (locate {})", traded.locate.0)),
        "{view}"
    );
    let best = books.top_of_book(traded.locate).bid_price().expect("bids");
    assert!(
        view.contains(&best.to_string()),
        "best bid {best} in\n{view}"
    );
    assert!(view.contains("last trade "), "{view}");
    assert!(view.contains("CLOSED (writer exited)"), "{view}");
    assert_eq!(
        view.lines().filter(|l| l.contains(" | ")).count(),
        6,
        "header + 5 levels\n{view}"
    );

    let missing = ticklane(&["book", "--snapshot", path, "NOSUCH"]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("NOSUCH is not in"));
    let not_a_snapshot = ticklane(&["book", "--snapshot", env!("CARGO_MANIFEST_DIR"), "--csv"]);
    assert!(!not_a_snapshot.status.success());
}

#[test]
fn top_prints_frames_of_the_busiest_books() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (path, _books) = published(dir.path(), 10);
    let reader = SnapshotReader::open(&path).expect("open");
    let mut states: Vec<_> = reader
        .slots()
        .map(|slot| reader.read(slot).expect("readable"))
        .collect();
    states.sort_by_key(|s| (std::cmp::Reverse(s.publishes), s.locate));
    let path = path.to_str().expect("UTF-8 path");

    let frame = stdout_of(&ticklane(&[
        "top",
        "--snapshot",
        path,
        "--once",
        "--rows",
        "3",
    ]));
    let lines: Vec<&str> = frame.lines().collect();
    assert!(lines[0].starts_with("ticklane top"), "{frame}");
    assert!(lines[0].contains("CLOSED"), "{frame}");
    // Rows 2..5 are the three busiest books, busiest first.
    for (line, state) in lines[2..5].iter().zip(&states) {
        let symbol = String::from_utf8_lossy(state.symbol()).into_owned();
        assert!(
            line.starts_with(&format!("{symbol:<8} {:>6}", state.locate.0)),
            "{frame}"
        );
    }
    assert!(!frame.contains('\x1b'), "no screen control codes in --once");

    let frames = stdout_of(&ticklane(&[
        "top",
        "--snapshot",
        path,
        "--iterations",
        "2",
        "--interval-ms",
        "10",
    ]));
    assert_eq!(frames.matches("ticklane top").count(), 2, "{frames}");
}

#[test]
fn python_reader_prints_the_same_csv() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (path, books) = published(dir.path(), 10);
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/oracle/snapshot_reader.py"
    );
    let python = |args: &[&str]| {
        Command::new("python3")
            .arg(script)
            .arg(&path)
            .args(args)
            .output()
            .expect("python3 on PATH runs the example reader")
    };
    assert_eq!(stdout_of(&python(&["--csv"])), book_csv(&books, 10));
    assert_eq!(
        stdout_of(&python(&["--csv", "--depth", "2"])),
        book_csv(&books, 2)
    );
    let rust = stdout_of(&ticklane(&[
        "book",
        "--snapshot",
        path.to_str().expect("UTF-8 path"),
        "--csv",
    ]));
    assert_eq!(stdout_of(&python(&["--csv"])), rust);
    let symbol = String::from_utf8(books.symbol(books.locates()[0]).to_vec()).expect("ASCII");
    let view = stdout_of(&python(&[&symbol]));
    assert!(view.starts_with(&format!("{symbol} (locate")), "{view}");
}

#[test]
fn book_csv_of_a_flagged_snapshot_warns_on_stderr_and_keeps_stdout_the_csv() {
    use ticklane_engine::snapshot::{read_all, LineState};

    let dir = tempfile::tempdir().expect("temp dir");
    let (clean, books) = published(dir.path(), 10);
    let clean = ticklane(&[
        "book",
        "--snapshot",
        clean.to_str().expect("UTF-8"),
        "--csv",
    ]);
    assert_eq!(stdout_of(&clean), book_csv(&books, 10));
    assert_eq!(
        String::from_utf8_lossy(&clean.stderr),
        "",
        "nothing to warn of"
    );

    // One instrument stale on its own: named, with the count.
    let one = dir.path().join("one-stale.snap");
    let mut writer = SnapshotWriter::create(&one, 64, 10).expect("create");
    let books = publish_day(&day(40_000, 5, 9, true), &mut writer);
    let locate = books.locates()[0];
    assert!(writer.set_instrument_stale(locate, true));
    let symbol = String::from_utf8(books.symbol(locate).to_vec()).expect("ASCII");
    writer.close().expect("close");
    let output = ticklane(&["book", "--snapshot", one.to_str().expect("UTF-8"), "--csv"]);
    assert_eq!(
        stdout_of(&output),
        book_csv(&books, 10),
        "stdout stays the CSV"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    let all = SnapshotReader::open(&one).expect("open").slots().len();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("ticklane: warning: ")
            && stderr.contains(&format!("STALE (line feed down; last known books, not live) on 1 of {all} books: {symbol}\n"))
            && !stderr.contains("MAYBE_BAD"),
        "{stderr}"
    );

    // A declared loss and a silent line: both flags on every book, in one line.
    let lossy = dir.path().join("lossy.snap");
    let mut writer = SnapshotWriter::create(&lossy, 64, 10).expect("create");
    let books = publish_day(&day(40_000, 5, 9, true), &mut writer);
    writer.declare_loss(7, 1);
    writer.set_line_state(LineState::Silent, 1);
    writer.close().expect("close");
    let output = ticklane(&[
        "book",
        "--snapshot",
        lossy.to_str().expect("UTF-8"),
        "--csv",
    ]);
    assert_eq!(
        stdout_of(&output),
        book_csv(&books, 10),
        "stdout stays the CSV"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    // Named in locate order, as the CSV lists them.
    let mut states = read_all(&SnapshotReader::open(&lossy).expect("open"))
        .into_complete()
        .expect("every slot");
    states.sort_by_key(|s| s.locate);
    let all = states.len();
    assert!(all <= 10, "few enough to be named");
    let symbols: Vec<String> = states
        .iter()
        .map(|s| String::from_utf8(s.symbol().to_vec()).expect("ASCII"))
        .collect();
    assert!(
        stderr.contains(&format!(
            "MAYBE_BAD (7 messages declared lost; books may be wrong) on {all} of {all} books: {}; \
             STALE (line silent; last known books, not live) on {all} of {all} books: {}\n",
            symbols.join(" "),
            symbols.join(" ")
        )),
        "{stderr}"
    );
}

#[test]
fn book_csv_of_a_writer_gone_without_closing_warns_that_it_is_silent() {
    use ticklane_engine::snapshot::wall_clock_ns;

    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("gone.snap");
    let mut writer = SnapshotWriter::create(&path, 64, 10).expect("create");
    let books = publish_day(&day(40_000, 5, 9, true), &mut writer);
    // Its last heartbeat a minute ago, and never closed: as a writer killed with `kill -9`
    // leaves the file (dropping the writer would mark it closed).
    writer.heartbeat(wall_clock_ns() - 60_000_000_000);
    std::mem::forget(writer);
    let output = ticklane(&["book", "--snapshot", path.to_str().expect("UTF-8"), "--csv"]);
    assert_eq!(
        stdout_of(&output),
        book_csv(&books, 10),
        "stdout stays the CSV"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("ticklane: warning: ")
            && stderr.contains("WRITER SILENT (last heartbeat 60.")
            && stderr.contains("the writer is gone or stuck"),
        "{stderr}"
    );
}
