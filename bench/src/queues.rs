//! The SPSC queues the harness runs the pipeline over: ticklane's ring and three others,
//! adapted to the engine's [`FrameProducer`] / [`FrameConsumer`] traits.
//!
//! Each adapter uses its queue the way that queue is meant to be used for a 128-byte frame:
//! rtrb and the disruptor are read in place (rtrb's `read_chunk`, the disruptor's
//! `EventPoller`), the disruptor is also written in place (`try_publish`); crossbeam's
//! `ArrayQueue` moves values, so its adapter builds the frame on the stack and copies it in
//! and out. Every adapter is single-producer single-consumer, like the ring.

use std::sync::Arc;

use bytemuck::Zeroable;
use crossbeam_queue::ArrayQueue;
use disruptor::{
    BusySpin, EventPoller, Polling, Producer as _, SingleConsumerBarrier, SingleProducer,
    SingleProducerBarrier,
};
use ticklane_engine::pipeline::{Frame, FrameConsumer, FrameProducer};
use ticklane_engine::ring::{PushError, Ring};

/// Which queue joins the reader and the book thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QueueKind {
    /// `ticklane_engine::ring`: the engine's own ring, written and read in place.
    Ticklane,
    /// `rtrb::RingBuffer`: pushed by value, read in place in chunks.
    Rtrb,
    /// `crossbeam_queue::ArrayQueue`: a bounded MPMC queue, values moved in and out.
    Crossbeam,
    /// The `disruptor` crate: single producer, an `EventPoller` as the consumer.
    Disruptor,
}

impl QueueKind {
    /// Every queue, ticklane's first.
    pub const ALL: [QueueKind; 4] = [
        QueueKind::Ticklane,
        QueueKind::Rtrb,
        QueueKind::Crossbeam,
        QueueKind::Disruptor,
    ];

    /// The short name used in tables, file names and options.
    pub fn name(self) -> &'static str {
        match self {
            QueueKind::Ticklane => "ticklane",
            QueueKind::Rtrb => "rtrb",
            QueueKind::Crossbeam => "crossbeam",
            QueueKind::Disruptor => "disruptor",
        }
    }

    /// Makes a queue of `slots` frames (a power of two) and hands its two halves to `user`.
    pub fn with_queue<U: QueueUser>(self, slots: usize, user: U) -> U::Output {
        let slots = slots.max(2).next_power_of_two();
        match self {
            QueueKind::Ticklane => {
                let (p, c) = Ring::<Frame>::new(slots);
                user.run(p, c)
            }
            QueueKind::Rtrb => {
                let (p, c) = rtrb::RingBuffer::<Frame>::new(slots);
                user.run(RtrbProducer(p), RtrbConsumer(c))
            }
            QueueKind::Crossbeam => {
                let queue = Arc::new(ArrayQueue::<Frame>::new(slots));
                user.run(
                    ArrayQueueProducer(Arc::clone(&queue)),
                    ArrayQueueConsumer(queue),
                )
            }
            QueueKind::Disruptor => {
                let builder = disruptor::build_single_producer(slots, Frame::zeroed, BusySpin);
                let (poller, builder) = builder.event_poller();
                let producer = builder.build();
                let alive = Arc::new(());
                user.run(
                    DisruptorProducer {
                        producer,
                        alive: Arc::clone(&alive),
                    },
                    DisruptorConsumer { poller, alive },
                )
            }
        }
    }
}

impl std::str::FromStr for QueueKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        QueueKind::ALL
            .into_iter()
            .find(|q| q.name() == s)
            .ok_or_else(|| format!("unknown queue {s:?} (ticklane, rtrb, crossbeam, disruptor)"))
    }
}

/// Something run with the two halves of a queue, whatever its type.
pub trait QueueUser {
    /// What the run returns.
    type Output;
    /// Runs with the producer and consumer halves of one queue.
    fn run<P: FrameProducer + 'static, C: FrameConsumer + 'static>(
        self,
        producer: P,
        consumer: C,
    ) -> Self::Output;
}

/// `rtrb`'s producer half.
pub struct RtrbProducer(rtrb::Producer<Frame>);

impl FrameProducer for RtrbProducer {
    #[inline]
    fn push_with<F: FnOnce(&mut Frame)>(&mut self, fill: F) -> Result<(), PushError<F>> {
        if self.0.is_full() {
            return Err(PushError::Full(fill));
        }
        let mut frame = Frame::zeroed();
        fill(&mut frame);
        // Only this thread pushes, and a slot was free: the consumer can only free more.
        self.0
            .push(frame)
            .map_err(|_| ())
            .expect("invariant: a free slot stays free for the only producer");
        Ok(())
    }

    fn is_abandoned(&self) -> bool {
        self.0.is_abandoned()
    }
}

/// `rtrb`'s consumer half.
pub struct RtrbConsumer(rtrb::Consumer<Frame>);

impl FrameConsumer for RtrbConsumer {
    #[inline]
    fn read_with(&mut self, max: usize, mut each: impl FnMut(&Frame) -> bool) -> usize {
        let n = self.0.slots().min(max);
        if n == 0 {
            return 0;
        }
        let Ok(chunk) = self.0.read_chunk(n) else {
            return 0;
        };
        let (first, second) = chunk.as_slices();
        let mut taken = 0;
        for frame in first.iter().chain(second) {
            taken += 1;
            if each(frame) {
                break;
            }
        }
        chunk.commit(taken);
        taken
    }

    fn is_abandoned(&self) -> bool {
        self.0.is_abandoned()
    }
}

/// The producer side of a shared `ArrayQueue`.
pub struct ArrayQueueProducer(Arc<ArrayQueue<Frame>>);

impl FrameProducer for ArrayQueueProducer {
    #[inline]
    fn push_with<F: FnOnce(&mut Frame)>(&mut self, fill: F) -> Result<(), PushError<F>> {
        if self.0.is_full() {
            return Err(PushError::Full(fill));
        }
        let mut frame = Frame::zeroed();
        fill(&mut frame);
        self.0
            .push(frame)
            .map_err(|_| ())
            .expect("invariant: a free slot stays free for the only producer");
        Ok(())
    }

    fn is_abandoned(&self) -> bool {
        Arc::strong_count(&self.0) == 1
    }
}

/// The consumer side of a shared `ArrayQueue`.
pub struct ArrayQueueConsumer(Arc<ArrayQueue<Frame>>);

impl FrameConsumer for ArrayQueueConsumer {
    #[inline]
    fn read_with(&mut self, max: usize, mut each: impl FnMut(&Frame) -> bool) -> usize {
        let mut taken = 0;
        while taken < max {
            let Some(frame) = self.0.pop() else { break };
            taken += 1;
            if each(&frame) {
                break;
            }
        }
        taken
    }

    fn is_abandoned(&self) -> bool {
        Arc::strong_count(&self.0) == 1
    }
}

/// The disruptor's single producer. `alive` is shared with the consumer: the disruptor has
/// no way to tell its producer that a poller went away.
pub struct DisruptorProducer {
    producer: SingleProducer<Frame, SingleConsumerBarrier>,
    alive: Arc<()>,
}

impl FrameProducer for DisruptorProducer {
    #[inline]
    fn push_with<F: FnOnce(&mut Frame)>(&mut self, fill: F) -> Result<(), PushError<F>> {
        // `try_publish` consumes its closure even when the ring is full; keep `fill` outside
        // so it can be handed back uncalled.
        let mut fill = Some(fill);
        let published = self.producer.try_publish(|frame| {
            if let Some(fill) = fill.take() {
                *frame = Frame::zeroed();
                fill(frame);
            }
        });
        match (published, fill) {
            (Err(_), Some(fill)) => Err(PushError::Full(fill)),
            _ => Ok(()),
        }
    }

    fn is_abandoned(&self) -> bool {
        Arc::strong_count(&self.alive) == 1
    }
}

/// The disruptor's event poller.
pub struct DisruptorConsumer {
    poller: EventPoller<Frame, SingleProducerBarrier>,
    alive: Arc<()>,
}

impl FrameConsumer for DisruptorConsumer {
    #[inline]
    fn read_with(&mut self, max: usize, mut each: impl FnMut(&Frame) -> bool) -> usize {
        match self.poller.poll_take(max as u64) {
            Ok(mut events) => {
                // The guard releases every event it covers when it drops, read or not; after
                // a stop (the end of the feed) nothing more is read.
                let mut taken = 0;
                for frame in &mut events {
                    taken += 1;
                    if each(frame) {
                        break;
                    }
                }
                taken
            }
            Err(Polling::NoEvents | Polling::Shutdown) => 0,
        }
    }

    fn is_abandoned(&self) -> bool {
        Arc::strong_count(&self.alive) == 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pushes 1..=n through each queue from another thread and checks order and count.
    struct Relay(u64);

    impl QueueUser for Relay {
        type Output = Vec<u64>;
        fn run<P: FrameProducer + 'static, C: FrameConsumer + 'static>(
            self,
            mut producer: P,
            mut consumer: C,
        ) -> Vec<u64> {
            let n = self.0;
            let pusher = std::thread::spawn(move || {
                for seq in 1..=n {
                    let mut fill = |f: &mut Frame| {
                        f.set_message(b"S", seq, 0, 0);
                    };
                    loop {
                        match producer.push_with(fill) {
                            Ok(()) => break,
                            Err(PushError::Full(back)) => {
                                fill = back;
                                std::thread::yield_now();
                            }
                        }
                    }
                }
            });
            let mut seen = Vec::new();
            while (seen.len() as u64) < n {
                if consumer.read_with(7, |f| {
                    seen.push(f.seq);
                    false
                }) == 0
                {
                    std::thread::yield_now();
                }
            }
            pusher.join().expect("pusher");
            seen
        }
    }

    #[test]
    fn every_queue_delivers_in_order() {
        for kind in QueueKind::ALL {
            let seen = kind.with_queue(8, Relay(1_000));
            assert_eq!(seen, (1..=1_000).collect::<Vec<_>>(), "{}", kind.name());
        }
    }

    #[test]
    fn names_round_trip() {
        for kind in QueueKind::ALL {
            assert_eq!(kind.name().parse::<QueueKind>(), Ok(kind));
        }
    }
}
