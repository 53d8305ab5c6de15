//! The storm defences of [`crate::serve_guard`] behind the server's [`Admission`] trait: the
//! default admission of `ticklane run --serve`.
#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::serve_guard::{
    self, AdmissionConfig, AdmissionCounts, Decision, Peer, RejectReason, Stage as GuardStage,
};

use super::admission::{Admission, Stage, Verdict};

/// Connections expected at once before the table of open connections grows (it grows on
/// accept, a cold path, never while serving updates).
const EXPECTED_CONNECTIONS: usize = 1_024;

/// The [`serve_guard::Admission`] policy as the server's [`Admission`]. Each stage the
/// server asks about maps to the policy's stage, and each hold ends where the policy says:
///
/// | server asks | policy stage(s) | hold ends |
/// |---|---|---|
/// | `on_accept` | `Connect`, then `Handshake` | `Connect` at close; `Handshake` at login or close |
/// | `on_login` | `Login` (with the account) | at close: the login is the account's session |
/// | `on_request(Subscribe)` | `Subscribe` | at once |
/// | `on_request(SymbolList)` | `SymbolList` | at once |
///
/// The handshake is the version exchange, which rides on the login message: a connection
/// is "in its handshake" from accept to login, so the handshake's in-flight limit bounds the
/// connections that have not logged in yet. The server builds and queues a request's answer
/// before it handles anything else, so a request's hold ends as soon as it is admitted: the
/// rates of those stages apply, their in-flight limits cannot be reached.
///
/// The counts go to a shared [`GuardCounters`] ([`GuardedAdmission::counters`]) so that the
/// run's summary can print them after the server's thread has taken this value.
#[derive(Debug)]
pub struct GuardedAdmission {
    policy: serve_guard::Admission,
    /// Every connection admitted and not closed yet, by its address (unique per connection).
    open: HashMap<SocketAddr, Held>,
    counters: Arc<GuardCounters>,
}

/// What one open connection holds beyond `Connect`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Held {
    /// Accepted, not logged in: the handshake.
    Handshake,
    /// Logged in: the account's session (the peer carries the account).
    Session(Peer),
    /// Login refused: only the connection (the server closes it).
    Nothing,
}

impl GuardedAdmission {
    /// The defences with these settings, nothing held.
    pub fn new(config: AdmissionConfig) -> Self {
        GuardedAdmission {
            policy: serve_guard::Admission::new(config),
            open: HashMap::with_capacity(EXPECTED_CONNECTIONS),
            counters: Arc::default(),
        }
    }

    /// The counts, readable from any thread while the server runs and after it stops.
    pub fn counters(&self) -> Arc<GuardCounters> {
        Arc::clone(&self.counters)
    }

    /// The policy's settings.
    pub fn config(&self) -> &AdmissionConfig {
        self.policy.config()
    }

    /// Asks the policy and publishes that stage's counts.
    fn admit(&mut self, stage: GuardStage, peer: Peer, now_ns: u64) -> Decision {
        let decision = self.policy.admit(stage, peer, now_ns);
        self.counters.publish(stage, self.policy.counts());
        decision
    }
}

impl Default for GuardedAdmission {
    /// [`AdmissionConfig::default`].
    fn default() -> Self {
        Self::new(AdmissionConfig::default())
    }
}

fn verdict(decision: Decision) -> Verdict {
    match decision {
        Decision::Admitted => Verdict::Accept,
        Decision::Rejected(r) => Verdict::Reject {
            retry_after_ms: r.retry_after_ms,
        },
    }
}

/// The account as the policy keys it: the login's space padding trimmed.
fn account_peer(peer: Peer, account: &[u8; 16]) -> Peer {
    let end = account
        .iter()
        .rposition(|&b| b != b' ')
        .map_or(0, |last| last + 1);
    // Invalid UTF-8 is replaced (allocating only then); it still names one account.
    peer.with_account(&String::from_utf8_lossy(&account[..end]))
}

impl Admission for GuardedAdmission {
    fn on_accept(&mut self, peer: SocketAddr, now_ns: u64) -> Verdict {
        let guard_peer = Peer::new(peer.ip());
        if let rejected @ Decision::Rejected(_) =
            self.admit(GuardStage::Connect, guard_peer, now_ns)
        {
            return verdict(rejected);
        }
        if let rejected @ Decision::Rejected(_) =
            self.admit(GuardStage::Handshake, guard_peer, now_ns)
        {
            self.policy.release(GuardStage::Connect, guard_peer);
            return verdict(rejected);
        }
        self.open.insert(peer, Held::Handshake);
        Verdict::Accept
    }

    fn on_login(&mut self, peer: SocketAddr, account: &[u8; 16], now_ns: u64) -> Verdict {
        let guard_peer = Peer::new(peer.ip());
        if self.open.get(&peer) == Some(&Held::Handshake) {
            self.policy.release(GuardStage::Handshake, guard_peer);
        }
        let session = account_peer(guard_peer, account);
        let decision = self.admit(GuardStage::Login, session, now_ns);
        let held = match decision {
            Decision::Admitted => Held::Session(session),
            Decision::Rejected(_) => Held::Nothing,
        };
        // A login on a connection this value never admitted (the server asks only after an
        // accept) is still counted and its session released at close.
        self.open.insert(peer, held);
        verdict(decision)
    }

    fn on_request(&mut self, peer: SocketAddr, stage: Stage, now_ns: u64) -> Verdict {
        let stage = match stage {
            Stage::Subscribe => GuardStage::Subscribe,
            Stage::SymbolList => GuardStage::SymbolList,
        };
        let guard_peer = Peer::new(peer.ip());
        let decision = self.admit(stage, guard_peer, now_ns);
        if decision == Decision::Admitted {
            self.policy.release(stage, guard_peer);
        }
        verdict(decision)
    }

    fn on_close(&mut self, peer: SocketAddr) {
        let guard_peer = Peer::new(peer.ip());
        let Some(held) = self.open.remove(&peer) else {
            return;
        };
        match held {
            Held::Handshake => self.policy.release(GuardStage::Handshake, guard_peer),
            Held::Session(session) => self.policy.release(GuardStage::Login, session),
            Held::Nothing => {}
        }
        self.policy.release(GuardStage::Connect, guard_peer);
    }
}

/// The admission counts of a [`GuardedAdmission`], shared: one relaxed atomic per stage and
/// per stage and reason.
#[derive(Debug, Default)]
pub struct GuardCounters {
    admitted: [AtomicU64; 5],
    rejected: [[AtomicU64; 8]; 5],
}

impl GuardCounters {
    fn publish(&self, stage: GuardStage, counts: &AdmissionCounts) {
        let i = stage_index(stage);
        self.admitted[i].store(counts.admitted_at(stage), Ordering::Relaxed);
        for (slot, reason) in self.rejected[i].iter().zip(RejectReason::ALL) {
            slot.store(counts.rejected_at(stage, reason), Ordering::Relaxed);
        }
    }

    /// The counts now (login timeouts are the server's: see `ServeConfig::login_timeout`).
    pub fn load(&self) -> AdmissionCounts {
        let mut counts = AdmissionCounts::default();
        for (i, admitted) in self.admitted.iter().enumerate() {
            counts.admitted[i] = admitted.load(Ordering::Relaxed);
        }
        for (i, reasons) in self.rejected.iter().enumerate() {
            for (j, r) in reasons.iter().enumerate() {
                counts.rejected[i][j] = r.load(Ordering::Relaxed);
            }
        }
        counts
    }
}

fn stage_index(stage: GuardStage) -> usize {
    GuardStage::ALL
        .iter()
        .position(|&s| s == stage)
        .expect("invariant: Stage::ALL lists every stage")
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};

    use super::*;
    use crate::serve_guard::{PeerLimits, RetryAfter, StageLimit};

    const S: u64 = 1_000_000_000;

    fn addr(ip: u8, port: u16) -> SocketAddr {
        SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, ip)), port)
    }

    fn account(name: &str) -> [u8; 16] {
        let mut a = [b' '; 16];
        a[..name.len()].copy_from_slice(name.as_bytes());
        a
    }

    /// Everything open except what a test narrows.
    fn open_config() -> AdmissionConfig {
        AdmissionConfig {
            table_slots: 256,
            retry_after: RetryAfter {
                min_ms: 1_000,
                max_ms: 3_000,
            },
            ..AdmissionConfig::wide_open(S)
        }
    }

    fn rejected(v: Verdict) -> bool {
        matches!(v, Verdict::Reject { .. })
    }

    #[test]
    fn a_login_holds_the_accounts_session_until_the_connection_closes() {
        let mut a = GuardedAdmission::new(AdmissionConfig {
            per_account: PeerLimits {
                max_open: 1,
                max_attempts: u32::MAX,
                window_ns: S,
            },
            ..open_config()
        });
        let (one, two, three) = (addr(1, 1), addr(2, 1), addr(3, 1));
        for c in [one, two, three] {
            assert_eq!(a.on_accept(c, 0), Verdict::Accept);
        }
        assert_eq!(a.on_login(one, &account("alice"), 1), Verdict::Accept);
        // The same account from another connection: one session at most.
        assert!(rejected(a.on_login(two, &account("alice"), 2)));
        // Another account is not affected.
        assert_eq!(a.on_login(three, &account("bob"), 3), Verdict::Accept);
        a.on_close(two); // the refused login held nothing: alice's session is still held
        assert_eq!(a.on_accept(two, 4), Verdict::Accept);
        assert!(rejected(a.on_login(two, &account("alice"), 5)));
        a.on_close(one);
        a.on_close(two);
        assert_eq!(a.on_accept(two, 6), Verdict::Accept);
        assert_eq!(a.on_login(two, &account("alice"), 7), Verdict::Accept);
        let counts = a.counters().load();
        assert_eq!(counts.admitted_at(GuardStage::Login), 3);
        assert_eq!(
            counts.rejected_at(GuardStage::Login, RejectReason::AccountSessions),
            2
        );
    }

    #[test]
    fn the_handshake_is_held_from_accept_to_login_and_connections_until_close() {
        let mut a = GuardedAdmission::new(AdmissionConfig {
            handshake: StageLimit {
                max_in_flight: 2,
                ..StageLimit::OPEN
            },
            per_ip: PeerLimits {
                max_open: 3,
                max_attempts: u32::MAX,
                window_ns: S,
            },
            ..open_config()
        });
        assert_eq!(a.on_accept(addr(1, 1), 0), Verdict::Accept);
        assert_eq!(a.on_accept(addr(1, 2), 0), Verdict::Accept);
        // Two connections are in their handshake: a third waits for one to log in.
        assert!(rejected(a.on_accept(addr(1, 3), 0)));
        assert_eq!(a.on_login(addr(1, 1), &account("a"), 1), Verdict::Accept);
        assert_eq!(a.on_accept(addr(1, 3), 2), Verdict::Accept);
        // The refused handshake gave its connection back: three open, the per-IP limit.
        assert!(rejected(a.on_accept(addr(1, 4), 3)));
        let counts = a.counters().load();
        assert_eq!(
            counts.rejected_at(GuardStage::Connect, RejectReason::IpConnections),
            1
        );
        assert_eq!(
            counts.rejected_at(GuardStage::Handshake, RejectReason::Busy),
            1
        );
        // A connection closed before login gives back its handshake and its connection.
        a.on_close(addr(1, 2));
        assert_eq!(a.on_accept(addr(1, 4), 4), Verdict::Accept);
        a.on_close(addr(1, 3));
        assert_eq!(a.on_accept(addr(1, 5), 5), Verdict::Accept);
    }

    #[test]
    fn requests_hold_nothing_past_their_admission_and_spend_their_stages_rate() {
        let mut a = GuardedAdmission::new(AdmissionConfig {
            symbol_list: StageLimit {
                per_second: 1,
                burst: 3,
                max_in_flight: 1,
            },
            ..open_config()
        });
        let c = addr(1, 1);
        assert_eq!(a.on_accept(c, 0), Verdict::Accept);
        assert_eq!(a.on_login(c, &account("a"), 0), Verdict::Accept);
        // In flight at most one, yet three in a row pass: each hold ended at admission.
        for _ in 0..3 {
            assert_eq!(a.on_request(c, Stage::SymbolList, 0), Verdict::Accept);
        }
        // The burst of three is spent.
        assert!(rejected(a.on_request(c, Stage::SymbolList, 0)));
        // Subscriptions have their own limits.
        assert_eq!(a.on_request(c, Stage::Subscribe, 0), Verdict::Accept);
        let counts = a.counters().load();
        assert_eq!(counts.admitted_at(GuardStage::SymbolList), 3);
        assert_eq!(
            counts.rejected_at(GuardStage::SymbolList, RejectReason::Rate),
            1
        );
        assert_eq!(counts.admitted_at(GuardStage::Subscribe), 1);
    }

    #[test]
    fn rejections_carry_retry_afters_spread_over_the_configured_range() {
        let mut a = GuardedAdmission::new(AdmissionConfig {
            connect: StageLimit {
                per_second: 1,
                burst: 1,
                max_in_flight: u32::MAX,
            },
            ..open_config()
        });
        let mut delays = Vec::new();
        for port in 0..200 {
            if let Verdict::Reject { retry_after_ms } = a.on_accept(addr(1, port), 0) {
                delays.push(retry_after_ms);
            }
        }
        assert_eq!(delays.len(), 199);
        assert!(delays.iter().all(|d| (1_000..=3_000).contains(d)));
        let (lo, hi) = (delays.iter().min(), delays.iter().max());
        // 199 uniform draws over 2,001 values: both ends within 10% of the range.
        assert!(lo < Some(&1_200) && hi > Some(&2_800), "{lo:?}..{hi:?}");
    }

    #[test]
    fn an_account_with_invalid_utf8_still_names_one_account() {
        let mut a = GuardedAdmission::new(AdmissionConfig {
            per_account: PeerLimits {
                max_open: 1,
                max_attempts: u32::MAX,
                window_ns: S,
            },
            ..open_config()
        });
        let mut odd = [b' '; 16];
        odd[..3].copy_from_slice(&[0xff, 0xfe, b'x']);
        assert_eq!(a.on_accept(addr(1, 1), 0), Verdict::Accept);
        assert_eq!(a.on_accept(addr(1, 2), 0), Verdict::Accept);
        assert_eq!(a.on_login(addr(1, 1), &odd, 0), Verdict::Accept);
        assert!(rejected(a.on_login(addr(1, 2), &odd, 0)));
    }
}
