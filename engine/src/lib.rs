//! ticklane's engine: order books, replay, and the `ticklane` binary.
//!
//! `unsafe` is denied crate-wide; only the ring, the seqlock and the snapshot mapping allow
//! it, each block with a `// SAFETY:` line.
#![deny(unsafe_code)]

pub mod book;
pub mod config;
pub mod live;
pub mod pipeline;
pub mod replay;
pub mod ring;
pub mod seqlock;
pub mod snapshot;
mod sync;
