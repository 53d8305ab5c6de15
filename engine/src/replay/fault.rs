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

/// How a replay ended, for the process's exit status.
///
/// | variant | exit status | when |
/// |---|---|---|
/// | [`ReplayExit::Success`] | 0 | the input was read to its end and held feed data |
/// | [`ReplayExit::Failure`] | 1 | a [`ReplayFault`]: stopped early, or no feed data at all |
/// | [`ReplayExit::DeclaredLost`] | 3 | read to its end, but a capture's MoldUDP64 sequencer declared sequences lost |
///
/// A fault outranks loss: a replay that stopped early is a failure, whatever it lost.
///
/// A replay that could not start or write an output returns a
/// [`ReplayError`](super::ReplayError) instead, also exit status 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplayExit {
    /// Exit status 0.
    Success,
    /// Exit status 1.
    Failure,
    /// Exit status 3: messages were declared lost (the summary lists the ranges).
    DeclaredLost,
}

impl ReplayExit {
    /// The process exit status: 0, 1 or 3.
    pub fn code(self) -> u8 {
        match self {
            ReplayExit::Success => 0,
            ReplayExit::Failure => 1,
            ReplayExit::DeclaredLost => 3,
        }
    }
}
