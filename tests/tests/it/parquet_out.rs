//! `replay --parquet-out`, read back by Apache Arrow's own Python package (`pyarrow`, run by
//! `tests/oracle/parquet_dump.py`) and compared with what the same replay says elsewhere:
//! - `bbo`: row for row against `--bbo-out`'s CSV (a different writer, itself checked against
//!   itch-book), with the column types, zstd, and the declared sort order;
//! - `mbp-10`: record for record against `--dbn-out --schema mbp-10` as Databento's own
//!   reader (`databento-dbn`) decodes it (the same records through two formats and two
//!   independent readers: a transport check; the records themselves are checked against the
//!   depth in `dbn_out.rs`);
//! - the footer's provenance: the input's name and size from the file system, its CRC-32 from
//!   Python's `zlib`, the message count from walking the input's length prefixes here, the
//!   summary equal to `--summary-json`'s;
//! - `--symbols`/`--between`: the filtered `bbo` file row for row against the filtered CSV,
//!   and the filtered `mbp-10` file exactly the unfiltered file's rows of those symbols and
//!   times (the time of day worked out here from `ts_event` and the session's UTC midnight),
//!   with the filter in the footer;
//! - `--sample-out x.parquet`: row for row against the CSV sample of the same replay.
//!
//! Without a Python that imports `pyarrow` (and `databento_dbn` for MBP-10) the test fails
//! under `CI=true` and otherwise skips loudly (`util::oracle::python_with`).

use std::collections::HashMap;
use std::fs;
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};

use ticklane_engine::book::BookConfig;
use ticklane_engine::dbn_out::{DbnOutOptions, DbnSchema, SessionDate};
use ticklane_engine::output_filter::OutputFilter;
use ticklane_engine::parquet_out::{ParquetOutOptions, ParquetSchema};
use ticklane_engine::replay::{replay_file, ReplayOptions};
use ticklane_engine::sample::{SampleInterval, SampleOptions};
use ticklane_sim::GenConfig;

use crate::util;

const DAY: GenConfig = GenConfig {
    messages: 60_000,
    seed: 21,
    stocks: 6,
    hard_cases: false,
    crossing: false,
};

/// `databento_dbn.UNDEF_PRICE` as `dbn_dump.py` prints it: an empty level's price.
const UNDEF_PRICE: &str = "9223372036854775807";

fn options(input: &Path) -> ReplayOptions {
    ReplayOptions {
        input: input.to_path_buf(),
        depth: 10,
        books: BookConfig {
            max_orders: 1 << 20,
            max_books: 1024,
            levels_per_side: 4096,
        },
        ..ReplayOptions::default()
    }
}

/// The JSON line describing the file, and the rows, as pyarrow reads them.
fn dump(python: &Path, file: &Path, input: &Path) -> (String, Vec<String>) {
    let out = util::oracle::run(python, "parquet_dump.py", &[file, input], &[]);
    let mut lines = out.lines();
    let info = lines.next().expect("an info line").to_owned();
    (info, lines.map(str::to_owned).collect())
}

/// ITCH messages in a BinaryFILE, by walking its 2-byte length prefixes.
fn count_messages(input: &Path) -> u64 {
    let bytes = fs::read(input).expect("read input");
    let (mut at, mut n) = (0usize, 0u64);
    while at + 2 <= bytes.len() {
        at += 2 + usize::from(u16::from_be_bytes([bytes[at], bytes[at + 1]]));
        n += 1;
    }
    assert_eq!(at, bytes.len(), "the input ends on a message boundary");
    n
}

fn assert_has(info: &str, want: &str) {
    assert!(info.contains(want), "{want} in {info}");
}

/// The provenance every file carries.
fn check_footer(info: &str, input: &Path, schema: &str) {
    let bytes = fs::metadata(input).expect("input metadata").len();
    let name = input.file_name().expect("a name").to_string_lossy();
    assert_has(info, &format!("\"ticklane.input_name\": \"{name}\""));
    assert_has(info, &format!("\"ticklane.input_bytes\": \"{bytes}\""));
    assert_has(info, &format!("\"ticklane.schema\": \"{schema}\""));
    assert_has(
        info,
        &format!("\"ticklane.version\": \"{}\"", env!("CARGO_PKG_VERSION")),
    );
    // zlib's CRC-32 of the input, as the script computed it, against the footer's.
    let zlib = info
        .split("\"input_crc32\": \"")
        .nth(1)
        .and_then(|s| s.get(..8))
        .expect("the script's crc32");
    assert_has(info, &format!("\"ticklane.input_crc32\": \"{zlib}\""));
    assert_has(info, "\"codecs\": [\"ZSTD\"]");
    let messages = count_messages(input);
    assert_has(info, &format!("\"messages\": {messages},"));
}

#[test]
fn bbo_parquet_reads_back_with_pyarrow_and_equals_the_csv() {
    let test = "bbo_parquet_reads_back_with_pyarrow_and_equals_the_csv";
    let Some(python) = util::oracle::python_with(test, "pyarrow", "pyarrow") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("day.itch50");
    util::write_generated(&input, DAY);
    let csv = dir.path().join("bbo.csv");
    let parquet = dir.path().join("bbo.parquet");
    let summary = dir.path().join("summary.json");
    let outcome = replay_file(&ReplayOptions {
        bbo_out: Some(csv.clone()),
        summary_json: Some(summary.clone()),
        parquet_out: Some(ParquetOutOptions {
            path: parquet.clone(),
            schema: ParquetSchema::Bbo,
            date: None,
        }),
        ..options(&input)
    })
    .expect("replay runs");
    assert!(
        outcome.summary.error.is_none(),
        "{:?}",
        outcome.summary.error
    );

    let (info, rows) = dump(&python, &parquet, &input);
    let text = fs::read_to_string(&csv).expect("read csv");
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("msg_index,timestamp_ns,locate,stock,bid_px,bid_qty,bid_orders,ask_px,ask_qty,ask_orders")
    );
    let want: Vec<&str> = lines.collect();
    assert!(
        want.len() > 10_000,
        "the day moves the tops: {}",
        want.len()
    );
    assert_eq!(rows.len(), want.len(), "row count");
    for (i, (got, want)) in rows.iter().zip(&want).enumerate() {
        assert_eq!(got, want, "row {i}");
    }
    assert_has(
        &info,
        "\"columns\": [[\"msg_index\", \"uint64\"], [\"timestamp_ns\", \"uint64\"], \
         [\"locate\", \"uint16\"], [\"stock\", \"string\"], [\"bid_px\", \"uint32\"], \
         [\"bid_qty\", \"uint64\"], [\"bid_orders\", \"uint32\"], [\"ask_px\", \"uint32\"], \
         [\"ask_qty\", \"uint64\"], [\"ask_orders\", \"uint32\"]]",
    );
    assert_has(
        &info,
        "\"sorting\": [[\"timestamp_ns\", false], [\"msg_index\", false]]",
    );
    // The order the footer declares holds.
    let keys: Vec<(u64, u64)> = rows
        .iter()
        .map(|r| {
            let f: Vec<&str> = r.split(',').collect();
            (f[1].parse().expect("ts"), f[0].parse().expect("index"))
        })
        .collect();
    assert!(
        keys.windows(2).all(|w| w[0] < w[1]),
        "sorted by (timestamp, index)"
    );
    assert_has(&info, &format!("\"row_groups\": [{}]", want.len()));
    check_footer(&info, &input, "bbo");
    // The footer's summary is the one --summary-json wrote.
    let footer_summary = info
        .split("\"ticklane.summary\": ")
        .nth(1)
        .expect("a summary key");
    let file_summary = fs::read_to_string(&summary).expect("read summary");
    let escaped = format!("{file_summary:?}");
    assert!(
        footer_summary.starts_with(&escaped),
        "footer summary {footer_summary} is {escaped}"
    );
}

#[test]
fn mbp10_parquet_reads_back_with_pyarrow_as_the_dbn_records() {
    let test = "mbp10_parquet_reads_back_with_pyarrow_as_the_dbn_records";
    let Some(python) = util::oracle::python_with(test, "pyarrow", "pyarrow") else {
        return;
    };
    let Some(dbn_python) = util::oracle::python_with(test, "databento_dbn", "databento-dbn") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("day.itch50");
    util::write_generated(&input, DAY);
    let csv = dir.path().join("bbo.csv");
    let dbn = dir.path().join("day.mbp10.dbn");
    let parquet = dir.path().join("day.mbp10.parquet");
    let date = SessionDate::parse("2019-01-30").expect("a valid date");
    let outcome = replay_file(&ReplayOptions {
        bbo_out: Some(csv.clone()),
        dbn_out: Some(DbnOutOptions {
            path: dbn.clone(),
            schema: DbnSchema::Mbp10,
            date,
            dataset: Default::default(),
        }),
        parquet_out: Some(ParquetOutOptions {
            path: parquet.clone(),
            schema: ParquetSchema::Mbp10,
            date: Some(date),
        }),
        ..options(&input)
    })
    .expect("replay runs");
    assert!(
        outcome.summary.error.is_none(),
        "{:?}",
        outcome.summary.error
    );
    let leftovers: Vec<PathBuf> = fs::read_dir(dir.path())
        .expect("read dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "spools removed: {leftovers:?}");

    // Symbols from the CSV's rows (another writer).
    let symbols: HashMap<String, String> = fs::read_to_string(&csv)
        .expect("read csv")
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[2].to_owned(), f[3].to_owned())
        })
        .collect();

    let out = util::oracle::run(&dbn_python, "dbn_dump.py", &[&dbn], &[]);
    let records: Vec<Vec<&str>> = out
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    let (info, rows) = dump(&python, &parquet, &input);
    assert!(records.len() > 10_000, "the day has MBP-10 records");
    assert_eq!(rows.len(), records.len(), "one row per DBN record");
    let px = |v: &str| {
        if v == UNDEF_PRICE {
            String::new()
        } else {
            v.to_owned()
        }
    };
    let mut unnamed = 0;
    for (i, (row, r)) in rows.iter().zip(&records).enumerate() {
        // dbn_dump: rtype,instrument_id,ts_event,ts_recv,ts_in_delta,sequence,flags,action,
        // side,depth,price,size, then per level bid_px,bid_sz,bid_ct,ask_px,ask_sz,ask_ct.
        let symbol = match symbols.get(r[1]) {
            Some(s) => s.clone(),
            None => {
                unnamed += 1;
                row.split(',').nth(3).expect("a symbol field").to_owned()
            }
        };
        let mut want = vec![
            r[2].to_owned(),
            r[5].to_owned(),
            r[1].to_owned(),
            symbol,
            r[7].to_owned(),
            r[8].to_owned(),
            r[9].to_owned(),
            px(r[10]),
            r[11].to_owned(),
            r[6].to_owned(),
        ];
        for level in r[12..].chunks(6) {
            want.extend([
                px(level[0]),
                px(level[3]),
                level[1].to_owned(),
                level[4].to_owned(),
                level[2].to_owned(),
                level[5].to_owned(),
            ]);
        }
        assert_eq!(*row, want.join(","), "row {i}");
    }
    assert!(
        unnamed * 100 < rows.len(),
        "most rows' symbols checked: {unnamed} not"
    );
    assert_has(
        &info,
        "\"sorting\": [[\"ts_event\", false], [\"sequence\", false]]",
    );
    assert_has(&info, "[\"bid_px_09\", \"int64\"]");
    assert_has(&info, "[\"ask_ct_09\", \"uint32\"]");
    check_footer(&info, &input, "mbp-10");
}

/// 2019-01-30 00:00 in New York (EST, UTC-5) as UTC ns since the epoch: 17,926 days after
/// 1970-01-01, plus five hours. Worked out by hand, not by `SessionDate`.
const MIDNIGHT_2019_01_30_NS: u64 = (17_926 * 86_400 + 5 * 3_600) * 1_000_000_000;

#[test]
fn filtered_parquet_keeps_the_rows_every_other_output_keeps() {
    let test = "filtered_parquet_keeps_the_rows_every_other_output_keeps";
    let Some(python) = util::oracle::python_with(test, "pyarrow", "pyarrow") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("day.itch50");
    util::write_generated(&input, DAY);
    let date = SessionDate::parse("2019-01-30").expect("a valid date");
    let parquet = |name: &str, schema| ParquetOutOptions {
        path: dir.path().join(name),
        schema,
        date: Some(date),
    };

    // The unfiltered CSV chooses the symbols and the window: two of the six stocks, and the
    // middle third of the day's rows by time.
    let all_csv = dir.path().join("all.csv");
    replay_file(&ReplayOptions {
        bbo_out: Some(all_csv.clone()),
        parquet_out: Some(parquet("all.mbp10.parquet", ParquetSchema::Mbp10)),
        ..options(&input)
    })
    .expect("unfiltered replay");
    let all: Vec<Vec<String>> = fs::read_to_string(&all_csv)
        .expect("read csv")
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(str::to_owned).collect())
        .collect();
    let mut stocks: Vec<String> = all.iter().map(|r| r[3].clone()).collect();
    stocks.sort();
    stocks.dedup();
    assert!(stocks.len() >= 4, "the day has stocks: {stocks:?}");
    let kept = [stocks[0].clone(), stocks[2].clone()];
    let times: Vec<u64> = all.iter().map(|r| r[1].parse().expect("ts")).collect();
    let (start, end) = (times[times.len() / 3], times[2 * times.len() / 3]);
    let between = format!("{}-{}", util::time_of_day(start), util::time_of_day(end));
    let filter = OutputFilter::parse(&kept.join(","), &between).expect("a valid filter");

    let csv = dir.path().join("filtered.csv");
    let outcome = replay_file(&ReplayOptions {
        bbo_out: Some(csv.clone()),
        parquet_out: Some(parquet("filtered.bbo.parquet", ParquetSchema::Bbo)),
        filter: filter.clone(),
        ..options(&input)
    })
    .expect("filtered bbo replay");
    assert!(outcome.summary.error.is_none());
    replay_file(&ReplayOptions {
        parquet_out: Some(parquet("filtered.mbp10.parquet", ParquetSchema::Mbp10)),
        filter,
        ..options(&input)
    })
    .expect("filtered mbp-10 replay");

    // bbo: the filtered CSV's rows, row for row, and only rows the filter keeps.
    let (info, rows) = dump(&python, &dir.path().join("filtered.bbo.parquet"), &input);
    let text = fs::read_to_string(&csv).expect("read filtered csv");
    let want: Vec<&str> = text.lines().skip(1).collect();
    assert!(
        want.len() > 100 && want.len() * 4 < all.len(),
        "the filter keeps some rows and drops most: {} of {}",
        want.len(),
        all.len()
    );
    assert_eq!(
        rows, want,
        "the filtered Parquet rows are the filtered CSV's"
    );
    for row in &rows {
        let f: Vec<&str> = row.split(',').collect();
        let ts: u64 = f[1].parse().expect("ts");
        assert!(
            kept.iter().any(|k| k == f[3]) && start <= ts && ts < end,
            "{row}"
        );
    }
    let footer_filter = format!(
        "\"ticklane.filter\": \"{{\\\"between_ns\\\":[{start},{end}],\\\"symbols\\\":[\\\"{}\\\",\\\"{}\\\"]}}\"",
        kept[0], kept[1]
    );
    assert_has(&info, &footer_filter);
    check_footer(&info, &input, "bbo");

    // mbp-10: the unfiltered file's rows of those symbols and times, in the same order.
    let (_, all_mbp) = dump(&python, &dir.path().join("all.mbp10.parquet"), &input);
    let (info, mbp) = dump(&python, &dir.path().join("filtered.mbp10.parquet"), &input);
    let want: Vec<&String> = all_mbp
        .iter()
        .filter(|r| {
            let f: Vec<&str> = r.split(',').collect();
            let ts: u64 = f[0].parse().expect("ts_event");
            let of_day = ts - MIDNIGHT_2019_01_30_NS;
            kept.iter().any(|k| k == f[3]) && start <= of_day && of_day < end
        })
        .collect();
    assert!(
        want.len() > 100,
        "the filter keeps MBP-10 rows: {}",
        want.len()
    );
    assert_eq!(mbp.iter().collect::<Vec<_>>(), want);
    assert_has(&info, &footer_filter);
    check_footer(&info, &input, "mbp-10");
}

#[test]
fn sampled_parquet_reads_back_with_pyarrow_as_the_csv_sample() {
    let test = "sampled_parquet_reads_back_with_pyarrow_as_the_csv_sample";
    let Some(python) = util::oracle::python_with(test, "pyarrow", "pyarrow") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("day.itch50");
    util::write_generated(&input, DAY);
    let sample = |path: PathBuf| SampleOptions {
        path,
        // The generated day spans about 80 ms: 4 ms boundaries give about 20.
        interval: SampleInterval::from_nanos(NonZeroU64::new(4_000_000).expect("nonzero")),
        depth: 3,
        date: None,
    };
    let csv = dir.path().join("sample.csv");
    let parquet = dir.path().join("sample.parquet");
    for path in [&csv, &parquet] {
        let outcome = replay_file(&ReplayOptions {
            sample: Some(sample(path.clone())),
            ..options(&input)
        })
        .expect("replay runs");
        assert!(outcome.summary.error.is_none());
    }
    let (info, rows) = dump(&python, &parquet, &input);
    let text = fs::read_to_string(&csv).expect("read csv");
    let mut lines = text.lines();
    let header = lines.next().expect("a header");
    let want: Vec<&str> = lines.collect();
    assert!(want.len() > 50, "boundaries times stocks: {}", want.len());
    assert_eq!(rows, want, "the Parquet sample's rows are the CSV sample's");
    // One typed column per CSV field, named as the CSV header names them.
    let columns: Vec<String> = header
        .split(',')
        .map(|name| {
            let ty = match name {
                "timestamp_ns" => "uint64",
                "locate" => "uint16",
                "stock" => "string",
                n if n.contains("_qty_") => "uint64",
                _ => "uint32",
            };
            format!("[\"{name}\", \"{ty}\"]")
        })
        .collect();
    assert_has(&info, &format!("\"columns\": [{}]", columns.join(", ")));
    assert_has(
        &info,
        "\"sorting\": [[\"timestamp_ns\", false], [\"locate\", false]]",
    );
    check_footer(&info, &input, "sample");
}
