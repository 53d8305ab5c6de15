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
    /// Spin a little, then yield the core: the default, sane on a 2-core machine.
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
/// The nap of a parked stage: bounds the latency a parked stage adds.
const NAP: Duration = Duration::from_micros(50);

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
        match self.strategy {
            WaitStrategy::BusySpin => std::hint::spin_loop(),
            _ if self.idle < SPINS => std::hint::spin_loop(),
            WaitStrategy::SpinYield => thread::yield_now(),
            WaitStrategy::Park => thread::park_timeout(NAP),
        }
    }

    /// The stage did work: spin again before giving the core away next time.
    #[inline(always)]
    pub fn reset(&mut self) {
        self.idle = 0;
    }
}
