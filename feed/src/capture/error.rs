//! Why a capture could not be read, with the file, byte offset and message index.
//!
//! Cold path: one error ends the read, so these may carry an `io::Error` and a path.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// A capture file could not be opened, or not read past some point. Every message before it
/// was yielded.
///
/// Displayed as `cannot open PATH: ...` when the file could not be opened (there is no byte
/// offset yet), otherwise as `file PATH: byte N, message M: ...`.
#[derive(Debug, thiserror::Error)]
pub struct CaptureError {
    /// The file being read.
    pub path: PathBuf,
    /// Byte offset in the input (decompressed, for gzip) of the frame that failed; 0 for
    /// errors while opening.
    pub offset: u64,
    /// 1-based index the failing message would have had among the messages yielded.
    pub index: u64,
    /// What is wrong.
    pub kind: CaptureErrorKind,
}

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        match &self.kind {
            // Before the first byte is read there is no position worth naming; the operation
            // and the path say everything.
            CaptureErrorKind::Io {
                op: op @ (IoOp::Open | IoOp::Stat | IoOp::Head | IoOp::Seek | IoOp::Map),
                error,
            } => write!(f, "cannot {op} {path}: {error}"),
            kind => write!(
                f,
                "file {path}: byte {}, message {}: {kind}",
                self.offset, self.index
            ),
        }
    }
}

/// The operating-system call that failed, for an error message that says what was tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoOp {
    /// Opening the file.
    Open,
    /// Reading its metadata (size).
    Stat,
    /// Reading its first bytes, which tell its format.
    Head,
    /// Mapping it into memory.
    Map,
    /// Seeking back to its start after reading its magic bytes.
    Seek,
    /// Reading it.
    Read,
    /// Reading and decompressing it (gzip): either the file or its compressed data failed.
    Decompress,
}

impl fmt::Display for IoOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IoOp::Open => "open",
            IoOp::Stat => "read the size of",
            IoOp::Head => "read the first bytes of",
            IoOp::Map => "map into memory",
            IoOp::Seek => "seek in",
            IoOp::Read => "read",
            IoOp::Decompress => "decompress",
        })
    }
}

/// What is wrong with a capture file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaptureErrorKind {
    /// An operating-system call on the file failed (for gzip, decompression too).
    #[error("cannot {op}: {error}")]
    Io {
        /// What was being done.
        op: IoOp,
        /// What the operating system (or the decompressor) said.
        error: io::Error,
    },
    /// The file's ITCH50 length prefixes look zeroed: the first ones are 0, each followed by
    /// an ITCH 5.0 type byte. The RITCH writer leaves every prefix 0; reading with
    /// `recover_lengths` takes each length from the message type instead.
    #[error(
        "length prefix is 0: this file's length prefixes look zeroed (the RITCH writer leaves \
         them 0); --recover-lengths takes each message's length from its type byte"
    )]
    ZeroedPrefixes,
    /// An ITCH50 length prefix is 0 where the prefixes do not look zeroed (the earlier ones
    /// were not, or no type byte follows): no message is empty, so the file is corrupt here.
    #[error("length prefix is 0, and no ITCH message is empty: the file is corrupt here")]
    ZeroLength,
    /// An ITCH50 length prefix disagrees with the length ITCH 5.0 gives the message's type:
    /// the prefix or the type byte is corrupt, and reading on would take the wrong bytes as
    /// messages.
    #[error(
        "length prefix says {found} bytes, but a type '{}' (0x{tag:02x}) message is {expected} \
         bytes: the file is corrupt here",
        char::from(*tag)
    )]
    LengthMismatch {
        /// The type byte.
        tag: u8,
        /// Its length in the ITCH 5.0 specification, type byte included.
        expected: usize,
        /// The length prefix.
        found: usize,
    },
    /// With `recover_lengths`, a type byte ITCH 5.0 does not define: there is no length to
    /// skip it by, so the read cannot go on.
    #[error(
        "unknown message type 0x{tag:02x} while recovering lengths from type bytes: \
         nothing says how long it is, so the read cannot go on"
    )]
    UnknownType {
        /// The type byte seen.
        tag: u8,
    },
    /// A length field promises more bytes than the file holds.
    #[error("truncated: {what} says {len} bytes, {remain} remain")]
    Truncated {
        /// Which length field: "length prefix", "pcap record header", ...
        what: &'static str,
        /// The length it states.
        len: u64,
        /// Bytes left in the input.
        remain: u64,
    },
    /// The input ends inside a fixed-size header.
    #[error("truncated: the input ends {have} bytes into a {need}-byte {what}")]
    TruncatedHeader {
        /// Which header: "length prefix", "pcap file header", ...
        what: &'static str,
        /// Its size.
        need: usize,
        /// Bytes present.
        have: usize,
    },
    /// A record or block claims to be larger than any real capture holds: the file is
    /// corrupt (or not what its magic says).
    #[error("{what} claims {len} bytes, more than the {max}-byte limit: the file is corrupt")]
    TooLarge {
        /// Which record: "pcap record", "pcapng block".
        what: &'static str,
        /// The length it claims.
        len: u64,
        /// The limit.
        max: usize,
    },
    /// The file started like a pcap but its magic number is not one.
    #[error("not a pcap file: magic 0x{magic:08x}")]
    BadMagic {
        /// The first 4 bytes, read little-endian.
        magic: u32,
    },
    /// The pcap file header or a pcapng section header carries a format version this
    /// reader does not know (pcap 2.x, pcapng 1.x): its layout may differ, so its records
    /// are not read as if it were the known one.
    #[error("{what} says version {major}.{minor}; only {supported} is read")]
    UnsupportedVersion {
        /// Which header: "pcap file header", "pcapng section header".
        what: &'static str,
        /// The major version found.
        major: u16,
        /// The minor version found.
        minor: u16,
        /// The versions read: "2.x", "1.x".
        supported: &'static str,
    },
    /// A pcapng block's total length is under 12 or not a multiple of 4: the block
    /// structure is lost.
    #[error("pcapng: block total length {len} is under 12 or not a multiple of 4")]
    BadBlockLength {
        /// The length read.
        len: u32,
    },
    /// The pcap file's link type is not one this reader unwraps.
    #[error(
        "pcap link type {} is not supported (Ethernet 1, raw IP 101/228, Linux cooked 113)",
        super::link::LinkType(*.0)
    )]
    UnsupportedLinkType(u32),
    /// The pcapng structure is broken; the message says where.
    #[error("pcapng: {0}")]
    PcapNg(&'static str),
    /// A pcapng packet block names an interface its section did not describe.
    #[error("pcapng: packet block names interface {id}, the section describes {count}")]
    UnknownInterface {
        /// The interface id in the block.
        id: u32,
        /// Interfaces described so far in the section.
        count: usize,
    },
    /// Databento's decoder rejected the DBN input; its message says why.
    #[error("DBN: {0}")]
    Dbn(String),
    /// The DBN metadata names a schema other than MBO.
    #[error("DBN schema is {0}, not mbo: replay reads market-by-order records only")]
    DbnSchema(String),
    /// The DBN input ends at a record boundary but inside an event: the records from here
    /// on have no `F_LAST` record after them, so the book they lead to is not one the venue
    /// ever published (Databento: the book is consistent only at `F_LAST`).
    #[error(
        "the input ends inside an event: the {records} MBO record(s) from here have no F_LAST record after them"
    )]
    DbnEndsInsideEvent {
        /// MBO records after the last one flagged `F_LAST`.
        records: u64,
    },
    /// The DBN input ends inside a record.
    #[error("truncated: the input ends {remain} bytes into a DBN record")]
    DbnTruncated {
        /// Bytes present of the cut record.
        remain: u64,
    },
}

/// An error before the front adds the path and message index.
#[derive(Debug)]
pub(crate) struct Fault {
    pub(crate) offset: u64,
    pub(crate) kind: CaptureErrorKind,
}

impl Fault {
    pub(crate) fn new(offset: u64, kind: CaptureErrorKind) -> Self {
        Fault { offset, kind }
    }

    /// `op` failed at `offset`.
    pub(crate) fn io(offset: u64, op: IoOp, error: io::Error) -> Self {
        Fault::new(offset, CaptureErrorKind::Io { op, error })
    }
}
