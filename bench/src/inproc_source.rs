//! A reader stage with no kernel in it: it plays a generated day from memory into the
//! pipeline at a fixed offered rate, stamping each frame with the time it was due
//! (`intended_ns`) and the time it was pushed (`recv_ns`), so the engine's latency is
//! measured without sockets and without coordinated omission.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use ticklane_engine::clock::Clock;
use ticklane_engine::pipeline::{Frame, FrameProducer, FrameSource, WaitStrategy, Waiter};
use ticklane_sim::MessageLog;

/// What the in-process source did.
#[derive(Clone, Copy, Debug, Default)]
pub struct InprocReport {
    /// Messages pushed.
    pub messages: u64,
    /// Messages pushed later than 1 µs after they were due (the source fell behind: the
    /// queue was full, or the core was taken away).
    pub late: u64,
}

/// Plays `log` at `rate` messages per second (`None`: as fast as the queue takes them).
pub struct InprocSource {
    log: Arc<MessageLog>,
    rate: Option<u64>,
    wait: WaitStrategy,
}

impl InprocSource {
    /// A source playing every message of `log` once, in order.
    pub fn new(log: Arc<MessageLog>, rate: Option<u64>, wait: WaitStrategy) -> Self {
        InprocSource { log, rate, wait }
    }
}

/// The clock reading at which message `index` (0-based) is due: `start + index / rate`.
#[inline]
pub fn due_ns(start_ns: u64, index: u64, per_second: u64) -> u64 {
    start_ns + (u128::from(index) * 1_000_000_000 / u128::from(per_second.max(1))) as u64
}

impl FrameSource for InprocSource {
    type Report = InprocReport;

    fn run<Q: FrameProducer>(self, mut frames: Q, clock: Clock, stop: &AtomicBool) -> InprocReport {
        let mut report = InprocReport::default();
        let mut waiter = Waiter::new(self.wait);
        let start_ns = clock.now_ns();
        for seq in 1..=self.log.len() as u64 {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let Some(bytes) = self.log.get(seq) else {
                continue;
            };
            let intended_ns = match self.rate {
                Some(rate) => {
                    let due = due_ns(start_ns, seq - 1, rate);
                    // Spin, never sleep: a sleep's wake-up is tens of microseconds late.
                    let mut now = clock.now_ns();
                    while now < due {
                        std::hint::spin_loop();
                        now = clock.now_ns();
                    }
                    if now > due + 1_000 {
                        report.late += 1;
                    }
                    due
                }
                // As fast as possible: no schedule, so latency is measured from the push.
                None => 0,
            };
            let pushed = frames.push_waiting(&mut waiter, |f: &mut Frame| {
                f.set_message(bytes, seq, clock.now_ns(), intended_ns);
            });
            if !pushed {
                return report;
            }
            report.messages += 1;
        }
        frames.push_end(&mut waiter, clock.now_ns());
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_times_follow_the_rate() {
        assert_eq!(due_ns(100, 0, 1_000_000), 100);
        assert_eq!(due_ns(100, 1, 1_000_000), 1_100);
        assert_eq!(due_ns(0, 5_000_000, 5_000_000), 1_000_000_000);
    }
}
