//! Readers of captured market data: Nasdaq ITCH 5.0 day files (plain or gzipped) and pcap /
//! pcapng captures of MoldUDP64 over UDP, behind one lending reader.
//!
//! [`CaptureReader`] detects the format from the file's first bytes ([`detect`]) and yields
//! each ITCH message as a borrowed slice: of the file itself, memory-mapped, when it is
//! uncompressed (`mapped_file.rs` holds the crate's one `unsafe` call and its argument), or
//! of one buffer allocated at open when it is gzipped. Nothing is allocated per message.
//! Captured packets go through the live MoldUDP64 sequencer
//! ([`MoldRecovery`](crate::moldudp64::MoldRecovery)) with retransmission off, so
//! duplicates are skipped, reordered packets put back in order, lost messages declared
//! with their ranges, and sanitized captures (blank session, sequence 0) replayed
//! unsequenced in file order (the rule is in [`crate::moldudp64`]).
//!
//! | first bytes | format |
//! |---|---|
//! | `1f 8b` | gzipped ITCH50 |
//! | `DBN` | Databento DBN, versions 1 to 3 ([`DbnMboReader`]) |
//! | `28 b5 2f fd` | zstd: taken to be DBN |
//! | `0a 0d 0d 0a` | pcapng (sections of version 1.x) |
//! | `a1 b2 c3 d4` or `a1 b2 3c 4d`, either byte order | pcap (version 2.x) |
//! | anything else | an ITCH50 file: each message after a 2-byte big-endian length |
//!
//! Captures hold MoldUDP64 over Ethernet (802.1Q and 802.1ad tags allowed), IPv4 and UDP.
//! An uncompressed input is mapped and read in place, so it must not be truncated while it is
//! read. A compressed one (`.gz` ITCH, `.dbn.zst`) is inflated on a thread of its own
//! (`read_thread`: 256 KiB chunks, four ahead, allocated once), and the bytes, and where a
//! decompression error falls among them, are the decompressor's own. A length-framed message
//! of a type ITCH 5.0 does not define is skipped and counted (Nasdaq adds types over the
//! years); a truncated or corrupt input is an error naming the byte offset and the message
//! index, after every message before it.
//!
//! ```no_run
//! use std::path::Path;
//! use ticklane_feed::capture::{CaptureReader, ReadOptions};
//!
//! let mut reader = CaptureReader::open(Path::new("day.itch50.gz"), ReadOptions::default())?;
//! while let Some(msg) = reader.next_message()? {
//!     let _ = ticklane_feed::itch::decode(msg.bytes);
//! }
//! println!("{} messages, {} gaps", reader.stats().messages, reader.stats().gaps);
//! # Ok::<(), ticklane_feed::capture::CaptureError>(())
//! ```

mod dbn_mbo;
mod error;
mod frames;
mod gzip;
mod itch50;
mod link;
mod mapped_file;
mod no_messages;
mod packets;
mod pcap;
mod pcap_writer;
mod pcapng;
mod read_thread;
mod window;

pub use dbn_mbo::{DbnItem, DbnMboReader, DbnRecordCounts, MboRecord};
pub use error::{CaptureError, CaptureErrorKind, IoOp};
pub use frames::{Frames, FramesAhead, FramesRead};
pub use link::LinkType;
pub use mapped_file::MappedInput;
pub use no_messages::{NoMessages, UnsupportedLink};
pub use pcap_writer::{PcapWriter, MAX_UDP_PAYLOAD};

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::moldudp64::GapRange;
use error::Fault;
use itch50::Itch50Reader;
use link::{SkipTally, UdpFrames};
use packets::PacketStream;
use pcap::PcapFrames;
use pcapng::PcapNgFrames;
use window::Window;

/// Bytes of the read buffer: large enough that refills are rare, small enough to stay in L2.
pub const DEFAULT_BUFFER_LEN: usize = 1 << 20;

/// The largest pcap record or pcapng block accepted; anything larger is taken as corruption
/// rather than a reason to allocate.
pub(crate) const MAX_RECORD_LEN: usize = 1 << 24;

/// How to read a capture.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadOptions {
    /// ITCH50 files only: ignore each 2-byte length prefix and take the length from the
    /// message's type byte. For files whose prefixes were written as 0 (RITCH).
    pub recover_lengths: bool,
}

/// The kind of input, from its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputFormat {
    /// Nasdaq BinaryFILE: ITCH 5.0 messages, each after a 2-byte big-endian length.
    Itch50,
    /// The same, gzip compressed (one or more gzip members).
    GzipItch50,
    /// Classic pcap (microsecond or nanosecond, either byte order) of MoldUDP64.
    Pcap,
    /// pcapng of MoldUDP64.
    PcapNg,
    /// Databento DBN (market-by-order records), read by [`DbnMboReader`], not
    /// [`CaptureReader`].
    Dbn,
    /// The same, zstd compressed (any zstd input is taken to be DBN).
    ZstdDbn,
}

impl std::fmt::Display for InputFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            InputFormat::Itch50 => "ITCH50",
            InputFormat::GzipItch50 => "ITCH50.gz",
            InputFormat::Pcap => "pcap",
            InputFormat::PcapNg => "pcapng",
            InputFormat::Dbn => "DBN",
            InputFormat::ZstdDbn => "DBN.zst",
        })
    }
}

/// The format whose magic bytes start `head` (the first 4 bytes of the file suffice);
/// anything unrecognised is taken to be an ITCH50 file.
pub fn detect(head: &[u8]) -> InputFormat {
    if head.starts_with(&[0x1f, 0x8b]) {
        return InputFormat::GzipItch50;
    }
    if head.starts_with(b"DBN") {
        return InputFormat::Dbn;
    }
    if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        return InputFormat::ZstdDbn;
    }
    if head.starts_with(&[0x0a, 0x0d, 0x0d, 0x0a]) {
        return InputFormat::PcapNg;
    }
    if let Some(&[a, b, c, d]) = head.get(..4) {
        let magic = u32::from_le_bytes([a, b, c, d]);
        if pcap::magic_kind(magic).is_some() {
            return InputFormat::Pcap;
        }
    }
    InputFormat::Itch50
}

/// One ITCH message from a capture, borrowed from the reader's buffer until the next call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawMessage<'a> {
    /// The message's bytes, type byte first, without any length prefix.
    pub bytes: &'a [u8],
    /// Byte offset in the input (decompressed, for gzip) where the message's length prefix
    /// starts: the BinaryFILE prefix, or the MoldUDP64 block length inside a capture.
    pub offset: u64,
    /// 1-based position among the messages this reader yielded (duplicates skipped by the
    /// MoldUDP64 sequencer are not counted).
    pub index: u64,
    /// MoldUDP64 sequence number; `None` for ITCH50 files and sanitized captures.
    pub seq: Option<u64>,
    /// Capture timestamp of the packet that carried it, in nanoseconds since the Unix epoch;
    /// `None` for ITCH50 files and pcapng simple packet blocks.
    pub capture_ns: Option<u64>,
}

/// Counters for a read so far, for summaries and progress.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CaptureCounts<'a> {
    /// Messages yielded.
    pub messages: u64,
    /// Captured frames read (pcap records, pcapng packet blocks); 0 for ITCH50 files.
    pub packets: u64,
    /// Frames that carried a MoldUDP64 packet.
    pub mold_packets: u64,
    /// Frames skipped because they carried no MoldUDP64 packet:
    /// `non_udp_frames + non_mold_datagrams`.
    pub non_mold_packets: u64,
    /// Of `non_mold_packets`, frames that carried no whole IPv4/UDP datagram: a link type
    /// not unwrapped, not IPv4 (ARP, IPv6), not UDP, an IPv4 fragment, or broken headers.
    pub non_udp_frames: u64,
    /// Of `non_mold_packets`, UDP datagrams whose payload is not a MoldUDP64 packet.
    pub non_mold_datagrams: u64,
    /// Of `non_udp_frames`, frames on a link type this reader does not unwrap (only pcapng
    /// can hold them: a pcap with one fails to open).
    pub unsupported_link_frames: u64,
    /// The first such link type seen.
    pub unsupported_link_type: Option<u32>,
    /// Of `non_udp_frames`, IPv4 fragments (reassembly is not attempted).
    pub ip_fragments: u64,
    /// Frames cut short by the capture's snap length.
    pub snapped_packets: u64,
    /// MoldUDP64 heartbeats.
    pub heartbeats: u64,
    /// MoldUDP64 end-of-session packets.
    pub end_of_session: u64,
    /// MoldUDP64 packets replayed unsequenced (sanitized: blank session, sequence 0).
    pub unsequenced_packets: u64,
    /// Messages skipped because their sequence number was already applied.
    pub duplicates: u64,
    /// Messages that arrived after later ones and were put back in sequence order.
    pub reordered: u64,
    /// Sequence ranges declared lost: missing when the reorder store would overflow, or at
    /// the end of input. A gap that reordered packets filled in part counts each part
    /// still missing.
    pub gaps: u64,
    /// Messages missing in all lost ranges together.
    pub missing_messages: u64,
    /// The first lost ranges, in order (at most 1024).
    pub gap_ranges: &'a [GapRange],
    /// MoldUDP64 session changes.
    pub session_changes: u64,
    /// Input bytes read past (decompressed, for gzip).
    pub bytes_consumed: u64,
    /// Size of the input, for progress; `None` for gzip, whose decompressed size is unknown.
    pub bytes_total: Option<u64>,
}

/// The location of a message in a format reader's window.
pub(crate) struct Located {
    pub(crate) start: usize,
    pub(crate) len: usize,
    pub(crate) offset: u64,
    pub(crate) seq: Option<u64>,
    pub(crate) capture_ns: Option<u64>,
}

enum Inner {
    Itch50(Itch50Reader),
    /// The tally counts the frames [`UdpFrames`] kept from the stream.
    Pcap(PacketStream<UdpFrames<PcapFrames>>, Arc<SkipTally>),
    PcapNg(PacketStream<UdpFrames<PcapNgFrames>>, Arc<SkipTally>),
}

impl Inner {
    fn window(&self) -> &Window {
        match self {
            Inner::Itch50(r) => r.window(),
            Inner::Pcap(s, _) => s.window(),
            Inner::PcapNg(s, _) => s.window(),
        }
    }

    /// The buffer holding the message the format reader located last.
    fn message_buf(&self) -> &[u8] {
        match self {
            Inner::Itch50(r) => r.window().buf(),
            Inner::Pcap(s, _) => s.message_buf(),
            Inner::PcapNg(s, _) => s.message_buf(),
        }
    }
}

/// Reads ITCH messages out of a captured file of any supported format.
///
/// `next_message` lends each message from an internal buffer, so it is
/// allocation-free per message. The reader is `Send`.
pub struct CaptureReader {
    path: PathBuf,
    format: InputFormat,
    inner: Inner,
    yielded: u64,
    /// Set at the end of input or after an error: later calls return `Ok(None)`.
    done: bool,
    /// Set when `next_message` returned an error.
    failed: bool,
    bytes_total: Option<u64>,
}

impl CaptureReader {
    /// Opens `path` and detects its format.
    ///
    /// # Errors
    ///
    /// A [`CaptureError`] if the file cannot be opened, sized, mapped or read (the error
    /// names the path and the operation), or (pcap) its file header is truncated or names
    /// an unsupported link type.
    pub fn open(path: &Path, opts: ReadOptions) -> Result<Self, CaptureError> {
        Self::open_with_buffer(path, opts, DEFAULT_BUFFER_LEN)
    }

    /// [`CaptureReader::open`] with a chosen buffer size, so tests can force frames across
    /// refills.
    pub(crate) fn open_with_buffer(
        path: &Path,
        opts: ReadOptions,
        buffer_len: usize,
    ) -> Result<Self, CaptureError> {
        let io = |op| move |error| opening_failed(path, 0, CaptureErrorKind::Io { op, error });
        let mut file = File::open(path).map_err(io(IoOp::Open))?;
        let len = file.metadata().map_err(io(IoOp::Stat))?.len();
        let mut head = [0u8; 4];
        let got = read_head(&mut file, &mut head).map_err(io(IoOp::Head))?;
        file.seek(SeekFrom::Start(0)).map_err(io(IoOp::Seek))?;
        let format = detect(&head[..got]);

        let (window, bytes_total) = match format {
            InputFormat::GzipItch50 => (
                Window::new(
                    gzip::decoder(file).map_err(io(IoOp::Decompress))?,
                    buffer_len,
                    IoOp::Decompress,
                ),
                None,
            ),
            // Tests force small buffers to split frames across reads: read those.
            _ if len > 0 && buffer_len == DEFAULT_BUFFER_LEN => (
                Window::mapped(MappedInput::new(
                    mapped_file::map(&file).map_err(io(IoOp::Map))?,
                )),
                Some(len),
            ),
            _ => (
                Window::new(Box::new(file), buffer_len, IoOp::Read),
                Some(len),
            ),
        };
        Self::over(path, format, window, bytes_total, opts)
    }

    /// A second reader of the same input from its start: over this one's mapping when it
    /// has one (no second map, no second populate), else the file opened again (a gzip
    /// input is decompressed again). `replay --threads N` gives each book thread its own.
    ///
    /// # Errors
    ///
    /// As [`CaptureReader::open`].
    pub fn reopen(&self, opts: ReadOptions) -> Result<Self, CaptureError> {
        match self.mapped_input() {
            Some(map) => Self::over(
                &self.path,
                self.format,
                Window::mapped(map),
                self.bytes_total,
                opts,
            ),
            None => Self::open(&self.path, opts),
        }
    }

    /// A reader of `format` over `window`, from its start.
    fn over(
        path: &Path,
        format: InputFormat,
        mut window: Window,
        bytes_total: Option<u64>,
        opts: ReadOptions,
    ) -> Result<Self, CaptureError> {
        let fail = |offset, kind| opening_failed(path, offset, kind);
        let inner = match format {
            InputFormat::Itch50 | InputFormat::GzipItch50 => {
                Inner::Itch50(Itch50Reader::new(window, opts.recover_lengths))
            }
            InputFormat::Pcap => {
                let frames = PcapFrames::open(&mut window).map_err(|f| fail(f.offset, f.kind))?;
                let (frames, tally) = UdpFrames::new(frames);
                Inner::Pcap(PacketStream::new(window, frames), tally)
            }
            InputFormat::PcapNg => {
                let (frames, tally) = UdpFrames::new(PcapNgFrames::new());
                Inner::PcapNg(PacketStream::new(window, frames), tally)
            }
            InputFormat::Dbn | InputFormat::ZstdDbn => {
                let why = "DBN holds MBO records, not ITCH messages: read it with DbnMboReader";
                return Err(fail(0, CaptureErrorKind::Dbn(why.into())));
            }
        };
        Ok(CaptureReader {
            path: path.to_path_buf(),
            format,
            inner,
            yielded: 0,
            done: false,
            failed: false,
            bytes_total,
        })
    }

    /// The detected format.
    pub fn format(&self) -> InputFormat {
        self.format
    }

    /// Messages the MoldUDP64 sequencer has declared lost so far (0 for an ITCH50 file): a
    /// cheap check after each message, where [`CaptureReader::stats`] gathers every counter.
    pub fn messages_lost(&self) -> u64 {
        match &self.inner {
            Inner::Itch50(_) => 0,
            Inner::Pcap(s, _) => s.messages_lost(),
            Inner::PcapNg(s, _) => s.messages_lost(),
        }
    }

    /// The path being read.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The next message, or `None` at the end of the input.
    ///
    /// # Errors
    ///
    /// A [`CaptureError`] naming the byte offset and message index where the input cannot
    /// be read on: I/O or gzip errors, truncation, a zero ITCH50 length prefix, an unknown
    /// type while recovering lengths, a corrupt pcap/pcapng structure. Every message before
    /// it was yielded; later calls return `Ok(None)`.
    ///
    /// # Panics
    ///
    /// Only on a bug in this module: a format reader locating a message outside its buffer.
    pub fn next_message(&mut self) -> Result<Option<RawMessage<'_>>, CaptureError> {
        if self.done {
            return Ok(None);
        }
        let next = match &mut self.inner {
            Inner::Itch50(r) => r.next(),
            Inner::Pcap(s, _) => s.next(),
            Inner::PcapNg(s, _) => s.next(),
        };
        match next {
            Ok(Some(at)) => {
                self.yielded += 1;
                let bytes = self
                    .inner
                    .message_buf()
                    .get(at.start..at.start + at.len)
                    .expect("invariant: format readers locate messages inside the window");
                Ok(Some(RawMessage {
                    bytes,
                    offset: at.offset,
                    index: self.yielded,
                    seq: at.seq,
                    capture_ns: at.capture_ns,
                }))
            }
            Ok(None) => {
                self.done = true;
                Ok(None)
            }
            Err(Fault { offset, kind }) => {
                self.done = true;
                self.failed = true;
                Err(CaptureError {
                    path: self.path.clone(),
                    offset,
                    index: self.yielded + 1,
                    kind,
                })
            }
        }
    }

    /// The messages that lie whole in the bytes already read, framed in one pass without a
    /// call per message; empty unless the input is a plain length-prefixed ITCH 5.0 file
    /// (not `recover_lengths`) and the reader has not ended.
    ///
    /// A replay loop takes these first, hands [`Frames::read`] to
    /// [`CaptureReader::advance`], then calls [`CaptureReader::next_message`] for the next
    /// message (which refills, ends the input or reports an error exactly as it would have),
    /// and goes round again. The messages, offsets and indices are those `next_message`
    /// alone would yield.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_feed::capture::{CaptureReader, ReadOptions};
    ///
    /// let path = std::env::temp_dir().join("ticklane-doc-frames.itch50");
    /// // Two System Event messages (12 bytes each), length-prefixed.
    /// let mut file = Vec::new();
    /// for event in [b'O', b'S'] {
    ///     file.extend_from_slice(&12u16.to_be_bytes());
    ///     file.extend_from_slice(&[b'S', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, event]);
    /// }
    /// std::fs::write(&path, &file)?;
    /// let mut reader = CaptureReader::open(&path, ReadOptions::default())?;
    /// let mut indices = Vec::new();
    /// loop {
    ///     let mut frames = reader.frames();
    ///     indices.extend(frames.by_ref().map(|m| m.index));
    ///     let read = frames.read();
    ///     reader.advance(read);
    ///     match reader.next_message()? {
    ///         Some(m) => indices.push(m.index),
    ///         None => break,
    ///     }
    /// }
    /// assert_eq!(indices, [1, 2]);
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn frames(&self) -> Frames<'_> {
        match &self.inner {
            Inner::Itch50(r) if !self.done => r.frames(self.yielded),
            _ => Frames::empty(self.yielded),
        }
    }

    /// The whole input, when it is mapped (an uncompressed file): the messages this reader
    /// hands out are slices of it, or of a copy for a message a capture split
    /// ([`MappedInput::position`] tells which).
    pub fn mapped_input(&self) -> Option<MappedInput> {
        self.inner.window().mapped_input().cloned()
    }

    /// Marks the messages a [`Frames`] from [`CaptureReader::frames`] handed out as read.
    ///
    /// `read` must come from the reader's latest `frames`, with no other call between: the
    /// reader would otherwise skip or repeat bytes (it cannot tell; debug builds check
    /// that the bytes are held).
    #[inline]
    pub fn advance(&mut self, read: FramesRead) {
        if let Inner::Itch50(r) = &mut self.inner {
            r.advance(read.bytes);
            self.yielded += read.messages;
        }
    }

    /// Counters so far; gap ranges are borrowed from the reader.
    pub fn stats(&self) -> CaptureCounts<'_> {
        let mut stats = CaptureCounts {
            messages: self.yielded,
            bytes_total: self.bytes_total,
            ..CaptureCounts::default()
        };
        let tally = match &self.inner {
            Inner::Itch50(r) => {
                stats.bytes_consumed = r.consumed();
                return stats;
            }
            Inner::Pcap(s, tally) => {
                s.add_stats(&mut stats);
                tally
            }
            Inner::PcapNg(s, tally) => {
                s.add_stats(&mut stats);
                tally
            }
        };
        // The stream saw only the frames `UdpFrames` handed on, so whatever it could not
        // read as MoldUDP64 was a UDP datagram; the skipped frames are added back here.
        let skipped = tally.get();
        stats.non_mold_datagrams = stats.non_mold_packets;
        stats.non_udp_frames = skipped.total;
        stats.unsupported_link_frames = skipped.unsupported_link;
        stats.unsupported_link_type = skipped.first_unsupported_link;
        stats.packets += skipped.total;
        stats.non_mold_packets += skipped.total;
        stats.ip_fragments += skipped.fragments;
        stats.snapped_packets += skipped.snapped;
        stats
    }

    /// Why a read that has ended cleanly yielded no message; `None` while messages were
    /// yielded, before the end of the input, or after an error (the error says more).
    ///
    /// A caller reports it ("no messages: the input is empty", "... link type 105
    /// (IEEE 802.11) is not supported; frames skipped: 2") rather than a silent zero.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_feed::capture::{CaptureReader, NoMessages, ReadOptions};
    ///
    /// let empty = std::env::temp_dir().join("ticklane-doc-empty.itch50");
    /// std::fs::write(&empty, b"")?;
    /// let mut reader = CaptureReader::open(&empty, ReadOptions::default())?;
    /// assert!(reader.next_message()?.is_none());
    /// assert_eq!(reader.no_messages(), Some(NoMessages::EmptyInput));
    /// # std::fs::remove_file(&empty)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn no_messages(&self) -> Option<NoMessages> {
        if !self.done || self.failed || self.yielded > 0 {
            return None;
        }
        Some(NoMessages::of(&self.stats()))
    }
}

/// Reads up to `head.len()` bytes, fewer only at the end of the file.
fn read_head(file: &mut File, head: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < head.len() {
        match file.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// An error opening `path`, before its first message: at `offset`, message index 1.
fn opening_failed(path: &Path, offset: u64, kind: CaptureErrorKind) -> CaptureError {
    CaptureError {
        path: path.to_path_buf(),
        offset,
        index: 1,
        kind,
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    use std::io::Write;
    use std::path::{Path, PathBuf};

    /// The shared third-party captures (`../shared/data` from the repository root), or
    /// `None` with a loud note when they are absent. Under `CI=true` absence is a failure.
    pub(crate) fn data_dir() -> Option<PathBuf> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data");
        if dir.is_dir() {
            return Some(dir);
        }
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "../shared/data not found at {} and CI=true",
            dir.display()
        );
        // Straight to stderr: libtest captures `eprintln!` and hides it for a passing test.
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: ../shared/data not found (looked in {})",
            dir.display()
        );
        None
    }

    /// A temporary file holding `bytes`.
    pub(crate) fn write_temp(bytes: &[u8]) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().expect("temp file");
        file.write_all(bytes).expect("write temp file");
        file.flush().expect("flush temp file");
        file
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::write_temp;
    use super::*;

    #[test]
    fn detects_formats_from_magic_bytes() {
        assert_eq!(detect(&[0x1f, 0x8b, 8, 0]), InputFormat::GzipItch50);
        assert_eq!(detect(&[0xd4, 0xc3, 0xb2, 0xa1]), InputFormat::Pcap);
        assert_eq!(detect(&[0xa1, 0xb2, 0xc3, 0xd4]), InputFormat::Pcap);
        assert_eq!(detect(&[0x4d, 0x3c, 0xb2, 0xa1]), InputFormat::Pcap);
        assert_eq!(detect(&[0xa1, 0xb2, 0x3c, 0x4d]), InputFormat::Pcap);
        assert_eq!(detect(&[0x0a, 0x0d, 0x0d, 0x0a]), InputFormat::PcapNg);
        assert_eq!(detect(b"DBN\x03"), InputFormat::Dbn);
        assert_eq!(detect(&[0x28, 0xb5, 0x2f, 0xfd]), InputFormat::ZstdDbn);
        assert_eq!(detect(&[0x00, 0x0c, b'S', 0]), InputFormat::Itch50);
        assert_eq!(detect(&[]), InputFormat::Itch50);
    }

    #[test]
    fn missing_file_error_names_the_path() {
        let err = CaptureReader::open(Path::new("/nonexistent/x.itch"), ReadOptions::default())
            .err()
            .expect("no such file");
        assert!(matches!(
            err.kind,
            CaptureErrorKind::Io { op: IoOp::Open, .. }
        ));
        let text = err.to_string();
        assert!(
            text.starts_with("cannot open /nonexistent/x.itch: "),
            "{text}"
        );
    }

    #[test]
    fn a_mapped_input_finds_the_messages_handed_out_and_not_their_copies() {
        // Two hand-laid frames: a 12-byte `S` and a 19-byte `D`, each after its prefix.
        let mut bytes = vec![0, 12, b'S'];
        bytes.resize(2 + 12, 0);
        bytes.extend_from_slice(&[0, 19, b'D']);
        bytes.resize(2 + 12 + 2 + 19, 0);
        let file = write_temp(&bytes);
        let mut reader = CaptureReader::open(file.path(), ReadOptions::default()).expect("open");
        let mapped = reader
            .mapped_input()
            .expect("an uncompressed file is mapped");
        assert_eq!(mapped.bytes(), &bytes[..]);
        let mut found = Vec::new();
        while let Some(m) = reader.next_message().expect("valid") {
            found.push((mapped.position(m.bytes), m.offset));
            let copy = m.bytes.to_vec();
            assert_eq!(mapped.position(&copy), None, "a copy is not in the input");
        }
        assert_eq!(found, [(Some(2), 0), (Some(16), 14)]);
        assert_eq!(mapped.position(&mapped.bytes()[30..]), Some(30));
        assert_eq!(
            mapped.position(&mapped.bytes()[33..]),
            Some(33),
            "empty, at the end"
        );

        use std::io::Write as _;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&bytes).expect("in memory");
        let gz = write_temp(&gz.finish().expect("in memory"));
        let reader = CaptureReader::open(gz.path(), ReadOptions::default()).expect("open");
        assert!(
            reader.mapped_input().is_none(),
            "a gzip input is read, not mapped"
        );
    }

    #[test]
    fn a_reopened_reader_reads_the_input_again_from_its_start_over_the_same_mapping() {
        // Three hand-laid frames: `S`, `D`, `S`, each after its 2-byte prefix.
        let mut bytes = Vec::new();
        for (tag, len) in [(b'S', 12usize), (b'D', 19), (b'S', 12)] {
            bytes.extend_from_slice(&(len as u16).to_be_bytes());
            bytes.push(tag);
            bytes.resize(bytes.len() + len - 1, 0);
        }
        let all = |reader: &mut CaptureReader| {
            let mut seen = Vec::new();
            while let Some(m) = reader.next_message().expect("valid") {
                seen.push((m.bytes[0], m.offset, m.index));
            }
            seen
        };
        let plain = write_temp(&bytes);
        use std::io::Write as _;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&bytes).expect("in memory");
        let gz = write_temp(&gz.finish().expect("in memory"));
        for file in [&plain, &gz] {
            let mut first = CaptureReader::open(file.path(), ReadOptions::default()).expect("open");
            // Half-way through the first, the second starts from the first message.
            assert!(first.next_message().expect("valid").is_some());
            let mut again = first.reopen(ReadOptions::default()).expect("reopen");
            assert_eq!(again.format(), first.format());
            let whole = all(&mut again);
            assert_eq!(whole, [(b'S', 0, 1), (b'D', 14, 2), (b'S', 35, 3)]);
            assert_eq!(all(&mut first), whole[1..]);
            match (first.mapped_input(), again.mapped_input()) {
                (Some(a), Some(b)) => {
                    assert_eq!(a.bytes().as_ptr(), b.bytes().as_ptr(), "one mapping");
                }
                (None, None) => assert_eq!(first.format(), InputFormat::GzipItch50),
                _ => panic!("one reader mapped, the other not"),
            }
        }
    }

    #[test]
    fn reader_is_send() {
        fn assert_send<T: Send>() {}
        assert_send::<CaptureReader>();
        let file = write_temp(&[]);
        assert!(CaptureReader::open(file.path(), ReadOptions::default()).is_ok());
    }
}
