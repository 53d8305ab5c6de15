//! Framing a whole buffered block of a BinaryFILE at once.
//!
//! [`CaptureReader::next_message`](super::CaptureReader::next_message) pays, per message, for
//! a call, the reader's format dispatch, the window's storage dispatch, a `Result` built in
//! memory and a second bounds check of the slice it hands out. A replay of a plain ITCH 5.0
//! file needs none of that while the next frame lies whole in the bytes already held: this
//! iterator walks those bytes in a tight loop (read the 2-byte prefix, check it against the
//! type's spec length, split the slice) and stops at the first frame it cannot vouch for.
//! Whatever stops it (the block's end, a frame split by a refill, a bad prefix, a truncated
//! file) is left to `next_message`, which refills and reports every error exactly as before,
//! at the same byte offset and message index.

use super::RawMessage;
use crate::itch::MESSAGE_LENS;

/// The most bytes one block hands out before the reader is told how far it got: keeps the
/// reader's `bytes_consumed` (progress lines) close to the truth on a mapped file, whose
/// whole input is one window, at the cost of one slow-path message per block.
pub(crate) const BLOCK_LEN: usize = 256 << 10;

/// Whole ITCH 5.0 frames out of a reader's buffered block, in input order; from
/// [`CaptureReader::frames`](super::CaptureReader::frames). Hand [`Frames::read`] back to
/// [`CaptureReader::advance`](super::CaptureReader::advance) when done with it.
///
/// A frame is handed out only when its prefix is the spec length of its type (any length
/// but 0 for a type ITCH 5.0 does not define, as the reader's own checks allow) and the
/// whole frame is in the block: the same frames `next_message` would accept, with the same
/// offsets and indices.
#[derive(Debug)]
pub struct Frames<'a> {
    /// The block's bytes not yet framed.
    rest: &'a [u8],
    /// Length of the whole block: what was framed is `block_len - rest.len()` bytes, so a
    /// frame's offset and the bytes read are derived, not counted per message.
    block_len: usize,
    /// Input offset of the block's first byte.
    block_offset: u64,
    /// Index of the last message handed out (the reader's count before the block, plus
    /// those framed here).
    index: u64,
    /// The reader's count before the block.
    yielded: u64,
}

/// How far a [`Frames`] got: what [`CaptureReader::advance`](super::CaptureReader::advance)
/// marks read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use = "the reader re-reads these frames unless it is advanced past them"]
pub struct FramesRead {
    pub(crate) bytes: usize,
    pub(crate) messages: u64,
}

impl<'a> Frames<'a> {
    /// Frames `block` (starting at input offset `offset`, after `yielded` messages).
    pub(crate) fn new(block: &'a [u8], offset: u64, yielded: u64) -> Self {
        let rest = &block[..block.len().min(BLOCK_LEN)];
        Frames {
            rest,
            block_len: rest.len(),
            block_offset: offset,
            index: yielded,
            yielded,
        }
    }

    /// No frames: what a reader hands out when its input is not a plain length-prefixed file.
    pub(crate) fn empty(yielded: u64) -> Self {
        Frames::new(&[], 0, yielded)
    }

    /// A cursor over the frames after the last one handed out, `skip` frames further on: a
    /// replay looks ahead with it to prefetch what upcoming messages will touch.
    #[inline(always)]
    pub fn ahead(&self, skip: usize) -> FramesAhead<'a> {
        let mut ahead = FramesAhead { rest: self.rest };
        for _ in 0..skip {
            ahead.next_bytes();
        }
        ahead
    }

    /// How far the frames handed out so far reach.
    pub fn read(&self) -> FramesRead {
        FramesRead {
            bytes: self.block_len - self.rest.len(),
            messages: self.index - self.yielded,
        }
    }
}

impl<'a> Iterator for Frames<'a> {
    type Item = RawMessage<'a>;

    #[inline(always)]
    fn next(&mut self) -> Option<RawMessage<'a>> {
        let &[hi, lo, tag, ..] = self.rest else {
            return None;
        };
        let len = usize::from(u16::from_be_bytes([hi, lo]));
        let spec = usize::from(MESSAGE_LENS[usize::from(tag)]);
        // The spec length for a known type; anything but 0 for another.
        if len == 0 || (spec != len && spec != 0) {
            return None;
        }
        let (frame, rest) = self.rest.split_at_checked(2 + len)?;
        let offset = self.block_offset + (self.block_len - self.rest.len()) as u64;
        self.rest = rest;
        self.index += 1;
        Some(RawMessage {
            bytes: &frame[2..],
            offset,
            index: self.index,
            seq: None,
            capture_ns: None,
        })
    }
}

/// The frames further on in a block than a [`Frames`] has reached, from [`Frames::ahead`].
///
/// It steps from length prefix to length prefix with bounds checks and no others, so past a
/// corrupt frame it hands out bytes [`Frames`] would refuse: a caller may draw hints from
/// them (which memory to prefetch), never results. At the block's end it hands out empty
/// slices.
#[derive(Clone, Copy, Debug)]
pub struct FramesAhead<'a> {
    rest: &'a [u8],
}

impl<'a> FramesAhead<'a> {
    /// The next frame's bytes (its message, without the prefix), or an empty slice when the
    /// block holds no whole frame more.
    #[inline(always)]
    pub fn next_bytes(&mut self) -> &'a [u8] {
        let &[hi, lo, ..] = self.rest else {
            return &[];
        };
        let end = 2 + usize::from(u16::from_be_bytes([hi, lo]));
        match (self.rest.get(2..end), self.rest.get(end..)) {
            (Some(message), Some(rest)) => {
                self.rest = rest;
                message
            }
            _ => {
                self.rest = &[];
                &[]
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::itch::ALL_TAGS;

    #[test]
    fn the_length_table_agrees_with_the_spec_list() {
        // The lengths as the specification lists them (the table in `itch`'s module docs),
        // not from `message_len`.
        let spec: &[(u8, u8)] = &[
            (b'S', 12),
            (b'R', 39),
            (b'H', 25),
            (b'Y', 20),
            (b'L', 26),
            (b'V', 35),
            (b'W', 12),
            (b'K', 28),
            (b'J', 35),
            (b'h', 21),
            (b'A', 36),
            (b'F', 40),
            (b'E', 31),
            (b'C', 36),
            (b'X', 23),
            (b'D', 19),
            (b'U', 35),
            (b'P', 44),
            (b'Q', 40),
            (b'B', 19),
            (b'I', 50),
            (b'N', 20),
            (b'O', 48),
        ];
        assert_eq!(spec.len(), ALL_TAGS.len());
        for tag in 0..=255u8 {
            let want = spec.iter().find(|(t, _)| *t == tag).map_or(0, |(_, l)| *l);
            assert_eq!(MESSAGE_LENS[usize::from(tag)], want, "type 0x{tag:02x}");
        }
    }

    /// `bytes` framed with a 2-byte prefix of `prefix`.
    fn frame(prefix: u16, bytes: &[u8]) -> Vec<u8> {
        let mut out = prefix.to_be_bytes().to_vec();
        out.extend_from_slice(bytes);
        out
    }

    #[test]
    fn stops_at_the_first_frame_it_cannot_vouch_for() {
        let mut d = vec![b'D'];
        d.resize(19, 7);
        let mut unknown = vec![b'z'];
        unknown.resize(5, 1);
        let mut block = frame(19, &d);
        block.extend(frame(5, &unknown));
        block.extend(frame(19, &d));
        // A D whose prefix says 20: the reader's slow path reports it.
        block.extend(frame(20, &d));
        block.push(0);
        let mut frames = Frames::new(&block, 100, 7);
        let got: Vec<(u64, u64, usize)> = frames
            .by_ref()
            .map(|m| (m.offset, m.index, m.bytes.len()))
            .collect();
        assert_eq!(got, vec![(100, 8, 19), (121, 9, 5), (128, 10, 19)]);
        assert_eq!(
            frames.read(),
            FramesRead {
                bytes: 49,
                messages: 3
            }
        );
    }

    #[test]
    fn a_frame_cut_by_the_block_end_or_a_zero_prefix_is_left_alone() {
        let mut d = vec![b'D'];
        d.resize(19, 0);
        let whole = frame(19, &d);
        for cut in 0..whole.len() {
            let mut frames = Frames::new(&whole[..cut], 0, 0);
            assert!(frames.next().is_none(), "cut at {cut}");
            assert_eq!(frames.read().bytes, 0);
        }
        let zero = frame(0, &[b'z', 0, 0]);
        assert!(Frames::new(&zero, 0, 0).next().is_none());
    }

    #[test]
    fn looking_ahead_sees_the_frames_to_come_and_empty_slices_past_the_block() {
        let messages: Vec<Vec<u8>> = (0..5u8)
            .map(|i| {
                let mut d = vec![b'D'];
                d.resize(19, i);
                d
            })
            .collect();
        let mut block: Vec<u8> = messages.iter().flat_map(|m| frame(19, m)).collect();
        // A frame whose prefix runs past the block: no bytes, and none after it.
        block.extend(frame(300, &[b'A', 1]));
        let mut frames = Frames::new(&block, 0, 0);
        assert_eq!(frames.next().map(|m| m.bytes[1]), Some(0));
        let mut ahead = frames.ahead(2);
        // Skipped messages 1 and 2: message 3 is next, then 4, then nothing.
        assert_eq!(ahead.next_bytes(), &messages[3][..]);
        assert_eq!(ahead.next_bytes(), &messages[4][..]);
        assert_eq!(ahead.next_bytes(), &[] as &[u8]);
        assert_eq!(ahead.next_bytes(), &[] as &[u8]);
        // The cursor does not move the frames.
        assert_eq!(frames.next().map(|m| m.bytes[1]), Some(1));
        let mut past = frames.ahead(10);
        assert_eq!(past.next_bytes(), &[] as &[u8]);
    }
}
