//! A slot of the tick arena: one received ITCH message with its stamps.

use bytemuck::{Pod, Zeroable};

use crate::publish::Arrival;

/// Longest ITCH 5.0 message (`I`, 50 bytes) fits with room for future types.
pub const MAX_MESSAGE: usize = 96;

/// What a frame carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum FrameKind {
    /// An ITCH message in `bytes[..len]`.
    Message = 1,
    /// The feed ended (end of session, end of file, or shutdown): drain and stop.
    End = 2,
}

/// One ring slot, two cache lines, plain old data: written in place by the reader thread,
/// read in place by the book thread.
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
#[repr(C, align(64))]
pub struct Frame {
    /// When the reader took the message off the wire (ns on the pipeline's clock).
    pub recv_ns: u64,
    /// When the message was meant to be sent (ns on the pipeline's clock; 0 if unknown).
    /// Latency is measured from here when set, so a stalled sender is not hidden
    /// (coordinated omission).
    pub intended_ns: u64,
    /// Feed sequence number (MoldUDP64 / SoupBinTCP), or the message's position in a file.
    pub seq: u64,
    /// [`FrameKind`] as a byte.
    pub kind: u8,
    _pad: [u8; 5],
    /// Bytes of the message in `bytes`.
    pub len: u16,
    /// The message, `bytes[..len]`.
    pub bytes: [u8; MAX_MESSAGE],
}

const _: () = assert!(core::mem::size_of::<Frame>() == 128);

impl Frame {
    /// When and in which position the frame's message arrived, as publishers see it.
    #[inline(always)]
    pub fn arrival(&self) -> Arrival {
        Arrival {
            seq: self.seq,
            recv_ns: self.recv_ns,
        }
    }

    /// Fills the frame with a message; `false` (frame untouched) if it does not fit.
    #[inline(always)]
    pub fn set_message(&mut self, bytes: &[u8], seq: u64, recv_ns: u64, intended_ns: u64) -> bool {
        let Some(dst) = self.bytes.get_mut(..bytes.len()) else {
            return false;
        };
        dst.copy_from_slice(bytes);
        self.len = bytes.len() as u16;
        self.seq = seq;
        self.recv_ns = recv_ns;
        self.intended_ns = intended_ns;
        self.kind = FrameKind::Message as u8;
        true
    }

    /// Fills the frame with a message; one too long for a frame (no ITCH message is) is
    /// delivered empty instead, so the book thread counts a decode error for its sequence
    /// rather than the message vanishing.
    #[inline(always)]
    pub fn set_message_or_empty(&mut self, bytes: &[u8], seq: u64, recv_ns: u64, intended_ns: u64) {
        if !self.set_message(bytes, seq, recv_ns, intended_ns) {
            self.set_message(&[], seq, recv_ns, intended_ns);
        }
    }

    /// Marks the frame as the end of the feed.
    pub fn set_end(&mut self, recv_ns: u64) {
        self.kind = FrameKind::End as u8;
        self.len = 0;
        self.recv_ns = recv_ns;
    }

    /// What the frame carries (`None` for a corrupt kind byte, which never happens).
    #[inline(always)]
    pub fn kind(&self) -> Option<FrameKind> {
        match self.kind {
            1 => Some(FrameKind::Message),
            2 => Some(FrameKind::End),
            _ => None,
        }
    }

    /// The message bytes.
    #[inline(always)]
    pub fn message(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len).min(MAX_MESSAGE)]
    }
}
