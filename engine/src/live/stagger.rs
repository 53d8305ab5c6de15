//! Staggered start: engines started together (one per host or partition)
//! must not herd the exchange's login and retransmission servers. Each waits
//! `min(index × step, cap)` plus full jitter, uniform in `0 .. step`, before its line's first
//! connect or first packet; health says Starting meanwhile. The longest wait is therefore
//! `cap + step`, which the README states next to the health timeout that must cover it.
//!
//! The jitter is not optional: a name hashed to an index can collide with another's, and two
//! hosts configured with the same index would otherwise connect in the same millisecond.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ticklane_feed::rng::SplitMix64;

use crate::health::{Condition, Health};
use crate::snapshot::wall_clock_ns;

/// The longest single sleep while waiting, so that a stop is seen promptly.
const WAIT_SLICE: Duration = Duration::from_millis(10);

/// How long instance `index` waits before its first connect: `min(index × step, cap)` plus a
/// uniform draw in `0 .. step` from `seed`. Zero when `step` is zero.
pub fn stagger_delay(index: u64, step: Duration, cap: Duration, seed: u64) -> Duration {
    let step_ns = step.as_nanos().min(u128::from(u64::MAX)) as u64;
    if step_ns == 0 {
        return Duration::ZERO;
    }
    let cap_ns = cap.as_nanos().min(u128::from(u64::MAX)) as u64;
    let base = index.saturating_mul(step_ns).min(cap_ns);
    let jitter = SplitMix64::new(seed).below(step_ns);
    Duration::from_nanos(base.saturating_add(jitter))
}

/// A seed for the jitter that differs between processes even of the same instance: the
/// instance's own seed, the process id and the wall clock.
pub fn process_seed(instance_seed: u64) -> u64 {
    let pid = u64::from(std::process::id()).rotate_left(32);
    instance_seed ^ pid ^ wall_clock_ns()
}

/// Raises [`Condition::Starting`] on `health` (if given), then waits `delay` unless `stop`
/// is set first: called before the line's sockets open, so that nothing is joined,
/// connected or buffered while the instance waits its turn. Returns whether the whole delay
/// passed (false: stopped).
pub fn stagger_start(health: Option<&Health>, delay: Duration, stop: &AtomicBool) -> bool {
    if let Some(h) = health {
        h.raise(Condition::Starting, wall_clock_ns());
    }
    wait_out_stagger(delay, stop)
}

/// Waits `delay`, in slices, unless `stop` is set first. Returns whether the whole delay
/// passed (false: stopped).
pub fn wait_out_stagger(delay: Duration, stop: &AtomicBool) -> bool {
    let until = Instant::now() + delay;
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= until {
            return true;
        }
        std::thread::sleep((until - now).min(WAIT_SLICE));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn each_index_waits_its_steps_plus_less_than_one_step_of_jitter() {
        let (step, cap) = (100 * MS, 1_000 * MS);
        for index in 0..20u64 {
            for seed in 0..50u64 {
                let d = stagger_delay(index, step, cap, seed);
                // The base, by hand: index × 100 ms, at most 1 s.
                let base = Duration::from_millis((index * 100).min(1_000));
                assert!(d >= base && d < base + step, "index {index}: {d:?}");
            }
        }
    }

    #[test]
    fn the_jitter_is_the_seeded_draw_so_equal_indices_spread() {
        let (step, cap) = (100 * MS, 1_000 * MS);
        // The draw, by the generator the jitter uses (SplitMix64's `below`).
        let expected = 300_000_000 + SplitMix64::new(42).below(100_000_000);
        assert_eq!(
            stagger_delay(3, step, cap, 42),
            Duration::from_nanos(expected)
        );
        // Two processes of index 3 with different seeds: different waits.
        let waits: std::collections::HashSet<Duration> =
            (0..10).map(|s| stagger_delay(3, step, cap, s)).collect();
        assert!(waits.len() >= 9, "{waits:?}");
    }

    #[test]
    fn no_step_no_wait_and_a_zero_cap_leaves_only_jitter() {
        assert_eq!(stagger_delay(5, Duration::ZERO, 10 * MS, 1), Duration::ZERO);
        let d = stagger_delay(1_000, 10 * MS, Duration::ZERO, 1);
        assert!(d < 10 * MS, "{d:?}");
        // Huge values saturate rather than overflow.
        let d = stagger_delay(u64::MAX, 60_000 * MS, 600_000 * MS, 7);
        assert!(d >= 600_000 * MS && d < 660_000 * MS, "{d:?}");
    }

    #[test]
    fn a_stop_ends_the_wait() {
        let stop = AtomicBool::new(true);
        assert!(!wait_out_stagger(Duration::from_secs(3600), &stop));
        assert!(wait_out_stagger(Duration::ZERO, &AtomicBool::new(false)));
    }
}
