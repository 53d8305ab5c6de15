//! One-way handoff of 64-byte messages between two threads: ticklane's SPSC ring against
//! `rtrb`, the `disruptor` crate (its `EventPoller`, the consumer owning its thread as here),
//! `crossbeam_queue::ArrayQueue` and `std::sync::mpsc::sync_channel`, all in the same run.
//!
//! Each measurement spawns a consumer thread, lines both threads up on a `Barrier`, then times
//! the producer pushing `iters` messages until the consumer has taken the last one; the figure is
//! time per message (throughput, not round-trip latency). Waiting threads spin briefly, then
//! yield, the same for every contender, because CI machines may have fewer free cores than
//! threads.
//!
//! `cargo bench -p ticklane-bench --bench ring` (add `-- --quick` for a faster, rougher run).

use std::hint::black_box;
use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use crossbeam_queue::ArrayQueue;
use disruptor::{BusySpin, Polling, Producer as _};
use ticklane_engine::ring::Ring;

/// A 64-byte message: the size of a small tick frame, one cache line.
#[derive(Clone, Copy, bytemuck::Zeroable)]
#[repr(C, align(64))]
struct Message {
    words: [u64; 8],
}

impl Message {
    fn new(seq: u64) -> Self {
        Message { words: [seq; 8] }
    }
}

const CAPACITY: usize = 1024;
const BATCH: usize = 32;

/// Spins for a short while, then yields to the scheduler.
#[inline]
fn backoff(spins: &mut u32) {
    if *spins < 100 {
        *spins += 1;
        std::hint::spin_loop();
    } else {
        thread::yield_now();
    }
}

/// Runs `consume` on a new thread and `produce` on this one, both starting at a barrier, and
/// returns the time from the barrier until the consumer has finished.
fn time_handoff<C, P>(consume: C, produce: P) -> Duration
where
    C: FnOnce() -> u64 + Send + 'static,
    P: FnOnce(),
{
    let barrier = Arc::new(Barrier::new(2));
    let consumer = {
        let barrier = Arc::clone(&barrier);
        thread::spawn(move || {
            barrier.wait();
            consume()
        })
    };
    barrier.wait();
    let start = Instant::now();
    produce();
    let checksum = consumer.join().expect("consumer thread panicked");
    let elapsed = start.elapsed();
    black_box(checksum);
    elapsed
}

fn ticklane_single(iters: u64) -> Duration {
    let (mut producer, mut consumer) = Ring::<Message>::new(CAPACITY);
    time_handoff(
        move || {
            let mut sum = 0u64;
            let mut taken = 0;
            let mut spins = 0;
            while taken < iters {
                match consumer.pop() {
                    Ok(message) => {
                        sum = sum.wrapping_add(message.words[7]);
                        taken += 1;
                        spins = 0;
                    }
                    Err(_) => backoff(&mut spins),
                }
            }
            sum
        },
        move || {
            let mut spins = 0;
            for seq in 0..iters {
                let mut message = Message::new(seq);
                while let Err(full) = producer.push(message) {
                    message = full.into_inner();
                    backoff(&mut spins);
                }
                spins = 0;
            }
        },
    )
}

fn ticklane_in_place(iters: u64) -> Duration {
    let (mut producer, mut consumer) = Ring::<Message>::new(CAPACITY);
    time_handoff(
        move || {
            let mut sum = 0u64;
            let mut taken = 0;
            let mut spins = 0;
            while taken < iters {
                match consumer.pop_with(|message| message.words[7]) {
                    Ok(last) => {
                        sum = sum.wrapping_add(last);
                        taken += 1;
                        spins = 0;
                    }
                    Err(_) => backoff(&mut spins),
                }
            }
            sum
        },
        move || {
            let mut spins = 0;
            for seq in 0..iters {
                while producer
                    .push_with(|message| message.words = [seq; 8])
                    .is_err()
                {
                    backoff(&mut spins);
                }
                spins = 0;
            }
        },
    )
}

fn array_queue(iters: u64) -> Duration {
    let queue = Arc::new(ArrayQueue::<Message>::new(CAPACITY));
    let consumer_queue = Arc::clone(&queue);
    time_handoff(
        move || {
            let mut sum = 0u64;
            let mut taken = 0;
            let mut spins = 0;
            while taken < iters {
                match consumer_queue.pop() {
                    Some(message) => {
                        sum = sum.wrapping_add(message.words[7]);
                        taken += 1;
                        spins = 0;
                    }
                    None => backoff(&mut spins),
                }
            }
            sum
        },
        move || {
            let mut spins = 0;
            for seq in 0..iters {
                let mut message = Message::new(seq);
                while let Err(back) = queue.push(message) {
                    message = back;
                    backoff(&mut spins);
                }
                spins = 0;
            }
        },
    )
}

fn rtrb_single(iters: u64) -> Duration {
    let (mut producer, mut consumer) = rtrb::RingBuffer::<Message>::new(CAPACITY);
    time_handoff(
        move || {
            let mut sum = 0u64;
            let mut taken = 0;
            let mut spins = 0;
            while taken < iters {
                match consumer.pop() {
                    Ok(message) => {
                        sum = sum.wrapping_add(message.words[7]);
                        taken += 1;
                        spins = 0;
                    }
                    Err(_) => backoff(&mut spins),
                }
            }
            sum
        },
        move || {
            let mut spins = 0;
            for seq in 0..iters {
                let mut message = Message::new(seq);
                while let Err(rtrb::PushError::Full(back)) = producer.push(message) {
                    message = back;
                    backoff(&mut spins);
                }
                spins = 0;
            }
        },
    )
}

fn disruptor_single(iters: u64) -> Duration {
    let builder = disruptor::build_single_producer(CAPACITY, || Message::new(0), BusySpin);
    let (mut poller, builder) = builder.event_poller();
    let mut producer = builder.build();
    time_handoff(
        move || {
            let mut sum = 0u64;
            let mut taken = 0;
            let mut spins = 0;
            while taken < iters {
                match poller.poll() {
                    Ok(mut events) => {
                        for message in &mut events {
                            sum = sum.wrapping_add(message.words[7]);
                            taken += 1;
                        }
                        spins = 0;
                    }
                    Err(Polling::NoEvents) => backoff(&mut spins),
                    Err(Polling::Shutdown) => break,
                }
            }
            sum
        },
        move || {
            let mut spins = 0;
            for seq in 0..iters {
                while producer
                    .try_publish(|message| message.words = [seq; 8])
                    .is_err()
                {
                    backoff(&mut spins);
                }
                spins = 0;
            }
            // The producer's drop waits for nothing here (the poller owns no thread of the
            // disruptor's); it marks the end for the poller.
        },
    )
}

fn std_sync_channel(iters: u64) -> Duration {
    let (sender, receiver) = sync_channel::<Message>(CAPACITY);
    time_handoff(
        move || {
            let mut sum = 0u64;
            for _ in 0..iters {
                let message = receiver.recv().expect("sender alive until all are sent");
                sum = sum.wrapping_add(message.words[7]);
            }
            sum
        },
        move || {
            for seq in 0..iters {
                sender
                    .send(Message::new(seq))
                    .expect("receiver alive until all are received");
            }
        },
    )
}

fn ticklane_batched(iters: u64) -> Duration {
    let (mut producer, mut consumer) = Ring::<Message>::new(CAPACITY);
    time_handoff(
        move || {
            let mut sum = 0u64;
            let mut taken = 0;
            let mut spins = 0;
            while taken < iters {
                let mut batch = consumer.read_batch(BATCH);
                if batch.len() == 0 {
                    drop(batch);
                    backoff(&mut spins);
                    continue;
                }
                spins = 0;
                while let Some(last) = batch.next_with(|message| message.words[7]) {
                    sum = sum.wrapping_add(last);
                    taken += 1;
                }
            }
            sum
        },
        move || {
            let mut spins = 0;
            let mut seq = 0u64;
            while seq < iters {
                let want = (iters - seq).min(BATCH as u64) as usize;
                let mut batch = producer.write_batch(want);
                if batch.remaining() == 0 {
                    drop(batch);
                    backoff(&mut spins);
                    continue;
                }
                spins = 0;
                while batch.push_with(|message| message.words = [seq; 8]).is_ok() {
                    seq += 1;
                }
            }
        },
    )
}

fn handoff(c: &mut Criterion) {
    let mut group = c.benchmark_group("handoff_64B");
    group.throughput(Throughput::Elements(1));
    group.bench_function("ticklane_ring push/pop", |b| b.iter_custom(ticklane_single));
    group.bench_function("ticklane_ring push_with/pop_with", |b| {
        b.iter_custom(ticklane_in_place)
    });
    group.bench_function("rtrb push/pop", |b| b.iter_custom(rtrb_single));
    group.bench_function("disruptor try_publish/poll", |b| {
        b.iter_custom(disruptor_single)
    });
    group.bench_function("crossbeam ArrayQueue", |b| b.iter_custom(array_queue));
    group.bench_function("std sync_channel", |b| b.iter_custom(std_sync_channel));
    group.finish();
}

fn batches(c: &mut Criterion) {
    let mut group = c.benchmark_group("batch_64B");
    group.throughput(Throughput::Elements(1));
    group.bench_function(BenchmarkId::new("ticklane_ring single", 1), |b| {
        b.iter_custom(ticklane_single)
    });
    group.bench_function(BenchmarkId::new("ticklane_ring batch", BATCH), |b| {
        b.iter_custom(ticklane_batched)
    });
    group.finish();
}

criterion_group! {
    name = benches;
    // Small samples keep a full run to about a minute on a 2-core machine.
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = handoff, batches
}
criterion_main!(benches);
