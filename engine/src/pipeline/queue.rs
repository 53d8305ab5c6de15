//! The two ends of the queue between the reader thread and the book thread, as traits, so
//! the same pipeline can run over another SPSC queue (the latency harness compares ticklane's
//! ring with crossbeam's `ArrayQueue`, `rtrb` and the `disruptor` crate in the same run).
//!
//! ticklane's [`Ring`](crate::ring::Ring) halves implement them here; the alternatives are
//! adapted in the bench crate, so the engine depends on none of them. Both methods work on
//! frames in place, the way the ring does: a queue that can only move values copies a frame in
//! its adapter, and that copy is part of what it is measured with.

use super::frame::Frame;
use super::wait::Waiter;
use crate::ring::{Consumer, Producer, PushError};

/// The reader thread's end of the frame queue.
///
/// Implementations are `Send` (they move to the reader thread); there is only ever one
/// producer.
pub trait FrameProducer: Send {
    /// Fills the next free slot in place with `fill` and publishes it.
    ///
    /// # Errors
    ///
    /// [`PushError::Full`], carrying `fill` back uncalled, if no slot is free.
    fn push_with<F: FnOnce(&mut Frame)>(&mut self, fill: F) -> Result<(), PushError<F>>;

    /// Whether the consumer is gone (nothing will ever free a slot again).
    fn is_abandoned(&self) -> bool;

    /// Pushes one frame filled in place by `fill`, waiting with `waiter` while the queue is
    /// full. Returns `false`, without pushing, if the consumer is gone (nothing would read it).
    #[inline]
    fn push_waiting<F: FnOnce(&mut Frame)>(&mut self, waiter: &mut Waiter, fill: F) -> bool {
        let mut fill = fill;
        loop {
            match self.push_with(fill) {
                Ok(()) => {
                    waiter.reset();
                    return true;
                }
                Err(PushError::Full(back)) => {
                    if self.is_abandoned() {
                        return false;
                    }
                    fill = back;
                    waiter.wait();
                }
            }
        }
    }

    /// Pushes the end-of-feed frame stamped `now_ns` (see [`FrameProducer::push_waiting`]).
    fn push_end(&mut self, waiter: &mut Waiter, now_ns: u64) -> bool {
        self.push_waiting(waiter, |f| f.set_end(now_ns))
    }
}

/// The book thread's end of the frame queue.
///
/// Implementations are `Send` (they move to the book thread); there is only ever one
/// consumer.
pub trait FrameConsumer: Send {
    /// Takes up to `max` published frames in order, letting `each` look at each where it lies;
    /// `each` returns `true` to stop after the frame it was given (the end of the feed).
    /// Returns how many frames were taken; 0 if none was published.
    fn read_with(&mut self, max: usize, each: impl FnMut(&Frame) -> bool) -> usize;

    /// Whether the producer is gone (what is published can still be read).
    fn is_abandoned(&self) -> bool;
}

impl FrameProducer for Producer<Frame> {
    #[inline(always)]
    fn push_with<F: FnOnce(&mut Frame)>(&mut self, fill: F) -> Result<(), PushError<F>> {
        Producer::push_with(self, fill)
    }

    #[inline(always)]
    fn is_abandoned(&self) -> bool {
        Producer::is_abandoned(self)
    }
}

impl FrameConsumer for Consumer<Frame> {
    #[inline(always)]
    fn read_with(&mut self, max: usize, mut each: impl FnMut(&Frame) -> bool) -> usize {
        // One acquire load for the whole batch; the slots go back to the reader together
        // when the batch drops.
        let mut batch = self.read_batch(max);
        let mut taken = 0;
        while let Some(stop) = batch.next_with(&mut each) {
            taken += 1;
            if stop {
                break;
            }
        }
        taken
    }

    #[inline(always)]
    fn is_abandoned(&self) -> bool {
        Consumer::is_abandoned(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ring::Ring;

    #[test]
    fn ring_halves_read_in_order_and_stop_where_asked() {
        let (mut producer, mut consumer) = Ring::<Frame>::new(8);
        for seq in 1..=5u64 {
            assert!(FrameProducer::push_with(&mut producer, |f| {
                f.set_message(b"S", seq, 0, 0);
            })
            .is_ok());
        }
        let mut seen = Vec::new();
        let taken = consumer.read_with(8, |f| {
            seen.push(f.seq);
            f.seq == 3
        });
        assert_eq!((taken, seen.as_slice()), (3, &[1, 2, 3][..]));
        let taken = consumer.read_with(1, |f| {
            seen.push(f.seq);
            false
        });
        assert_eq!(taken, 1);
        assert_eq!(consumer.read_with(8, |_| false), 1);
        assert_eq!(consumer.read_with(8, |_| false), 0);
        assert!(!FrameConsumer::is_abandoned(&consumer));
        drop(producer);
        assert!(FrameConsumer::is_abandoned(&consumer));
    }

    #[test]
    fn a_full_ring_hands_the_fill_back() {
        let (mut producer, _consumer) = Ring::<Frame>::new(1);
        assert!(FrameProducer::push_with(&mut producer, |_| {}).is_ok());
        assert!(matches!(
            FrameProducer::push_with(&mut producer, |_| {}),
            Err(PushError::Full(_))
        ));
    }
}
