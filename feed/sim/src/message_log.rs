//! The simulator's messages, held in one buffer and found by sequence number.
//!
//! The live stream walks the log in order and the retransmission server reads any range of
//! it, from two threads: the log is built once, then shared read-only behind an `Arc`, so a
//! day-sized file is never copied per send or per reply.

use std::path::Path;

use crate::{GenConfig, Generator, SimError};
use ticklane_feed::capture::{CaptureReader, ReadOptions};

/// Bytes of a BinaryFILE length prefix.
const PREFIX_LEN: usize = 2;
/// Where the 6-byte ITCH timestamp sits in every ITCH 5.0 message.
const TIMESTAMP_AT: usize = 5;
const TIMESTAMP_END: usize = TIMESTAMP_AT + 6;

/// Every message of a simulated session, in one buffer, addressable by sequence number
/// (the first message is sequence 1).
///
/// The bytes are kept in Nasdaq BinaryFILE framing (each message after its 2-byte
/// big-endian length), so an ITCH50 file already in memory is adopted without a copy.
/// `MessageLog` is `Send` and `Sync`; share it with `Arc`.
///
/// ```
/// use ticklane_sim::{GenConfig, MessageLog};
///
/// let log = MessageLog::from_generator(GenConfig { messages: 100, ..Default::default() });
/// assert_eq!(log.len(), 100);
/// assert_eq!(log.get(1).map(|m| m[0]), Some(b'S')); // the day opens with a system event
/// assert!(log.get(0).is_none() && log.get(101).is_none());
/// ```
#[derive(Clone, Debug, Default)]
pub struct MessageLog {
    /// BinaryFILE frames, back to back.
    frames: Vec<u8>,
    /// `frame_starts[i]` is the offset in `frames` of message `i`'s (sequence `i + 1`)
    /// length prefix. Invariant: every frame it points at is complete and non-empty.
    frame_starts: Vec<usize>,
    /// The longest message, so a packet size can be checked once at start.
    max_message_len: usize,
}

impl MessageLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty log with room for `messages` messages of `bytes` bytes in all (length
    /// prefixes excluded) before it reallocates.
    pub fn with_capacity(messages: usize, bytes: usize) -> Self {
        MessageLog {
            frames: Vec::with_capacity(bytes + PREFIX_LEN * messages),
            frame_starts: Vec::with_capacity(messages),
            max_message_len: 0,
        }
    }

    /// Appends `message` (type byte first, no length prefix) as the next sequence number.
    ///
    /// # Errors
    ///
    /// [`SimError::MessageLength`] if it is empty or longer than 65,535 bytes.
    pub fn push(&mut self, message: &[u8]) -> Result<(), SimError> {
        let len = match u16::try_from(message.len()) {
            Ok(len) if len > 0 => len,
            _ => {
                return Err(SimError::MessageLength {
                    seq: self.len() as u64 + 1,
                    len: message.len(),
                })
            }
        };
        self.frame_starts.push(self.frames.len());
        self.frames.extend_from_slice(&len.to_be_bytes());
        self.frames.extend_from_slice(message);
        self.max_message_len = self.max_message_len.max(message.len());
        Ok(())
    }

    /// Adopts ITCH50 bytes (BinaryFILE framing, as [`write_itch50`](crate::write_itch50)
    /// writes) without copying them; only the index of message offsets is built.
    ///
    /// # Errors
    ///
    /// [`SimError::MalformedSource`] at the first length prefix that is 0, cut short, or
    /// runs past the end.
    pub fn from_itch50_bytes(frames: Vec<u8>) -> Result<Self, SimError> {
        let mut frame_starts = Vec::new();
        let mut max_message_len = 0;
        let mut at = 0;
        while at < frames.len() {
            let malformed = |what| SimError::MalformedSource {
                offset: at as u64,
                what,
            };
            let Some(&[hi, lo]) = frames.get(at..at + PREFIX_LEN) else {
                return Err(malformed("the bytes end inside a length prefix"));
            };
            let len = usize::from(u16::from_be_bytes([hi, lo]));
            if len == 0 {
                return Err(malformed("length prefix is 0"));
            }
            if at + PREFIX_LEN + len > frames.len() {
                return Err(malformed("the message runs past the end of the bytes"));
            }
            frame_starts.push(at);
            max_message_len = max_message_len.max(len);
            at += PREFIX_LEN + len;
        }
        Ok(MessageLog {
            frames,
            frame_starts,
            max_message_len,
        })
    }

    /// Reads every message of a capture ([`CaptureReader`]: ITCH50, gzipped ITCH50, pcap,
    /// pcapng) into the log.
    ///
    /// # Errors
    ///
    /// [`SimError::Capture`] naming the file, byte offset and message index where it could
    /// not be read.
    pub fn from_capture(path: &Path, opts: ReadOptions) -> Result<Self, SimError> {
        let mut reader = CaptureReader::open(path, opts)?;
        // The file's size bounds the framed bytes of a plain ITCH50 file; for other formats
        // it over-reserves a little, which beats reallocating a day-sized buffer.
        let reserve = reader
            .stats()
            .bytes_total
            .and_then(|b| usize::try_from(b).ok())
            .unwrap_or(0);
        let mut log = MessageLog::with_capacity(reserve / 32, reserve);
        while let Some(msg) = reader.next_message()? {
            log.push(msg.bytes)?;
        }
        Ok(log)
    }

    /// The messages of the seeded [`Generator`] for `config`: the same bytes
    /// [`write_itch50`](crate::write_itch50) writes.
    pub fn from_generator(config: GenConfig) -> Self {
        let messages = usize::try_from(config.messages).unwrap_or(0);
        let mut log = MessageLog::with_capacity(messages, messages * 36);
        let mut buf = [0u8; 64];
        for m in Generator::new(config) {
            let len = m.encode(&mut buf);
            log.push(&buf[..len])
                .expect("invariant: generated ITCH messages are 12 to 50 bytes");
        }
        log
    }

    /// Messages held.
    pub fn len(&self) -> usize {
        self.frame_starts.len()
    }

    /// True when the log holds no message.
    pub fn is_empty(&self) -> bool {
        self.frame_starts.is_empty()
    }

    /// The message with sequence number `seq` (1-based), or `None` outside `1 ..= len`.
    pub fn get(&self, seq: u64) -> Option<&[u8]> {
        let index = usize::try_from(seq.checked_sub(1)?).ok()?;
        self.message(index)
    }

    /// The longest message, in bytes (0 when empty).
    pub fn max_message_len(&self) -> usize {
        self.max_message_len
    }

    /// Message `index` (0-based).
    pub(crate) fn message(&self, index: usize) -> Option<&[u8]> {
        let start = *self.frame_starts.get(index)?;
        let prefix = self.frames.get(start..start + PREFIX_LEN)?;
        let len = usize::from(u16::from_be_bytes([prefix[0], prefix[1]]));
        self.frames
            .get(start + PREFIX_LEN..start + PREFIX_LEN + len)
    }

    /// The ITCH timestamp (nanoseconds since midnight) of message `index` (0-based);
    /// `None` for a message too short to carry one.
    pub(crate) fn timestamp_ns(&self, index: usize) -> Option<u64> {
        let ts = self.message(index)?.get(TIMESTAMP_AT..TIMESTAMP_END)?;
        let mut be = [0u8; 8];
        be[2..].copy_from_slice(ts);
        Some(u64::from_be_bytes(be))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write_itch50;

    #[test]
    fn generator_log_matches_written_file() {
        let config = GenConfig {
            messages: 2_000,
            seed: 9,
            ..Default::default()
        };
        let mut file = Vec::new();
        write_itch50(config, &mut file).unwrap();
        let adopted = MessageLog::from_itch50_bytes(file.clone()).unwrap();
        let generated = MessageLog::from_generator(config);
        assert_eq!(adopted.len(), 2_000);
        assert_eq!(adopted.frames, generated.frames);
        assert_eq!(adopted.frame_starts, generated.frame_starts);
        assert_eq!(adopted.max_message_len(), generated.max_message_len());
    }

    #[test]
    fn capture_file_loads_every_message() {
        let config = GenConfig {
            messages: 1_000,
            seed: 3,
            ..Default::default()
        };
        let mut file = tempfile::NamedTempFile::new().unwrap();
        write_itch50(config, &mut file).unwrap();
        let log = MessageLog::from_capture(file.path(), ReadOptions::default()).unwrap();
        let expected = MessageLog::from_generator(config);
        assert_eq!(log.len(), 1_000);
        assert!((1..=1_000).all(|seq| log.get(seq) == expected.get(seq)));
    }

    #[test]
    fn malformed_bytes_name_the_offset() {
        let err = MessageLog::from_itch50_bytes(vec![0, 1, b'S', 0, 0]).unwrap_err();
        assert!(
            matches!(err, SimError::MalformedSource { offset: 3, .. }),
            "{err}"
        );
        let err = MessageLog::from_itch50_bytes(vec![0, 5, b'S']).unwrap_err();
        assert!(
            matches!(err, SimError::MalformedSource { offset: 0, .. }),
            "{err}"
        );
        let err = MessageLog::from_itch50_bytes(vec![0, 1, b'S', 0]).unwrap_err();
        assert!(
            matches!(err, SimError::MalformedSource { offset: 3, .. }),
            "{err}"
        );
    }

    #[test]
    fn timestamps_read_from_bytes_five_to_eleven() {
        let mut log = MessageLog::new();
        log.push(&[b'S', 0, 1, 0, 0, 0, 0, 0, 0, 1, 2, b'O'])
            .unwrap();
        log.push(b"short").unwrap();
        assert_eq!(log.timestamp_ns(0), Some(0x0102));
        assert_eq!(log.timestamp_ns(1), None);
        assert!(log.push(&[]).is_err());
    }
}
