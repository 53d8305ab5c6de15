//! The seqlock the snapshot ships (`ticklane_engine::seqlock`): one write and one read of a
//! slot, uncontended, for the payload of a small record and of a snapshot slot; a write of the
//! few words a publication changes; and a read racing a writer on another core.
//!
//! `cargo bench -p ticklane-bench --bench seqlock`

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ticklane_engine::seqlock::{ReadOnlyWords, SeqLockReader, SeqLockWriter};

/// A slot of `payload` words after its sequence word, as the snapshot lays one out.
fn slot(payload: usize) -> Vec<AtomicU64> {
    (0..=payload).map(|_| AtomicU64::new(0)).collect()
}

fn uncontended(c: &mut Criterion, payload: usize) {
    let words = slot(payload);
    let writer = SeqLockWriter::new(&words).expect("a sequence word");
    let reader = SeqLockReader::new(ReadOnlyWords::new(&words)).expect("a sequence word");
    let src: Vec<u64> = (0..payload as u64).collect();
    let mut dst = vec![0u64; payload];
    let mut group = c.benchmark_group("seqlock");
    group.throughput(Throughput::Elements(1));
    let words_id = format!("{payload} words");
    group.bench_function(BenchmarkId::new("store", &words_id), |b| {
        b.iter(|| writer.store(black_box(&src)))
    });
    // A publication stores the fixed words that changed (about four) and the levels in use.
    let mut n = 0u64;
    group.bench_function(BenchmarkId::new("write 4 words", &words_id), |b| {
        b.iter(|| {
            n = n.wrapping_add(1);
            writer.write(|w| {
                w.store(0, n);
                w.store(1, n);
                w.store(2, n);
                w.store(3, n);
            })
        })
    });
    group.bench_function(BenchmarkId::new("read", &words_id), |b| {
        b.iter(|| black_box(reader.try_load(black_box(&mut dst)).expect("no writer")))
    });
    group.finish();
}

/// Reads while another thread stores as fast as it can: the reader's retries show.
fn contended(c: &mut Criterion) {
    const N: usize = 16;
    let words = Arc::new(slot(N));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (words, stop) = (Arc::clone(&words), Arc::clone(&stop));
        std::thread::spawn(move || {
            let writer = SeqLockWriter::new(&words).expect("a sequence word");
            let mut src = [0u64; N];
            while !stop.load(Ordering::Relaxed) {
                src[0] = src[0].wrapping_add(1);
                writer.store(&src);
                // Leave the reader a window, as a real writer does between messages.
                for _ in 0..16 {
                    std::hint::spin_loop();
                }
            }
        })
    };
    let reader = SeqLockReader::new(ReadOnlyWords::new(&words)).expect("a sequence word");
    let mut dst = [0u64; N];
    let mut group = c.benchmark_group("seqlock");
    group.throughput(Throughput::Elements(1));
    group.bench_function(
        BenchmarkId::new("read, writer busy", format!("{N} words")),
        |b| {
            b.iter(|| {
                black_box(
                    reader
                        .load_bounded(&mut dst, u32::MAX)
                        .expect("the writer leaves windows"),
                )
            })
        },
    );
    group.finish();
    stop.store(true, Ordering::Relaxed);
    writer.join().expect("writer thread");
}

fn all(c: &mut Criterion) {
    uncontended(c, 4);
    // About a depth-10 snapshot slot's payload (16 fixed words and 20 levels of 2 words).
    uncontended(c, 64);
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
