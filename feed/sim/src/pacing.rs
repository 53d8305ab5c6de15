//! When each simulated message is released: a message rate (token bucket), the messages'
//! own timestamps, or as fast as possible; and how the sender waits for that moment.
//!
//! Release times are absolute, computed from an origin rather than from the previous send,
//! so small oversleeps never add up into a slower rate. The waiting itself is the clock's
//! (`sim::clock`), so tests can pace in virtual time.

use std::time::{Duration, Instant};

use crate::{MessageLog, SimError};

const NANOS_PER_SECOND: u128 = 1_000_000_000;

/// How fast the live stream releases messages.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rate {
    /// As fast as the socket takes them: every packet is full.
    Max,
    /// A token bucket: `per_second` messages a second on average. A sender that falls
    /// behind catches up by at most `burst` messages at once and drops the rest of the
    /// lag, so a scheduler hiccup never turns into a flood.
    MessagesPerSecond {
        /// Average rate (at least 1).
        per_second: u64,
        /// Bucket depth, in messages (at least 1).
        burst: u32,
    },
    /// The messages' own ITCH timestamps, played `speed` times faster than real time. Any
    /// gap longer than `max_gap` after the speed-up (overnight, before the open) is cut to
    /// `max_gap`, so a day file does not sit silent for hours.
    Timestamps {
        /// Speed-up factor (1.0 is real time; must be positive and finite).
        speed: f64,
        /// The longest wait between two messages.
        max_gap: Duration,
    },
}

impl Rate {
    /// Messages per second the simulator sends at when no rate is asked for: of the order of
    /// a busy second of Nasdaq TotalView-ITCH at the open or the close, a rate a reader on a
    /// shared machine keeps up with (unpaced, the simulator overruns any reader's socket
    /// buffer: see [`Rate::Max`]).
    pub const DEFAULT_PER_SECOND: u64 = 400_000;

    /// `per_second` messages a second with a bucket of 10 ms worth of messages.
    pub fn per_second(per_second: u64) -> Rate {
        let burst = u32::try_from(per_second / 100).unwrap_or(u32::MAX).max(1);
        Rate::MessagesPerSecond { per_second, burst }
    }

    /// The file's timestamps at `speed` times real time, gaps cut to one second.
    pub fn timestamps(speed: f64) -> Rate {
        Rate::Timestamps {
            speed,
            max_gap: Duration::from_secs(1),
        }
    }

    /// `max`, for as fast as the socket takes them (any case), or a number of messages per
    /// second (at least 1): the command line's `--rate`.
    ///
    /// # Errors
    ///
    /// A message naming what was given and what is accepted.
    pub fn parse(text: &str) -> Result<Rate, String> {
        if text.eq_ignore_ascii_case("max") {
            return Ok(Rate::Max);
        }
        match text.parse::<u64>() {
            Ok(n) if n > 0 => Ok(Rate::per_second(n)),
            _ => Err(format!(
                "`{text}` is neither a number of messages per second (at least 1) nor `max`"
            )),
        }
    }

    /// Checks the rate, speed and bucket depth.
    ///
    /// # Errors
    ///
    /// [`SimError::InvalidConfig`] for a zero rate or bucket, or a speed that is not a
    /// positive finite number.
    pub fn validate(&self) -> Result<(), SimError> {
        let invalid = |what| Err(SimError::InvalidConfig { what });
        match *self {
            Rate::Max => Ok(()),
            Rate::MessagesPerSecond { per_second: 0, .. } => {
                invalid("rate: messages per second must be at least 1")
            }
            Rate::MessagesPerSecond { burst: 0, .. } => {
                invalid("rate: the token bucket must hold at least 1 message")
            }
            Rate::MessagesPerSecond { .. } => Ok(()),
            Rate::Timestamps { speed, .. } if !(speed.is_finite() && speed > 0.0) => {
                invalid("rate: timestamp speed must be a positive finite number")
            }
            Rate::Timestamps { .. } => Ok(()),
        }
    }
}

/// How the sender waits for a release time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitStrategy {
    /// Busy-spin until the moment: the most precise, and it burns its core. For a
    /// dedicated core.
    Spin,
    /// Sleep until `spin` before the moment, then yield in a loop. Sleeping alone oversleeps
    /// by tens of microseconds (timer slack), which the spin covers; yielding rather than
    /// spinning leaves the core to others on a shared machine.
    SpinThenSleep {
        /// How long before the moment to stop sleeping.
        spin: Duration,
    },
}

impl Default for WaitStrategy {
    fn default() -> Self {
        WaitStrategy::SpinThenSleep {
            spin: Duration::from_micros(100),
        }
    }
}

/// The release time of each message of a log, in order.
#[derive(Clone, Debug)]
pub(crate) struct Pacer {
    rate: Rate,
    /// `MessagesPerSecond`: message `origin_index` is released at `origin`, the next ones
    /// one interval apart.
    origin: Instant,
    origin_index: usize,
    /// `Timestamps`: the last message whose release time was computed, so the next one
    /// follows from it and asking twice gives the same answer.
    last: Option<Released>,
}

#[derive(Clone, Copy, Debug)]
struct Released {
    index: usize,
    at: Instant,
    timestamp_ns: u64,
}

impl Pacer {
    /// A pacer whose first message is due at `start`.
    pub(crate) fn new(rate: Rate, start: Instant) -> Self {
        Pacer {
            rate,
            origin: start,
            origin_index: 0,
            last: None,
        }
    }

    /// When message `index` may go out; `None` for "now" (`Rate::Max`). Ask in order:
    /// `index` is the last one asked or the one after it. `now` bounds the catch-up of
    /// the token bucket.
    pub(crate) fn due(&mut self, index: usize, log: &MessageLog, now: Instant) -> Option<Instant> {
        match self.rate {
            Rate::Max => None,
            Rate::MessagesPerSecond { per_second, burst } => {
                let interval_ns = |n: u128| n * NANOS_PER_SECOND / u128::from(per_second);
                let since_origin = index.saturating_sub(self.origin_index) as u128;
                let due = self.origin + nanos(interval_ns(since_origin));
                let bucket = nanos(interval_ns(u128::from(burst)));
                match now.checked_sub(bucket) {
                    // Further behind than the bucket holds: forget the excess lag.
                    Some(earliest) if due < earliest => {
                        self.origin = earliest;
                        self.origin_index = index;
                        Some(earliest)
                    }
                    _ => Some(due),
                }
            }
            Rate::Timestamps { speed, max_gap } => {
                let timestamp = |prev: u64| log.timestamp_ns(index).unwrap_or(prev);
                let released = match self.last {
                    Some(last) if last.index == index => last,
                    Some(last) => {
                        let ts = timestamp(last.timestamp_ns);
                        // Timestamps that go backwards (joined files) release at once.
                        let gap = ts.saturating_sub(last.timestamp_ns) as f64 / speed;
                        let gap = Duration::from_nanos(gap.min(u64::MAX as f64) as u64);
                        Released {
                            index,
                            at: last.at + gap.min(max_gap),
                            timestamp_ns: ts,
                        }
                    }
                    None => Released {
                        index,
                        at: self.origin,
                        timestamp_ns: timestamp(0),
                    },
                };
                self.last = Some(released);
                Some(released.at)
            }
        }
    }

    /// Moves every later release time `by` later: after a pause, stall or disconnect the
    /// stream resumes at its rate instead of bursting to catch up.
    pub(crate) fn shift(&mut self, by: Duration) {
        self.origin += by;
        if let Some(last) = &mut self.last {
            last.at += by;
        }
    }
}

fn nanos(n: u128) -> Duration {
    Duration::from_nanos(u64::try_from(n).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_is_a_positive_number_or_max() {
        assert_eq!(Rate::parse("max"), Ok(Rate::Max));
        assert_eq!(Rate::parse("MAX"), Ok(Rate::Max));
        assert_eq!(
            Rate::parse("250000"),
            Ok(Rate::MessagesPerSecond {
                per_second: 250_000,
                burst: 2_500
            })
        );
        assert!(Rate::parse("0").is_err());
        assert!(Rate::parse("fast").is_err());
        assert!(Rate::parse("-5").is_err());
    }

    fn log_with_timestamps(ts: &[u64]) -> MessageLog {
        let mut log = MessageLog::new();
        for &t in ts {
            let mut m = [0u8; 12];
            m[0] = b'S';
            m[5..11].copy_from_slice(&t.to_be_bytes()[2..]);
            log.push(&m).unwrap();
        }
        log
    }

    #[test]
    fn rate_spaces_messages_evenly_from_the_origin() {
        let start = Instant::now();
        let log = log_with_timestamps(&[0; 4]);
        let mut pacer = Pacer::new(Rate::per_second(1_000), start);
        assert_eq!(pacer.due(0, &log, start), Some(start));
        assert_eq!(
            pacer.due(3, &log, start),
            Some(start + Duration::from_millis(3))
        );
        // Asked again, the same answer.
        assert_eq!(
            pacer.due(3, &log, start),
            Some(start + Duration::from_millis(3))
        );
    }

    #[test]
    fn token_bucket_forgets_lag_beyond_its_depth() {
        let start = Instant::now();
        let log = MessageLog::new();
        let rate = Rate::MessagesPerSecond {
            per_second: 1_000,
            burst: 10,
        };
        let mut pacer = Pacer::new(rate, start);
        // 100 ms late for message 0: only 10 ms (10 messages) of catch-up remain.
        let late = start + Duration::from_millis(100);
        assert_eq!(
            pacer.due(0, &log, late),
            Some(late - Duration::from_millis(10))
        );
        assert_eq!(pacer.due(10, &log, late), Some(late));
        assert_eq!(
            pacer.due(11, &log, late),
            Some(late + Duration::from_millis(1))
        );
    }

    #[test]
    fn timestamps_scale_and_cap_gaps() {
        let start = Instant::now();
        let hour = 3_600_000_000_000;
        let log = log_with_timestamps(&[1_000, 3_000_000, hour, hour - 5]);
        let rate = Rate::Timestamps {
            speed: 2.0,
            max_gap: Duration::from_millis(100),
        };
        let mut pacer = Pacer::new(rate, start);
        assert_eq!(pacer.due(0, &log, start), Some(start));
        let one = start + Duration::from_nanos((3_000_000 - 1_000) / 2);
        assert_eq!(pacer.due(1, &log, start), Some(one));
        let two = one + Duration::from_millis(100);
        assert_eq!(pacer.due(2, &log, start), Some(two));
        assert_eq!(pacer.due(3, &log, start), Some(two), "backwards: at once");
        pacer.shift(Duration::from_millis(7));
        assert_eq!(
            pacer.due(3, &log, start),
            Some(two + Duration::from_millis(7))
        );
    }

    #[test]
    fn max_rate_never_waits() {
        let start = Instant::now();
        let mut pacer = Pacer::new(Rate::Max, start);
        assert_eq!(pacer.due(5, &MessageLog::new(), start), None);
    }

    #[test]
    fn invalid_rates_are_rejected() {
        assert!(Rate::per_second(0).validate().is_err());
        assert!(Rate::timestamps(0.0).validate().is_err());
        assert!(Rate::timestamps(f64::INFINITY).validate().is_err());
        assert!(Rate::timestamps(10.0).validate().is_ok());
        assert!(Rate::per_second(1).validate().is_ok());
    }
}
