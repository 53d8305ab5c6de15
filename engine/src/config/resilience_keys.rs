//! The `[feed]` keys of the resilience policies: the circuit breaker (both kinds of line),
//! and MoldUDP64 recovery's retry budget, in-flight limit, gap deadline and start sequence.
//! Each is checked with its rule, as every other key; the pairs that must agree (a slow
//! threshold below the timeout it is slow against, a limit's bounds in order) are checked
//! after.

use std::time::Duration;

use ticklane_feed::moldudp64::RecoveryConfig;
use ticklane_feed::resilience::{AdaptiveLimitConfig, BreakerConfig, RetryBudgetConfig};

use toml::Value;

use super::error::{ConfigError, Conflict};
use super::limits;
use super::raw::{RawFeed, RawValue};
use super::validate::Checker;
use super::Allowed;

/// The `feed.start_sequence` a `run` line gets when the key is absent: 1, so that a line
/// that joins late (or loses its first packet) treats the messages before as a gap,
/// recovered from the retransmission server or declared lost (exit 3), rather than
/// starting without the stock directory. `"join"` opts out: a warning names the first
/// sequence seen, and the summary says where the line joined.
pub const DEFAULT_START_SEQUENCE: Option<u64> = Some(1);

/// `feed.breaker_*`, over `defaults`.
///
/// # Errors
///
/// [`ConfigError::Value`] naming the key for a value outside its rule.
pub fn breaker(
    check: &Checker<'_>,
    raw: &RawFeed,
    defaults: BreakerConfig,
) -> Result<BreakerConfig, ConfigError> {
    let ms = |key, value: &RawValue, rule: &Allowed, default: Duration| {
        check.millis(key, value, rule, default)
    };
    let n = |key, value: &RawValue, rule: &Allowed, default: u32| {
        check.integer_u32(key, value, rule, default)
    };
    Ok(BreakerConfig {
        window: ms(
            "feed.breaker_window_ms",
            &raw.breaker_window_ms,
            &limits::BREAKER_WINDOW_MS,
            defaults.window,
        )?,
        min_calls: n(
            "feed.breaker_min_calls",
            &raw.breaker_min_calls,
            &limits::BREAKER_MIN_CALLS,
            defaults.min_calls,
        )?,
        failure_percent: n(
            "feed.breaker_failure_percent",
            &raw.breaker_failure_percent,
            &limits::PERCENT_1_100,
            defaults.failure_percent,
        )?,
        slow_percent: n(
            "feed.breaker_slow_percent",
            &raw.breaker_slow_percent,
            &limits::PERCENT_1_100,
            defaults.slow_percent,
        )?,
        slow_threshold: ms(
            "feed.breaker_slow_ms",
            &raw.breaker_slow_ms,
            &limits::BREAKER_SLOW_MS,
            defaults.slow_threshold,
        )?,
        open_interval: ms(
            "feed.breaker_open_ms",
            &raw.breaker_open_ms,
            &limits::BREAKER_OPEN_MS,
            defaults.open_interval,
        )?,
        probes: n(
            "feed.breaker_probes",
            &raw.breaker_probes,
            &limits::BREAKER_PROBES,
            defaults.probes,
        )?,
    })
}

/// The breaker `config` guards calls that time out after `timeout` (the key `timeout_key`):
/// its slow threshold must lie below it, or no call is ever slow.
///
/// # Errors
///
/// [`ConfigError::Conflict`] naming both keys.
pub fn check_slow_below(
    check: &Checker<'_>,
    raw: &RawFeed,
    config: &BreakerConfig,
    timeout: Duration,
    timeout_key: &'static str,
) -> Result<(), ConfigError> {
    config.check(timeout).map_err(|_| {
        check.conflict(
            Conflict::SlowNotBelowTimeout {
                slow_ms: config.slow_threshold.as_millis() as u64,
                timeout_key,
                timeout_ms: timeout.as_millis() as u64,
            },
            raw.breaker_slow_ms.as_ref().map(|v| v.span()),
        )
    })
}

/// `config` for calls that time out after `timeout`: without `feed.breaker_slow_ms` its
/// slow threshold is at most half the timeout (the default 1 s is no use against a 100 ms
/// reply timeout); a threshold set by hand is kept, and checked by [`check_slow_below`].
pub fn with_slow_below(raw: &RawFeed, config: BreakerConfig, timeout: Duration) -> BreakerConfig {
    BreakerConfig {
        slow_threshold: match raw.breaker_slow_ms {
            Some(_) => config.slow_threshold,
            None => config.slow_threshold.min(timeout / 2),
        },
        ..config
    }
}

/// MoldUDP64 recovery's keys over `base`: `feed.retry_budget_percent`,
/// `feed.retry_budget_window_ms`, `feed.limit_min`, `feed.limit_max`,
/// `feed.gap_deadline_ms`, `feed.start_sequence` and `feed.reorder_store_packets`.
///
/// # Errors
///
/// [`ConfigError::Value`] for a value outside its rule; [`ConfigError::Conflict`] for
/// `limit_min` above `limit_max`.
pub fn recovery(
    check: &Checker<'_>,
    raw: &RawFeed,
    base: RecoveryConfig,
) -> Result<RecoveryConfig, ConfigError> {
    let ms = |key, value: &RawValue, rule: &Allowed, default: Duration| {
        check.millis(key, value, rule, default)
    };
    let n = |key, value: &RawValue, rule: &Allowed, default: u32| {
        check.integer_u32(key, value, rule, default)
    };
    let retry_budget = RetryBudgetConfig {
        ratio_percent: n(
            "feed.retry_budget_percent",
            &raw.retry_budget_percent,
            &limits::RETRY_BUDGET_PERCENT,
            base.retry_budget.ratio_percent,
        )?,
        window: ms(
            "feed.retry_budget_window_ms",
            &raw.retry_budget_window_ms,
            &limits::RETRY_BUDGET_WINDOW_MS,
            base.retry_budget.window,
        )?,
        ..base.retry_budget
    };
    let min = n(
        "feed.limit_min",
        &raw.limit_min,
        &limits::LIMIT_BOUND,
        base.limit.min,
    )?;
    let max = n(
        "feed.limit_max",
        &raw.limit_max,
        &limits::LIMIT_BOUND,
        base.limit.max,
    )?;
    if min > max {
        let span = raw.limit_min.as_ref().or(raw.limit_max.as_ref());
        return Err(check.conflict(Conflict::LimitBounds { min, max }, span.map(|v| v.span())));
    }
    let limit = AdaptiveLimitConfig {
        min,
        max,
        initial: base.limit.initial.clamp(min, max),
        ..base.limit
    };
    let gap_deadline = ms(
        "feed.gap_deadline_ms",
        &raw.gap_deadline_ms,
        &limits::GAP_DEADLINE_MS,
        base.gap_deadline,
    )?;
    let start_sequence = start_sequence(check, &raw.start_sequence)?;
    let store_packets = check.integer(
        "feed.reorder_store_packets",
        &raw.reorder_store_packets,
        &limits::REORDER_STORE_PACKETS,
        base.store_packets as u64,
    )?;
    Ok(RecoveryConfig {
        retry_budget,
        limit,
        gap_deadline,
        start_sequence,
        // Within REORDER_STORE_PACKETS, so it fits any usize.
        store_packets: usize::try_from(store_packets).unwrap_or(base.store_packets),
        ..base
    })
}

/// `feed.start_sequence`: the integer 1 (`Some(1)`) or the string `"join"` (`None`);
/// [`DEFAULT_START_SEQUENCE`] when absent. `"snapshot"` is `Some(1)` here: the sequence the
/// snapshot names replaces it when the line starts (`feed.glimpse_server`).
fn start_sequence(check: &Checker<'_>, raw: &RawValue) -> Result<Option<u64>, ConfigError> {
    let Some(v) = raw else {
        return Ok(DEFAULT_START_SEQUENCE);
    };
    match v.get_ref() {
        Value::Integer(1) => Ok(Some(1)),
        Value::String(s) if s == "join" => Ok(None),
        Value::String(s) if s == "snapshot" => Ok(Some(1)),
        other => Err(check.refuse(
            "feed.start_sequence",
            other,
            Some(v.span()),
            limits::START_SEQUENCE,
        )),
    }
}
