//! The concurrency primitives under every ticklane thread: the bounded lock-free
//! single-producer single-consumer [`ring`] that joins the stages, and the [`seqlock`] slot
//! protocol the snapshot file is written under. A private `sync` shim re-exports loom's
//! atomics under `--cfg loom` and core's otherwise, so loom model-checks this very code:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 \
//!     cargo test -p ticklane-ring --release --target-dir target/loom loom
//! ```
//!
//! This crate depends on nothing of ticklane's, and must never: no books, no I/O, no
//! threads of its own. `unsafe` lives here (each block with its `// SAFETY:` line), and in
//! the snapshot mapping and the books' prefetch hint; nowhere else.
#![deny(unsafe_code)]

pub mod ring;
pub mod seqlock;
mod sync;
