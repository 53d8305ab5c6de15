//! Overload control allocates nothing per message, in normal service and in overload
//! service: a counting global allocator watches the book thread's work (apply, publish or
//! conflate, batch-end flushes, event fan-out to a fast and a slow subscriber) over well
//! over a million messages, alternating between the two modes.

use bytemuck::Zeroable;
use ticklane_engine::book::{Applier, NoBbo};
use ticklane_engine::book::{BookConfig, Books};
use ticklane_engine::overload::{
    Change, CodelConfig, OverloadConfig, RecvError, SheddingPublisher, StateSink, SubscriberConfig,
    SubscriberHub, Subscription,
};
use ticklane_engine::pipeline::Frame;
use ticklane_engine::publish::Publisher;
use ticklane_feed::capture::{CaptureReader, ReadOptions};
use ticklane_sim::GenConfig;
use ticklane_testkit::counting_alloc::{start_counting, stop_counting};

use crate::util;

const WARM_UP: u64 = 50_000;
const MEASURED: u64 = 1_200_000;
/// Messages per phase: normal service, then a standing queue, and again.
const PHASE: u64 = 100_000;
const BATCH: u64 = 64;

/// A sink that only counts (the snapshot's own zero-allocation is tested with the writer).
#[derive(Default)]
struct CountingSink {
    published: u64,
}

impl StateSink for CountingSink {
    fn publish_state(&mut self, _: &Books, _: &Change) -> bool {
        self.published += 1;
        true
    }
}

fn drain(sub: &mut Subscription) -> u64 {
    let mut n = 0;
    loop {
        match sub.try_recv() {
            Ok(_) => n += 1,
            Err(RecvError::Empty) => return n,
            Err(e) => panic!("subscriber ended: {e}"),
        }
    }
}

#[test]
fn overload_control_allocates_nothing_per_message_in_either_mode() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("day.itch50");
    util::write_generated(
        &file,
        GenConfig {
            messages: WARM_UP + MEASURED,
            seed: 11,
            stocks: 50,
            hard_cases: true,
            crossing: true,
        },
    );
    let (hub, fanout) = SubscriberHub::new(SubscriberConfig::default());
    let mut fast = hub.subscribe();
    let mut slow = hub.subscribe();
    let config = OverloadConfig {
        codel: CodelConfig {
            target_ns: 1_000,
            interval_ns: 10_000,
        },
        ..OverloadConfig::default()
    };
    let mut publisher =
        SheddingPublisher::new(CountingSink::default(), config).with_subscribers(fanout);
    let mut applier: Applier<NoBbo> = Applier::new(
        BookConfig {
            max_orders: 1 << 20,
            max_books: 256,
            levels_per_side: 4096,
        },
        None,
    )
    .expect("books fit");
    let mut reader = CaptureReader::open(&file, ReadOptions::default()).expect("open");
    let mut frame = Frame::zeroed();
    let (mut overloaded_batches, mut normal_batches, mut received) = (0u64, 0u64, 0u64);
    while let Some(raw) = reader.next_message().expect("valid file") {
        if raw.index == WARM_UP + 1 {
            start_counting();
        }
        // Simulated time: 1 µs per message; frames wait 50 µs in odd phases.
        let now = raw.index * 1_000;
        let standing = (raw.index / PHASE) % 2 == 1;
        let sojourn = if standing { 50_000 } else { 0 };
        assert!(frame.set_message(raw.bytes, raw.index, now - sojourn, 0));
        let applied = applier
            .step_with(raw.index, frame.message(), |b, m| {
                publisher.before_apply(b, m)
            })
            .expect("valid message");
        publisher.publish(applier.books(), &applied, frame.arrival(), now);
        if raw.index % BATCH == 0 {
            publisher.batch_end(applier.books(), now);
            if publisher.is_overloaded() {
                overloaded_batches += 1;
            } else {
                normal_batches += 1;
            }
            received += drain(&mut fast);
            // The slow consumer reads a sixteenth as often.
            if raw.index % (BATCH * 16) == 0 {
                received += drain(&mut slow);
            }
            if !standing && raw.index % PHASE == PHASE - BATCH {
                publisher.drained(applier.books(), now);
            }
        }
    }
    let allocations = stop_counting();
    let counters = publisher.counters();
    assert!(
        overloaded_batches > 1_000 && normal_batches > 1_000,
        "both modes ran"
    );
    assert!(
        counters.shed > 100_000 && counters.conflated > 10_000,
        "{counters:?}"
    );
    assert!(received > 1_000_000, "events flowed: {received}");
    assert_eq!(counters.consumers_cut, 0);
    assert_eq!(
        allocations, 0,
        "allocations over {MEASURED} messages after warm-up"
    );
}
