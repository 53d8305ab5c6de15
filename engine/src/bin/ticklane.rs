//! The `ticklane` command line: thin; it parses arguments and calls the library.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use ticklane_engine::book::{BookConfig, Books, Side};
use ticklane_engine::config::RunConfig;
use ticklane_engine::pipeline::{Pace, PipelineConfig, WaitStrategy};
use ticklane_engine::replay::{group, replay_file, replay_paced, ReplayOptions, SnapshotTarget};
use ticklane_engine::tail::{tail_capture, tail_config, SymbolFilter};
use ticklane_feed::itch::Locate;
use ticklane_feed::sim::{write_itch50, GenConfig, GenSummary};

// The binary's own modules live beside it in `bin/ticklane/`; a file directly in `bin/`
// would be taken for a binary of its own.
#[path = "ticklane/live_commands.rs"]
mod live_commands;
#[path = "ticklane/snapshot_commands.rs"]
mod snapshot_commands;

/// ticklane: a low-latency Nasdaq TotalView-ITCH 5.0 price engine.
///
/// With no subcommand it runs the built-in live demo (`ticklane run` without a config): a
/// simulated exchange on loopback feeds the real pipeline.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Replay a captured file (ITCH50, ITCH50.gz, pcap, pcapng) through the books.
    Replay(ReplayArgs),
    /// Write a synthetic, valid ITCH50 file (gzipped if OUT ends in .gz).
    Gen(GenArgs),
    /// Run a feed line (`--config FILE`) into the snapshot; without a config, the live demo.
    Run(live_commands::RunArgs),
    /// The exchange simulator: serve a file or a generated day as MoldUDP64 and/or SoupBinTCP.
    Sim(live_commands::SimArgs),
    /// Record a MoldUDP64 line's packets to a pcap file.
    Record(live_commands::RecordArgs),
    /// The replay demo: generate a sample day and replay it through the books.
    Demo(DemoArgs),
    /// Print one book, or every book as `--book-out` CSV, from a live snapshot file.
    Book(snapshot_commands::BookArgs),
    /// A live view of the busiest books in a snapshot file.
    Top(snapshot_commands::TopArgs),
    /// Run the engine with a printing consumer on its update stream (quotes, levels,
    /// trades, trading states; refreshes when the terminal falls behind).
    Tail(TailArgs),
}

#[derive(Args, Debug)]
struct TailArgs {
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
    #[arg(long, default_value = "")]
    symbols: String,
}

#[derive(Args, Debug, Clone, Copy)]
struct CapacityArgs {
    /// Most orders live at once.
    #[arg(long, default_value_t = BookConfig::default().max_orders)]
    max_orders: usize,
    /// Most stocks with a book.
    #[arg(long, default_value_t = BookConfig::default().max_books)]
    max_books: usize,
    /// Most price levels on one side of one book.
    #[arg(long, default_value_t = BookConfig::default().levels_per_side)]
    levels_per_side: usize,
}

impl CapacityArgs {
    fn config(self) -> Result<BookConfig> {
        anyhow::ensure!(
            self.max_orders > 0 && self.max_books > 0 && self.levels_per_side > 0,
            "capacities must be at least 1"
        );
        Ok(BookConfig {
            max_orders: self.max_orders,
            max_books: self.max_books,
            levels_per_side: self.levels_per_side,
        })
    }
}

#[derive(Args, Debug)]
struct ReplayArgs {
    /// The input file; its format is detected from its first bytes.
    file: PathBuf,
    /// Write the top-of-book stream (one CSV row per change) here.
    #[arg(long)]
    bbo_out: Option<PathBuf>,
    /// Write the final L2 book as CSV here.
    #[arg(long)]
    book_out: Option<PathBuf>,
    /// Levels per side in --book-out.
    #[arg(long, default_value_t = 10)]
    depth: usize,
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
    /// With --pace: publish the books into this memory-mapped snapshot file.
    #[arg(long, requires = "pace")]
    snapshot: Option<PathBuf>,
    #[command(flatten)]
    threads: ThreadArgs,
    #[command(flatten)]
    capacity: CapacityArgs,
}

/// Threads of the pipeline (`--pace`, `run`).
#[derive(Args, Debug, Clone, Copy)]
struct ThreadArgs {
    /// How the pipeline's threads wait: busy-spin, spin-yield or park.
    #[arg(long, default_value = "spin-yield")]
    wait: WaitStrategy,
    /// Pin the reader thread to this core.
    #[arg(long)]
    reader_core: Option<usize>,
    /// Pin the book thread to this core.
    #[arg(long)]
    book_core: Option<usize>,
}

impl ThreadArgs {
    fn pipeline(self, books: BookConfig) -> PipelineConfig {
        PipelineConfig {
            wait: self.wait,
            reader_core: self.reader_core,
            book_core: self.book_core,
            books,
            ..PipelineConfig::default()
        }
    }
}

#[derive(Args, Debug)]
struct GenArgs {
    /// The file to write.
    out: PathBuf,
    /// Messages in total.
    #[arg(long, default_value_t = 1_000_000)]
    messages: u64,
    /// Seed: the same seed and options give the same bytes.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Number of stocks.
    #[arg(long, default_value_t = 8)]
    stocks: u16,
    /// Leave out the hard cases (extreme prices and sizes, reused refs, a mid-day start).
    #[arg(long)]
    no_hard_cases: bool,
    /// Add flow with no matching engine behind it, so books cross.
    #[arg(long)]
    crossing: bool,
}

#[derive(Args, Debug)]
struct DemoArgs {
    /// Messages in the sample day.
    #[arg(long, default_value_t = 2_000_000)]
    messages: u64,
    /// Stocks in the sample day.
    #[arg(long, default_value_t = 12)]
    stocks: u16,
}

/// `ticklane … | head` closes stdout early. Rust ignores SIGPIPE, so the next `println!`
/// panics; end quietly instead, with the status a SIGPIPE death would give (128 + 13), the
/// way `cat` or `grep` do. Restoring SIGPIPE itself would take `libc` and `unsafe` here.
fn exit_quietly_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.contains("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}

fn main() -> ExitCode {
    exit_quietly_on_closed_stdout();
    let cli = Cli::parse();
    let result = match cli.command {
        None => live_commands::run(&live_commands::RunArgs {
            config: None,
            messages: 1_000_000,
            rate: 1_000_000,
            drop: 0.002,
        }),
        Some(Command::Run(args)) => live_commands::run(&args),
        Some(Command::Sim(args)) => live_commands::sim(&args),
        Some(Command::Record(args)) => live_commands::record(&args),
        Some(Command::Demo(args)) => demo(&args),
        Some(Command::Replay(args)) => replay(&args),
        Some(Command::Gen(args)) => generate(&args).map(|()| ExitCode::SUCCESS),
        Some(Command::Book(args)) => snapshot_commands::book(&args),
        Some(Command::Top(args)) => snapshot_commands::top(&args),
        Some(Command::Tail(args)) => tail(&args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("ticklane: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn replay(args: &ReplayArgs) -> Result<ExitCode> {
    let opts = ReplayOptions {
        input: args.file.clone(),
        bbo_out: args.bbo_out.clone(),
        book_out: args.book_out.clone(),
        depth: args.depth,
        summary_json: args.summary_json.clone(),
        recover_lengths: args.recover_lengths,
        books: args.capacity.config()?,
        progress: !args.quiet,
    };
    let summary = match args.pace {
        None => replay_file(&opts)?.summary,
        Some(pace) => {
            anyhow::ensure!(
                args.bbo_out.is_none(),
                "--bbo-out is written by the unpaced replay; drop --pace for it"
            );
            let target = args.snapshot.as_ref().map(|path| SnapshotTarget {
                path: path.clone(),
                capacity: 16_384,
                depth: args.depth.clamp(1, 64),
            });
            let pipeline = args.threads.pipeline(opts.books);
            let outcome = replay_paced(&opts, pace, pipeline, target.as_ref())?;
            if !args.quiet {
                for (name, p) in &outcome.latency {
                    println!("  {name:<22} {}", p.to_line());
                }
                if let Some(c) = &outcome.overload {
                    println!("  overload               {}", c.to_text());
                }
            }
            outcome.summary
        }
    };
    let summary = &summary;
    if !args.quiet {
        print!("{}", summary.to_text());
    }
    if let Some(e) = &summary.error {
        eprintln!("ticklane: {e}");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

fn tail(args: &TailArgs) -> Result<ExitCode> {
    let filter = SymbolFilter::parse(&args.symbols);
    let out = std::io::LineWriter::new(std::io::stdout());
    let report = match (&args.config, &args.capture) {
        (Some(path), _) => {
            let config = RunConfig::load(path)?;
            tail_config(&config, &filter, out)?
        }
        (None, Some(path)) => {
            tail_capture(path, args.pace, PipelineConfig::default(), &filter, out)
                .with_context(|| format!("{}", path.display()))?
        }
        (None, None) => anyhow::bail!("give --config FILE or --capture FILE"),
    };
    eprintln!(
        "ticklane tail: {} messages, {} lines, resubscribed {}; overload: {}",
        group(report.messages),
        group(report.printed),
        report.resubscribed,
        report.counters.to_text()
    );
    Ok(ExitCode::SUCCESS)
}

fn gen_config(args: &GenArgs) -> GenConfig {
    GenConfig {
        messages: args.messages,
        seed: args.seed,
        stocks: args.stocks.max(1),
        hard_cases: !args.no_hard_cases,
        crossing: args.crossing,
    }
}

fn generate(args: &GenArgs) -> Result<()> {
    let summary = write_file(args)?;
    eprintln!(
        "wrote {}: {} messages, {} bytes",
        args.out.display(),
        group(summary.messages),
        group(summary.bytes)
    );
    Ok(())
}

fn write_file(args: &GenArgs) -> Result<GenSummary> {
    let file = File::create(&args.out).with_context(|| format!("{}", args.out.display()))?;
    let config = gen_config(args);
    let gzip = args.out.extension().is_some_and(|e| e == "gz");
    let summary = if gzip {
        let mut out =
            flate2::write::GzEncoder::new(BufWriter::new(file), flate2::Compression::fast());
        let s = write_itch50(config, &mut out)?;
        out.finish()?.flush()?;
        s
    } else {
        let mut out = BufWriter::new(file);
        let s = write_itch50(config, &mut out)?;
        out.flush()?;
        s
    };
    Ok(summary)
}

fn demo(args: &DemoArgs) -> Result<ExitCode> {
    let path = std::env::temp_dir().join(format!("ticklane-demo-{}.itch50", std::process::id()));
    println!(
        "ticklane demo: generating a synthetic ITCH 5.0 day ({} messages, {} stocks, seed 1)",
        group(args.messages),
        args.stocks
    );
    write_file(&GenArgs {
        out: path.clone(),
        messages: args.messages,
        seed: 1,
        stocks: args.stocks,
        no_hard_cases: false,
        crossing: false,
    })?;
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
    print!("{}", outcome.summary.to_text());
    print_tops(&outcome.books, 4, 3);
    println!(
        "\nNext: `ticklane replay FILE --bbo-out bbo.csv --book-out book.csv` on your own capture."
    );
    Ok(if outcome.summary.error.is_some() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The top `levels` levels of the first `count` books, side by side.
fn print_tops(books: &Books, count: usize, levels: usize) {
    for locate in books.locates().into_iter().take(count) {
        print_book(books, locate, levels);
    }
}

fn print_book(books: &Books, locate: Locate, levels: usize) {
    let symbol = String::from_utf8_lossy(books.symbol(locate)).into_owned();
    println!("\n  {symbol:<8} (locate {})         bid | ask", locate.0);
    let bids: Vec<_> = books
        .side(locate, Side::Bid)
        .map(|l| l.best_first().take(levels).collect())
        .unwrap_or_default();
    let asks: Vec<_> = books
        .side(locate, Side::Ask)
        .map(|l| l.best_first().take(levels).collect())
        .unwrap_or_default();
    for i in 0..levels {
        let bid = bids
            .get(i)
            .map(|l| {
                format!(
                    "{:>12} {:>12} ({:>3})",
                    group(l.qty),
                    l.price.to_string(),
                    l.orders
                )
            })
            .unwrap_or_default();
        let ask = asks
            .get(i)
            .map(|l| {
                format!(
                    "{:<12} {:<12} ({:>3})",
                    l.price.to_string(),
                    group(l.qty),
                    l.orders
                )
            })
            .unwrap_or_default();
        println!("  {bid:>32} | {ask}");
    }
}
