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
        }
    }
}
