//! How a stage waits when its ring is empty (or full): busy-spin on dedicated cores,
//! spin-then-yield or park where cores are shared.

use std::str::FromStr;
use std::thread;
use std::time::Duration;

/// The waiting policy of a pipeline stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum WaitStrategy {
    /// Never give the core away: lowest latency, needs a dedicated core per stage.
    BusySpin,
    /// Spin a little, then yield the core; idle for longer than some milliseconds, nap as
    /// [`WaitStrategy::Park`] does: the default, sane on a 2-core machine.
    #[default]
    SpinYield,
    /// Spin a little, then sleep in short naps: least CPU, most latency.
    Park,
}

impl FromStr for WaitStrategy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "busy-spin" | "spin" => Ok(WaitStrategy::BusySpin),
            "spin-yield" | "yield" => Ok(WaitStrategy::SpinYield),
            "park" | "sleep" => Ok(WaitStrategy::Park),
            other => Err(format!(
                "unknown wait strategy {other:?} (busy-spin, spin-yield, park)"
            )),
        }
    }
}

/// Polls that spin before yielding or parking.
const SPINS: u32 = 256;
/// Yields a spin-yield stage makes in a row before it naps instead. A yield is a system call
/// of about a microsecond, so this is some 10-20 ms of idleness: a burst's gaps are still
/// bridged by yields, but a line quiet for seconds (before the open, a paced replay's pause)
/// no longer keeps a core busy in the kernel (`--pace recorded` across an hour-long pause in
/// its file: 53 s of system time in 60 s).
const YIELDS: u32 = 20_000;
/// The nap of a parked stage: bounds the latency a parked stage adds.
const NAP: Duration = Duration::from_micros(50);

/// What one wait does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Spin,
    Yield,
    Nap,
}

/// The step of a stage following `strategy` at its `idle`th empty poll in a row.
fn step(strategy: WaitStrategy, idle: u32) -> Step {
    match strategy {
        WaitStrategy::BusySpin => Step::Spin,
        _ if idle < SPINS => Step::Spin,
        WaitStrategy::SpinYield if idle < SPINS + YIELDS => Step::Yield,
        WaitStrategy::SpinYield | WaitStrategy::Park => Step::Nap,
    }
}

/// A stage's waiting state: call [`Waiter::wait`] after each empty poll and
/// [`Waiter::reset`] after each useful one.
#[derive(Debug)]
pub struct Waiter {
    strategy: WaitStrategy,
    idle: u32,
}

impl Waiter {
    /// A waiter following `strategy`.
    pub fn new(strategy: WaitStrategy) -> Self {
        Waiter { strategy, idle: 0 }
    }

    /// Waits once, according to the strategy and how long the stage has been idle.
    #[inline]
    pub fn wait(&mut self) {
        self.idle = self.idle.saturating_add(1);
        match step(self.strategy, self.idle) {
            Step::Spin => std::hint::spin_loop(),
            Step::Yield => thread::yield_now(),
            Step::Nap => thread::park_timeout(NAP),
        }
    }

    /// The stage did work: spin again before giving the core away next time.
    #[inline(always)]
    pub fn reset(&mut self) {
        self.idle = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_strategy_spins_first_and_only_busy_spin_never_gives_the_core_away() {
        for strategy in [WaitStrategy::SpinYield, WaitStrategy::Park] {
            assert_eq!(step(strategy, 1), Step::Spin);
            assert_eq!(step(strategy, SPINS - 1), Step::Spin);
        }
        assert_eq!(step(WaitStrategy::BusySpin, u32::MAX), Step::Spin);
        assert_eq!(step(WaitStrategy::Park, SPINS), Step::Nap);
    }

    #[test]
    fn spin_yield_naps_once_idle_for_long() {
        assert_eq!(step(WaitStrategy::SpinYield, SPINS), Step::Yield);
        assert_eq!(
            step(WaitStrategy::SpinYield, SPINS + YIELDS - 1),
            Step::Yield
        );
        assert_eq!(step(WaitStrategy::SpinYield, SPINS + YIELDS), Step::Nap);
        assert_eq!(step(WaitStrategy::SpinYield, u32::MAX), Step::Nap);
    }
}
