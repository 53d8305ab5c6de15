//! The idle rule of a logged-in connection: the server speaks when it has been quiet for a
//! heartbeat interval, and cuts a client it has heard nothing from (no request, no
//! heartbeat) for the idle timeout. Sans-I/O: the server hands in its clock's nanoseconds,
//! so the tests drive the rule with a made-up clock.
#![forbid(unsafe_code)]

use std::time::Duration;

/// The two intervals of the rule, in nanoseconds of the server's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IdleRule {
    heartbeat_ns: u64,
    idle_timeout_ns: u64,
}

/// What the rule asks of the server for one connection now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IdleAction {
    /// Nothing to do.
    Nothing,
    /// The server has queued nothing for a heartbeat interval: queue a heartbeat.
    Heartbeat,
    /// Nothing heard from the client for the idle timeout: cut it loose (reason `I`).
    Cut,
}

impl IdleRule {
    /// A heartbeat after `heartbeat_ms` of the server's silence; a cut after `idle_timeout`
    /// of the client's.
    pub(crate) fn new(heartbeat_ms: u32, idle_timeout: Duration) -> Self {
        IdleRule {
            heartbeat_ns: u64::from(heartbeat_ms) * 1_000_000,
            idle_timeout_ns: u64::try_from(idle_timeout.as_nanos()).unwrap_or(u64::MAX),
        }
    }

    /// What to do at `now_ns` for a logged-in connection last heard at `last_heard_ns`,
    /// whose last queued frame was at `last_queued_ns` and whose queue is `queue_empty`.
    /// The cut wins over the heartbeat: a client silent that long gets the reason, not
    /// another heartbeat.
    pub(crate) fn check(
        &self,
        now_ns: u64,
        last_heard_ns: u64,
        last_queued_ns: u64,
        queue_empty: bool,
    ) -> IdleAction {
        if now_ns.saturating_sub(last_heard_ns) >= self.idle_timeout_ns {
            return IdleAction::Cut;
        }
        if queue_empty && now_ns.saturating_sub(last_queued_ns) >= self.heartbeat_ns {
            return IdleAction::Heartbeat;
        }
        IdleAction::Nothing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn rule() -> IdleRule {
        IdleRule::new(1_000, Duration::from_millis(5_000))
    }

    #[test]
    fn a_client_heard_within_the_timeout_is_kept() {
        // Heard 4,999 ms ago, server spoke 10 ms ago: nothing.
        assert_eq!(
            rule().check(10_000 * MS, 5_001 * MS, 9_990 * MS, true),
            IdleAction::Nothing
        );
    }

    #[test]
    fn a_client_silent_for_the_timeout_is_cut() {
        assert_eq!(
            rule().check(10_000 * MS, 5_000 * MS, 9_990 * MS, true),
            IdleAction::Cut
        );
        // The cut wins over a heartbeat that is also due.
        assert_eq!(
            rule().check(20_000 * MS, 7_000 * MS, 0, true),
            IdleAction::Cut
        );
    }

    #[test]
    fn the_server_heartbeats_after_its_own_silence_only_with_an_empty_queue() {
        assert_eq!(
            rule().check(3_000 * MS, 2_900 * MS, 2_000 * MS, true),
            IdleAction::Heartbeat
        );
        assert_eq!(
            rule().check(3_000 * MS, 2_900 * MS, 2_001 * MS, true),
            IdleAction::Nothing
        );
        assert_eq!(
            rule().check(3_000 * MS, 2_900 * MS, 0, false),
            IdleAction::Nothing
        );
    }

    #[test]
    fn a_clock_that_reads_before_the_last_frame_is_not_silence() {
        assert_eq!(rule().check(MS, 2 * MS, 2 * MS, true), IdleAction::Nothing);
    }
}
