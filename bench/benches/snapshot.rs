//! Publishing one instrument into its snapshot slot: the book's top 10 levels per side copied
//! into the memory-mapped file under the slot's seqlock, as the book thread does after each
//! message that changed a book.
//!
//! `cargo bench -p ticklane-bench --bench snapshot`

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ticklane_bench::warm_books::warm_books;
use ticklane_engine::book::Trade;
use ticklane_engine::snapshot::{SnapshotReader, SnapshotWriter};
use ticklane_feed::itch::{Locate, Nanos, Price};

fn publish(c: &mut Criterion) {
    let books = warm_books();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut group = c.benchmark_group("snapshot");
    group.throughput(Throughput::Elements(1));
    for depth in [1usize, 10] {
        let path = dir.path().join(format!("bench-{depth}.snap"));
        let mut writer = SnapshotWriter::create(&path, 1024, depth).expect("snapshot file");
        let mut seq = 0u64;
        group.bench_function(
            BenchmarkId::new("publish_at", format!("depth {depth}")),
            |b| {
                b.iter(|| {
                    seq += 1;
                    writer
                        .publish_at(&books, black_box(Locate(1)), seq, Nanos(seq), seq)
                        .expect("the slot fits")
                })
            },
        );
        if depth == 10 {
            // An execution: its trade and the book it changed, as the book thread publishes them.
            group.bench_function(
                BenchmarkId::new("execution (trade + book)", format!("depth {depth}")),
                |b| {
                    b.iter(|| {
                        seq += 1;
                        let trade = Trade {
                            locate: Locate(1),
                            price: Price(1_000_000),
                            shares: 100,
                            timestamp: Nanos(seq),
                        };
                        writer
                            .record_trade(&books, black_box(trade))
                            .expect("the slot fits");
                        writer
                            .publish_at(&books, black_box(Locate(1)), seq, Nanos(seq), seq)
                            .expect("the slot fits")
                    })
                },
            );
            let reader = SnapshotReader::open(&path).expect("reader");
            group.bench_function(BenchmarkId::new("read", format!("depth {depth}")), |b| {
                b.iter(|| black_box(reader.read(0).expect("slot 0 published")))
            });
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    targets = publish
}
criterion_main!(benches);
