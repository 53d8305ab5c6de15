//! Decode alone, decode + books, decode + books + top-of-book CSV, and the top-of-book CSV
//! writer alone (formatting the day's rows, gathered beforehand), over a generated day held
//! in memory. Throughput is per input message for all four: criterion prints messages per
//! second, so `bbo_csv_rows_only` against `decode+book` says whether the writer keeps up
//! with the book (both in the same run).

use std::hint::black_box;
use std::io;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ticklane_engine::book::{Applier, BboRow, BboSink, BookConfig};
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

/// A sink that keeps the rows, to replay them through the writer alone.
struct Gather(Vec<BboRow>);

impl BboSink for Gather {
    fn write_row(&mut self, row: &BboRow) -> io::Result<()> {
        self.0.push(*row);
        Ok(())
    }
    fn finish(self) -> io::Result<()> {
        Ok(())
    }
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
    let rows = {
        let mut r = Applier::new(config, Some(Gather(Vec::new()))).expect("books fit");
        for (i, frame) in frames(&bytes).enumerate() {
            r.step(i as u64 + 1, frame).expect("valid day");
        }
        r.sink_mut()
            .map(|g| std::mem::take(&mut g.0))
            .unwrap_or_default()
    };
    println!(
        "bbo_csv_rows_only: {} rows for {MESSAGES} messages",
        rows.len()
    );
    group.bench_function("bbo_csv_rows_only", |b| {
        b.iter(|| {
            let mut csv = BboCsvWriter::new(io::sink()).expect("sink");
            for row in &rows {
                csv.write_row(black_box(row)).expect("sink");
            }
            csv.finish().expect("sink");
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
