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
}
