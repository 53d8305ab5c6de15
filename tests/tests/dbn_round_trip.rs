//! The round trip of issue 12, item 2, through code ticklane did not write: ITCH →
//! `replay --dbn-out x.mbo.dbn --schema mbo` → read by Databento's own Python package and
//! written again by its encoder (`tests/oracle/dbn_rewrite.py`: metadata and every record
//! rebuilt from decoded fields, then `databento_dbn.Transcoder`) → `replay x2.dbn`. The final
//! depth (`--book-out`, every level) must be byte-identical to the ITCH replay's, and the
//! top-of-book stream row for row the same: the DBN replay stamps `timestamp_ns` in ns since
//! the Unix epoch, so its rows are compared after taking off the session's New York
//! midnight (a constant from `date`, not from ticklane), every other field as text.
//!
//! Inputs: generated days with the hard cases on, several seeds, one of them with crossing
//! flow and written zstd-compressed on the way back; and the shared ITCH file when
//! `../shared/data` is there. Without a Python that imports `databento_dbn` the test fails
//! under `CI=true` and otherwise skips loudly.

mod util;

use std::fs;
use std::path::{Path, PathBuf};

use ticklane_engine::book::BookConfig;
use ticklane_engine::dbn_out::{DbnOutOptions, DbnSchema, SessionDate};
use ticklane_engine::replay::{replay_file, ReplayOptions};
use ticklane_feed::sim::GenConfig;

/// 2019-01-30 00:00 America/New_York, from `TZ=America/New_York date -d '2019-01-30 00:00' +%s`.
const MIDNIGHT_2019_01_30_NS: u64 = 1_548_824_400 * 1_000_000_000;
/// 2010-12-24 00:00 America/New_York, from `TZ=America/New_York date -d '2010-12-24 00:00' +%s`.
const MIDNIGHT_2010_12_24_NS: u64 = 1_293_166_800 * 1_000_000_000;

const BOOKS: BookConfig = BookConfig {
    max_orders: 1 << 20,
    max_books: 1024,
    levels_per_side: 4096,
};

/// The CSV outputs of one replay.
struct Csv {
    bbo: String,
    book: String,
}

/// Replays `input` with `--bbo-out`, `--book-out --depth 100000` and, if given, `--dbn-out`
/// (`recover_lengths` for a day file whose length prefixes are zeroed).
fn replay(
    input: &Path,
    dir: &Path,
    name: &str,
    dbn_out: Option<DbnOutOptions>,
    recover_lengths: bool,
) -> Csv {
    let bbo = dir.join(format!("{name}.bbo.csv"));
    let book = dir.join(format!("{name}.book.csv"));
    let outcome = replay_file(&ReplayOptions {
        input: input.to_path_buf(),
        bbo_out: Some(bbo.clone()),
        book_out: Some(book.clone()),
        depth: 100_000,
        books: BOOKS,
        dbn_out,
        recover_lengths,
        ..ReplayOptions::default()
    })
    .expect("replay runs");
    assert!(
        outcome.summary.error.is_none(),
        "{name}: {:?}",
        outcome.summary.error
    );
    Csv {
        bbo: fs::read_to_string(bbo).expect("read bbo"),
        book: fs::read_to_string(book).expect("read book"),
    }
}

/// How one round trip is run.
struct Trip<'a> {
    itch: &'a Path,
    /// The session date given to `--dbn-out`.
    date: &'a str,
    /// That date's New York midnight, ns since the epoch.
    midnight_ns: u64,
    /// Write the second DBN zstd-compressed.
    zst: bool,
    /// The ITCH file's length prefixes are zeroed.
    recover_lengths: bool,
}

/// ITCH → DBN → databento-dbn → DBN → ticklane; asserts books and top of book agree.
fn round_trip(python: &Path, dir: &Path, trip: Trip<'_>) {
    let Trip {
        itch,
        date,
        midnight_ns,
        zst,
        recover_lengths,
    } = trip;
    let name = itch.file_name().expect("a file name").to_string_lossy();
    let first = dir.join(format!("{name}.mbo.dbn"));
    let itch_csv = replay(
        itch,
        dir,
        &format!("{name}.itch"),
        Some(DbnOutOptions {
            path: first.clone(),
            schema: DbnSchema::Mbo,
            date: SessionDate::parse(date).expect("a valid date"),
        }),
        recover_lengths,
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
    let dbn_csv = replay(&second, dir, &format!("{name}.dbn"), None, false);

    assert!(
        itch_csv.book.lines().count() > 1,
        "{name}: the book has levels"
    );
    assert_eq!(
        itch_csv.book, dbn_csv.book,
        "{name}: final depth after the round trip"
    );

    let itch_rows: Vec<&str> = itch_csv.bbo.lines().collect();
    let dbn_rows: Vec<&str> = dbn_csv.bbo.lines().collect();
    assert_eq!(itch_rows[0], dbn_rows[0], "{name}: bbo header");
    assert!(itch_rows.len() > 100, "{name}: a real top-of-book stream");
    assert_eq!(itch_rows.len(), dbn_rows.len(), "{name}: top-of-book rows");
    for (i, (itch_row, dbn_row)) in itch_rows.iter().zip(&dbn_rows).enumerate().skip(1) {
        let mut dbn_fields: Vec<String> = dbn_row.split(',').map(str::to_owned).collect();
        let epoch_ns: u64 = dbn_fields[1].parse().expect("timestamp_ns");
        let since_midnight = epoch_ns.checked_sub(midnight_ns).unwrap_or_else(|| {
            panic!("{name}: row {i}: ts_event {epoch_ns} before the session's midnight")
        });
        dbn_fields[1] = since_midnight.to_string();
        assert_eq!(
            *itch_row,
            dbn_fields.join(","),
            "{name}: top-of-book row {i} (DBN timestamp less New York midnight)"
        );
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
fn itch_to_dbn_through_databento_dbn_and_back_gives_the_same_books() {
    let test = "itch_to_dbn_through_databento_dbn_and_back_gives_the_same_books";
    let Some(python) = util::oracle::python_with(test, "databento_dbn", "databento-dbn") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    for (seed, crossing, zst) in [(3, false, false), (17, false, true), (29, true, false)] {
        let itch = generated(dir.path(), seed, crossing);
        let trip = Trip {
            itch: &itch,
            date: "2019-01-30",
            midnight_ns: MIDNIGHT_2019_01_30_NS,
            zst,
            recover_lengths: false,
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
            midnight_ns: MIDNIGHT_2010_12_24_NS,
            zst: false,
            recover_lengths: true,
        };
        round_trip(&python, dir.path(), trip);
    }
}
