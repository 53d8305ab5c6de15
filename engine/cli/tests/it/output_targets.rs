//! Every file output of `ticklane replay` (`--bbo-out`, `--book-out`, `--summary-json`,
//! `--dbn-out` plain and zstd, `--parquet-out`, `--sample-out`) lands where a plain
//! `File::create` of its path would put the bytes: through a symbolic link (to a file, or
//! dangling) into the file it names, the link left as it was; into `/dev/stdout` redirected
//! to a file or a pipe; into a FIFO. The bytes are compared with the same replay's outputs
//! written to plain files (the summary and the Parquet footer carry the replay's timings, so
//! those two are checked for their shape instead).
//!
//! `/dev/stdout` itself is only passed once a link of the test's own to it has been seen to
//! survive the replay: a regression that renamed over links would otherwise replace the
//! system's `/dev/stdout` when the tests run as root.

use std::fs::{self, File};
use std::io::Read;
use std::os::unix::fs::{symlink, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::thread;

use crate::util::ticklane;

/// One output: its flag, the extra arguments it needs, and its file name.
struct Kind {
    flag: &'static str,
    extra: &'static [&'static str],
    name: &'static str,
    check: Check,
    /// The name's ending chooses the format (`.zst`, a `.dbn` sample): not one to write to
    /// `/dev/stdout`, whose name says nothing.
    by_name: bool,
}

/// How an output's bytes are compared with the plain run's.
#[derive(Clone, Copy)]
enum Check {
    /// Byte for byte.
    Same,
    /// A JSON object that counts the messages (it carries the replay's timing).
    Summary,
    /// A Parquet file: `PAR1` at both ends (its footer carries the summary).
    Parquet,
}

const KINDS: &[Kind] = &[
    Kind {
        flag: "--bbo-out",
        extra: &[],
        name: "bbo.csv",
        check: Check::Same,
        by_name: false,
    },
    Kind {
        flag: "--book-out",
        extra: &[],
        name: "book.csv",
        check: Check::Same,
        by_name: false,
    },
    Kind {
        flag: "--summary-json",
        extra: &[],
        name: "summary.json",
        check: Check::Summary,
        by_name: false,
    },
    Kind {
        flag: "--dbn-out",
        extra: &["--schema", "mbp-1"],
        name: "day.dbn",
        check: Check::Same,
        by_name: false,
    },
    Kind {
        flag: "--dbn-out",
        extra: &["--schema", "mbo"],
        name: "day.dbn.zst",
        check: Check::Same,
        by_name: true,
    },
    Kind {
        flag: "--parquet-out",
        extra: &[],
        name: "bbo.parquet",
        check: Check::Parquet,
        by_name: false,
    },
    Kind {
        flag: "--sample-out",
        extra: &["--sample", "1s"],
        name: "sample.dbn",
        check: Check::Same,
        by_name: true,
    },
    Kind {
        flag: "--sample-out",
        extra: &["--sample", "1s"],
        name: "sample.csv",
        check: Check::Same,
        by_name: false,
    },
];

/// The kinds that can be written to `/dev/stdout`.
fn unnamed_kinds() -> impl Iterator<Item = &'static Kind> {
    KINDS.iter().filter(|k| !k.by_name)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A generated day named so that its session date is read from its name.
fn day(dir: &Path) -> PathBuf {
    let path = dir.join("01302019.NASDAQ_ITCH50");
    let out = ticklane()
        .arg("gen")
        .arg(&path)
        .args(["--messages", "3000", "--stocks", "3", "--seed", "7"])
        .output()
        .expect("run ticklane gen");
    assert!(out.status.success(), "{}", stderr(&out));
    fs::create_dir(temp_folder(&path)).expect("mkdir");
    path
}

/// The temporary folder of the replays of `input`.
fn temp_folder(input: &Path) -> PathBuf {
    input.with_file_name("tmp")
}

fn assert_no_temporaries_left(input: &Path) {
    assert_eq!(names_in(&temp_folder(input)), Vec::<String>::new());
}

/// `ticklane replay input -q` with each kind's flag and `path_of(kind)`.
fn replay(input: &Path, kinds: &[&Kind], path_of: impl Fn(&Kind) -> PathBuf) -> Command {
    let mut command = ticklane();
    // The spool of a DBN output written in place goes to the temporary folder: this one,
    // which each test finds empty at its end.
    command.env("TMPDIR", temp_folder(input));
    command.arg("replay").arg(input).arg("-q");
    for kind in kinds {
        command.arg(kind.flag).arg(path_of(kind)).args(kind.extra);
    }
    command
}

fn run_ok(mut command: Command) {
    let out = command.output().expect("run ticklane replay");
    assert!(out.status.success(), "{:?}: {}", out.status, stderr(&out));
}

/// The outputs of a replay to plain files, by file name.
fn reference(dir: &Path, input: &Path) -> Vec<(&'static str, Vec<u8>)> {
    let plain = dir.join("plain");
    fs::create_dir(&plain).expect("mkdir");
    // Each DBN output on its own run: one --dbn-out per replay.
    for kind in KINDS {
        run_ok(replay(input, &[kind], |k| plain.join(k.name)));
    }
    KINDS
        .iter()
        .map(|k| (k.name, fs::read(plain.join(k.name)).expect("read")))
        .collect()
}

fn expected<'a>(reference: &'a [(&'static str, Vec<u8>)], kind: &Kind) -> &'a [u8] {
    &reference
        .iter()
        .find(|(name, _)| *name == kind.name)
        .expect("a reference for every kind")
        .1
}

fn assert_bytes(kind: &Kind, got: &[u8], reference: &[(&'static str, Vec<u8>)], at: &str) {
    match kind.check {
        Check::Same => assert!(
            got == expected(reference, kind),
            "{} {at}: {} bytes, the plain run wrote {}",
            kind.name,
            got.len(),
            expected(reference, kind).len()
        ),
        Check::Summary => {
            let text = String::from_utf8_lossy(got);
            assert!(
                text.starts_with('{') && text.contains("\"messages\":3000"),
                "{} {at}: {text:?}",
                kind.name
            );
        }
        Check::Parquet => assert!(
            got.len() > 8 && got.starts_with(b"PAR1") && got.ends_with(b"PAR1"),
            "{} {at}: {} bytes, not a finished Parquet file",
            kind.name,
            got.len()
        ),
    }
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn all_kinds_once() -> Vec<Vec<&'static Kind>> {
    // A flag given twice needs a run each; the rest share the first.
    let (dbn, rest): (Vec<&Kind>, Vec<&Kind>) = KINDS
        .iter()
        .partition(|k| k.flag == "--dbn-out" || k.flag == "--sample-out");
    let mut runs = vec![rest];
    runs.extend(dbn.into_iter().map(|k| vec![k]));
    runs
}

#[test]
fn links_to_files_and_dangling_links_are_followed_and_stay_links() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = day(dir.path());
    let reference = reference(dir.path(), &input);
    let (links, files) = (dir.path().join("links"), dir.path().join("files"));
    fs::create_dir(&links).expect("mkdir");
    fs::create_dir(&files).expect("mkdir");
    let mut expected_files = Vec::new();
    for kind in KINDS {
        // An existing file behind an absolute link, and a file still to be made behind a
        // relative one.
        let file = files.join(kind.name);
        fs::write(&file, b"an earlier run").expect("write");
        symlink(&file, links.join(kind.name)).expect("link");
        let later = format!("later.{}", kind.name);
        symlink(
            format!("../files/{later}"),
            links.join(format!("dangling.{}", kind.name)),
        )
        .expect("link");
        expected_files.push(kind.name.to_owned());
        expected_files.push(later);
    }
    for run in all_kinds_once() {
        run_ok(replay(&input, &run, |k| links.join(k.name)));
        run_ok(replay(&input, &run, |k| {
            links.join(format!("dangling.{}", k.name))
        }));
    }
    for kind in KINDS {
        for (link, file) in [
            (kind.name.to_owned(), kind.name.to_owned()),
            (
                format!("dangling.{}", kind.name),
                format!("later.{}", kind.name),
            ),
        ] {
            let link = links.join(link);
            let meta = fs::symlink_metadata(&link).expect("the link is there");
            assert!(
                meta.file_type().is_symlink(),
                "{}: replaced by a regular file",
                link.display()
            );
            let got = fs::read(files.join(&file)).expect("the file the link names");
            assert_bytes(
                kind,
                &got,
                &reference,
                &format!("through {}", link.display()),
            );
        }
    }
    // No partial file or spool left on either side of the links.
    expected_files.sort();
    assert_eq!(names_in(&files), expected_files);
    assert_eq!(names_in(&links).len(), 2 * KINDS.len());
    assert_no_temporaries_left(&input);
}

/// Runs `command` with its stdout to a new file, and returns what it wrote there.
fn stdout_to_file(mut command: Command, file: &Path) -> Vec<u8> {
    let out = command
        .stdout(File::create(file).expect("create"))
        .output()
        .expect("run ticklane replay");
    assert!(out.status.success(), "{:?}: {}", out.status, stderr(&out));
    fs::read(file).expect("read")
}

#[test]
fn dev_stdout_redirected_to_a_file_gets_the_output_and_stays_a_link() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = day(dir.path());
    let reference = reference(dir.path(), &input);
    // First through a link of the test's own to /dev/stdout: if that link were replaced,
    // /dev/stdout would have been too.
    let own = dir.path().join("stdout");
    symlink("/dev/stdout", &own).expect("link");
    for kind in unnamed_kinds() {
        let file = dir.path().join(format!("redirected.{}", kind.name));
        let got = stdout_to_file(replay(&input, &[kind], |_| own.clone()), &file);
        let meta = fs::symlink_metadata(&own).expect("the link is there");
        assert!(
            meta.file_type().is_symlink(),
            "{}: the link to /dev/stdout was replaced",
            kind.name
        );
        assert_bytes(kind, &got, &reference, "through a link to /dev/stdout");
    }
    for kind in unnamed_kinds() {
        let file = dir.path().join(format!("stdout.{}", kind.name));
        let got = stdout_to_file(
            replay(&input, &[kind], |_| PathBuf::from("/dev/stdout")),
            &file,
        );
        assert_bytes(kind, &got, &reference, "to /dev/stdout");
    }
    let meta = fs::symlink_metadata("/dev/stdout").expect("/dev/stdout");
    assert!(!meta.is_file(), "/dev/stdout is no regular file");
    assert_no_temporaries_left(&input);
}

#[test]
fn dev_stdout_on_a_pipe_is_written_in_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = day(dir.path());
    let reference = reference(dir.path(), &input);
    for kind in unnamed_kinds() {
        let out = replay(&input, &[kind], |_| PathBuf::from("/dev/stdout"))
            .stdout(Stdio::piped())
            .output()
            .expect("run ticklane replay");
        assert!(out.status.success(), "{:?}: {}", out.status, stderr(&out));
        assert_bytes(kind, &out.stdout, &reference, "to /dev/stdout on a pipe");
    }
    assert_no_temporaries_left(&input);
}

#[test]
fn a_fifo_is_written_in_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = day(dir.path());
    let reference = reference(dir.path(), &input);
    for kind in KINDS {
        let fifo = dir.path().join(format!("fifo.{}", kind.name));
        let made = Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("run mkfifo");
        assert!(made.success(), "mkfifo {}", fifo.display());
        let reader = {
            let fifo = fifo.clone();
            thread::spawn(move || {
                let mut bytes = Vec::new();
                File::open(&fifo)
                    .and_then(|mut f| f.read_to_end(&mut bytes))
                    .expect("read the FIFO");
                bytes
            })
        };
        let out = replay(&input, &[kind], |_| fifo.clone())
            .output()
            .expect("run ticklane replay");
        if !reader.is_finished() {
            // Had the replay never opened the FIFO, this open lets the reader see its end.
            // Non-blocking: the reader may have seen the end and gone since the check above,
            // and a blocking open for writing would then wait for a reader for ever; without
            // one, this open fails at once (ENXIO) and there is nothing to release.
            drop(
                File::options()
                    .write(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(&fifo),
            );
        }
        let got = reader.join().expect("the reader thread");
        assert!(out.status.success(), "{:?}: {}", out.status, stderr(&out));
        let meta = fs::symlink_metadata(&fifo).expect("the FIFO is there");
        assert!(
            std::os::unix::fs::FileTypeExt::is_fifo(&meta.file_type()),
            "{}: the FIFO was replaced",
            kind.name
        );
        assert_bytes(kind, &got, &reference, "through a FIFO");
    }
    assert_no_temporaries_left(&input);
}
