//! `ticklane subscribe`: follow symbols on a subscriber server and print every update.

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use ticklane_engine::serve::client::{ClientConfig, ClientTls};
use ticklane_engine::serve::protocol::{Secret, MAX_SECRET};
use ticklane_engine::serve::tls::{client_config, server_name};
use ticklane_engine::views::ExitStatus;
use ticklane_engine::watch::{print_subscriber_updates, BookOut};
use ticklane_feed::resilience::BackoffConfig;

/// `ticklane subscribe`.
#[derive(Args, Debug)]
pub struct SubscribeArgs {
    /// The subscriber server (`ticklane run --serve ADDR`, or `[serve] listen`).
    #[arg(long, value_name = "ADDR", value_parser = super::arg_values::destination,
          required_unless_present = "aeron", conflicts_with = "aeron")]
    pub server: Option<SocketAddr>,
    /// Symbols to follow, comma separated (1 to 8 characters each); with --aeron, every
    /// symbol when absent.
    #[arg(long, value_delimiter = ',', required_unless_present = "aeron",
          value_parser = super::arg_values::symbol)]
    pub symbols: Vec<String>,
    /// Follow the Aeron stream `run --aeron CHANNEL` publishes instead of a server (a
    /// build with the `aeron` feature), e.g. `aeron:udp?endpoint=0.0.0.0:40456`.
    #[arg(long, value_name = "CHANNEL")]
    pub aeron: Option<String>,
    /// The Aeron stream id (`[aeron] stream_id`).
    #[arg(long, default_value_t = 1001, requires = "aeron",
          value_parser = clap::value_parser!(i32).range(1..))]
    pub stream: i32,
    /// A running media driver's directory (default: one embedded in this process).
    #[arg(long, value_name = "DIR", requires = "aeron")]
    pub aeron_dir: Option<PathBuf>,
    /// When it ends (the Aeron stream's end, Ctrl-C, or the server's attempts running
    /// out), write the final books here in the `replay --book-out` format.
    #[arg(long, value_name = "PATH")]
    pub book_out: Option<PathBuf>,
    /// Levels per side in --book-out (the Aeron stream carries 10; a server's images
    /// carry its snapshot.depth, and level updates any depth).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub depth: u64,
    /// With --aeron: a stream silent this long (ms) while the publisher is still there
    /// means this subscriber fell too far behind to be sent what it missed; it rejoins at
    /// the publisher's position and the refresh cycle makes its books good. Keep it above
    /// the publisher's `[aeron] heartbeat_ms`.
    #[arg(long, default_value_t = 3000, requires = "aeron",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub silence_ms: u64,
    /// With --aeron: print no updates, only the end's summary.
    #[arg(long, short)]
    pub quiet: bool,
    /// The account to log in as (1 to 16 printable ASCII characters). Its password is read
    /// from --password-file or the environment variable TICKLANE_PASSWORD; without either,
    /// the login carries no secret (protocol version 1), which only a server without
    /// accounts takes.
    #[arg(long, default_value = "ticklane", value_parser = super::arg_values::account)]
    pub account: String,
    /// A file whose first line is the account's password.
    #[arg(long, value_name = "FILE")]
    pub password_file: Option<PathBuf>,
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
    /// Connect over TLS and verify the server's certificate (against --ca, else the
    /// host's trust store) before logging in.
    #[arg(long)]
    pub tls: bool,
    /// The CA certificates (PEM) to verify the server with; implies --tls.
    #[arg(long, value_name = "FILE")]
    pub ca: Option<PathBuf>,
    /// The name the server's certificate must carry (default: the address in --server).
    #[arg(long, value_name = "NAME")]
    pub server_name: Option<String>,
}

/// Runs `ticklane subscribe` until a signal, maintenance, or `--max-attempts`.
pub fn subscribe(args: &SubscribeArgs) -> Result<ExitStatus> {
    if let Some(channel) = &args.aeron {
        return super::aeron_subscribe::follow(args, channel);
    }
    let Some(server) = args.server else {
        eprintln!("ticklane subscribe: --server or --aeron is needed");
        return Ok(ExitStatus::Usage);
    };
    if args.backoff_cap_ms < args.backoff_base_ms {
        eprintln!(
            "ticklane subscribe: --backoff-cap-ms {} is below --backoff-base-ms {}: the cap \
             bounds every backoff, the first included",
            args.backoff_cap_ms, args.backoff_base_ms
        );
        return Ok(ExitStatus::Usage);
    }
    let tls = if args.tls || args.ca.is_some() || args.server_name.is_some() {
        let name = args
            .server_name
            .clone()
            .unwrap_or_else(|| server.ip().to_string());
        let server_name = match server_name(&name) {
            Ok(n) => n,
            Err(why) => {
                eprintln!("ticklane subscribe: --server-name {why}");
                return Ok(ExitStatus::Usage);
            }
        };
        let config = match client_config(args.ca.as_deref()) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("ticklane subscribe: {e}");
                return Ok(ExitStatus::Usage);
            }
        };
        Some(ClientTls {
            config,
            server_name,
        })
    } else {
        None
    };
    let secret = match secret(args) {
        Ok(secret) => secret,
        Err(why) => {
            eprintln!("ticklane subscribe: {why}");
            return Ok(ExitStatus::Usage);
        }
    };
    let config = ClientConfig {
        account: args.account.clone(),
        tls,
        secret,
        backoff: BackoffConfig {
            base: Duration::from_millis(args.backoff_base_ms),
            cap: Duration::from_millis(args.backoff_cap_ms),
        },
        max_attempts: args.max_attempts,
        seed: u64::from(std::process::id()),
        ..ClientConfig::new(server, args.symbols.clone())
    };
    let book_out = args.book_out.as_ref().map(|path| BookOut {
        path: path.clone(),
        depth: args.depth as usize,
    });
    print_subscriber_updates(
        &config,
        io::stdout().lock(),
        &mut io::stderr().lock(),
        book_out.as_ref(),
    )
}

/// The password the environment variable names.
const PASSWORD_VARIABLE: &str = "TICKLANE_PASSWORD";

/// The login's secret: `--password-file`'s first line, else `TICKLANE_PASSWORD`, else none.
fn secret(args: &SubscribeArgs) -> Result<Secret, String> {
    let password = match &args.password_file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("--password-file {}: {e}", path.display()))?;
            text.lines().next().unwrap_or("").to_owned()
        }
        None => match std::env::var(PASSWORD_VARIABLE) {
            Ok(password) => password,
            Err(_) => return Ok(Secret::NONE),
        },
    };
    if password.is_empty() {
        return Err("the password is empty".into());
    }
    Secret::new(password.as_bytes())
        .ok_or_else(|| format!("a password is at most {MAX_SECRET} bytes"))
}
