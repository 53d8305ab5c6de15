//! Where the book thread sends changed state: the [`Publisher`] trait the pipeline's book
//! stage calls after each applied message, implemented by the overload policy (the snapshot
//! and subscribers behind it), by tests and by benchmarks.
//!
//! It sits below the pipeline so that what publishes never needs to know about threads or
//! rings: it sees the books, what one message changed, and when that message arrived.

use ticklane_feed::itch::Message;

use crate::book::{Applied, Books};

/// When and in which position a message reached the engine: what a publisher needs of the
/// frame that carried it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrival {
    /// The message's feed sequence number (or its 1-based index in a file).
    pub seq: u64,
    /// When the reader received it, on the pipeline's clock (ns; 0 when not stamped).
    pub recv_ns: u64,
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
