//! The machine's own floor: how long one cache line takes to go from one core to the other.
//!
//! Two threads play ping-pong on two cache-line-padded counters; the pinger times each round
//! trip, and one way is half of it. No queue can hand a frame over faster than this, so the
//! ring hop is read against it, measured in the same run on the same cores.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::Instant;

use crossbeam_utils::CachePadded;
use hdrhistogram::Histogram;
use ticklane_engine::pipeline::{new_histogram, WaitStrategy, Waiter};

/// What the ping-pong measured.
pub struct Floor {
    /// One way (round trip / 2) of each round trip, nanoseconds; the clock read each round
    /// trip adds about half its own cost.
    pub one_way: Histogram<u64>,
    /// Mean one way over all round trips, timed as a whole (no clock read per trip).
    pub mean_one_way_ns: f64,
}

/// Plays `trips` round trips between this thread (pinned to `cores.0`, if given) and a
/// second one (pinned to `cores.1`), waiting with `wait`.
pub fn measure_floor(trips: u64, cores: Option<(usize, usize)>, wait: WaitStrategy) -> Floor {
    let ping = CachePadded::new(AtomicU64::new(0));
    let pong = CachePadded::new(AtomicU64::new(0));
    let barrier = Barrier::new(2);
    let mut one_way = new_histogram();
    let mut mean_one_way_ns = 0.0;
    // Both sides on threads of their own, so the caller's thread is never pinned (threads
    // started later would inherit its affinity).
    std::thread::scope(|scope| {
        scope.spawn(|| {
            crate::pin(cores.map(|c| c.1));
            let mut waiter = Waiter::new(wait);
            barrier.wait();
            for i in 1..=trips {
                while ping.load(Ordering::Acquire) != i {
                    waiter.wait();
                }
                waiter.reset();
                pong.store(i, Ordering::Release);
            }
        });
        scope.spawn(|| {
            crate::pin(cores.map(|c| c.0));
            let mut waiter = Waiter::new(wait);
            barrier.wait();
            let started = Instant::now();
            let mut last = started;
            for i in 1..=trips {
                ping.store(i, Ordering::Release);
                while pong.load(Ordering::Acquire) != i {
                    waiter.wait();
                }
                waiter.reset();
                let now = Instant::now();
                one_way.saturating_record(((now - last).as_nanos() as u64 / 2).max(1));
                last = now;
            }
            mean_one_way_ns = started.elapsed().as_nanos() as f64 / trips.max(1) as f64 / 2.0;
        });
    });
    Floor {
        one_way,
        mean_one_way_ns,
    }
}

/// The mean cost of one clock read (`Instant::now`), over `reads` reads: every latency
/// here is the difference of two reads, so each carries about one read's cost, and the
/// floor's one way half of one.
pub fn clock_read_ns(reads: u64) -> f64 {
    let started = Instant::now();
    let mut last = started;
    for _ in 0..reads {
        last = std::hint::black_box(Instant::now());
    }
    (last - started).as_nanos() as f64 / reads.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_every_round_trip() {
        let floor = measure_floor(1_000, None, WaitStrategy::SpinYield);
        assert_eq!(floor.one_way.len(), 1_000);
        assert!(floor.mean_one_way_ns > 0.0);
        assert!(clock_read_ns(1_000) > 0.0);
    }
}
