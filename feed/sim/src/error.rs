//! Why the exchange simulator could not load its messages, start, or keep sending.
//!
//! Cold path only: these are returned by constructors, `start` and `stop`, never per
//! packet, so they may carry an `io::Error` and an address.

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;

use ticklane_feed::capture::CaptureError;

/// The exchange simulator failed: its source, its configuration, a socket or a thread.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// The capture file given as the source could not be read; the error names the file,
    /// byte offset and message index.
    #[error("simulator source: {0}")]
    Capture(#[from] CaptureError),
    /// In-memory ITCH50 bytes (BinaryFILE framing) are malformed at `offset`.
    #[error("simulator source: in-memory ITCH50 bytes, byte {offset}: {what}")]
    MalformedSource {
        /// Byte offset of the bad length prefix.
        offset: u64,
        /// What is wrong with it.
        what: &'static str,
    },
    /// A message cannot be framed: empty, or longer than a 2-byte length can say.
    #[error("simulator source: message {seq} is {len} bytes; a message is 1 to 65535 bytes")]
    MessageLength {
        /// The sequence number it would have had.
        seq: u64,
        /// Its length.
        len: usize,
    },
    /// A message is too long for one packet of the configured size.
    #[error(
        "simulator source: message {seq} is {len} bytes and does not fit a \
         {max_packet_len}-byte packet (20-byte header, 2-byte length); raise max_packet_len"
    )]
    MessageTooLongForPacket {
        /// Its sequence number.
        seq: u64,
        /// Its length.
        len: usize,
        /// The configured packet size.
        max_packet_len: usize,
    },
    /// A configuration value is out of range; `what` says which and how to fix it.
    #[error("simulator config: {what}")]
    InvalidConfig {
        /// The value and its valid range.
        what: &'static str,
    },
    /// A socket could not be created, configured or bound.
    #[error("simulator socket for {addr}: cannot {action}: {source}")]
    Socket {
        /// The address the socket was for (destination, group or bind address).
        addr: SocketAddr,
        /// What was being done: "bind", "set the multicast interface", ...
        action: &'static str,
        /// The operating system's answer.
        source: io::Error,
    },
    /// Sending on the live stream failed; the stream stopped there.
    #[error("simulator: sending to {addr} failed: {source}")]
    Send {
        /// The destination.
        addr: SocketAddr,
        /// The operating system's answer.
        source: io::Error,
    },
    /// The retransmission server could not receive; it stopped there.
    #[error("simulator: retransmission server on {addr} cannot receive: {source}")]
    Receive {
        /// The server's bound address.
        addr: SocketAddr,
        /// The operating system's answer.
        source: io::Error,
    },
    /// A generated day could not be written to its file.
    ///
    /// The OS error is part of the message and deliberately not the `source()`, so an error
    /// chain printed at the edge shows it once.
    #[error("cannot write the generated day to {}: {error}", path.display())]
    DayFile {
        /// The file.
        path: PathBuf,
        /// The operating system's answer.
        error: io::Error,
    },
    /// A simulator thread could not be started.
    #[error("simulator: cannot start the {thread} thread: {source}")]
    Spawn {
        /// Which thread.
        thread: &'static str,
        /// The operating system's answer.
        source: io::Error,
    },
    /// A simulator thread panicked (a bug in the simulator).
    #[error("simulator: the {thread} thread panicked")]
    ThreadPanicked {
        /// Which thread.
        thread: &'static str,
    },
}
