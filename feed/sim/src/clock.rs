//! The simulator's sense of time, injectable: the live stream and the SoupBinTCP server
//! read the time and wait through a [`SimClock`], so a test can run them in virtual time
//! and check their timing exactly, whatever else the machine is doing.
//!
//! [`MonotonicClock`] is the real one. Its waits are bounded steps (a sleep of at most a
//! few milliseconds, or one spin), so a caller that loops on them notices a stop request or
//! a heartbeat deadline within a few milliseconds however long the wait. The test-only
//! `VirtualClock` never sleeps: a wait moves its time straight to the deadline.

use std::time::{Duration, Instant};

use crate::WaitStrategy;

/// The longest single sleep: bounds how late a stop request or heartbeat is noticed.
const MAX_SLEEP_SLICE: Duration = Duration::from_millis(5);

/// Where a sender reads the time and how it waits for a moment.
pub(crate) trait SimClock {
    /// The time now.
    fn now(&self) -> Instant;

    /// Moves toward `deadline`: it may return before it (the real clock waits one bounded
    /// step), so callers loop until [`SimClock::now`] reaches it. Returns at once once
    /// `deadline` has passed.
    fn sleep_until(&self, deadline: Instant);
}

/// The machine's monotonic clock, waiting as its [`WaitStrategy`] says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MonotonicClock {
    wait: WaitStrategy,
}

impl MonotonicClock {
    pub(crate) fn new(wait: WaitStrategy) -> Self {
        MonotonicClock { wait }
    }
}

impl SimClock for MonotonicClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn sleep_until(&self, deadline: Instant) {
        let Some(left) = deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
        else {
            return;
        };
        match self.wait {
            WaitStrategy::Spin => std::hint::spin_loop(),
            WaitStrategy::SpinThenSleep { spin } if left > spin => {
                std::thread::sleep((left - spin).min(MAX_SLEEP_SLICE));
            }
            WaitStrategy::SpinThenSleep { .. } => std::thread::yield_now(),
        }
    }
}

#[cfg(test)]
pub(crate) use virtual_clock::VirtualClock;

#[cfg(test)]
mod virtual_clock {
    use std::cell::Cell;
    use std::rc::Rc;
    use std::time::{Duration, Instant};

    use super::SimClock;

    /// Time that moves only when someone waits: [`SimClock::sleep_until`] sets it to the
    /// deadline at once. Clones share one time, so a test's recorder stamps what the
    /// sender does with the sender's own clock. Single-threaded (`!Send`): the test drives
    /// the sender on its own thread.
    #[derive(Clone, Debug)]
    pub(crate) struct VirtualClock {
        origin: Instant,
        elapsed: Rc<Cell<Duration>>,
    }

    impl VirtualClock {
        /// A clock at virtual time zero.
        pub(crate) fn new() -> Self {
            VirtualClock {
                origin: Instant::now(),
                elapsed: Rc::new(Cell::new(Duration::ZERO)),
            }
        }

        /// Virtual time since the clock was made.
        pub(crate) fn elapsed(&self) -> Duration {
            self.elapsed.get()
        }
    }

    impl SimClock for VirtualClock {
        fn now(&self) -> Instant {
            self.origin + self.elapsed.get()
        }

        fn sleep_until(&self, deadline: Instant) {
            let target = deadline.saturating_duration_since(self.origin);
            self.elapsed.set(self.elapsed.get().max(target));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_clock_reaches_a_near_deadline() {
        let clock = MonotonicClock::new(WaitStrategy::default());
        let deadline = clock.now() + Duration::from_micros(300);
        let mut steps = 0;
        while clock.now() < deadline {
            clock.sleep_until(deadline);
            steps += 1;
            assert!(steps < 1_000_000, "sleep_until never reached the deadline");
        }
    }

    #[test]
    fn virtual_clock_jumps_to_the_deadline_and_never_back() {
        let clock = VirtualClock::new();
        let start = clock.now();
        let shared = clock.clone();
        clock.sleep_until(start + Duration::from_millis(7));
        assert_eq!(shared.elapsed(), Duration::from_millis(7));
        assert_eq!(shared.now(), start + Duration::from_millis(7));
        // A deadline already passed leaves the time where it is.
        clock.sleep_until(start + Duration::from_millis(3));
        assert_eq!(clock.elapsed(), Duration::from_millis(7));
    }
}
