//! Three-valued health: Healthy; Degraded (a line down, books stale or
//! maybe wrong, but serving); Unhealthy; plus Starting (before the first connect) and draining
//! (after SIGTERM). The stages raise and clear *conditions*, each with its since-when and a
//! count; the state is the worst severity among the raised ones, computed when asked.
//!
//! Which conditions make the process Unhealthy (HTTP 503, so that a load balancer or a
//! failover stops sending readers here): those where the books are not live and nothing the
//! engine is doing will make them live again. That is
//!
//! - [`Condition::LineSilent`]: a MoldUDP64 line that heard nothing, not even a heartbeat,
//!   for its stale bound (two missed heartbeats, at most 2 s). UDP has no reconnect to try
//!   and no one to ask: a peer engine that still hears the feed serves better books. Cleared
//!   by the next packet. Not after the end of session, whose silence is the feed's design
//!   while the line waits out its open gaps.
//! - [`Condition::LineEnded`]: a line that ended in error or past its silence timeout.
//!
//! Everything else is Degraded (200): a SoupBinTCP line disconnected, reconnecting or whose
//! server went quiet (a reconnect is under way, and if reconnects run out the line ends), a
//! line isolated by hand (an operator's choice), an open breaker, declared loss or a late join
//! (`MAYBE_BAD` books are still the best there are), a contract violation, publications missed
//! because the snapshot is full (every book that has a slot still publishes), and an Aeron
//! publication that reaches no subscriber (the books are live here).
//!
//! Shared between threads as `Arc<Health>`: every field is an atomic, so raising a condition
//! from a reader thread never blocks and never allocates. Nothing here is on the per-message
//! path: conditions change when a line changes state, not per packet.

use core::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// The process's health, as `/health` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum HealthState {
    /// Not yet connected: waiting out a staggered start, or connecting for the first time.
    Starting,
    /// Every line live, nothing lost, nothing wrong.
    Healthy,
    /// Serving, but a person should look: a line down or isolated, books stale or maybe
    /// wrong, input that broke the protocol.
    Degraded,
    /// Not serving: a line ended in error, or the books cannot be trusted at all.
    Unhealthy,
}

impl HealthState {
    /// The name `/health` prints.
    pub fn name(self) -> &'static str {
        match self {
            HealthState::Starting => "Starting",
            HealthState::Healthy => "Healthy",
            HealthState::Degraded => "Degraded",
            HealthState::Unhealthy => "Unhealthy",
        }
    }
}

impl fmt::Display for HealthState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Something a stage raises while it holds, and clears when it no longer does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Condition {
    /// Before the first connect (a staggered start's wait, the first connect): Starting.
    Starting,
    /// A line silent, disconnected or reconnecting: its books are flagged `STALE`. Degraded.
    LineStale,
    /// A MoldUDP64 line silent past its stale bound (not even a heartbeat): nothing the
    /// engine can do brings the books back. Unhealthy, until the next packet.
    LineSilent,
    /// A line isolated by hand (the admin's `isolate`): Degraded.
    LineIsolated,
    /// A dependency's circuit breaker is open (a retransmission server, a line's login
    /// server): calls to it are refused until it half-opens. Degraded.
    BreakerOpen,
    /// Messages were declared lost: the books may be wrong (`MAYBE_BAD`) until rebuilt.
    /// Degraded.
    MessagesLost,
    /// The line joined past its opening without asking for it (`feed.start_sequence =
    /// "join"`): the books may lack what came before (`MAYBE_BAD`). Degraded.
    JoinedLate,
    /// The exchange's input broke the protocol (a malformed packet or message, a length
    /// that contradicts the specification, a sequence running backwards within a session):
    /// never retried, never masked. Degraded, so that a person looks.
    ContractViolation,
    /// Publications lost because the snapshot had no free slot. Degraded.
    PublicationsMissed,
    /// The Aeron publication's breaker is open (no subscriber reached, interval after
    /// interval, once some had been) or it was isolated by hand: the books are live here,
    /// the hosts that follow them over Aeron are not getting them. Degraded.
    PublicationDown,
    /// A line ended in error or went silent past its timeout: nothing more will come.
    /// Unhealthy.
    LineEnded,
}

impl Condition {
    /// Every condition, in the order `/health` lists them.
    pub const ALL: [Condition; 11] = [
        Condition::Starting,
        Condition::LineStale,
        Condition::LineSilent,
        Condition::LineIsolated,
        Condition::BreakerOpen,
        Condition::MessagesLost,
        Condition::JoinedLate,
        Condition::ContractViolation,
        Condition::PublicationsMissed,
        Condition::PublicationDown,
        Condition::LineEnded,
    ];

    /// The state this condition alone puts the process in.
    pub fn severity(self) -> HealthState {
        match self {
            Condition::Starting => HealthState::Starting,
            Condition::LineStale
            | Condition::LineIsolated
            | Condition::BreakerOpen
            | Condition::MessagesLost
            | Condition::JoinedLate
            | Condition::ContractViolation
            | Condition::PublicationsMissed
            | Condition::PublicationDown => HealthState::Degraded,
            Condition::LineSilent | Condition::LineEnded => HealthState::Unhealthy,
        }
    }

    /// A stable snake-case name, for JSON and logs.
    pub fn name(self) -> &'static str {
        match self {
            Condition::Starting => "starting",
            Condition::LineStale => "line_stale",
            Condition::LineSilent => "line_silent",
            Condition::LineIsolated => "line_isolated",
            Condition::BreakerOpen => "breaker_open",
            Condition::MessagesLost => "messages_lost",
            Condition::JoinedLate => "joined_late",
            Condition::ContractViolation => "contract_violation",
            Condition::PublicationsMissed => "publications_missed",
            Condition::PublicationDown => "publication_down",
            Condition::LineEnded => "line_ended",
        }
    }

    /// What it means, for a person reading `/health`.
    pub fn meaning(self) -> &'static str {
        match self {
            Condition::Starting => "not yet connected (staggered start or first connect)",
            Condition::LineStale => {
                "the line is silent, disconnected or reconnecting: books are flagged STALE"
            }
            Condition::LineSilent => {
                "the UDP line hears nothing, not even heartbeats: no reconnect can help, \
                 the books are not live"
            }
            Condition::LineIsolated => "the line was isolated by hand",
            Condition::BreakerOpen => "a dependency's circuit breaker is open",
            Condition::MessagesLost => "messages were declared lost: books are flagged MAYBE_BAD",
            Condition::JoinedLate => {
                "the line joined past its opening (feed.start_sequence = \"join\"): books are \
                 flagged MAYBE_BAD"
            }
            Condition::ContractViolation => {
                "the input broke the protocol (malformed, wrong length, sequence backwards)"
            }
            Condition::PublicationsMissed => "publications were lost because the snapshot was full",
            Condition::PublicationDown => {
                "the Aeron publication reaches no subscriber (its breaker is open or isolated)"
            }
            Condition::LineEnded => {
                "the line ended in error or went silent: nothing more will come"
            }
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// One raised condition, as reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reason {
    /// Which.
    pub condition: Condition,
    /// When it was first raised since it was last clear (wall clock, ns since the Unix epoch).
    pub since_ns: u64,
    /// Times it was raised over the whole run (a line that flaps counts each time).
    pub raised: u64,
}

/// What `/health` reports: the state, whether the process is draining, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HealthReport {
    /// The worst severity among the raised conditions; Healthy when none is.
    pub state: HealthState,
    /// Draining since this wall-clock time (ns since the Unix epoch), after SIGTERM.
    pub draining_since_ns: Option<u64>,
    /// Every condition raised now, in [`Condition::ALL`]'s order.
    pub reasons: Vec<Reason>,
}

impl HealthReport {
    /// The HTTP status `/health` answers with: 503 only when Unhealthy or draining (a
    /// Degraded engine still serves its last known books, flagged).
    pub fn http_status(&self) -> u16 {
        if self.state == HealthState::Unhealthy || self.draining_since_ns.is_some() {
            503
        } else {
            200
        }
    }
}

const CONDITIONS: usize = Condition::ALL.len();

/// The shared health of one engine process.
#[derive(Debug, Default)]
pub struct Health {
    /// Per condition: since when it is raised (wall-clock ns), 0 when clear.
    since_ns: [AtomicU64; CONDITIONS],
    /// Per condition: times raised.
    raised: [AtomicU64; CONDITIONS],
    /// Draining since (wall-clock ns), 0 when not.
    draining_since_ns: AtomicU64,
}

impl Health {
    /// Healthy: nothing raised.
    pub fn new() -> Self {
        Self::default()
    }

    /// Raises `condition` at `now_ns` (wall clock). One already raised keeps its since-when,
    /// and is not counted again.
    pub fn raise(&self, condition: Condition, now_ns: u64) {
        let i = condition.index();
        let since = now_ns.max(1);
        if self.since_ns[i]
            .compare_exchange(0, since, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            self.raised[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Clears `condition` (nothing happens if it is not raised).
    pub fn clear(&self, condition: Condition) {
        self.since_ns[condition.index()].store(0, Ordering::Release);
    }

    /// Whether `condition` is raised now.
    pub fn is_raised(&self, condition: Condition) -> bool {
        self.since_ns[condition.index()].load(Ordering::Acquire) != 0
    }

    /// Marks the process as draining from `now_ns` on (the first call wins): `/health`
    /// answers 503 from now on, whatever the state.
    pub fn begin_draining(&self, now_ns: u64) {
        let _ = self.draining_since_ns.compare_exchange(
            0,
            now_ns.max(1),
            Ordering::AcqRel,
            Ordering::Acquire,
        );
    }

    /// Whether the process is draining.
    pub fn is_draining(&self) -> bool {
        self.draining_since_ns.load(Ordering::Acquire) != 0
    }

    /// The state now, and why.
    pub fn report(&self) -> HealthReport {
        let mut reasons = Vec::new();
        let mut state = HealthState::Healthy;
        for condition in Condition::ALL {
            let i = condition.index();
            let since_ns = self.since_ns[i].load(Ordering::Acquire);
            if since_ns == 0 {
                continue;
            }
            state = worse(state, condition.severity());
            reasons.push(Reason {
                condition,
                since_ns,
                raised: self.raised[i].load(Ordering::Relaxed),
            });
        }
        let draining = self.draining_since_ns.load(Ordering::Acquire);
        HealthReport {
            state,
            draining_since_ns: (draining != 0).then_some(draining),
            reasons,
        }
    }
}

/// The worse of two states: Unhealthy over Degraded over Starting over Healthy. (Starting
/// is worse than Healthy but better than Degraded: a line still waiting out its stagger
/// has lost nothing.)
fn worse(a: HealthState, b: HealthState) -> HealthState {
    fn rank(s: HealthState) -> u8 {
        match s {
            HealthState::Healthy => 0,
            HealthState::Starting => 1,
            HealthState::Degraded => 2,
            HealthState::Unhealthy => 3,
        }
    }
    if rank(b) > rank(a) {
        b
    } else {
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_raised_is_healthy_and_answers_200() {
        let h = Health::new();
        let r = h.report();
        assert_eq!(r.state, HealthState::Healthy);
        assert!(r.reasons.is_empty());
        assert_eq!(r.http_status(), 200);
    }

    #[test]
    fn the_worst_raised_condition_decides_the_state() {
        let h = Health::new();
        h.raise(Condition::Starting, 10);
        assert_eq!(h.report().state, HealthState::Starting);
        h.raise(Condition::LineStale, 20);
        assert_eq!(h.report().state, HealthState::Degraded);
        assert_eq!(h.report().http_status(), 200, "Degraded still serves");
        h.raise(Condition::LineEnded, 30);
        assert_eq!(h.report().state, HealthState::Unhealthy);
        assert_eq!(h.report().http_status(), 503);
        h.clear(Condition::LineEnded);
        h.clear(Condition::LineStale);
        assert_eq!(h.report().state, HealthState::Starting);
        h.clear(Condition::Starting);
        assert_eq!(h.report().state, HealthState::Healthy);
    }

    #[test]
    fn a_raised_condition_keeps_its_first_since_and_counts_each_raising() {
        let h = Health::new();
        h.raise(Condition::LineStale, 100);
        h.raise(Condition::LineStale, 200);
        let r = h.report();
        assert_eq!(r.reasons.len(), 1);
        assert_eq!(r.reasons[0].since_ns, 100);
        assert_eq!(r.reasons[0].raised, 1);
        h.clear(Condition::LineStale);
        h.raise(Condition::LineStale, 300);
        let r = h.report();
        assert_eq!(r.reasons[0].since_ns, 300);
        assert_eq!(r.reasons[0].raised, 2, "a line that flaps counts each time");
    }

    #[test]
    fn draining_answers_503_even_when_healthy() {
        let h = Health::new();
        h.begin_draining(5);
        h.begin_draining(9);
        let r = h.report();
        assert_eq!(r.state, HealthState::Healthy);
        assert_eq!(r.draining_since_ns, Some(5), "the first call wins");
        assert_eq!(r.http_status(), 503);
    }

    #[test]
    fn every_condition_has_a_distinct_name_and_index() {
        for (i, c) in Condition::ALL.iter().enumerate() {
            assert_eq!(c.index(), i);
            assert!(!c.meaning().is_empty());
        }
        let mut names: Vec<_> = Condition::ALL.iter().map(|c| c.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Condition::ALL.len());
    }
}
