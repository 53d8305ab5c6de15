//! MoldUDP64 1.0 packets laid out by hand from the specification, and a packet header read
//! back the same way (for relays in tests that must know what they forward without asking
//! the code under test).
//!
//! A packet is a 20-byte header (session: 10 ASCII bytes; sequence number of its first
//! message: u64; message count: u16; all big-endian), then one block per message (a u16
//! length, then the message). A count of 0 is a heartbeat and 0xFFFF the end of session;
//! both carry the next sequence number and no block.

#![forbid(unsafe_code)]

/// The length of a packet header.
pub const HEADER_LEN: usize = 20;
/// The message count that marks a heartbeat.
pub const HEARTBEAT: u16 = 0;
/// The message count that marks the end of the session.
pub const END_OF_SESSION: u16 = 0xFFFF;

/// A packet header: `session`, `sequence` (of the first message, or the next one for a
/// heartbeat or end of session) and the message `count` it announces.
pub fn header(session: &[u8; 10], sequence: u64, count: u16) -> Vec<u8> {
    let mut p = session.to_vec();
    p.extend_from_slice(&sequence.to_be_bytes());
    p.extend_from_slice(&count.to_be_bytes());
    p
}

/// A message block: the message's length (u16), then the message.
pub fn block(message: &[u8]) -> Vec<u8> {
    let mut b = (message.len() as u16).to_be_bytes().to_vec();
    b.extend_from_slice(message);
    b
}

/// A packet whose header announces `count` messages, followed by a block per entry of
/// `messages` (which may hold fewer or more than `count`, to lay out a broken packet).
pub fn packet_with_count(
    session: &[u8; 10],
    sequence: u64,
    count: u16,
    messages: &[&[u8]],
) -> Vec<u8> {
    let mut p = header(session, sequence, count);
    for m in messages {
        p.extend(block(m));
    }
    p
}

/// A data packet: the header announcing `messages.len()` messages from `sequence`, then a
/// block each.
pub fn packet(session: &[u8; 10], sequence: u64, messages: &[&[u8]]) -> Vec<u8> {
    packet_with_count(session, sequence, messages.len() as u16, messages)
}

/// A heartbeat: the header alone, count 0, announcing `next` as the next sequence number.
pub fn heartbeat(session: &[u8; 10], next: u64) -> Vec<u8> {
    header(session, next, HEARTBEAT)
}

/// An end-of-session packet: the header alone, count 0xFFFF, announcing `next`.
pub fn end_of_session(session: &[u8; 10], next: u64) -> Vec<u8> {
    header(session, next, END_OF_SESSION)
}

/// A packet header as read from the first 20 bytes of a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// The session, 10 ASCII bytes.
    pub session: [u8; 10],
    /// The sequence number of the first message (or the next one, with no message).
    pub sequence: u64,
    /// The message count (0: heartbeat; 0xFFFF: end of session).
    pub count: u16,
}

impl Header {
    /// The header of `datagram`; `None` if it is shorter than a header.
    pub fn read(datagram: &[u8]) -> Option<Header> {
        let header: &[u8; HEADER_LEN] = datagram.get(..HEADER_LEN)?.try_into().ok()?;
        let mut session = [0; 10];
        session.copy_from_slice(&header[..10]);
        let mut sequence = [0; 8];
        sequence.copy_from_slice(&header[10..18]);
        Some(Header {
            session,
            sequence: u64::from_be_bytes(sequence),
            count: u16::from_be_bytes([header[18], header[19]]),
        })
    }

    /// The sequence numbers of the messages it announces (empty for a heartbeat or end of
    /// session).
    pub fn messages(&self) -> std::ops::Range<u64> {
        match self.count {
            HEARTBEAT | END_OF_SESSION => self.sequence..self.sequence,
            n => self.sequence..self.sequence.saturating_add(u64::from(n)),
        }
    }
}
