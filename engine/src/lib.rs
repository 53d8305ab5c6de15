//! ticklane's engine: order books, replay, and the `ticklane` binary.
//!
//! `unsafe` is denied crate-wide; only the ring and the snapshot mapping allow it, each block
//! with a `// SAFETY:` line.
//!
//! Under `--cfg loom` only the concurrency primitives are built (the ring, and the seqlock
//! that is the snapshot's slot protocol), for `cargo test -p ticklane-engine --lib ... loom`.
#![deny(unsafe_code)]

#[cfg(not(loom))]
pub mod book;
#[cfg(not(loom))]
pub mod config;
#[cfg(not(loom))]
pub mod live;
#[cfg(not(loom))]
pub mod overload;
#[cfg(not(loom))]
pub mod pipeline;
#[cfg(not(loom))]
pub mod replay;
pub mod ring;
pub mod seqlock;
#[cfg(not(loom))]
pub mod snapshot;
mod sync;
