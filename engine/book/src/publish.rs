//! Where the book thread sends changed state: the [`Publisher`] trait the pipeline's book
//! stage calls after each applied message, implemented by the overload policy (the snapshot
//! and subscribers behind it), by tests and by benchmarks.
//!
//! It sits below the pipeline so that what publishes never needs to know about threads or
//! rings: it sees the books, what one message changed, and when that message arrived.

use ticklane_itch::{DecodeError, Message};

use crate::{Applied, Books};

/// When and in which position a message reached the engine: what a publisher needs of the
/// frame that carried it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrival {
    /// The message's feed sequence number (or its 1-based index in a file).
    pub seq: u64,
    /// When the reader received it, on the pipeline's clock (ns; 0 when not stamped).
    pub recv_ns: u64,
}

/// What the feed line is doing, as the reader thread saw it: the book thread learns it in
/// order with the messages (a control frame through the ring) and hands it to the publisher.
///
/// Every state but [`FeedState::Live`] means the books are the last known state, not live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FeedState {
    /// Data (or heartbeats) arriving.
    Live,
    /// Nothing arrived, not even a heartbeat, for the line's stale threshold.
    Silent,
    /// The connection is down and not yet being made again (SoupBinTCP).
    Disconnected,
    /// The connection is being made again (SoupBinTCP).
    Reconnecting,
    /// The line ended because it went silent: not a clean exit.
    EndedSilent,
    /// The line ended with a runtime error: not a clean exit.
    EndedError,
    /// Isolated by hand: its data is ignored (MoldUDP64) or its connection closed
    /// (SoupBinTCP) until an operator closes it.
    Isolated,
    /// The books are being built from a snapshot (GLIMPSE), at the start or to rebuild
    /// after a gap: partial until the line is live again.
    Snapshot,
}

impl FeedState {
    /// Every state, in code order (the code is the index).
    pub const ALL: [FeedState; 8] = [
        FeedState::Live,
        FeedState::Silent,
        FeedState::Disconnected,
        FeedState::Reconnecting,
        FeedState::EndedSilent,
        FeedState::EndedError,
        FeedState::Isolated,
        FeedState::Snapshot,
    ];

    /// A one-byte code, for a control frame.
    pub const fn code(self) -> u8 {
        match self {
            FeedState::Live => 0,
            FeedState::Silent => 1,
            FeedState::Disconnected => 2,
            FeedState::Reconnecting => 3,
            FeedState::EndedSilent => 4,
            FeedState::EndedError => 5,
            FeedState::Isolated => 6,
            FeedState::Snapshot => 7,
        }
    }

    /// The state of a code; `None` if unknown.
    pub fn from_code(code: u8) -> Option<Self> {
        Self::ALL.get(usize::from(code)).copied()
    }

    /// Whether the books are stale in this state.
    pub const fn is_stale(self) -> bool {
        !matches!(self, FeedState::Live)
    }
}

/// Messages the feed line declared lost (its recovery gave up on them): every book may be
/// wrong from here on, an ITCH gap can touch any of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeclaredLoss {
    /// The first sequence number lost.
    pub first: u64,
    /// How many messages, from `first` on.
    pub count: u64,
    /// When it was declared, wall-clock ns since the Unix epoch.
    pub at_ns: u64,
}

/// The feed line joined past its opening without asking for what came before
/// (`feed.start_sequence = "join"`): messages `1 .. first_seen` were never seen, so every
/// book may lack orders (and its symbol) from before the join. Not a declared loss: the
/// messages were never asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LateJoin {
    /// The first sequence number the line saw (> 1).
    pub first_seen: u64,
    /// When the line joined, wall-clock ns since the Unix epoch.
    pub at_ns: u64,
}

/// Where the book thread sends changed state (the snapshot file, a subscriber, a test).
pub trait Publisher {
    /// The message is about to be applied (an execution's order is still in the book).
    #[inline(always)]
    fn before_apply(&mut self, _books: &Books, _message: &Message<'_>) {}
    /// A message was applied; `applied.changed` names the book it changed, if any.
    /// Returns whether anything was published (for the publication latency).
    fn publish(
        &mut self,
        books: &Books,
        applied: &Applied<'_>,
        arrival: Arrival,
        now_ns: u64,
    ) -> bool;
    /// The ring was empty: time for periodic work (a heartbeat). Called often; keep it cheap.
    fn idle(&mut self, _now_ns: u64) {}
    /// A batch of frames has been applied: work deferred to batch boundaries goes here
    /// (overload service publishes its dirty instruments). Each frame's sojourn is
    /// `now_ns - arrival.recv_ns` as [`Publisher::publish`] sees it.
    #[inline(always)]
    fn batch_end(&mut self, _books: &Books, _now_ns: u64) {}
    /// A poll found the ring empty: whatever queue stood has drained. Called before
    /// [`Publisher::idle`], as often; keep it cheap when there is nothing to do.
    #[inline(always)]
    fn drained(&mut self, _books: &Books, _now_ns: u64) {}
    /// The feed line changed state (`since_ns`: when the state began, wall-clock ns since the
    /// Unix epoch), in order with the messages around it. Cold.
    fn line_state(&mut self, _books: &Books, _state: FeedState, _since_ns: u64) {}
    /// The feed line declared messages lost, in order with the messages around it. Cold.
    fn declared_loss(&mut self, _books: &Books, _loss: DeclaredLoss) {}
    /// The feed line joined past its opening, in order with the messages around it. Cold.
    fn late_join(&mut self, _books: &Books, _join: LateJoin) {}
    /// Every order of every book was removed (the books are rebuilt next from a snapshot
    /// whose messages are numbered `arrival.seq`): whatever shows the books shows them empty
    /// now. Cold.
    fn books_cleared(&mut self, _books: &Books, _arrival: Arrival) {}
    /// The message numbered `seq` could not be decoded: its bytes break ITCH 5.0 (a
    /// contract violation, skipped and counted). Cold.
    fn decode_error(&mut self, _seq: u64, _error: DecodeError) {}
    /// The feed ended: flush and close.
    fn finish(&mut self, _books: &Books) {}
}

/// A publisher that publishes nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoPublisher;

impl Publisher for NoPublisher {
    fn publish(&mut self, _: &Books, applied: &Applied<'_>, _: Arrival, _: u64) -> bool {
        applied.changed.is_some()
    }
}
