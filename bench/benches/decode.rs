//! Decoding one ITCH message, per message type, over the messages of a generated day.
//! Throughput is per message: criterion prints messages per second.
//!
//! `cargo bench -p ticklane-bench --bench decode`

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ticklane_feed::itch;
use ticklane_sim::{GenConfig, MessageLog};

/// Each type's messages from a 200,000-message day, concatenated, with their lengths.
fn by_type() -> BTreeMap<u8, (Vec<u8>, Vec<usize>)> {
    let log = MessageLog::from_generator(GenConfig {
        messages: 200_000,
        seed: 7,
        stocks: 50,
        hard_cases: false,
        crossing: false,
    });
    let mut types: BTreeMap<u8, (Vec<u8>, Vec<usize>)> = BTreeMap::new();
    for seq in 1..=log.len() as u64 {
        let Some(m) = log.get(seq) else { continue };
        let (bytes, lens) = types.entry(m[0]).or_default();
        bytes.extend_from_slice(m);
        lens.push(m.len());
    }
    types
}

fn decode_all(bytes: &[u8], lens: &[usize]) -> u64 {
    let mut at = 0;
    let mut sum = 0u64;
    for &len in lens {
        if let Ok(m) = itch::decode(&bytes[at..at + len]) {
            // Touch the header fields every consumer reads, so decoding is not optimized out.
            sum = sum
                .wrapping_add(m.timestamp().0)
                .wrapping_add(u64::from(m.locate().0));
        }
        at += len;
    }
    sum
}

fn decode(c: &mut Criterion) {
    let types = by_type();
    let mut group = c.benchmark_group("decode");
    for (tag, (bytes, lens)) in &types {
        // Rare types (a handful of S, R, H per day) are too few to time on their own.
        if lens.len() < 1_000 {
            continue;
        }
        group.throughput(Throughput::Elements(lens.len() as u64));
        group.bench_with_input(
            BenchmarkId::from_parameter(char::from(*tag)),
            &(bytes, lens),
            |b, (bytes, lens)| b.iter(|| black_box(decode_all(bytes, lens))),
        );
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    targets = decode
}
criterion_main!(benches);
