//! Decode alone, decode + books, decode + books + top-of-book CSV, and the top-of-book CSV
//! writer alone (formatting the day's rows, gathered beforehand), over a generated day held
//! in memory. Throughput is per input message for all four: criterion prints messages per
//! second, so `bbo_csv_rows_only` against `decode+book` says whether the writer keeps up
//! with the book (both in the same run).
//!
//! The `full_day` group replays a day shaped like Nasdaq's (`gen --profile full-day`: 8,900
//! names, about 200,000 live orders at the peak), whose books do not fit the caches, with
//! and without the apply step's prefetch of what the messages a few places on will touch:
//! the ratio of the two, measured in the same run, is what looking ahead buys there.

use std::hint::black_box;
use std::io;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ticklane_engine::book::{
    Applier, BboRow, BboSink, BookConfig, Touches, TouchesAhead, PREFETCH_FAR, PREFETCH_MID,
    PREFETCH_NEAR,
};
use ticklane_engine::csv::BboCsvWriter;
use ticklane_feed::itch;
use ticklane_sim::{write_itch50, write_itch50_profile, GenConfig, Profile, FULL_DAY_STOCKS};

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

/// Messages of the full-day replay: enough for its live orders to outgrow the caches.
const FULL_DAY_MESSAGES: u64 = 4_000_000;

fn bench_full_day(c: &mut Criterion) {
    let mut bytes = Vec::new();
    let config = GenConfig {
        messages: FULL_DAY_MESSAGES,
        seed: 1,
        stocks: FULL_DAY_STOCKS,
        hard_cases: false,
        crossing: false,
    };
    write_itch50_profile(config, Profile::FullDay, &mut bytes).expect("writing to memory");
    let messages: Vec<&[u8]> = frames(&bytes).collect();
    let mut group = c.benchmark_group("full_day");
    group.throughput(Throughput::Elements(FULL_DAY_MESSAGES));
    group.sample_size(10);
    for prefetch in [false, true] {
        let name = if prefetch {
            "decode+book+prefetch"
        } else {
            "decode+book"
        };
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut r: Applier<BboCsvWriter<io::Sink>> =
                    Applier::new(BookConfig::default(), None).expect("books fit");
                for (i, frame) in messages.iter().enumerate() {
                    if prefetch {
                        let ahead = |d: usize| {
                            Touches::of_itch(messages.get(i + d).copied().unwrap_or_default())
                        };
                        r.prefetch(TouchesAhead {
                            far: ahead(PREFETCH_FAR),
                            mid: ahead(PREFETCH_MID),
                            near: ahead(PREFETCH_NEAR),
                        });
                    }
                    r.step(i as u64 + 1, frame).expect("valid day");
                }
                black_box(r.books().live_orders())
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench, bench_full_day);
criterion_main!(benches);
