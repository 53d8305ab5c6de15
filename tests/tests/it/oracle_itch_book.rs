//! Cross-check against an independent ITCH implementation: itch-book (PyPI), run by
//! `tests/oracle/itch_book_oracle.py` in the virtual environment `.ci/run` builds.
//!
//! On generated days (several seeds, over a million messages in all, every hard case the
//! generator has) ticklane's top-of-book stream and final depth must equal itch-book's row
//! for row. Where the two define different things, only what both define is compared:
//! itch-book sums level sizes in 32 bits (so quantities are compared modulo 2^32 on files
//! whose levels pass 2^32) and emits top-of-book rows on price or size changes only (so
//! ticklane's stream is reduced by that rule first, see `compare.py`). Reference 0, adds
//! onto live references and zero prices, where the two disagree by design, never occur in
//! these files; `book_model.rs` covers them against ticklane's own model.
//!
//! How the oracle is found, and when a missing one fails or skips: `util::oracle`.

use std::path::Path;

use ticklane_engine::book::BookConfig;
use ticklane_engine::replay::{replay_file, ReplayOptions, ReplaySummary};
use ticklane_sim::GenConfig;

use crate::util;

fn cross_check(
    python: &Path,
    dir: &Path,
    name: &str,
    config: GenConfig,
    depth: usize,
) -> ReplaySummary {
    let file = dir.join(format!("{name}.itch50"));
    util::write_generated(&file, config);
    let ours_bbo = dir.join(format!("{name}.ours.bbo.csv"));
    let ours_book = dir.join(format!("{name}.ours.book.csv"));
    let outcome = replay_file(&ReplayOptions {
        input: file.clone(),
        bbo_out: Some(ours_bbo.clone()),
        book_out: Some(ours_book.clone()),
        depth,
        books: BookConfig {
            max_orders: 1 << 20,
            max_books: 1024,
            levels_per_side: 4096,
        },
        ..ReplayOptions::default()
    })
    .expect("replay runs");
    assert!(
        outcome.summary.error.is_none(),
        "{:?}",
        outcome.summary.error
    );
    assert_eq!(outcome.summary.messages, config.messages);
    let theirs_bbo = dir.join(format!("{name}.theirs.bbo.csv"));
    let theirs_book = dir.join(format!("{name}.theirs.book.csv"));
    let depth_arg = depth.to_string();
    let bbo_flag = Path::new("--bbo-out");
    let book_flag = Path::new("--book-out");
    let depth_flag = Path::new("--depth");
    util::oracle::run(
        python,
        "itch_book_oracle.py",
        &[
            &file,
            bbo_flag,
            &theirs_bbo,
            book_flag,
            &theirs_book,
            depth_flag,
            Path::new(&depth_arg),
        ],
        &[],
    );
    let extra: &[&str] = if config.hard_cases { &["--mod32"] } else { &[] };
    let verdict = util::oracle::run(
        python,
        "compare.py",
        &[&ours_bbo, &theirs_bbo, &ours_book, &theirs_book],
        extra,
    );
    println!("{name}: {}", verdict.trim());
    assert!(verdict.contains("ORACLE OK"), "{verdict}");
    let rows = std::fs::read_to_string(&ours_bbo)
        .expect("bbo written")
        .lines()
        .count();
    assert!(
        rows > (config.messages / 20) as usize,
        "{name}: a day this long moves the top often"
    );
    outcome.summary
}

/// True if some top-of-book quantity in the stream passed 2^32.
fn some_level_passed_2_32(summary_name: &str, dir: &Path) -> bool {
    let text =
        std::fs::read_to_string(dir.join(format!("{summary_name}.ours.bbo.csv"))).expect("bbo");
    text.lines().skip(1).any(|line| {
        let f: Vec<&str> = line.split(',').collect();
        [5, 8]
            .iter()
            .any(|&i| f[i].parse::<u64>().is_ok_and(|q| q >= 1 << 32))
    })
}

#[test]
fn top_of_book_and_depth_equal_itch_book() {
    let Some(python) = util::oracle::python("top_of_book_and_depth_equal_itch_book") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let base = GenConfig {
        messages: 200_000,
        seed: 1,
        stocks: 10,
        hard_cases: false,
        crossing: false,
    };
    // Plain flow; then every hard case; then crossing flow; then a long day.
    cross_check(&python, dir.path(), "plain", base, 10);
    let hard = cross_check(
        &python,
        dir.path(),
        "hard",
        GenConfig {
            seed: 2,
            hard_cases: true,
            ..base
        },
        10,
    );
    // The hard cases must really be there, or the comparison proves less than it says.
    assert!(
        hard.book.unknown_refs > 0,
        "a mid-day start names unknown orders"
    );
    assert!(hard.book.clamped > 0, "over-sized executions are clamped");
    assert!(
        some_level_passed_2_32("hard", dir.path()),
        "a level's shares pass 2^32"
    );
    let crossing = cross_check(
        &python,
        dir.path(),
        "crossing",
        GenConfig {
            seed: 3,
            hard_cases: true,
            crossing: true,
            ..base
        },
        25,
    );
    assert!(
        crossing.book.crossed_events > 0,
        "crossing flow crosses books"
    );
    cross_check(
        &python,
        dir.path(),
        "long",
        GenConfig {
            messages: 1_000_000,
            seed: 4,
            stocks: 40,
            hard_cases: true,
            crossing: false,
        },
        10,
    );
}
