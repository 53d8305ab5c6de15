//! Behaviour of overload service on the book thread: a standing input queue switches
//! publication to newest-first with conflation, a drained one switches back, a short burst
//! does neither, trades are never conflated, and the snapshot says who is behind.

use ticklane_engine::overload::{CodelConfig, OverloadConfig, SheddingPublisher, SnapshotSink};
use ticklane_engine::snapshot::{SnapshotReader, SnapshotWriter};
use ticklane_feed::itch::Locate;

use crate::util::overload::{add, directory, execute, halt, Driver, RecordingSink, Seen};

/// 1 µs target over a 10 µs interval; deadline and budget out of the way unless a test
/// wants them.
fn config() -> OverloadConfig {
    OverloadConfig {
        codel: CodelConfig {
            target_ns: 1_000,
            interval_ns: 10_000,
        },
        deadline_ns: u64::MAX,
        publish_budget_ns: u64::MAX,
        ..OverloadConfig::default()
    }
}

fn driver() -> Driver<RecordingSink> {
    let mut d = Driver::new(SheddingPublisher::new(RecordingSink::default(), config()));
    for locate in 1..=4 {
        d.step(&directory(locate, &format!("S{locate}")), 1, 0);
    }
    d
}

#[test]
fn a_standing_queue_switches_to_newest_first_and_a_drained_one_switches_back() {
    let mut d = driver();
    let before = d.publisher.sink().published().len();
    // Waits of 5 µs (above target) from t = 100 µs on.
    let mut t = 100_000;
    for (i, locate) in [1u16, 2, 3].into_iter().enumerate() {
        assert!(d.step(&add(locate, i as u64 + 1, b'B', 100, 10_000), t, 5_000));
        t += 4_000;
    }
    // 12 µs of waits above target: one more frame and the queue stands.
    assert!(!d.publisher.is_overloaded());
    assert!(
        !d.step(&add(4, 4, b'B', 100, 10_000), t, 5_000),
        "shed once standing"
    );
    assert!(d.publisher.is_overloaded());
    // Changes to 1, 2, 3, 4, then 1 again: newest first is 1, 4, 3, 2.
    for (n, locate) in [1u16, 2, 3, 1].into_iter().enumerate() {
        t += 1_000;
        assert!(!d.step(&add(locate, 10 + n as u64, b'S', 100, 20_000), t, 5_000));
    }
    assert_eq!(d.publisher.pending(), 4);
    d.batch_end(t);
    let published: Vec<_> = d.publisher.sink().published()[before + 3..]
        .iter()
        .map(|(c, _)| c.locate.0)
        .collect();
    assert_eq!(published, [1, 3, 2, 4], "newest first, each once");
    // The queue drains: normal service, each change at its turn.
    t += 1_000;
    d.drained(t);
    assert!(!d.publisher.is_overloaded());
    assert!(d.step(&add(2, 99, b'B', 1, 9_000), t + 100, 10));
    let counters = d.publisher.counters();
    assert_eq!(counters.overload_episodes, 1);
    assert_eq!(counters.shed, 5);
    assert_eq!(counters.conflated, 1);
    assert!(counters.overload_ns > 0);
}

#[test]
fn a_burst_shorter_than_the_interval_keeps_service_in_order() {
    let mut d = driver();
    let before = d.publisher.sink().published().len();
    let mut t = 100_000;
    let mut order_ref = 0;
    for _ in 0..50 {
        // 9 µs of long waits, then one short wait: a burst that clears inside an interval.
        for locate in 1..=3u16 {
            order_ref += 1;
            assert!(d.step(&add(locate, order_ref, b'B', 10, 10_000), t, 50_000));
            t += 3_000;
        }
        order_ref += 1;
        assert!(d.step(&add(4, order_ref, b'B', 10, 10_000), t, 100));
        d.batch_end(t);
        t += 1_000;
    }
    assert!(!d.publisher.is_overloaded());
    assert_eq!(d.publisher.counters().overload_episodes, 0);
    assert_eq!(d.publisher.counters().shed, 0);
    let seqs: Vec<u64> = d.publisher.sink().published()[before..]
        .iter()
        .map(|(c, _)| c.feed_seq)
        .collect();
    assert_eq!(seqs.len(), 200);
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "in order");
}

#[test]
fn conflation_publishes_exactly_the_latest_state_and_trades_are_never_conflated() {
    let mut d = driver();
    // Stand the queue.
    d.step(&add(1, 1, b'B', 1_000, 10_000), 100_000, 5_000);
    d.step(&add(1, 2, b'S', 1_000, 10_100), 111_000, 5_000);
    assert!(d.publisher.is_overloaded());
    let before = d.publisher.sink().published().len();
    // Five executions of order 1 at t = 112..116 µs: five trades, one publication.
    for i in 0..5u64 {
        assert!(!d.step(&execute(1, 1, 100), 112_000 + i * 1_000, 5_000));
    }
    assert_eq!(
        d.publisher.sink().trades().len(),
        5,
        "every trade at its turn"
    );
    assert!(d.publisher.sink().trades().iter().all(|t| t.shares == 100));
    d.batch_end(117_000);
    let published = &d.publisher.sink().published()[before..];
    assert_eq!(published.len(), 1, "one publication for five changes");
    let (change, top) = published[0];
    assert_eq!(change.locate, Locate(1));
    assert_eq!(change.feed_seq, d.seq(), "the latest change");
    assert_eq!(change.changes, 6, "the add and the five executions");
    assert_eq!(change.first_ns, 111_000 - 5_000);
    assert_eq!(top, d.applier.books().top_of_book(Locate(1)));
    assert_eq!(top.bid.qty, 500);
    // A trading-state change is never shed, even while the queue stands.
    assert!(d.publisher.is_overloaded());
    assert!(d.step(&halt(1, b'H'), 118_000, 5_000));
}

#[test]
fn past_the_budget_the_rest_wait_marked_behind_and_the_drain_publishes_them() {
    let mut d = Driver::new(SheddingPublisher::new(
        RecordingSink::default(),
        OverloadConfig {
            publish_budget_ns: 0, // one publication per batch while the queue stands
            ..config()
        },
    ));
    d.step(&add(1, 1, b'B', 1, 10_000), 100_000, 5_000);
    d.step(&add(2, 2, b'B', 1, 10_000), 111_000, 5_000);
    for locate in 3..=6u16 {
        d.step(
            &add(locate, u64::from(locate), b'B', 1, 10_000),
            112_000,
            5_000,
        );
    }
    d.batch_end(113_000);
    // 2 (shed as the queue stood) and 3..=6 pending; the newest, 6, goes out.
    assert_eq!(d.publisher.pending(), 4, "one published, four waiting");
    let behind: Vec<_> = d
        .publisher
        .sink()
        .seen
        .iter()
        .filter_map(|s| match s {
            Seen::Behind(l, Some(age)) => Some((l.0, *age)),
            _ => None,
        })
        .collect();
    assert_eq!(behind.len(), 4);
    assert!(behind.contains(&(2, 113_000 - 106_000)));
    assert!(behind.contains(&(5, 113_000 - 107_000)));
    assert!(d
        .publisher
        .sink()
        .seen
        .iter()
        .any(|s| matches!(s, Seen::EngineBehind(7_000))));
    d.drained(114_000);
    assert_eq!(d.publisher.pending(), 0);
    let caught_up = d
        .publisher
        .sink()
        .seen
        .iter()
        .filter(|s| matches!(s, Seen::Behind(_, None)))
        .count();
    assert_eq!(caught_up, 4);
    assert_eq!(d.publisher.sink().seen.last(), Some(&Seen::EngineBehind(0)));
}

#[test]
fn an_update_past_its_deadline_is_deferred_counted_and_replaced_by_the_latest() {
    let mut d = Driver::new(SheddingPublisher::new(
        RecordingSink::default(),
        OverloadConfig {
            deadline_ns: 2_000,
            ..config()
        },
    ));
    assert!(d.step(&add(1, 1, b'B', 1, 10_000), 100_000, 100));
    // Late (3 µs > 2 µs deadline) but the queue does not stand: deferred, not published.
    assert!(!d.step(&add(1, 2, b'B', 5, 10_000), 101_000, 3_000));
    assert!(!d.step(&add(1, 3, b'B', 7, 10_000), 101_500, 3_000));
    assert!(!d.publisher.is_overloaded());
    d.batch_end(102_000);
    let last = *d.publisher.sink().published().last().expect("published");
    assert_eq!(last.1.bid.qty, 13, "the latest state");
    let c = d.publisher.counters();
    assert_eq!((c.shed, c.expired, c.conflated), (2, 1, 1));
}

#[test]
fn the_snapshot_slot_and_header_say_how_far_behind() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("books.snap");
    let writer = SnapshotWriter::create(&path, 16, 5).expect("snapshot");
    let mut d = Driver::new(SheddingPublisher::new(
        SnapshotSink::new(writer),
        OverloadConfig {
            publish_budget_ns: 0,
            ..config()
        },
    ));
    for locate in 1..=3 {
        d.step(&directory(locate, &format!("S{locate}")), 1, 0);
    }
    let reader = SnapshotReader::open(&path).expect("reader");
    d.step(&add(1, 1, b'B', 1, 10_000), 100_000, 5_000);
    d.step(&add(2, 2, b'B', 1, 10_000), 111_000, 5_000);
    d.step(&add(3, 3, b'B', 1, 10_000), 112_000, 5_000);
    d.batch_end(113_000);
    let flags: Vec<bool> = (0..3)
        .map(|slot| reader.read(slot).expect("slot").flags.is_behind())
        .collect();
    // 3 was published (newest), 2 waits; 1 went out before the queue stood.
    assert_eq!(flags, [false, true, false]);
    assert!(reader.read(1).expect("slot").behind_since_ns.is_some());
    assert!(reader.header().behind_ns >= 6_000);
    d.drained(114_000);
    assert!(!reader.read(1).expect("slot").flags.is_behind());
    assert_eq!(reader.header().behind_ns, 0);
}
