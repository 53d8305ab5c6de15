//! The ring hop alone: one frame at a time through a queue, from a stamp taken just before
//! the push to a stamp taken when the consumer sees it. The producer paces itself (one frame
//! every `gap_ns`), so the queue is nearly always empty and what is measured is the handoff,
//! not queueing; it is the figure to hold against the [floor](crate::floor).

use std::sync::{Arc, Barrier};

use hdrhistogram::Histogram;
use ticklane_engine::clock::Clock;
use ticklane_engine::pipeline::{
    new_histogram, Frame, FrameConsumer, FrameProducer, WaitStrategy, Waiter,
};
use ticklane_engine::ring::PushError;

use crate::queues::QueueUser;

/// One hop measurement: `frames` frames, one every `gap_ns`, on `cores` if given.
#[derive(Clone, Copy, Debug)]
pub struct Hop {
    /// Frames sent.
    pub frames: u64,
    /// Nanoseconds between two sends.
    pub gap_ns: u64,
    /// (producer core, consumer core), if pinned.
    pub cores: Option<(usize, usize)>,
    /// How both sides wait.
    pub wait: WaitStrategy,
}

impl QueueUser for Hop {
    type Output = Histogram<u64>;

    fn run<P: FrameProducer + 'static, C: FrameConsumer + 'static>(
        self,
        mut producer: P,
        mut consumer: C,
    ) -> Histogram<u64> {
        let clock = Clock::start();
        let barrier = Arc::new(Barrier::new(2));
        let reader = {
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                crate::pin(self.cores.map(|c| c.1));
                let mut hops = new_histogram();
                let mut waiter = Waiter::new(self.wait);
                barrier.wait();
                let mut seen = 0u64;
                while seen < self.frames {
                    let taken = consumer.read_with(64, |frame| {
                        let now = clock.now_ns();
                        hops.saturating_record(now.saturating_sub(frame.recv_ns).max(1));
                        false
                    });
                    seen += taken as u64;
                    if taken > 0 {
                        waiter.reset();
                    } else {
                        waiter.wait();
                    }
                }
                hops
            })
        };
        // The producer gets a thread of its own too, so the caller's thread is never pinned.
        let writer = std::thread::spawn(move || {
            crate::pin(self.cores.map(|c| c.0));
            let mut waiter = Waiter::new(self.wait);
            barrier.wait();
            let start = clock.now_ns();
            for i in 0..self.frames {
                let due = start + i * self.gap_ns;
                while clock.now_ns() < due {
                    std::hint::spin_loop();
                }
                let mut fill = |f: &mut Frame| f.recv_ns = clock.now_ns();
                loop {
                    match producer.push_with(fill) {
                        Ok(()) => break,
                        Err(PushError::Full(back)) => {
                            fill = back;
                            waiter.wait();
                        }
                    }
                }
                waiter.reset();
            }
            producer
        });
        let hops = reader.join().expect("the hop reader panicked");
        // Dropped only after the reader is done: the disruptor's producer ends its stream.
        drop(writer.join().expect("the hop writer panicked"));
        hops
    }
}
