//! Nasdaq BinaryFILE framing: each ITCH 5.0 message preceded by a 2-byte big-endian length.
//!
//! Plain and gzipped files share this reader; only the byte source differs.

use super::error::{CaptureErrorKind, Fault};
use super::frames::Frames;
use super::window::Window;
use super::Located;
use crate::itch::message_len;

/// Reads length-prefixed ITCH 5.0 messages out of a [`Window`].
pub(crate) struct Itch50Reader {
    window: Window,
    recover_lengths: bool,
    /// Bytes of the message last handed out, consumed on the next call so its slice stays
    /// valid until then.
    pending: usize,
}

impl Itch50Reader {
    pub(crate) fn new(window: Window, recover_lengths: bool) -> Self {
        Itch50Reader {
            window,
            recover_lengths,
            pending: 0,
        }
    }

    pub(crate) fn window(&self) -> &Window {
        &self.window
    }

    /// Input bytes read past, the message last handed out included.
    pub(crate) fn consumed(&self) -> u64 {
        self.window.pos() + self.pending as u64
    }

    /// The whole frames held after the message last handed out; see
    /// [`CaptureReader::frames`](super::CaptureReader::frames).
    #[inline]
    pub(crate) fn frames(&self, yielded: u64) -> Frames<'_> {
        if self.recover_lengths {
            return Frames::empty(yielded);
        }
        let block = self
            .window
            .available()
            .get(self.pending..)
            .unwrap_or_default();
        Frames::new(block, self.consumed(), yielded)
    }

    /// Marks the message last handed out and `bytes` more (framed by [`Itch50Reader::frames`])
    /// read.
    #[inline]
    pub(crate) fn advance(&mut self, bytes: usize) {
        debug_assert!(
            self.pending + bytes <= self.window.available().len(),
            "advance past the bytes held"
        );
        self.window.consume(self.pending + bytes);
        self.pending = 0;
    }

    /// The next message's place in the window, `None` at a clean end of input.
    #[inline]
    pub(crate) fn next(&mut self) -> Result<Option<Located>, Fault> {
        self.window.consume(self.pending);
        self.pending = 0;
        // Fast path: the whole frame is already in the window (always, for a mapped file)
        // and its length is the one its type has.
        if !self.recover_lengths {
            if let Some(&[hi, lo, tag]) = self.window.available().get(..3) {
                let len = usize::from(u16::from_be_bytes([hi, lo]));
                if self.window.available().len() >= 2 + len && plausible_len(tag, len) {
                    self.pending = 2 + len;
                    return Ok(Some(Located {
                        start: self.window.start() + 2,
                        len,
                        offset: self.window.pos(),
                        seq: None,
                        capture_ns: None,
                    }));
                }
            }
        }
        self.next_slow()
    }

    /// Refills the window as needed, and reports every way a frame can be bad.
    #[cold]
    fn next_slow(&mut self) -> Result<Option<Located>, Fault> {
        let offset = self.window.pos();
        let op = self.window.read_op();
        let io = |e| Fault::io(offset, op, e);
        let have = self.window.fill(2).map_err(io)?;
        if have == 0 {
            return Ok(None);
        }
        if have < 2 {
            return Err(Fault::new(
                offset,
                CaptureErrorKind::TruncatedHeader {
                    what: "length prefix",
                    need: 2,
                    have,
                },
            ));
        }
        let head = self.window.available();
        let prefix = usize::from(u16::from_be_bytes([head[0], head[1]]));
        let (len, what) = if self.recover_lengths {
            // The prefix is not trusted in this mode (RITCH writes 0); the type byte decides.
            let have = self.window.fill(3).map_err(io)?;
            let Some(&tag) = self.window.available().get(2) else {
                return Err(Fault::new(
                    offset,
                    CaptureErrorKind::TruncatedHeader {
                        what: "length prefix and type byte",
                        need: 3,
                        have,
                    },
                ));
            };
            let Some(len) = message_len(tag) else {
                return Err(Fault::new(offset, CaptureErrorKind::UnknownType { tag }));
            };
            (len, "the message type's spec length")
        } else if prefix == 0 {
            return Err(self.zero_prefix(offset));
        } else {
            // Fewer than 3 bytes means a truncated frame, reported below.
            self.window.fill(3).map_err(io)?;
            if let Some(&tag) = self.window.available().get(2) {
                // A known type with another length means the prefix or the type byte is
                // corrupt; trusting the prefix would take the wrong bytes as messages (a
                // 0xFFFF prefix swallows 64 KiB) and blame some later, innocent place.
                match message_len(tag) {
                    Some(expected) if expected != prefix => {
                        return Err(Fault::new(
                            offset,
                            CaptureErrorKind::LengthMismatch {
                                tag,
                                expected,
                                found: prefix,
                            },
                        ));
                    }
                    _ => {}
                }
            }
            (prefix, "length prefix")
        };
        let have = self.window.fill(2 + len).map_err(io)?;
        if have < 2 + len {
            return Err(Fault::new(
                offset,
                CaptureErrorKind::Truncated {
                    what,
                    len: len as u64,
                    remain: (have - 2) as u64,
                },
            ));
        }
        self.pending = 2 + len;
        Ok(Some(Located {
            start: self.window.start() + 2,
            len,
            offset,
            seq: None,
            capture_ns: None,
        }))
    }

    /// The error for a 0 length prefix at `offset`: the RITCH hint when the file's prefixes
    /// look zeroed, plain corruption otherwise.
    fn zero_prefix(&mut self, offset: u64) -> Fault {
        let zeroed = offset == 0 && self.prefixes_look_zeroed();
        let kind = if zeroed {
            CaptureErrorKind::ZeroedPrefixes
        } else {
            CaptureErrorKind::ZeroLength
        };
        Fault::new(offset, kind)
    }

    /// True when the first [`ZEROED_PROBE_FRAMES`] frames (or as many as the file holds)
    /// each have a 0 prefix followed by an ITCH 5.0 type byte, walking by the types' lengths:
    /// what a RITCH file looks like, and what a corrupt one almost never does.
    fn prefixes_look_zeroed(&mut self) -> bool {
        // A read error here only means the probe sees less; the caller reports the zero.
        let _ = self
            .window
            .fill(ZEROED_PROBE_FRAMES * (2 + MAX_MESSAGE_LEN));
        let bytes = self.window.available();
        let mut at = 0;
        for probed in 0..ZEROED_PROBE_FRAMES {
            let Some(&[hi, lo, tag]) = bytes.get(at..at + 3) else {
                // The file ends: the frames it held decide, and it must hold one.
                return probed > 0;
            };
            let Some(len) = message_len(tag) else {
                return false;
            };
            if [hi, lo] != [0, 0] {
                return false;
            }
            at += 2 + len;
        }
        true
    }
}

/// Frames checked at the start of a file before calling its prefixes zeroed.
const ZEROED_PROBE_FRAMES: usize = 3;

/// The longest ITCH 5.0 message (`I`, NOII), type byte included.
const MAX_MESSAGE_LEN: usize = 50;

/// True when `len` may be the length of a message of type `tag`: its spec length for a type
/// ITCH 5.0 defines; any length but 0 for another (a newer type is passed on, not refused).
#[inline(always)]
fn plausible_len(tag: u8, len: usize) -> bool {
    match message_len(tag) {
        Some(expected) => expected == len,
        None => len > 0,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::test_support::{data_dir, write_temp};
    use super::super::{
        CaptureErrorKind, CaptureReader, InputFormat, NoMessages, ReadOptions, DEFAULT_BUFFER_LEN,
    };
    use crate::itch::{self, owned, Nanos, OrderRef};
    use std::collections::BTreeMap;

    /// Length-prefixed frames of `messages`.
    pub(crate) fn framed(messages: &[Vec<u8>]) -> Vec<u8> {
        let mut out = Vec::new();
        for m in messages {
            out.extend_from_slice(&(m.len() as u16).to_be_bytes());
            out.extend_from_slice(m);
        }
        out
    }

    pub(crate) fn sample_messages(n: u64) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| {
                let m = if i % 2 == 0 {
                    owned::Message::OrderDelete(owned::OrderDelete {
                        timestamp: Nanos(i),
                        order_ref: OrderRef(i),
                        ..Default::default()
                    })
                } else {
                    owned::Message::AddOrder(owned::AddOrder {
                        timestamp: Nanos(i),
                        order_ref: OrderRef(i),
                        side: b'B',
                        shares: 100,
                        ..Default::default()
                    })
                };
                let mut buf = [0u8; 64];
                let len = m.encode(&mut buf);
                buf[..len].to_vec()
            })
            .collect()
    }

    #[test]
    fn yields_every_message_with_offset_and_index() {
        let messages = sample_messages(50);
        let bytes = framed(&messages);
        let file = write_temp(&bytes);
        // A 64-byte buffer forces frames to straddle refills.
        let mut r = CaptureReader::open_with_buffer(file.path(), ReadOptions::default(), 64)
            .expect("opens");
        assert_eq!(r.format(), InputFormat::Itch50);
        let mut offset = 0u64;
        for (i, m) in messages.iter().enumerate() {
            let got = r.next_message().expect("valid").expect("more");
            assert_eq!(got.bytes, m.as_slice());
            assert_eq!(got.offset, offset);
            assert_eq!(got.index, i as u64 + 1);
            assert_eq!(got.seq, None);
            offset += 2 + m.len() as u64;
        }
        assert!(r.next_message().expect("clean end").is_none());
        let stats = r.stats();
        assert_eq!(stats.messages, 50);
        assert_eq!(stats.bytes_consumed, bytes.len() as u64);
        assert_eq!(stats.bytes_total, Some(bytes.len() as u64));
    }

    /// One message as a replay loop sees it: (bytes, offset, index).
    type Seen = (Vec<u8>, u64, u64);

    /// What a replay loop sees: each message, then the error's (offset, index) or none, read
    /// with `next_message` alone or with `frames` first.
    fn read_all(
        path: &std::path::Path,
        buffer: usize,
        with_frames: bool,
    ) -> (Vec<Seen>, Option<(u64, u64)>) {
        let mut r =
            CaptureReader::open_with_buffer(path, ReadOptions::default(), buffer).expect("opens");
        let mut got = Vec::new();
        loop {
            if with_frames {
                let mut frames = r.frames();
                got.extend(
                    frames
                        .by_ref()
                        .map(|m| (m.bytes.to_vec(), m.offset, m.index)),
                );
                let read = frames.read();
                r.advance(read);
            }
            match r.next_message() {
                Ok(Some(m)) => got.push((m.bytes.to_vec(), m.offset, m.index)),
                Ok(None) => return (got, None),
                Err(e) => return (got, Some((e.offset, e.index))),
            }
        }
    }

    #[test]
    fn framing_a_block_at_once_yields_what_next_message_yields() {
        let messages = sample_messages(40);
        let whole = framed(&messages);
        // Clean, truncated mid-frame, and with a corrupt prefix (the 11th frame's 36 -> 37).
        let mut corrupt = whole.clone();
        let at: usize = messages[..10].iter().map(|m| 2 + m.len()).sum();
        corrupt[at + 1] += 1;
        let inputs = [whole.clone(), whole[..whole.len() - 5].to_vec(), corrupt];
        for (n, bytes) in inputs.iter().enumerate() {
            let file = write_temp(bytes);
            // Mapped (whole file one window) and buffers that split frames.
            for buffer in [DEFAULT_BUFFER_LEN, 64, 23] {
                let plain = read_all(file.path(), buffer, false);
                let fast = read_all(file.path(), buffer, true);
                assert_eq!(fast, plain, "input {n}, buffer {buffer}");
            }
        }
        // The expected values from the input itself, not from either read.
        let (got, err) = read_all(write_temp(&inputs[2]).path(), 64, true);
        assert_eq!(got.len(), 10);
        assert_eq!(err, Some((at as u64, 11)));
        assert_eq!(got[9].0, messages[9]);
    }

    #[test]
    fn truncated_message_names_offset_and_index() {
        let messages = sample_messages(3);
        let mut bytes = framed(&messages);
        // The third frame (a D, 19 bytes) at 21 + 38 = 59 loses its last 7 bytes.
        bytes.truncate(bytes.len() - 7);
        let file = write_temp(&bytes);
        let mut r = CaptureReader::open(file.path(), ReadOptions::default()).expect("opens");
        for _ in 0..2 {
            r.next_message().expect("valid").expect("more");
        }
        let err = r.next_message().expect_err("truncated");
        assert_eq!((err.offset, err.index), (59, 3));
        assert!(
            matches!(
                err.kind,
                CaptureErrorKind::Truncated {
                    len: 19,
                    remain: 12,
                    ..
                }
            ),
            "{err}"
        );
        let text = err.to_string();
        assert!(
            text.ends_with("byte 59, message 3: truncated: length prefix says 19 bytes, 12 remain"),
            "{text}"
        );
        // After an error the reader is finished.
        assert!(r.next_message().expect("fused").is_none());
    }

    #[test]
    fn partial_length_prefix_at_end_is_an_error() {
        let mut bytes = framed(&sample_messages(1));
        bytes.push(0);
        let file = write_temp(&bytes);
        let mut r = CaptureReader::open(file.path(), ReadOptions::default()).expect("opens");
        r.next_message().expect("valid").expect("one");
        let err = r.next_message().expect_err("truncated");
        assert_eq!((err.offset, err.index), (21, 2));
        assert!(matches!(
            err.kind,
            CaptureErrorKind::TruncatedHeader {
                need: 2,
                have: 1,
                ..
            }
        ));
    }

    /// `bytes` with every length prefix of `messages` (framed from the start) set to 0.
    fn zero_prefixes(bytes: &mut [u8], messages: &[Vec<u8>]) {
        let mut at = 0;
        for m in messages {
            bytes[at..at + 2].fill(0);
            at += 2 + m.len();
        }
    }

    #[test]
    fn zeroed_prefixes_from_the_start_explain_recover_lengths() {
        for n in [1, 2, 5] {
            let messages = sample_messages(n);
            let mut bytes = framed(&messages);
            zero_prefixes(&mut bytes, &messages);
            let file = write_temp(&bytes);
            // Through a small buffer too: the probe must refill to see three frames.
            for buffer in [DEFAULT_BUFFER_LEN, 16] {
                let mut r =
                    CaptureReader::open_with_buffer(file.path(), ReadOptions::default(), buffer)
                        .expect("opens");
                let err = r.next_message().expect_err("zero length");
                assert!(
                    matches!(err.kind, CaptureErrorKind::ZeroedPrefixes),
                    "{n} messages, buffer {buffer}: {err}"
                );
                assert_eq!((err.offset, err.index), (0, 1));
                let text = err.to_string();
                assert!(text.contains("--recover-lengths"), "{text}");
                assert!(text.contains("RITCH"), "{text}");
            }
        }
    }

    #[test]
    fn a_zero_prefix_mid_file_is_corruption_without_the_ritch_hint() {
        let mut bytes = framed(&sample_messages(2));
        bytes[21] = 0;
        bytes[22] = 0;
        let file = write_temp(&bytes);
        let mut r = CaptureReader::open(file.path(), ReadOptions::default()).expect("opens");
        r.next_message().expect("valid").expect("one");
        let err = r.next_message().expect_err("zero length");
        assert!(matches!(err.kind, CaptureErrorKind::ZeroLength), "{err}");
        assert_eq!((err.offset, err.index), (21, 2));
        let text = err.to_string();
        assert!(!text.contains("--recover-lengths"), "{text}");
        assert!(!text.contains("RITCH"), "{text}");
    }

    #[test]
    fn a_zero_first_prefix_with_set_prefixes_after_it_is_not_ritch() {
        let messages = sample_messages(3);
        let mut bytes = framed(&messages);
        // Only the first prefix is 0; the second (of the 36-byte A at 21) is still 36.
        bytes[0..2].fill(0);
        let file = write_temp(&bytes);
        let mut r = CaptureReader::open(file.path(), ReadOptions::default()).expect("opens");
        let err = r.next_message().expect_err("zero length");
        assert!(matches!(err.kind, CaptureErrorKind::ZeroLength), "{err}");
    }

    #[test]
    fn longest_message_bound_is_the_longest_type() {
        let longest = itch::ALL_TAGS
            .iter()
            .filter_map(|&t| itch::message_len(t))
            .max();
        assert_eq!(longest, Some(super::MAX_MESSAGE_LEN));
    }

    #[test]
    fn recover_lengths_reads_zeroed_prefixes_and_stops_at_unknown_types() {
        let messages = sample_messages(4);
        let mut bytes = framed(&messages);
        let mut at = 0;
        for m in &messages {
            bytes[at] = 0;
            bytes[at + 1] = 0;
            at += 2 + m.len();
        }
        bytes.extend_from_slice(&[0, 0, b'z', 1, 2]);
        let file = write_temp(&bytes);
        let opts = ReadOptions {
            recover_lengths: true,
        };
        let mut r = CaptureReader::open_with_buffer(file.path(), opts, 16).expect("opens");
        for m in &messages {
            assert_eq!(
                r.next_message().expect("valid").expect("more").bytes,
                m.as_slice()
            );
        }
        let err = r.next_message().expect_err("unknown type");
        assert!(matches!(
            err.kind,
            CaptureErrorKind::UnknownType { tag: b'z' }
        ));
        assert_eq!((err.offset, err.index), (at as u64, 5));
    }

    #[test]
    fn a_known_type_with_another_length_is_located() {
        let messages = sample_messages(4);
        // The third frame (a D, 19 bytes, at 21 + 38 = 59) claims 0xFFFF bytes: trusted, it
        // would swallow the rest of the file as one message.
        for (prefix, buffer) in [(0xffff_u16, DEFAULT_BUFFER_LEN), (0xffff, 16), (36, 16)] {
            let mut bytes = framed(&messages);
            bytes[59..61].copy_from_slice(&prefix.to_be_bytes());
            let file = write_temp(&bytes);
            let mut r =
                CaptureReader::open_with_buffer(file.path(), ReadOptions::default(), buffer)
                    .expect("opens");
            for m in &messages[..2] {
                assert_eq!(
                    r.next_message().expect("valid").expect("more").bytes,
                    m.as_slice()
                );
            }
            let err = r.next_message().expect_err("bad length");
            assert_eq!((err.offset, err.index), (59, 3));
            assert!(
                matches!(
                    err.kind,
                    CaptureErrorKind::LengthMismatch { tag: b'D', expected: 19, found }
                        if found == usize::from(prefix)
                ),
                "{err}"
            );
            let text = err.to_string();
            assert!(
                text.ends_with(&format!(
                    "byte 59, message 3: length prefix says {prefix} bytes, but a type 'D' \
                     (0x44) message is 19 bytes: the file is corrupt here"
                )),
                "{text}"
            );
            assert!(!text.contains("RITCH"), "{text}");
        }
    }

    #[test]
    fn empty_input_is_told_apart_from_a_read_that_stopped() {
        let file = write_temp(&[]);
        let mut r = CaptureReader::open(file.path(), ReadOptions::default()).expect("opens");
        assert_eq!(r.no_messages(), None, "not read yet");
        assert!(r.next_message().expect("clean end").is_none());
        assert_eq!(r.no_messages(), Some(NoMessages::EmptyInput));

        // A first frame that fails is an error, not "empty".
        let file = write_temp(&[0, 19, b'D']);
        let mut r = CaptureReader::open(file.path(), ReadOptions::default()).expect("opens");
        r.next_message().expect_err("truncated");
        assert_eq!(r.no_messages(), None);
    }

    #[test]
    fn unknown_type_with_a_length_is_yielded_as_is() {
        let bytes = framed(&[vec![b'z', 1, 2, 3]]);
        let file = write_temp(&bytes);
        let mut r = CaptureReader::open(file.path(), ReadOptions::default()).expect("opens");
        assert_eq!(
            r.next_message().expect("valid").expect("one").bytes,
            &[b'z', 1, 2, 3]
        );
    }

    #[test]
    fn ritch_file_needs_recover_lengths_and_then_decodes_fully() {
        let Some(dir) = data_dir() else { return };
        let path = dir.join("ritch/ex20101224.TEST_ITCH_50");
        let mut r = CaptureReader::open(&path, ReadOptions::default()).expect("opens");
        let err = r.next_message().expect_err("zeroed prefixes");
        assert!(
            matches!(err.kind, CaptureErrorKind::ZeroedPrefixes),
            "{err}"
        );
        assert_eq!((err.offset, err.index), (0, 1));

        let opts = ReadOptions {
            recover_lengths: true,
        };
        let mut r = CaptureReader::open(&path, opts).expect("opens");
        let mut by_type = BTreeMap::new();
        while let Some(m) = r.next_message().expect("well formed") {
            let decoded = itch::decode(m.bytes).expect("decodes");
            *by_type.entry(decoded.tag() as char).or_insert(0u64) += 1;
        }
        let expected: BTreeMap<char, u64> = [
            ('S', 6),
            ('R', 3),
            ('H', 3),
            ('A', 4997),
            ('F', 3),
            ('E', 198),
            ('X', 45),
            ('D', 1745),
            ('U', 12),
            ('P', 5000),
        ]
        .into_iter()
        .collect();
        assert_eq!(by_type, expected);
        assert_eq!(r.stats().messages, 12_012);
        assert_eq!(r.stats().bytes_consumed, 465_048);
    }
}
