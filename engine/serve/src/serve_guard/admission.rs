//! The one decision the subscriber server asks at each stage of a connection's life.

use std::net::IpAddr;

use ticklane_feed::rng::SplitMix64;

use super::peer_table::{PeerLimits, PeerRefusal, PeerTable};
use super::rate_limit::RateLimit;
use super::retry_after::RetryAfter;

/// The stages of a connection, in the order it goes through them; each is limited on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stage {
    /// A new TCP connection: the accept rate, the open connections, the per-IP limits.
    /// Held until the connection closes.
    Connect,
    /// The protocol handshake (version exchange). Held until it ends either way.
    Handshake,
    /// Login: the login rate and the per-account limits. Held as the account's *session*:
    /// release it when the connection closes, so the per-account limit counts sessions.
    Login,
    /// A subscription and its initial book image. Held until the image is sent.
    Subscribe,
    /// The symbol list, the most expensive answer: the tightest limits. Held until sent.
    SymbolList,
}

impl Stage {
    /// Every stage, in order.
    pub const ALL: [Stage; 5] = [
        Stage::Connect,
        Stage::Handshake,
        Stage::Login,
        Stage::Subscribe,
        Stage::SymbolList,
    ];

    /// The stage's name in counters and logs.
    pub const fn as_str(self) -> &'static str {
        match self {
            Stage::Connect => "connect",
            Stage::Handshake => "handshake",
            Stage::Login => "login",
            Stage::Subscribe => "subscribe",
            Stage::SymbolList => "symbol_list",
        }
    }

    const fn index(self) -> usize {
        self as usize
    }
}

/// Why a stage was refused. Each refusal is immediate: nothing is queued, and the server
/// answers with the reason and a retry-after, then closes (for [`Stage::Connect`] and
/// [`Stage::Login`]) or refuses the one request (the later stages).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RejectReason {
    /// The stage's rate (new connections, logins, ... per second) is spent.
    Rate,
    /// The stage's in-flight limit is reached (open connections, handshakes in progress,
    /// images being built, symbol lists being sent).
    Busy,
    /// This IP address made too many connection attempts in the window.
    IpAttempts,
    /// This IP address holds too many connections.
    IpConnections,
    /// This account made too many login attempts in the window.
    AccountAttempts,
    /// This account holds too many sessions.
    AccountSessions,
    /// The per-client table has no slot for this client: raise `table_slots`.
    TableFull,
    /// The server is draining for a restart: come back after the retry-after.
    Draining,
}

impl RejectReason {
    /// Every reason, in the order of [`AdmissionCounts::rejected`]'s inner arrays.
    pub const ALL: [RejectReason; 8] = [
        RejectReason::Rate,
        RejectReason::Busy,
        RejectReason::IpAttempts,
        RejectReason::IpConnections,
        RejectReason::AccountAttempts,
        RejectReason::AccountSessions,
        RejectReason::TableFull,
        RejectReason::Draining,
    ];

    /// The reason's name on the wire's log line and in counters.
    pub const fn as_str(self) -> &'static str {
        match self {
            RejectReason::Rate => "rate",
            RejectReason::Busy => "busy",
            RejectReason::IpAttempts => "ip_attempts",
            RejectReason::IpConnections => "ip_connections",
            RejectReason::AccountAttempts => "account_attempts",
            RejectReason::AccountSessions => "account_sessions",
            RejectReason::TableFull => "table_full",
            RejectReason::Draining => "draining",
        }
    }

    const fn index(self) -> usize {
        self as usize
    }
}

/// A refusal: why, and how long the client is told to wait (drawn per refusal).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rejection {
    /// Why.
    pub reason: RejectReason,
    /// Milliseconds the client should wait before trying again.
    pub retry_after_ms: u32,
}

/// The answer to [`Admission::admit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Go ahead; call [`Admission::release`] with the same stage and client when the stage's
    /// hold ends.
    Admitted,
    /// Refused at once; nothing is held.
    Rejected(Rejection),
}

/// One stage's limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StageLimit {
    /// Admissions per second (a token bucket)...
    pub per_second: u32,
    /// ...with bursts of at most this many.
    pub burst: u32,
    /// Holds at once (see each [`Stage`] for what it holds).
    pub max_in_flight: u32,
}

/// Settings of an [`Admission`]. The defaults are in [`AdmissionConfig::default`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdmissionConfig {
    /// New connections: the accept rate, and open connections at most.
    pub connect: StageLimit,
    /// Handshakes.
    pub handshake: StageLimit,
    /// Logins; `max_in_flight` is the sessions held at once.
    pub login: StageLimit,
    /// Subscriptions (each builds a book image).
    pub subscribe: StageLimit,
    /// Symbol lists: last and tightest.
    pub symbol_list: StageLimit,
    /// Per IP address: open connections, connection attempts per window.
    pub per_ip: PeerLimits,
    /// Per account: sessions, login attempts per window.
    pub per_account: PeerLimits,
    /// Slots of each per-client table (IPs, accounts): fixed memory, about 48 bytes a slot.
    pub table_slots: usize,
    /// The retry-after every rejection carries, drawn per rejection.
    pub retry_after: RetryAfter,
    /// A connection that has not logged in this long after it was accepted is closed.
    pub login_timeout_ms: u32,
    /// Seeds the retry-after draws and the tables' slot hash.
    pub seed: u64,
}

#[cfg(test)]
impl StageLimit {
    /// No limit a test would reach.
    pub(crate) const OPEN: StageLimit = StageLimit {
        per_second: 1_000_000,
        burst: 1_000_000,
        max_in_flight: u32::MAX,
    };
}

#[cfg(test)]
impl AdmissionConfig {
    /// Everything open (per-peer windows of `window_ns`, 4,096 table slots), for tests that
    /// narrow one limit at a time.
    pub(crate) fn wide_open(window_ns: u64) -> AdmissionConfig {
        let lots = PeerLimits {
            max_open: u32::MAX,
            max_attempts: u32::MAX,
            window_ns,
        };
        AdmissionConfig {
            connect: StageLimit::OPEN,
            handshake: StageLimit::OPEN,
            login: StageLimit::OPEN,
            subscribe: StageLimit::OPEN,
            symbol_list: StageLimit::OPEN,
            per_ip: lots,
            per_account: lots,
            table_slots: 4_096,
            ..AdmissionConfig::default()
        }
    }
}

impl Default for AdmissionConfig {
    /// 500 new connections a second (bursts of 100), 10,000 open; 16 connections and 30
    /// attempts per 10 s per IP; 4 sessions and 10 login attempts per 10 s per account; the
    /// symbol list 20 a second, 2 at once; retry-after 2–5 s; login timeout 5 s.
    fn default() -> Self {
        const TEN_S: u64 = 10_000_000_000;
        AdmissionConfig {
            connect: StageLimit {
                per_second: 500,
                burst: 100,
                max_in_flight: 10_000,
            },
            handshake: StageLimit {
                per_second: 1_000,
                burst: 200,
                max_in_flight: 256,
            },
            login: StageLimit {
                per_second: 500,
                burst: 100,
                max_in_flight: 10_000,
            },
            subscribe: StageLimit {
                per_second: 2_000,
                burst: 500,
                max_in_flight: 64,
            },
            symbol_list: StageLimit {
                per_second: 20,
                burst: 5,
                max_in_flight: 2,
            },
            per_ip: PeerLimits {
                max_open: 16,
                max_attempts: 30,
                window_ns: TEN_S,
            },
            per_account: PeerLimits {
                max_open: 4,
                max_attempts: 10,
                window_ns: TEN_S,
            },
            table_slots: 16_384,
            retry_after: RetryAfter::DEFAULT,
            login_timeout_ms: 5_000,
            seed: 0x7469_636b_6c61_6e65, // "ticklane"
        }
    }
}

/// A client as the admission sees it: its address, and its account once it names one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Peer {
    /// The connection's source address.
    pub ip: IpAddr,
    /// The account's key ([`Peer::account_key`]), from the login on.
    pub account: Option<u128>,
}

impl Peer {
    /// A client known by its address only (before login).
    pub fn new(ip: IpAddr) -> Self {
        Peer { ip, account: None }
    }

    /// The same client, logged in as `account`.
    pub fn with_account(self, account: &str) -> Self {
        Peer {
            account: Some(Self::account_key(account)),
            ..self
        }
    }

    /// The table key of an account name: two FNV-1a hashes side by side (128 bits, so two
    /// accounts sharing limits by collision is not a practical concern).
    pub fn account_key(account: &str) -> u128 {
        let fnv = |basis: u64| {
            account.bytes().fold(basis, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3)
            })
        };
        (u128::from(fnv(0xcbf2_9ce4_8422_2325)) << 64) | u128::from(fnv(0x8422_2325_cbf2_9ce4))
    }

    fn ip_key(&self) -> u128 {
        match self.ip {
            IpAddr::V4(v4) => u128::from(v4.to_ipv6_mapped()),
            IpAddr::V6(v6) => u128::from(v6),
        }
    }
}

/// Admissions and refusals, per stage and per reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AdmissionCounts {
    /// Admitted, indexed by [`Stage::ALL`]'s order.
    pub admitted: [u64; 5],
    /// Refused, indexed by stage then by [`RejectReason::ALL`]'s order.
    pub rejected: [[u64; 8]; 5],
    /// Connections closed for not logging in within the login timeout.
    pub login_timeouts: u64,
}

impl AdmissionCounts {
    /// Admitted at `stage`.
    pub fn admitted_at(&self, stage: Stage) -> u64 {
        self.admitted[stage.index()]
    }

    /// Refused at `stage` for `reason`.
    pub fn rejected_at(&self, stage: Stage, reason: RejectReason) -> u64 {
        self.rejected[stage.index()][reason.index()]
    }

    /// Refused at `stage`, every reason.
    pub fn rejected_total(&self, stage: Stage) -> u64 {
        self.rejected[stage.index()].iter().sum()
    }
}

#[derive(Clone, Copy, Debug)]
struct StageState {
    rate: RateLimit,
    in_flight: u32,
    max_in_flight: u32,
}

impl StageState {
    fn new(limit: StageLimit) -> Self {
        StageState {
            rate: RateLimit::new(limit.per_second, limit.burst),
            in_flight: 0,
            max_in_flight: limit.max_in_flight,
        }
    }
}

/// The admission policy of the subscriber server: the server asks it at each [`Stage`] of
/// every connection and does what it says, and tells it when each hold ends. Sans-I/O: time
/// is the caller's nanosecond clock, handed in, so the same decisions run in the server, in
/// the storm harness and in tests.
///
/// The order of the checks matters: a client's own limits first (counting its attempt even
/// when refused), then the stage's in-flight limit, and the shared rate last, so a client in
/// a reconnect loop is turned away by its own limit without spending a token of everyone's
/// budget.
///
/// `Admission` is `Send` but not shared: the server's thread owns it.
///
/// ```
/// use std::net::{IpAddr, Ipv4Addr};
/// use ticklane_serve::serve_guard::{Admission, AdmissionConfig, Decision, Peer, Stage};
///
/// let mut admission = Admission::new(AdmissionConfig::default());
/// let peer = Peer::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)));
/// assert_eq!(admission.admit(Stage::Connect, peer, 0), Decision::Admitted);
/// let peer = peer.with_account("alice");
/// assert_eq!(admission.admit(Stage::Login, peer, 1_000), Decision::Admitted);
/// // ... the connection closes:
/// admission.release(Stage::Login, peer);
/// admission.release(Stage::Connect, peer);
/// assert_eq!(admission.counts().admitted_at(Stage::Login), 1);
/// ```
#[derive(Debug)]
pub struct Admission {
    config: AdmissionConfig,
    stages: [StageState; 5],
    ips: PeerTable,
    accounts: PeerTable,
    rng: SplitMix64,
    counts: AdmissionCounts,
    draining: bool,
}

impl Admission {
    /// A policy with these settings, nothing held.
    pub fn new(config: AdmissionConfig) -> Self {
        let c = &config;
        Admission {
            stages: [c.connect, c.handshake, c.login, c.subscribe, c.symbol_list]
                .map(StageState::new),
            ips: PeerTable::new(c.table_slots, c.per_ip, c.seed),
            accounts: PeerTable::new(c.table_slots, c.per_account, c.seed.rotate_left(32)),
            rng: SplitMix64::new(c.seed),
            counts: AdmissionCounts::default(),
            draining: false,
            config,
        }
    }

    /// The settings.
    pub fn config(&self) -> &AdmissionConfig {
        &self.config
    }

    /// Admissions and refusals so far.
    pub fn counts(&self) -> &AdmissionCounts {
        &self.counts
    }

    /// Holds of `stage` now.
    pub fn in_flight(&self, stage: Stage) -> u32 {
        self.stages[stage.index()].in_flight
    }

    /// From now on every new connection is refused with [`RejectReason::Draining`] and a
    /// retry-after (a restart is coming); the later stages of open connections still run.
    pub fn begin_draining(&mut self) {
        self.draining = true;
    }

    /// May `peer` enter `stage` at `now_ns`? On [`Decision::Admitted`] the stage is held
    /// until [`release`](Self::release). [`Stage::Login`] checks the per-account limits when
    /// `peer.account` is set.
    pub fn admit(&mut self, stage: Stage, peer: Peer, now_ns: u64) -> Decision {
        match self.check(stage, peer, now_ns) {
            Ok(()) => {
                self.stages[stage.index()].in_flight += 1;
                self.counts.admitted[stage.index()] += 1;
                Decision::Admitted
            }
            Err(reason) => {
                self.counts.rejected[stage.index()][reason.index()] += 1;
                Decision::Rejected(Rejection {
                    reason,
                    retry_after_ms: self.config.retry_after.draw(&mut self.rng),
                })
            }
        }
    }

    /// Every check in order; on success the client's own hold is taken (the stage's
    /// in-flight count is the caller's to add).
    fn check(&mut self, stage: Stage, peer: Peer, now_ns: u64) -> Result<(), RejectReason> {
        if stage == Stage::Connect && self.draining {
            return Err(RejectReason::Draining);
        }
        let own = match (stage, peer.account) {
            (Stage::Connect, _) => Some((&mut self.ips, peer.ip_key(), false)),
            (Stage::Login, Some(account)) => Some((&mut self.accounts, account, true)),
            _ => None,
        };
        let own_key = match own {
            Some((table, key, is_account)) => {
                table
                    .attempt(key, now_ns)
                    .map_err(|refusal| match (refusal, is_account) {
                        (PeerRefusal::TooManyAttempts, false) => RejectReason::IpAttempts,
                        (PeerRefusal::TooManyOpen, false) => RejectReason::IpConnections,
                        (PeerRefusal::TooManyAttempts, true) => RejectReason::AccountAttempts,
                        (PeerRefusal::TooManyOpen, true) => RejectReason::AccountSessions,
                        (PeerRefusal::TableFull, _) => RejectReason::TableFull,
                    })?;
                Some(key)
            }
            None => None,
        };
        let state = &mut self.stages[stage.index()];
        let shared = if state.in_flight >= state.max_in_flight {
            Err(RejectReason::Busy)
        } else if !state.rate.try_take(now_ns) {
            Err(RejectReason::Rate)
        } else {
            Ok(())
        };
        if shared.is_err() {
            // The client's hold was taken above; the stage refused, so give it back.
            self.release_own(stage, own_key);
        }
        shared
    }

    fn release_own(&mut self, stage: Stage, key: Option<u128>) {
        match (stage, key) {
            (Stage::Connect, Some(key)) => self.ips.release(key),
            (Stage::Login, Some(key)) => self.accounts.release(key),
            _ => {}
        }
    }

    /// Ends a hold of `stage` by `peer` (the same `peer` as admitted: for [`Stage::Login`],
    /// with its account). A release with nothing held is ignored.
    pub fn release(&mut self, stage: Stage, peer: Peer) {
        let state = &mut self.stages[stage.index()];
        state.in_flight = state.in_flight.saturating_sub(1);
        let key = match stage {
            Stage::Connect => Some(peer.ip_key()),
            Stage::Login => peer.account,
            _ => None,
        };
        self.release_own(stage, key);
    }

    /// The time by which a connection accepted at `connected_ns` must have logged in.
    pub fn login_deadline_ns(&self, connected_ns: u64) -> u64 {
        connected_ns.saturating_add(u64::from(self.config.login_timeout_ms) * 1_000_000)
    }

    /// Whether a connection accepted at `connected_ns` and not logged in is past its login
    /// deadline at `now_ns`; the server closes it (and releases its holds) when so, and this
    /// counts it. Ask once per connection: each `true` is counted.
    pub fn login_expired(&mut self, connected_ns: u64, now_ns: u64) -> bool {
        let expired = now_ns >= self.login_deadline_ns(connected_ns);
        if expired {
            self.counts.login_timeouts += 1;
        }
        expired
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;

    const MS: u64 = 1_000_000;
    const S: u64 = 1_000 * MS;

    fn ip(n: u32) -> Peer {
        Peer::new(IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + n)))
    }

    /// Everything open except what a test narrows.
    fn open_config() -> AdmissionConfig {
        AdmissionConfig::wide_open(S)
    }

    fn rejected(d: Decision) -> Rejection {
        match d {
            Decision::Rejected(r) => r,
            Decision::Admitted => panic!("admitted"),
        }
    }

    #[test]
    fn the_accept_rate_refuses_the_excess_at_once_with_a_jittered_retry_after() {
        let mut a = Admission::new(AdmissionConfig {
            connect: StageLimit {
                per_second: 10,
                burst: 10,
                max_in_flight: 1_000,
            },
            ..open_config()
        });
        let decisions: Vec<_> = (0..50).map(|n| a.admit(Stage::Connect, ip(n), 0)).collect();
        assert!(decisions[..10].iter().all(|d| *d == Decision::Admitted));
        let waits: Vec<u32> = decisions[10..]
            .iter()
            .map(|d| {
                let r = rejected(*d);
                assert_eq!(r.reason, RejectReason::Rate);
                r.retry_after_ms
            })
            .collect();
        assert!(
            waits.iter().all(|w| (2_000..=5_000).contains(w)),
            "{waits:?}"
        );
        // 40 draws from 3,001 values: all equal has probability about 3001^-39.
        let distinct: std::collections::BTreeSet<_> = waits.iter().collect();
        assert!(distinct.len() > 30, "{distinct:?}");
        assert_eq!(a.counts().admitted_at(Stage::Connect), 10);
        assert_eq!(
            a.counts().rejected_at(Stage::Connect, RejectReason::Rate),
            40
        );
        assert_eq!(a.in_flight(Stage::Connect), 10);
    }

    /// Twenty well-behaved clients arrive over one second while one client reconnects every
    /// millisecond; the accept budget over that second is 10 + 20 = 30 connections.
    fn loop_against_twenty(per_ip_attempts: u32) -> u64 {
        let mut a = Admission::new(AdmissionConfig {
            connect: StageLimit {
                per_second: 20,
                burst: 10,
                max_in_flight: 1_000,
            },
            per_ip: PeerLimits {
                max_open: 16,
                max_attempts: per_ip_attempts,
                window_ns: 10 * S,
            },
            ..open_config()
        });
        let looper = ip(999);
        let mut good_admitted = 0;
        for t in 0..1_000u64 {
            if a.admit(Stage::Connect, looper, t * MS) == Decision::Admitted {
                a.release(Stage::Connect, looper); // drops at once and reconnects
            }
            if t % 50 == 25 && a.admit(Stage::Connect, ip(t as u32), t * MS) == Decision::Admitted {
                good_admitted += 1;
            }
        }
        good_admitted
    }

    #[test]
    fn a_client_in_a_reconnect_loop_cannot_eat_the_accept_budget() {
        // With a per-IP limit of 5 attempts the loop takes at most 5 tokens: all 20 others in.
        assert_eq!(loop_against_twenty(5), 20);
        // Without it (the control) the loop takes nearly every token and the others starve.
        assert!(loop_against_twenty(u32::MAX) < 5);
    }

    #[test]
    fn per_ip_connections_are_capped_and_a_refused_stage_gives_the_ip_hold_back() {
        let mut a = Admission::new(AdmissionConfig {
            connect: StageLimit {
                per_second: 1_000,
                burst: 1_000,
                max_in_flight: 20,
            },
            per_ip: PeerLimits {
                max_open: 16,
                max_attempts: 1_000,
                window_ns: S,
            },
            ..open_config()
        });
        let p = ip(1);
        for _ in 0..16 {
            assert_eq!(a.admit(Stage::Connect, p, 0), Decision::Admitted);
        }
        let r = rejected(a.admit(Stage::Connect, p, 0));
        assert_eq!(r.reason, RejectReason::IpConnections);
        for n in 2..6 {
            assert_eq!(a.admit(Stage::Connect, ip(n), 0), Decision::Admitted);
        }
        // 20 open: the server is full; ip(6)'s refusal must not leave it holding a slot.
        assert_eq!(
            rejected(a.admit(Stage::Connect, ip(6), 0)).reason,
            RejectReason::Busy
        );
        assert_eq!(a.ips.open(ip(6).ip_key()), 0);
        a.release(Stage::Connect, p);
        assert_eq!(a.admit(Stage::Connect, ip(6), 0), Decision::Admitted);
        assert_eq!(a.ips.open(ip(6).ip_key()), 1);
    }

    #[test]
    fn per_account_sessions_and_login_attempts_are_capped_across_addresses() {
        let mut a = Admission::new(AdmissionConfig {
            per_account: PeerLimits {
                max_open: 4,
                max_attempts: 6,
                window_ns: 10 * S,
            },
            ..open_config()
        });
        let alice = |n| ip(n).with_account("alice");
        for n in 0..4 {
            assert_eq!(a.admit(Stage::Login, alice(n), 0), Decision::Admitted);
        }
        let r = rejected(a.admit(Stage::Login, alice(4), 0));
        assert_eq!(r.reason, RejectReason::AccountSessions);
        // Another account is not affected.
        assert_eq!(
            a.admit(Stage::Login, ip(4).with_account("bob"), 0),
            Decision::Admitted
        );
        a.release(Stage::Login, alice(0));
        assert_eq!(a.admit(Stage::Login, alice(5), 1), Decision::Admitted); // 6th attempt
        a.release(Stage::Login, alice(5));
        let r = rejected(a.admit(Stage::Login, alice(6), 2));
        assert_eq!(r.reason, RejectReason::AccountAttempts);
        assert_eq!(a.admit(Stage::Login, alice(6), 10 * S), Decision::Admitted);
        assert_eq!(a.counts().rejected_total(Stage::Login), 2);
    }

    #[test]
    fn each_stage_is_limited_on_its_own_and_the_symbol_list_most_tightly() {
        let d = AdmissionConfig::default();
        let limits = [d.handshake, d.login, d.subscribe, d.symbol_list];
        // The defaults keep the symbol list the tightest stage in rate and in flight.
        for other in &limits[..3] {
            assert!(d.symbol_list.per_second < other.per_second);
            assert!(d.symbol_list.max_in_flight < other.max_in_flight);
        }
        let mut a = Admission::new(AdmissionConfig {
            symbol_list: d.symbol_list,
            ..open_config()
        });
        let p = ip(1);
        // Two at once (its in-flight limit is 2); the third is refused as busy...
        assert_eq!(a.admit(Stage::SymbolList, p, 0), Decision::Admitted);
        assert_eq!(a.admit(Stage::SymbolList, p, 0), Decision::Admitted);
        let r = rejected(a.admit(Stage::SymbolList, p, 0));
        assert_eq!(r.reason, RejectReason::Busy);
        // ...while subscriptions still flow.
        assert!((0..100).all(|_| a.admit(Stage::Subscribe, p, 0) == Decision::Admitted));
        // Served one at a time, the burst of 5 then the rate of 20 a second (one per 50 ms)
        // holds it: 2 more at t=0 (5 in all), then refused.
        a.release(Stage::SymbolList, p);
        a.release(Stage::SymbolList, p);
        for _ in 0..3 {
            assert_eq!(a.admit(Stage::SymbolList, p, 0), Decision::Admitted);
            a.release(Stage::SymbolList, p);
        }
        let r = rejected(a.admit(Stage::SymbolList, p, 0));
        assert_eq!(r.reason, RejectReason::Rate);
        assert_eq!(a.admit(Stage::SymbolList, p, 50 * MS), Decision::Admitted);
        assert_eq!(a.counts().admitted_at(Stage::SymbolList), 6);
    }

    #[test]
    fn draining_refuses_new_connections_only() {
        let mut a = Admission::new(open_config());
        let p = ip(1);
        assert_eq!(a.admit(Stage::Connect, p, 0), Decision::Admitted);
        a.begin_draining();
        let r = rejected(a.admit(Stage::Connect, ip(2), 0));
        assert_eq!(r.reason, RejectReason::Draining);
        assert!((2_000..=5_000).contains(&r.retry_after_ms));
        assert_eq!(a.admit(Stage::Subscribe, p, 0), Decision::Admitted);
    }

    #[test]
    fn the_login_timeout_fires_at_its_deadline_not_before() {
        let mut a = Admission::new(AdmissionConfig {
            login_timeout_ms: 5_000,
            ..open_config()
        });
        assert_eq!(a.login_deadline_ns(7 * S), 12 * S);
        assert!(!a.login_expired(7 * S, 12 * S - 1));
        assert!(a.login_expired(7 * S, 12 * S));
        assert_eq!(a.counts().login_timeouts, 1);
        assert_eq!(a.login_deadline_ns(u64::MAX), u64::MAX);
    }

    #[test]
    fn releases_without_holds_and_ipv6_peers_do_not_panic() {
        let mut a = Admission::new(open_config());
        let v6 = Peer::new(IpAddr::V6(std::net::Ipv6Addr::LOCALHOST)).with_account("");
        for stage in Stage::ALL {
            a.release(stage, v6);
            assert_eq!(a.in_flight(stage), 0);
            assert_eq!(a.admit(stage, v6, u64::MAX), Decision::Admitted);
        }
        assert_ne!(Peer::account_key("alice"), Peer::account_key("alicf"));
    }
}
