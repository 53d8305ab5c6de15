//! The latency harness: drives the real pipeline at fixed offered rates, from the exchange
//! simulator over loopback UDP and from an in-process source, over ticklane's ring and over
//! rtrb, crossbeam's `ArrayQueue` and the disruptor crate, in interleaved rounds; measures
//! the machine's floor (a cache-line ping-pong) and the queue hop alone in the same run.
//!
//! `cargo run --release -p ticklane-bench --bin latency -- --help`; `--quick` for CI.
//! Prints a table; writes `.hgrm` files, `latency.svg` and `summary.csv` under `--out`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Parser;
use hdrhistogram::Histogram;
use ticklane_bench::floor::{clock_read_ns, measure_floor};
use ticklane_bench::hgrm::{percentile_points, write_hgrm};
use ticklane_bench::hop::Hop;
use ticklane_bench::pipeline_run::{PipelineRun, RunResult, SourceKind};
use ticklane_bench::queues::QueueKind;
use ticklane_bench::svg_plot::{render, Series};
use ticklane_engine::pipeline::{human_ns, new_histogram, Percentiles, WaitStrategy};
use ticklane_sim::{GenConfig, MessageLog};

/// Tail latency of the live pipeline, against the machine's floor and other SPSC queues.
#[derive(Parser, Debug)]
#[command(name = "latency")]
struct Args {
    /// CI smoke run: 20,000 messages at 1 M/s, one round, every queue, both sources.
    #[arg(long)]
    quick: bool,
    /// Messages per pipeline run.
    #[arg(long, default_value_t = 1_000_000)]
    messages: u64,
    /// Offered rates, comma-separated: `100k`, `1M`, `5M`, or `max` (as fast as possible).
    #[arg(long, value_delimiter = ',', default_value = "100k,1M,5M,max")]
    rates: Vec<String>,
    /// Rounds: every queue runs once per round, in an order rotated each round.
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// Queues to compare (ticklane, rtrb, crossbeam, disruptor).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "ticklane,rtrb,crossbeam,disruptor"
    )]
    queues: Vec<QueueKind>,
    /// Sources (inproc: from memory; udp: the simulator over loopback).
    #[arg(long, value_delimiter = ',', default_value = "inproc,udp")]
    sources: Vec<SourceKind>,
    /// Pin the reader (and ping, and hop producer) to the first core, the book thread to
    /// the second: `--cores 2,3`. Not pinned by default (a shared 2-core machine).
    #[arg(long, value_delimiter = ',')]
    cores: Option<Vec<usize>>,
    /// How waiting stages wait: busy-spin (dedicated cores only), spin-yield, park.
    #[arg(long, default_value = "spin-yield")]
    wait: WaitStrategy,
    /// Queue slots (each a 128-byte frame).
    #[arg(long, default_value_t = 1 << 16)]
    slots: usize,
    /// Frames sent one at a time through each queue for the hop figure.
    #[arg(long, default_value_t = 200_000)]
    hop_frames: u64,
    /// Nanoseconds between two hop frames (the queue stays nearly empty).
    #[arg(long, default_value_t = 2_000)]
    hop_gap_ns: u64,
    /// Round trips of the floor's ping-pong.
    #[arg(long, default_value_t = 200_000)]
    floor_trips: u64,
    /// Only the floor and the queue hops, no pipeline runs: the ring comparison alone.
    #[arg(long)]
    hop_only: bool,
    /// Stocks in the generated day.
    #[arg(long, default_value_t = 50)]
    stocks: u16,
    /// Seed of the generated day.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where the `.hgrm` files, `latency.svg` and `summary.csv` go.
    #[arg(long, default_value = "target/latency")]
    out: PathBuf,
}

/// `100k` → 100,000; `1M` → 1,000,000; `max` → `None`.
fn parse_rate(s: &str) -> Result<Option<u64>> {
    if s == "max" {
        return Ok(None);
    }
    let (digits, scale) = match s.as_bytes().last() {
        Some(b'k' | b'K') => (&s[..s.len() - 1], 1_000),
        Some(b'M' | b'm') => (&s[..s.len() - 1], 1_000_000),
        _ => (s, 1),
    };
    let n: f64 = digits
        .parse()
        .with_context(|| format!("rate {s:?}: use e.g. 100k, 1M, 5M or max"))?;
    if !(n > 0.0 && n.is_finite()) {
        bail!("rate {s:?} must be positive");
    }
    Ok(Some((n * scale as f64) as u64))
}

fn rate_label(rate: Option<u64>) -> String {
    match rate {
        None => "max".into(),
        Some(r) if r % 1_000_000 == 0 => format!("{}M", r / 1_000_000),
        Some(r) if r % 1_000 == 0 => format!("{}k", r / 1_000),
        Some(r) => r.to_string(),
    }
}

/// The system's load averages, to print beside the figures.
fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// A pipeline stage's histograms, by name, in the order they are reported.
const STAGES: [&str; 3] = [
    "receive_to_applied",
    "receive_to_published",
    "intended_to_published",
];

/// Everything measured for one (source, rate, queue): histograms merged over rounds, and
/// each round's end-to-end percentiles (to see whether an ordering holds across repeats).
#[derive(Default)]
struct Cell {
    stages: BTreeMap<&'static str, Histogram<u64>>,
    rounds: Vec<(Percentiles, f64)>,
    applied: u64,
    offered: u64,
    lost: u64,
    late: u64,
    seconds: f64,
    problems: Vec<String>,
}

impl Cell {
    fn add(&mut self, run: &RunResult) -> Result<()> {
        let l = &run.latency;
        for (name, h) in STAGES.iter().zip([
            &l.receive_to_applied,
            &l.receive_to_published,
            &l.intended_to_published,
        ]) {
            self.stages
                .entry(name)
                .or_insert_with(new_histogram)
                .add(h)
                .context("merging histograms")?;
        }
        self.rounds
            .push((Percentiles::of(end_to_end(l)), run.throughput()));
        self.applied += run.applied;
        self.offered += run.offered;
        self.lost += run.lost;
        self.late += run.late;
        self.seconds += run.elapsed.as_secs_f64();
        self.problems.extend(run.problem.clone());
        Ok(())
    }

    fn end_to_end(&self) -> Option<(&'static str, &Histogram<u64>)> {
        ["intended_to_published", "receive_to_published"]
            .into_iter()
            .find_map(|n| self.stages.get(n).filter(|h| !h.is_empty()).map(|h| (n, h)))
    }
}

/// The end-to-end histogram of one run: from the intended send time when the source knows
/// it (coordinated omission), else from receive.
fn end_to_end(l: &ticklane_engine::pipeline::StageLatency) -> &Histogram<u64> {
    if l.intended_to_published.is_empty() {
        &l.receive_to_published
    } else {
        &l.intended_to_published
    }
}

fn write_file(path: &Path, write: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> Result<()> {
    let mut bytes = Vec::new();
    write(&mut bytes).with_context(|| format!("formatting {}", path.display()))?;
    fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

/// `ours / theirs` as `0.93x`; tiny ratios as `<0.01x` rather than a misleading `0.00x`.
fn ratio(ours: u64, theirs: u64) -> String {
    let r = ours as f64 / theirs.max(1) as f64;
    if r < 0.01 {
        "<0.01x".into()
    } else {
        format!("{r:.2}x")
    }
}

fn row(label: &str, p: &Percentiles) -> String {
    format!(
        "{label:<34} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        human_ns(p.p50),
        human_ns(p.p90),
        human_ns(p.p99),
        human_ns(p.p999),
        human_ns(p.p9999),
        human_ns(p.max),
        p.count
    )
}

fn header(first: &str) -> String {
    format!(
        "{first:<34} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "p50", "p90", "p99", "p99.9", "p99.99", "max", "n"
    )
}

fn csv_row(csv: &mut String, key: [&str; 5], p: &Percentiles, tail: &str) {
    let _ = writeln!(
        csv,
        "{},{},{},{},{},{},{},{},{},{},{},{},{}",
        key[0],
        key[1],
        key[2],
        key[3],
        key[4],
        p.count,
        p.p50,
        p.p90,
        p.p99,
        p.p999,
        p.p9999,
        p.max,
        tail
    );
}

fn main() -> Result<()> {
    let mut args = Args::parse();
    if args.quick {
        args.messages = 20_000;
        args.rates = vec!["1M".into()];
        args.rounds = 1;
        args.hop_frames = 20_000;
        args.floor_trips = 20_000;
    }
    let rates = args
        .rates
        .iter()
        .map(|r| parse_rate(r))
        .collect::<Result<Vec<_>>>()?;
    let cores = match args.cores.as_deref() {
        None => None,
        Some(&[reader, book]) => Some((reader, book)),
        Some(other) => bail!("--cores takes two cores (reader,book), not {other:?}"),
    };
    let wait = args.wait;
    fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let started = Instant::now();
    let load_before = load_average();

    let log = Arc::new(MessageLog::from_generator(GenConfig {
        messages: args.messages,
        seed: args.seed,
        stocks: args.stocks,
        hard_cases: false,
        crossing: false,
    }));

    let mut floor_all = new_histogram();
    let mut floor_means = Vec::new();
    let mut hops: BTreeMap<QueueKind, Histogram<u64>> = BTreeMap::new();
    let mut hop_rounds: BTreeMap<QueueKind, Vec<Percentiles>> = BTreeMap::new();
    // Keyed by the rate's position in `--rates`, so the tables follow the order asked for.
    let mut cells: BTreeMap<(SourceKind, usize, QueueKind), Cell> = BTreeMap::new();
    let hop = Hop {
        frames: args.hop_frames,
        gap_ns: args.hop_gap_ns,
        cores,
        wait,
    };
    let n_queues = args.queues.len().max(1);
    for round in 0..args.rounds {
        // Rotate the queue order each round, so no queue always runs first (warm caches,
        // a quiet moment on a shared machine).
        let order: Vec<QueueKind> = (0..args.queues.len())
            .map(|i| args.queues[(i + round as usize) % n_queues])
            .collect();
        eprintln!(
            "round {}/{}: order {:?} (load {})",
            round + 1,
            args.rounds,
            order.iter().map(|q| q.name()).collect::<Vec<_>>(),
            load_average()
        );
        let floor = measure_floor(args.floor_trips, cores, wait);
        floor_all.add(&floor.one_way).context("merging the floor")?;
        floor_means.push(floor.mean_one_way_ns);
        for &queue in &order {
            let h = queue.with_queue(1024, hop);
            hop_rounds
                .entry(queue)
                .or_default()
                .push(Percentiles::of(&h));
            hops.entry(queue)
                .or_insert_with(new_histogram)
                .add(&h)
                .context("merging hop histograms")?;
        }
        let sources: &[SourceKind] = if args.hop_only { &[] } else { &args.sources };
        for &source in sources {
            for (r, &rate) in rates.iter().enumerate() {
                for &queue in &order {
                    let run = PipelineRun {
                        source,
                        rate,
                        log: Arc::clone(&log),
                        slots: args.slots,
                        cores,
                        wait,
                        snapshot: args.out.join(format!("run-{}.snap", std::process::id())),
                    };
                    let result = queue.with_queue(args.slots, &run).with_context(|| {
                        format!("{} {} {}", source.name(), rate_label(rate), queue.name())
                    })?;
                    if cores.is_some() && !result.pinned {
                        eprintln!("  warning: pinning to {cores:?} did not take effect");
                    }
                    eprintln!(
                        "  {:<6} {:>4} {:<9} {:>9.0} msg/s  e2e p50 {:>9} p99 {:>9}  lost {}",
                        source.name(),
                        rate_label(rate),
                        queue.name(),
                        result.throughput(),
                        human_ns(Percentiles::of(end_to_end(&result.latency)).p50),
                        human_ns(Percentiles::of(end_to_end(&result.latency)).p99),
                        result.lost
                    );
                    cells.entry((source, r, queue)).or_default().add(&result)?;
                }
            }
        }
    }
    let load_after = load_average();

    // The report.
    let mut out = String::new();
    let mut csv = String::from(
        "kind,source,rate,queue,stage,count,p50_ns,p90_ns,p99_ns,p999_ns,p9999_ns,max_ns,msgs_per_s,lost\n",
    );
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let _ = writeln!(
        out,
        "ticklane latency harness: {cpus} CPUs, cores {}, wait {:?}, {} messages x {} rounds; load average {load_before} before, {load_after} after",
        cores.map_or("not pinned".to_owned(), |c| format!("{},{}", c.0, c.1)),
        wait,
        args.messages,
        args.rounds
    );
    let floor_p = Percentiles::of(&floor_all);
    let floor_mean = floor_means.iter().sum::<f64>() / floor_means.len().max(1) as f64;
    let _ = writeln!(out, "\nfloor: cache-line ping-pong, one way = round trip / 2 (mean over the whole run {floor_mean:.1} ns; per round {})",
        floor_means.iter().map(|m| format!("{m:.1}")).collect::<Vec<_>>().join(", "));
    let _ = writeln!(
        out,
        "clock read (Instant::now): {:.1} ns; every figure below is a difference of two reads",
        clock_read_ns(1_000_000)
    );
    let _ = writeln!(out, "{}", header("one way"));
    let _ = writeln!(out, "{}", row("floor", &floor_p));
    csv_row(&mut csv, ["floor", "", "", "", "one_way"], &floor_p, ",0");
    write_file(&args.out.join("floor.hgrm"), |w| {
        write_hgrm(&floor_all, 1000.0, w)
    })?;

    let _ = writeln!(
        out,
        "\nqueue hop: one frame every {} ns, push stamp to pop stamp ({} frames x {} rounds)",
        args.hop_gap_ns, args.hop_frames, args.rounds
    );
    let _ = writeln!(
        out,
        "{}  {:>8}  {:>8}",
        header("queue"),
        "p50/floor",
        "p99/floor"
    );
    for (queue, h) in &hops {
        let p = Percentiles::of(h);
        let _ = writeln!(
            out,
            "{}  {:>7.2}x  {:>7.2}x",
            row(queue.name(), &p),
            p.p50 as f64 / floor_p.p50.max(1) as f64,
            p.p99 as f64 / floor_p.p99.max(1) as f64
        );
        csv_row(
            &mut csv,
            ["hop", "", "", queue.name(), "push_to_pop"],
            &p,
            ",0",
        );
        write_file(&args.out.join(format!("hop-{}.hgrm", queue.name())), |w| {
            write_hgrm(h, 1000.0, w)
        })?;
    }
    if args.rounds > 1 {
        let _ = writeln!(out, "hop p50 / p99 per round:");
        for (queue, rounds) in &hop_rounds {
            let _ = writeln!(
                out,
                "  {:<10} {}",
                queue.name(),
                rounds
                    .iter()
                    .map(|p| format!("{} / {}", human_ns(p.p50), human_ns(p.p99)))
                    .collect::<Vec<_>>()
                    .join(";  ")
            );
        }
        // The hop goal is per round: ticklane's p50 below each other queue's in the same round.
        if let Some(ours) = hop_rounds.get(&QueueKind::Ticklane) {
            for (other, theirs) in hop_rounds
                .iter()
                .filter(|(q, _)| **q != QueueKind::Ticklane)
            {
                let rounds = ours.len().min(theirs.len());
                let ahead = (0..rounds).filter(|&i| ours[i].p50 < theirs[i].p50).count();
                let _ = writeln!(
                    out,
                    "  ticklane vs {:<9}: hop ahead at p50 in {ahead}/{rounds} rounds",
                    other.name()
                );
            }
        }
    }

    for (&(source, r, queue), cell) in &cells {
        let rate = rates[r];
        let _ = writeln!(
            out,
            "\npipeline {} at {} over {}: {:.2} M msg/s applied, {} of {} applied, lost {}{}{}",
            source.name(),
            rate_label(rate),
            queue.name(),
            cell.applied as f64 / cell.seconds.max(1e-9) / 1e6,
            cell.applied,
            cell.offered,
            cell.lost,
            if cell.late > 0 {
                format!(", {} pushed >1 µs late", cell.late)
            } else {
                String::new()
            },
            if cell.problems.is_empty() {
                String::new()
            } else {
                format!(" PROBLEMS: {}", cell.problems.join("; "))
            }
        );
        let _ = writeln!(out, "{}", header("stage"));
        for (stage, h) in &cell.stages {
            if h.is_empty() {
                continue;
            }
            let p = Percentiles::of(h);
            let _ = writeln!(out, "{}", row(stage, &p));
            let name = format!(
                "{}-{}-{}-{}",
                source.name(),
                rate_label(rate),
                queue.name(),
                stage
            );
            csv_row(
                &mut csv,
                [
                    "pipeline",
                    source.name(),
                    &rate_label(rate),
                    queue.name(),
                    stage,
                ],
                &p,
                &format!(
                    "{:.0},{}",
                    cell.applied as f64 / cell.seconds.max(1e-9),
                    cell.lost
                ),
            );
            write_file(&args.out.join(format!("{name}.hgrm")), |w| {
                write_hgrm(h, 1000.0, w)
            })?;
        }
    }

    // Ticklane against each other queue, round by round, at p50 and p99 end to end.
    if args.queues.contains(&QueueKind::Ticklane) && !cells.is_empty() {
        let _ = writeln!(out, "\nticklane's ring against the others, end to end, round by round (ahead = lower latency):");
        for &source in &args.sources {
            for (r, &rate) in rates.iter().enumerate() {
                let Some(ours) = cells.get(&(source, r, QueueKind::Ticklane)) else {
                    continue;
                };
                for &other in args.queues.iter().filter(|q| **q != QueueKind::Ticklane) {
                    let Some(theirs) = cells.get(&(source, r, other)) else {
                        continue;
                    };
                    let rounds = ours.rounds.len().min(theirs.rounds.len());
                    let ahead = |f: fn(&Percentiles) -> u64| {
                        (0..rounds)
                            .filter(|&i| f(&ours.rounds[i].0) < f(&theirs.rounds[i].0))
                            .count()
                    };
                    let (m_ours, m_theirs) = (
                        Percentiles::of(ours.end_to_end().map_or(&floor_all, |e| e.1)),
                        Percentiles::of(theirs.end_to_end().map_or(&floor_all, |e| e.1)),
                    );
                    let _ = writeln!(
                        out,
                        "  {:<6} {:>4} vs {:<9}: ahead at p50 in {}/{rounds} rounds, at p99 in {}/{rounds}; merged p50 {}, p99 {} of theirs",
                        source.name(),
                        rate_label(rate),
                        other.name(),
                        ahead(|p| p.p50),
                        ahead(|p| p.p99),
                        ratio(m_ours.p50, m_theirs.p50),
                        ratio(m_ours.p99, m_theirs.p99),
                    );
                }
            }
        }
    }

    // The plot: the floor, each queue's hop, and each queue's end to end at the first rate
    // of the first source.
    let mut series = vec![Series {
        name: "floor (ping-pong one way)".into(),
        points: percentile_points(&floor_all),
    }];
    for (queue, h) in &hops {
        series.push(Series {
            name: format!("hop {}", queue.name()),
            points: percentile_points(h),
        });
    }
    if let (Some(&source), Some(&rate)) = (args.sources.first(), rates.first()) {
        for &queue in &args.queues {
            if let Some((stage, h)) = cells.get(&(source, 0, queue)).and_then(Cell::end_to_end) {
                let from = if stage.starts_with("intended") {
                    "intended"
                } else {
                    "receive"
                };
                series.push(Series {
                    name: format!("{} {} {from}→published", source.name(), queue.name()),
                    points: percentile_points(h),
                });
            }
        }
        let title = format!(
            "ticklane latency ({cpus}-CPU machine, {} at {} msg/s, {} rounds)",
            source.name(),
            rate_label(rate),
            args.rounds
        );
        fs::write(args.out.join("latency.svg"), render(&title, &series))
            .context("writing latency.svg")?;
    }
    fs::write(args.out.join("summary.csv"), csv).context("writing summary.csv")?;
    let _ = writeln!(
        out,
        "\nfiles in {}: *.hgrm (values in µs), latency.svg, summary.csv; {:.1} s",
        args.out.display(),
        started.elapsed().as_secs_f64()
    );
    print!("{out}");
    Ok(())
}
