//! The circuit breaker of one feed line, and the line's side of the cross-thread handles:
//! manual commands taken from its [`Dependency`] handles once per poll loop, breaker states
//! mirrored and storm counters stored at most once a millisecond, and the health conditions
//! the breakers raise. The readers (`mold_source`, `soup_source`) call it with a few lines.
//!
//! What a call is, per line:
//! - SoupBinTCP: one connection attempt, connect and login. A login answered (accepted or
//!   rejected: the server spoke) is a success; a connect refused or timed out, a reset
//!   before the answer, and a server silent past its timeout are faults.
//! - MoldUDP64 data: nothing is asked of a multicast line, so a call is one listening
//!   interval of the line's stale threshold: a packet heard in it (a heartbeat too) is a
//!   success, an interval that ends silent a fault. An open breaker refuses the intervals
//!   (counted) and raises `BreakerOpen`; the line keeps being read, since packets are its
//!   only probe.
//! - MoldUDP64 retransmission server: inside `MoldRecovery` (one try of one gap).

use std::sync::Arc;
use std::time::Duration;

use ticklane_feed::moldudp64::{MoldRecovery, RecoveryCounts};
use ticklane_feed::resilience::{Breaker, BreakerConfig, BreakerState, CallOutcome};

use super::source_end::DropReason;
use crate::dependency::{Dependency, DependencyCounts, ManualCommand};
use crate::health::{Condition, Health};
use ticklane_snapshot::wall_clock_ns;

/// The line breaker's defaults: a 30 s window, no decision before 5 calls, open at half of
/// them faulted or all of them slow, slow above 1 s, open 5 s, then 1 probe. (A MoldUDP64
/// line's calls are stale-threshold intervals of up to 2 s, so a 30 s window holds 15.)
pub const DEFAULT_LINE_BREAKER: BreakerConfig = BreakerConfig {
    window: Duration::from_secs(30),
    min_calls: 5,
    failure_percent: 50,
    slow_percent: 100,
    slow_threshold: Duration::from_secs(1),
    open_interval: Duration::from_secs(5),
    probes: 1,
};

/// Mirrors and counters are copied out at most this often (not per message).
const SYNC_EVERY_NS: u64 = 1_000_000;

/// The shared handles a reader reports to: all optional (`None` in tests and replay).
#[derive(Clone, Debug, Default)]
pub struct GuardHandles {
    /// The line (its data, or its login server).
    pub line: Option<Arc<Dependency>>,
    /// The MoldUDP64 retransmission server.
    pub retransmission: Option<Arc<Dependency>>,
    /// The process's health.
    pub health: Option<Arc<Health>>,
}

impl GuardHandles {
    /// Takes each handle `other` holds, and keeps those it does not: handles given to a
    /// source by its maker are not dropped by a caller that has none of its own.
    pub fn fill_from(&mut self, other: GuardHandles) {
        if other.line.is_some() {
            self.line = other.line;
        }
        if other.retransmission.is_some() {
            self.retransmission = other.retransmission;
        }
        if other.health.is_some() {
            self.health = other.health;
        }
    }
}

/// The line's calls as the breaker saw them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LineCalls {
    /// Calls let through.
    pub calls: u64,
    /// Distinct identities among them (SoupBinTCP: distinct resume points asked for).
    pub distinct: u64,
    /// Successes, slow ones included.
    pub successes: u64,
    /// Faults.
    pub faults: u64,
    /// Calls the breaker refused.
    pub refused: u64,
}

/// The breaker of one line and its reporting.
#[derive(Debug)]
pub struct LineGuard {
    breaker: Breaker,
    handles: GuardHandles,
    calls: LineCalls,
    last_sync_ns: Option<u64>,
    /// What health was last told, so that a condition is raised or cleared on change only.
    breaker_raised: bool,
    isolated_raised: bool,
}

impl LineGuard {
    /// A closed breaker with `config`, reporting to `handles`.
    pub fn new(config: BreakerConfig, handles: GuardHandles) -> Self {
        LineGuard {
            breaker: Breaker::new(config),
            handles,
            calls: LineCalls::default(),
            last_sync_ns: None,
            breaker_raised: false,
            isolated_raised: false,
        }
    }

    /// The line's breaker state at `now`.
    pub fn state(&self, now: Duration) -> BreakerState {
        self.breaker.state(now)
    }

    /// Whether the line is isolated by hand.
    pub fn isolated(&self) -> bool {
        self.breaker.state(Duration::ZERO) == BreakerState::Isolated
    }

    /// The line's calls so far.
    pub fn calls(&self) -> LineCalls {
        self.calls
    }

    /// Applies the manual commands posted for the line and (with `recovery`) for its
    /// retransmission server. Cheap: one relaxed load per handle when nothing is posted.
    pub fn take_commands(&mut self, now: Duration, recovery: Option<&mut MoldRecovery>) {
        if let Some(command) = self.handles.line.as_ref().and_then(|d| d.take_command()) {
            match command {
                ManualCommand::Isolate => self.breaker.isolate(now),
                ManualCommand::Close => self.breaker.close(now),
            }
        }
        let server = self.handles.retransmission.as_ref();
        if let (Some(command), Some(r)) = (server.and_then(|d| d.take_command()), recovery) {
            match command {
                ManualCommand::Isolate => r.isolate_breaker(now),
                ManualCommand::Close => r.close_breaker(now),
            }
        }
    }

    /// Asks to make a call at `now` (a connect, a listening interval): `false` if the
    /// breaker refuses it (counted).
    pub fn try_call(&mut self, now: Duration, new_identity: bool) -> bool {
        if self.breaker.try_call(now).is_err() {
            self.calls.refused += 1;
            return false;
        }
        self.calls.calls += 1;
        if new_identity || self.calls.distinct == 0 {
            self.calls.distinct += 1;
        }
        true
    }

    /// The call made ended with `outcome` at `now`.
    pub fn record(&mut self, now: Duration, outcome: CallOutcome) {
        match outcome {
            CallOutcome::Fault => self.calls.faults += 1,
            CallOutcome::Success | CallOutcome::SlowSuccess => self.calls.successes += 1,
        }
        self.breaker.record(now, outcome);
    }

    /// Whether the breaker would let a call through at `now` (asking counts nothing).
    pub fn admits(&self, now: Duration) -> bool {
        self.breaker.admits(now)
    }

    /// Counts a call the caller did not make because the breaker refused it (asked with
    /// [`LineGuard::admits`], once per wait rather than once per loop).
    pub fn count_refused(&mut self) {
        self.calls.refused += 1;
    }

    /// The outcome of a call answered after `latency` (`None`: not answered), by the
    /// breaker's slow threshold.
    pub fn outcome_of(&self, latency: Option<Duration>) -> CallOutcome {
        CallOutcome::of_reply(latency, self.breaker.config().slow_threshold)
    }

    /// When the breaker next lets a call through, if it refuses now: the end of its open
    /// interval; `None` if it admits calls now or is isolated (only a close lets it).
    pub fn refuses_until(&self, now: Duration) -> Option<Duration> {
        if self.breaker.admits(now) {
            None
        } else {
            self.breaker.half_open_at()
        }
    }

    /// Mirrors both breakers, stores the counters and raises or clears health, at most
    /// once a millisecond unless `force`. `now_ns` is the pipeline clock; `recovery` the
    /// line's sequencer (MoldUDP64).
    pub fn sync(&mut self, now_ns: u64, recovery: Option<&MoldRecovery>, force: bool) {
        if !force
            && self
                .last_sync_ns
                .is_some_and(|t| now_ns.saturating_sub(t) < SYNC_EVERY_NS)
        {
            return;
        }
        self.last_sync_ns = Some(now_ns);
        let now = Duration::from_nanos(now_ns);
        let line_state = self.breaker.state(now);
        if let Some(d) = &self.handles.line {
            d.mirror_breaker(line_state.into(), self.breaker.transitions());
            d.store_counts(DependencyCounts {
                calls: self.calls.calls,
                distinct: self.calls.distinct,
                successes: self.calls.successes,
                faults: self.calls.faults,
                refused: self.calls.refused,
                breaker_transitions: self.breaker.transitions(),
            });
        }
        let server_state = recovery.and_then(|r| r.breaker_state(now));
        if let (Some(d), Some(r)) = (&self.handles.retransmission, recovery) {
            let s = r.stats();
            d.mirror_breaker(
                server_state.unwrap_or(BreakerState::Closed).into(),
                s.breaker_transitions,
            );
            d.store_counts(retransmission_counts(&s));
        }
        let Some(health) = &self.handles.health else {
            return;
        };
        let open = |s: BreakerState| s != BreakerState::Closed && s != BreakerState::HalfOpen;
        let breaker_open = open(line_state) || server_state.is_some_and(open);
        let isolated = line_state == BreakerState::Isolated;
        for (raised, now_on, condition) in [
            (
                &mut self.breaker_raised,
                breaker_open,
                Condition::BreakerOpen,
            ),
            (&mut self.isolated_raised, isolated, Condition::LineIsolated),
        ] {
            if *raised != now_on {
                *raised = now_on;
                if now_on {
                    health.raise(condition, wall_clock_ns());
                } else {
                    health.clear(condition);
                }
            }
        }
    }
}

/// Whether a dropped SoupBinTCP connection is an infrastructure fault for the line's
/// breaker: a connect refused or timed out, a reset or close, a read or write error, a
/// silent server. A rejected login (the server answered) and a protocol error (a contract
/// violation, not weather) are not.
pub fn drop_is_fault(reason: &DropReason) -> bool {
    match reason {
        DropReason::Connect { .. }
        | DropReason::ConnectTimedOut { .. }
        | DropReason::Closed
        | DropReason::Read(_)
        | DropReason::Write(_)
        | DropReason::ServerSilent { .. } => true,
        DropReason::Protocol(_) | DropReason::Rejected(_) => false,
    }
}

/// The retransmission server's storm counters: a call is one try of one gap, its identity
/// the gap's range.
pub fn retransmission_counts(s: &RecoveryCounts) -> DependencyCounts {
    DependencyCounts {
        calls: s.first_requests + s.retries,
        distinct: s.ranges_requested,
        successes: s.replies,
        faults: s.unanswered,
        refused: s.breaker_refused,
        breaker_transitions: s.breaker_transitions,
    }
}

/// The line breaker's calls on a multicast line, where nothing is asked: one call per
/// stale-threshold interval, a success if a packet was heard in it, a fault if not; and
/// the once-per-loop upkeep of the guard (manual commands, mirrors).
pub struct Listening {
    since_ns: u64,
    /// Set by the reader when a packet arrives.
    pub heard: bool,
}

impl Listening {
    /// Listening from `now_ns` on.
    pub fn new(now_ns: u64) -> Self {
        Listening {
            since_ns: now_ns,
            heard: false,
        }
    }

    /// Once per poll loop: manual commands, the interval's call if it is over, the mirrors.
    pub fn tick(
        &mut self,
        guard: &mut LineGuard,
        recovery: &mut MoldRecovery,
        now_ns: u64,
        interval_ns: u64,
    ) {
        let now = Duration::from_nanos(now_ns);
        guard.take_commands(now, Some(recovery));
        if now_ns.saturating_sub(self.since_ns) >= interval_ns.max(1) {
            if guard.try_call(now, false) {
                let outcome = guard.outcome_of(self.heard.then_some(Duration::ZERO));
                guard.record(now, outcome);
            }
            self.since_ns = now_ns;
            self.heard = false;
        }
        guard.sync(now_ns, Some(recovery), false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dependency::{BreakerMirror, DependencyKind};
    use crate::health::HealthState;

    const MS: Duration = Duration::from_millis(1);

    fn config() -> BreakerConfig {
        BreakerConfig {
            window: Duration::from_secs(10),
            min_calls: 2,
            failure_percent: 50,
            slow_percent: 100,
            slow_threshold: 100 * MS,
            open_interval: Duration::from_secs(1),
            probes: 1,
        }
    }

    #[test]
    fn commands_mirror_counts_and_health_go_through_the_handles() {
        let line = Arc::new(Dependency::new("itch", DependencyKind::Line));
        let health = Arc::new(Health::new());
        let mut g = LineGuard::new(
            config(),
            GuardHandles {
                line: Some(line.clone()),
                retransmission: None,
                health: Some(health.clone()),
            },
        );
        // Two faulted calls of two open it: mirrored, counted, BreakerOpen raised.
        for _ in 0..2 {
            assert!(g.try_call(Duration::ZERO, false));
            g.record(Duration::ZERO, CallOutcome::Fault);
        }
        assert!(!g.try_call(MS, false));
        g.sync(1_000_000, None, false);
        assert_eq!(line.breaker(), BreakerMirror::Open);
        let c = line.counts();
        assert_eq!(
            (
                c.calls,
                c.distinct,
                c.faults,
                c.refused,
                c.breaker_transitions
            ),
            (2, 1, 2, 1, 1)
        );
        assert!(health.is_raised(Condition::BreakerOpen));
        assert_eq!(health.report().state, HealthState::Degraded);
        // Isolated by hand through the handle: LineIsolated too.
        line.post(ManualCommand::Isolate);
        g.take_commands(2 * MS, None);
        assert!(g.isolated());
        // Within a millisecond of the last sync nothing is copied...
        g.sync(1_500_000, None, false);
        assert_eq!(line.breaker(), BreakerMirror::Open);
        // ...then it is.
        g.sync(2_000_000, None, false);
        assert_eq!(line.breaker(), BreakerMirror::Isolated);
        assert!(health.is_raised(Condition::LineIsolated));
        line.post(ManualCommand::Close);
        g.take_commands(3 * MS, None);
        g.sync(3_000_000, None, true);
        assert_eq!(line.breaker(), BreakerMirror::Closed);
        assert!(!health.is_raised(Condition::LineIsolated));
        assert!(!health.is_raised(Condition::BreakerOpen));
        assert_eq!(health.report().state, HealthState::Healthy);
    }

    #[test]
    fn a_multicast_lines_calls_are_listening_intervals_silent_ones_faults() {
        use ticklane_feed::moldudp64::RecoveryConfig;
        let mut r = MoldRecovery::new(RecoveryConfig::default());
        let mut g = LineGuard::new(config(), GuardHandles::default());
        let mut l = Listening::new(0);
        let interval = 100_000_000; // 100 ms
                                    // Within the first interval: no call yet.
        l.tick(&mut g, &mut r, 50_000_000, interval);
        assert_eq!(g.calls().calls, 0);
        // A packet heard, then the interval ends: a success.
        l.heard = true;
        l.tick(&mut g, &mut r, 100_000_000, interval);
        // A silent interval: one fault of two calls, 50 % >= 50 % with two calls: open.
        l.tick(&mut g, &mut r, 200_000_000, interval);
        let c = g.calls();
        assert_eq!((c.calls, c.successes, c.faults), (2, 1, 1));
        assert_eq!(g.state(Duration::from_millis(200)), BreakerState::Open);
        // Open: the next interval is refused, not counted as a call.
        l.tick(&mut g, &mut r, 300_000_000, interval);
        assert_eq!((g.calls().calls, g.calls().refused), (2, 1));
    }

    #[test]
    fn the_retransmission_servers_commands_reach_the_recovery_machine() {
        use ticklane_feed::moldudp64::RecoveryConfig;
        let server = Arc::new(Dependency::new(
            "itch.retransmission",
            DependencyKind::RetransmissionServer,
        ));
        let mut r = MoldRecovery::new(RecoveryConfig {
            breaker: Some(config()),
            ..RecoveryConfig::default()
        });
        let mut g = LineGuard::new(
            config(),
            GuardHandles {
                retransmission: Some(server.clone()),
                ..GuardHandles::default()
            },
        );
        server.post(ManualCommand::Isolate);
        g.take_commands(Duration::ZERO, Some(&mut r));
        assert_eq!(
            r.breaker_state(Duration::ZERO),
            Some(BreakerState::Isolated)
        );
        g.sync(0, Some(&r), true);
        assert_eq!(server.breaker(), BreakerMirror::Isolated);
        server.post(ManualCommand::Close);
        g.take_commands(MS, Some(&mut r));
        g.sync(1_000_000, Some(&r), true);
        assert_eq!(server.breaker(), BreakerMirror::Closed);
    }
}
