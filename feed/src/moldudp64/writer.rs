//! Encoding MoldUDP64 packets into a caller's buffer: data, heartbeat, end of session.

use core::fmt;

use super::packet::{
    Session, END_OF_SESSION_COUNT, HEADER_LEN, HEARTBEAT_COUNT, MAX_MESSAGES, SESSION_LEN,
};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::moldudp64::test_packets::session;
    use crate::moldudp64::Packet;

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
}
