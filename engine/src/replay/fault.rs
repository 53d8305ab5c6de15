//! Why a replay's outcome is a failure, typed, and the exit status that follows from it.
//!
//! A replay reports everything it applied before a fault, so the fault travels inside the
//! [`ReplaySummary`](super::ReplaySummary) rather than as an `Err`: the summary's screen
//! text and JSON show it, formatted once by the [`Display`](std::fmt::Display) here.

use std::path::PathBuf;

use ticklane_feed::capture::{CaptureError, NoMessages};
use ticklane_feed::itch::DecodeError;

/// What stopped a replay early, or made a replay that ran to its end a failure.
#[derive(Debug, thiserror::Error)]
pub enum ReplayFault {
    /// The input could not be read on: truncated, corrupt, an I/O or gzip error. Everything
    /// before it was applied.
    #[error(transparent)]
    Input(#[from] CaptureError),
    /// A message's bytes are not a valid ITCH 5.0 message of its type.
    #[error("file {}: byte {offset}, message {index}: {error}", path.display())]
    Decode {
        /// The input file.
        path: PathBuf,
        /// Byte offset of the message's length prefix.
        offset: u64,
        /// 1-based index of the message among the input's messages.
        index: u64,
        /// What is wrong with it.
        error: DecodeError,
    },
    /// A paced replay's book thread could not decode a message (the pipeline describes it;
    /// frames in a paced replay carry a sequence number, not a byte offset).
    #[error("{0}")]
    BookStage(String),
    /// The input read to its end and held no feed data at all: an empty file, a capture
    /// with no packets, or one whose packets carried no MoldUDP64 (another link type, no
    /// UDP, UDP that is not MoldUDP64). Nothing was replayed, which is not a success.
    #[error("file {}: {why}", path.display())]
    NoFeedData {
        /// The input file.
        path: PathBuf,
        /// Which case: empty, no packets, no MoldUDP64 (with the link type, if unsupported).
        why: NoMessages,
    },
}
