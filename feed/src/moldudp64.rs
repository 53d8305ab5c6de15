//! MoldUDP64 1.0: packet views and encoders, retransmission requests, and the sans-I/O
//! session sequencer that decides which messages to deliver.
//!
//! A packet is a 20-byte header (session: 10 ASCII bytes; sequence number of its first
//! message: u64; message count: u16, all big-endian) followed by `count` message blocks, each
//! a u16 length and that many bytes. Count 0 is a heartbeat and count `0xFFFF` the end of the
//! session; both carry the next expected sequence number and no blocks.
//!
//! [`MoldSession`] is fed packets, from a socket or a capture alike, and answers for each one
//! which of its messages are new and which were already applied, and whether a gap opened.
//! A gap is reported as the exact inclusive range a retransmission request needs
//! ([`GapRange::requests`]); sending requests and waiting for replies is left to the caller.
//! That is right for replay. [`MoldRecovery`] is the live counterpart: it holds later
//! packets in a bounded reorder store, requests each gap, delivers strictly in order once
//! the gap fills, and declares a gap lost (with its exact range) only after its retries.
//!
//! ```
//! use ticklane_feed::moldudp64::{MoldSession, Packet, PacketWriter, Session};
//!
//! let session = Session::new(b"000010059B").unwrap();
//! let mut buf = [0u8; 64];
//! let mut w = PacketWriter::new(&mut buf, session, 7).unwrap();
//! w.push(b"first").unwrap();
//! w.push(b"second").unwrap();
//! let len = w.finish();
//!
//! let packet = Packet::parse(&buf[..len]).unwrap();
//! let mut seq = MoldSession::new();
//! let outcome = seq.on_packet(&packet);
//! let delivered: Vec<_> = outcome.sequenced(&packet).map(|m| (m.seq, m.bytes)).collect();
//! assert_eq!(delivered, [(Some(7), &b"first"[..]), (Some(8), &b"second"[..])]);
//! assert_eq!(seq.next_expected(), Some(9));
//! ```

use core::fmt;
use std::collections::VecDeque;
use std::time::Duration;

/// Bytes in a packet header: session 10, sequence 8, count 2.
pub const HEADER_LEN: usize = 20;
/// Bytes in a session name.
pub const SESSION_LEN: usize = 10;
/// The message count that marks a heartbeat.
pub const HEARTBEAT_COUNT: u16 = 0;
/// The message count that marks the end of the session.
pub const END_OF_SESSION_COUNT: u16 = 0xFFFF;
/// The most messages one packet can carry (`0xFFFF` is reserved for end of session).
pub const MAX_MESSAGES: u16 = 0xFFFE;
/// How many gap ranges [`MoldSession::new`] keeps; later gaps are only counted.
pub const DEFAULT_GAP_CAPACITY: usize = 1024;

/// A MoldUDP64 session name: 10 bytes, ASCII, left-justified and space padded.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Session(pub [u8; SESSION_LEN]);

impl Session {
    /// Pads `name` with spaces on the right; `None` if it is longer than 10 bytes.
    pub fn new(name: &[u8]) -> Option<Self> {
        if name.len() > SESSION_LEN {
            return None;
        }
        let mut raw = [b' '; SESSION_LEN];
        raw[..name.len()].copy_from_slice(name);
        Some(Session(raw))
    }

    /// The raw 10 bytes.
    pub fn as_bytes(&self) -> &[u8; SESSION_LEN] {
        &self.0
    }

    /// True when every byte is zero or a space: what sanitized captures leave in place of
    /// the real name.
    pub fn is_blank(&self) -> bool {
        self.0.iter().all(|&b| b == 0 || b == b' ')
    }

    /// True when the name could be a real session: printable ASCII, or blank.
    ///
    /// Capture readers use it to tell MoldUDP64 from other UDP traffic on a shared link.
    pub fn is_plausible(&self) -> bool {
        self.is_blank() || self.0.iter().all(|&b| (0x20..=0x7e).contains(&b))
    }
}

impl fmt::Display for Session {
    /// The name as text, with a byte that is not printable ASCII shown as `\xNN`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for &b in &self.0 {
            if (0x20..=0x7e).contains(&b) {
                write!(f, "{}", b as char)?;
            } else {
                write!(f, "\\x{b:02x}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Session(\"{self}\")")
    }
}

/// Why bytes are not a well-formed MoldUDP64 packet or request. `Copy`, allocation-free.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MoldError {
    /// Fewer than the 20 header bytes. Not a MoldUDP64 packet, or one cut short by the
    /// capture's snap length.
    TruncatedHeader {
        /// Bytes present.
        have: usize,
    },
    /// A message block's 2-byte length starts fewer than 2 bytes before the end. The header's
    /// count promises more blocks than the packet holds.
    TruncatedLength {
        /// 0-based index of the block in the packet.
        message: u16,
        /// Byte offset of the block in the packet.
        offset: usize,
    },
    /// A message block's length runs past the end of the packet.
    MessageOverrun {
        /// 0-based index of the block in the packet.
        message: u16,
        /// Byte offset of the block's length field in the packet.
        offset: usize,
        /// The length the block declares.
        len: u16,
        /// Bytes left after the length field.
        remain: usize,
    },
    /// Bytes follow the last block the header's count promises: the count is wrong or the
    /// bytes are not MoldUDP64.
    TrailingBytes {
        /// The header's message count.
        count: u16,
        /// Bytes left over.
        extra: usize,
    },
    /// Sequence plus count does not fit in 64 bits: the sequence number is corrupt.
    SequenceOverflow {
        /// The header's sequence number.
        sequence: u64,
        /// The header's message count.
        count: u16,
    },
    /// A retransmission request must be exactly 20 bytes.
    RequestLength {
        /// Bytes present.
        have: usize,
    },
}

impl fmt::Display for MoldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            MoldError::TruncatedHeader { have } => write!(
                f,
                "MoldUDP64 packet too short: {have} bytes, the header alone is {HEADER_LEN}"
            ),
            MoldError::TruncatedLength { message, offset } => write!(
                f,
                "MoldUDP64 message block {message} at byte {offset}: the packet ends inside \
                 its 2-byte length (the header's count promises more blocks)"
            ),
            MoldError::MessageOverrun {
                message,
                offset,
                len,
                remain,
            } => write!(
                f,
                "MoldUDP64 message block {message} at byte {offset}: length says {len} bytes, \
                 {remain} remain in the packet"
            ),
            MoldError::TrailingBytes { count, extra } => write!(
                f,
                "MoldUDP64 packet has {extra} bytes after the {count} message blocks its header \
                 counts"
            ),
            MoldError::SequenceOverflow { sequence, count } => write!(
                f,
                "MoldUDP64 sequence {sequence} plus count {count} overflows 64 bits"
            ),
            MoldError::RequestLength { have } => write!(
                f,
                "MoldUDP64 retransmission request must be {HEADER_LEN} bytes, got {have}"
            ),
        }
    }
}

impl std::error::Error for MoldError {}

/// What a packet is, from its message count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketKind {
    /// Carries `count` messages (at least one).
    Data {
        /// Messages in the packet.
        count: u16,
    },
    /// Count 0: no messages; the sequence is the next one expected.
    Heartbeat,
    /// Count `0xFFFF`: the session is over; the sequence is the next one expected.
    EndOfSession,
}

/// A validated view of one MoldUDP64 packet.
///
/// [`Packet::parse`] checks every block once, so iterating the messages cannot fail.
#[derive(Clone, Copy, Debug)]
pub struct Packet<'a> {
    bytes: &'a [u8],
    session: Session,
    sequence: u64,
    count: u16,
}

fn read_u16(bytes: &[u8], at: usize) -> Option<u16> {
    let raw = bytes.get(at..at.checked_add(2)?)?;
    Some(u16::from_be_bytes([raw[0], raw[1]]))
}

fn read_header(bytes: &[u8]) -> Option<(Session, u64, u16)> {
    let header: &[u8; HEADER_LEN] = bytes.get(..HEADER_LEN)?.try_into().ok()?;
    let mut session = [0u8; SESSION_LEN];
    session.copy_from_slice(&header[..SESSION_LEN]);
    let mut seq = [0u8; 8];
    seq.copy_from_slice(&header[10..18]);
    let count = u16::from_be_bytes([header[18], header[19]]);
    Some((Session(session), u64::from_be_bytes(seq), count))
}

impl<'a> Packet<'a> {
    /// Checks `bytes` (exactly one UDP payload) and wraps them.
    ///
    /// # Errors
    ///
    /// A [`MoldError`] when the header is short, a block's length is cut off or runs past the
    /// end, bytes follow the last block, or sequence plus count overflows.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, MoldError> {
        let Some((session, sequence, count)) = read_header(bytes) else {
            return Err(MoldError::TruncatedHeader { have: bytes.len() });
        };
        let blocks = if count == END_OF_SESSION_COUNT {
            0
        } else {
            count
        };
        let mut at = HEADER_LEN;
        for message in 0..blocks {
            let Some(len) = read_u16(bytes, at) else {
                return Err(MoldError::TruncatedLength {
                    message,
                    offset: at,
                });
            };
            let remain = bytes.len() - at - 2;
            if usize::from(len) > remain {
                return Err(MoldError::MessageOverrun {
                    message,
                    offset: at,
                    len,
                    remain,
                });
            }
            at += 2 + usize::from(len);
        }
        if at != bytes.len() {
            return Err(MoldError::TrailingBytes {
                count,
                extra: bytes.len() - at,
            });
        }
        if sequence.checked_add(u64::from(blocks)).is_none() {
            return Err(MoldError::SequenceOverflow { sequence, count });
        }
        Ok(Packet {
            bytes,
            session,
            sequence,
            count,
        })
    }

    /// The session name.
    pub fn session(&self) -> Session {
        self.session
    }

    /// The sequence number of the first message; for a heartbeat or end of session, the next
    /// sequence number expected.
    pub fn sequence(&self) -> u64 {
        self.sequence
    }

    /// Whether the packet carries data, is a heartbeat or ends the session.
    pub fn kind(&self) -> PacketKind {
        match self.count {
            HEARTBEAT_COUNT => PacketKind::Heartbeat,
            END_OF_SESSION_COUNT => PacketKind::EndOfSession,
            count => PacketKind::Data { count },
        }
    }

    /// Messages carried: 0 for a heartbeat and for end of session.
    pub fn message_count(&self) -> u16 {
        match self.kind() {
            PacketKind::Data { count } => count,
            PacketKind::Heartbeat | PacketKind::EndOfSession => 0,
        }
    }

    /// The sequence number expected after this packet.
    pub fn next_sequence(&self) -> u64 {
        // `parse` proved the sum fits.
        self.sequence + u64::from(self.message_count())
    }

    /// The whole packet, header included.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The messages' bytes, in order, without their length fields.
    pub fn messages(&self) -> Messages<'a> {
        Messages {
            rest: self.bytes.get(HEADER_LEN..).unwrap_or_default(),
            left: self.message_count(),
        }
    }
}

/// The messages of a [`Packet`], in order.
#[derive(Clone, Debug)]
pub struct Messages<'a> {
    rest: &'a [u8],
    left: u16,
}

impl<'a> Iterator for Messages<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 {
            return None;
        }
        // `Packet::parse` validated every block; the checks below only keep this panic-free.
        let len = usize::from(read_u16(self.rest, 0)?);
        let message = self.rest.get(2..2 + len)?;
        self.rest = self.rest.get(2 + len..)?;
        self.left -= 1;
        Some(message)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (usize::from(self.left), Some(usize::from(self.left)))
    }
}

impl ExactSizeIterator for Messages<'_> {}

/// Why a packet could not be encoded. `Copy`, allocation-free.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EncodeError {
    /// The output buffer is too small; give one of at least `need` bytes.
    BufferTooSmall {
        /// Bytes the packet needs.
        need: usize,
        /// Bytes the buffer has.
        have: usize,
    },
    /// The packet already holds [`MAX_MESSAGES`]; start a new packet.
    TooManyMessages,
    /// A message longer than 65,535 bytes cannot be framed.
    MessageTooLong {
        /// The message's length.
        len: usize,
    },
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            EncodeError::BufferTooSmall { need, have } => write!(
                f,
                "MoldUDP64 packet needs {need} bytes, the buffer has {have}"
            ),
            EncodeError::TooManyMessages => {
                write!(
                    f,
                    "a MoldUDP64 packet holds at most {MAX_MESSAGES} messages"
                )
            }
            EncodeError::MessageTooLong { len } => write!(
                f,
                "a MoldUDP64 message is at most 65535 bytes, this one is {len}"
            ),
        }
    }
}

impl std::error::Error for EncodeError {}

fn write_header(
    buf: &mut [u8],
    session: Session,
    sequence: u64,
    count: u16,
) -> Result<(), EncodeError> {
    let have = buf.len();
    let Some(header) = buf.get_mut(..HEADER_LEN) else {
        return Err(EncodeError::BufferTooSmall {
            need: HEADER_LEN,
            have,
        });
    };
    header[..SESSION_LEN].copy_from_slice(&session.0);
    header[10..18].copy_from_slice(&sequence.to_be_bytes());
    header[18..20].copy_from_slice(&count.to_be_bytes());
    Ok(())
}

/// Builds a data packet in a caller's buffer, one message at a time, without allocating.
#[derive(Debug)]
pub struct PacketWriter<'b> {
    buf: &'b mut [u8],
    len: usize,
    count: u16,
}

impl<'b> PacketWriter<'b> {
    /// Starts a packet whose first message will have sequence number `sequence`.
    ///
    /// # Errors
    ///
    /// [`EncodeError::BufferTooSmall`] if `buf` cannot hold the 20-byte header.
    pub fn new(buf: &'b mut [u8], session: Session, sequence: u64) -> Result<Self, EncodeError> {
        write_header(buf, session, sequence, 0)?;
        Ok(PacketWriter {
            buf,
            len: HEADER_LEN,
            count: 0,
        })
    }

    /// Appends one message block. On error the packet is unchanged.
    ///
    /// # Errors
    ///
    /// [`EncodeError::MessageTooLong`] over 65,535 bytes, [`EncodeError::TooManyMessages`]
    /// past [`MAX_MESSAGES`], [`EncodeError::BufferTooSmall`] when the block does not fit.
    pub fn push(&mut self, message: &[u8]) -> Result<(), EncodeError> {
        let Ok(len) = u16::try_from(message.len()) else {
            return Err(EncodeError::MessageTooLong { len: message.len() });
        };
        if self.count == MAX_MESSAGES {
            return Err(EncodeError::TooManyMessages);
        }
        let need = self.len + 2 + message.len();
        let have = self.buf.len();
        let Some(block) = self.buf.get_mut(self.len..need) else {
            return Err(EncodeError::BufferTooSmall { need, have });
        };
        block[..2].copy_from_slice(&len.to_be_bytes());
        block[2..].copy_from_slice(message);
        self.len = need;
        self.count += 1;
        // The count is kept current so the buffer is a valid packet after every push.
        self.buf[18..20].copy_from_slice(&self.count.to_be_bytes());
        Ok(())
    }

    /// Messages pushed so far.
    pub fn count(&self) -> u16 {
        self.count
    }

    /// Bytes written so far, header included.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no message has been pushed (the packet would read as a heartbeat).
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Ends the packet and returns its length in bytes.
    pub fn finish(self) -> usize {
        self.len
    }
}

/// Writes a heartbeat (count 0) carrying `next_sequence`; returns its length, 20.
///
/// # Errors
///
/// [`EncodeError::BufferTooSmall`] if `buf` is shorter than 20 bytes.
pub fn encode_heartbeat(
    buf: &mut [u8],
    session: Session,
    next_sequence: u64,
) -> Result<usize, EncodeError> {
    write_header(buf, session, next_sequence, HEARTBEAT_COUNT)?;
    Ok(HEADER_LEN)
}

/// Writes an end-of-session packet (count `0xFFFF`) carrying `next_sequence`; returns its
/// length, 20.
///
/// # Errors
///
/// [`EncodeError::BufferTooSmall`] if `buf` is shorter than 20 bytes.
pub fn encode_end_of_session(
    buf: &mut [u8],
    session: Session,
    next_sequence: u64,
) -> Result<usize, EncodeError> {
    write_header(buf, session, next_sequence, END_OF_SESSION_COUNT)?;
    Ok(HEADER_LEN)
}

/// A request to the retransmission server: `count` messages from `first_seq` on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetransmitRequest {
    /// The session whose messages are wanted.
    pub session: Session,
    /// The first sequence number wanted.
    pub first_seq: u64,
    /// How many messages are wanted.
    pub count: u16,
}

impl RetransmitRequest {
    /// Bytes on the wire: the same layout as a packet header.
    pub const LEN: usize = HEADER_LEN;

    /// The 20 bytes to send.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut out = [0u8; HEADER_LEN];
        out[..SESSION_LEN].copy_from_slice(&self.session.0);
        out[10..18].copy_from_slice(&self.first_seq.to_be_bytes());
        out[18..20].copy_from_slice(&self.count.to_be_bytes());
        out
    }

    /// Reads a request (as a retransmission server would).
    ///
    /// # Errors
    ///
    /// [`MoldError::RequestLength`] unless `bytes` is exactly 20 bytes long.
    pub fn decode(bytes: &[u8]) -> Result<Self, MoldError> {
        if bytes.len() != HEADER_LEN {
            return Err(MoldError::RequestLength { have: bytes.len() });
        }
        let (session, first_seq, count) =
            read_header(bytes).ok_or(MoldError::RequestLength { have: bytes.len() })?;
        Ok(RetransmitRequest {
            session,
            first_seq,
            count,
        })
    }
}

/// Missing sequence numbers `first ..= last` (never empty: `first <= last`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GapRange {
    /// The first sequence number missing.
    pub first: u64,
    /// The last sequence number missing.
    pub last: u64,
}

impl GapRange {
    /// How many messages are missing.
    pub fn len(&self) -> u64 {
        // Saturating: the fields are public, so an inverted or full-width range must not panic.
        self.last.saturating_sub(self.first).saturating_add(1)
    }

    /// Always false: a gap misses at least one message. Present for clippy's
    /// `len_without_is_empty`.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The retransmission requests that cover the gap, each asking for at most
    /// `max_per_request` messages (at least 1).
    pub fn requests(&self, session: Session, max_per_request: u16) -> RetransmitRequests {
        RetransmitRequests {
            session,
            next: self.first,
            last: self.last,
            max: max_per_request.max(1),
            done: self.first > self.last,
        }
    }
}

impl fmt::Display for GapRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..={}", self.first, self.last)
    }
}

/// The requests that cover one [`GapRange`], in order; see [`GapRange::requests`].
#[derive(Clone, Debug)]
pub struct RetransmitRequests {
    session: Session,
    next: u64,
    last: u64,
    max: u16,
    done: bool,
}

impl Iterator for RetransmitRequests {
    type Item = RetransmitRequest;

    fn next(&mut self) -> Option<RetransmitRequest> {
        if self.done {
            return None;
        }
        let left = self.last - self.next + 1;
        let count = u16::try_from(left.min(u64::from(self.max))).unwrap_or(self.max);
        let request = RetransmitRequest {
            session: self.session,
            first_seq: self.next,
            count,
        };
        match self.next.checked_add(u64::from(count)) {
            Some(next) if next <= self.last => self.next = next,
            _ => self.done = true,
        }
        Some(request)
    }
}

/// A change of session seen by [`MoldSession`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionEvent {
    /// The first sequenced packet: it names the session and sets the expected sequence
    /// (a capture or a join that starts mid-session is not a gap).
    Started(Session),
    /// A packet names another session: the old one is left behind and the new one starts
    /// fresh, as on a first packet.
    Changed {
        /// The session until now.
        from: Session,
        /// The session from this packet on.
        to: Session,
    },
}

/// What to do with one message of a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Apply it. `seq` is `None` for an unsequenced (sanitized) packet.
    Deliver {
        /// The message's sequence number.
        seq: Option<u64>,
    },
    /// Skip it: its sequence number was applied already.
    Duplicate {
        /// The message's sequence number.
        seq: u64,
    },
}

/// [`MoldSession`]'s verdict on one packet. `Copy`: it holds no borrow, so the caller may
/// keep the packet's bytes wherever they are and walk them later.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketOutcome {
    /// Data, heartbeat or end of session.
    pub kind: PacketKind,
    /// Set when this packet started the session or switched to another one.
    pub session_event: Option<SessionEvent>,
    /// Set when this packet revealed missing messages (its sequence ran past the expected
    /// one).
    pub gap: Option<GapRange>,
    /// Sequence number of the packet's first message; `None` when it is unsequenced.
    pub first_seq: Option<u64>,
    /// Leading messages already applied: duplicates are always a prefix of a packet.
    pub duplicates: u16,
    /// Messages in the packet.
    pub count: u16,
}

impl PacketOutcome {
    /// Messages to deliver: those after the duplicates.
    pub fn delivered(&self) -> u16 {
        self.count - self.duplicates
    }

    /// The decision for the packet's `i`-th message (0-based, `i < count`).
    pub fn decide(&self, i: u16) -> Decision {
        // Saturating: `i` past the packet's count is a caller error, not a reason to panic.
        let seq = self
            .first_seq
            .map(|first| first.saturating_add(u64::from(i)));
        match seq {
            Some(seq) if i < self.duplicates => Decision::Duplicate { seq },
            seq => Decision::Deliver { seq },
        }
    }

    /// Walks `packet` (the one this outcome is for) message by message with its decision.
    pub fn sequenced<'a>(&self, packet: &Packet<'a>) -> Sequenced<'a> {
        Sequenced {
            outcome: *self,
            messages: packet.messages(),
            i: 0,
        }
    }
}

/// One message of a packet and what to do with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SequencedMessage<'a> {
    /// The message's bytes (no length field).
    pub bytes: &'a [u8],
    /// Its sequence number; `None` when the packet is unsequenced.
    pub seq: Option<u64>,
    /// Deliver or skip.
    pub decision: Decision,
}

/// The messages of a packet with their decisions; see [`PacketOutcome::sequenced`].
#[derive(Clone, Debug)]
pub struct Sequenced<'a> {
    outcome: PacketOutcome,
    messages: Messages<'a>,
    i: u16,
}

impl<'a> Iterator for Sequenced<'a> {
    type Item = SequencedMessage<'a>;

    fn next(&mut self) -> Option<SequencedMessage<'a>> {
        let bytes = self.messages.next()?;
        let decision = self.outcome.decide(self.i);
        self.i += 1;
        let seq = match decision {
            Decision::Deliver { seq } => seq,
            Decision::Duplicate { seq } => Some(seq),
        };
        Some(SequencedMessage {
            bytes,
            seq,
            decision,
        })
    }
}

/// Counters kept by [`MoldSession`]. All totals since it was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SessionStats {
    /// Packets fed, of every kind.
    pub packets: u64,
    /// Heartbeats fed.
    pub heartbeats: u64,
    /// End-of-session packets fed.
    pub end_of_session: u64,
    /// Packets replayed unsequenced (blank session and sequence 0).
    pub unsequenced_packets: u64,
    /// Messages decided `Deliver`.
    pub delivered: u64,
    /// Messages decided `Duplicate`.
    pub duplicates: u64,
    /// Gaps detected.
    pub gaps: u64,
    /// Messages missing in all gaps together.
    pub missing_messages: u64,
    /// Times a packet named a different session from the current one.
    pub session_changes: u64,
}

/// The sans-I/O MoldUDP64 sequencer: fed packets in arrival order, it decides per message
/// deliver or duplicate and detects gaps and session changes.
///
/// Rules, in order, for each packet:
/// - A blank session (zeros or spaces) with sequence 0 is a sanitized capture: its messages
///   are delivered unsequenced and the state is left alone.
/// - The first sequenced packet, or one naming another session, (re)starts the state: the
///   packet's sequence becomes the expected one, so joining mid-session is not a gap.
/// - A sequence past the expected one is a gap `expected ..= sequence - 1`; the packet is
///   then delivered (replay declares gaps and goes on; a live feed requests the range).
/// - Messages below the expected sequence are duplicates, skipped; the rest are delivered.
/// - Heartbeats and end of session carry the next expected sequence, so they reveal gaps
///   the same way; they never move the expectation backwards.
///
/// State is updated once per packet, so the verdict is a small `Copy` value and the
/// sequencer never holds the packet's bytes. The gap list is allocated at construction and
/// never grows past its capacity: a bad feed cannot make it use more memory.
#[derive(Clone, Debug)]
pub struct MoldSession {
    session: Option<Session>,
    /// Invariant: `Some` exactly when `session` is.
    next_expected: Option<u64>,
    ended: bool,
    stats: SessionStats,
    /// Invariant: `gap_ranges.len() <= gap_capacity`, so pushing never reallocates.
    gap_ranges: Vec<GapRange>,
    gap_capacity: usize,
}

impl Default for MoldSession {
    fn default() -> Self {
        Self::new()
    }
}

impl MoldSession {
    /// A sequencer that keeps the first [`DEFAULT_GAP_CAPACITY`] gap ranges.
    pub fn new() -> Self {
        Self::with_gap_capacity(DEFAULT_GAP_CAPACITY)
    }

    /// A sequencer that keeps the first `capacity` gap ranges; later gaps are only counted.
    pub fn with_gap_capacity(capacity: usize) -> Self {
        MoldSession {
            session: None,
            next_expected: None,
            ended: false,
            stats: SessionStats::default(),
            gap_ranges: Vec::with_capacity(capacity),
            gap_capacity: capacity,
        }
    }

    /// Decides what to do with `packet`'s messages and updates the state.
    pub fn on_packet(&mut self, packet: &Packet<'_>) -> PacketOutcome {
        self.stats.packets += 1;
        let kind = packet.kind();
        match kind {
            PacketKind::Heartbeat => self.stats.heartbeats += 1,
            PacketKind::EndOfSession => self.stats.end_of_session += 1,
            PacketKind::Data { .. } => {}
        }
        let count = packet.message_count();
        let mut outcome = PacketOutcome {
            kind,
            session_event: None,
            gap: None,
            first_seq: None,
            duplicates: 0,
            count,
        };

        if packet.session().is_blank() && packet.sequence() == 0 {
            self.stats.unsequenced_packets += 1;
            self.stats.delivered += u64::from(count);
            return outcome;
        }

        let seq = packet.sequence();
        outcome.first_seq = Some(seq);
        let expected = match (self.session, self.next_expected) {
            (Some(current), Some(expected)) if current == packet.session() => expected,
            (current, _) => {
                outcome.session_event = Some(match current {
                    None => SessionEvent::Started(packet.session()),
                    Some(from) => {
                        self.stats.session_changes += 1;
                        SessionEvent::Changed {
                            from,
                            to: packet.session(),
                        }
                    }
                });
                self.session = Some(packet.session());
                self.ended = false;
                seq
            }
        };

        if seq > expected {
            let gap = GapRange {
                first: expected,
                last: seq - 1,
            };
            self.record_gap(gap);
            outcome.gap = Some(gap);
        } else {
            let behind = expected - seq;
            outcome.duplicates = u16::try_from(behind).map_or(count, |b| b.min(count));
        }
        self.stats.duplicates += u64::from(outcome.duplicates);
        self.stats.delivered += u64::from(outcome.delivered());
        self.next_expected = Some(expected.max(packet.next_sequence()));
        if kind == PacketKind::EndOfSession {
            self.ended = true;
        }
        outcome
    }

    fn record_gap(&mut self, gap: GapRange) {
        self.stats.gaps += 1;
        self.stats.missing_messages += gap.len();
        if self.gap_ranges.len() < self.gap_capacity {
            self.gap_ranges.push(gap);
        }
    }

    /// The current session, once a sequenced packet has been seen.
    pub fn session(&self) -> Option<Session> {
        self.session
    }

    /// The sequence number expected next, once a sequenced packet has been seen.
    pub fn next_expected(&self) -> Option<u64> {
        self.next_expected
    }

    /// True once the current session has sent its end-of-session packet.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// The counters.
    pub fn stats(&self) -> SessionStats {
        self.stats
    }

    /// The first gaps detected, in order, at most the capacity given at construction.
    /// `stats().gaps` counts them all.
    pub fn gap_ranges(&self) -> &[GapRange] {
        &self.gap_ranges
    }
}

/// Where [`MoldRecovery`] sends what it decides: messages in order, declared losses, and
/// retransmission requests. The live feed reader implements it over its ring and its
/// request socket; tests implement it over vectors.
pub trait RecoverySink {
    /// Apply message `seq`. Called in strictly increasing sequence order, with no gaps
    /// except those announced by [`RecoverySink::lost`] just before.
    fn message(&mut self, seq: u64, bytes: &[u8]);
    /// Messages `gap.first ..= gap.last` will never come: the retransmission did not
    /// answer in time or the reorder store overflowed. The next message delivered is
    /// `gap.last + 1`.
    fn lost(&mut self, gap: GapRange);
    /// Send this request to the retransmission server.
    fn request(&mut self, request: RetransmitRequest);
}

/// Settings of a [`MoldRecovery`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecoveryConfig {
    /// Packets the reorder store holds while a gap is open.
    pub store_packets: usize,
    /// Longest packet the store holds (the path's MTU payload); a longer packet that must
    /// wait forces the open gap to be declared lost, since it cannot be kept.
    pub max_packet_len: usize,
    /// How long to wait for a retransmission before asking again.
    pub retransmit_timeout: Duration,
    /// Requests repeated per gap after the first before it is declared lost.
    pub max_retries: u32,
    /// The most messages one request asks for (at least 1).
    pub max_per_request: u16,
    /// The sequence number each session is expected to start at: `Some(1)` for a handler
    /// started before the session opens, so a lost first packet is a gap like any other.
    /// `None` joins a session at the first packet seen (a start mid-session is not a gap).
    pub start_sequence: Option<u64>,
}

impl Default for RecoveryConfig {
    /// 4096 packets of up to 1500 bytes (6 MiB), 100 ms timeout, 3 retries, requests of up
    /// to [`MAX_MESSAGES`] messages, joining at the first packet seen.
    fn default() -> Self {
        RecoveryConfig {
            store_packets: 4096,
            max_packet_len: 1500,
            retransmit_timeout: Duration::from_millis(100),
            max_retries: 3,
            max_per_request: MAX_MESSAGES,
            start_sequence: None,
        }
    }
}

/// Counters kept by [`MoldRecovery`]. All totals since it was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecoveryStats {
    /// Packets fed, of every kind.
    pub packets: u64,
    /// Messages delivered to the sink.
    pub delivered: u64,
    /// Gaps detected (each a range past the highest sequence seen).
    pub gaps: u64,
    /// Retransmission requests sent, first tries and repeats.
    pub requests_sent: u64,
    /// Messages delivered that had been missing: the gaps that recovery filled.
    pub recovered: u64,
    /// Ranges declared lost: one per [`RecoverySink::lost`] call (a gap partly filled
    /// before it was given up announces each part still missing).
    pub gaps_lost: u64,
    /// Messages declared lost.
    pub messages_lost: u64,
    /// Messages received again after they were delivered or stored: retransmission
    /// overlap and duplicated packets.
    pub duplicates: u64,
    /// The most packets the reorder store held at once.
    pub store_high_water: usize,
    /// Times the store (or the gap table) was full and an open gap was declared lost to
    /// make room.
    pub store_overflows: u64,
    /// Times a packet named a different session.
    pub session_changes: u64,
    /// Packets with a blank session and sequence 0 (sanitized captures), which a live
    /// sequencer cannot place and therefore ignores; replay them with [`MoldSession`].
    pub unsequenced_ignored: u64,
}

/// One gap being recovered: the range detected, narrowed from the front as delivery
/// passes it.
#[derive(Clone, Copy, Debug)]
struct GapRecord {
    range: GapRange,
    /// When it was last requested.
    requested_at: Duration,
    /// Requests repeated so far.
    retries: u32,
    /// Given up on: its holes are skipped (and announced) when delivery reaches them.
    lost: bool,
}

/// Where a stored packet lies: its slot and the sequence numbers it carries.
#[derive(Clone, Copy, Debug, Default)]
struct StoredPacket {
    first: u64,
    /// One past its last message.
    end: u64,
    len: usize,
}

/// The sans-I/O MoldUDP64 sequencer for live traffic: it never applies a message out of
/// order. A gap is requested from the retransmission server, later packets wait in a
/// reorder store allocated once, and delivery resumes as soon as the gap fills.
///
/// [`MoldSession`] is the replay sequencer: it declares a gap and moves on. This one is
/// its live counterpart, for a feed with a retransmission server:
/// - a packet past the highest sequence seen opens a gap: one request per missing range
///   ([`GapRange::requests`]), each at most `max_per_request` messages;
/// - packets that cannot be applied yet are copied into the store; retransmitted packets
///   are ordinary packets fed to [`MoldRecovery::on_packet`], from either socket;
/// - a gap not filled within `retransmit_timeout` is asked for again (only its parts still
///   missing), up to `max_retries` times, then declared lost: the sink hears
///   [`RecoverySink::lost`] with the exact range, then the messages after it;
/// - when the store is full, the oldest open gap is declared lost to make room;
/// - messages already delivered or stored are duplicates, skipped and counted;
/// - heartbeats and end of session carry the next sequence, so they reveal gaps too;
/// - a packet naming another session ends the old one: what is stored is delivered, what
///   is missing is declared lost, and the new session starts at
///   [`RecoveryConfig::start_sequence`], or where that packet starts.
///
/// Time is a [`Duration`] since any origin the caller chooses; only differences matter.
/// After construction nothing allocates: the store, its index and the gap table are sized
/// once from [`RecoveryConfig`].
///
/// ```
/// use std::time::Duration;
/// use ticklane_feed::moldudp64::*;
///
/// #[derive(Default)]
/// struct Sink { got: Vec<u64>, lost: Vec<GapRange>, asked: Vec<RetransmitRequest> }
/// impl RecoverySink for Sink {
///     fn message(&mut self, seq: u64, _: &[u8]) { self.got.push(seq) }
///     fn lost(&mut self, gap: GapRange) { self.lost.push(gap) }
///     fn request(&mut self, r: RetransmitRequest) { self.asked.push(r) }
/// }
/// let packet = |buf: &mut [u8], seq| {
///     let mut w = PacketWriter::new(buf, Session::new(b"S").unwrap(), seq).unwrap();
///     w.push(b"m").unwrap();
///     w.finish()
/// };
/// let (mut a, mut b, mut c) = ([0u8; 32], [0u8; 32], [0u8; 32]);
/// let (la, lb, lc) = (packet(&mut a, 1), packet(&mut b, 2), packet(&mut c, 3));
///
/// let mut live = MoldRecovery::new(RecoveryConfig::default());
/// let mut sink = Sink::default();
/// let now = Duration::ZERO;
/// live.on_packet(&Packet::parse(&a[..la]).unwrap(), now, &mut sink);
/// live.on_packet(&Packet::parse(&c[..lc]).unwrap(), now, &mut sink); // 2 is missing
/// assert_eq!((sink.asked[0].first_seq, sink.asked[0].count), (2, 1));
/// assert_eq!(sink.got, [1]); // 3 waits in the store
/// live.on_packet(&Packet::parse(&b[..lb]).unwrap(), now, &mut sink); // the retransmission
/// assert_eq!(sink.got, [1, 2, 3]);
/// assert_eq!(live.stats().recovered, 1);
/// ```
#[derive(Debug)]
pub struct MoldRecovery {
    config: RecoveryConfig,
    session: Option<Session>,
    /// Invariant: `Some` exactly when `session` is.
    next_expected: Option<u64>,
    /// One past the highest sequence any packet of the session carried or announced:
    /// everything from `next_expected` up to here is delivered, stored or in a gap record.
    highest: u64,
    /// The sequence an end-of-session packet announced.
    end_of_session: Option<u64>,
    /// `store_packets` slots of `max_packet_len` bytes each.
    slots: Box<[u8]>,
    slot_info: Box<[StoredPacket]>,
    /// Free slot numbers. Invariant: `free.len() + index.len() == store_packets`.
    free: Vec<usize>,
    /// Stored slots ordered by first sequence.
    index: VecDeque<usize>,
    /// Open gaps ordered by first sequence, never overlapping. Capacity `store_packets`.
    gaps: VecDeque<GapRecord>,
    stats: RecoveryStats,
}

impl MoldRecovery {
    /// A sequencer with its store allocated, waiting for a first packet.
    pub fn new(config: RecoveryConfig) -> Self {
        let config = RecoveryConfig {
            store_packets: config.store_packets.max(1),
            max_packet_len: config.max_packet_len.max(HEADER_LEN),
            max_per_request: config.max_per_request.max(1),
            ..config
        };
        let n = config.store_packets;
        MoldRecovery {
            session: None,
            next_expected: None,
            highest: 0,
            end_of_session: None,
            slots: vec![0u8; n * config.max_packet_len].into_boxed_slice(),
            slot_info: vec![StoredPacket::default(); n].into_boxed_slice(),
            free: (0..n).rev().collect(),
            index: VecDeque::with_capacity(n),
            gaps: VecDeque::with_capacity(n),
            stats: RecoveryStats::default(),
            config,
        }
    }

    /// Takes one packet (live or retransmitted) received at `now`, and delivers, stores,
    /// requests or declares lost through `sink` whatever it makes possible.
    pub fn on_packet(&mut self, packet: &Packet<'_>, now: Duration, sink: &mut impl RecoverySink) {
        self.stats.packets += 1;
        if packet.session().is_blank() && packet.sequence() == 0 {
            self.stats.unsequenced_ignored += 1;
            return;
        }
        let first = packet.sequence();
        let end = packet.next_sequence();
        let expected = match (self.session, self.next_expected) {
            (Some(current), Some(expected)) if current == packet.session() => expected,
            (current, _) => {
                if current.is_some() {
                    self.stats.session_changes += 1;
                    self.finish_session(sink);
                }
                let start = self.config.start_sequence.unwrap_or(first);
                self.session = Some(packet.session());
                self.end_of_session = None;
                self.highest = start;
                self.next_expected = Some(start);
                start
            }
        };
        if packet.kind() == PacketKind::EndOfSession {
            self.end_of_session = Some(first);
        }
        if first > self.highest {
            self.open_gap(
                GapRange {
                    first: self.highest,
                    last: first - 1,
                },
                now,
                sink,
            );
        }
        self.highest = self.highest.max(end);
        let count = u64::from(packet.message_count());
        if count == 0 {
            return;
        }
        if end <= expected {
            self.stats.duplicates += count;
            return;
        }
        if first <= expected {
            self.stats.duplicates += expected - first;
            self.deliver(packet, sink);
            self.drain(sink);
            return;
        }
        self.store(packet, sink);
    }

    /// Repeats requests whose answer is overdue and declares lost the gaps out of
    /// retries, delivering whatever that unblocks. Call at [`MoldRecovery::next_deadline`].
    pub fn poll_timers(&mut self, now: Duration, sink: &mut impl RecoverySink) {
        let Some(session) = self.session else {
            return;
        };
        let mut newly_lost = false;
        for i in 0..self.gaps.len() {
            let gap = self.gaps[i];
            if gap.lost || now.saturating_sub(gap.requested_at) < self.config.retransmit_timeout {
                continue;
            }
            if self.holes(gap.range).next().is_none() {
                // All of it arrived and waits in the store behind an earlier gap.
                self.gaps[i].requested_at = now;
                continue;
            }
            if gap.retries >= self.config.max_retries {
                self.gaps[i].lost = true;
                newly_lost = true;
                continue;
            }
            // Only the parts still missing are asked for again.
            let mut requests = 0;
            for hole in self.holes(gap.range) {
                for request in hole.requests(session, self.config.max_per_request) {
                    sink.request(request);
                    requests += 1;
                }
            }
            self.stats.requests_sent += requests;
            self.gaps[i].requested_at = now;
            self.gaps[i].retries += 1;
        }
        if newly_lost {
            self.drain(sink);
        }
    }

    /// When [`MoldRecovery::poll_timers`] next has something to do; `None` with no gap
    /// open.
    pub fn next_deadline(&self) -> Option<Duration> {
        self.gaps
            .iter()
            .filter(|g| !g.lost)
            .map(|g| {
                g.requested_at
                    .saturating_add(self.config.retransmit_timeout)
            })
            .min()
    }

    fn open_gap(&mut self, range: GapRange, now: Duration, sink: &mut impl RecoverySink) {
        self.stats.gaps += 1;
        if let Some(session) = self.session {
            for request in range.requests(session, self.config.max_per_request) {
                sink.request(request);
                self.stats.requests_sent += 1;
            }
        }
        let full = self.gaps.len() == self.gaps.capacity();
        match self.gaps.back_mut() {
            // The table is full (only heartbeats revealing gap after gap get here, since
            // each other gap holds a store slot): widen the newest record rather than
            // grow, so every missing message stays covered by a record.
            Some(newest) if full => newest.range.last = range.last,
            _ => self.gaps.push_back(GapRecord {
                range,
                requested_at: now,
                retries: 0,
                lost: false,
            }),
        }
    }

    fn lose_oldest_gap(&mut self, sink: &mut impl RecoverySink) {
        if let Some(gap) = self.gaps.iter_mut().find(|g| !g.lost) {
            gap.lost = true;
        }
        self.drain(sink);
    }

    /// The parts of `range` neither delivered nor stored, in order.
    fn holes(&self, range: GapRange) -> impl Iterator<Item = GapRange> + '_ {
        let mut from = range.first.max(self.next_expected.unwrap_or(0));
        let mut stored = self.index.iter().map(|&slot| self.slot_info[slot]);
        let mut done = false;
        core::iter::from_fn(move || {
            while !done && from <= range.last {
                match stored.next() {
                    Some(p) if p.end <= from => {}
                    Some(p) if p.first <= from => from = p.end,
                    Some(p) => {
                        let hole = GapRange {
                            first: from,
                            last: (p.first - 1).min(range.last),
                        };
                        from = p.end;
                        return Some(hole);
                    }
                    None => {
                        done = true;
                        return Some(GapRange {
                            first: from,
                            last: range.last,
                        });
                    }
                }
            }
            None
        })
    }

    /// Delivers the messages of `packet` from `next_expected` on. The caller checked that
    /// the packet covers `next_expected`.
    fn deliver(&mut self, packet: &Packet<'_>, sink: &mut impl RecoverySink) {
        let expected = self.next_expected.unwrap_or(packet.sequence());
        deliver_messages(packet, expected, &self.gaps, &mut self.stats, sink);
        self.next_expected = Some(expected.max(packet.next_sequence()));
    }

    /// Delivers what the store holds from `next_expected` on, announcing lost holes on the
    /// way, until a hole still being recovered blocks it; then drops finished gaps.
    fn drain(&mut self, sink: &mut impl RecoverySink) {
        let Some(mut expected) = self.next_expected else {
            return;
        };
        loop {
            if let Some(&slot) = self.index.front() {
                let info = self.slot_info[slot];
                if info.end <= expected {
                    self.stats.duplicates += info.end - info.first;
                    self.release_front();
                    continue;
                }
                if info.first <= expected {
                    let at = slot * self.config.max_packet_len;
                    let bytes = &self.slots[at..at + info.len];
                    let packet = Packet::parse(bytes).expect("invariant: stored packets parsed");
                    self.stats.duplicates += expected - info.first;
                    deliver_messages(&packet, expected, &self.gaps, &mut self.stats, sink);
                    expected = info.end;
                    self.release_front();
                    continue;
                }
            }
            // `expected` is missing: skip it only if its gap was given up.
            let Some(gap) = self.gaps.iter().find(|g| g.range.last >= expected) else {
                break;
            };
            if !gap.lost || gap.range.first > expected {
                break;
            }
            let stored_from = self.index.front().map(|&s| self.slot_info[s].first);
            let last = match stored_from {
                Some(first) => (first - 1).min(gap.range.last),
                None => gap.range.last,
            };
            let hole = GapRange {
                first: expected,
                last,
            };
            self.stats.gaps_lost += 1;
            self.stats.messages_lost += hole.len();
            sink.lost(hole);
            expected = last + 1;
        }
        self.next_expected = Some(expected);
        while self.gaps.front().is_some_and(|g| g.range.last < expected) {
            self.gaps.pop_front();
        }
        if let Some(gap) = self.gaps.front_mut() {
            gap.range.first = gap.range.first.max(expected);
        }
    }

    fn release_front(&mut self) {
        if let Some(slot) = self.index.pop_front() {
            self.free.push(slot);
        }
    }

    /// Copies a packet that cannot be delivered yet into the store, making room by
    /// declaring the oldest gap lost if the store is full.
    fn store(&mut self, packet: &Packet<'_>, sink: &mut impl RecoverySink) {
        let first = packet.sequence();
        let end = packet.next_sequence();
        let bytes = packet.bytes();
        // Already stored whole (a duplicated packet or overlapping retransmission)?
        let pos = self
            .index
            .partition_point(|&slot| self.slot_info[slot].first <= first);
        if pos > 0 && self.slot_info[self.index[pos - 1]].end >= end {
            self.stats.duplicates += end - first;
            return;
        }
        while self.free.is_empty() || bytes.len() > self.config.max_packet_len {
            if self.gaps.iter().all(|g| g.lost) {
                // Nothing left to give up. Unreachable while every missing message is in
                // a gap record, but a loop must not depend on that: count and drop.
                self.stats.messages_lost += end - first;
                return;
            }
            self.stats.store_overflows += 1;
            self.lose_oldest_gap(sink);
            let expected = self.next_expected.unwrap_or(first);
            if first <= expected {
                // Giving up the gap in front of it made the packet next in line.
                if end > expected {
                    self.stats.duplicates += expected - first;
                    self.deliver(packet, sink);
                    self.drain(sink);
                } else {
                    self.stats.duplicates += end - first;
                }
                return;
            }
        }
        let Some(slot) = self.free.pop() else {
            return;
        };
        let at = slot * self.config.max_packet_len;
        self.slots[at..at + bytes.len()].copy_from_slice(bytes);
        self.slot_info[slot] = StoredPacket {
            first,
            end,
            len: bytes.len(),
        };
        let pos = self
            .index
            .partition_point(|&s| self.slot_info[s].first <= first);
        self.index.insert(pos, slot);
        self.stats.store_high_water = self.stats.store_high_water.max(self.index.len());
    }

    /// The old session is over: deliver what is stored and declare lost what is missing,
    /// so the sink sees the whole of it before the new one starts.
    fn finish_session(&mut self, sink: &mut impl RecoverySink) {
        for gap in self.gaps.iter_mut() {
            gap.lost = true;
        }
        self.drain(sink);
        // Whatever is left sits past holes no record covers; it cannot be delivered in
        // order, so it is counted lost with the holes.
        while let Some(slot) = self.index.pop_front() {
            let info = self.slot_info[slot];
            self.stats.messages_lost += info.end - info.first;
            self.free.push(slot);
        }
        self.gaps.clear();
    }

    /// The current session, once a sequenced packet has been seen.
    pub fn session(&self) -> Option<Session> {
        self.session
    }

    /// The sequence number of the next message to deliver.
    pub fn next_expected(&self) -> Option<u64> {
        self.next_expected
    }

    /// True once end of session was announced and every message before it was delivered
    /// or declared lost.
    pub fn ended(&self) -> bool {
        matches!((self.end_of_session, self.next_expected), (Some(end), Some(next)) if next >= end)
    }

    /// Gaps still open (being recovered, or given up and waiting for delivery to reach
    /// them).
    pub fn open_gaps(&self) -> usize {
        self.gaps.len()
    }

    /// Packets waiting in the reorder store.
    pub fn stored_packets(&self) -> usize {
        self.index.len()
    }

    /// The counters.
    pub fn stats(&self) -> RecoveryStats {
        self.stats
    }
}

/// Hands `packet`'s messages from `from` on to the sink, counting those that fill a gap.
fn deliver_messages(
    packet: &Packet<'_>,
    from: u64,
    gaps: &VecDeque<GapRecord>,
    stats: &mut RecoveryStats,
    sink: &mut impl RecoverySink,
) {
    let first = packet.sequence();
    let end = packet.next_sequence();
    let skip = usize::try_from(from.saturating_sub(first)).unwrap_or(usize::MAX);
    for (i, message) in packet.messages().enumerate().skip(skip) {
        sink.message(first + i as u64, message);
    }
    let from = from.max(first);
    stats.delivered += end.saturating_sub(from);
    for gap in gaps.iter().take_while(|g| g.range.first < end) {
        let lo = gap.range.first.max(from);
        let hi = gap.range.last.saturating_add(1).min(end);
        stats.recovered += hi.saturating_sub(lo);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn session(name: &[u8]) -> Session {
        Session::new(name).expect("short name")
    }

    fn packet_bytes(s: Session, seq: u64, messages: &[&[u8]]) -> Vec<u8> {
        let mut buf = vec![0u8; 2048];
        let mut w = PacketWriter::new(&mut buf, s, seq).expect("header fits");
        for m in messages {
            w.push(m).expect("fits");
        }
        let len = w.finish();
        buf.truncate(len);
        buf
    }

    fn heartbeat(s: Session, next: u64) -> Vec<u8> {
        let mut buf = vec![0u8; HEADER_LEN];
        encode_heartbeat(&mut buf, s, next).expect("fits");
        buf
    }

    #[test]
    fn header_layout_is_big_endian() {
        let bytes = packet_bytes(session(b"ABCDEFGHIJ"), 0x0102_0304_0506_0708, &[b"xy"]);
        assert_eq!(&bytes[..10], b"ABCDEFGHIJ");
        assert_eq!(&bytes[10..18], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&bytes[18..20], &[0, 1]);
        assert_eq!(&bytes[20..], &[0, 2, b'x', b'y']);
    }

    #[test]
    fn malformed_packets_are_errors_not_panics() {
        let s = session(b"S1");
        assert_eq!(
            Packet::parse(&[0u8; 19]).unwrap_err(),
            MoldError::TruncatedHeader { have: 19 }
        );
        let good = packet_bytes(s, 5, &[b"abc", b"de"]);
        // Cut inside the second message's bytes.
        assert_eq!(
            Packet::parse(&good[..good.len() - 1]).unwrap_err(),
            MoldError::MessageOverrun {
                message: 1,
                offset: 25,
                len: 2,
                remain: 1
            }
        );
        // Cut inside the second message's length.
        assert_eq!(
            Packet::parse(&good[..26]).unwrap_err(),
            MoldError::TruncatedLength {
                message: 1,
                offset: 25
            }
        );
        let mut long = good.clone();
        long.push(0);
        assert_eq!(
            Packet::parse(&long).unwrap_err(),
            MoldError::TrailingBytes { count: 2, extra: 1 }
        );
        let mut overflow = heartbeat(s, u64::MAX);
        overflow[19] = 1;
        overflow.extend_from_slice(&[0, 0]);
        assert_eq!(
            Packet::parse(&overflow).unwrap_err(),
            MoldError::SequenceOverflow {
                sequence: u64::MAX,
                count: 1
            }
        );
        // A heartbeat at u64::MAX carries no messages, so it does not overflow.
        assert!(Packet::parse(&heartbeat(s, u64::MAX)).is_ok());
    }

    #[test]
    fn heartbeat_and_end_of_session_carry_no_messages() {
        let s = session(b"S1");
        let hb = heartbeat(s, 42);
        let p = Packet::parse(&hb).expect("valid");
        assert_eq!(p.kind(), PacketKind::Heartbeat);
        assert_eq!(p.next_sequence(), 42);
        let mut buf = [0u8; 20];
        encode_end_of_session(&mut buf, s, 43).expect("fits");
        let p = Packet::parse(&buf).expect("valid");
        assert_eq!(p.kind(), PacketKind::EndOfSession);
        assert_eq!(p.message_count(), 0);
        assert_eq!(p.messages().count(), 0);
        assert_eq!(p.next_sequence(), 43);
        assert_eq!(
            encode_heartbeat(&mut [0u8; 19], s, 1),
            Err(EncodeError::BufferTooSmall { need: 20, have: 19 })
        );
    }

    #[test]
    fn writer_errors_leave_the_packet_valid() {
        let mut buf = [0u8; 26];
        let mut w = PacketWriter::new(&mut buf, session(b"S"), 1).expect("fits");
        w.push(b"abcd").expect("fits");
        assert_eq!(
            w.push(b"x"),
            Err(EncodeError::BufferTooSmall { need: 29, have: 26 })
        );
        assert_eq!(
            w.push(&[0u8; 70_000]),
            Err(EncodeError::MessageTooLong { len: 70_000 })
        );
        let len = w.finish();
        let p = Packet::parse(&buf[..len]).expect("valid");
        assert_eq!(p.messages().collect::<Vec<_>>(), [b"abcd"]);
    }

    #[test]
    fn retransmit_request_round_trips() {
        let r = RetransmitRequest {
            session: session(b"000010059B"),
            first_seq: 14_764_497,
            count: 3,
        };
        let bytes = r.to_bytes();
        assert_eq!(RetransmitRequest::decode(&bytes), Ok(r));
        assert_eq!(
            RetransmitRequest::decode(&bytes[..19]),
            Err(MoldError::RequestLength { have: 19 })
        );
    }

    #[test]
    fn gap_splits_into_requests() {
        let s = session(b"S");
        let gap = GapRange {
            first: 10,
            last: 24,
        };
        let reqs: Vec<_> = gap.requests(s, 6).map(|r| (r.first_seq, r.count)).collect();
        assert_eq!(reqs, [(10, 6), (16, 6), (22, 3)]);
        let top = GapRange {
            first: u64::MAX - 1,
            last: u64::MAX,
        };
        let reqs: Vec<_> = top.requests(s, 0).map(|r| r.first_seq).collect();
        assert_eq!(reqs, [u64::MAX - 1, u64::MAX]);
    }

    #[test]
    fn first_packet_sets_expectation_and_gap_is_exact() {
        let s = session(b"000010059B");
        let mut seq = MoldSession::new();
        let one = packet_bytes(s, 14_764_496, &[b"a"]);
        let p = Packet::parse(&one).expect("valid");
        let o = seq.on_packet(&p);
        assert_eq!(o.session_event, Some(SessionEvent::Started(s)));
        assert_eq!(o.gap, None);
        assert_eq!(
            o.decide(0),
            Decision::Deliver {
                seq: Some(14_764_496)
            }
        );

        let two = packet_bytes(s, 19_009_117, &[b"b", b"c"]);
        let p = Packet::parse(&two).expect("valid");
        let o = seq.on_packet(&p);
        let gap = GapRange {
            first: 14_764_497,
            last: 19_009_116,
        };
        assert_eq!(o.gap, Some(gap));
        assert_eq!(o.delivered(), 2);
        assert_eq!(seq.gap_ranges(), [gap]);
        assert_eq!(seq.stats().missing_messages, 4_244_620);
        assert_eq!(seq.next_expected(), Some(19_009_119));
    }

    #[test]
    fn overlap_delivers_only_the_new_tail() {
        let s = session(b"S");
        let mut seq = MoldSession::new();
        let a = packet_bytes(s, 1, &[b"1", b"2", b"3"]);
        seq.on_packet(&Packet::parse(&a).expect("valid"));
        let b = packet_bytes(s, 2, &[b"2", b"3", b"4"]);
        let p = Packet::parse(&b).expect("valid");
        let o = seq.on_packet(&p);
        let got: Vec<_> = o.sequenced(&p).map(|m| (m.bytes[0], m.decision)).collect();
        assert_eq!(
            got,
            [
                (b'2', Decision::Duplicate { seq: 2 }),
                (b'3', Decision::Duplicate { seq: 3 }),
                (b'4', Decision::Deliver { seq: Some(4) }),
            ]
        );
        assert_eq!(seq.stats().duplicates, 2);
    }

    #[test]
    fn heartbeat_reveals_a_gap_and_never_moves_back() {
        let s = session(b"S");
        let mut seq = MoldSession::new();
        seq.on_packet(&Packet::parse(&packet_bytes(s, 1, &[b"x"])).expect("valid"));
        let o = seq.on_packet(&Packet::parse(&heartbeat(s, 5)).expect("valid"));
        assert_eq!(o.gap, Some(GapRange { first: 2, last: 4 }));
        let o = seq.on_packet(&Packet::parse(&heartbeat(s, 3)).expect("valid"));
        assert_eq!(o.gap, None);
        assert_eq!(seq.next_expected(), Some(5));
        let mut eos = [0u8; 20];
        encode_end_of_session(&mut eos, s, 5).expect("fits");
        seq.on_packet(&Packet::parse(&eos).expect("valid"));
        assert!(seq.ended());
    }

    #[test]
    fn session_change_starts_fresh() {
        let mut seq = MoldSession::new();
        let a = session(b"A");
        let b = session(b"B");
        seq.on_packet(&Packet::parse(&packet_bytes(a, 100, &[b"x"])).expect("valid"));
        let o = seq.on_packet(&Packet::parse(&packet_bytes(b, 1, &[b"y"])).expect("valid"));
        assert_eq!(
            o.session_event,
            Some(SessionEvent::Changed { from: a, to: b })
        );
        assert_eq!(o.gap, None);
        assert_eq!(o.duplicates, 0);
        assert_eq!(seq.stats().session_changes, 1);
        assert_eq!(seq.next_expected(), Some(2));
    }

    #[test]
    fn sanitized_packets_are_unsequenced_and_leave_state_alone() {
        let mut seq = MoldSession::new();
        for blank in [Session([0; 10]), Session([b' '; 10])] {
            let bytes = packet_bytes(blank, 0, &[b"x", b"y"]);
            let p = Packet::parse(&bytes).expect("valid");
            let o = seq.on_packet(&p);
            assert_eq!(o.first_seq, None);
            assert!(o
                .sequenced(&p)
                .all(|m| m.decision == Decision::Deliver { seq: None }));
        }
        assert_eq!(seq.session(), None);
        assert_eq!(seq.stats().unsequenced_packets, 2);
        assert_eq!(seq.stats().delivered, 4);
    }

    #[test]
    fn gap_list_is_bounded_but_totals_are_not() {
        let s = session(b"S");
        let mut seq = MoldSession::with_gap_capacity(2);
        for i in 0..5u64 {
            seq.on_packet(&Packet::parse(&heartbeat(s, 1 + 2 * i)).expect("valid"));
        }
        assert_eq!(seq.stats().gaps, 4);
        // Heartbeat 1 sets the expectation; 3, 5, 7, 9 each reveal two missing messages.
        assert_eq!(seq.stats().missing_messages, 8);
        assert_eq!(seq.gap_ranges().len(), 2);
        assert_eq!(seq.gap_ranges()[1], GapRange { first: 3, last: 4 });
    }

    /// One packet of the model tests: session index, sequence, count (0 = heartbeat,
    /// `None` = end of session).
    #[derive(Clone, Debug)]
    struct ModelPacket {
        session: u8,
        seq: u64,
        count: Option<u16>,
    }

    fn model_packet() -> impl Strategy<Value = ModelPacket> {
        (
            0u8..2,
            1u64..40,
            prop_oneof![8 => (0u16..6).prop_map(Some), 1 => Just(None)],
        )
            .prop_map(|(session, seq, count)| ModelPacket {
                session,
                seq,
                count,
            })
    }

    /// The reference: decides message by message, knowing nothing about packets.
    #[derive(Default)]
    struct Model {
        state: Option<(u8, u64)>,
        delivered: Vec<u64>,
        duplicates: u64,
        gaps: Vec<GapRange>,
        changes: u64,
    }

    impl Model {
        fn expect(&mut self, session: u8, seq: u64) -> u64 {
            match self.state {
                Some((s, next)) if s == session => next,
                other => {
                    if other.is_some() {
                        self.changes += 1;
                    }
                    self.state = Some((session, seq));
                    seq
                }
            }
        }

        fn packet(&mut self, p: &ModelPacket) {
            let mut next = self.expect(p.session, p.seq);
            if p.seq > next {
                self.gaps.push(GapRange {
                    first: next,
                    last: p.seq - 1,
                });
                next = p.seq;
            }
            for s in p.seq..p.seq + u64::from(p.count.unwrap_or(0)) {
                if s < next {
                    self.duplicates += 1;
                } else {
                    self.delivered.push(s);
                    next = s + 1;
                }
            }
            self.state = Some((p.session, next));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, rng_seed: proptest::test_runner::RngSeed::Fixed(7), ..ProptestConfig::default() })]

        #[test]
        fn packet_round_trips(
            name in proptest::collection::vec(0x20u8..0x7f, 0..=10),
            seq in any::<u64>(),
            messages in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 1..8),
        ) {
            let s = Session::new(&name).expect("at most 10");
            let seq = seq.min(u64::MAX - 8);
            let refs: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
            let bytes = packet_bytes(s, seq, &refs);
            let p = Packet::parse(&bytes).expect("valid");
            prop_assert_eq!(p.session(), s);
            prop_assert_eq!(p.sequence(), seq);
            prop_assert_eq!(p.kind(), PacketKind::Data { count: refs.len() as u16 });
            prop_assert_eq!(p.messages().collect::<Vec<_>>(), refs);
            // Any cut of a valid packet is an error, never a panic.
            for cut in 0..bytes.len() {
                prop_assert!(Packet::parse(&bytes[..cut]).is_err());
            }
        }

        #[test]
        fn sequencer_matches_per_message_model(packets in proptest::collection::vec(model_packet(), 1..30)) {
            let names = [session(b"A"), session(b"B")];
            let mut seq = MoldSession::new();
            let mut model = Model::default();
            let mut delivered = Vec::new();
            for mp in &packets {
                let s = names[usize::from(mp.session)];
                let bytes = match mp.count {
                    Some(n) => {
                        let payload: Vec<Vec<u8>> = (0..n).map(|i| vec![i as u8]).collect();
                        let refs: Vec<&[u8]> = payload.iter().map(Vec::as_slice).collect();
                        packet_bytes(s, mp.seq, &refs)
                    }
                    None => {
                        let mut b = vec![0u8; 20];
                        encode_end_of_session(&mut b, s, mp.seq).expect("fits");
                        b
                    }
                };
                let p = Packet::parse(&bytes).expect("valid");
                let o = seq.on_packet(&p);
                for m in o.sequenced(&p) {
                    if let Decision::Deliver { seq: Some(s) } = m.decision {
                        delivered.push(s);
                    }
                }
                model.packet(mp);
            }
            prop_assert_eq!(&delivered, &model.delivered);
            prop_assert_eq!(seq.stats().duplicates, model.duplicates);
            prop_assert_eq!(seq.gap_ranges(), model.gaps.as_slice());
            prop_assert_eq!(seq.stats().session_changes, model.changes);
            prop_assert_eq!(seq.stats().missing_messages, model.gaps.iter().map(GapRange::len).sum::<u64>());
        }
    }

    // ---- MoldRecovery: live gap recovery ----

    /// What a recovery sink saw, in order.
    #[derive(Clone, Debug, PartialEq, Eq)]
    enum Seen {
        Msg(u64, Vec<u8>),
        Lost(GapRange),
    }

    #[derive(Default)]
    struct Recorder {
        seen: Vec<Seen>,
        requests: Vec<RetransmitRequest>,
    }

    impl RecoverySink for Recorder {
        fn message(&mut self, seq: u64, bytes: &[u8]) {
            self.seen.push(Seen::Msg(seq, bytes.to_vec()));
        }
        fn lost(&mut self, gap: GapRange) {
            self.seen.push(Seen::Lost(gap));
        }
        fn request(&mut self, request: RetransmitRequest) {
            self.requests.push(request);
        }
    }

    impl Recorder {
        fn delivered(&self) -> Vec<u64> {
            self.seen
                .iter()
                .filter_map(|s| match s {
                    Seen::Msg(seq, _) => Some(*seq),
                    Seen::Lost(_) => None,
                })
                .collect()
        }

        fn lost(&self) -> Vec<GapRange> {
            self.seen
                .iter()
                .filter_map(|s| match s {
                    Seen::Lost(g) => Some(*g),
                    Seen::Msg(..) => None,
                })
                .collect()
        }

        /// Every sequence from `first` to `end - 1` is delivered or inside a lost range,
        /// once, in order: nothing is skipped silently.
        fn assert_accounts_for(&self, first: u64, end: u64) {
            let mut next = first;
            for s in &self.seen {
                match s {
                    Seen::Msg(seq, _) => {
                        assert_eq!(*seq, next, "out of order or repeated");
                        next += 1;
                    }
                    Seen::Lost(g) => {
                        assert_eq!(g.first, next, "lost range not at the head");
                        next = g.last + 1;
                    }
                }
            }
            assert_eq!(next, end);
        }
    }

    /// The message with sequence `seq`: its bytes name it.
    fn body(seq: u64) -> Vec<u8> {
        seq.to_be_bytes().to_vec()
    }

    fn data(s: Session, first: u64, count: u64) -> Vec<u8> {
        let bodies: Vec<Vec<u8>> = (first..first + count).map(body).collect();
        let refs: Vec<&[u8]> = bodies.iter().map(Vec::as_slice).collect();
        packet_bytes(s, first, &refs)
    }

    fn feed(r: &mut MoldRecovery, bytes: &[u8], now: Duration, sink: &mut Recorder) {
        r.on_packet(&Packet::parse(bytes).expect("valid"), now, sink);
    }

    fn msgs(range: core::ops::RangeInclusive<u64>) -> Vec<u64> {
        range.collect()
    }

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn unanswered_gap_is_declared_lost_with_its_exact_range() {
        let s = session(b"LIVE");
        let mut r = MoldRecovery::new(RecoveryConfig::default());
        let mut sink = Recorder::default();
        let t0 = Duration::from_secs(5);
        feed(&mut r, &data(s, 1, 3), t0, &mut sink);
        feed(&mut r, &data(s, 7, 3), t0, &mut sink);
        feed(&mut r, &data(s, 10, 2), t0 + MS, &mut sink);
        assert_eq!(sink.delivered(), msgs(1..=3));
        assert_eq!(
            sink.requests,
            [RetransmitRequest {
                session: s,
                first_seq: 4,
                count: 3
            }]
        );
        assert_eq!(r.stored_packets(), 2);
        // The default: 100 ms per try, 3 repeats, then lost.
        let mut now = t0;
        for retry in 1..=3 {
            assert_eq!(r.next_deadline(), Some(now + 100 * MS));
            now += 100 * MS;
            r.poll_timers(now, &mut sink);
            assert_eq!(sink.requests.len(), 1 + retry);
            assert_eq!(sink.requests[retry], sink.requests[0]);
        }
        assert_eq!(sink.delivered(), msgs(1..=3));
        now += 100 * MS;
        r.poll_timers(now, &mut sink);
        assert_eq!(sink.lost(), [GapRange { first: 4, last: 6 }]);
        assert_eq!(sink.delivered(), [1, 2, 3, 7, 8, 9, 10, 11]);
        sink.assert_accounts_for(1, 12);
        let st = r.stats();
        assert_eq!((st.gaps, st.gaps_lost, st.messages_lost), (1, 1, 3));
        assert_eq!((st.requests_sent, st.recovered), (4, 0));
        assert_eq!(st.store_high_water, 2);
        assert_eq!(r.next_deadline(), None);
        assert_eq!(r.open_gaps(), 0);
        assert_eq!(r.stored_packets(), 0);
    }

    #[test]
    fn retransmission_fills_the_gap_and_delivery_resumes_in_order() {
        let s = session(b"LIVE");
        let mut r = MoldRecovery::new(RecoveryConfig::default());
        let mut sink = Recorder::default();
        let t = Duration::ZERO;
        feed(&mut r, &data(s, 1, 2), t, &mut sink);
        feed(&mut r, &data(s, 6, 2), t, &mut sink);
        feed(&mut r, &data(s, 8, 1), t, &mut sink);
        assert_eq!(sink.delivered(), msgs(1..=2));
        // The reply overlaps what is stored: 3..=6 fills the gap, 6 is a duplicate.
        feed(&mut r, &data(s, 3, 4), t + 5 * MS, &mut sink);
        assert_eq!(sink.delivered(), msgs(1..=8));
        assert_eq!(
            sink.seen[2..5],
            [
                Seen::Msg(3, body(3)),
                Seen::Msg(4, body(4)),
                Seen::Msg(5, body(5))
            ]
        );
        let st = r.stats();
        assert_eq!((st.recovered, st.duplicates, st.messages_lost), (3, 1, 0));
        assert_eq!(r.open_gaps(), 0);
        assert_eq!(r.next_deadline(), None);
    }

    #[test]
    fn timeout_asks_again_only_for_what_is_still_missing() {
        let s = session(b"LIVE");
        let mut r = MoldRecovery::new(RecoveryConfig {
            max_retries: 1,
            ..RecoveryConfig::default()
        });
        let mut sink = Recorder::default();
        let t = Duration::ZERO;
        feed(&mut r, &data(s, 1, 1), t, &mut sink);
        feed(&mut r, &data(s, 12, 1), t, &mut sink);
        // Gap 2..=11; a partial reply brings 5..=6.
        feed(&mut r, &data(s, 5, 2), t + MS, &mut sink);
        r.poll_timers(t + 100 * MS, &mut sink);
        let again: Vec<_> = sink.requests[1..]
            .iter()
            .map(|q| (q.first_seq, q.count))
            .collect();
        assert_eq!(again, [(2, 3), (7, 5)]);
        r.poll_timers(t + 200 * MS, &mut sink);
        assert_eq!(
            sink.lost(),
            [
                GapRange { first: 2, last: 4 },
                GapRange { first: 7, last: 11 }
            ]
        );
        assert_eq!(sink.delivered(), [1, 5, 6, 12]);
        sink.assert_accounts_for(1, 13);
        let st = r.stats();
        assert_eq!(
            (st.gaps, st.gaps_lost, st.messages_lost, st.recovered),
            (1, 2, 8, 2)
        );
    }

    #[test]
    fn heartbeat_and_end_of_session_reveal_gaps() {
        let s = session(b"LIVE");
        let mut r = MoldRecovery::new(RecoveryConfig::default());
        let mut sink = Recorder::default();
        let t = Duration::ZERO;
        feed(&mut r, &data(s, 1, 1), t, &mut sink);
        feed(&mut r, &heartbeat(s, 4), t, &mut sink);
        assert_eq!(sink.requests.len(), 1);
        assert_eq!((sink.requests[0].first_seq, sink.requests[0].count), (2, 2));
        let mut eos = [0u8; HEADER_LEN];
        encode_end_of_session(&mut eos, s, 5).expect("fits");
        feed(&mut r, &eos, t, &mut sink);
        assert_eq!((sink.requests[1].first_seq, sink.requests[1].count), (4, 1));
        assert!(!r.ended());
        feed(&mut r, &data(s, 2, 3), t + MS, &mut sink);
        assert_eq!(sink.delivered(), msgs(1..=4));
        assert!(r.ended());
        assert_eq!(r.stats().recovered, 3);
    }

    #[test]
    fn duplicated_packets_are_skipped_and_counted() {
        let s = session(b"LIVE");
        let mut r = MoldRecovery::new(RecoveryConfig::default());
        let mut sink = Recorder::default();
        let t = Duration::ZERO;
        // A and B lines both deliver every packet; a gap makes some copies wait in store.
        for bytes in [
            data(s, 1, 2),
            data(s, 1, 2),
            data(s, 5, 2),
            data(s, 5, 2),
            data(s, 3, 2),
            data(s, 3, 2),
            data(s, 7, 1),
        ] {
            feed(&mut r, &bytes, t, &mut sink);
        }
        assert_eq!(sink.delivered(), msgs(1..=7));
        assert_eq!(r.stats().duplicates, 6);
        assert_eq!(r.stats().store_high_water, 1);
    }

    #[test]
    fn full_store_declares_the_oldest_gap_lost() {
        let s = session(b"LIVE");
        let mut r = MoldRecovery::new(RecoveryConfig {
            store_packets: 2,
            ..RecoveryConfig::default()
        });
        let mut sink = Recorder::default();
        let t = Duration::ZERO;
        feed(&mut r, &data(s, 1, 1), t, &mut sink);
        feed(&mut r, &data(s, 3, 1), t, &mut sink);
        feed(&mut r, &data(s, 5, 1), t, &mut sink);
        assert_eq!(r.stored_packets(), 2);
        // A third waiting packet does not fit: the gap at 2 is given up.
        feed(&mut r, &data(s, 7, 1), t, &mut sink);
        assert_eq!(sink.lost(), [GapRange { first: 2, last: 2 }]);
        assert_eq!(sink.delivered(), [1, 3]);
        assert_eq!(r.stored_packets(), 2);
        assert_eq!(r.stats().store_overflows, 1);
        // The other gaps are still being recovered.
        feed(&mut r, &data(s, 4, 1), t, &mut sink);
        feed(&mut r, &data(s, 6, 1), t, &mut sink);
        assert_eq!(sink.delivered(), [1, 3, 4, 5, 6, 7]);
        sink.assert_accounts_for(1, 8);
        // A packet too long for a slot forces the gap in front of it to be given up too.
        let mut small = MoldRecovery::new(RecoveryConfig {
            max_packet_len: 40,
            ..RecoveryConfig::default()
        });
        let mut sink = Recorder::default();
        feed(&mut small, &data(s, 1, 1), t, &mut sink);
        feed(&mut small, &data(s, 3, 3), t, &mut sink);
        assert_eq!(sink.lost(), [GapRange { first: 2, last: 2 }]);
        sink.assert_accounts_for(1, 6);
    }

    #[test]
    fn session_change_flushes_the_old_session() {
        let a = session(b"A");
        let b = session(b"B");
        let mut r = MoldRecovery::new(RecoveryConfig::default());
        let mut sink = Recorder::default();
        let t = Duration::ZERO;
        feed(&mut r, &data(a, 1, 1), t, &mut sink);
        feed(&mut r, &data(a, 3, 1), t, &mut sink);
        feed(&mut r, &data(b, 1, 2), t, &mut sink);
        assert_eq!(
            sink.seen,
            [
                Seen::Msg(1, body(1)),
                Seen::Lost(GapRange { first: 2, last: 2 }),
                Seen::Msg(3, body(3)),
                Seen::Msg(1, body(1)),
                Seen::Msg(2, body(2)),
            ]
        );
        assert_eq!(r.session(), Some(b));
        assert_eq!(r.stats().session_changes, 1);
        assert_eq!(r.next_expected(), Some(3));
    }

    /// A packet in flight on the simulated network.
    struct InFlight {
        arrive: Duration,
        order: u64,
        bytes: Vec<u8>,
    }

    /// A seeded network that drops, duplicates and reorders packets.
    struct LossyNet {
        rng: crate::sim::SplitMix64,
        in_flight: Vec<InFlight>,
        order: u64,
        drop: f64,
        dup: f64,
    }

    impl LossyNet {
        fn send(&mut self, now: Duration, bytes: Vec<u8>) {
            if self.rng.chance(self.drop) {
                return;
            }
            let copies = if self.rng.chance(self.dup) { 2 } else { 1 };
            for _ in 0..copies {
                let arrive = now + MS * self.rng.below(6) as u32;
                self.order += 1;
                self.in_flight.push(InFlight {
                    arrive,
                    order: self.order,
                    bytes: bytes.clone(),
                });
            }
        }

        /// Packets arrived by `now`, in arrival order.
        fn arrived(&mut self, now: Duration) -> Vec<Vec<u8>> {
            self.in_flight.sort_by_key(|p| (p.arrive, p.order));
            let n = self.in_flight.partition_point(|p| p.arrive <= now);
            self.in_flight.drain(..n).map(|p| p.bytes).collect()
        }
    }

    /// Publishes `total` messages through a lossy, reordering, duplicating network, with a
    /// retransmission server that answers (over the same kind of network) when `answers`.
    fn simulate(seed: u64, total: u64, answers: bool, drop: f64) -> (Recorder, RecoveryStats) {
        let s = session(b"SIM");
        let mut net = LossyNet {
            rng: crate::sim::SplitMix64::new(seed),
            in_flight: Vec::new(),
            order: 0,
            drop,
            dup: 0.05,
        };
        let mut r = MoldRecovery::new(RecoveryConfig {
            store_packets: 512,
            retransmit_timeout: 10 * MS,
            max_retries: if answers { 12 } else { 2 },
            max_per_request: 4,
            start_sequence: Some(1),
            ..RecoveryConfig::default()
        });
        let mut sink = Recorder::default();
        let mut next = 1u64;
        let mut now = Duration::ZERO;
        let mut answered = 0;
        for tick in 0..20_000u32 {
            if next <= total {
                let count = (1 + net.rng.below(4)).min(total - next + 1);
                let bytes = data(s, next, count);
                net.send(now, bytes);
                next += count;
            } else if tick % 5 == 0 {
                let mut eos = vec![0u8; HEADER_LEN];
                encode_end_of_session(&mut eos, s, next).expect("fits");
                net.send(now, eos);
            }
            if tick % 10 == 0 && next <= total {
                net.send(now, heartbeat(s, next));
            }
            for bytes in net.arrived(now) {
                feed(&mut r, &bytes, now, &mut sink);
            }
            if r.next_deadline().is_some_and(|d| d <= now) {
                r.poll_timers(now, &mut sink);
            }
            if answers {
                for q in sink.requests.split_off(answered) {
                    let end = q.first_seq + u64::from(q.count);
                    let mut at = q.first_seq;
                    while at < end {
                        let n = (end - at).min(3);
                        net.send(now, data(s, at, n));
                        at += n;
                    }
                }
                answered = sink.requests.len();
            }
            if r.ended() && r.open_gaps() == 0 {
                break;
            }
            now += MS;
        }
        assert!(r.ended(), "the session did not finish: {:?}", r.stats());
        let stats = r.stats();
        (sink, stats)
    }

    #[test]
    fn lossy_network_with_retransmission_delivers_everything_once_in_order() {
        let (sink, st) = simulate(42, 3000, true, 0.1);
        assert_eq!(sink.delivered(), msgs(1..=3000));
        for s in &sink.seen {
            if let Seen::Msg(seq, bytes) = s {
                assert_eq!(bytes, &body(*seq));
            }
        }
        assert_eq!((st.messages_lost, st.gaps_lost), (0, 0));
        assert!(st.gaps > 50, "{st:?}");
        assert!(st.recovered > 100, "{st:?}");
        assert!(st.duplicates > 0 && st.requests_sent >= st.gaps, "{st:?}");
        assert!(st.store_high_water > 1, "{st:?}");
        assert_eq!(st.delivered, 3000);
    }

    #[test]
    fn lossy_network_without_retransmission_declares_every_loss() {
        let (sink, st) = simulate(7, 2000, false, 0.1);
        sink.assert_accounts_for(1, 2001);
        let lost: u64 = sink.lost().iter().map(GapRange::len).sum();
        assert_eq!(st.messages_lost, lost);
        assert_eq!(st.delivered + lost, 2000);
        // Late (reordered) packets still fill gaps without any retransmission.
        assert!(lost > 0 && st.recovered > 0, "{st:?}");
    }

    #[test]
    fn first_packet_lost_is_a_gap_when_the_start_is_known() {
        // Once a failing case of the property below (the first packet dropped on a
        // network with no retransmission): it must be declared, not joined past.
        let (sink, st) = simulate(64_593_227_037_856_803, 400, false, 0.155_262_396_072_714_2);
        sink.assert_accounts_for(1, 401);
        assert_eq!(st.delivered + st.messages_lost, 400);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, rng_seed: proptest::test_runner::RngSeed::Fixed(3), ..ProptestConfig::default() })]

        #[test]
        fn recovery_never_reorders_or_drops_silently(seed in any::<u64>(), answers in any::<bool>(), drop in 0.0f64..0.3) {
            let (sink, st) = simulate(seed, 400, answers, drop);
            sink.assert_accounts_for(1, 401);
            prop_assert_eq!(st.delivered + st.messages_lost, 400);
            if answers {
                prop_assert_eq!(st.messages_lost, 0);
            }
        }
    }
}
