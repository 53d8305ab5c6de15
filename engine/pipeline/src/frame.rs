//! A slot of the tick arena: one received ITCH message with its stamps.

use bytemuck::{Pod, Zeroable};

use ticklane_book::publish::{Arrival, DeclaredLoss, FeedState, LateJoin};
use ticklane_book::Touches;

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
    /// A control frame: the feed line changed state (see [`Frame::line_state`]). It travels
    /// through the ring so that it takes effect exactly between the messages around it.
    LineState = 3,
    /// A control frame: the feed line declared messages lost (see [`Frame::declared_loss`]).
    Loss = 4,
    /// A control frame: the feed line joined past its opening (see [`Frame::late_join`]).
    LateJoin = 5,
    /// A control frame: every order of every book is removed, because a snapshot rebuilds
    /// the books next (the messages that follow, numbered with the sequence before the one
    /// the snapshot names).
    ClearOrders = 6,
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

    /// Marks the frame as a line state change: `state` since `since_ns` (wall-clock ns since
    /// the Unix epoch), taken by the reader at `recv_ns`.
    pub fn set_line_state(&mut self, state: FeedState, since_ns: u64, recv_ns: u64) {
        self.kind = FrameKind::LineState as u8;
        self.bytes[0] = state.code();
        self.bytes[1..9].copy_from_slice(&since_ns.to_le_bytes());
        self.len = 9;
        self.seq = 0;
        self.recv_ns = recv_ns;
        self.intended_ns = 0;
    }

    /// The state change a [`FrameKind::LineState`] frame carries, with its since-when.
    pub fn line_state(&self) -> Option<(FeedState, u64)> {
        if self.kind() != Some(FrameKind::LineState) {
            return None;
        }
        let state = FeedState::from_code(self.bytes[0])?;
        Some((state, word(&self.bytes, 1)))
    }

    /// Marks the frame as a declared loss, taken by the reader at `recv_ns`.
    pub fn set_declared_loss(&mut self, loss: DeclaredLoss, recv_ns: u64) {
        self.kind = FrameKind::Loss as u8;
        self.bytes[0..8].copy_from_slice(&loss.count.to_le_bytes());
        self.bytes[8..16].copy_from_slice(&loss.at_ns.to_le_bytes());
        self.len = 16;
        self.seq = loss.first;
        self.recv_ns = recv_ns;
        self.intended_ns = 0;
    }

    /// The loss a [`FrameKind::Loss`] frame carries.
    pub fn declared_loss(&self) -> Option<DeclaredLoss> {
        (self.kind() == Some(FrameKind::Loss)).then(|| DeclaredLoss {
            first: self.seq,
            count: word(&self.bytes, 0),
            at_ns: word(&self.bytes, 8),
        })
    }

    /// Marks the frame as a late join, taken by the reader at `recv_ns`.
    pub fn set_late_join(&mut self, join: LateJoin, recv_ns: u64) {
        self.kind = FrameKind::LateJoin as u8;
        self.bytes[0..8].copy_from_slice(&join.at_ns.to_le_bytes());
        self.len = 8;
        self.seq = join.first_seen;
        self.recv_ns = recv_ns;
        self.intended_ns = 0;
    }

    /// The join a [`FrameKind::LateJoin`] frame carries.
    pub fn late_join(&self) -> Option<LateJoin> {
        (self.kind() == Some(FrameKind::LateJoin)).then(|| LateJoin {
            first_seen: self.seq,
            at_ns: word(&self.bytes, 0),
        })
    }

    /// Marks the frame as the clearing of every order ahead of a snapshot whose messages
    /// are numbered `seq`, taken by the reader at `recv_ns`.
    pub fn set_clear_orders(&mut self, seq: u64, recv_ns: u64) {
        self.kind = FrameKind::ClearOrders as u8;
        self.len = 0;
        self.seq = seq;
        self.recv_ns = recv_ns;
        self.intended_ns = 0;
    }

    /// What this frame's message will touch in the books, for the book stage's prefetch
    /// ([`Touches::Nothing`] for a frame that is no message).
    #[inline(always)]
    pub fn touches(&self) -> Touches {
        match self.kind() {
            Some(FrameKind::Message) => Touches::of_itch(self.message()),
            _ => Touches::Nothing,
        }
    }

    /// What the frame carries (`None` for a corrupt kind byte, which never happens).
    #[inline(always)]
    pub fn kind(&self) -> Option<FrameKind> {
        match self.kind {
            1 => Some(FrameKind::Message),
            2 => Some(FrameKind::End),
            3 => Some(FrameKind::LineState),
            4 => Some(FrameKind::Loss),
            5 => Some(FrameKind::LateJoin),
            6 => Some(FrameKind::ClearOrders),
            _ => None,
        }
    }

    /// The message bytes.
    #[inline(always)]
    pub fn message(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len).min(MAX_MESSAGE)]
    }
}

/// The little-endian u64 at `bytes[at..at + 8]`.
fn word(bytes: &[u8; MAX_MESSAGE], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_frames_round_trip_and_are_not_messages() {
        let mut f: Frame = bytemuck::Zeroable::zeroed();
        for state in FeedState::ALL {
            f.set_line_state(state, 1_700_000_000_123_456_789, 5);
            assert_eq!(f.kind(), Some(FrameKind::LineState));
            assert_eq!(f.line_state(), Some((state, 1_700_000_000_123_456_789)));
            assert_eq!(f.declared_loss(), None);
        }
        let loss = DeclaredLoss {
            first: 43,
            count: 221_000,
            at_ns: 9,
        };
        f.set_declared_loss(loss, 6);
        assert_eq!(f.kind(), Some(FrameKind::Loss));
        assert_eq!(f.declared_loss(), Some(loss));
        assert_eq!(f.line_state(), None);
        let join = LateJoin {
            first_seen: 1_001,
            at_ns: 1_700_000_000_000_000_007,
        };
        f.set_late_join(join, 7);
        assert_eq!(f.kind(), Some(FrameKind::LateJoin));
        assert_eq!(f.late_join(), Some(join));
        assert_eq!((f.line_state(), f.declared_loss()), (None, None));
        f.set_clear_orders(5_000, 8);
        assert_eq!((f.kind(), f.seq), (Some(FrameKind::ClearOrders), 5_000));
        assert_eq!((f.line_state(), f.late_join()), (None, None));
        assert!(f.set_message(b"S", 1, 0, 0));
        assert_eq!((f.line_state(), f.declared_loss()), (None, None));
        assert_eq!(f.late_join(), None);
    }
}
