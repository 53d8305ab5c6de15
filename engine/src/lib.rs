//! ticklane's applications: the run configuration, file replay, a live line, the demo and
//! tail, which the thin `ticklane` command (the crate `engine/cli`) calls, over the layers below them, each a crate of
//! its own so that Cargo keeps the order:
//!
//! | crate | what it holds |
//! |---|---|
//! | `ticklane-ring` | the SPSC ring and the seqlock slot protocol (loom-checked) |
//! | `ticklane-book` | L3 books, their L2 view, the per-message apply step, the publish trait; no I/O |
//! | `ticklane-snapshot` | the mmap snapshot: layout, writer, reader |
//! | `ticklane-outputs` | CSV, DBN, sampled depth, Parquet (feature `parquet`), the writer thread |
//! | `ticklane-pipeline` | the stages' clock, health, dependencies, overload policy, sources, the book stage |
//! | `ticklane-serve` | the subscriber server, its protocol and admission policy, the client library |
//! | `ticklane-http` | the admin HTTP server and the browser view |
//! | `ticklane-engine` (this crate) | `config`, `replay`, `live`, `tail`; `views`, every report's text; `watch`, the commands that print as they go (`book`, `top`, `subscribe`) |
//! | `ticklane` (`engine/cli`) | the command: clap arguments, one call here per command |
//!
//! A program that wants one layer depends on its crate alone. This crate re-exports every
//! layer under the module name it is known by (`ticklane_engine::book`,
//! `ticklane_engine::snapshot`, …), for programs and tests that use all of them.
#![deny(unsafe_code)]

pub use ticklane_book as book;
pub use ticklane_book::publish;
pub use ticklane_http::{admin, admin_token, http_head, web};
pub use ticklane_outputs::{
    csv, dbn_out, output_filter, parquet_out, row_chunks, sample, table_rows, table_tap,
    writer_thread,
};
pub use ticklane_pipeline as pipeline;
pub use ticklane_pipeline::{clock, dependency, health, overload};
pub use ticklane_ring::{ring, seqlock};
pub use ticklane_serve as serve;
pub use ticklane_serve::serve_guard;
pub use ticklane_snapshot as snapshot;

pub mod config;
pub mod digit_groups;
pub mod exit_status;
pub mod live;
pub mod replay;
pub mod tail;
pub mod views;
pub mod watch;
