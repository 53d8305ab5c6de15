//! `ticklane replay`, `gen`, `demo` and `tail`: files and captures through the books.

use std::io::{self, Write};
use std::num::NonZeroUsize;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use ticklane_engine::book::{BookConfig, Books};
use ticklane_engine::config::{FeedConfig, RunConfig};
use ticklane_engine::dbn_out::{DbnOutOptions, DbnSchema, ItchDataset, SessionDate};
use ticklane_engine::output_filter::OutputFilter;
use ticklane_engine::parquet_out::{ParquetOutOptions, ParquetSchema};
use ticklane_engine::pipeline::{Pace, PipelineConfig, WaitStrategy};
use ticklane_engine::replay::{
    check_output_paths, is_dbn_input, refuse_what_needs_itch, replay_file, replay_file_threaded,
    replay_paced, ReplayError, ReplayOptions, SnapshotTarget,
};
use ticklane_engine::sample::{is_dbn_path, SampleInterval, SampleOptions};
use ticklane_engine::tail::{tail_capture, tail_config, SymbolFilter};
use ticklane_engine::views::{group, write_tops, ExitStatus, NO_REQUEST_SERVER};
use ticklane_feed::itch::Locate;
use ticklane_sim::{
    write_itch50_file, write_itch50_file_profile, GenConfig, Profile, FULL_DAY_STOCKS,
};

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
    // Before anything is opened: an output over the input truncates what is being read.
    let outputs = [
        ("--bbo-out", &args.bbo_out),
        ("--book-out", &args.book_out),
        ("--summary-json", &args.summary_json),
        ("--dbn-out", &args.dbn_out),
        ("--sample-out", &args.sample_out),
        ("--parquet-out", &args.parquet_out),
        ("--snapshot", &args.snapshot),
    ];
    let outputs: Vec<_> = outputs
        .iter()
        .filter_map(|(flag, path)| Some((*flag, path.as_deref()?)))
        .collect();
    check_output_paths(&args.file, &outputs).map_err(ReplayError::from)?;
    if let Some(unwritable) = unwritable_output(&outputs) {
        eprintln!("ticklane: {unwritable}");
        return Ok(ExitStatus::Usage);
    }
    let filter = OutputFilter::parse(
        args.symbols.as_deref().unwrap_or(""),
        args.between.as_deref().unwrap_or(""),
    )?;
    // A DBN input refuses the ITCH-only outputs before any date is looked for (the reason is
    // the input, not a missing --date), and brings its own session date (its metadata).
    refuse_what_needs_itch(
        &args.file,
        args.dbn_out.is_some(),
        args.parquet_out
            .as_deref()
            .map(|p| (p, args.parquet_schema)),
    )?;
    let dbn_input = is_dbn_input(&args.file);
    if dbn_input && args.threads > 1 {
        // Said, not refused: the outputs are the same either way, only slower.
        eprintln!(
            "ticklane: note: a DBN input replays on one book thread; --threads {} is not used",
            args.threads
        );
    }
    let session_date = || match args.date {
        Some(date) => Ok(date),
        None => SessionDate::from_file_name(&args.file),
    };
    let opts = ReplayOptions {
        input: args.file.clone(),
        bbo_out: args.bbo_out.clone(),
        book_out: args.book_out.clone(),
        depth: args.depth.get(),
        summary_json: args.summary_json.clone(),
        recover_lengths: args.recover_lengths,
        books: BookConfig {
            max_orders: c.max_orders.get(),
            max_books: c.max_books.get(),
            levels_per_side: c.levels_per_side.get(),
        },
        progress: !args.quiet,
        dbn_out: match &args.dbn_out {
            None => None,
            Some(path) => Some(DbnOutOptions {
                path: path.clone(),
                schema: args.schema,
                date: session_date()?,
                dataset: args
                    .dataset
                    .or_else(|| ItchDataset::from_file_name(&args.file))
                    .unwrap_or_default(),
            }),
        },
        sample: match (&args.sample_out, args.sample) {
            (Some(path), Some(interval)) => Some(SampleOptions {
                path: path.clone(),
                interval,
                depth: args.sample_depth.get(),
                // A DBN input's replay dates its samples by its own session.
                date: if is_dbn_path(path) && !dbn_input {
                    Some(session_date()?)
                } else {
                    None
                },
            }),
            _ => None,
        },
        filter: filter.clone(),
        date: args.date,
        parquet_out: match &args.parquet_out {
            None => None,
            Some(path) => Some(ParquetOutOptions {
                path: path.clone(),
                schema: args.parquet_schema,
                date: match (args.parquet_schema, args.date) {
                    (ParquetSchema::Bbo, _) => None,
                    (ParquetSchema::Mbp10, Some(date)) => Some(date),
                    (ParquetSchema::Mbp10, None) => Some(SessionDate::from_file_name(&args.file)?),
                },
            }),
        },
    };
    let summary = match args.pace {
        None if args.threads > 1 => {
            let outcome = replay_file_threaded(&opts, usize::from(args.threads))
                .map_err(|e| name_the_output(e, &outputs))?;
            if outcome.summary.error.is_none() {
                warn_unlisted_symbols(&filter, &outcome.books);
            }
            if outcome.summary.declared_lost_messages() > 0 {
                eprintln!(
                    "ticklane: warning: --threads {}: after a declared loss the outputs may \
                     depart from one thread's (an add reusing a reference whose delete was \
                     lost is applied by its own stock's thread, where one thread rejects it); \
                     --threads 1 keeps one set of books",
                    args.threads
                );
            }
            outcome.summary
        }
        None => {
            let outcome = replay_file(&opts).map_err(|e| name_the_output(e, &outputs))?;
            if outcome.summary.error.is_none() {
                warn_unlisted_symbols(&filter, std::slice::from_ref(&outcome.books));
            }
            outcome.summary
        }
        Some(pace) => {
            let target = args.snapshot.as_ref().map(|path| SnapshotTarget {
                path: path.clone(),
                capacity: 16_384,
                depth: args.depth.get().min(64),
            });
            let pipeline = PipelineConfig {
                wait: args.wait,
                reader_core: args.reader_core,
                book_core: args.book_core,
                books: opts.books,
                ..PipelineConfig::default()
            };
            let outcome = replay_paced(&opts, pace, pipeline, target.as_ref())
                .map_err(|e| name_the_output(e, &outputs))?;
            if !args.quiet {
                // A stage with no samples (intended times at `--pace max`, where nothing is
                // scheduled) says nothing rather than a line of zeros.
                for (name, p) in outcome.latency.iter().filter(|(_, p)| p.count > 0) {
                    println!("  {name:<22} {}", p.to_line());
                }
                if let Some(c) = &outcome.overload {
                    println!("  overload               {}", c.to_text());
                }
            }
            outcome.summary
        }
    };
    // The summary text ends with the fault, if any: print it once.
    if args.quiet {
        if let Some(e) = &summary.error {
            eprintln!("ticklane: {e}");
        }
    } else {
        print!("{}", summary.to_text());
    }
    // Exit status 3 is said on stderr too, -q or not: a caller that keeps only stderr (or
    // ran with -q) learns why the status is not 0.
    if summary.exit_status() == ExitStatus::DeclaredLost {
        let gaps = summary.packets.as_ref().map_or(0, |p| p.gaps);
        eprintln!(
            "ticklane: {}: {} messages declared lost in {} sequence gaps (exit 3; the summary \
             lists the ranges)",
            args.file.display(),
            group(summary.declared_lost_messages()),
            group(gaps)
        );
    }
    Ok(summary.exit_status())
}

/// The first output that names a folder, or whose folder does not exist, said with its
/// flag: every output is created only after the input is read, so this is told before
/// anything runs.
fn unwritable_output(outputs: &[(&str, &std::path::Path)]) -> Option<String> {
    outputs.iter().find_map(|&(flag, path)| {
        if path.is_dir() {
            return Some(format!(
                "{flag} {}: is a folder; name a file in it",
                path.display()
            ));
        }
        let folder = path.parent().filter(|p| !p.as_os_str().is_empty())?;
        (!folder.is_dir()).then(|| {
            format!(
                "{flag} {}: the folder {} does not exist",
                path.display(),
                folder.display()
            )
        })
    })
}

/// An output that could not be created or written, named by its flag as well as its path.
fn name_the_output(
    error: ReplayError,
    outputs: &[(&'static str, &std::path::Path)],
) -> anyhow::Error {
    let flag = match &error {
        ReplayError::Output { path, .. } => outputs
            .iter()
            .find(|(_, p)| *p == path.as_path())
            .map(|(flag, _)| *flag),
        ReplayError::Snapshot(_) => Some("--snapshot"),
        ReplayError::Sample(_) => Some("--sample-out"),
        _ => None,
    };
    match flag {
        Some(flag) if !error.to_string().contains(flag) => anyhow::Error::new(error).context(flag),
        _ => error.into(),
    }
}

/// `--symbols` that the input's stock directory never listed: a warning (even with -q), not
/// an error, since one list serves many days and a stock may not trade on one of them (an
/// IPO, a delisting); the warning shows a typo.
fn warn_unlisted_symbols(filter: &OutputFilter, parts: &[Books]) {
    if !filter.has_symbols() {
        return;
    }
    let listed: std::collections::HashSet<&[u8]> = parts
        .iter()
        .flat_map(|books| (0..=u16::MAX).map(|l| books.symbol(Locate(l))))
        .filter(|s| !s.is_empty())
        .collect();
    let missing: Vec<String> = filter
        .symbols()
        .into_iter()
        .filter(|s| !listed.contains(s.as_bytes()))
        .collect();
    if !missing.is_empty() {
        eprintln!(
            "ticklane: warning: --symbols {}: not in the input's stock directory; their rows are empty",
            missing.join(",")
        );
    }
}

pub fn tail(args: &TailArgs) -> Result<ExitStatus> {
    let filter = SymbolFilter::parse(args.symbols.as_deref().unwrap_or(""));
    let out = io::LineWriter::new(io::stdout());
    let report = if let Some(path) = &args.config {
        let config = RunConfig::load(path)?;
        // Converted here first, so a bad value reaches the edge as a ConfigError (exit 2)
        // rather than inside the io::Error that tail_config returns.
        config.pipeline()?;
        if matches!(config.feed_config()?, FeedConfig::Mold(c) if c.request_server.is_none()) {
            eprintln!("ticklane tail: {}: {NO_REQUEST_SERVER}", path.display());
        }
        tail_config(&config, &filter, out)?
    } else {
        // clap requires one of the two.
        let path = args
            .capture
            .as_ref()
            .context("give --config FILE or --capture FILE")?;
        tail_capture(path, args.pace, PipelineConfig::default(), &filter, out)
            .with_context(|| format!("{}", path.display()))?
    };
    eprint!("{}", report.to_text());
    Ok(if report.input_error.is_some() {
        ExitStatus::Failure
    } else {
        ExitStatus::of_loss(report.declared_lost)
    })
}

pub fn generate(args: &GenArgs) -> Result<ExitStatus> {
    let default_stocks = match args.profile {
        Profile::Small => 8,
        Profile::FullDay => FULL_DAY_STOCKS,
    };
    let config = GenConfig {
        messages: args.messages,
        seed: args.seed,
        stocks: args.stocks.unwrap_or(default_stocks),
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
    let path = std::env::temp_dir().join(format!("ticklane-demo-{}.itch50", std::process::id()));
    println!(
        "ticklane demo: generating a synthetic ITCH 5.0 day ({} messages, {} stocks, seed 1)",
        group(args.messages),
        args.stocks
    );
    let day = GenConfig {
        messages: args.messages,
        seed: 1,
        stocks: args.stocks,
        hard_cases: true,
        crossing: false,
    };
    write_itch50_file(&path, day)?;
    let opts = ReplayOptions {
        input: path.clone(),
        depth: 5,
        books: BookConfig {
            max_orders: 1 << 20,
            ..BookConfig::default()
        },
        progress: true,
        ..ReplayOptions::default()
    };
    let outcome = replay_file(&opts);
    let _ = std::fs::remove_file(&path);
    let outcome = outcome?;
    let mut out = io::stdout().lock();
    write!(out, "{}", outcome.summary.to_text())?;
    write_tops(&mut out, &outcome.books, 4, 3)?;
    writeln!(
        out,
        "\nNext: `ticklane replay FILE --bbo-out bbo.csv --book-out book.csv` on your own capture."
    )?;
    Ok(outcome.summary.exit_status())
}
