//! The timing policies of every call to another party, sans-I/O: exponential backoff with
//! full jitter, a retry budget, reply timeouts derived from measured latency, an adaptive
//! limit on requests in flight, and a circuit breaker per dependency.
//!
//! Nothing here reads a clock or sleeps: time is a [`Duration`](std::time::Duration) since
//! an origin the caller chooses (only differences matter), passed to each call, so every
//! behaviour is tested in virtual time with exact expectations. Jitter draws from a seeded
//! [`SplitMix64`](crate::rng::SplitMix64). The module sits on the crate's lowest floor with
//! `rng`: it imports nothing else of the crate, and `moldudp64` (and later SoupBinTCP
//! reconnects) build on it.
//!
//! # The rules every line follows
//!
//! A feed handler's dependencies (a multicast line, a retransmission server, a SoupBinTCP
//! server) fail in ordinary ways, and each way has one answer:
//!
//! - **Everything has a timeout**: connect, read and heartbeat (a silent feed is a dead
//!   feed), retransmission replies. Reply timeouts are derived from measured latency
//!   ([`ReplyTimeout`]) and stay below the caller's own deadline.
//! - **One layer retries**, with exponential backoff and full jitter ([`Backoff`]), capped,
//!   under a retry budget ([`RetryBudget`]) and an adaptive limit on requests in flight
//!   ([`AdaptiveLimit`]); nothing above it retries too, since retries multiply across
//!   layers. A delay the server asks for is honoured; one longer than the cap is reported,
//!   not slept on.
//! - **One circuit breaker per dependency** ([`Breaker`]): a time-based window, a minimum
//!   number of calls, a failure ratio and a slow-call ratio (the slow threshold below the
//!   timeout), half-open probes, and manual isolate/close from the admin interface. Only
//!   infrastructure faults count, never an answer the dependency gave on purpose.
//! - **Bulkheads**: one ring and one reader thread per line, so a stuck line stalls no other.
//! - **Fallback is explicit**: a line that is down leaves its last books readable but flagged
//!   `STALE`, never passed off as live; declared loss flags them `MAYBE_BAD`.
//! - **Contract violations are not weather**: bytes that break the protocol are never
//!   retried or masked; they are counted and reported.
//! - **Storms are shaped at the server side and made visible**: per dependency, calls
//!   against distinct request identities and the success ratio, which tell a retry storm
//!   from real demand.
//!
//! ```
//! use std::time::Duration;
//! use ticklane_feed::resilience::{Backoff, BackoffConfig, RetryBudget, RetryBudgetConfig};
//! use ticklane_feed::rng::SplitMix64;
//!
//! let ms = Duration::from_millis;
//! let backoff = Backoff::new(BackoffConfig { base: ms(10), cap: ms(1000) });
//! let mut rng = SplitMix64::new(7);
//! assert!(backoff.delay(3, &mut rng) <= ms(80)); // uniform in [0, min(cap, 10 ms · 2^3)]
//!
//! let mut budget = RetryBudget::new(RetryBudgetConfig {
//!     window: Duration::from_secs(1),
//!     ratio_percent: 20,
//!     min_per_window: 0,
//! });
//! let now = Duration::ZERO;
//! for _ in 0..10 {
//!     budget.on_first_request(now);
//! }
//! assert!(budget.try_retry(now).is_ok());
//! assert!(budget.try_retry(now).is_ok());
//! assert!(budget.try_retry(now).is_err()); // 20 % of 10 first requests: two retries
//! ```

mod adaptive_limit;
mod backoff;
mod breaker;
mod reply_timeout;
mod retry_budget;
mod sliding_window;

pub use adaptive_limit::{AdaptiveLimit, AdaptiveLimitConfig};
pub use backoff::{Backoff, BackoffConfig, BackoffDelay};
pub use breaker::{
    Breaker, BreakerConfig, BreakerConfigError, BreakerState, CallOutcome, CallRejected,
};
pub use reply_timeout::{ReplyTimeout, ReplyTimeoutConfig};
pub use retry_budget::{BudgetExhausted, RetryBudget, RetryBudgetConfig};
pub use sliding_window::SlidingCounts;
