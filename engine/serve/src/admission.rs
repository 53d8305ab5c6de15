//! The place where admission decides, at accept, at login and before each request, whether
//! the server takes the work on or rejects it with a retry-after. The storm defences (accept
//! rate, per-IP and per-account limits, staged limits, a login timeout) implement
//! [`Admission`]; the server only asks.
#![forbid(unsafe_code)]

use std::net::SocketAddr;

/// What admission says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Take the work on.
    Accept,
    /// Refuse it now: the client is told to come back after this many milliseconds and the
    /// connection is closed (for a request: the request is dropped and counted).
    Reject {
        /// The retry-after sent to the client (jitter it: never one fixed value).
        retry_after_ms: u32,
    },
}

/// The stage of a connection's work a check is for, cheapest first: the symbol list, the
/// most expensive, comes last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// A subscription (a book image).
    Subscribe,
    /// The symbol list.
    SymbolList,
}

/// The admission checks, called on the server thread. Every method defaults to accepting.
pub trait Admission: Send {
    /// A connection from `peer` was accepted by the kernel at `now_ns`.
    fn on_accept(&mut self, peer: SocketAddr, now_ns: u64) -> Verdict {
        let _ = (peer, now_ns);
        Verdict::Accept
    }

    /// `peer` logged in as `account` (space padded).
    fn on_login(&mut self, peer: SocketAddr, account: &[u8; 16], now_ns: u64) -> Verdict {
        let _ = (peer, account, now_ns);
        Verdict::Accept
    }

    /// A logged-in client asks for work at `stage`.
    fn on_request(&mut self, peer: SocketAddr, stage: Stage, now_ns: u64) -> Verdict {
        let _ = (peer, stage, now_ns);
        Verdict::Accept
    }

    /// The connection from `peer` closed (for per-IP and per-account counts).
    fn on_close(&mut self, peer: SocketAddr) {
        let _ = peer;
    }
}

/// Admits everything: the server before the storm defences are plugged in.
#[derive(Clone, Copy, Debug, Default)]
pub struct AdmitAll;

impl Admission for AdmitAll {}
