//! `replay --sample`, `--symbols` and `--between`, against oracles other than the code under
//! test: the sampled depth at each boundary equals `--book-out` of the input cut just before
//! that boundary (a separate replay; the cut is made here from the file's own bytes); a
//! hand-laid day gives the forward fill and the end rule written out by hand; a filtered
//! replay's outputs are exactly the unfiltered rows of those symbols and times; and the
//! README's pandas, polars and databento-dbn snippets load the outputs with the right row
//! counts.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};
use std::process::Command;

use dbn::decode::{DbnDecoder, DecodeRecord};
use dbn::Mbp10Msg;
use ticklane_engine::book::BookConfig;
use ticklane_engine::dbn_out::{DbnOutOptions, DbnSchema, SessionDate};
use ticklane_engine::output_filter::OutputFilter;
use ticklane_engine::replay::{replay_file, ReplayOptions};
use ticklane_engine::sample::{SampleInterval, SampleOptions};
use ticklane_sim::GenConfig;

use crate::util;

const DAY: GenConfig = GenConfig {
    messages: 60_000,
    seed: 21,
    stocks: 5,
    hard_cases: false,
    crossing: false,
};
/// The generated day's orders span about 80 ms from 09:30: 4 ms boundaries give about 20.
const STEP_NS: u64 = 4_000_000;
const DEPTH: usize = 5;

fn books() -> BookConfig {
    BookConfig {
        max_orders: 1 << 18,
        ..BookConfig::default()
    }
}

fn sample(path: PathBuf, interval_ns: u64, depth: usize) -> SampleOptions {
    SampleOptions {
        path,
        interval: SampleInterval::from_nanos(NonZeroU64::new(interval_ns).expect("nonzero")),
        depth,
        date: Some(SessionDate::parse("2019-01-30").expect("date")),
    }
}

/// Each ITCH50 message of `file` (2-byte length prefix, then the body) with its timestamp,
/// read here from the spec's layout (bytes 5..11 of the body, big-endian nanoseconds).
fn messages(file: &[u8]) -> Vec<(u64, &[u8])> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 2 <= file.len() {
        let len = usize::from(u16::from_be_bytes([file[at], file[at + 1]]));
        let framed = &file[at..at + 2 + len];
        let body = &framed[2..];
        let mut ts = [0u8; 8];
        ts[2..].copy_from_slice(&body[5..11]);
        out.push((u64::from_be_bytes(ts), framed));
        at += 2 + len;
    }
    out
}

fn csv_rows(path: &Path) -> Vec<Vec<String>> {
    fs::read_to_string(path)
        .expect("read csv")
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

/// `--book-out` rows as (locate, side) → [(price, qty, orders)] best first.
type Depth = BTreeMap<(String, String), Vec<[String; 3]>>;

fn book_out(path: &Path) -> Depth {
    let mut depth = Depth::new();
    for row in csv_rows(path) {
        depth
            .entry((row[0].clone(), row[2].clone()))
            .or_default()
            .push([row[4].clone(), row[5].clone(), row[6].clone()]);
    }
    depth
}

/// A sampled row's levels in the same shape (empty levels, `0,0,0`, left out).
fn sampled_depth(row: &[String], depth: usize) -> Depth {
    let mut out = Depth::new();
    for (side, letter) in [(0, "B"), (1, "S")] {
        let levels: Vec<[String; 3]> = (0..depth)
            .map(|i| {
                let f = 3 + side * 3 * depth + 3 * i;
                [row[f].clone(), row[f + 1].clone(), row[f + 2].clone()]
            })
            .filter(|l| l[0] != "0" || l[1] != "0" || l[2] != "0")
            .collect();
        if !levels.is_empty() {
            out.insert((row[1].clone(), letter.to_string()), levels);
        }
    }
    out
}

#[test]
fn sampled_rows_equal_the_final_books_of_the_input_cut_at_each_boundary() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("day.itch50");
    util::write_generated(&input, DAY);
    let out = dir.path().join("sample.csv");
    let outcome = replay_file(&ReplayOptions {
        input: input.clone(),
        books: books(),
        sample: Some(sample(out.clone(), STEP_NS, DEPTH)),
        ..ReplayOptions::default()
    })
    .expect("replay");
    assert!(outcome.summary.error.is_none());
    let rows = csv_rows(&out);
    let mut by_boundary: BTreeMap<u64, Vec<Vec<String>>> = BTreeMap::new();
    for row in rows {
        by_boundary
            .entry(row[0].parse().expect("timestamp"))
            .or_default()
            .push(row);
    }
    let bytes = fs::read(&input).expect("read input");
    let messages = messages(&bytes);
    // The first add (`A` or `F`, the byte after the length prefix) makes the first book.
    let first = messages
        .iter()
        .find(|(_, framed)| matches!(framed[2], b'A' | b'F'))
        .expect("the day has orders")
        .0;
    let last = messages[messages.len() - 1].0;
    // Every boundary from the first after the first add to the last at or before the last
    // message: the end rule.
    let expected: Vec<u64> = ((first / STEP_NS + 1)..=(last / STEP_NS))
        .map(|k| k * STEP_NS)
        .collect();
    assert!(
        expected.len() >= 15,
        "the day spans {} boundaries",
        expected.len()
    );
    let written: Vec<u64> = by_boundary.keys().copied().collect();
    assert_eq!(
        (written.len(), written.first(), written.last()),
        (expected.len(), expected.first(), expected.last())
    );
    assert_eq!(written, expected);
    let mut stocks_before = BTreeSet::new();
    for (&boundary, rows) in &by_boundary {
        let cut = dir.path().join("cut.itch50");
        let kept: Vec<u8> = messages
            .iter()
            .take_while(|(ts, _)| *ts < boundary)
            .flat_map(|(_, framed)| framed.iter().copied())
            .collect();
        fs::write(&cut, kept).expect("write cut");
        let book = dir.path().join("cut_book.csv");
        replay_file(&ReplayOptions {
            input: cut,
            book_out: Some(book.clone()),
            depth: DEPTH,
            books: books(),
            ..ReplayOptions::default()
        })
        .expect("replay cut");
        let sampled: Depth = rows.iter().flat_map(|r| sampled_depth(r, DEPTH)).collect();
        assert_eq!(sampled, book_out(&book), "boundary {boundary}");
        // A book, once made, gets a row at every later boundary (forward fill).
        let stocks: BTreeSet<String> = rows.iter().map(|r| r[1].clone()).collect();
        assert!(stocks.is_superset(&stocks_before), "boundary {boundary}");
        stocks_before = stocks;
    }
}

/// ITCH 5.0 stock directory (`R`, 39 bytes) for `locate`, laid out by hand from the spec.
fn directory(locate: u16, ts: u64, stock: &[u8; 8]) -> Vec<u8> {
    let mut m = vec![b'R'];
    m.extend(locate.to_be_bytes());
    m.extend([0, 0]);
    m.extend(&ts.to_be_bytes()[2..]);
    m.extend(stock);
    m.extend([b'Q', b'N']);
    m.extend(100u32.to_be_bytes());
    m.extend([b'N', b'C']);
    m.extend(*b"Z ");
    m.extend([b'P', b'N', b' ', b'1', b'N']);
    m.extend(0u32.to_be_bytes());
    m.push(b'N');
    assert_eq!(m.len(), 39);
    m
}

/// ITCH 5.0 add order (`A`, 36 bytes).
fn add(
    locate: u16,
    ts: u64,
    order: u64,
    side: u8,
    shares: u32,
    stock: &[u8; 8],
    price: u32,
) -> Vec<u8> {
    let mut m = vec![b'A'];
    m.extend(locate.to_be_bytes());
    m.extend([0, 0]);
    m.extend(&ts.to_be_bytes()[2..]);
    m.extend(order.to_be_bytes());
    m.push(side);
    m.extend(shares.to_be_bytes());
    m.extend(stock);
    m.extend(price.to_be_bytes());
    assert_eq!(m.len(), 36);
    m
}

fn framed(messages: &[Vec<u8>]) -> Vec<u8> {
    messages
        .iter()
        .flat_map(|m| {
            let len = u16::try_from(m.len()).expect("short");
            len.to_be_bytes().into_iter().chain(m.iter().copied())
        })
        .collect()
}

#[test]
fn an_unchanged_stock_is_forward_filled_and_nothing_follows_the_last_message() {
    const S: u64 = 1_000_000_000;
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("hand.itch50");
    let (aaa, bbb) = (b"AAA     ", b"BBB     ");
    fs::write(
        &input,
        framed(&[
            directory(1, S / 10, aaa),
            directory(2, S / 10, bbb),
            add(1, S / 2, 1, b'B', 100, aaa, 1_000_000),
            add(2, 2 * S + S / 2, 2, b'S', 300, bbb, 2_000_000),
            // Exactly at 3 s: boundary 3 s is the state before it (one order each).
            add(1, 3 * S, 3, b'S', 50, aaa, 1_010_000),
            add(1, 3 * S + S / 5, 4, b'B', 70, aaa, 1_000_000),
        ]),
    )
    .expect("write");
    let out = dir.path().join("sample.csv");
    replay_file(&ReplayOptions {
        input,
        books: books(),
        sample: Some(sample(out.clone(), S, 1)),
        ..ReplayOptions::default()
    })
    .expect("replay");
    // By hand: AAA from 1 s (its add at 0.5 s), unchanged at 2 s and 3 s; BBB from 3 s;
    // no row at 4 s, past the last message (3.2 s).
    assert_eq!(
        fs::read_to_string(&out).expect("read"),
        "timestamp_ns,locate,stock,bid_px_1,bid_qty_1,bid_orders_1,ask_px_1,ask_qty_1,ask_orders_1\n\
         1000000000,1,AAA,1000000,100,1,0,0,0\n\
         2000000000,1,AAA,1000000,100,1,0,0,0\n\
         3000000000,1,AAA,1000000,100,1,0,0,0\n\
         3000000000,2,BBB,0,0,0,2000000,300,1\n"
    );
}

struct Outputs {
    bbo: PathBuf,
    book: PathBuf,
    sample: PathBuf,
    dbn: PathBuf,
}

fn replay_all(input: &Path, dir: &Path, tag: &str, filter: OutputFilter) -> Outputs {
    let out = Outputs {
        bbo: dir.join(format!("{tag}_bbo.csv")),
        book: dir.join(format!("{tag}_book.csv")),
        sample: dir.join(format!("{tag}_sample.csv")),
        dbn: dir.join(format!("{tag}.mbp10.dbn")),
    };
    replay_file(&ReplayOptions {
        input: input.to_path_buf(),
        bbo_out: Some(out.bbo.clone()),
        book_out: Some(out.book.clone()),
        depth: DEPTH,
        books: books(),
        dbn_out: Some(DbnOutOptions {
            path: out.dbn.clone(),
            schema: DbnSchema::Mbp10,
            date: SessionDate::parse("2019-01-30").expect("date"),
            dataset: Default::default(),
        }),
        sample: Some(sample(out.sample.clone(), STEP_NS, DEPTH)),
        filter,
        ..ReplayOptions::default()
    })
    .expect("replay");
    out
}

fn dbn_records(path: &Path) -> Vec<Mbp10Msg> {
    fn drain<R: std::io::Read>(mut decoder: DbnDecoder<R>) -> Vec<Mbp10Msg> {
        let mut records = Vec::new();
        while let Some(r) = decoder.decode_record::<Mbp10Msg>().expect("decode") {
            records.push(*r);
        }
        records
    }
    if path.extension().is_some_and(|e| e == "zst") {
        drain(DbnDecoder::from_zstd_file(path).expect("open dbn.zst"))
    } else {
        drain(DbnDecoder::from_file(path).expect("open dbn"))
    }
}

#[test]
fn filtered_outputs_are_exactly_the_unfiltered_rows_of_those_symbols_and_times() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("day.itch50");
    util::write_generated(&input, DAY);
    let all = replay_all(&input, dir.path(), "all", OutputFilter::default());
    let filter = OutputFilter::parse("AAAB,AAAD", "09:30:00.05-09:30:00.15").expect("filter");
    let some = replay_all(&input, dir.path(), "some", filter);
    // The window by hand: 09:30:00.05 = 34,200.05 s.
    let (start, end) = (34_200_050_000_000u64, 34_200_150_000_000u64);
    let symbols = ["AAAB", "AAAD"];
    let keep_csv = |rows: Vec<Vec<String>>, ts_col: Option<usize>, sym_col: usize| {
        rows.into_iter()
            .filter(|r| symbols.contains(&r[sym_col].as_str()))
            .filter(|r| {
                ts_col.is_none_or(|c| {
                    let t: u64 = r[c].parse().expect("ts");
                    start <= t && t < end
                })
            })
            .collect::<Vec<_>>()
    };
    for (all, some, ts_col, sym_col) in [
        (&all.bbo, &some.bbo, Some(1), 3),
        (&all.sample, &some.sample, Some(0), 2),
        // The final depth: by symbol only.
        (&all.book, &some.book, None, 1),
    ] {
        let expected = keep_csv(csv_rows(all), ts_col, sym_col);
        assert!(!expected.is_empty(), "{}", all.display());
        assert_eq!(csv_rows(some), expected, "{}", some.display());
    }
    // DBN: the unfiltered records of those locates (AAAB, AAAD are locates 2, 4 in the
    // generator's directory, read back from the book CSV) stamped inside the window.
    let locates: BTreeSet<u32> = csv_rows(&all.book)
        .into_iter()
        .filter(|r| symbols.contains(&r[1].as_str()))
        .map(|r| r[0].parse().expect("locate"))
        .collect();
    assert_eq!(locates.len(), 2);
    let midnight = SessionDate::parse("2019-01-30")
        .expect("date")
        .midnight_utc_ns();
    let expected: Vec<Mbp10Msg> = dbn_records(&all.dbn)
        .into_iter()
        .filter(|r| locates.contains(&r.hd.instrument_id))
        .filter(|r| (start..end).contains(&(r.hd.ts_event - midnight)))
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(dbn_records(&some.dbn), expected);
}

#[test]
fn sampled_dbn_records_carry_the_sampled_csv_rows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("day.itch50");
    util::write_generated(&input, DAY);
    let csv = dir.path().join("s.csv");
    let dbn = dir.path().join("s.dbn.zst");
    for out in [&csv, &dbn] {
        replay_file(&ReplayOptions {
            input: input.clone(),
            books: books(),
            sample: Some(sample(out.clone(), STEP_NS, DEPTH)),
            ..ReplayOptions::default()
        })
        .expect("replay");
    }
    let midnight = SessionDate::parse("2019-01-30")
        .expect("date")
        .midnight_utc_ns();
    let rows = csv_rows(&csv);
    let records = dbn_records(&dbn);
    assert_eq!(records.len(), rows.len());
    for (row, rec) in rows.iter().zip(&records) {
        let n = |i: usize| row[i].parse::<i64>().expect("number");
        assert_eq!(rec.hd.ts_event - midnight, n(0) as u64);
        assert_eq!(i64::from(rec.hd.instrument_id), n(1));
        for (i, level) in rec.levels.iter().enumerate().take(DEPTH) {
            let (b, a) = (3 + 3 * i, 3 + 3 * DEPTH + 3 * i);
            // DBN prices are 1e-9 dollars, ITCH's 1e-4 times 100,000; empty is UNDEF_PRICE.
            let px = |p: i64| {
                if p == 0 {
                    dbn::UNDEF_PRICE
                } else {
                    p * 100_000
                }
            };
            assert_eq!(level.bid_px, px(n(b)));
            assert_eq!(i64::from(level.bid_sz), n(b + 1));
            assert_eq!(i64::from(level.bid_ct), n(b + 2));
            assert_eq!(level.ask_px, px(n(a)));
            assert_eq!(i64::from(level.ask_sz), n(a + 1));
            assert_eq!(i64::from(level.ask_ct), n(a + 2));
        }
        assert!(rec.levels[DEPTH..]
            .iter()
            .all(|l| l.bid_px == dbn::UNDEF_PRICE));
    }
}

/// The README's snippets between `<!-- snippet:NAME -->` and `<!-- /snippet:NAME -->`,
/// without the code fence.
fn readme_snippet(name: &str) -> String {
    let readme = fs::read_to_string(util::repo_root().join("README.md")).expect("README");
    let open = format!("<!-- snippet:{name} -->");
    let close = format!("<!-- /snippet:{name} -->");
    let start = readme
        .find(&open)
        .unwrap_or_else(|| panic!("README lacks {open}"));
    let end = readme
        .find(&close)
        .unwrap_or_else(|| panic!("README lacks {close}"));
    readme[start + open.len()..end]
        .lines()
        .filter(|l| !l.starts_with("```"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_readme_snippets_load_the_outputs_in_pandas_polars_and_databento_dbn() {
    let test = "the_readme_snippets_load_the_outputs_in_pandas_polars_and_databento_dbn";
    let Some(python) = util::oracle::python_with(
        test,
        "pandas, polars, databento_dbn",
        "pandas, polars and databento-dbn",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("day.itch50");
    util::write_generated(&input, DAY);
    // The file names the snippets use, written by one replay.
    replay_file(&ReplayOptions {
        input: input.clone(),
        bbo_out: Some(dir.path().join("bbo.csv")),
        book_out: Some(dir.path().join("book.csv")),
        depth: DEPTH,
        books: books(),
        sample: Some(sample(dir.path().join("depth.csv"), STEP_NS, DEPTH)),
        ..ReplayOptions::default()
    })
    .expect("replay");
    replay_file(&ReplayOptions {
        input,
        books: books(),
        sample: Some(sample(dir.path().join("depth.dbn"), STEP_NS, DEPTH)),
        ..ReplayOptions::default()
    })
    .expect("replay");
    let lines = |name: &str| csv_rows(&dir.path().join(name)).len();
    let expected = format!(
        "{} {} {}",
        lines("bbo.csv"),
        lines("book.csv"),
        lines("depth.csv")
    );
    for (name, check) in [
        ("pandas", "print(len(bbo), len(book), len(depth))"),
        ("polars", "print(bbo.height, book.height, depth.height)"),
        ("databento-dbn", "print(len(depth))"),
    ] {
        let script = format!("{}\n{check}\n", readme_snippet(name));
        let out = Command::new(&python)
            .current_dir(dir.path())
            .args(["-c", &script])
            .output()
            .expect("run python");
        assert!(
            out.status.success(),
            "{name} snippet failed:\n{script}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let printed = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let want = if name == "databento-dbn" {
            lines("depth.csv").to_string()
        } else {
            expected.clone()
        };
        assert_eq!(printed, want, "{name} snippet:\n{script}");
    }
}
