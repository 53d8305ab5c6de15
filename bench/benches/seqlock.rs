//! The seqlock slot: one write and one read of a payload, uncontended, for the payload sizes
//! of a small record and of a snapshot slot; and a read racing a writer on another core.
//!
//! `cargo bench -p ticklane-bench --bench seqlock`

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ticklane_engine::seqlock::SeqLockSlot;

fn uncontended<const N: usize>(c: &mut Criterion) {
    let slot = SeqLockSlot::<N>::new();
    let words: [u64; N] = core::array::from_fn(|i| i as u64);
    let mut group = c.benchmark_group("seqlock");
    group.throughput(Throughput::Elements(1));
    group.bench_function(BenchmarkId::new("store", format!("{N} words")), |b| {
        b.iter(|| slot.store(black_box(&words)))
    });
    group.bench_function(
        BenchmarkId::new("write in place", format!("{N} words")),
        |b| b.iter(|| slot.write(|w| w[0] = w[0].wrapping_add(1))),
    );
    group.bench_function(BenchmarkId::new("read", format!("{N} words")), |b| {
        b.iter(|| black_box(slot.read()))
    });
    group.finish();
}

/// Reads while another thread stores as fast as it can: the reader's retries show.
fn contended(c: &mut Criterion) {
    const N: usize = 16;
    let slot = Arc::new(SeqLockSlot::<N>::new());
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (slot, stop) = (Arc::clone(&slot), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut words = [0u64; N];
            while !stop.load(Ordering::Relaxed) {
                words[0] = words[0].wrapping_add(1);
                slot.store(&words);
                // Leave the reader a window, as a real writer does between messages.
                for _ in 0..16 {
                    std::hint::spin_loop();
                }
            }
        })
    };
    let mut group = c.benchmark_group("seqlock");
    group.throughput(Throughput::Elements(1));
    group.bench_function(
        BenchmarkId::new("read, writer busy", format!("{N} words")),
        |b| b.iter(|| black_box(slot.read())),
    );
    group.finish();
    stop.store(true, Ordering::Relaxed);
    writer.join().expect("writer thread");
}

fn all(c: &mut Criterion) {
    uncontended::<4>(c);
    uncontended::<64>(c);
    contended(c);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    targets = all
}
criterion_main!(benches);
