//! The `ticklane` command line: thin; it parses arguments, calls the library and prints.
//!
//! Exit statuses (`ticklane_engine::views::ExitStatus`): 0 a clean end with nothing lost; 1 a
//! runtime failure; 2 a usage or configuration error (clap's and every `ConfigError`); 3 the
//! command ran to its end but messages were declared lost; 4 a signal's drain outlasted
//! `engine.shutdown_timeout_s`; 130 stopped by a signal (a second signal, or the demo); 141
//! stdout closed. A failure outranks loss.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use ticklane_engine::views::ExitStatus;

// The binary's own modules live beside it in `bin/ticklane/`; a file directly in `bin/`
// would be taken for a binary of its own.
#[path = "ticklane/arg_values.rs"]
mod arg_values;
#[path = "ticklane/file_commands.rs"]
mod file_commands;
#[path = "ticklane/live_commands.rs"]
mod live_commands;
#[path = "ticklane/snapshot_commands.rs"]
mod snapshot_commands;
#[path = "ticklane/subscribe_command.rs"]
mod subscribe_command;

/// ticklane: a low-latency Nasdaq TotalView-ITCH 5.0 price engine.
///
/// With no subcommand it runs the built-in live demo (`ticklane run` without a config): a
/// simulated exchange on loopback feeds the real pipeline.
#[derive(Parser, Debug)]
#[command(
    version,
    about,
    after_help = "Exit status: 0 clean end with nothing lost, 1 runtime failure, 2 usage or \
                  configuration error, 3 messages declared lost (the summary lists the \
                  ranges; a failure outranks it), 4 a signal's drain outlasted \
                  engine.shutdown_timeout_s, 130 stopped by a signal (a second signal, or \
                  the demo), 141 stdout closed."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Replay a captured file (ITCH50, ITCH50.gz, pcap, pcapng, Databento DBN MBO[.zst]) through the books.
    Replay(file_commands::ReplayArgs),
    /// Write a synthetic, valid ITCH50 file (gzipped if OUT ends in .gz).
    Gen(file_commands::GenArgs),
    /// Run a feed line (`--config FILE`) into the snapshot; without a config, the live demo.
    Run(live_commands::RunArgs),
    /// The exchange simulator: serve a file or a generated day as MoldUDP64 and/or SoupBinTCP.
    Sim(live_commands::SimArgs),
    /// Record a MoldUDP64 line's packets to a pcap file.
    Record(live_commands::RecordArgs),
    /// The replay demo: generate a sample day and replay it through the books.
    Demo(file_commands::DemoArgs),
    /// Print one book, or every book as `--book-out` CSV, from a live snapshot file.
    Book(snapshot_commands::BookArgs),
    /// A live view of the busiest books in a snapshot file.
    Top(snapshot_commands::TopArgs),
    /// Run the engine with a printing consumer on its update stream (quotes, levels,
    /// trades, trading states; refreshes when the terminal falls behind).
    Tail(file_commands::TailArgs),
    /// Follow symbols on a subscriber server (`run --serve`) and print every update;
    /// reconnects with backoff and full jitter, honouring the server's retry-after.
    Subscribe(subscribe_command::SubscribeArgs),
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
            std::process::exit(ExitStatus::ClosedStdout.code().into());
        }
        default(info);
    }));
}

fn main() -> ExitCode {
    exit_quietly_on_closed_stdout();
    let result = match Cli::parse().command {
        None => live_commands::run(&live_commands::RunArgs::demo()),
        Some(Command::Run(args)) => live_commands::run(&args),
        Some(Command::Sim(args)) => live_commands::sim(&args),
        Some(Command::Record(args)) => live_commands::record(&args),
        Some(Command::Demo(args)) => file_commands::demo(&args),
        Some(Command::Replay(args)) => file_commands::replay(&args).or_else(stdout_closed),
        Some(Command::Gen(args)) => file_commands::generate(&args),
        Some(Command::Book(args)) => snapshot_commands::book(&args).or_else(stdout_closed),
        Some(Command::Top(args)) => snapshot_commands::top(&args).or_else(stdout_closed),
        Some(Command::Tail(args)) => file_commands::tail(&args).or_else(stdout_closed),
        Some(Command::Subscribe(args)) => subscribe_command::subscribe(&args),
    };
    match result {
        Ok(status) => status.into(),
        Err(e) => {
            eprintln!("ticklane: {}", error_text(&e));
            ExitStatus::of_error(e.as_ref()).into()
        }
    }
}

/// For a command whose output is stdout or may be a pipe (`book`, `top`, `tail`, `replay`
/// with an output on `/dev/stdout` or a FIFO; a feed line's own disconnects are handled
/// inside it, never returned): a broken pipe is `… | head` having read enough, which ends
/// as a SIGPIPE death reports it (141), not as a failure.
fn stdout_closed(error: anyhow::Error) -> anyhow::Result<ExitStatus> {
    let broken_pipe = error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    });
    if broken_pipe {
        Ok(ExitStatus::ClosedStdout)
    } else {
        Err(error)
    }
}

/// The error and its causes, each cause said once: many of our errors already end with
/// their source's text (`{path}: {source}`), which `{:#}` would print again.
fn error_text(error: &anyhow::Error) -> String {
    let mut text = error.to_string();
    for cause in error.chain().skip(1) {
        let said = cause.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
    }
    text
}
