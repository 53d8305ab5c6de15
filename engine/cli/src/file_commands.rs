//! `ticklane replay`, `gen`, `demo` and `tail`: files and captures through the books.

use std::io;
use std::num::NonZeroUsize;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use ticklane_engine::book::BookConfig;
use ticklane_engine::dbn_out::{DbnSchema, ItchDataset, SessionDate};
use ticklane_engine::parquet_out::ParquetSchema;
use ticklane_engine::pipeline::{Pace, WaitStrategy};
use ticklane_engine::replay::{
    declared_lost_line, replay_demo_day, run_replay, PacedRequest, ReplayRequest,
};
use ticklane_engine::sample::SampleInterval;
use ticklane_engine::tail::{run_tail, SymbolFilter, TailInput};
use ticklane_engine::views::{
    group, write_replay_demo, write_replay_demo_intro, write_replay_run, ExitStatus,
};
use ticklane_sim::{write_itch50_file_profile, GenConfig, Profile};

#[derive(Args, Debug)]
pub struct TailArgs {
    /// The run configuration (feed line, engine, snapshot), as for `run`.
    #[arg(long, required_unless_present = "capture", conflicts_with = "capture")]
    config: Option<PathBuf>,
    /// Play a captured file instead of a live feed.
    #[arg(long)]
    capture: Option<PathBuf>,
    /// With --capture: `max`, `recorded`, or `<N>x`.
    #[arg(long, default_value = "max", requires = "capture")]
    pace: Pace,
    /// Print only these symbols (comma separated).
    #[arg(long, value_parser = super::arg_values::symbols)]
    symbols: Option<String>,
}

#[derive(Args, Debug, Clone, Copy)]
pub struct CapacityArgs {
    /// Most orders live at once.
    #[arg(long, default_value_t = NonZeroUsize::new(BookConfig::default().max_orders).expect("invariant: default > 0"))]
    max_orders: NonZeroUsize,
    /// Most stocks with a book.
    #[arg(long, default_value_t = NonZeroUsize::new(BookConfig::default().max_books).expect("invariant: default > 0"))]
    max_books: NonZeroUsize,
    /// Most price levels on one side of one book.
    #[arg(long, default_value_t = NonZeroUsize::new(BookConfig::default().levels_per_side).expect("invariant: default > 0"))]
    levels_per_side: NonZeroUsize,
}

#[derive(Args, Debug)]
#[command(group = clap::ArgGroup::new("depth_outputs").args(["book_out", "snapshot"]).multiple(true))]
pub struct ReplayArgs {
    /// The input file; its format is detected from its first bytes.
    file: PathBuf,
    /// Write the top-of-book stream (one CSV row per change) here (not with --pace).
    #[arg(long, conflicts_with = "pace")]
    bbo_out: Option<PathBuf>,
    /// Write the final L2 book as CSV here.
    #[arg(long)]
    book_out: Option<PathBuf>,
    /// Levels per side in --book-out (and in --snapshot).
    #[arg(long, default_value = "10", requires = "depth_outputs")]
    depth: NonZeroUsize,
    /// Write the replay as Databento DBN here (zstd when the name ends in `.zst`; not with
    /// --pace).
    #[arg(long, conflicts_with = "pace")]
    dbn_out: Option<PathBuf>,
    /// The DBN schema: mbo, mbp-1, mbp-10, tbbo or trades.
    #[arg(long, default_value = "mbo", requires = "dbn_out")]
    schema: DbnSchema,
    /// The venue's DBN dataset: XNAS.ITCH, XBOS.ITCH (BX) or XPSX.ITCH (PSX); else the one
    /// the input's file name names (NASDAQ, BX, PSX), else XNAS.ITCH.
    #[arg(long, requires = "dbn_out")]
    dataset: Option<ItchDataset>,
    /// The session date (YYYY-MM-DD) for DBN's UTC timestamps (--dbn-out, a DBN
    /// --sample-out); else read from the file name (MMDDYYYY or YYYYMMDD). A DBN input's
    /// rows are stamped in ns since its New York midnight (else the DBN metadata's date).
    #[arg(long)]
    date: Option<SessionDate>,
    /// Sample the depth at every multiple of this interval of ITCH time: 100ms, 1s, 5m, ...
    #[arg(long, requires = "sample_out", conflicts_with = "pace")]
    sample: Option<SampleInterval>,
    /// Write the sampled depth here: CSV, DBN MBP-10 when the name ends in .dbn or .dbn.zst,
    /// Parquet when it ends in .parquet.
    #[arg(long, requires = "sample")]
    sample_out: Option<PathBuf>,
    /// Levels per side in --sample-out (at most 10 in DBN).
    #[arg(long, default_value = "10", requires = "sample")]
    sample_depth: NonZeroUsize,
    /// Write only these stocks' rows in every output (comma separated); the books still
    /// apply every message.
    #[arg(long, conflicts_with = "pace", value_parser = super::arg_values::symbols)]
    symbols: Option<String>,
    /// Write only rows stamped in this window of ITCH time (New York), HH:MM-HH:MM or HH:MM:SS-HH:MM:SS,
    /// start included, end excluded; --book-out is unaffected.
    #[arg(long, conflicts_with = "pace", value_parser = super::arg_values::between)]
    between: Option<String>,
    /// Write the replay as Parquet here (zstd, provenance in the footer; --symbols and
    /// --between choose its rows; not with --pace; from a DBN input, bbo only).
    #[arg(long, conflicts_with = "pace")]
    parquet_out: Option<PathBuf>,
    /// The Parquet view: bbo (the --bbo-out rows, typed) or mbp-10 (DBN's MBP-10 records).
    #[arg(long, default_value = "bbo", requires = "parquet_out")]
    parquet_schema: ParquetSchema,
    /// Write the summary as one JSON object here.
    #[arg(long)]
    summary_json: Option<PathBuf>,
    /// Take each ITCH50 message's length from its type byte (for files whose 2-byte
    /// length prefixes are zero, as RITCH writes them).
    #[arg(long)]
    recover_lengths: bool,
    /// No progress line and no summary on the terminal.
    #[arg(long, short)]
    quiet: bool,
    /// Play the capture through the live pipeline (reader thread, ring, book thread) at
    /// this pace: `max`, `recorded`, or `<N>x` (N times the recorded pace).
    #[arg(long)]
    pace: Option<Pace>,
    /// Spread the stocks over this many book threads (1 = one thread, today's path); the
    /// outputs (--bbo-out, --book-out, --dbn-out, --parquet-out, --sample-out, filtered by
    /// --symbols/--between) are those of one thread. Not with --pace; a DBN input replays
    /// on one thread.
    #[arg(long, default_value_t = 1,
          conflicts_with = "pace",
          value_parser = clap::value_parser!(u8).range(1..))]
    threads: u8,
    /// With --pace: publish the books into this memory-mapped snapshot file.
    #[arg(long, requires = "pace")]
    snapshot: Option<PathBuf>,
    /// With --pace: how the pipeline's threads wait: busy-spin, spin-yield or park.
    #[arg(long, default_value = "spin-yield", requires = "pace",
          value_parser = super::arg_values::wait)]
    wait: WaitStrategy,
    /// With --pace: pin the reader thread to this core (one this process may run on).
    #[arg(long, requires = "pace", value_parser = super::arg_values::core)]
    reader_core: Option<usize>,
    /// With --pace: pin the book thread to this core (one this process may run on).
    #[arg(long, requires = "pace", value_parser = super::arg_values::core)]
    book_core: Option<usize>,
    #[command(flatten)]
    capacity: CapacityArgs,
}

impl CapacityArgs {
    fn books(self) -> BookConfig {
        BookConfig {
            max_orders: self.max_orders.get(),
            max_books: self.max_books.get(),
            levels_per_side: self.levels_per_side.get(),
        }
    }
}

#[derive(Args, Debug)]
pub struct GenArgs {
    /// The file to write.
    out: PathBuf,
    /// Messages in total (at least 1: an empty file is no ITCH day).
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    messages: u64,
    /// Seed: the same seed and options give the same bytes.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Number of stocks [default: 8; 8900 with `--profile full-day`].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    stocks: Option<u16>,
    /// The day's shape: `small` (a few busy stocks, tight books) or `full-day` (a Nasdaq
    /// day: Zipf-like activity, the published message mix, wide books on inactive names).
    #[arg(long, default_value = "small")]
    profile: Profile,
    /// Leave out the hard cases (extreme prices and sizes, reused refs, a mid-day start).
    #[arg(long)]
    no_hard_cases: bool,
    /// Add flow with no matching engine behind it, so books cross.
    #[arg(long)]
    crossing: bool,
}

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Messages in the sample day (at least 1).
    #[arg(long, default_value_t = 2_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    messages: u64,
    /// Stocks in the sample day.
    #[arg(long, default_value_t = 12, value_parser = clap::value_parser!(u16).range(1..))]
    stocks: u16,
}

pub fn replay(args: &ReplayArgs) -> Result<ExitStatus> {
    let c = args.capacity;
    let request = ReplayRequest {
        input: args.file.clone(),
        bbo_out: args.bbo_out.clone(),
        book_out: args.book_out.clone(),
        depth: args.depth.get(),
        dbn_out: args.dbn_out.clone(),
        schema: args.schema,
        dataset: args.dataset,
        date: args.date,
        sample: (args.sample_out.clone())
            .zip(args.sample)
            .map(|(path, interval)| (path, interval, args.sample_depth.get())),
        symbols: args.symbols.clone().unwrap_or_default(),
        between: args.between.clone().unwrap_or_default(),
        parquet_out: args.parquet_out.clone(),
        parquet_schema: args.parquet_schema,
        summary_json: args.summary_json.clone(),
        recover_lengths: args.recover_lengths,
        progress: !args.quiet,
        threads: usize::from(args.threads),
        paced: args.pace.map(|pace| PacedRequest {
            pace,
            snapshot: args.snapshot.clone(),
            wait: args.wait,
            reader_core: args.reader_core,
            book_core: args.book_core,
        }),
        books: c.books(),
        chunks: None,
    };
    let run = run_replay(&request, &mut |note| eprintln!("ticklane: {note}"))?;
    // The summary text ends with the fault, if any: print it once.
    match (&run.summary.error, args.quiet) {
        (Some(e), true) => eprintln!("ticklane: {e}"),
        (None, true) => {}
        (_, false) => write_replay_run(&mut io::stdout().lock(), &run)?,
    }
    if let Some(line) = declared_lost_line(&args.file, &run.summary) {
        eprintln!("ticklane: {line}");
    }
    Ok(run.summary.exit_status())
}

pub fn tail(args: &TailArgs) -> Result<ExitStatus> {
    let filter = SymbolFilter::parse(args.symbols.as_deref().unwrap_or(""));
    let input = match (&args.config, &args.capture) {
        (Some(path), _) => TailInput::Config(path.clone()),
        (None, Some(path)) => TailInput::Capture {
            path: path.clone(),
            pace: args.pace,
        },
        // clap requires one of the two.
        (None, None) => anyhow::bail!("give --config FILE or --capture FILE"),
    };
    let out = io::LineWriter::new(io::stdout());
    let report = run_tail(&input, &filter, out, &mut |note| {
        eprintln!("ticklane tail: {note}");
    })?;
    eprint!("{}", report.to_text());
    Ok(report.exit_status())
}

pub fn generate(args: &GenArgs) -> Result<ExitStatus> {
    let config = GenConfig {
        messages: args.messages,
        seed: args.seed,
        stocks: args.stocks.unwrap_or(args.profile.default_stocks()),
        hard_cases: !args.no_hard_cases,
        crossing: args.crossing,
    };
    let summary = write_itch50_file_profile(&args.out, config, args.profile)?;
    eprintln!(
        "wrote {}: {} messages, {} bytes",
        args.out.display(),
        group(summary.messages),
        group(summary.bytes)
    );
    Ok(ExitStatus::Success)
}

pub fn demo(args: &DemoArgs) -> Result<ExitStatus> {
    write_replay_demo_intro(&mut io::stdout().lock(), args.messages, args.stocks)?;
    let outcome = replay_demo_day(args.messages, args.stocks)?;
    write_replay_demo(&mut io::stdout().lock(), &outcome)?;
    Ok(outcome.summary.exit_status())
}
