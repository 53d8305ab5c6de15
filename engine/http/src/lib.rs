//! The engine's two HTTP servers and what they share: one request-head reader under a size
//! limit and a deadline ([`http_head`]), the [`admin`] server (health, metrics, admin calls,
//! behind the redacted bearer token of [`admin_token`]), and the browser [`web`] view (a page
//! and its WebSocket) with its [`web_counters`], which `/metrics` reads too. It reads
//! health, counters and the snapshot; it must never depend on the applications or the
//! configuration file.
#![forbid(unsafe_code)]

pub mod admin;
pub mod admin_token;
pub mod http_head;
pub mod web;
pub mod web_counters;
