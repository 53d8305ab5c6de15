//! `ticklane book` and `ticklane top`: read a live snapshot file from outside the engine.

use std::collections::HashMap;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use ticklane_engine::book::LevelView;
use ticklane_engine::replay::group;
use ticklane_engine::snapshot::{
    wall_clock_ns, write_snapshot_book_csv, InstrumentState, ReadError, SnapshotHeader,
    SnapshotReader,
};
use ticklane_feed::itch::Nanos;

/// A writer that has not stamped its heartbeat for this long is reported silent: it is
/// expected to stamp it at least every second.
const SILENT_AFTER_NS: u64 = 5_000_000_000;

/// Arguments of `ticklane book`.
#[derive(Args, Debug)]
pub struct BookArgs {
    /// The snapshot file the engine writes.
    #[arg(long)]
    snapshot: PathBuf,
    /// The stock to show (its symbol).
    #[arg(required_unless_present = "csv", conflicts_with = "csv")]
    stock: Option<String>,
    /// Print every book as CSV, in exactly the `replay --book-out` format.
    #[arg(long)]
    csv: bool,
    /// Levels per side (at most the snapshot's own depth; default: all it keeps).
    #[arg(long)]
    depth: Option<usize>,
}

/// Arguments of `ticklane top`.
#[derive(Args, Debug)]
pub struct TopArgs {
    /// The snapshot file the engine writes.
    #[arg(long)]
    snapshot: PathBuf,
    /// Milliseconds between frames.
    #[arg(long, default_value_t = 1000)]
    interval_ms: u64,
    /// Stop after this many frames (default: run until Ctrl-C).
    #[arg(long)]
    iterations: Option<u64>,
    /// Print one frame and exit.
    #[arg(long)]
    once: bool,
    /// Books per frame.
    #[arg(long, default_value_t = 20)]
    rows: usize,
}

/// `ticklane book --snapshot PATH (STOCK | --csv)`.
pub fn book(args: &BookArgs) -> Result<ExitCode> {
    let reader = SnapshotReader::open(&args.snapshot)?;
    let depth = match args.depth {
        Some(asked) if asked > reader.depth() => {
            eprintln!(
                "ticklane: the snapshot keeps {} levels per side; showing {}",
                reader.depth(),
                reader.depth()
            );
            reader.depth()
        }
        Some(asked) => asked,
        None => reader.depth(),
    };
    let stdout = io::stdout().lock();
    if args.csv {
        write_snapshot_book_csv(&reader, depth, BufWriter::new(stdout))?
            .flush()
            .context("writing to stdout")?;
        return Ok(ExitCode::SUCCESS);
    }
    let stock = args.stock.as_deref().unwrap_or_default();
    let Some(slot) = reader.find(stock.as_bytes()) else {
        eprintln!(
            "ticklane: {stock} is not in {} ({} instruments)",
            args.snapshot.display(),
            reader.slots().len()
        );
        return Ok(ExitCode::FAILURE);
    };
    let state = reader
        .read(slot)
        .with_context(|| format!("reading {stock}"))?;
    let mut out = BufWriter::new(stdout);
    write_book_view(&mut out, &reader.header(), &state, depth)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `ticklane top --snapshot PATH`.
pub fn top(args: &TopArgs) -> Result<ExitCode> {
    let reader = SnapshotReader::open(&args.snapshot)?;
    let frames = if args.once { Some(1) } else { args.iterations };
    // Clearing the screen only makes sense on a terminal; piped frames follow each other.
    let clear = !args.once && io::stdout().is_terminal();
    let mut previous: HashMap<u16, u64> = HashMap::new();
    let mut frame = 0u64;
    loop {
        let rows = busiest(&reader, &previous);
        let mut out = BufWriter::new(io::stdout().lock());
        if clear {
            write!(out, "\x1b[H\x1b[2J")?;
        }
        write_top_frame(&mut out, &reader, &rows, args.rows, frame > 0)?;
        out.flush()?;
        drop(out);
        previous = rows
            .iter()
            .filter_map(|r| r.state.as_ref().ok().map(|s| (s.locate.0, s.publishes)))
            .collect();
        frame += 1;
        if frames.is_some_and(|n| frame >= n) {
            return Ok(ExitCode::SUCCESS);
        }
        std::thread::sleep(Duration::from_millis(args.interval_ms));
    }
}

/// A row of `top`: one slot, with its publications since the previous frame.
struct TopRow {
    slot: usize,
    state: Result<InstrumentState, ReadError>,
    /// Publications since the previous frame (all of them on the first frame).
    recent: u64,
}

/// Every slot, busiest first (most publications since the previous frame, then locate).
fn busiest(reader: &SnapshotReader, previous: &HashMap<u16, u64>) -> Vec<TopRow> {
    let mut rows: Vec<TopRow> = reader
        .slots()
        .map(|slot| {
            let state = reader.read(slot);
            let recent = state.as_ref().map_or(0, |s| {
                s.publishes
                    .saturating_sub(previous.get(&s.locate.0).copied().unwrap_or(0))
            });
            TopRow {
                slot,
                state,
                recent,
            }
        })
        .collect();
    rows.sort_by_key(|r| {
        (
            std::cmp::Reverse(r.recent),
            r.state.as_ref().map_or(u16::MAX, |s| s.locate.0),
        )
    });
    rows
}

fn write_top_frame(
    out: &mut impl Write,
    reader: &SnapshotReader,
    rows: &[TopRow],
    limit: usize,
    since_last_frame: bool,
) -> io::Result<()> {
    let header = reader.header();
    writeln!(
        out,
        "ticklane top  {}  {}",
        reader.path().display(),
        header_status(&header)
    )?;
    writeln!(
        out,
        "{:<8} {:>6} {:>12} {:>12} {:>12} {:>12} {:>24} {:>10}  flags",
        "stock",
        "locate",
        "bid qty",
        "bid",
        "ask",
        "ask qty",
        "last trade",
        if since_last_frame {
            "updates"
        } else {
            "updates*"
        }
    )?;
    for row in rows.iter().take(limit) {
        match &row.state {
            Ok(s) => {
                let (bid, ask) = (s.best_bid(), s.best_ask());
                let last = s.last_trade.map_or(String::new(), |t| {
                    format!("{} @ {}", group(u64::from(t.shares)), t.price)
                });
                writeln!(
                    out,
                    "{:<8} {:>6} {:>12} {:>12} {:>12} {:>12} {:>24} {:>10}  {}",
                    String::from_utf8_lossy(s.symbol()),
                    s.locate.0,
                    bid.map_or(String::new(), |l| group(l.qty)),
                    bid.map_or(String::new(), |l| l.price.to_string()),
                    ask.map_or(String::new(), |l| l.price.to_string()),
                    ask.map_or(String::new(), |l| group(l.qty)),
                    last,
                    group(row.recent),
                    slot_flags(s)
                )?;
            }
            Err(e) => writeln!(out, "(slot {}) unreadable: {e}", row.slot)?,
        }
    }
    if !since_last_frame {
        writeln!(
            out,
            "* since the engine started; later frames count since the last frame"
        )?;
    }
    Ok(())
}

/// One book: header, top `depth` levels both sides, last trade, flags.
fn write_book_view(
    out: &mut impl Write,
    header: &SnapshotHeader,
    s: &InstrumentState,
    depth: usize,
) -> io::Result<()> {
    writeln!(
        out,
        "{}  (locate {})  trading state {}  {}",
        String::from_utf8_lossy(s.symbol()),
        s.locate.0,
        s.trading_state
            .map_or("-".to_string(), |b| char::from(b).to_string()),
        slot_flags(s)
    )?;
    writeln!(
        out,
        "feed seq {}  exchange time {}  published {}  ({} updates)",
        s.feed_seq,
        clock_time(s.exchange_ts),
        age(s.updated_ns),
        group(s.publishes)
    )?;
    writeln!(
        out,
        "{:>4}  {:>7} {:>12} {:>12} | {:<12} {:<12} {:>7}",
        "lvl", "orders", "bid qty", "bid", "ask", "ask qty", "orders"
    )?;
    let rows = s.bids.len().max(s.asks.len()).min(depth);
    let cell = |levels: &[LevelView], i: usize| levels.get(i).copied();
    for i in 0..rows {
        let bid = cell(&s.bids, i);
        let ask = cell(&s.asks, i);
        writeln!(
            out,
            "{:>4}  {:>7} {:>12} {:>12} | {:<12} {:<12} {:>7}",
            i + 1,
            bid.map_or(String::new(), |l| l.orders.to_string()),
            bid.map_or(String::new(), |l| group(l.qty)),
            bid.map_or(String::new(), |l| l.price.to_string()),
            ask.map_or(String::new(), |l| l.price.to_string()),
            ask.map_or(String::new(), |l| group(l.qty)),
            ask.map_or(String::new(), |l| l.orders.to_string()),
        )?;
    }
    if rows == 0 {
        writeln!(out, "      (no orders)")?;
    }
    match s.last_trade {
        Some(t) => writeln!(
            out,
            "last trade {} @ {} at {}  ({} trades, {} shares)",
            group(u64::from(t.shares)),
            t.price,
            clock_time(t.timestamp),
            group(s.trades),
            group(s.traded_shares)
        )?,
        None => writeln!(out, "last trade -")?,
    }
    writeln!(out, "snapshot {}", header_status(header))
}

/// The engine-wide state a reader should judge the data by.
fn header_status(h: &SnapshotHeader) -> String {
    let mut status = format!(
        "pid {}  heartbeat {}  {}/{} instruments  depth {}",
        h.writer_pid,
        age(h.heartbeat_ns),
        h.instruments,
        h.slot_capacity,
        h.depth
    );
    if h.behind_ns > 0 {
        status.push_str(&format!("  BEHIND {} ns", group(h.behind_ns)));
    }
    if h.is_stale() {
        status.push_str("  STALE (feed down)");
    }
    if h.is_closed() {
        status.push_str("  CLOSED (writer exited)");
    } else if wall_clock_ns().saturating_sub(h.heartbeat_ns) > SILENT_AFTER_NS {
        status.push_str("  WRITER SILENT (no heartbeat: gone or stuck)");
    }
    status
}

fn slot_flags(s: &InstrumentState) -> String {
    let mut flags = Vec::new();
    if s.flags.is_stale() {
        flags.push("STALE".to_string());
    }
    if s.flags.is_crossed() {
        flags.push("CROSSED".to_string());
    }
    if let Some(since) = s.behind_since_ns {
        flags.push(format!("BEHIND since {}", age(since)));
    }
    flags.join(" ")
}

/// How long ago a wall-clock time (ns since the Unix epoch) was.
fn age(then_ns: u64) -> String {
    let ms = wall_clock_ns().saturating_sub(then_ns) / 1_000_000;
    format!("{}.{:03} s ago", ms / 1000, ms % 1000)
}

/// An ITCH timestamp as a time of day.
fn clock_time(t: Nanos) -> String {
    let s = t.0 / 1_000_000_000;
    format!(
        "{:02}:{:02}:{:02}.{:09}",
        s / 3600,
        s / 60 % 60,
        s % 60,
        t.0 % 1_000_000_000
    )
}
