//! The pipeline's clock: nanoseconds since the pipeline started, from the monotonic clock.

use std::time::Instant;

/// A monotonic clock shared (by copy) between the stages, so their stamps compare.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    epoch: Instant,
}

impl Clock {
    /// A clock whose zero is now.
    pub fn start() -> Self {
        Clock {
            epoch: Instant::now(),
        }
    }

    /// Nanoseconds since the clock started (never 0, so 0 can mean "not stamped").
    #[inline(always)]
    pub fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64 + 1
    }

    /// The instant the clock started.
    pub fn epoch(&self) -> Instant {
        self.epoch
    }
}
