//! The `ticklane` command line: it parses arguments, calls one library function of
//! `ticklane-engine` per command, and prints what comes back through the engine's views. It
//! starts no thread or server itself and holds no logic a test would need without a
//! process; the library depends on nothing here.
//!
//! Exit statuses (`ticklane_engine::views::ExitStatus`): 0 a clean end with nothing lost; 1 a
//! runtime failure; 2 a usage or configuration error (clap's and every `ConfigError`); 3 the
//! command ran to its end but messages were declared lost; 4 a signal's drain outlasted
//! `engine.shutdown_timeout_s`; 130 stopped by a signal (a second signal, or the demo); 141
//! stdout closed. A failure outranks loss.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use ticklane_engine::views::{error_text, ExitStatus};

mod account_command;
mod aeron_publish;
mod aeron_subscribe;
mod arg_values;
mod file_commands;
mod live_commands;
mod snapshot_commands;
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
    /// Manage the subscriber server's accounts file (`[serve] accounts`).
    Account(account_command::AccountArgs),
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
        Some(Command::Replay(args)) => {
            file_commands::replay(&args).or_else(ExitStatus::closed_stdout)
        }
        Some(Command::Gen(args)) => file_commands::generate(&args),
        Some(Command::Book(args)) => {
            snapshot_commands::book(&args).or_else(ExitStatus::closed_stdout)
        }
        Some(Command::Top(args)) => {
            snapshot_commands::top(&args).or_else(ExitStatus::closed_stdout)
        }
        Some(Command::Tail(args)) => file_commands::tail(&args).or_else(ExitStatus::closed_stdout),
        Some(Command::Subscribe(args)) => subscribe_command::subscribe(&args),
        Some(Command::Account(args)) => account_command::account(&args),
    };
    match result {
        Ok(status) => status.into(),
        Err(e) => {
            eprintln!("ticklane: {}", error_text(&e));
            ExitStatus::of_error(e.as_ref()).into()
        }
    }
}
