//! The two ends of the queue between the reader thread and the book thread, as traits, so
//! the same pipeline can run over another SPSC queue (the latency harness compares ticklane's
//! ring with crossbeam's `ArrayQueue`, `rtrb` and the `disruptor` crate in the same run).
//!
//! ticklane's [`Ring`](ticklane_ring::ring::Ring) halves implement them here; the alternatives are
//! adapted in the bench crate, so the engine depends on none of them. Both methods work on
//! frames in place, the way the ring does: a queue that can only move values copies a frame in
//! its adapter, and that copy is part of what it is measured with.

use super::frame::Frame;
use super::wait::Waiter;
use ticklane_book::{Touches, TouchesAhead, PREFETCH_FAR, PREFETCH_MID, PREFETCH_NEAR};
use ticklane_ring::ring::{Consumer, Producer, PushError};

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

    /// [`FrameConsumer::read_with`], also telling `each` what the frames a few places on
    /// will touch in the books, where they are already published (for the book stage's
    /// prefetch). A queue that cannot look at a frame before taking it says nothing
    /// ([`TouchesAhead::default`]): this default.
    fn read_with_ahead(
        &mut self,
        max: usize,
        mut each: impl FnMut(&Frame, TouchesAhead) -> bool,
    ) -> usize {
        self.read_with(max, |frame| each(frame, TouchesAhead::default()))
    }

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
    fn read_with_ahead(
        &mut self,
        max: usize,
        mut each: impl FnMut(&Frame, TouchesAhead) -> bool,
    ) -> usize {
        let mut batch = self.read_batch(max);
        let mut taken = 0;
        loop {
            // Frames further on in the batch are published and stay in place until taken.
            let touches = |ahead| batch.peek_with(ahead, Frame::touches);
            let ahead = TouchesAhead {
                far: touches(PREFETCH_FAR).unwrap_or(Touches::Nothing),
                mid: touches(PREFETCH_MID).unwrap_or(Touches::Nothing),
                near: touches(PREFETCH_NEAR).unwrap_or(Touches::Nothing),
            };
            let Some(stop) = batch.next_with(|frame| each(frame, ahead)) else {
                break;
            };
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
    use ticklane_ring::ring::Ring;

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

    #[test]
    fn the_ring_tells_each_frame_what_the_frames_ahead_in_its_batch_touch() {
        let (mut producer, mut consumer) = Ring::<Frame>::new(64);
        // 20 deletes of orders 1..=20, then an end frame (which touches nothing).
        for seq in 1..=20u64 {
            let mut d = vec![b'D'; 19];
            d[11..19].copy_from_slice(&seq.to_be_bytes());
            assert!(FrameProducer::push_with(&mut producer, |f| {
                f.set_message(&d, seq, 0, 0);
            })
            .is_ok());
        }
        assert!(FrameProducer::push_with(&mut producer, |f| f.set_end(0)).is_ok());
        let mut seen = Vec::new();
        let taken = consumer.read_with_ahead(64, |f, ahead| {
            seen.push((f.seq, ahead));
            false
        });
        assert_eq!(taken, 21);
        let order = |seq: u64, d: usize| match seq + d as u64 {
            n if n <= 20 => Touches::Order(ticklane_feed::itch::OrderRef(n)),
            _ => Touches::Nothing,
        };
        for &(seq, ahead) in &seen[..20] {
            let want = TouchesAhead {
                far: order(seq, PREFETCH_FAR),
                mid: order(seq, PREFETCH_MID),
                near: order(seq, PREFETCH_NEAR),
            };
            assert_eq!(ahead, want, "frame {seq}");
        }
        // A batch that ends early sees nothing past its end.
        for seq in 1..=4u64 {
            assert!(FrameProducer::push_with(&mut producer, |f| {
                f.set_message(&[b'D'; 19], seq, 0, 0);
            })
            .is_ok());
        }
        let taken = consumer.read_with_ahead(2, |_, ahead| {
            assert_eq!(
                ahead.near,
                Touches::Nothing,
                "PREFETCH_NEAR places on is past a 2-frame batch"
            );
            false
        });
        assert_eq!(taken, 2);
    }
}
