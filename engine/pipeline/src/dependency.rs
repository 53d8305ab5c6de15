//! One dependency the engine calls (a feed line's server, a retransmission server), as the
//! other threads see it: its circuit breaker's state (mirrored by the thread that owns the
//! breaker), manual commands for that breaker (posted by the admin interface, taken by the
//! owner), and the counters that tell a retry storm from real demand (the rules are in
//! [`ticklane_feed::resilience`]): calls, distinct request identities, successes.
//!
//! The breaker itself (`ticklane_feed::resilience::Breaker`) is owned by one reader thread
//! and never shared; this handle is what crosses threads, atomics only.
//!
//! What one *call* is, per dependency (its breaker is set by the `feed.breaker_*` keys;
//! only infrastructure faults count, never an answer):
//!
//! - **a retransmission server**: one try of one gap (its request datagrams go out
//!   together); a reply covering it is a success, a try unanswered for its timeout a fault.
//!   While the breaker is open, gaps wait (neither asked for nor retried, counted once as
//!   refused) until the probes, or their deadline declares them.
//! - **a SoupBinTCP line**: one connect and login; a login answered, even rejected, is a
//!   success; a connect refused or timed out, a reset, a read or write error and a silent
//!   server are faults. While open, the line waits for the probe instead of reconnecting.
//! - **a MoldUDP64 line**: nothing is asked of a multicast line, so a call is one listening
//!   interval of the stale threshold (half the silence timeout, at most 2 s): a packet heard
//!   in it is a success, a silent interval a fault. Open, it raises `breaker_open` in
//!   health; the line is still read, since its packets are its only probe.
//!
//! - **an Aeron publication** (`{feed}.aeron`): one heartbeat interval of the publisher, once
//!   some subscriber has been connected: a subscriber connected in it is a success, none a
//!   fault (and a publication the driver closed is one at once). Open, it raises
//!   `publication_down` in health; the publisher goes on offering, since offers are its only
//!   probe. Isolated by hand, it offers nothing (each record counted as refused) until
//!   closed.
//!
//! Manual commands (the admin's `POST /feeds/{name}/isolate` and `/close`) are taken by the
//! owning reader once per poll loop, and each reader copies its breakers' states and
//! counters here at most once a millisecond. Health says `breaker_open` while any breaker is
//! open or isolated, and `line_isolated` while the line is.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

use ticklane_feed::resilience::BreakerState;

/// A manual breaker command (the admin's `POST /feeds/{name}/isolate` and `/close`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ManualCommand {
    /// Refuse every call until closed by hand.
    Isolate,
    /// Close the breaker: calls go through again, with an empty window.
    Close,
}

/// The breaker's state as mirrored for other threads (the feed crate's `BreakerState`, plus
/// "no breaker").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BreakerMirror {
    /// Calls go through.
    Closed,
    /// Calls refused until the open interval passes.
    Open,
    /// Probe calls go through.
    HalfOpen,
    /// Refused by hand until closed by hand.
    Isolated,
}

impl BreakerMirror {
    /// The gauge value `/metrics` exports: 0 closed, 1 open, 2 half-open, 3 isolated.
    pub fn code(self) -> u8 {
        match self {
            BreakerMirror::Closed => 0,
            BreakerMirror::Open => 1,
            BreakerMirror::HalfOpen => 2,
            BreakerMirror::Isolated => 3,
        }
    }

    /// The state a [`BreakerMirror::code`] stands for (unknown codes read as closed).
    pub fn of_code(code: u8) -> Self {
        match code {
            1 => BreakerMirror::Open,
            2 => BreakerMirror::HalfOpen,
            3 => BreakerMirror::Isolated,
            _ => BreakerMirror::Closed,
        }
    }

    /// Lower-case name, for JSON and logs.
    pub fn name(self) -> &'static str {
        match self {
            BreakerMirror::Closed => "closed",
            BreakerMirror::Open => "open",
            BreakerMirror::HalfOpen => "half_open",
            BreakerMirror::Isolated => "isolated",
        }
    }
}

impl From<BreakerState> for BreakerMirror {
    fn from(state: BreakerState) -> Self {
        match state {
            BreakerState::Closed => BreakerMirror::Closed,
            BreakerState::Open => BreakerMirror::Open,
            BreakerState::HalfOpen => BreakerMirror::HalfOpen,
            BreakerState::Isolated => BreakerMirror::Isolated,
        }
    }
}

/// What kind of dependency.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DependencyKind {
    /// A feed line: the multicast/unicast data (MoldUDP64) or the login server (SoupBinTCP).
    Line,
    /// A MoldUDP64 retransmission (request) server.
    RetransmissionServer,
    /// A publication of the books to other hosts (Aeron).
    Publication,
}

impl DependencyKind {
    /// Lower-case name, for labels.
    pub fn name(self) -> &'static str {
        match self {
            DependencyKind::Line => "line",
            DependencyKind::RetransmissionServer => "retransmission",
            DependencyKind::Publication => "publication",
        }
    }
}

const NO_COMMAND: u8 = 0;
const ISOLATE: u8 = 1;
const CLOSE: u8 = 2;

/// One dependency's shared handle.
#[derive(Debug)]
pub struct Dependency {
    name: String,
    kind: DependencyKind,
    command: AtomicU8,
    breaker: AtomicU8,
    breaker_transitions: AtomicU64,
    calls: AtomicU64,
    distinct: AtomicU64,
    successes: AtomicU64,
    faults: AtomicU64,
    refused: AtomicU64,
}

/// A copy of a dependency's counters at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DependencyCounts {
    /// Calls made (first tries and retries; for a line: connects or login attempts).
    pub calls: u64,
    /// Distinct request identities among them (retransmissions: distinct gap ranges; a
    /// line: distinct sessions asked for).
    pub distinct: u64,
    /// Calls answered.
    pub successes: u64,
    /// Calls that ended in an infrastructure fault (timeout, reset, silence).
    pub faults: u64,
    /// Calls the breaker refused.
    pub refused: u64,
    /// Breaker state changes.
    pub breaker_transitions: u64,
}

impl DependencyCounts {
    /// Calls per distinct identity: 1.0 is every request asked once; a retry storm drives it
    /// up while distinct identities stay flat. `None` before any call.
    pub fn call_multiplier(&self) -> Option<f64> {
        (self.distinct > 0).then(|| self.calls as f64 / self.distinct as f64)
    }

    /// Successes per call. `None` before any call.
    pub fn success_ratio(&self) -> Option<f64> {
        (self.calls > 0).then(|| self.successes as f64 / self.calls as f64)
    }
}

impl Dependency {
    /// A dependency with a closed breaker and nothing counted.
    pub fn new(name: impl Into<String>, kind: DependencyKind) -> Self {
        Dependency {
            name: name.into(),
            kind,
            command: AtomicU8::new(NO_COMMAND),
            breaker: AtomicU8::new(BreakerMirror::Closed.code()),
            breaker_transitions: AtomicU64::new(0),
            calls: AtomicU64::new(0),
            distinct: AtomicU64::new(0),
            successes: AtomicU64::new(0),
            faults: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        }
    }

    /// Its name (a feed's name from the configuration, with a suffix for its servers).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What it is.
    pub fn kind(&self) -> DependencyKind {
        self.kind
    }

    /// Posts a manual command for the owner to take (the latest one posted wins).
    pub fn post(&self, command: ManualCommand) {
        let code = match command {
            ManualCommand::Isolate => ISOLATE,
            ManualCommand::Close => CLOSE,
        };
        self.command.store(code, Ordering::Release);
    }

    /// Takes the pending manual command, if any (the owner's side; cheap enough to call once
    /// per poll loop).
    pub fn take_command(&self) -> Option<ManualCommand> {
        if self.command.load(Ordering::Relaxed) == NO_COMMAND {
            return None;
        }
        match self.command.swap(NO_COMMAND, Ordering::AcqRel) {
            ISOLATE => Some(ManualCommand::Isolate),
            CLOSE => Some(ManualCommand::Close),
            _ => None,
        }
    }

    /// Mirrors the breaker's state and its transition count (the owner's side).
    pub fn mirror_breaker(&self, state: BreakerMirror, transitions: u64) {
        self.breaker.store(state.code(), Ordering::Release);
        self.breaker_transitions
            .store(transitions, Ordering::Relaxed);
    }

    /// The breaker's state, as last mirrored.
    pub fn breaker(&self) -> BreakerMirror {
        BreakerMirror::of_code(self.breaker.load(Ordering::Acquire))
    }

    /// Stores the owner's counters (the owner keeps the authoritative ones and copies them
    /// here now and then, off the per-message path).
    pub fn store_counts(&self, c: DependencyCounts) {
        self.calls.store(c.calls, Ordering::Relaxed);
        self.distinct.store(c.distinct, Ordering::Relaxed);
        self.successes.store(c.successes, Ordering::Relaxed);
        self.faults.store(c.faults, Ordering::Relaxed);
        self.refused.store(c.refused, Ordering::Relaxed);
    }

    /// The counters as last stored.
    pub fn counts(&self) -> DependencyCounts {
        DependencyCounts {
            calls: self.calls.load(Ordering::Relaxed),
            distinct: self.distinct.load(Ordering::Relaxed),
            successes: self.successes.load(Ordering::Relaxed),
            faults: self.faults.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
            breaker_transitions: self.breaker_transitions.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_posted_command_is_taken_once_and_the_latest_wins() {
        let d = Dependency::new("a", DependencyKind::Line);
        assert_eq!(d.take_command(), None);
        d.post(ManualCommand::Isolate);
        d.post(ManualCommand::Close);
        assert_eq!(d.take_command(), Some(ManualCommand::Close));
        assert_eq!(d.take_command(), None);
    }

    #[test]
    fn the_mirror_round_trips_every_state() {
        let d = Dependency::new("a", DependencyKind::RetransmissionServer);
        for s in [
            BreakerMirror::Open,
            BreakerMirror::HalfOpen,
            BreakerMirror::Isolated,
            BreakerMirror::Closed,
        ] {
            d.mirror_breaker(s, 7);
            assert_eq!(d.breaker(), s);
        }
        assert_eq!(d.counts().breaker_transitions, 7);
    }

    #[test]
    fn the_multiplier_and_the_ratio_come_from_the_stored_counts() {
        let d = Dependency::new("a", DependencyKind::RetransmissionServer);
        assert_eq!(d.counts().call_multiplier(), None);
        assert_eq!(d.counts().success_ratio(), None);
        d.store_counts(DependencyCounts {
            calls: 30,
            distinct: 10,
            successes: 12,
            ..DependencyCounts::default()
        });
        assert_eq!(d.counts().call_multiplier(), Some(3.0));
        assert_eq!(d.counts().success_ratio(), Some(0.4));
    }
}
