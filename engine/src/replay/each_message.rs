//! The replay's read loop, shared by one thread (`run`) and many (`threaded`): every message
//! of a capture, in input order, to a handler.
//!
//! The messages lying whole in the block already read are framed in one pass (a plain ITCH
//! 5.0 file; none for other inputs), then one message goes through the reader, which
//! refills, ends or reports an error exactly as it would message by message. Generic over
//! the handler, so a small one (a plain replay's apply step) is compiled into the loop
//! rather than called per message. While framing a block it can look ahead, so that the
//! handler can prefetch what the messages a few places on will touch.

use std::cell::Cell;

use ticklane_feed::capture::{CaptureError, CaptureReader, FramesAhead, RawMessage};

use crate::book::{Touches, TouchesAhead, PREFETCH_FAR, PREFETCH_MID, PREFETCH_NEAR};

/// Whether the replay goes on after a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Next {
    /// On to the next message.
    Continue,
    /// Stop here (the handler kept the reason).
    Stop,
}

/// Hands every message of `reader` to `handle` with whether the capture's sequencer declared
/// a loss before it and, while `look_ahead` holds true, what the messages a few places on in
/// the block framed at once will touch (`None` otherwise, and for messages read one by
/// one, so a handler skips the prefetch whole), until
/// the input ends, `handle` says [`Next::Stop`] or fails, or the
/// reader fails; `progress` sees the reader after each message.
///
/// Only the messages that go through the reader one by one can be told of a loss (a plain
/// file, whose block is framed at once, has no sequencer); with `losses` set they are
/// copied into it first, so that the reader can be asked about its gaps.
///
/// # Errors
///
/// `look_ahead` is read at the start of each block (at most 256 KiB of input, some 8,000
/// messages), so a handler that sets it as its books grow (`Books::worth_prefetching`)
/// turns the lookahead on where it pays and leaves a small day without its cost.
///
/// `Err` is `handle`'s error; `Ok(Some(e))` is the reader's error, which ended the replay.
#[inline(always)]
pub(super) fn each_message<E>(
    reader: &mut CaptureReader,
    mut losses: Option<&mut Vec<u8>>,
    look_ahead: &Cell<bool>,
    mut handle: impl FnMut(RawMessage<'_>, bool, Option<TouchesAhead>) -> Result<Next, E>,
    mut progress: impl FnMut(&CaptureReader, u64),
) -> Result<Option<CaptureError>, E> {
    loop {
        let mut frames = reader.frames();
        let mut ahead = look_ahead.get().then(|| Lookahead::new(frames.ahead(0)));
        let mut ended = None;
        for raw in frames.by_ref() {
            let index = raw.index;
            let touches = ahead.as_mut().map(Lookahead::step);
            match handle(raw, false, touches) {
                Ok(Next::Continue) => progress(reader, index),
                Ok(Next::Stop) => {
                    ended = Some(Ok(None));
                    break;
                }
                Err(e) => {
                    ended = Some(Err(e));
                    break;
                }
            }
        }
        let read = frames.read();
        reader.advance(read);
        if let Some(ended) = ended {
            return ended;
        }
        let raw = match reader.next_message() {
            Ok(Some(raw)) => raw,
            Ok(None) => return Ok(None),
            Err(e) => return Ok(Some(e)),
        };
        let index = raw.index;
        let next = match losses.as_deref_mut() {
            Some(copy) => {
                copy.clear();
                copy.extend_from_slice(raw.bytes);
                let raw = RawMessage { bytes: copy, ..raw };
                let lost = reader.stats().gaps > 0;
                handle(raw, lost, None)?
            }
            None => handle(raw, false, None)?,
        };
        if next == Next::Stop {
            return Ok(None);
        }
        progress(reader, index);
    }
}

/// What the messages [`PREFETCH_FAR`], [`PREFETCH_MID`] and [`PREFETCH_NEAR`] places after the
/// one being handled will touch, from one cursor: each message framed ahead is read once
/// ([`Touches::of_itch`]) and kept in a ring of the last `PREFETCH_FAR`, where the nearer
/// stages find it again.
struct Lookahead<'a> {
    cursor: FramesAhead<'a>,
    /// Slot `i % PREFETCH_FAR` holds message `i + PREFETCH_FAR`'s touches once step `i` has
    /// run, and the block's first `PREFETCH_FAR` messages' before step 0.
    ring: [Touches; PREFETCH_FAR],
    /// Steps taken: the index, within the block, of the message being handled.
    step: usize,
}

const _: () = assert!(PREFETCH_FAR.is_power_of_two() && PREFETCH_MID < PREFETCH_FAR);

impl<'a> Lookahead<'a> {
    /// Ahead of a block's first message: `cursor` is at it.
    #[inline(always)]
    fn new(mut cursor: FramesAhead<'a>) -> Self {
        let ring = std::array::from_fn(|_| Touches::of_itch(cursor.next_bytes()));
        Lookahead {
            cursor,
            ring,
            step: 0,
        }
    }

    /// What the messages ahead of the one being handled will touch; call once per message.
    #[inline(always)]
    fn step(&mut self) -> TouchesAhead {
        const MASK: usize = PREFETCH_FAR - 1;
        let i = self.step;
        self.step += 1;
        let far = Touches::of_itch(self.cursor.next_bytes());
        let ahead = TouchesAhead {
            far,
            mid: self.ring[(i + PREFETCH_MID) & MASK],
            near: self.ring[(i + PREFETCH_NEAR) & MASK],
        };
        self.ring[i & MASK] = far;
        ahead
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklane_feed::capture::ReadOptions;

    /// A file of `n` D messages, each with its position as its order reference and (mod
    /// 256) its byte 1, in a fresh directory named after `test`; and a reader of it.
    fn deletes(test: &str, n: u64) -> (std::path::PathBuf, CaptureReader) {
        let dir = std::env::temp_dir().join(format!("ticklane-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("d.itch50");
        let mut file = Vec::new();
        for i in 0..n {
            let mut d = vec![b'D', i as u8];
            d.resize(19, 0);
            d[11..19].copy_from_slice(&i.to_be_bytes());
            file.extend_from_slice(&19u16.to_be_bytes());
            file.extend_from_slice(&d);
        }
        std::fs::write(&path, &file).unwrap();
        let reader = CaptureReader::open(&path, ReadOptions::default()).unwrap();
        (dir, reader)
    }

    #[test]
    fn each_message_sees_the_messages_its_stages_look_for() {
        // 60 D messages whose byte 1 and order reference are their position: the lookahead of
        // message `i` must be messages `i + FAR`, `i + MID` and `i + NEAR`, or nothing past
        // the end.
        let (dir, mut reader) = deletes("lookahead", 60);
        let mut seen = Vec::new();
        let ended = each_message(
            &mut reader,
            None,
            &Cell::new(true),
            |raw, _, up| {
                let up = up.unwrap_or_default();
                let at = |t: Touches| match t {
                    Touches::Order(r) => u8::try_from(r.0).ok(),
                    _ => None,
                };
                seen.push((raw.bytes[1], at(up.far), at(up.mid), at(up.near)));
                Ok::<_, ()>(Next::Continue)
            },
            |_, _| {},
        );
        assert!(matches!(ended, Ok(None)));
        assert_eq!(seen.len(), 60);
        let framed_at_once = seen.iter().take_while(|s| s.3.is_some()).count();
        assert!(framed_at_once > 40, "the block was framed at once");
        for &(i, far, mid, near) in &seen[..framed_at_once] {
            let want = |d: usize| (usize::from(i) + d < 60).then(|| i + d as u8);
            assert_eq!(
                (far, mid, near),
                (want(PREFETCH_FAR), want(PREFETCH_MID), want(PREFETCH_NEAR)),
                "message {i}"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_switch_turns_the_lookahead_on_and_off_at_block_starts() {
        // 40,000 D messages (21 bytes framed: about four 256 KiB blocks). The handler turns
        // the lookahead on at message 10,000 and off at 25,000: from the start of the next
        // block on, messages see what is ahead, then nothing again. Read where each
        // message's view changed.
        let (dir, mut reader) = deletes("switch", 40_000);
        let switch = Cell::new(false);
        let mut looked = Vec::new();
        let ended = each_message(
            &mut reader,
            None,
            &switch,
            |raw, _, up| {
                looked.push(up.is_some_and(|up| up.mid != Touches::Nothing));
                switch.set((10_000..25_000).contains(&raw.index));
                Ok::<_, ()>(Next::Continue)
            },
            |_, _| {},
        );
        assert!(matches!(ended, Ok(None)));
        assert_eq!(looked.len(), 40_000);
        let on = looked.iter().position(|&l| l).expect("turned on");
        let last = looked.iter().rposition(|&l| l).expect("turned on");
        // A block is at most 256 KiB: 12,483 frames of 21 bytes, plus the one message read
        // through the reader between blocks. The lookahead starts with the first block after
        // the switch went on, and ends with the block during which it went off.
        let block = (256 << 10) / 21 + 1;
        assert!((10_000..10_000 + block + 1).contains(&on), "on at {on}");
        assert!(
            (25_000..25_000 + block + 1).contains(&last),
            "last on at {last}"
        );
        // In between, only the messages read one by one (one per block) and those within
        // PREFETCH_MID of a block's end see nothing.
        let gaps = looked[on..last].iter().filter(|&&l| !l).count();
        assert!(
            gaps <= 2 * (PREFETCH_MID + 1),
            "{gaps} messages without lookahead"
        );
        assert!(!looked[..on].iter().any(|&l| l), "off until switched on");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
