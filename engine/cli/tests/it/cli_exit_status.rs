//! `ticklane`'s exit statuses, one case each: 2 for usage and configuration errors (a bad
//! key, a bad value, a configuration file that is not there, flags that contradict each
//! other or are out of range), 1 for runtime failures (an input that cannot be opened, a
//! corrupt file), 0 for a clean end. The numbers are the documented ones, written here
//! rather than taken from the code under test.

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use ticklane_testkit::itch::START_OF_MESSAGES;
use ticklane_testkit::moldudp64;
use ticklane_testkit::pcap::{udp_frame, ETHERNET};

use crate::util::{self, wait_bounded};

const USAGE: i32 = 2;
const FAILURE: i32 = 1;
const DECLARED_LOST: i32 = 3;

fn ticklane(args: &[&str]) -> Output {
    util::ticklane().args(args).output().expect("run ticklane")
}

/// How long a refusal may take: it happens before anything runs, so a command still running
/// after this is one that was not refused (some used to run for ever).
const REFUSED_WITHIN: Duration = Duration::from_secs(20);

/// `ticklane args`, killed and failed if it runs past [`REFUSED_WITHIN`].
fn ticklane_bounded(args: &[&str]) -> Output {
    let child = util::ticklane()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run ticklane");
    wait_bounded(child, REFUSED_WITHIN)
}

/// `ticklane args` is refused as a usage error (exit 2), in bounded time, with stderr
/// naming `flag`, and nothing on stdout (nothing ran).
fn refused(args: &[&str], flag: &str) {
    let out = ticklane_bounded(args);
    let stdout = exits(&out, USAGE, flag);
    assert!(
        stdout.is_empty(),
        "{args:?}: refused before anything ran:\n{stdout}"
    );
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
    let out = util::ticklane()
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

#[test]
fn empty_filters_are_usage_errors_not_no_filter() {
    let dir = tempfile::tempdir().expect("tempdir");
    let day = generated_day(dir.path());
    let day = day.as_str();
    let bbo = dir.path().join("bbo.csv");
    let bbo = bbo.to_str().expect("UTF-8");
    for (flag, value) in [("--symbols", ""), ("--symbols", " "), ("--between", "")] {
        refused(&["replay", day, "-q", "--bbo-out", bbo, flag, value], flag);
        assert!(
            !Path::new(bbo).exists(),
            "{flag} {value:?}: nothing written"
        );
    }
    refused(&["replay", day, "-q", "--symbols", ","], "--symbols");
    for value in ["", ",", "A,,B", "TOOLONGSYMBOL"] {
        refused(&["tail", "--capture", day, "--symbols", value], "--symbols");
    }
    let subscribe = ["subscribe", "--server", "127.0.0.1:1", "--symbols", ""];
    refused(&subscribe, "--symbols");
}

#[test]
fn flags_that_would_hang_or_be_ignored_are_refused_naming_the_flag() {
    // The live demo: a rate of 0 ran for ever at about one message a second.
    refused(&["run", "--rate", "0"], "--rate");
    refused(&["run", "--messages", "0"], "--messages");
    refused(&["demo", "--messages", "0"], "--messages");
    // The simulator: a destination port of 0 failed every send and kept running.
    refused(&["sim", "--udp", "127.0.0.1:0"], "--udp");
    // A linger without --udp (SoupBinTCP alone has no end of session to linger after) was
    // ignored, and the simulator served until killed.
    refused(
        &["sim", "--tcp", "127.0.0.1:0", "--linger-s", "1"],
        "--linger-s",
    );
    let udp = ["sim", "--udp", "127.0.0.1:9"];
    let with = |more: &[&'static str]| [&udp[..], more].concat();
    refused(&with(&["--udp-b", "127.0.0.1:0"]), "--udp-b");
    // `=` so that clap takes `-2` for a value, not a flag.
    for speed in ["--speed=0", "--speed=nan", "--speed=inf", "--speed=-2"] {
        refused(&with(&[speed]), "--speed");
    }
    refused(
        &with(&["--burst-probability", "0.1", "--burst-packets", "0"]),
        "--burst-packets",
    );
    refused(
        &with(&["--stall-after", "10", "--stall-ms", "0"]),
        "--stall-ms",
    );
    // Options of line B without line B, and options of one protocol without it.
    refused(&with(&["--drop-b", "0.1"]), "--udp-b");
    refused(&with(&["--burst-probability-b", "0.1"]), "--udp-b");
    refused(&with(&["--burst-packets", "5"]), "--burst-probability");
    refused(&with(&["--stall-ms", "5"]), "--stall-after");
    refused(&with(&["--login", "a:b"]), "--tcp");
    let tcp = ["sim", "--tcp", "127.0.0.1:0"];
    for fault in [
        &["--drop", "0.1"][..],
        &["--duplicate", "0.1"],
        &["--reorder", "0.1"],
        &["--burst-probability", "0.1"],
        &["--stall-after", "5"],
        &["--request", "127.0.0.1:0"],
    ] {
        refused(&[&tcp[..], fault].concat(), "--udp");
    }
    refused(
        &[
            "sim",
            "day.itch50",
            "--udp",
            "127.0.0.1:9",
            "--messages",
            "5",
        ],
        "--messages",
    );
    // Replay: no depth of 0; --depth, --wait and the cores without what reads them.
    refused(
        &["replay", "x.itch50", "--book-out", "b.csv", "--depth", "0"],
        "--depth",
    );
    let sample = [
        "replay",
        "x.itch50",
        "--sample",
        "1s",
        "--sample-out",
        "s.csv",
    ];
    refused(
        &[&sample[..], &["--sample-depth", "0"]].concat(),
        "--sample-depth",
    );
    refused(&["replay", "x.itch50", "--depth", "5"], "--depth");
    for flag in [
        ["--wait", "park"],
        ["--reader-core", "0"],
        ["--book-core", "0"],
    ] {
        refused(&[&["replay", "x.itch50"][..], &flag].concat(), "--pace");
    }
    refused(
        &["replay", "x.itch50", "--pace", "max", "--wait", "sleep"],
        "--wait",
    );
    // Subscribe: the login's account field is 16 printable ASCII bytes.
    let subscribe = ["subscribe", "--server", "127.0.0.1:1", "--symbols", "AAPL"];
    let sub = |more: &[&'static str]| [&subscribe[..], more].concat();
    refused(&sub(&["--account", "seventeen-chars-x"]), "--account");
    refused(&sub(&["--account", "caf\u{e9}"]), "--account");
    refused(&sub(&["--account", ""]), "--account");
    refused(&sub(&["--max-attempts", "0"]), "--max-attempts");
    refused(&sub(&["--backoff-base-ms", "0"]), "--backoff-base-ms");
    refused(
        &sub(&["--backoff-base-ms", "100", "--backoff-cap-ms", "50"]),
        "--backoff-cap-ms",
    );
    refused(
        &["subscribe", "--server", "127.0.0.1:0", "--symbols", "AAPL"],
        "--server",
    );
}

#[test]
fn engine_wait_beyond_its_documented_names_is_a_usage_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    for name in ["spin", "yield", "sleep"] {
        let path = config(
            dir.path(),
            &format!("[engine]\nwait = \"{name}\"\n\n{GOOD_FEED}"),
        );
        refused(&["run", "--config", &path], "engine.wait");
    }
}

#[test]
fn an_output_in_a_folder_that_does_not_exist_is_refused_naming_its_flag() {
    let dir = tempfile::tempdir().expect("tempdir");
    let day = generated_day(dir.path());
    let day = day.as_str();
    let missing = dir.path().join("no/such/dir/out.x");
    let missing = missing.to_str().expect("UTF-8");
    for flag in [
        "--bbo-out",
        "--book-out",
        "--summary-json",
        "--parquet-out",
        "--dbn-out",
    ] {
        let mut args = vec!["replay", day, "-q", flag, missing];
        if flag == "--dbn-out" {
            args.extend(["--date", "2019-01-30"]);
        }
        refused(&args, &format!("{flag} {missing}: the folder"));
    }
    refused(
        &[
            "replay",
            day,
            "-q",
            "--sample",
            "1s",
            "--sample-out",
            missing,
        ],
        "--sample-out",
    );
    refused(
        &["replay", day, "-q", "--pace", "max", "--snapshot", missing],
        "--snapshot",
    );
    let path = config(dir.path(), GOOD_FEED);
    refused(&["record", "--config", &path, "--out", missing], "--out");
}

/// An Ethernet/IPv4/UDP frame carrying one MoldUDP64 packet of `count` ITCH system events
/// (`S`, 12 bytes each) from `sequence`, laid out from the specifications.
fn mold_frame(sequence: u64, count: u16) -> Vec<u8> {
    let event: &[u8] = &START_OF_MESSAGES;
    let events = vec![event; usize::from(count)];
    udp_frame(&moldudp64::packet(b"SESSION001", sequence, &events))
}

/// A little-endian microsecond pcap (version 2.4, Ethernet) of `frames`.
fn pcap(frames: &[Vec<u8>]) -> Vec<u8> {
    ticklane_testkit::pcap::pcap(ETHERNET.into(), frames)
}

#[test]
fn a_quiet_replay_that_declares_loss_says_so_on_stderr() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("gap.pcap");
    // Sequences 1 and 2, then 6: 3 ..= 5 never came.
    std::fs::write(&path, pcap(&[mold_frame(1, 2), mold_frame(6, 1)])).expect("write pcap");
    let path = path.to_str().expect("UTF-8");
    let out = ticklane_bounded(&["replay", path, "-q"]);
    let stdout = exits(&out, DECLARED_LOST, "3 messages declared lost");
    assert!(stdout.is_empty(), "quiet:\n{stdout}");
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "one line:\n{err}");
    assert!(err.contains(path), "{err}");
}

#[test]
fn a_pcap_of_an_unknown_version_is_refused_naming_file_offset_and_version() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("v9.pcap");
    let mut bytes = pcap(&[mold_frame(1, 1)]);
    bytes[4] = 9;
    std::fs::write(&path, bytes).expect("write pcap");
    let path = path.to_str().expect("UTF-8");
    let out = ticklane_bounded(&["replay", path, "-q"]);
    exits(&out, FAILURE, path);
    let err = stderr(&out);
    assert!(
        err.contains("byte 4") && err.contains("version 9.4"),
        "{err}"
    );
}

#[test]
fn a_paced_replay_of_a_lossy_capture_flags_its_snapshot_maybe_bad_and_counts_the_loss() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("gap.pcap");
    // Sequences 1 and 2, then 6: 3 ..= 5 never came.
    std::fs::write(&path, pcap(&[mold_frame(1, 2), mold_frame(6, 1)])).expect("write pcap");
    let snap = dir.path().join("paced.snap");
    let (path, snap_arg) = (path.to_str().expect("UTF-8"), snap.to_str().expect("UTF-8"));
    let out = ticklane_bounded(&[
        "replay",
        path,
        "--pace",
        "max",
        "--snapshot",
        snap_arg,
        "-q",
    ]);
    exits(&out, DECLARED_LOST, "3 messages declared lost");
    let header = ticklane_engine::snapshot::SnapshotReader::open(&snap)
        .expect("open snapshot")
        .header();
    assert!(header.is_maybe_bad(), "{header:?}");
    assert_eq!(header.lost_messages, 3, "{header:?}");
    assert!(header.is_closed(), "{header:?}");
}

#[test]
fn a_pinning_core_this_process_cannot_run_on_is_refused_naming_the_flag() {
    let dir = tempfile::tempdir().expect("tempdir");
    let day = generated_day(dir.path());
    // 1024 and past it used to abort the pinning thread (an index past the CPU set).
    for flag in ["--reader-core", "--book-core"] {
        for core in ["1024", "9999", "-1", "one"] {
            refused(
                &["replay", &day, "--pace", "max", &format!("{flag}={core}")],
                flag,
            );
        }
    }
}

#[test]
fn tail_of_a_lossy_capture_exits_3_and_says_what_was_lost() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("gap.pcap");
    // Sequences 1 and 2, then 6: 3 ..= 5 never came.
    std::fs::write(&path, pcap(&[mold_frame(1, 2), mold_frame(6, 1)])).expect("write pcap");
    let out = ticklane_bounded(&["tail", "--capture", path.to_str().expect("UTF-8")]);
    exits(&out, DECLARED_LOST, "3 messages declared lost");
}

#[test]
fn replay_outputs_into_a_closed_pipe_exit_141_as_a_sigpipe_death_would() {
    let dir = tempfile::tempdir().expect("tempdir");
    let day = generated_day(dir.path());
    let outputs: [&[&str]; 4] = [
        &["--bbo-out", "/dev/stdout"],
        &["--dbn-out", "/dev/stdout", "--date", "2019-01-30"],
        &["--parquet-out", "/dev/stdout", "--date", "2019-01-30"],
        &["--sample", "1s", "--sample-out", "/dev/stdout"],
    ];
    for output in outputs {
        // The pipe's reader is gone before the command starts, as under `… | head -1` once
        // head has its line.
        let (reader, writer) = std::io::pipe().expect("a pipe");
        drop(reader);
        let out = util::ticklane()
            .args(["replay", &day, "-q"])
            .args(output)
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .expect("run ticklane");
        assert_eq!(
            out.status.code(),
            Some(141),
            "{output:?}: stderr:\n{}",
            stderr(&out)
        );
    }
}

#[test]
fn an_output_that_names_a_folder_is_refused_naming_its_flag() {
    let dir = tempfile::tempdir().expect("tempdir");
    let day = generated_day(dir.path());
    let folder = dir.path().to_str().expect("UTF-8");
    refused(&["replay", &day, "--bbo-out", folder], "--bbo-out");
    refused(&["replay", &day, "--book-out", folder], "--book-out");
}

#[test]
fn a_threaded_replay_after_a_declared_loss_warns_that_its_outputs_may_depart_from_one_threads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("gap.pcap");
    // Sequences 1 and 2, then 6: 3 ..= 5 never came.
    std::fs::write(&path, pcap(&[mold_frame(1, 2), mold_frame(6, 1)])).expect("write pcap");
    let path = path.to_str().expect("UTF-8");
    let out = ticklane_bounded(&["replay", path, "--threads", "2", "-q"]);
    exits(&out, DECLARED_LOST, "--threads 2: after a declared loss");
    let out = ticklane_bounded(&["replay", path, "--threads", "1", "-q"]);
    let err = stderr(&out);
    assert!(!err.contains("after a declared loss"), "{err}");
}
