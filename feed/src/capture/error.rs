//! Why a capture could not be read, with the file, byte offset and message index.
//!
//! Cold path: one error ends the read, so these may carry an `io::Error` and a path.

use std::io;
use std::path::PathBuf;

/// A capture file could not be read past some point. Every message before it was yielded.
#[derive(Debug, thiserror::Error)]
#[error("file {}: byte {offset}, message {index}: {kind}", path.display())]
pub struct CaptureError {
    /// The file being read.
    pub path: PathBuf,
    /// Byte offset in the input (decompressed, for gzip) of the frame that failed.
    pub offset: u64,
    /// 1-based index the failing message would have had among the messages yielded.
    pub index: u64,
    /// What is wrong.
    pub kind: CaptureErrorKind,
}

/// What is wrong with a capture file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaptureErrorKind {
    /// Opening or reading failed (including corrupt gzip data).
    #[error("cannot read: {0}")]
    Io(io::Error),
    /// An ITCH50 length prefix is 0. Files written by RITCH leave every prefix 0; reading
    /// with `recover_lengths` takes each length from the message type instead.
    #[error(
        "length prefix is 0: this file's length prefixes look zeroed (the RITCH writer leaves \
         them 0); --recover-lengths takes each message's length from its type byte"
    )]
    ZeroLength,
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
    /// A pcapng block's total length is under 12 or not a multiple of 4: the block
    /// structure is lost.
    #[error("pcapng: block total length {len} is under 12 or not a multiple of 4")]
    BadBlockLength {
        /// The length read.
        len: u32,
    },
    /// The pcap file's link type is not one this reader unwraps.
    #[error("pcap link type {0} is not supported (Ethernet 1, raw IP 101/228, Linux cooked 113)")]
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
}

impl From<io::Error> for CaptureErrorKind {
    fn from(e: io::Error) -> Self {
        CaptureErrorKind::Io(e)
    }
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
}
