//! `replay --threads N` gives the outputs of one thread: the top-of-book stream, the final
//! depth, the DBN file (every schema, plain and zstd, `F_MAYBE_BAD_BOOK` after a capture's
//! declared loss), each filtered by `--symbols`/`--between`, and the summary (but for its
//! timings) are byte-identical to `--threads 1` for N = 2, 3, 4, on generated days with
//! every hard case (mapped, and gzip: read and copied), on a file that stops at a decode
//! error, on a lossy pcap, and on the real captures in `../shared/data`.
//!
//! The reference is the one-thread replay (`replay_file`), a separate code path from the
//! partitioned one: the reader, routing, batches and merge under test appear nowhere in it.

use std::fs;
use std::path::{Path, PathBuf};

use ticklane_engine::book::BookConfig;
use ticklane_engine::dbn_out::{DbnOutOptions, DbnSchema, SessionDate};
use ticklane_engine::output_filter::OutputFilter;
use ticklane_engine::parquet_out::{ParquetOutOptions, ParquetSchema};
use ticklane_engine::replay::{
    replay_file, replay_file_threaded, ReplayFault, ReplayOptions, ReplaySummary,
};
use ticklane_engine::sample::{SampleInterval, SampleOptions};
use ticklane_sim::GenConfig;

use crate::util;

/// The outputs of one replay, as bytes.
#[derive(Debug, PartialEq, Eq)]
struct Outputs {
    bbo: String,
    book: String,
    /// The summary JSON without `elapsed_s` and `msgs_per_s`, which are timings.
    summary: String,
    /// The DBN file, if one was asked for.
    dbn: Option<Vec<u8>>,
    /// The Parquet file, if one was asked for: its bytes before the footer (the column
    /// chunks), and the footer as pyarrow reads it, timings taken out (where pyarrow is).
    parquet: Option<(Vec<u8>, Option<String>)>,
    /// The sampled depth, if asked for: its bytes (CSV, DBN), or as the Parquet above.
    sample: Option<(Vec<u8>, Option<String>)>,
}

/// What a test adds to the options of every replay: a DBN output, a filter.
#[derive(Clone, Default)]
struct Extra {
    /// The schema and the file name's ending (`dbn` or `dbn.zst`).
    dbn: Option<(DbnSchema, &'static str)>,
    parquet: Option<ParquetSchema>,
    /// `--sample-out`'s ending (`csv`, `dbn`, `parquet`) and the interval in ns.
    sample: Option<(&'static str, u64)>,
    filter: OutputFilter,
}

fn session_date() -> SessionDate {
    SessionDate::parse("2019-01-30").expect("a valid date")
}

/// `text` with the values of the summary's timings (`elapsed_s`, `msgs_per_s`) taken out,
/// whether the summary is an object or a string holding one.
fn without_timings(text: &str) -> String {
    let mut out = text.to_string();
    for key in ["elapsed_s", "msgs_per_s"] {
        let mut from = 0;
        while let Some(i) = out[from..].find(key) {
            let start = from + i + key.len();
            let len = out[start..]
                .find(|c: char| !(c.is_ascii_digit() || "\\\": .eE+-".contains(c)))
                .unwrap_or(out.len() - start);
            out.replace_range(start..start + len, "");
            from = start;
        }
    }
    out
}

/// The column chunks of a Parquet file (everything before the footer), and its footer as
/// pyarrow reads it without the timings.
fn parquet_parts(path: &Path, input: &Path) -> (Vec<u8>, Option<String>) {
    let bytes = fs::read(path).expect("Parquet written");
    let n = bytes.len();
    assert_eq!(&bytes[n - 4..], b"PAR1", "{}", path.display());
    let footer = u32::from_le_bytes(bytes[n - 8..n - 4].try_into().expect("4 bytes")) as usize;
    let columns = bytes[..n - 8 - footer].to_vec();
    let info = util::oracle::python_with("replay_threads parquet footer", "pyarrow", "pyarrow")
        .map(|python| {
            let out = util::oracle::run(&python, "parquet_dump.py", &[path, input], &[]);
            without_timings(out.lines().next().expect("an info line"))
        });
    (columns, info)
}

fn options(
    input: &Path,
    recover_lengths: bool,
    dir: &Path,
    tag: &str,
    extra: &Extra,
) -> ReplayOptions {
    ReplayOptions {
        dbn_out: extra.dbn.map(|(schema, ending)| DbnOutOptions {
            path: dir.join(format!("{tag}.{ending}")),
            schema,
            date: session_date(),
            dataset: Default::default(),
        }),
        sample: extra.sample.map(|(ending, ns)| SampleOptions {
            path: dir.join(format!("{tag}.sample.{ending}")),
            interval: SampleInterval::from_nanos(ns.try_into().expect("not zero")),
            depth: 7,
            date: Some(session_date()),
        }),
        parquet_out: extra.parquet.map(|schema| ParquetOutOptions {
            path: dir.join(format!("{tag}.parquet")),
            schema,
            date: Some(session_date()),
        }),
        filter: extra.filter.clone(),
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
        dbn: opts.dbn_out.as_ref().map(|o| {
            // After a failed input the finished file keeps its partial name.
            let partial = o.path.with_file_name(format!(
                "{}.partial",
                o.path.file_name().expect("a file name").to_string_lossy()
            ));
            fs::read(&o.path)
                .or_else(|_| fs::read(&partial))
                .expect("DBN written")
        }),
        parquet: opts
            .parquet_out
            .as_ref()
            .map(|o| parquet_parts(&o.path, &opts.input)),
        sample: opts.sample.as_ref().map(|o| match o.is_parquet() {
            true => parquet_parts(&o.path, &opts.input),
            false => (fs::read(&o.path).expect("sample written"), None),
        }),
    }
}

/// A generated day (no crossing flow) written to `dir/name`.
fn generated_day(
    dir: &Path,
    name: &str,
    messages: u64,
    seed: u64,
    stocks: u16,
    hard_cases: bool,
) -> PathBuf {
    let path = dir.join(name);
    util::write_generated(
        &path,
        GenConfig {
            messages,
            seed,
            stocks,
            hard_cases,
            crossing: false,
        },
    );
    path
}

/// The `timestamp_ns` of every row of a `--bbo-out` file, in order.
fn bbo_stamps(path: &Path) -> Vec<u64> {
    fs::read_to_string(path)
        .expect("bbo")
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(1).expect("timestamp").parse().expect("ns"))
        .collect()
}

/// Replays `input` on 1 thread, then on 2, 3 and 4, and checks every output against the
/// first. Returns the one-thread summary for further checks.
fn same_for_every_thread_count(input: &Path, recover_lengths: bool) -> ReplaySummary {
    same_for_every_thread_count_with(input, recover_lengths, &Extra::default()).0
}

/// [`same_for_every_thread_count`] with `extra`'s outputs and filter in every replay; also
/// returns the one-thread outputs.
fn same_for_every_thread_count_with(
    input: &Path,
    recover_lengths: bool,
    extra: &Extra,
) -> (ReplaySummary, Outputs) {
    let dir = tempfile::tempdir().expect("tempdir");
    let one = options(input, recover_lengths, dir.path(), "t1", extra);
    let reference = replay_file(&one).expect("one thread").summary;
    let expected = outputs(&one);
    for threads in 2..=4 {
        let opts = options(
            input,
            recover_lengths,
            dir.path(),
            &format!("t{threads}"),
            extra,
        );
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
        assert!(
            got.dbn == expected.dbn,
            "{}: --dbn-out differs with {threads} threads",
            input.display()
        );
        assert!(
            got.parquet == expected.parquet,
            "{}: --parquet-out differs with {threads} threads",
            input.display()
        );
        assert!(
            got.sample == expected.sample,
            "{}: --sample-out differs with {threads} threads",
            input.display()
        );
    }
    (reference, expected)
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
    let plain = generated_day(dir.path(), "day.itch50", 60_000, 11, 7, true);
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

    // The DBN and Parquet files of a replay stopped by an error are one thread's too.
    let extra = Extra {
        dbn: Some((DbnSchema::Mbo, "dbn")),
        parquet: Some(ParquetSchema::Mbp10),
        ..Extra::default()
    };
    let (summary, _) = same_for_every_thread_count_with(&bad, false, &extra);
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

/// A generated day with every hard case, in every DBN schema (MBP-10 also zstd), then with
/// `--symbols` and `--between` cutting every output.
#[test]
fn dbn_out_in_every_schema_and_the_filters_are_the_same_on_every_thread_count() {
    let dir = tempfile::tempdir().expect("tempdir");
    let day = generated_day(dir.path(), "day.itch50", 40_000, 3, 11, true);
    let schemas = [
        (DbnSchema::Mbo, "dbn"),
        (DbnSchema::Mbp1, "dbn"),
        (DbnSchema::Mbp10, "dbn"),
        (DbnSchema::Mbp10, "dbn.zst"),
        (DbnSchema::Tbbo, "dbn"),
        (DbnSchema::Trades, "dbn"),
    ];
    let mut unfiltered = Vec::new();
    for dbn in schemas {
        let extra = Extra {
            dbn: Some(dbn),
            ..Extra::default()
        };
        let (summary, _) = same_for_every_thread_count_with(&day, false, &extra);
        assert!(summary.error.is_none(), "{:?}", summary.error);
        // Trades are the rarest records; the generator makes thousands in this day.
        let records = summary.dbn_out_records.expect("DBN records counted");
        assert!(records > 1_000, "{dbn:?}: {records}");
        unfiltered.push((dbn, records));
    }

    // Two of the stocks, over the middle of the day's time (the generated day's messages
    // are stamped apart evenly enough for a third of it to cut every output).
    let one =
        replay_file(&options(&day, false, dir.path(), "all", &Extra::default())).expect("replay");
    let symbols: Vec<String> = (0..=u16::MAX)
        .map(|l| one.books.symbol(ticklane_feed::itch::Locate(l)))
        .filter(|s| !s.is_empty())
        .take(2)
        .map(|s| String::from_utf8_lossy(s).trim().to_string())
        .collect();
    assert_eq!(symbols.len(), 2, "the day lists its stocks");
    let stamps = bbo_stamps(&dir.path().join("all.bbo.csv"));
    let (first, last) = (stamps[0], stamps[stamps.len() - 1]);
    let between = format!(
        "{}-{}",
        util::time_of_day(first + (last - first) / 3),
        util::time_of_day(first + (last - first) * 2 / 3)
    );
    let filter = OutputFilter::parse(&symbols.join(","), &between).expect("a valid filter");
    let views = [ParquetSchema::Bbo, ParquetSchema::Mbp10];
    for (dbn, parquet) in [
        ((DbnSchema::Mbo, "dbn"), views[0]),
        ((DbnSchema::Mbp10, "dbn"), views[1]),
    ] {
        let extra = Extra {
            dbn: Some(dbn),
            parquet: Some(parquet),
            filter: filter.clone(),
            ..Extra::default()
        };
        let (filtered, _) = same_for_every_thread_count_with(&day, false, &extra);
        let records = filtered.dbn_out_records.expect("DBN records counted");
        let (_, all) = unfiltered
            .iter()
            .find(|(d, _)| *d == dbn)
            .expect("run above");
        assert!(
            records > 0 && records * 3 < *all,
            "{dbn:?}: the filter keeps some records, far fewer than all {all}: {records}"
        );
        assert_eq!(
            filtered.bbo_rows, one.summary.bbo_rows,
            "rows are counted before the filter"
        );
    }
}

/// Splits a BinaryFILE's messages into MoldUDP64 packets of `per_packet` messages and
/// writes them as a pcap, leaving out the packets that `drop` picks by their number: a
/// capture whose sequencer declares those messages lost.
fn lossy_pcap(itch: &[u8], per_packet: usize, drop: impl Fn(usize) -> bool) -> Vec<u8> {
    let mut messages = Vec::new();
    let mut at = 0;
    while at + 2 <= itch.len() {
        let len = usize::from(u16::from_be_bytes([itch[at], itch[at + 1]]));
        messages.push(&itch[at + 2..at + 2 + len]);
        at += 2 + len;
    }
    let mut pcap = ticklane_feed::capture::PcapWriter::new(Vec::new()).expect("pcap");
    let src = std::net::SocketAddrV4::new([10, 0, 0, 1].into(), 1000);
    let dst = std::net::SocketAddrV4::new([233, 54, 12, 1].into(), 26400);
    for (n, chunk) in messages.chunks(per_packet).enumerate() {
        if drop(n) {
            continue;
        }
        let seq = (n * per_packet + 1) as u64;
        let mut p = b"SESSION001".to_vec();
        p.extend_from_slice(&seq.to_be_bytes());
        p.extend_from_slice(&(chunk.len() as u16).to_be_bytes());
        for m in chunk {
            p.extend_from_slice(&(m.len() as u16).to_be_bytes());
            p.extend_from_slice(m);
        }
        pcap.write_udp(1_548_858_600_000_000_000 + seq, src, dst, &p)
            .expect("write packet");
    }
    pcap.finish().expect("finish pcap")
}

/// A capture that loses packets: every thread count marks the same DBN records
/// `F_MAYBE_BAD_BOOK` (from the first message after the first loss), so the files match.
#[test]
fn a_lossy_capture_gives_the_same_dbn_flags_on_every_thread_count() {
    let dir = tempfile::tempdir().expect("tempdir");
    let day = generated_day(dir.path(), "day.itch50", 30_000, 9, 7, false);
    let itch = fs::read(&day).expect("read day");
    let pcap = dir.path().join("lossy.pcap");
    // 20 messages a packet; every 37th packet from the 300th lost.
    fs::write(&pcap, lossy_pcap(&itch, 20, |n| n >= 300 && n % 37 == 0)).expect("write pcap");
    // Parquet MBP-10 carries the flags too (its records are the DBN writer's), with a DBN
    // output beside it and without one.
    for (dbn, parquet) in [
        (Some((DbnSchema::Mbo, "dbn")), Some(ParquetSchema::Mbp10)),
        (Some((DbnSchema::Mbp1, "dbn.zst")), None),
        (None, Some(ParquetSchema::Mbp10)),
    ] {
        let extra = Extra {
            dbn,
            parquet,
            ..Extra::default()
        };
        let (summary, outputs) = same_for_every_thread_count_with(&pcap, false, &extra);
        assert!(
            summary.declared_lost_messages() > 100,
            "{}",
            summary.declared_lost_messages()
        );
        if dbn.is_some() {
            assert!(summary.dbn_out_records.expect("counted") > 10_000);
        }
        if parquet.is_some() {
            let (columns, _) = outputs.parquet.expect("written");
            assert!(columns.len() > 100_000, "{}", columns.len());
        }
    }
}

/// Both Parquet views, each beside a DBN output (one thread writes them side by side too).
#[test]
fn parquet_out_in_both_views_is_the_same_on_every_thread_count() {
    let dir = tempfile::tempdir().expect("tempdir");
    let day = generated_day(dir.path(), "day.itch50", 30_000, 13, 9, true);
    for (view, dbn) in [
        (ParquetSchema::Bbo, DbnSchema::Trades),
        (ParquetSchema::Mbp10, DbnSchema::Mbp10),
    ] {
        let extra = Extra {
            dbn: Some((dbn, "dbn")),
            parquet: Some(view),
            ..Extra::default()
        };
        let (summary, _) = same_for_every_thread_count_with(&day, false, &extra);
        assert!(summary.error.is_none(), "{:?}", summary.error);
    }
}

/// `--sample` in every format, on a day whose books come and go (hard cases: a mid-day
/// start, stocks that empty), at intervals from many boundaries a message to few, and with
/// the filters: one thread's rows, byte for byte.
#[test]
fn sample_out_in_every_format_is_the_same_on_every_thread_count() {
    let dir = tempfile::tempdir().expect("tempdir");
    let day = generated_day(dir.path(), "day.itch50", 30_000, 17, 9, true);
    let one =
        replay_file(&options(&day, false, dir.path(), "all", &Extra::default())).expect("replay");
    let stamps = bbo_stamps(&dir.path().join("all.bbo.csv"));
    let span = stamps[stamps.len() - 1] - stamps[0];
    // About 2,000 boundaries over the day, then about 20.
    for (ending, interval) in [
        ("csv", span / 2_000),
        ("dbn", span / 20),
        ("parquet", span / 20),
    ] {
        let extra = Extra {
            sample: Some((ending, interval.max(1))),
            ..Extra::default()
        };
        let (summary, _) = same_for_every_thread_count_with(&day, false, &extra);
        assert!(summary.error.is_none(), "{:?}", summary.error);
    }
    let symbols: Vec<String> = (0..=u16::MAX)
        .map(|l| one.books.symbol(ticklane_feed::itch::Locate(l)))
        .filter(|s| !s.is_empty())
        .skip(1)
        .take(3)
        .map(|s| String::from_utf8_lossy(s).trim().to_string())
        .collect();
    let between = format!(
        "{}-{}",
        util::time_of_day(stamps[0] + span / 4),
        util::time_of_day(stamps[0] + span / 2)
    );
    let extra = Extra {
        sample: Some(("csv", (span / 500).max(1))),
        filter: OutputFilter::parse(&symbols.join(","), &between).expect("a valid filter"),
        ..Extra::default()
    };
    let (_, filtered) = same_for_every_thread_count_with(&day, false, &extra);
    let rows = String::from_utf8(filtered.sample.expect("sampled").0).expect("CSV");
    // The header, then rows of the three stocks only, within the window: some, not all.
    let stocks: std::collections::BTreeSet<&str> = rows
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(2).expect("stock"))
        .collect();
    assert_eq!(stocks.len(), 3, "{stocks:?}");
    assert!(rows.lines().count() > 100, "{}", rows.lines().count());
}
