//! Overload, side by side: the pipeline driven at 1x, 2x and 4x its capacity, served by
//! plain FIFO publication behind an unbounded queue and by ticklane's overload control, in
//! the same run. Prints the staleness of the published state (p50, p99, max, and p99 over
//! time), the peak memory of the queue, and what was shed.
//!
//! `cargo run --release -p ticklane-bench --bin overload -- [--seconds S] [--cost-ns C]
//! [--stocks N]`. Capacity is made scarce on purpose by a configurable cost per
//! publication (a slow downstream): the engine's own costs are measured and printed first.
//!
//! Staleness of a publication is the time from the arrival of the oldest change it makes
//! visible to the moment it is published: how long a reader looked at a wrong state. The
//! clock starts at each message's *intended* arrival (the pacing schedule), so a backlog
//! in front of the engine is counted, not hidden (coordinated omission).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use hdrhistogram::Histogram;
use ticklane_engine::book::{Applier, NoBbo};
use ticklane_engine::book::{BookConfig, Books};
use ticklane_engine::clock::Clock;
use ticklane_engine::overload::{
    Change, OverloadConfig, OverloadCounts, SheddingPublisher, StateSink,
};
use ticklane_engine::pipeline::{
    human_ns, new_histogram, BookStage, Frame, Percentiles, WaitStrategy,
};
use ticklane_engine::publish::Publisher;
use ticklane_engine::ring::{Producer, Ring};
use ticklane_engine::snapshot::SnapshotWriter;
use ticklane_sim::{write_itch50, GenConfig};

const RING_SLOTS: usize = 1 << 16;
const WINDOWS: usize = 8;

struct Args {
    seconds: f64,
    cost_ns: u64,
    stocks: u16,
}

fn args() -> Args {
    let mut a = Args {
        seconds: 1.5,
        cost_ns: 4_000,
        stocks: 50,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    for pair in argv.chunks(2) {
        let value = pair.get(1).map(String::as_str).unwrap_or("");
        match pair[0].as_str() {
            "--seconds" => a.seconds = value.parse().unwrap_or(a.seconds),
            "--cost-ns" => a.cost_ns = value.parse().unwrap_or(a.cost_ns),
            "--stocks" => a.stocks = value.parse().unwrap_or(a.stocks),
            other => eprintln!("overload: ignoring {other}"),
        }
    }
    a
}

fn books() -> BookConfig {
    BookConfig {
        max_orders: 1 << 21,
        max_books: 1024,
        levels_per_side: 4096,
    }
}

/// A synthetic day, split into messages.
struct Day {
    bytes: Vec<u8>,
    spans: Vec<(u32, u8)>,
}

impl Day {
    fn generate(messages: u64, stocks: u16) -> Day {
        let mut bytes = Vec::new();
        let config = GenConfig {
            messages,
            seed: 7,
            stocks,
            hard_cases: false,
            crossing: false,
        };
        write_itch50(config, &mut bytes).expect("writing to memory");
        let mut spans = Vec::with_capacity(messages as usize);
        let mut at = 0usize;
        while at + 2 <= bytes.len() {
            let len = usize::from(u16::from_be_bytes([bytes[at], bytes[at + 1]]));
            spans.push(((at + 2) as u32, len as u8));
            at += 2 + len;
        }
        Day { bytes, spans }
    }

    fn message(&self, i: usize) -> &[u8] {
        let (at, len) = self.spans[i];
        &self.bytes[at as usize..at as usize + usize::from(len)]
    }
}

/// Staleness histograms: the whole run and each window of it.
type Staleness = (Histogram<u64>, Vec<Histogram<u64>>);

/// Records staleness per publication after spending the configured cost; hands its
/// histograms over when the run finishes.
struct BenchSink {
    clock: Clock,
    cost_ns: u64,
    start_ns: u64,
    window_ns: u64,
    staleness: Option<Staleness>,
    out: Arc<Mutex<Option<Staleness>>>,
}

impl StateSink for BenchSink {
    fn publish_state(&mut self, _books: &Books, change: &Change) -> bool {
        let started = self.clock.now_ns();
        let mut now = started;
        while now - started < self.cost_ns {
            std::hint::spin_loop();
            now = self.clock.now_ns();
        }
        if let Some((all, windows)) = &mut self.staleness {
            let staleness = now.saturating_sub(change.first_ns).max(1);
            all.saturating_record(staleness);
            let w = (now.saturating_sub(self.start_ns) / self.window_ns.max(1)) as usize;
            windows[w.min(WINDOWS - 1)].saturating_record(staleness);
        }
        true
    }

    fn finish(&mut self, _books: &Books) {
        if let Ok(mut out) = self.out.lock() {
            *out = self.staleness.take();
        }
    }
}

struct SourceReport {
    offered: u64,
    peak_queued: usize,
    queued_at_window: [usize; WINDOWS],
}

/// Plays the day at `rate` messages/s for `seconds`; what does not fit in the ring waits
/// in an unbounded queue in front of it (the FIFO baseline's unbounded queue; the same
/// code for both policies, so the only difference is the book thread's service).
fn play(
    day: &Day,
    mut ring: Producer<Frame>,
    clock: Clock,
    rate: f64,
    seconds: f64,
    stop: &AtomicBool,
) -> SourceReport {
    let period = 1e9 / rate;
    let start = clock.now_ns();
    let end = start + (seconds * 1e9) as u64;
    let window_ns = (seconds * 1e9) as u64 / WINDOWS as u64;
    let mut overflow: VecDeque<(usize, u64)> = VecDeque::new();
    let mut report = SourceReport {
        offered: 0,
        peak_queued: 0,
        queued_at_window: [0; WINDOWS],
    };
    let push = |ring: &mut Producer<Frame>, i: usize, t: u64| {
        ring.push_with(|f: &mut Frame| {
            f.set_message(day.message(i), i as u64 + 1, t, t);
        })
        .is_ok()
    };
    let mut i = 0usize;
    let mut polls = 0u64;
    loop {
        let now = clock.now_ns();
        if now >= end || i == day.spans.len() {
            break;
        }
        while let Some(&(j, t)) = overflow.front() {
            if !push(&mut ring, j, t) {
                break;
            }
            overflow.pop_front();
        }
        let mut due = false;
        while i < day.spans.len() {
            let t = start + (i as f64 * period) as u64;
            if t > now {
                break;
            }
            due = true;
            if !overflow.is_empty() || !push(&mut ring, i, t) {
                overflow.push_back((i, t));
            }
            i += 1;
        }
        if !due {
            // Nothing due: leave the core to the book thread (2-core machines).
            std::thread::yield_now();
        }
        polls += 1;
        if polls & 63 == 0 {
            let queued = ring.len() + overflow.len();
            report.peak_queued = report.peak_queued.max(queued);
            let w = ((now - start) / window_ns.max(1)) as usize;
            report.queued_at_window[w.min(WINDOWS - 1)] = queued;
        }
    }
    report.offered = i as u64;
    // Stop: the book thread drains the ring and ends; the unbounded backlog is abandoned.
    stop.store(true, Ordering::Relaxed);
    report
}

struct RunResult {
    staleness: Percentiles,
    windows: Vec<Percentiles>,
    source: SourceReport,
    counters: OverloadCounts,
    applied: u64,
}

fn run(day: &Day, config: OverloadConfig, cost_ns: u64, rate: f64, seconds: f64) -> RunResult {
    let clock = Clock::start();
    let window_ns = (seconds * 1e9) as u64 / WINDOWS as u64;
    let out = Arc::new(Mutex::new(None));
    let sink = BenchSink {
        clock,
        cost_ns,
        start_ns: clock.now_ns(),
        window_ns,
        staleness: Some((
            new_histogram(),
            (0..WINDOWS).map(|_| new_histogram()).collect(),
        )),
        out: Arc::clone(&out),
    };
    let publisher = SheddingPublisher::new(sink, config);
    let counters = publisher.shared_counters();
    let stage = BookStage::new(books(), publisher, clock, WaitStrategy::SpinYield).expect("books");
    let (producer, consumer) = Ring::<Frame>::new(RING_SLOTS);
    let stop = AtomicBool::new(false);
    let (source, report) = std::thread::scope(|scope| {
        let book = scope.spawn(|| stage.run(consumer, &stop));
        let source = play(day, producer, clock, rate, seconds, &stop);
        (source, book.join().expect("book thread"))
    });
    let (all, windows) = out
        .lock()
        .ok()
        .and_then(|mut o| o.take())
        .expect("the sink hands its histograms over when the run finishes");
    RunResult {
        staleness: Percentiles::of(&all),
        windows: windows.iter().map(Percentiles::of).collect(),
        source,
        counters: counters.load(),
        applied: report.messages,
    }
}

/// ns per message of `f` over the first `n` messages of `day`, on fresh books.
fn per_message(day: &Day, n: usize, mut f: impl FnMut(&mut Applier<NoBbo>, u64, &[u8])) -> f64 {
    let mut r = Applier::new(books(), None).expect("books");
    let started = Instant::now();
    for i in 0..n {
        f(&mut r, i as u64 + 1, day.message(i));
    }
    started.elapsed().as_nanos() as f64 / n as f64
}

fn main() {
    let a = args();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "ticklane overload bench: {cores} cores; publication cost {} (synthetic slow downstream); {} stocks; {:.1} s per run",
        human_ns(a.cost_ns),
        a.stocks,
        a.seconds
    );
    let day = Day::generate(3_000_000, a.stocks);
    let n = 1_000_000.min(day.spans.len());

    // The engine's own costs, for the CoDel defaults.
    let apply_ns = per_message(&day, n, |r, i, m| {
        r.step(i, m).expect("valid");
    });
    let dir = std::env::temp_dir().join(format!("ticklane-overload-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let mut writer = SnapshotWriter::create(dir.join("bench.snap"), 4096, 10).expect("snapshot");
    let mut changed = 0u64;
    let apply_publish_ns = per_message(&day, n, |r, i, m| {
        let applied = r.step(i, m).expect("valid");
        if let (Some(locate), Some(msg)) = (applied.changed, applied.message) {
            changed += 1;
            let _ = writer.publish(r.books(), locate, i, msg.timestamp());
        }
    });
    drop(writer);
    let _ = std::fs::remove_dir_all(&dir);
    let publish_ns = (apply_publish_ns - apply_ns) * n as f64 / changed.max(1) as f64;
    let batch_us = 256.0 * apply_publish_ns / 1e3;
    println!(
        "engine: apply {apply_ns:.0} ns/msg; snapshot publication {publish_ns:.0} ns (on {:.0}% of messages); a full 256-frame batch of both {batch_us:.1} µs",
        100.0 * changed as f64 / n as f64
    );

    // Capacity: FIFO service with the synthetic cost, on one thread, no queue.
    let fifo = OverloadConfig::fifo();
    let clock = Clock::start();
    let mut capacity_publisher = SheddingPublisher::new(
        BenchSink {
            clock,
            cost_ns: a.cost_ns,
            start_ns: 0,
            window_ns: 1,
            staleness: None,
            out: Arc::new(Mutex::new(None)),
        },
        fifo,
    );
    let mut frame = <Frame as bytemuck::Zeroable>::zeroed();
    let cap_n = 200_000.min(day.spans.len());
    let fifo_ns = per_message(&day, cap_n, |r, i, m| {
        frame.set_message(m, i, clock.now_ns(), 0);
        let p = &mut capacity_publisher;
        let applied = r
            .step_with(i, frame.message(), |b, m| p.before_apply(b, m))
            .expect("valid");
        let now = clock.now_ns();
        p.publish(r.books(), &applied, frame.arrival(), now);
    });
    let capacity = 1e9 / fifo_ns;
    println!(
        "capacity with FIFO publication at that cost: {:.0} msg/s ({fifo_ns:.0} ns/msg)\n",
        capacity
    );

    let virtual_capacity = 1e9 / (apply_ns + a.cost_ns as f64);
    println!(
        "virtual time (one thread, no other process; capacity {virtual_capacity:.0} msg/s), 600k messages:"
    );
    for load in [1.0, 2.0, 4.0] {
        for (name, config) in [("fifo", fifo), ("ticklane", OverloadConfig::default())] {
            let (p, peak, c) = virtual_time::run(
                &day,
                config,
                a.cost_ns,
                apply_ns as u64,
                virtual_capacity * load,
                600_000,
            );
            println!(
                "  {load:.0}x {name:<9} staleness p50 {} p99 {} max {}  peak queue {:.1} MiB  published {} shed {} conflated {} expired {}",
                human_ns(p.p50),
                human_ns(p.p99),
                human_ns(p.max),
                (peak * 128) as f64 / (1 << 20) as f64,
                c.published,
                c.shed,
                c.conflated,
                c.expired
            );
        }
    }
    println!();

    for load in [1.0, 2.0, 4.0] {
        let rate = capacity * load;
        println!("load {load:.0}x = {:.0} msg/s for {:.1} s", rate, a.seconds);
        println!(
            "  {:<9} {:>10} {:>10} {:>10} {:>14} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9}",
            "policy",
            "stale p50",
            "p99",
            "max",
            "peak queue",
            "applied",
            "published",
            "shed",
            "conflated",
            "expired",
            "overload"
        );
        let mut over_time = Vec::new();
        for (name, config) in [("fifo", fifo), ("ticklane", OverloadConfig::default())] {
            let r = run(&day, config, a.cost_ns, rate, a.seconds);
            let c = r.counters;
            println!(
                "  {:<9} {:>10} {:>10} {:>10} {:>14} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9}",
                name,
                human_ns(r.staleness.p50),
                human_ns(r.staleness.p99),
                human_ns(r.staleness.max),
                format!(
                    "{:.1} MiB",
                    (r.source.peak_queued * 128) as f64 / (1 << 20) as f64
                ),
                r.applied,
                c.published,
                c.shed,
                c.conflated,
                c.expired,
                human_ns(c.overload_ns),
            );
            let windows: Vec<String> = r
                .windows
                .iter()
                .zip(r.source.queued_at_window)
                .map(|(p, q)| {
                    format!(
                        "{}/{:.1}M",
                        human_ns(p.p99),
                        (q * 128) as f64 / (1 << 20) as f64
                    )
                })
                .collect();
            over_time.push(format!(
                "    {name:<9} {} (offered {})",
                windows.join("  "),
                r.source.offered
            ));
        }
        println!("  over time, per 1/{WINDOWS} of the run: p99 staleness / queue MiB");
        for line in over_time {
            println!("{line}");
        }
        println!();
    }
}

/// A deterministic model of the book thread on one thread, in virtual time: the same
/// publisher and policy, frames arriving at `rate`, apply and publication costs charged to
/// the virtual clock. Shows what the policy does when no other process takes the cores.
mod virtual_time {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    struct VirtualSink {
        now: Rc<Cell<u64>>,
        cost_ns: u64,
        staleness: Histogram<u64>,
    }

    impl StateSink for VirtualSink {
        fn publish_state(&mut self, _books: &Books, change: &Change) -> bool {
            self.now.set(self.now.get() + self.cost_ns);
            self.staleness
                .saturating_record(self.now.get().saturating_sub(change.first_ns).max(1));
            true
        }
    }

    /// Returns the staleness percentiles, the peak backlog (frames) and the counters.
    pub fn run(
        day: &Day,
        config: OverloadConfig,
        cost_ns: u64,
        apply_ns: u64,
        rate: f64,
        messages: usize,
    ) -> (Percentiles, usize, OverloadCounts) {
        let now = Rc::new(Cell::new(1u64));
        let sink = VirtualSink {
            now: Rc::clone(&now),
            cost_ns,
            staleness: new_histogram(),
        };
        let mut p = SheddingPublisher::new(sink, config);
        let mut r: Applier<NoBbo> = Applier::new(books(), None).expect("books");
        let mut frame = <Frame as bytemuck::Zeroable>::zeroed();
        let period = 1e9 / rate;
        let arrival = |i: usize| 1 + (i as f64 * period) as u64;
        let (mut next, mut peak) = (0usize, 0usize);
        while next < messages {
            let t = now.get();
            // Frames that have arrived by now, up to a batch.
            let mut end = next;
            while end < messages && arrival(end) <= t {
                end += 1;
            }
            peak = peak.max(end - next);
            if end == next {
                p.drained(r.books(), t);
                now.set(arrival(next));
                continue;
            }
            let end = end.min(next + 256);
            for i in next..end {
                frame.set_message(day.message(i), i as u64 + 1, arrival(i), arrival(i));
                let applied = r
                    .step_with(i as u64 + 1, frame.message(), |b, m| p.before_apply(b, m))
                    .expect("valid");
                now.set(now.get() + apply_ns);
                p.publish(r.books(), &applied, frame.arrival(), now.get());
            }
            next = end;
            p.batch_end(r.books(), now.get());
        }
        p.finish(r.books());
        let counters = p.counters();
        let sink = p.into_sink();
        (Percentiles::of(&sink.staleness), peak, counters)
    }
}
