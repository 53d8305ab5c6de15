//! `ticklane`'s exit statuses, one case each: 2 for usage and configuration errors (a bad
//! key, a bad value, a configuration file that is not there, flags that contradict each
//! other or are out of range), 1 for runtime failures (an input that cannot be opened, a
//! corrupt file), 0 for a clean end. The numbers are the documented ones, written here
//! rather than taken from the code under test.

use std::path::Path;
use std::process::{Command, Output};

const USAGE: i32 = 2;
const FAILURE: i32 = 1;

fn ticklane(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ticklane"))
        .args(args)
        .output()
        .expect("run ticklane")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Asserts the status and that stderr says `says`; returns stdout.
fn exits(output: &Output, code: i32, says: &str) -> String {
    let err = stderr(output);
    assert_eq!(output.status.code(), Some(code), "stderr:\n{err}");
    assert!(err.contains(says), "expected `{says}` in stderr:\n{err}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn config(dir: &Path, text: &str) -> String {
    let path = dir.join("line.toml");
    std::fs::write(&path, text).expect("write config");
    path.to_str().expect("UTF-8").to_string()
}

const GOOD_FEED: &str = "[feed]\nkind = \"moldudp64\"\nbind = \"127.0.0.1:0\"\n";

#[test]
fn an_unknown_config_key_is_a_usage_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = config(dir.path(), &format!("{GOOD_FEED}no_such_key = 1\n"));
    let out = exits(&ticklane(&["run", "--config", &path]), USAGE, "no_such_key");
    assert!(!out.contains("ready"), "nothing ran:\n{out}");
}

#[test]
fn a_bad_config_value_is_a_usage_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = config(dir.path(), &format!("{GOOD_FEED}silence_timeout_s = -1\n"));
    exits(
        &ticklane(&["run", "--config", &path]),
        USAGE,
        "feed.silence_timeout_s = -1 is refused",
    );
    let path = config(
        dir.path(),
        &format!("[engine]\nring_slots = 3\n\n{GOOD_FEED}"),
    );
    exits(
        &ticklane(&["record", "--config", &path, "--out", "x.pcap"]),
        USAGE,
        "engine.ring_slots",
    );
    exits(
        &ticklane(&["tail", "--config", &path]),
        USAGE,
        "engine.ring_slots",
    );
}

#[test]
fn a_missing_config_file_is_a_usage_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("nowhere.toml");
    exits(
        &ticklane(&["run", "--config", missing.to_str().expect("UTF-8")]),
        USAGE,
        "cannot read the configuration file",
    );
}

#[test]
fn demo_flags_beside_a_config_are_refused_not_ignored() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = config(dir.path(), GOOD_FEED);
    for flag in [["--messages", "5"], ["--rate", "10"], ["--drop", "0.1"]] {
        let mut args = vec!["run", "--config", &path];
        args.extend(flag);
        let out = exits(&ticklane(&args), USAGE, "cannot be used with");
        assert!(out.is_empty(), "refused before anything ran:\n{out}");
    }
}

#[test]
fn fractions_out_of_range_are_refused_before_anything_prints() {
    let out = exits(
        &ticklane(&["run", "--drop", "1.5"]),
        USAGE,
        "outside 0.0 ..= 1.0",
    );
    assert!(!out.contains("dropping"), "{out}");
    for flag in ["--drop", "--duplicate", "--reorder", "--burst-probability"] {
        for (value, says) in [
            ("-0.1", "outside 0.0 ..= 1.0"),
            ("1.01", "outside 0.0 ..= 1.0"),
            ("NaN", "outside 0.0 ..= 1.0"),
            ("half", "not a number"),
        ] {
            let arg = format!("{flag}={value}");
            exits(
                &ticklane(&["sim", "--udp", "127.0.0.1:9", &arg]),
                USAGE,
                says,
            );
        }
    }
}

#[test]
fn readers_of_the_snapshot_without_one_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let served = config(
        dir.path(),
        &format!("[serve]\nlisten = \"127.0.0.1:0\"\n{GOOD_FEED}"),
    );
    let out = exits(
        &ticklane(&["run", "--config", &served]),
        USAGE,
        "serve.listen",
    );
    assert!(out.is_empty(), "refused before anything ran:\n{out}");
    let plain = config(dir.path(), GOOD_FEED);
    for flag in ["--serve", "--web"] {
        let args = ["run", "--config", &plain, flag, "127.0.0.1:0"];
        let out = exits(&ticklane(&args), USAGE, "snapshot.path");
        assert!(
            out.is_empty(),
            "{flag}: refused before anything ran:\n{out}"
        );
    }
}

#[test]
fn other_usage_errors_exit_2() {
    exits(&ticklane(&["sim"]), USAGE, "--udp");
    exits(
        &ticklane(&["sim", "--tcp", "127.0.0.1:0", "--login", "nocolon"]),
        USAGE,
        "user:password",
    );
    exits(
        &ticklane(&["replay", "x.itch50", "--pace", "max", "--bbo-out", "b.csv"]),
        USAGE,
        "cannot be used with",
    );
    exits(
        &ticklane(&["replay", "x.itch50", "--max-orders", "0"]),
        USAGE,
        "--max-orders",
    );
    exits(
        &ticklane(&["no-such-command"]),
        USAGE,
        "unrecognized subcommand",
    );
    // Values that would run and do something else than asked: refused.
    exits(
        &ticklane(&["gen", "x.itch50", "--messages", "0"]),
        USAGE,
        "--messages",
    );
    let server = ["subscribe", "--server", "127.0.0.1:1", "--symbols"];
    exits(
        &ticklane(&[&server[..], &["TOOLONGSYMBOL"]].concat()),
        USAGE,
        "1 to 8",
    );
    exits(&ticklane(&[&server[..], &[""]].concat()), USAGE, "empty");
    exits(
        &ticklane(&["book", "--snapshot", "x.snap", "--csv", "--depth", "0"]),
        USAGE,
        "--depth",
    );
    exits(
        &ticklane(&["top", "--snapshot", "x.snap", "--rows", "0"]),
        USAGE,
        "--rows",
    );
}

#[test]
fn a_replay_input_that_cannot_be_opened_is_a_runtime_failure() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("no-such-day.itch50");
    exits(
        &ticklane(&["replay", missing.to_str().expect("UTF-8"), "-q"]),
        FAILURE,
        "cannot open",
    );
}

/// A small generated day, `day.itch50` in `dir`: its path.
fn generated_day(dir: &Path) -> String {
    let day = dir.join("day.itch50");
    let day = day.to_str().expect("UTF-8").to_owned();
    let gen = ticklane(&["gen", &day, "--messages", "2000", "--stocks", "2"]);
    assert!(gen.status.success(), "{}", stderr(&gen));
    day
}

#[test]
fn a_replay_of_a_corrupt_file_is_a_runtime_failure() {
    let dir = tempfile::tempdir().expect("tempdir");
    let day = generated_day(dir.path());
    let day = day.as_str();
    // Cut the file in the middle of a message: a truncated input.
    let bytes = std::fs::read(day).expect("read day");
    std::fs::write(day, &bytes[..bytes.len() - 5]).expect("truncate");
    exits(&ticklane(&["replay", day, "-q"]), FAILURE, "ticklane: ");
}

#[test]
fn outputs_over_the_input_or_over_each_other_are_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let day = generated_day(dir.path());
    let day = day.as_str();
    let bytes = std::fs::read(day).expect("read day");
    // Created over a mapped input, the output truncated the pages being read: SIGBUS.
    for flag in ["--bbo-out", "--book-out", "--parquet-out", "--summary-json"] {
        exits(
            &ticklane(&["replay", day, "-q", flag, day]),
            USAGE,
            &format!("{flag} {day} is the input file"),
        );
        assert_eq!(std::fs::read(day).expect("read day"), bytes, "{flag}");
    }
    let csv = dir.path().join("out.csv");
    let csv = csv.to_str().expect("UTF-8");
    exits(
        &ticklane(&["replay", day, "-q", "--bbo-out", csv, "--book-out", csv]),
        USAGE,
        "--bbo-out and --book-out both name",
    );
    assert!(!Path::new(csv).exists(), "nothing was written");
    // /dev/null takes any number of outputs.
    let null = ticklane(&[
        "replay",
        day,
        "-q",
        "--bbo-out",
        "/dev/null",
        "--book-out",
        "/dev/null",
    ]);
    assert_eq!(null.status.code(), Some(0), "{}", stderr(&null));
}

#[test]
fn tail_into_a_closed_pipe_exits_141_as_a_sigpipe_death_would() {
    let dir = tempfile::tempdir().expect("tempdir");
    let day = generated_day(dir.path());
    // The pipe's reader is gone before the command starts, as under `… | head` once head has
    // its lines.
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_ticklane"))
        .args(["tail", "--capture", &day])
        .stdout(writer)
        .output()
        .expect("run ticklane");
    assert_eq!(out.status.code(), Some(141), "stderr:\n{}", stderr(&out));
}

#[test]
fn a_line_that_goes_silent_fails_and_says_why_on_stderr_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Nothing ever sends: the line ends silent after 1 s (the shortest allowed).
    let path = config(dir.path(), &format!("{GOOD_FEED}silence_timeout_s = 1.0\n"));
    let out = ticklane(&["run", "--config", &path]);
    exits(&out, FAILURE, "the line ended: ");
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(summary.contains("ended"), "the summary too:\n{summary}");
}

#[test]
fn a_clean_run_exits_0() {
    let dir = tempfile::tempdir().expect("tempdir");
    let day = dir.path().join("day.itch50.gz");
    let day = day.to_str().expect("UTF-8");
    let gen = ticklane(&["gen", day, "--messages", "2000", "--stocks", "2"]);
    assert_eq!(gen.status.code(), Some(0), "{}", stderr(&gen));
    let replay = ticklane(&["replay", day, "-q"]);
    assert_eq!(replay.status.code(), Some(0), "{}", stderr(&replay));
}

#[test]
fn a_dbn_input_refuses_the_itch_only_outputs_for_that_reason_and_dates_its_own_samples() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = |name: &str| dir.path().join(name).to_str().expect("UTF-8").to_string();
    // A DBN MBO file with no date in its name: the date is in its metadata.
    let (day, mbo) = (path("day.itch50"), path("mbo.dbn"));
    let gen = ticklane(&["gen", &day, "--messages", "3000", "--stocks", "3"]);
    assert!(gen.status.success(), "{}", stderr(&gen));
    let out = ticklane(&[
        "replay",
        &day,
        "-q",
        "--date",
        "2019-01-30",
        "--dbn-out",
        &mbo,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // No --date: the refusal names the input's kind, not a missing date.
    let dbn_out = ticklane(&["replay", &mbo, "-q", "--dbn-out", &path("again.dbn")]);
    let err = stderr(&dbn_out);
    exits(&dbn_out, USAGE, "a DBN input is DBN already");
    assert!(!err.contains("--date"), "{err}");
    let parquet = [
        "replay",
        &mbo,
        "-q",
        "--parquet-out",
        &path("x.parquet"),
        "--parquet-schema",
        "mbp-10",
    ];
    exits(&ticklane(&parquet), USAGE, "not with a DBN input");
    exits(
        &ticklane(&["replay", &mbo, "-q", "--pace", "max"]),
        USAGE,
        "a DBN MBO input replays without --pace",
    );
    // DBN's MBP-10 holds ten levels a side: more is a usage error, not a failure.
    let deep = [
        "replay",
        &day,
        "-q",
        "--date",
        "2019-01-30",
        "--sample",
        "1s",
        "--sample-out",
        &path("deep.dbn"),
        "--sample-depth",
        "11",
    ];
    exits(&ticklane(&deep), USAGE, "at most 10 levels a side");
    // A DBN sample from a DBN input needs no --date either.
    let sample = ticklane(&[
        "replay",
        &mbo,
        "-q",
        "--sample",
        "1ms",
        "--sample-out",
        &path("s.dbn"),
    ]);
    assert_eq!(sample.status.code(), Some(0), "{}", stderr(&sample));
    assert!(
        std::fs::metadata(path("s.dbn"))
            .expect("sample written")
            .len()
            > 0
    );
}
