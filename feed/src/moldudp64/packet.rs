//! The packet view: a MoldUDP64 datagram's header and its message blocks, checked once.

use core::fmt;

/// Bytes in a packet header: the session in 10, sequence 8, count 2.
pub const HEADER_LEN: usize = 20;
/// Bytes in a session name.
pub const SESSION_LEN: usize = 10;
/// The message count that marks a heartbeat.
pub const HEARTBEAT_COUNT: u16 = 0;
/// The message count that marks the end of the session.
pub const END_OF_SESSION_COUNT: u16 = 0xFFFF;
/// The most messages one packet can carry (`0xFFFF` is reserved for end of session).
pub const MAX_MESSAGES: u16 = 0xFFFE;

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

pub(super) fn read_u16(bytes: &[u8], at: usize) -> Option<u16> {
    let raw = bytes.get(at..at.checked_add(2)?)?;
    Some(u16::from_be_bytes([raw[0], raw[1]]))
}

pub(super) fn read_header(bytes: &[u8]) -> Option<(Session, u64, u16)> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::moldudp64::test_packets::{heartbeat, packet_bytes, session};
    use crate::moldudp64::{encode_end_of_session, encode_heartbeat, EncodeError};
    use proptest::prelude::*;

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
    }
}
