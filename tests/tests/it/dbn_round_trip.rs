//! The DBN round trip, through code ticklane did not write: ITCH →
//! `replay --dbn-out x.mbo.dbn --schema mbo` → read by Databento's own Python package and
//! written again by its encoder (`tests/oracle/dbn_rewrite.py`: metadata and every record
//! rebuilt from decoded fields, then `databento_dbn.Transcoder`) → `replay x2.dbn`. The DBN
//! replay must give the ITCH replay's outputs byte for byte, each compared as text with no
//! conversion: the final depth (`--book-out`, every level), the top-of-book stream (stamped
//! in ns since the session's New York midnight, the session read from the DBN metadata),
//! the depth sampled at intervals, and all three again under `--symbols` and `--between`
//! (a window and two stocks picked from the ITCH replay's own rows). The top-of-book Parquet
//! of the DBN replay, read by pyarrow, holds the ITCH replay's CSV rows.
//!
//! Inputs: generated days with the hard cases on, several seeds, one of them with crossing
//! flow and written zstd-compressed on the way back; and the shared ITCH file when
//! `../shared/data` is there. Without a Python that imports `databento_dbn` (and `pyarrow`
//! for the Parquet check) the test fails under `CI=true` and otherwise skips loudly.

use std::fs;
use std::path::{Path, PathBuf};

use ticklane_engine::book::BookConfig;
use ticklane_engine::dbn_out::{DbnOutOptions, DbnSchema, SessionDate};
use ticklane_engine::output_filter::OutputFilter;
use ticklane_engine::parquet_out::{ParquetOutOptions, ParquetSchema};
use ticklane_engine::replay::{replay_file, ReplayOptions};
use ticklane_engine::sample::{SampleInterval, SampleOptions};
use ticklane_sim::GenConfig;

use crate::util;

const BOOKS: BookConfig = BookConfig {
    max_orders: 1 << 20,
    max_books: 1024,
    levels_per_side: 4096,
};

/// What one replay writes besides the top of book and the final depth.
#[derive(Clone, Default)]
struct Extras {
    dbn_out: Option<DbnOutOptions>,
    filter: OutputFilter,
    sample: Option<SampleInterval>,
    parquet: bool,
    recover_lengths: bool,
}

/// The text outputs of one replay, and where its Parquet went.
struct Csv {
    bbo: String,
    book: String,
    sample: String,
    parquet: Option<PathBuf>,
}

/// Replays `input` with `--bbo-out`, `--book-out --depth 100000` and `extras`.
fn replay(input: &Path, dir: &Path, name: &str, extras: Extras) -> Csv {
    let bbo = dir.join(format!("{name}.bbo.csv"));
    let book = dir.join(format!("{name}.book.csv"));
    let sample = dir.join(format!("{name}.sample.csv"));
    let parquet = dir.join(format!("{name}.bbo.parquet"));
    let outcome = replay_file(&ReplayOptions {
        input: input.to_path_buf(),
        bbo_out: Some(bbo.clone()),
        book_out: Some(book.clone()),
        depth: 100_000,
        books: BOOKS,
        dbn_out: extras.dbn_out,
        recover_lengths: extras.recover_lengths,
        filter: extras.filter,
        sample: extras.sample.map(|interval| SampleOptions {
            path: sample.clone(),
            interval,
            depth: 3,
            date: None,
        }),
        parquet_out: extras.parquet.then(|| ParquetOutOptions {
            path: parquet.clone(),
            schema: ParquetSchema::Bbo,
            date: None,
        }),
        ..ReplayOptions::default()
    })
    .expect("replay runs");
    assert!(
        outcome.summary.error.is_none(),
        "{name}: {:?}",
        outcome.summary.error
    );
    if let Some(dbn) = &outcome.summary.dbn {
        assert_eq!(dbn.mbo.before_session_day, 0, "{name}: a one-day file");
        assert_eq!(dbn.mbo.after_session_day, 0, "{name}: a one-day file");
    }
    Csv {
        bbo: fs::read_to_string(bbo).expect("read bbo"),
        book: fs::read_to_string(book).expect("read book"),
        sample: fs::read_to_string(&sample).unwrap_or_default(),
        parquet: extras.parquet.then_some(parquet),
    }
}

/// How one round trip is run.
struct Trip<'a> {
    itch: &'a Path,
    /// The session date given to `--dbn-out`.
    date: &'a str,
    /// Write the second DBN zstd-compressed.
    zst: bool,
    /// The ITCH file's length prefixes are zeroed.
    recover_lengths: bool,
    /// The `--sample` interval.
    sample: &'a str,
    /// pyarrow, to read the DBN replay's Parquet back (checked on this trip if given).
    pyarrow: Option<&'a Path>,
}

/// A filter picked from the ITCH replay's own outputs: the first two stocks of its final
/// depth, and the window from its top-of-book row a third of the way in to the one two
/// thirds in.
fn picked_filter(itch: &Csv) -> OutputFilter {
    let mut stocks: Vec<&str> = itch
        .book
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(1).expect("a stock column"))
        .filter(|s| !s.is_empty())
        .collect();
    stocks.dedup();
    let rows: Vec<&str> = itch.bbo.lines().skip(1).collect();
    let at = |i: usize| -> u64 {
        rows[i]
            .split(',')
            .nth(1)
            .expect("a timestamp")
            .parse()
            .expect("a number")
    };
    let (from, to) = (at(rows.len() / 3), at(2 * rows.len() / 3));
    assert!(from < to, "the window is not empty");
    let symbols = stocks[..stocks.len().min(2)].join(",");
    OutputFilter::parse(
        &symbols,
        &format!("{}-{}", util::time_of_day(from), util::time_of_day(to)),
    )
    .expect("valid")
}

/// ITCH → DBN → databento-dbn → DBN → ticklane; asserts every output agrees.
fn round_trip(python: &Path, dir: &Path, trip: Trip<'_>) {
    let Trip {
        itch,
        date,
        zst,
        recover_lengths,
        sample,
        pyarrow,
    } = trip;
    let sample: SampleInterval = sample.parse().expect("an interval");
    let name = itch.file_name().expect("a file name").to_string_lossy();
    let first = dir.join(format!("{name}.mbo.dbn"));
    let itch_csv = replay(
        itch,
        dir,
        &format!("{name}.itch"),
        Extras {
            dbn_out: Some(DbnOutOptions {
                path: first.clone(),
                schema: DbnSchema::Mbo,
                date: SessionDate::parse(date).expect("a valid date"),
                dataset: Default::default(),
            }),
            sample: Some(sample),
            recover_lengths,
            ..Extras::default()
        },
    );
    let second = dir.join(format!("{name}.x2.dbn{}", if zst { ".zst" } else { "" }));
    let said = util::oracle::run(python, "dbn_rewrite.py", &[&first, &second], &[]);
    assert!(
        said.starts_with("records "),
        "{name}: rewrite said {said:?}"
    );
    if zst {
        let head = fs::read(&second).expect("read the rewrite");
        assert_eq!(&head[..4], &[0x28, 0xb5, 0x2f, 0xfd], "{name}: zstd magic");
    }
    let dbn_csv = replay(
        &second,
        dir,
        &format!("{name}.dbn"),
        Extras {
            sample: Some(sample),
            parquet: pyarrow.is_some(),
            ..Extras::default()
        },
    );

    assert!(
        itch_csv.book.lines().count() > 1,
        "{name}: the book has levels"
    );
    assert_eq!(
        itch_csv.book, dbn_csv.book,
        "{name}: final depth after the round trip"
    );
    assert!(
        itch_csv.bbo.lines().count() > 100,
        "{name}: a real top-of-book stream"
    );
    assert_same_lines(&itch_csv.bbo, &dbn_csv.bbo, &format!("{name}: top of book"));
    assert!(
        itch_csv.sample.lines().count() > 10,
        "{name}: sampled rows at {sample:?}"
    );
    assert_same_lines(
        &itch_csv.sample,
        &dbn_csv.sample,
        &format!("{name}: sampled depth"),
    );

    let filter = picked_filter(&itch_csv);
    let filtered = |input: &Path, tag: &str, recover_lengths: bool| {
        replay(
            input,
            dir,
            &format!("{name}.{tag}.filtered"),
            Extras {
                filter: filter.clone(),
                sample: Some(sample),
                recover_lengths,
                ..Extras::default()
            },
        )
    };
    let itch_kept = filtered(itch, "itch", recover_lengths);
    let dbn_kept = filtered(second.as_path(), "dbn", false);
    let kept_rows = itch_kept.bbo.lines().count();
    assert!(
        1 < kept_rows && kept_rows < itch_csv.bbo.lines().count(),
        "{name}: the filter keeps some rows, not all ({kept_rows})"
    );
    assert_eq!(
        itch_kept.book, dbn_kept.book,
        "{name}: filtered final depth"
    );
    assert_same_lines(
        &itch_kept.bbo,
        &dbn_kept.bbo,
        &format!("{name}: filtered top of book"),
    );
    assert_same_lines(
        &itch_kept.sample,
        &dbn_kept.sample,
        &format!("{name}: filtered sampled depth"),
    );

    if let (Some(pyarrow), Some(parquet)) = (pyarrow, &dbn_csv.parquet) {
        let out = util::oracle::run(pyarrow, "parquet_dump.py", &[parquet, &second], &[]);
        let got: Vec<&str> = out.lines().skip(1).collect();
        let want: Vec<&str> = itch_csv.bbo.lines().skip(1).collect();
        assert_eq!(
            got.len(),
            want.len(),
            "{name}: Parquet rows from the DBN input"
        );
        for (i, (got, want)) in got.iter().zip(&want).enumerate() {
            assert_eq!(got, want, "{name}: Parquet row {i} from the DBN input");
        }
    }
}

/// `got` is `want` byte for byte; on failure names the first differing line.
fn assert_same_lines(want: &str, got: &str, what: &str) {
    if want == got {
        return;
    }
    let (w, g): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    let at = w.iter().zip(&g).position(|(a, b)| a != b);
    match at {
        Some(i) => panic!("{what}: line {i}: ITCH {:?}, DBN {:?}", w[i], g[i]),
        None => panic!("{what}: ITCH has {} lines, DBN {}", w.len(), g.len()),
    }
}

fn generated(dir: &Path, seed: u64, crossing: bool) -> PathBuf {
    let path = dir.join(format!("gen{seed}.itch"));
    util::write_generated(
        &path,
        GenConfig {
            messages: 40_000,
            seed,
            stocks: 5,
            hard_cases: true,
            crossing,
        },
    );
    path
}

#[test]
fn itch_to_dbn_through_databento_dbn_and_back_gives_the_same_outputs() {
    let test = "itch_to_dbn_through_databento_dbn_and_back_gives_the_same_outputs";
    let Some(python) = util::oracle::python_with(test, "databento_dbn", "databento-dbn") else {
        return;
    };
    let pyarrow = util::oracle::python_with(test, "pyarrow", "pyarrow");
    let dir = tempfile::tempdir().expect("tempdir");
    for (seed, crossing, zst) in [(3, false, false), (17, false, true), (29, true, false)] {
        let itch = generated(dir.path(), seed, crossing);
        let trip = Trip {
            itch: &itch,
            date: "2019-01-30",
            zst,
            recover_lengths: false,
            // A generated day spans under a second of ITCH time.
            sample: "10ms",
            pyarrow: if seed == 3 { pyarrow.as_deref() } else { None },
        };
        round_trip(&python, dir.path(), trip);
    }
    if let Some(data) = util::shared_data(test) {
        let itch = data.join("ritch/ex20101224.TEST_ITCH_50");
        assert!(itch.exists(), "{} is missing", itch.display());
        // The RITCH day file, whose length prefixes are zero: lengths come from the types.
        let trip = Trip {
            itch: &itch,
            date: "2010-12-24",
            zst: false,
            recover_lengths: true,
            sample: "1m",
            pyarrow: None,
        };
        round_trip(&python, dir.path(), trip);
    }
}
