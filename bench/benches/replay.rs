//! Decode alone, and decode + books + top-of-book tracking, over a generated day held in
//! memory. Throughput is per message: criterion prints messages per second.

use std::hint::black_box;
use std::io;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ticklane_engine::book::Applier;
use ticklane_engine::book::BookConfig;
use ticklane_engine::csv::BboCsvWriter;
use ticklane_feed::itch;
use ticklane_feed::sim::{write_itch50, GenConfig};

const MESSAGES: u64 = 1_000_000;

fn day() -> Vec<u8> {
    let mut bytes = Vec::new();
    let config = GenConfig {
        messages: MESSAGES,
        seed: 7,
        stocks: 50,
        hard_cases: false,
        crossing: false,
    };
    write_itch50(config, &mut bytes).expect("writing to memory");
    bytes
}

/// Each message's bytes, walking the 2-byte length prefixes.
fn frames(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut at = 0;
    std::iter::from_fn(move || {
        let len = usize::from(u16::from_be_bytes([*bytes.get(at)?, *bytes.get(at + 1)?]));
        let frame = bytes.get(at + 2..at + 2 + len)?;
        at += 2 + len;
        Some(frame)
    })
}

fn bench(c: &mut Criterion) {
    let bytes = day();
    let mut group = c.benchmark_group("replay");
    group.throughput(Throughput::Elements(MESSAGES));
    group.sample_size(10);
    group.bench_function("decode", |b| {
        b.iter(|| {
            let mut sum = 0u64;
            for frame in frames(&bytes) {
                if let Ok(m) = itch::decode(frame) {
                    sum = sum
                        .wrapping_add(m.timestamp().0)
                        .wrapping_add(u64::from(m.locate().0));
                }
            }
            black_box(sum)
        })
    });
    let config = BookConfig {
        max_orders: 1 << 20,
        max_books: 256,
        levels_per_side: 4096,
    };
    group.bench_function("decode+book", |b| {
        b.iter(|| {
            let mut r: Applier<BboCsvWriter<io::Sink>> =
                Applier::new(config, None).expect("books fit");
            for (i, frame) in frames(&bytes).enumerate() {
                r.step(i as u64 + 1, frame).expect("valid day");
            }
            black_box(r.books().live_orders())
        })
    });
    group.bench_function("decode+book+bbo_csv", |b| {
        b.iter(|| {
            let bbo = BboCsvWriter::new(io::sink()).expect("sink");
            let mut r = Applier::new(config, Some(bbo)).expect("books fit");
            for (i, frame) in frames(&bytes).enumerate() {
                r.step(i as u64 + 1, frame).expect("valid day");
            }
            black_box(r.bbo_rows())
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
