//! `replay --threads N` gives the outputs of one thread: the top-of-book stream, the final
//! depth and the summary (but for its timings) are byte-identical to `--threads 1` for
//! N = 2, 3, 4, on generated days with every hard case (mapped, and gzip: read and copied),
//! on a file that stops at a decode error, and on the real captures in `../shared/data`.
//!
//! The reference is the one-thread replay (`replay_file`), a separate code path from the
//! partitioned one: the reader, routing, batches and merge under test appear nowhere in it.

mod util;

use std::fs;
use std::path::{Path, PathBuf};

use ticklane_engine::book::BookConfig;
use ticklane_engine::replay::{
    replay_file, replay_file_threaded, ReplayFault, ReplayOptions, ReplaySummary,
};
use ticklane_feed::sim::GenConfig;

/// The three outputs of one replay, as bytes.
#[derive(Debug, PartialEq, Eq)]
struct Outputs {
    bbo: String,
    book: String,
    /// The summary JSON without `elapsed_s` and `msgs_per_s`, which are timings.
    summary: String,
}

fn options(input: &Path, recover_lengths: bool, dir: &Path, tag: &str) -> ReplayOptions {
    ReplayOptions {
        input: input.to_path_buf(),
        recover_lengths,
        bbo_out: Some(dir.join(format!("{tag}.bbo.csv"))),
        book_out: Some(dir.join(format!("{tag}.book.csv"))),
        depth: 5,
        summary_json: Some(dir.join(format!("{tag}.json"))),
        books: BookConfig {
            max_orders: 1 << 18,
            max_books: 512,
            levels_per_side: 4096,
        },
        ..ReplayOptions::default()
    }
}

fn outputs(opts: &ReplayOptions) -> Outputs {
    let read =
        |p: &Option<PathBuf>| fs::read_to_string(p.as_ref().expect("set")).expect("output written");
    let json = read(&opts.summary_json);
    let cut = json.find("\"elapsed_s\"").expect("summary has elapsed_s");
    Outputs {
        bbo: read(&opts.bbo_out),
        book: read(&opts.book_out),
        summary: json[..cut].to_string(),
    }
}

/// Replays `input` on 1 thread, then on 2, 3 and 4, and checks every output against the
/// first. Returns the one-thread summary for further checks.
fn same_for_every_thread_count(input: &Path, recover_lengths: bool) -> ReplaySummary {
    let dir = tempfile::tempdir().expect("tempdir");
    let one = options(input, recover_lengths, dir.path(), "t1");
    let reference = replay_file(&one).expect("one thread").summary;
    let expected = outputs(&one);
    for threads in 2..=4 {
        let opts = options(input, recover_lengths, dir.path(), &format!("t{threads}"));
        let done = replay_file_threaded(&opts, threads).expect("threads");
        assert_eq!(
            done.books.len(),
            threads,
            "{}: one book table per thread",
            input.display()
        );
        assert_eq!(done.summary.exit_status(), reference.exit_status());
        let got = outputs(&opts);
        assert!(
            got.bbo == expected.bbo,
            "{}: --bbo-out differs with {threads} threads",
            input.display()
        );
        assert_eq!(
            got.book,
            expected.book,
            "{}: --book-out, {threads} threads",
            input.display()
        );
        assert_eq!(
            got.summary,
            expected.summary,
            "{}: summary, {threads} threads",
            input.display()
        );
    }
    reference
}

#[test]
fn generated_days_give_the_same_outputs_on_every_thread_count() {
    let dir = tempfile::tempdir().expect("tempdir");
    for seed in [1, 7, 42] {
        for crossing in [false, true] {
            let path = dir.path().join(format!("day-{seed}-{crossing}.itch50"));
            util::write_generated(
                &path,
                GenConfig {
                    messages: 120_000,
                    seed,
                    stocks: 13,
                    hard_cases: true,
                    crossing,
                },
            );
            let summary = same_for_every_thread_count(&path, false);
            // The comparison means something only if the day exercised the books: these
            // floors are far below what the generator makes (about 40% adds).
            assert!(summary.error.is_none(), "{:?}", summary.error);
            assert!(summary.bbo_rows > 10_000, "{}", summary.bbo_rows);
            assert!(summary.book.live_orders_peak > 100);
            assert!(
                summary.book.unknown_refs > 0,
                "the mid-day start is in the day"
            );
        }
    }
}

/// A gzip input is read, not mapped: every message is copied into its book thread's batch
/// instead of routed by its position in the input. Same outputs all the same.
#[test]
fn a_gzip_day_gives_the_same_outputs_on_every_thread_count() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().expect("tempdir");
    let plain = dir.path().join("day.itch50");
    util::write_generated(
        &plain,
        GenConfig {
            messages: 60_000,
            seed: 11,
            stocks: 7,
            hard_cases: true,
            crossing: false,
        },
    );
    let gz = dir.path().join("day.itch50.gz");
    let mut out = flate2::write::GzEncoder::new(
        fs::File::create(&gz).expect("create"),
        flate2::Compression::fast(),
    );
    out.write_all(&fs::read(&plain).expect("read"))
        .expect("compress");
    out.finish().expect("finish");
    let from_gzip = same_for_every_thread_count(&gz, false);
    assert!(from_gzip.error.is_none(), "{:?}", from_gzip.error);
    assert!(from_gzip.bbo_rows > 5_000, "{}", from_gzip.bbo_rows);
    let from_plain = same_for_every_thread_count(&plain, false);
    assert_eq!(
        (from_gzip.messages, from_gzip.bbo_rows, from_gzip.book),
        (from_plain.messages, from_plain.bbo_rows, from_plain.book)
    );
}

/// The byte offset of the length prefix of message `k` (1-based) in a BinaryFILE.
fn offset_of_message(file: &[u8], k: u64) -> usize {
    let mut at = 0;
    for _ in 1..k {
        let len = usize::from(u16::from_be_bytes([file[at], file[at + 1]]));
        at += 2 + len;
    }
    at
}

#[test]
fn a_decode_error_mid_way_stops_every_thread_count_at_the_same_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = dir.path().join("good.itch50");
    util::write_generated(
        &good,
        GenConfig {
            messages: 80_000,
            seed: 5,
            stocks: 9,
            ..GenConfig::default()
        },
    );
    let mut bytes = fs::read(&good).expect("read");
    // Laid by hand, at offsets of the generated file (the later one inserted first): a
    // 12-byte frame of type `z`, which ITCH 5.0 does not define, before message 30,001, and
    // a `D` framed as 5 bytes (the spec says 19) before message 50,001, which with the `z`
    // before it is message 50,002 of the new file.
    let unknown_at = offset_of_message(&bytes, 30_001);
    let bad_at = offset_of_message(&bytes, 50_001);
    bytes.splice(bad_at..bad_at, [0, 5, b'D', 0, 1, 0, 0]);
    let mut unknown = vec![0, 12, b'z', 0, 2];
    unknown.resize(14, 0);
    bytes.splice(unknown_at..unknown_at, unknown);
    let bad = dir.path().join("bad.itch50");
    fs::write(&bad, &bytes).expect("write");

    let summary = same_for_every_thread_count(&bad, false);
    const BAD: u64 = 50_002;
    let (index, offset) = match &summary.error {
        Some(ReplayFault::Decode { index, offset, .. }) => (*index, *offset),
        Some(ReplayFault::Input(e)) => (e.index, e.offset),
        other => panic!("expected a framing or decode error at message {BAD}, got {other:?}"),
    };
    assert_eq!(index, BAD);
    assert_eq!(
        offset,
        bad_at as u64 + 14,
        "after the inserted 14-byte frame"
    );
    assert_eq!(
        summary.messages,
        BAD - 1,
        "everything before the error handled"
    );
    assert_eq!(summary.unknown_types, 1);
}

#[test]
fn shared_captures_give_the_same_outputs_on_every_thread_count() {
    let Some(data) =
        util::shared_data("shared_captures_give_the_same_outputs_on_every_thread_count")
    else {
        return;
    };
    let mut files = Vec::new();
    for sub in ["pcap/nasdaq-itch50-live", "pcap/nasdaq-itch50-sanitized"] {
        let dir = data.join(sub);
        let entries = fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        files.extend(entries.map(|e| e.expect("dir entry").path()));
    }
    files.sort();
    assert!(files.len() >= 8, "the captures PROVENANCE.md lists");
    for file in &files {
        same_for_every_thread_count(file, false);
    }
    // The RITCH day file, whose length prefixes are zero: lengths come from the types.
    let ritch = data.join("ritch/ex20101224.TEST_ITCH_50");
    let summary = same_for_every_thread_count(&ritch, true);
    assert!(summary.messages > 1_000, "{}", summary.messages);
}
