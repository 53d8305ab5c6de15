//! `ticklane book` and `ticklane top`: read a live snapshot file from outside the engine.

use std::io::{self, IsTerminal};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use ticklane_engine::views::ExitStatus;
use ticklane_engine::watch::{print_book, print_top, BookRequest, TopRequest};

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
    let request = BookRequest {
        snapshot: args.snapshot.clone(),
        stock: args.stock.clone(),
        csv: args.csv,
        depth: args.depth,
    };
    print_book(&request, io::stdout().lock(), &mut io::stderr().lock())
}

/// `ticklane top --snapshot PATH`.
pub fn top(args: &TopArgs) -> Result<ExitStatus> {
    let request = TopRequest {
        snapshot: args.snapshot.clone(),
        interval: Duration::from_millis(args.interval_ms),
        frames: if args.once { Some(1) } else { args.iterations },
        rows: args.rows,
        clear: !args.once && io::stdout().is_terminal(),
    };
    print_top(&request, io::stdout())
}
