//! What can go wrong with a snapshot: `Copy` enums for the per-message and per-read paths, one
//! `thiserror` enum for creating, opening and exporting files.

use std::io;
use std::path::PathBuf;

use core::fmt;

/// Why [`SnapshotWriter::publish`](super::SnapshotWriter::publish) (or another per-instrument
/// write) could not write a slot. Returned on the hot path: it never allocates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PublishError {
    /// Every slot is taken by another instrument: create the file with a larger capacity
    /// (at most one slot per locate is ever needed).
    Full {
        /// Slots in the file.
        capacity: usize,
    },
}

impl fmt::Display for PublishError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PublishError::Full { capacity } => write!(
                f,
                "all {capacity} snapshot slots are in use: create the snapshot with a larger capacity"
            ),
        }
    }
}

impl std::error::Error for PublishError {}

/// Why [`SnapshotReader::read`](super::SnapshotReader::read) returned no state. Never a torn
/// read: a slot that cannot be copied consistently within the retry bound is reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadError {
    /// The slot index is not below the header's `instruments`: list slots with
    /// [`SnapshotReader::slots`](super::SnapshotReader::slots).
    NoSuchSlot {
        /// The index asked for.
        slot: usize,
        /// Slots in use.
        in_use: usize,
    },
    /// Every attempt found the sequence odd: a write is in progress, or the writer died in the
    /// middle of one (`kill -9`). If the heartbeat has stopped too, the slot stays unreadable
    /// until a new writer rewrites it.
    WriteInProgress {
        /// The odd sequence seen last.
        sequence: u64,
        /// Attempts made.
        attempts: u32,
    },
    /// Writes kept overlapping the copy: the instrument is updating faster than this reader
    /// copies. Retry later, or raise the retry bound.
    Contended {
        /// Attempts made.
        attempts: u32,
    },
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ReadError::NoSuchSlot { slot, in_use } => {
                write!(f, "slot {slot} is not in use ({in_use} slots are)")
            }
            ReadError::WriteInProgress { sequence, attempts } => write!(
                f,
                "slot stayed mid-write (odd sequence {sequence}) over {attempts} attempts: \
                 the writer is busy or died during a write"
            ),
            ReadError::Contended { attempts } => write!(
                f,
                "slot changed during each of {attempts} attempts to copy it"
            ),
        }
    }
}

impl std::error::Error for ReadError {}

/// Why a snapshot file could not be created, opened or exported.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// A file operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: io::Error,
    },
    /// Capacity or depth out of range.
    #[error(
        "snapshot capacity {capacity} and depth {depth} out of range \
         (capacity 1 ..= {max_capacity}, depth 1 ..= {max_depth})"
    )]
    BadGeometry {
        /// Slots asked for.
        capacity: usize,
        /// Levels per side asked for.
        depth: usize,
        /// [`MAX_CAPACITY`](super::layout::MAX_CAPACITY).
        max_capacity: usize,
        /// [`MAX_DEPTH`](super::layout::MAX_DEPTH).
        max_depth: usize,
    },
    /// Another writer holds the path: one writer per snapshot file. Stop that engine, or give
    /// this one another snapshot path.
    #[error(
        "{path}: another engine is writing this snapshot ({}; lock held on {lock}); \
         stop it or choose another snapshot path",
        holder_text(*.holder_pid)
    )]
    Locked {
        /// The snapshot file.
        path: PathBuf,
        /// The lock file whose `flock` is held.
        lock: PathBuf,
        /// The holder's pid, as it wrote it into the lock file (if readable).
        holder_pid: Option<u32>,
    },
    /// The file does not start with `TICKLANE`: not a snapshot file.
    #[error("{path}: not a ticklane snapshot (bad magic)")]
    BadMagic {
        /// The file.
        path: PathBuf,
    },
    /// The file was written by a host of the other byte order.
    #[error("{path}: written with the other byte order; read it on a host like the writer's")]
    ByteOrder {
        /// The file.
        path: PathBuf,
    },
    /// The layout version is not the one this reader knows.
    #[error("{path}: snapshot layout version {found}, this reader knows {supported}")]
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// The version in the file.
        found: u32,
        /// [`LAYOUT_VERSION`](super::layout::LAYOUT_VERSION).
        supported: u32,
    },
    /// A header field disagrees with the sizes that follow from the others, or with the file.
    #[error("{path}: inconsistent snapshot header: {field} is {found}, expected {expected}")]
    BadHeader {
        /// The file.
        path: PathBuf,
        /// The field.
        field: &'static str,
        /// Its value.
        found: u64,
        /// What it should be.
        expected: u64,
    },
    /// A slot could not be read consistently (while exporting every slot).
    #[error("snapshot slot {slot}: {source}")]
    Read {
        /// The slot index.
        slot: usize,
        /// Why.
        source: ReadError,
    },
    /// Writing an export failed.
    #[error("writing the export: {0}")]
    Output(#[source] io::Error),
}

/// `pid N`, or `pid unknown`.
fn holder_text(pid: Option<u32>) -> String {
    pid.map_or_else(|| "pid unknown".to_string(), |p| format!("pid {p}"))
}
