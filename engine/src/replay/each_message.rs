//! The replay's read loop, shared by one thread (`run`) and many (`threaded`): every message
//! of a capture, in input order, to a handler.
//!
//! The messages lying whole in the block already read are framed in one pass (a plain ITCH
//! 5.0 file; none for other inputs), then one message goes through the reader, which
//! refills, ends or reports an error exactly as it would message by message. Generic over
//! the handler, so a small one (a plain replay's apply step) is compiled into the loop
//! rather than called per message.

use ticklane_feed::capture::{CaptureError, CaptureReader, RawMessage};

/// Whether the replay goes on after a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Next {
    /// On to the next message.
    Continue,
    /// Stop here (the handler kept the reason).
    Stop,
}

/// Hands every message of `reader` to `handle` with whether the capture's sequencer declared
/// a loss before it, until the input ends, `handle` says [`Next::Stop`] or fails, or the
/// reader fails; `progress` sees the reader after each message.
///
/// Only the messages that go through the reader one by one can be told of a loss (a plain
/// file, whose block is framed at once, has no sequencer); with `losses` set they are
/// copied into it first, so that the reader can be asked about its gaps.
///
/// # Errors
///
/// `Err` is `handle`'s error; `Ok(Some(e))` is the reader's error, which ended the replay.
#[inline(always)]
pub(super) fn each_message<E>(
    reader: &mut CaptureReader,
    mut losses: Option<&mut Vec<u8>>,
    mut handle: impl FnMut(RawMessage<'_>, bool) -> Result<Next, E>,
    mut progress: impl FnMut(&CaptureReader, u64),
) -> Result<Option<CaptureError>, E> {
    loop {
        let mut frames = reader.frames();
        let mut ended = None;
        for raw in frames.by_ref() {
            let index = raw.index;
            match handle(raw, false) {
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
                handle(raw, lost)?
            }
            None => handle(raw, false)?,
        };
        if next == Next::Stop {
            return Ok(None);
        }
        progress(reader, index);
    }
}
