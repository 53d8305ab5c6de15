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
