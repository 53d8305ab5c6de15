//! `ticklane subscribe`: follow symbols on a subscriber server and print every update.

use std::io::{self, Write};
use std::net::SocketAddr;
use std::ops::ControlFlow;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use ticklane_engine::live::install_shutdown;
use ticklane_engine::serve::client::{
    pause_unless_stopped, run_subscriber, ClientConfig, ClientError,
};
use ticklane_engine::views::{write_subscriber_event, ExitStatus};
use ticklane_feed::resilience::BackoffConfig;

/// `ticklane subscribe`.
#[derive(Args, Debug)]
pub struct SubscribeArgs {
    /// The subscriber server (`ticklane run --serve ADDR`, or `[serve] listen`).
    #[arg(long, value_name = "ADDR", value_parser = super::arg_values::destination)]
    pub server: SocketAddr,
    /// Symbols to follow, comma separated (1 to 8 characters each).
    #[arg(long, value_delimiter = ',', required = true, value_parser = super::arg_values::symbol)]
    pub symbols: Vec<String>,
    /// The account to log in as (1 to 16 printable ASCII characters).
    #[arg(long, default_value = "ticklane", value_parser = super::arg_values::account)]
    pub account: String,
    /// The first reconnect's backoff ceiling (ms, at least 1); each one after doubles it.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    pub backoff_base_ms: u64,
    /// The backoff's cap (ms, at least --backoff-base-ms), and the longest server
    /// retry-after honoured: a longer one is reported as maintenance and the command ends.
    #[arg(long, default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub backoff_cap_ms: u64,
    /// Give up after this many failed connection attempts in a row (at least 1).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_attempts: Option<u32>,
}

/// Runs `ticklane subscribe` until a signal, maintenance, or `--max-attempts`.
pub fn subscribe(args: &SubscribeArgs) -> Result<ExitStatus> {
    if args.backoff_cap_ms < args.backoff_base_ms {
        eprintln!(
            "ticklane subscribe: --backoff-cap-ms {} is below --backoff-base-ms {}: the cap \
             bounds every backoff, the first included",
            args.backoff_cap_ms, args.backoff_base_ms
        );
        return Ok(ExitStatus::Usage);
    }
    let stop = install_shutdown()?;
    let config = ClientConfig {
        account: args.account.clone(),
        backoff: BackoffConfig {
            base: Duration::from_millis(args.backoff_base_ms),
            cap: Duration::from_millis(args.backoff_cap_ms),
        },
        max_attempts: args.max_attempts,
        seed: u64::from(std::process::id()),
        ..ClientConfig::new(args.server, args.symbols.clone())
    };
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let mut failed = None;
    let result = run_subscriber(
        &config,
        &stop,
        // A signal during a backoff ends the pause at once, not when the backoff ends.
        &mut |delay| {
            pause_unless_stopped(delay, &stop);
        },
        &mut |event| {
            let written = write_subscriber_event(&mut out, &event).and_then(|()| out.flush());
            match written {
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => {
                    failed = Some(e);
                    ControlFlow::Break(())
                }
            }
        },
    );
    let flushed = out.flush();
    // `… | head` closed stdout: end as the other commands do (141), not as a failure.
    match failed.map_or(flushed, Err) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(ExitStatus::ClosedStdout),
        Err(e) => return Err(e.into()),
        Ok(()) => {}
    }
    match result {
        Ok(()) => Ok(ExitStatus::Interrupted),
        Err(e @ ClientError::Maintenance { .. }) => {
            eprintln!("ticklane subscribe: {e}");
            Ok(ExitStatus::Failure)
        }
        Err(e) => Err(e.into()),
    }
}
