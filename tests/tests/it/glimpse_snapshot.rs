//! A GLIMPSE start is exact: the books built from the simulator's snapshot at a point of the
//! day (read through the feed's snapshot reader), then the live messages from the sequence
//! its End of Snapshot names, equal the books of the whole day replayed, at every depth.
//! The snapshot's state is the simulator's own model of the book rules, not the books', so
//! the two sides are computed apart. Both sides of the boundary are checked: starting the
//! live stream one message early (applying a cancel the snapshot already holds) or one late
//! (skipping an add the snapshot does not hold) gives other books. A snapshot that names
//! its stocks by symbol only (stock locate 0) gives the same books once the live stream has
//! named each locate, and says what still waits before it has.

use ticklane_engine::book::{Applier, NoBbo};
use ticklane_engine::csv::write_book_csv;
use ticklane_feed::glimpse::{SnapshotItem, SnapshotLoad};
use ticklane_sim::{glimpse_snapshot_as, DayState, MessageLog, SnapshotForm};

use crate::util::{books, log, replayed_book};

/// Levels per side compared: every level the generated days hold.
const DEPTH: usize = 4096;

/// Books from the snapshot taken before `next` and the live messages from `first_live` on
/// (to the end of the day), as `--book-out` CSV; and the sequence the snapshot's end named.
fn started_from_snapshot(
    log: &MessageLog,
    next: u64,
    first_live: impl Fn(u64) -> u64,
) -> (String, u64) {
    started_until(
        log,
        next,
        first_live,
        log.len() as u64,
        SnapshotForm::default(),
    )
    .0
}

/// [`started_from_snapshot`], applying the live messages up to `last` only, from a
/// snapshot sent in `form`; also the symbols and orders of it still waiting for a locate.
fn started_until(
    log: &MessageLog,
    next: u64,
    first_live: impl Fn(u64) -> u64,
    last: u64,
    form: SnapshotForm,
) -> ((String, u64), (usize, usize)) {
    let snapshot = glimpse_snapshot_as(log, next, form);
    let mut load = SnapshotLoad::new();
    let mut applier: Applier<NoBbo> = Applier::new(books(), None).expect("books");
    // As the book stage does between the line's "loading snapshot" and "live".
    applier.books_mut().set_loading_snapshot(true);
    let mut named = None;
    for seq in 1..=snapshot.len() as u64 {
        match load.accept(snapshot.get(seq).expect("in the snapshot")) {
            Ok(SnapshotItem::Apply(message)) => {
                applier.books_mut().apply(&message);
            }
            Ok(SnapshotItem::End { next_sequence }) => named = Some(next_sequence),
            Err(violation) => panic!("the simulator's snapshot: {violation}"),
        }
    }
    let named = named.expect("the snapshot ends with End of Snapshot");
    assert_eq!(load.violations(), 0);
    applier.books_mut().set_loading_snapshot(false);
    for seq in first_live(named)..=last {
        applier
            .step(seq, log.get(seq).expect("in the log"))
            .expect("valid message");
    }
    let csv = write_book_csv(applier.books(), DEPTH, Vec::new()).expect("csv");
    let waiting = applier.books().parked();
    ((String::from_utf8(csv).expect("ascii"), named), waiting)
}

/// As [`started_until`] to the end of the day, from a snapshot at locate 0.
fn started_at_locate_zero(log: &MessageLog, next: u64) -> (String, (usize, usize)) {
    let form = SnapshotForm {
        locate_zero: true,
        ..SnapshotForm::default()
    };
    let ((csv, _), waiting) = started_until(log, next, |named| named, log.len() as u64, form);
    (csv, waiting)
}

#[test]
fn a_snapshot_at_locate_zero_is_placed_as_the_live_stream_names_each_locate() {
    for seed in [3, 11] {
        let log = log(60_000, seed);
        let whole = replayed_book(&log, books(), DEPTH);
        let len = log.len() as u64;
        for next in [len / 10, len / 3, len / 2] {
            let (started, waiting) = started_at_locate_zero(&log, next);
            assert_eq!(
                waiting,
                (0, 0),
                "seed {seed}, {next}: every stock traded after"
            );
            assert!(
                started == whole,
                "seed {seed}: a start from the locate-0 snapshot before {next} departs from \
                 the whole day"
            );
        }
        // A snapshot after the last message: no live message names any locate, so its
        // orders wait, counted, and no book shows them.
        let (started, (symbols, orders)) = started_at_locate_zero(&log, len + 1);
        assert!(symbols > 0 && orders > 0, "seed {seed}: {symbols} {orders}");
        assert_eq!(
            started.lines().count(),
            1,
            "seed {seed}: the header, no book: {started}"
        );
    }
}

#[test]
fn books_from_a_snapshot_then_the_live_stream_equal_the_whole_day() {
    for seed in [3, 11] {
        let log = log(60_000, seed);
        let whole = replayed_book(&log, books(), DEPTH);
        let len = log.len() as u64;
        for next in [2, len / 10, len / 3, len / 2, len * 9 / 10, len, len + 1] {
            let (started, named) = started_from_snapshot(&log, next, |named| named);
            assert_eq!(named, next, "End of Snapshot names the first live sequence");
            assert!(
                started == whole,
                "seed {seed}: a start from the snapshot before {next} departs from the whole day"
            );
        }
    }
}

#[test]
fn the_first_live_message_is_the_one_end_of_snapshot_names() {
    let log = log(60_000, 5);
    let whole = replayed_book(&log, books(), DEPTH);
    // The first message after the middle that `wanted` picks, given the state before it.
    let first = |wanted: &dyn Fn(&DayState, &[u8]) -> bool| {
        let half = log.len() as u64 / 2;
        let mut state = DayState::after(&log, half - 1);
        (half..=log.len() as u64)
            .find(|&seq| {
                let message = log.get(seq).expect("in the log");
                let found = wanted(&state, message);
                state.apply(message);
                found
            })
            .expect("the day has one after its middle")
    };
    let order_ref = |m: &[u8]| u64::from_be_bytes(m[11..19].try_into().expect("8 bytes"));
    let shares = |m: &[u8]| u32::from_be_bytes(m[19..23].try_into().expect("4 bytes"));
    // The whole day's books after message `last`.
    let replayed_to = |last: u64| {
        let mut applier: Applier<NoBbo> = Applier::new(books(), None).expect("books");
        for seq in 1..=last {
            applier
                .step(seq, log.get(seq).expect("in the log"))
                .expect("valid message");
        }
        String::from_utf8(write_book_csv(applier.books(), DEPTH, Vec::new()).expect("csv"))
            .expect("ascii")
    };
    // A cancel (`X`) of part of a live order is in the snapshot taken after it: starting the
    // live stream one message early applies it twice, and its order has fewer shares left
    // than the day's books say right after it.
    let cancel = first(&|state, m| {
        m[0] == b'X'
            && state
                .open_shares(order_ref(m))
                .is_some_and(|open| open > shares(m))
    });
    let after_cancel = replayed_to(cancel);
    let plain = SnapshotForm::default();
    let ((exact, _), _) = started_until(&log, cancel + 1, |named| named, cancel, plain);
    assert_eq!(exact, after_cancel);
    let ((early, _), _) = started_until(&log, cancel + 1, |named| named - 1, cancel, plain);
    assert_ne!(
        early, after_cancel,
        "the cancel before the named sequence was applied twice"
    );
    // An add (`A`) of a new reference is the first live message of the snapshot taken before
    // it: starting one late skips it, and its order is missing.
    let add = first(&|state, m| m[0] == b'A' && state.open_shares(order_ref(m)).is_none());
    let after_add = replayed_to(add);
    let ((exact, _), _) = started_until(&log, add, |named| named, add, plain);
    assert_eq!(exact, after_add);
    let ((late, _), _) = started_until(&log, add, |named| named + 1, add, plain);
    assert_ne!(late, after_add, "the add at the named sequence was skipped");
    assert_eq!(started_from_snapshot(&log, add, |named| named).0, whole);
}
