//! Framing: splitting the byte stream into length-prefixed frames, sans-I/O.

use super::*;

/// Why the byte stream cannot be split into frames. `Copy`, allocation-free.
///
/// Framing errors are sticky: once the length prefix is wrong nothing after it can be
/// trusted, so the decoder keeps answering the same error and the connection must be closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// A length prefix of 0: a frame needs at least its type byte. The peer is not speaking
    /// SoupBinTCP, or the stream lost sync.
    ZeroLength,
    /// A length prefix above the decoder's limit. Raise `max_frame_len` if the peer's
    /// messages really are this long; otherwise the stream lost sync.
    TooLong {
        /// The length the prefix declares.
        len: u16,
        /// The decoder's limit.
        max: u16,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            FrameError::ZeroLength => {
                write!(f, "SoupBinTCP frame length 0: a frame needs its type byte")
            }
            FrameError::TooLong { len, max } => write!(
                f,
                "SoupBinTCP frame length {len} is over the limit of {max} bytes"
            ),
        }
    }
}

impl std::error::Error for FrameError {}

/// One frame as it came off the wire: its type byte and payload, borrowed from the decoder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The type byte (see [`packet_type`]).
    pub packet_type: u8,
    /// The bytes after the type byte.
    pub payload: &'a [u8],
}

/// Reassembles frames from a byte stream split or joined arbitrarily, over one buffer
/// allocated at construction; yields each frame borrowed from that buffer.
///
/// Bytes go in with [`FrameDecoder::fill`] (copied) or by reading straight into
/// [`FrameDecoder::spare_mut`] and calling [`FrameDecoder::commit`]; frames come out of
/// [`FrameDecoder::next_frame`]. The buffer holds at least one frame of the largest
/// accepted length, so a valid stream always makes progress.
#[derive(Clone, Debug)]
pub struct FrameDecoder {
    pub(super) buf: Box<[u8]>,
    /// Invariant: `start <= end <= buf.len()`; `buf[start..end]` holds bytes received and
    /// not yet handed out as frames.
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) max_frame_len: u16,
    /// Set by the first bad length prefix and never cleared: the stream lost sync.
    pub(super) error: Option<FrameError>,
}

impl FrameDecoder {
    /// A decoder accepting frames whose length prefix is at most `max_frame_len` (at least
    /// 1), with a buffer of exactly one such frame.
    pub fn new(max_frame_len: u16) -> Self {
        Self::with_buffer_len(max_frame_len, 0)
    }

    /// Like [`FrameDecoder::new`] with a buffer of `buffer_len` bytes, raised to one full
    /// frame if smaller: a larger buffer takes more frames per read.
    pub fn with_buffer_len(max_frame_len: u16, buffer_len: usize) -> Self {
        let max_frame_len = max_frame_len.max(1);
        let one_frame = LENGTH_PREFIX + usize::from(max_frame_len);
        FrameDecoder {
            buf: vec![0u8; buffer_len.max(one_frame)].into_boxed_slice(),
            start: 0,
            end: 0,
            max_frame_len,
            error: None,
        }
    }

    /// The largest length prefix accepted.
    pub fn max_frame_len(&self) -> u16 {
        self.max_frame_len
    }

    /// Bytes received and not yet handed out as frames.
    pub fn buffered(&self) -> usize {
        self.end - self.start
    }

    /// The framing error that stopped the stream, if one did.
    pub fn error(&self) -> Option<FrameError> {
        self.error
    }

    /// Moves the unread bytes to the front so the free tail is as long as it can be. Only
    /// a partial frame is normally left, so this copies a few bytes per read at most.
    pub(super) fn compact(&mut self) {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
    }

    /// Copies as much of `bytes` as fits and returns how many were taken. Less than all
    /// of them only when the buffer is full of complete frames: take those out with
    /// [`FrameDecoder::next_frame`] and give the rest again.
    pub fn fill(&mut self, bytes: &[u8]) -> usize {
        if self.buf.len() - self.end < bytes.len() {
            self.compact();
        }
        let n = bytes.len().min(self.buf.len() - self.end);
        self.buf[self.end..self.end + n].copy_from_slice(&bytes[..n]);
        self.end += n;
        n
    }

    /// The free part of the buffer, to read a socket straight into; follow with
    /// [`FrameDecoder::commit`]. Empty only when the buffer is full of complete frames.
    pub fn spare_mut(&mut self) -> &mut [u8] {
        self.compact();
        &mut self.buf[self.end..]
    }

    /// Marks `n` bytes written into [`FrameDecoder::spare_mut`] as received; clamped to the
    /// free space so a wrong count cannot corrupt the state.
    pub fn commit(&mut self, n: usize) {
        self.end += n.min(self.buf.len() - self.end);
    }

    /// The next complete frame, `None` when more bytes are needed.
    ///
    /// # Errors
    ///
    /// A [`FrameError`] when a length prefix is 0 or over the limit; from then on every
    /// call returns it.
    pub fn next_frame(&mut self) -> Option<Result<Frame<'_>, FrameError>> {
        let span = self.next_span()?;
        Some(span.map(|span| self.frame(&span)))
    }

    /// Like [`FrameDecoder::next_frame`], but answers with positions rather than a borrow,
    /// so the sessions can update their own state before lending the payload out.
    pub(super) fn next_span(&mut self) -> Option<Result<FrameSpan, FrameError>> {
        if let Some(error) = self.error {
            return Some(Err(error));
        }
        let unread = &self.buf[self.start..self.end];
        let prefix = unread.get(..LENGTH_PREFIX)?;
        let len = u16::from_be_bytes([prefix[0], prefix[1]]);
        if len == 0 || len > self.max_frame_len {
            let error = if len == 0 {
                FrameError::ZeroLength
            } else {
                FrameError::TooLong {
                    len,
                    max: self.max_frame_len,
                }
            };
            self.error = Some(error);
            return Some(Err(error));
        }
        let total = LENGTH_PREFIX + usize::from(len);
        if unread.len() < total {
            return None;
        }
        let type_at = self.start + LENGTH_PREFIX;
        self.start += total;
        Some(Ok(FrameSpan {
            packet_type: self.buf[type_at],
            payload_start: type_at + 1,
            payload_end: self.start,
        }))
    }

    /// The frame a span returned by [`FrameDecoder::next_span`] names. Valid until the next
    /// `fill`/`spare_mut`, which may move the bytes; the borrow checker enforces it.
    pub(super) fn frame(&self, span: &FrameSpan) -> Frame<'_> {
        Frame {
            packet_type: span.packet_type,
            payload: &self.buf[span.payload_start..span.payload_end],
        }
    }
}

/// Where a frame lies in the decoder's buffer.
#[derive(Clone, Copy, Debug)]
pub(super) struct FrameSpan {
    pub(super) packet_type: u8,
    pub(super) payload_start: usize,
    pub(super) payload_end: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::soupbintcp::test_support::*;

    #[test]
    fn decoder_errors_are_sticky_and_bounded() {
        let mut d = FrameDecoder::new(8);
        d.fill(&[0, 0, b'H']);
        assert_eq!(d.next_frame(), Some(Err(FrameError::ZeroLength)));
        assert_eq!(d.next_frame(), Some(Err(FrameError::ZeroLength)));
        assert_eq!(d.error(), Some(FrameError::ZeroLength));

        let mut d = FrameDecoder::new(8);
        d.fill(&[0, 9]);
        assert_eq!(
            d.next_frame(),
            Some(Err(FrameError::TooLong { len: 9, max: 8 }))
        );

        // A one-frame buffer takes no more than one frame until it is polled.
        let mut d = FrameDecoder::new(3);
        let two = [0, 3, b'S', 1, 2, 0, 3, b'S', 3, 4];
        assert_eq!(d.fill(&two), 5);
        assert_eq!(d.fill(&two[5..]), 0);
        assert_eq!(d.next_frame().expect("whole").expect("ok").payload, &[1, 2]);
        assert_eq!(d.fill(&two[5..]), 5);
        assert_eq!(d.next_frame().expect("whole").expect("ok").payload, &[3, 4]);
        assert_eq!(d.buffered(), 0);
    }

    #[test]
    fn decoder_reads_straight_into_its_buffer() {
        let bytes = encode_server(&ServerMessage::SequencedData(b"abcdef"));
        let mut d = FrameDecoder::with_buffer_len(16, 64);
        for chunk in bytes.chunks(3) {
            let spare = d.spare_mut();
            spare[..chunk.len()].copy_from_slice(chunk);
            d.commit(chunk.len());
        }
        let f = d.next_frame().expect("whole").expect("ok");
        assert_eq!((f.packet_type, f.payload), (b'S', &b"abcdef"[..]));
    }
}
