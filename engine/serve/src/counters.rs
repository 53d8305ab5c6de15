//! The server's counters, shared with whoever reports them (the run summary, tests).
#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicU64, Ordering};

/// Live counters of the subscriber server; each is one relaxed atomic.
#[derive(Debug, Default)]
pub struct ServeCounters {
    clients: AtomicU64,
    accepted: AtomicU64,
    rejected: AtomicU64,
    cut_loose: AtomicU64,
    cut_idle: AtomicU64,
    shed: AtomicU64,
    conflated: AtomicU64,
    expired_requests: AtomicU64,
    requests: AtomicU64,
    bytes: AtomicU64,
    tls_established: AtomicU64,
    tls_failed: AtomicU64,
    tls_timed_out: AtomicU64,
    logins_not_authorised: AtomicU64,
    logins_wrong_version: AtomicU64,
    logins_session_limit: AtomicU64,
    logins_verifier_busy: AtomicU64,
    entitlement_refused: AtomicU64,
    entitlement_withdrawn: AtomicU64,
    accounts_reloaded: AtomicU64,
    accounts_reload_failed: AtomicU64,
}

/// A copy of [`ServeCounters`] at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServeCounts {
    /// Clients connected now.
    pub clients: u64,
    /// Connections accepted and logged in.
    pub accepted: u64,
    /// Connections or logins rejected (admission, bad version).
    pub rejected: u64,
    /// Clients cut loose because an event could neither be conflated nor queued.
    pub cut_loose: u64,
    /// Logged-in clients cut because nothing was heard from them for the idle timeout.
    pub cut_idle: u64,
    /// Clients shed under overload (the heaviest queue first).
    pub shed: u64,
    /// State updates conflated (not sent; replaced by the latest image).
    pub conflated: u64,
    /// Requests dropped because their budget ran out before work started.
    pub expired_requests: u64,
    /// Requests served (subscriptions and symbol lists).
    pub requests: u64,
    /// Bytes written to clients (plaintext, before TLS).
    pub bytes: u64,
    /// TLS handshakes completed.
    pub tls_established: u64,
    /// TLS handshakes that failed (a client that does not speak TLS, an unknown CA on the
    /// client's side, a protocol version or cipher it does not offer).
    pub tls_failed: u64,
    /// TLS handshakes not completed within the handshake timeout.
    pub tls_timed_out: u64,
    /// Logins refused: unknown account or wrong secret (one count: the two are not told
    /// apart, to the client or here).
    pub logins_not_authorised: u64,
    /// Logins refused: a version-1 login (no secret) to a server with accounts.
    pub logins_wrong_version: u64,
    /// Logins refused: the account's concurrent sessions were all in use.
    pub logins_session_limit: u64,
    /// Logins refused: the verifier's queue was full (told to come back later).
    pub logins_verifier_busy: u64,
    /// Subscribes refused: a symbol the account may not see, or past its limit.
    pub entitlement_refused: u64,
    /// Subscriptions taken away by a change of the accounts file.
    pub entitlement_withdrawn: u64,
    /// Times the accounts file was loaded again.
    pub accounts_reloaded: u64,
    /// Times it changed but could not be used (the table in effect stayed).
    pub accounts_reload_failed: u64,
}

macro_rules! adders {
    ($($name:ident => $field:ident),* $(,)?) => {
        $(
            pub(crate) fn $name(&self, n: u64) {
                self.$field.fetch_add(n, Ordering::Relaxed);
            }
        )*
    };
}

impl ServeCounters {
    adders! {
        add_accepted => accepted,
        add_rejected => rejected,
        add_cut_loose => cut_loose,
        add_cut_idle => cut_idle,
        add_shed => shed,
        add_conflated => conflated,
        add_expired => expired_requests,
        add_requests => requests,
        add_bytes => bytes,
        add_tls_established => tls_established,
        add_tls_failed => tls_failed,
        add_tls_timed_out => tls_timed_out,
        add_logins_not_authorised => logins_not_authorised,
        add_logins_wrong_version => logins_wrong_version,
        add_logins_session_limit => logins_session_limit,
        add_logins_verifier_busy => logins_verifier_busy,
        add_entitlement_refused => entitlement_refused,
        add_entitlement_withdrawn => entitlement_withdrawn,
        add_accounts_reloaded => accounts_reloaded,
        add_accounts_reload_failed => accounts_reload_failed,
    }

    pub(crate) fn set_clients(&self, n: usize) {
        self.clients.store(n as u64, Ordering::Relaxed);
    }

    /// The counts now.
    pub fn load(&self) -> ServeCounts {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        ServeCounts {
            clients: l(&self.clients),
            accepted: l(&self.accepted),
            rejected: l(&self.rejected),
            cut_loose: l(&self.cut_loose),
            cut_idle: l(&self.cut_idle),
            shed: l(&self.shed),
            conflated: l(&self.conflated),
            expired_requests: l(&self.expired_requests),
            requests: l(&self.requests),
            bytes: l(&self.bytes),
            tls_established: l(&self.tls_established),
            tls_failed: l(&self.tls_failed),
            tls_timed_out: l(&self.tls_timed_out),
            logins_not_authorised: l(&self.logins_not_authorised),
            logins_wrong_version: l(&self.logins_wrong_version),
            logins_session_limit: l(&self.logins_session_limit),
            logins_verifier_busy: l(&self.logins_verifier_busy),
            entitlement_refused: l(&self.entitlement_refused),
            entitlement_withdrawn: l(&self.entitlement_withdrawn),
            accounts_reloaded: l(&self.accounts_reloaded),
            accounts_reload_failed: l(&self.accounts_reload_failed),
        }
    }
}
