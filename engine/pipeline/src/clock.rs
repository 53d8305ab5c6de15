//! The pipeline's clock: nanoseconds since the pipeline started, read off the CPU's
//! time-stamp counter.
//!
//! A read of the monotonic clock (`clock_gettime` through the vDSO) costs 22–29 ns on the
//! 2-core VM this was written on; at one read per message that alone holds the pipeline near
//! 5 M msg/s per thread. The time-stamp counter is one instruction. [`quanta`] reads it where
//! the CPU's TSC is invariant (it checks `cpuid` once), calibrates its rate against the
//! monotonic clock once per process, and falls back to the monotonic clock elsewhere, so the
//! figures keep their meaning on any machine.
//!
//! Two ways to read it:
//! - [`Clock::now_ns`]: a reading in nanoseconds (a counter read plus a multiply and a shift).
//! - [`Clock::ticks`] then [`Clock::ns_of`]: the raw counter now, converted later (by the
//!   consumer, or once per batch), for the spots where even the conversion is too much.
//!
//! Hot stages read it once per received packet or per batch of messages, not per message:
//! see what each stamp marks in [`crate::Frame::recv_ns`] and the book stage.

use std::sync::OnceLock;
use std::time::Instant;

/// The process's counter clock: calibrated once, on first use (a few milliseconds).
static COUNTER: OnceLock<quanta::Clock> = OnceLock::new();

/// A raw reading of the time-stamp counter: ticks at the CPU's rate, not nanoseconds. Only
/// [`Clock::ns_of`] gives it a meaning.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Ticks(pub u64);

/// A monotonic clock shared (by copy) between the stages, so their stamps compare.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    counter: &'static quanta::Clock,
    /// The counter at the clock's zero.
    epoch_ticks: u64,
    /// The monotonic clock at the clock's zero (for code that mixes in `Instant`s).
    epoch: Instant,
}

impl Clock {
    /// A clock whose zero is now.
    pub fn start() -> Self {
        let counter = COUNTER.get_or_init(quanta::Clock::new);
        Clock {
            counter,
            epoch_ticks: counter.raw(),
            epoch: Instant::now(),
        }
    }

    /// Nanoseconds since the clock started (never 0, so 0 can mean "not stamped").
    #[inline(always)]
    pub fn now_ns(&self) -> u64 {
        self.ns_of(self.ticks())
    }

    /// The counter now, unconverted: the cheapest reading there is.
    #[inline(always)]
    pub fn ticks(&self) -> Ticks {
        Ticks(self.counter.raw())
    }

    /// `ticks` as nanoseconds since the clock started (never 0). A reading from before the
    /// clock's zero (another core's counter a few ticks behind) counts as its zero.
    #[inline(always)]
    pub fn ns_of(&self, ticks: Ticks) -> u64 {
        self.counter.delta_as_nanos(self.epoch_ticks, ticks.0) + 1
    }

    /// The instant the clock started.
    pub fn epoch(&self) -> Instant {
        self.epoch
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn readings_never_go_back_and_are_never_zero() {
        let clock = Clock::start();
        let mut last = clock.now_ns();
        assert!(last >= 1);
        for _ in 0..100_000 {
            let now = clock.now_ns();
            assert!(now >= last, "{now} after {last}");
            last = now;
        }
        assert_eq!(
            clock.ns_of(Ticks(0)),
            1,
            "before the zero reads as the zero"
        );
    }

    #[test]
    fn a_late_conversion_gives_the_reading_it_was_taken_at() {
        let clock = Clock::start();
        let before = clock.now_ns();
        let ticks = clock.ticks();
        let after = clock.now_ns();
        std::thread::sleep(Duration::from_millis(2));
        let converted = clock.ns_of(ticks);
        assert!(
            (before..=after).contains(&converted),
            "{before} <= {converted} <= {after}"
        );
    }

    #[test]
    fn it_keeps_pace_with_the_monotonic_clock() {
        // The oracle is std's monotonic clock, which the counter was calibrated against; a
        // sleep's length is the monotonic clock's, whatever the machine's load.
        // A preempted test thread can pull the paired reads apart, so the closest of a few
        // tries counts.
        let clock = Clock::start();
        let closest = (0..5)
            .map(|_| {
                let (i0, c0) = (Instant::now(), clock.now_ns());
                std::thread::sleep(Duration::from_millis(20));
                let (c1, i1) = (clock.now_ns(), Instant::now());
                let mono = i1.duration_since(i0).as_nanos() as u64;
                ((c1 - c0).abs_diff(mono) as f64 / mono as f64, c1 - c0, mono)
            })
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .expect("invariant: five tries");
        // Within 1%: calibration error is far smaller; the slack is for the reads.
        assert!(
            closest.0 <= 0.01,
            "counted {} ns, monotonic {} ns",
            closest.1,
            closest.2
        );
    }
}
