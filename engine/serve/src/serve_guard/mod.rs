//! Defences of the subscriber server against reconnect storms, and a cache that refreshes
//! expensive answers without a stampede. Sans-I/O: the server asks, these answer; time is a
//! nanosecond count the caller reads from its clock and hands in, so the storm harness and
//! the tests drive the same decisions as the server, exactly.
//!
//! - [`Admission`] is asked at each [`Stage`] of a connection (connect, handshake, login,
//!   subscribe, symbol list) and answers [`Decision::Admitted`] or a [`Rejection`] with its
//!   reason and a jittered retry-after; it holds the accept rate ([`RateLimit`]), the
//!   per-IP and per-account limits ([`PeerTable`], fixed memory), each stage's own limits,
//!   the login timeout, and counts every decision ([`AdmissionCounts`]).
//! - [`RetryAfter`] draws the delay a refusal carries from a range, never one fixed value.
//! - [`EarlyExpiry`] caches a derived answer with the time its computation took and
//!   refreshes it early, with a probability that rises as expiry nears (XFetch).
//!
//! # Reconnect storms: the admission policy
//!
//! At 09:30:00 every client that dropped overnight reconnects in the same second. The
//! subscriber server shapes that at its door: it asks [`Admission::admit`] at each stage of a
//! connection and gets [`Decision::Admitted`] or a [`Rejection`] (reason and retry-after) at
//! once: nothing is queued and nothing left half-open; it calls [`Admission::release`] when
//! the stage's hold ends (a connection holds its accept until close and its handshake until
//! login, a login holds the account's session until close, a request's hold ends once
//! admitted). Each decision is counted per stage and reason ([`AdmissionCounts`]), and the
//! run summary's `subscribers:` line ends with them. `ticklane run --serve` admits through
//! this policy (`serve::GuardedAdmission`), set by the `[serve]` keys of the configuration
//! (`engine/ticklane.example.toml`), with these defaults:
//!
//! | defence | default | why |
//! |---|---|---|
//! | accept rate (`connect`) | 500 new connections/s, bursts of 100; 10,000 open | a token bucket (GCRA, integer ns): the excess is refused at once with reason `rate` |
//! | per IP | 16 open connections, 30 attempts per 10 s | checked before the shared rate: a client in a reconnect loop is refused by its own limit (`ip_attempts`) without spending everyone's tokens |
//! | per account | 4 sessions, 10 login attempts per 10 s | the same at login, across addresses (`account_sessions`, `account_attempts`) |
//! | per-client tables | 16,384 slots each, fixed | bounded memory whatever the number of addresses; the oldest client holding nothing is forgotten first; a keyed slot hash; `table_full` if every candidate slot holds connections |
//! | handshake | 1,000/s, bursts of 200; 256 in progress | each stage limited on its own (`rate`, `busy`) |
//! | login | 500/s, bursts of 100; 10,000 sessions | a login timeout of 5 s closes connections that never log in |
//! | subscribe | 2,000/s, bursts of 500; 64 images in progress | each builds an image from the snapshot |
//! | symbol list | 20/s, bursts of 5; 2 at once | the most expensive answer: last and tightest, and cached (below) |
//! | retry-after | uniform in 2–5 s, drawn per refusal (seeded) | never one fixed value: a fixed delay brings every refused client back in the same second |
//! | draining | [`Admission::begin_draining`] refuses new connections with `draining` | a restart tells clients to come back later, jittered like any refusal |
//!
//! The symbol list (and any expensive derived answer) is cached by [`EarlyExpiry`], with the
//! time its computation took (`delta`): a lookup recomputes when
//! `now − delta · beta · ln(u) ≥ expiry`, `u` uniform in (0, 1] (XFetch, Vattani et al.
//! 2015; `beta` 1), all times in nanoseconds. A refresh is certain at expiry and impossible
//! more than `36.8 · delta · beta` before it; caches filled together refresh spread over the
//! seconds before expiry, not all at once as a plain time-to-live does.
//!
//! Three programs show the policy at work (their output is in `bench/README.md`):
//! `reconnect_storm` simulates 2,000 clients against this `Admission`, `serve_storm` runs
//! the same storm through the real server over loopback, and `engine/tests/it/serve_storm.rs`
//! starts 300 clients at once against an accept rate of 60/s and checks every one is served.
//!
//! # Retry storms: why one layer retries
//!
//! `cargo run --release -p ticklane-bench --bin storm_model` runs a deterministic model of a
//! chain of layers that each retry, against a dependency whose capacity drops for a while.
//! What it teaches, and what the engine does about it:
//!
//! - **Real demand and a retry storm look alike in the call rate and nowhere else.** When
//!   demand grows, calls and distinct request identities rise together: calls per distinct
//!   identity (the *call multiplier*) stays near 1 and the success ratio holds. In a storm
//!   the distinct identities stay flat while the calls multiply and the success ratio falls.
//! - **Retries buy nothing while the dependency is short.** It serves what it can whatever
//!   the retry policy; the extra calls are pure load, and they go on after the capacity is
//!   back, so recovery takes longer.
//! - **Each cut in the retry allowance trades drops for recovery time.** A retry budget
//!   (retries at most a fraction of first tries) is the middle road: it keeps the multiplier
//!   bounded whatever the layers above do.
//!
//! So the engine retries at one layer, under a budget and a circuit breaker
//! (`ticklane_feed::resilience`), and keeps per dependency the counters that tell the two
//! apart (`ticklane_pipeline::dependency`): calls, distinct identities (for a retransmission server,
//! distinct gap ranges; for a SoupBinTCP login, distinct sessions), successes, faults and
//! refusals, exported in `/metrics` with the call multiplier and the success ratio.
//!
//! # Examples
//!
//! ```
//! use std::net::{IpAddr, Ipv4Addr};
//! use ticklane_serve::serve_guard::{Admission, AdmissionConfig, Decision, Peer, Stage};
//!
//! let mut admission = Admission::new(AdmissionConfig::default());
//! let peer = Peer::new(IpAddr::V4(Ipv4Addr::LOCALHOST));
//! // A storm: 1,000 connections in the same nanosecond from one address.
//! let admitted = (0..1_000)
//!     .filter(|_| admission.admit(Stage::Connect, peer, 0) == Decision::Admitted)
//!     .count();
//! assert_eq!(admitted, 16); // the per-IP limit of open connections
//! ```
#![forbid(unsafe_code)]

mod admission;
mod early_expiry;
mod peer_table;
mod rate_limit;
mod retry_after;

pub use admission::{
    Admission, AdmissionConfig, AdmissionCounts, Decision, Peer, RejectReason, Rejection, Stage,
    StageLimit,
};
pub use early_expiry::{draw_unit, refresh_due, EarlyExpiry, Fetched, Lookup};
pub use peer_table::{PeerLimits, PeerRefusal, PeerTable};
pub use rate_limit::RateLimit;
pub use retry_after::RetryAfter;
