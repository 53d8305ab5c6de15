//! `ticklane book` and `ticklane top`: read a live snapshot file from outside the engine.

use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use ticklane_engine::csv::export_snapshot_book_csv;
use ticklane_engine::snapshot::{wall_clock_ns, SnapshotReader};
use ticklane_engine::views::{
    book_csv_warning, write_book_view, write_top_frame, ExitStatus, TopFrames,
};

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
    /// Levels per side (1 to the snapshot's own depth; default: all it keeps).
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
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
    /// Books per frame (at least 1).
    #[arg(long, default_value_t = 20, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    rows: usize,
}

/// `ticklane book --snapshot PATH (STOCK | --csv)`.
pub fn book(args: &BookArgs) -> Result<ExitStatus> {
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
        // Every readable book is written; a torn slot is named and fails the command.
        let mut export = export_snapshot_book_csv(&reader, depth, BufWriter::new(stdout))?;
        export.sink.flush().context("writing to stdout")?;
        for slot in &export.unreadable {
            eprintln!("ticklane: {slot}");
        }
        if let Some(warning) = book_csv_warning(&reader.header(), &export.flagged, wall_clock_ns())
        {
            eprintln!("ticklane: warning: {}: {warning}", args.snapshot.display());
        }
        return Ok(if export.unreadable.is_empty() {
            ExitStatus::Success
        } else {
            ExitStatus::Failure
        });
    }
    let stock = args.stock.as_deref().unwrap_or_default();
    let Some(slot) = reader.find(stock.as_bytes()) else {
        eprintln!(
            "ticklane: {stock} is not in {} ({} instruments)",
            args.snapshot.display(),
            reader.slots().len()
        );
        return Ok(ExitStatus::Failure);
    };
    let state = reader
        .read(slot)
        .with_context(|| format!("reading {stock}"))?;
    let mut out = BufWriter::new(stdout);
    write_book_view(&mut out, &reader.header(), &state, depth, wall_clock_ns())?;
    out.flush()?;
    Ok(ExitStatus::Success)
}

/// `ticklane top --snapshot PATH`.
pub fn top(args: &TopArgs) -> Result<ExitStatus> {
    let mut reader = SnapshotReader::open(&args.snapshot)?;
    let frames = if args.once { Some(1) } else { args.iterations };
    // Clearing the screen only makes sense on a terminal; piped frames follow each other.
    let clear = !args.once && io::stdout().is_terminal();
    let mut top = TopFrames::new();
    let mut shown = 0u64;
    loop {
        // A restarted writer renames a new file over the path: follow it, or the frames
        // would show the dead writer's books for good.
        let mut notice = None;
        let old_pid = reader.header().writer_pid;
        match reader.reopen_if_replaced() {
            Ok(false) => {}
            Ok(true) => {
                // Publication counts start again in the new file.
                top = TopFrames::new();
                notice = Some(format!(
                    "reopened: a new writer (pid {}, was {old_pid}) replaced the file",
                    reader.header().writer_pid
                ));
            }
            Err(e) => {
                notice = Some(format!(
                    "the file was replaced but cannot be opened ({e}); showing the old one"
                ));
            }
        }
        let first = top.frames() == 0;
        let rows = top.read(&reader);
        shown += 1;
        let mut out = BufWriter::new(io::stdout().lock());
        if clear {
            write!(out, "\x1b[H\x1b[2J")?;
        }
        if let Some(notice) = notice {
            writeln!(out, "ticklane top: {notice}")?;
        }
        let (path, header) = (reader.path(), reader.header());
        write_top_frame(
            &mut out,
            path,
            &header,
            &rows,
            args.rows,
            !first,
            wall_clock_ns(),
        )?;
        out.flush()?;
        if frames.is_some_and(|n| shown >= n) {
            return Ok(ExitStatus::Success);
        }
        std::thread::sleep(Duration::from_millis(args.interval_ms));
    }
}
