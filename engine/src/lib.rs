//! ticklane's engine: order books, their outputs, the live pipeline, and the applications
//! (file replay, a live line, the demo, tail) that the thin `ticklane` binary calls.
//!
//! # Layers
//!
//! Imports follow the data, downward only; `tests/layers.rs` reads these sources and fails
//! when a module imports one on its own floor or above. Lowest first:
//!
//! | floor | modules | what they hold |
//! |---|---|---|
//! | 0 | `sync`, `clock`, `digit_groups`, `health`, `dependency`, `admin_token`, `http_head`, `output_filter` | the atomics shim (loom or core), the stages' clock (time-stamp counter), counts for people, three-valued health, the shared handle of each dependency (breaker mirror, manual commands, storm counters), the admin's redacted bearer token, one HTTP request head read under a size limit and a deadline (both HTTP servers); which rows the replay's outputs write (`--symbols`, `--between`) |
//! | 1 | `ring`, `seqlock` | the SPSC ring and the seqlock slot protocol |
//! | 2 | `book`, `writer_thread` | L3 books, their L2 view, and the per-message apply step; the hand-off of derived rows (top of book, MBP-10) to a writer thread through the ring |
//! | 3 | `csv`, `dbn_out` | the CSV writers of the contracts (top-of-book stream, depth); DBN output in Databento's five book and trade schemas |
//! | 4 | `snapshot`, `publish`, `sample` | the mmap snapshot; the trait the book stage publishes through; depth sampled at interval boundaries (`--sample`), written through the CSV and DBN writers or a writer handed down |
//! | 5 | `parquet_out`, `overload`, `serve_guard` | Parquet output (top of book, MBP-10, sampled depth) with provenance; sojourn detection, shedding publisher, subscriber fan-out; the subscriber server's admission policy (reconnect-storm defences) and its stampede-free cache |
//! | 6 | `pipeline` | threads, ring, sources (capture, MoldUDP64, SoupBinTCP), the book stage |
//! | 7 | `config` | the run configuration file |
//! | 8 | `replay`, `live`, `tail`, `admin`, `serve`, `web` | the applications that wire the floors below; the HTTP server for health, metrics and admin calls; the subscriber server, its protocol and client; the browser view (page and WebSocket) |
//! | 9 | `views` | what the binary prints of their reports, and the exit status each earns |
//!
//! The `ticklane` binary sits above them all: it parses arguments, calls one application
//! and prints.
//!
//! `unsafe` is denied crate-wide; only the ring, the snapshot mapping and the books' cache
//! prefetch hint (`book::prefetch`, one intrinsic call) allow it, each block with a
//! `// SAFETY:` line.
//!
//! Under `--cfg loom` only the concurrency primitives are built (the ring, and the seqlock
//! that is the snapshot's slot protocol), for `cargo test -p ticklane-engine --lib ... loom`.
#![deny(unsafe_code)]

// Floor 0
#[cfg(not(loom))]
pub mod admin_token;
#[cfg(not(loom))]
pub mod clock;
#[cfg(not(loom))]
pub mod dependency;
#[cfg(not(loom))]
pub mod digit_groups;
#[cfg(not(loom))]
pub mod health;
#[cfg(not(loom))]
pub mod http_head;
#[cfg(not(loom))]
pub mod output_filter;
mod sync;
// Floor 1
pub mod ring;
pub mod seqlock;
// Floor 2
#[cfg(not(loom))]
pub mod book;
#[cfg(not(loom))]
pub mod writer_thread;
// Floor 3
#[cfg(not(loom))]
pub mod csv;
#[cfg(not(loom))]
pub mod dbn_out;
// Floor 4
#[cfg(not(loom))]
pub mod publish;
#[cfg(not(loom))]
pub mod sample;
#[cfg(not(loom))]
pub mod snapshot;
// Floor 5
#[cfg(not(loom))]
pub mod overload;
#[cfg(not(loom))]
pub mod parquet_out;
#[cfg(not(loom))]
pub mod serve_guard;
// Floor 6
#[cfg(not(loom))]
pub mod pipeline;
// Floor 7
#[cfg(not(loom))]
pub mod config;
// Floor 8
#[cfg(not(loom))]
pub mod admin;
#[cfg(not(loom))]
pub mod live;
#[cfg(not(loom))]
pub mod replay;
#[cfg(not(loom))]
pub mod serve;
#[cfg(not(loom))]
pub mod tail;
#[cfg(not(loom))]
pub mod views;
#[cfg(not(loom))]
pub mod web;
