//! The client's reconnect decision, without its I/O: after a session ends (or could not
//! start), how long to wait before the next attempt, or whether to stop. The blocking
//! [`run_subscriber`](super::client::run_subscriber) and the storm harness's non-blocking
//! clients (`bench/src/bin/serve_storm.rs`, thousands of clients on a few threads) make the
//! same decisions through this one machine.
//!
//! The rules: a server retry-after is honoured as told, unless it is longer than the
//! backoff's cap (then it is maintenance, never slept on); otherwise exponential backoff
//! with full jitter; never less than [`ClientConfig::min_delay`], so an immediate reconnect
//! loop cannot happen; a session that was accepted and stayed up for
//! [`ClientConfig::stable_after`] starts the backoff over; [`ClientConfig::max_attempts`]
//! attempts in a row end it.
//!
//! ```
//! use std::time::Duration;
//! use ticklane_serve::client::ClientConfig;
//! use ticklane_serve::reconnect::{NextAttempt, Reconnect};
//!
//! let config = ClientConfig::new("127.0.0.1:7000".parse().unwrap(), vec!["AAPL".into()]);
//! let mut reconnect = Reconnect::new(&config);
//! // Refused with a retry-after of 3 s: the client waits exactly that.
//! let next = reconnect.after_attempt(None, Some(Duration::from_secs(3)));
//! assert_eq!(next, NextAttempt::Wait { delay: Duration::from_secs(3), server_asked: true });
//! ```
#![forbid(unsafe_code)]

use std::time::Duration;

use ticklane_feed::resilience::{Backoff, BackoffDelay};
use ticklane_feed::rng::SplitMix64;

use super::client::ClientConfig;

/// What to do after an attempt that did not end the subscription for good.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NextAttempt {
    /// Wait `delay`, then connect again.
    Wait {
        /// How long (at least the configured minimum).
        delay: Duration,
        /// Whether `delay` is the server's retry-after (else the backoff's draw).
        server_asked: bool,
    },
    /// The server asked for a delay over the backoff's cap: maintenance; stop.
    Maintenance {
        /// The delay asked for.
        requested: Duration,
        /// The cap it exceeds.
        cap: Duration,
    },
    /// `max_attempts` attempts in a row failed; stop.
    GaveUp {
        /// Attempts made in a row.
        attempts: u32,
    },
}

/// The reconnect state of one client: the backoff's attempt count, the attempts in a row,
/// and the jitter's generator (seeded from [`ClientConfig::seed`]). `Send`; one per client.
#[derive(Clone, Debug)]
pub struct Reconnect {
    backoff: Backoff,
    rng: SplitMix64,
    min_delay: Duration,
    stable_after: Duration,
    max_attempts: Option<u32>,
    /// The backoff's exponent: 0 at first and after a stable session.
    attempt: u32,
    /// Attempts in a row since the last stable session.
    in_a_row: u32,
}

impl Reconnect {
    /// A client about to make its first attempt.
    pub fn new(config: &ClientConfig) -> Self {
        Reconnect {
            backoff: Backoff::new(config.backoff),
            rng: SplitMix64::new(config.seed),
            min_delay: config.min_delay,
            stable_after: config.stable_after,
            max_attempts: config.max_attempts,
            attempt: 0,
            in_a_row: 0,
        }
    }

    /// The backoff's attempt count of the attempt about to be made: 0 at first and after a
    /// stable session, one more after each attempt (a session that ended early included).
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Decides after an attempt: `accepted_for` is how long the session lasted if the server
    /// accepted it (`None`: it never was), `server_delay` the retry-after the server told,
    /// if it told one.
    pub fn after_attempt(
        &mut self,
        accepted_for: Option<Duration>,
        server_delay: Option<Duration>,
    ) -> NextAttempt {
        self.in_a_row = self.in_a_row.saturating_add(1);
        if accepted_for.is_some_and(|lasted| lasted >= self.stable_after) {
            self.attempt = 0;
            self.in_a_row = 0;
        }
        if self.max_attempts.is_some_and(|max| self.in_a_row >= max) {
            return NextAttempt::GaveUp {
                attempts: self.in_a_row,
            };
        }
        let delay = match self.backoff.next(self.attempt, server_delay, &mut self.rng) {
            BackoffDelay::Wait(d) => d.max(self.min_delay),
            BackoffDelay::TooLong { requested, cap } => {
                return NextAttempt::Maintenance { requested, cap }
            }
        };
        self.attempt = self.attempt.saturating_add(1);
        NextAttempt::Wait {
            delay,
            server_asked: server_delay.is_some(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklane_feed::resilience::BackoffConfig;

    const MS: Duration = Duration::from_millis(1);

    fn config() -> ClientConfig {
        ClientConfig {
            backoff: BackoffConfig {
                base: 100 * MS,
                cap: 1_000 * MS,
            },
            min_delay: 50 * MS,
            stable_after: 5_000 * MS,
            max_attempts: Some(6),
            seed: 11,
            ..ClientConfig::new("127.0.0.1:1".parse().unwrap(), vec![])
        }
    }

    fn wait(next: NextAttempt) -> Duration {
        match next {
            NextAttempt::Wait { delay, .. } => delay,
            other => panic!("expected a wait, got {other:?}"),
        }
    }

    #[test]
    fn a_retry_after_is_honoured_as_told_and_a_long_one_is_maintenance() {
        let mut r = Reconnect::new(&config());
        assert_eq!(
            r.after_attempt(None, Some(730 * MS)),
            NextAttempt::Wait {
                delay: 730 * MS,
                server_asked: true
            }
        );
        // Below the floor: the floor.
        assert_eq!(wait(r.after_attempt(None, Some(MS))), 50 * MS);
        assert_eq!(
            r.after_attempt(None, Some(1_001 * MS)),
            NextAttempt::Maintenance {
                requested: 1_001 * MS,
                cap: 1_000 * MS
            }
        );
    }

    #[test]
    fn without_a_retry_after_the_wait_is_full_jitter_under_a_doubling_ceiling() {
        // Ceilings by hand: 100, 200, 400, 800, then the cap of 1,000 ms.
        let ceilings = [100, 200, 400, 800, 1_000, 1_000];
        let mut over_half = 0;
        for seed in 0..200 {
            let mut r = Reconnect::new(&ClientConfig {
                seed,
                max_attempts: None,
                ..config()
            });
            for (n, &ceiling) in ceilings.iter().enumerate() {
                assert_eq!(r.attempt(), n as u32);
                let d = wait(r.after_attempt(None, None));
                assert!(d >= 50 * MS && d <= ceiling * MS, "attempt {n}: {d:?}");
                if d > ceiling * MS / 2 {
                    over_half += 1;
                }
            }
        }
        // Full jitter: about half the draws sit in the upper half of their range.
        assert!((400..800).contains(&over_half), "{over_half} of 1200");
    }

    #[test]
    fn gives_up_after_max_attempts_in_a_row_unless_a_session_was_stable() {
        let mut r = Reconnect::new(&config());
        for _ in 0..5 {
            wait(r.after_attempt(Some(MS), None));
        }
        assert_eq!(
            r.after_attempt(None, None),
            NextAttempt::GaveUp { attempts: 6 }
        );

        let mut r = Reconnect::new(&config());
        for _ in 0..5 {
            wait(r.after_attempt(None, None));
        }
        // A session that stayed up 5 s starts the count and the backoff over.
        wait(r.after_attempt(Some(5_000 * MS), None));
        assert_eq!(r.attempt(), 1);
        for _ in 0..5 {
            wait(r.after_attempt(None, None));
        }
        assert_eq!(
            r.after_attempt(None, None),
            NextAttempt::GaveUp { attempts: 6 }
        );
    }

    #[test]
    fn the_same_seed_makes_the_same_waits() {
        let draws = |seed| {
            let mut r = Reconnect::new(&ClientConfig { seed, ..config() });
            (0..5)
                .map(|_| wait(r.after_attempt(None, None)))
                .collect::<Vec<_>>()
        };
        assert_eq!(draws(3), draws(3));
        assert_ne!(draws(3), draws(4));
    }
}
