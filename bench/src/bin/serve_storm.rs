//! The reconnect storm over real loopback sockets: thousands of clients reconnecting in the
//! same instant to the subscriber server behind its storm defences (`GuardedAdmission`),
//! once with a fixed retry-after and once with a jittered range (same seed, same accept rate,
//! same everything else), printed side by side: per second, attempts, accepted, rejected,
//! served and the server's resident memory; the time until every client is served; the
//! update latency of clients subscribed before the storm, measured during it; the server's
//! peak memory.
//!
//! The server runs in a child process (this binary again, `--role server`), fed by a
//! synthetic publisher thread through a `SubscriberHub`, so that its memory figures are its
//! own; the storm's clients run here, a few threads each stepping many non-blocking clients
//! by the client library's reconnect rules (`serve::reconnect`).
//!
//! With `--security tls-logins` (or `both`, which runs each policy both ways in the same run)
//! the server speaks only TLS and requires version-2 logins with a password from an accounts
//! file, and every client, veterans too, verifies its certificate and logs in with one: the
//! handshakes and the password checks a storm costs, beside the same storm in plain TCP. The
//! certificate (ECDSA P-256, from a CA made for the run) and the accounts file live in a
//! temporary folder; every account has the same password, hashed once, at the cost
//! `ticklane account add` uses unless `--hash-cost` says otherwise. The server's CPU time
//! during the storm is read from `/proc` per thread: its loop (accepts, handshakes, fan-out)
//! and the password verifier.
//!
//! Exits 1 (after printing everything) when a client was not served by the deadline.
//!
//! `cargo run --release -p ticklane-bench --bin serve_storm -- [--clients 2000]
//! [--accept-per-second 500] [--burst 100] [--retry-after-ms 2000-5000]
//! [--fixed-retry-after-ms 3500] [--seed N] [--deadline-s 40] [--policy fixed|jittered|both]
//! [--security plain|tls-logins|both] [--hash-cost MEMORY_KIB,PASSES]`

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::{Parser, ValueEnum};
use hdrhistogram::Histogram;
use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
use ticklane_bench::storm_clients::{drive, ClientEnd, StormLogin, ThreadReport};
use ticklane_bench::storm_seconds::{side_by_side, Column, StormSeconds};
use ticklane_engine::book::{LevelView, Side};
use ticklane_engine::overload::{
    CodelConfig, Event, EventBody, EventFanout, SubscriberConfig, SubscriberHub,
};
use ticklane_engine::serve::accounts::password::{hash_password, hash_password_with_cost};
use ticklane_engine::serve::accounts::verifier::AccountsSource;
use ticklane_engine::serve::accounts::AccountTable;
use ticklane_engine::serve::client::{ClientConfig, ClientTls, Received, Session};
use ticklane_engine::serve::protocol::{Secret, ServerMessage};
use ticklane_engine::serve::tls::{client_config, server_config, server_name};
use ticklane_engine::serve::{
    start_secure_server, AccountsConfig, BookImage, GuardedAdmission, ImageSource, ServeConfig,
    ServeSecurity,
};
use ticklane_engine::serve_guard::{
    AdmissionConfig, PeerLimits, RejectReason, RetryAfter, Stage, StageLimit,
};
use ticklane_feed::itch::{Locate, Nanos, Price};
use ticklane_testkit::certs::TestCa;

/// The veterans' symbol: updated every millisecond.
const HOT: [u8; 8] = *b"AAPL    ";
/// The storm clients' symbol: updated ten times a second, so that 2,000 served clients do
/// not turn the run into a fan-out benchmark.
const QUIET: [u8; 8] = *b"STRM    ";
/// Levels per side of each synthetic book.
const LEVELS: usize = 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Role {
    /// Run both policies' storms (each against its own server child).
    Storm,
    /// Be the server (started by the storm role).
    Server,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Policy {
    Fixed,
    Jittered,
    Both,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Security {
    /// Plain TCP, version-1 logins without a secret.
    Plain,
    /// TLS, and version-2 logins with an account's password.
    TlsLogins,
    /// Each policy both ways, in the same run.
    Both,
}

/// Every account's password in the storm (the accounts file holds its hash).
const PASSWORD: &[u8] = b"storm-password";

/// `MEMORY_KIB,PASSES` of an Argon2id hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct HashCost {
    memory_kib: u32,
    passes: u32,
}

impl FromStr for HashCost {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (m, t) = s
            .split_once(',')
            .ok_or("expected MEMORY_KIB,PASSES, e.g. 19456,2")?;
        let parse = |v: &str| v.trim().parse::<u32>().map_err(|e| format!("{v:?}: {e}"));
        Ok(HashCost {
            memory_kib: parse(m)?,
            passes: parse(t)?,
        })
    }
}

/// `MIN-MAX` in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct MsRange(RetryAfter);

impl FromStr for MsRange {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (lo, hi) = s
            .split_once('-')
            .ok_or("expected MIN-MAX, e.g. 2000-5000")?;
        let parse = |v: &str| v.trim().parse::<u32>().map_err(|e| format!("{v:?}: {e}"));
        let (min_ms, max_ms) = (parse(lo)?, parse(hi)?);
        if min_ms > max_ms {
            return Err(format!("{min_ms} > {max_ms}"));
        }
        Ok(MsRange(RetryAfter { min_ms, max_ms }))
    }
}

/// A reconnect storm over loopback: fixed vs jittered retry-after, side by side.
#[derive(Parser, Debug)]
#[command(about)]
struct Args {
    /// Storm clients reconnecting in the same instant.
    #[arg(long, default_value_t = 2_000)]
    clients: usize,
    /// New connections the server admits per second.
    #[arg(long, default_value_t = 500)]
    accept_per_second: u32,
    /// Burst of new connections admitted at once.
    #[arg(long, default_value_t = 100)]
    burst: u32,
    /// The jittered policy's retry-after range, ms.
    #[arg(long, default_value = "2000-5000")]
    retry_after_ms: MsRange,
    /// The fixed policy's retry-after, ms (the range's middle by default).
    #[arg(long, default_value_t = 3_500)]
    fixed_retry_after_ms: u32,
    /// Seeds the server's draws and every client's jitter.
    #[arg(long, default_value_t = 0x5709)]
    seed: u64,
    /// Each policy's storm ends by then (seconds after it began), served or not.
    #[arg(long, default_value_t = 40)]
    deadline_s: u64,
    /// Which policies to run.
    #[arg(long, value_enum, default_value_t = Policy::Both)]
    policy: Policy,
    /// Clients subscribed before the storm whose update latency is measured.
    #[arg(long, default_value_t = 4)]
    veterans: usize,
    /// Threads stepping the storm clients.
    #[arg(long, default_value_t = 2)]
    client_threads: usize,
    /// Plain TCP, TLS with password logins, or each policy both ways.
    #[arg(long, value_enum, default_value_t = Security::Plain)]
    security: Security,
    /// The accounts' Argon2id cost, `MEMORY_KIB,PASSES` (default: `ticklane account add`'s).
    #[arg(long)]
    hash_cost: Option<HashCost>,
    #[arg(long, value_enum, default_value_t = Role::Storm, hide = true)]
    role: Role,
    /// (server role) the retry-after range this server tells.
    #[arg(long, hide = true)]
    serve_retry_after_ms: Option<MsRange>,
    /// (server role) serve over TLS with the accounts in this folder (see `Secrets`).
    #[arg(long, hide = true)]
    secrets: Option<PathBuf>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.clients == 0 || args.client_threads == 0 || args.accept_per_second == 0 {
        eprintln!("serve_storm: --clients, --client-threads and --accept-per-second must be >= 1");
        std::process::exit(2);
    }
    match args.role {
        Role::Server => serve(&args),
        Role::Storm => storm(&args),
    }
}

/// CLOCK_MONOTONIC in ns: one clock for every process on the host, so the publisher's stamp
/// (in the server process) and the veteran's receipt (here) can be subtracted.
fn mono_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    (t.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(t.tv_nsec as u64)
}

/// Raises the soft limit on open files to `needed`; says so plainly if the hard limit is
/// lower (then the run goes on with what there is, and clients may fail to connect).
fn raise_open_files(needed: u64, who: &str) -> u64 {
    let now = getrlimit(Resource::Nofile);
    let soft = now.current.unwrap_or(u64::MAX);
    let hard = now.maximum.unwrap_or(u64::MAX);
    if soft >= needed {
        return soft;
    }
    let target = needed.min(hard);
    if hard < needed {
        eprintln!(
            "serve_storm ({who}): the hard limit on open files is {hard}, under the {needed} \
             this run needs; raise it (ulimit -Hn, limits.conf) or use fewer --clients"
        );
    }
    match setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(target),
            maximum: now.maximum,
        },
    ) {
        Ok(()) => target,
        Err(e) => {
            eprintln!("serve_storm ({who}): could not raise the open-file limit to {target}: {e}");
            soft
        }
    }
}

/// The run's TLS certificate and accounts, in a temporary folder: `ca.pem`, `server.pem`,
/// `server-key.pem` (for `127.0.0.1`), `accounts.toml` (every storm client and veteran, each
/// entitled to everything, all with [`PASSWORD`]).
struct Secrets {
    dir: tempfile::TempDir,
    ca: PathBuf,
}

impl Secrets {
    fn make(args: &Args) -> anyhow::Result<Secrets> {
        let dir = tempfile::tempdir().context("a folder for the run's certificate")?;
        let ca = TestCa::new("serve_storm CA");
        ca.issue(dir.path(), "server", &["127.0.0.1"]);
        let ca_path = ca.write(dir.path(), "ca.pem");
        let hash = match args.hash_cost {
            None => hash_password(PASSWORD),
            Some(c) => hash_password_with_cost(PASSWORD, c.memory_kib, c.passes),
        }
        .map_err(|e| anyhow::anyhow!("hashing the storm's password: {e}"))?;
        let mut text = String::new();
        let names = (0..args.clients)
            .map(|n| format!("storm{n}"))
            .chain((0..args.veterans).map(|n| format!("veteran{n}")));
        for name in names {
            text.push_str(&format!(
                "[[account]]\nname = \"{name}\"\npassword = \"{hash}\"\nsymbols = [\"*\"]\n\n"
            ));
        }
        std::fs::write(dir.path().join("accounts.toml"), text).context("the accounts file")?;
        Ok(Secrets { dir, ca: ca_path })
    }

    fn client_tls(&self) -> anyhow::Result<ClientTls> {
        Ok(ClientTls {
            config: client_config(Some(&self.ca))?,
            server_name: server_name("127.0.0.1").map_err(anyhow::Error::msg)?,
        })
    }
}

/// The server's side of [`Secrets`], read from `dir`.
fn serve_security(dir: &Path) -> anyhow::Result<ServeSecurity> {
    let tls = server_config(&dir.join("server.pem"), &dir.join("server-key.pem"))?;
    let path = dir.join("accounts.toml");
    let table = AccountTable::load(&path)?;
    Ok(ServeSecurity {
        tls: Some(tls),
        accounts: Some(AccountsConfig {
            table: Arc::new(table),
            source: AccountsSource {
                path,
                reload_interval: None,
                reload_requested: Arc::default(),
            },
            failure_delay: Duration::from_millis(500),
        }),
        audit: None,
    })
}

/// CPU time of each of `pid`'s threads named `names` (as the kernel truncates them), and of
/// the whole process, in clock ticks, from `/proc`.
fn cpu_ticks(pid: u32, names: &[&str]) -> Option<(Vec<u64>, u64)> {
    // utime and stime: fields 14 and 15, counted after the parenthesised name.
    let ticks = |stat: &str| -> Option<(String, u64)> {
        let open = stat.find('(')?;
        let close = stat.rfind(')')?;
        let name = stat[open + 1..close].to_string();
        let mut fields = stat[close + 2..].split(' ');
        let utime: u64 = fields.nth(11)?.parse().ok()?;
        let stime: u64 = fields.next()?.parse().ok()?;
        Some((name, utime + stime))
    };
    let (_, whole) = ticks(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)?;
    let mut per = vec![0; names.len()];
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let Ok(task) = task else { continue };
        let Some((name, t)) = std::fs::read_to_string(task.path().join("stat"))
            .ok()
            .and_then(|s| ticks(&s))
        else {
            continue;
        };
        if let Some(i) = names.iter().position(|n| *n == name) {
            per[i] += t;
        }
    }
    Some((per, whole))
}

/// The server threads whose CPU time is reported.
const SERVER_THREADS: [&str; 2] = ["ticklane-serve", "ticklane-verify"];

// ---------------------------------------------------------------------------------------
// The server role.

/// Two synthetic books, shared by the publisher (which changes them) and the server
/// (which reads images from them).
#[derive(Clone, Default)]
struct Books(Arc<Mutex<BooksInner>>);

#[derive(Default)]
struct BooksInner {
    /// Per symbol: locate, last feed sequence, bids (best first).
    books: Vec<([u8; 8], u16, u64, Vec<LevelView>)>,
}

impl Books {
    fn new() -> Self {
        let books = [HOT, QUIET]
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let bids = (0..LEVELS)
                    .map(|l| LevelView {
                        price: Price(100_0000 - l as u32 * 100),
                        qty: 100,
                        orders: 1,
                    })
                    .collect();
                (*s, i as u16 + 1, 0, bids)
            })
            .collect();
        Books(Arc::new(Mutex::new(BooksInner { books })))
    }

    /// Sets level `l`'s shares to `qty` (the publisher's stamp) and publishes the change.
    fn publish(&self, fanout: &mut EventFanout, symbol: usize, l: usize, qty: u64) {
        let (sym, locate, seq, level) = {
            let mut inner = self
                .0
                .lock()
                .expect("invariant: no thread panics holding it");
            let book = &mut inner.books[symbol];
            book.2 += 1;
            book.3[l].qty = qty;
            (book.0, book.1, book.2, book.3[l])
        };
        let now = fanout.now_ns();
        fanout.deliver(
            Event {
                locate: Locate(locate),
                symbol: sym,
                feed_seq: seq,
                exchange_ts: Nanos(0),
                queued_ns: 0,
                body: EventBody::Level {
                    side: Side::Bid,
                    level,
                },
            },
            now,
        );
    }
}

impl ImageSource for Books {
    fn image(&mut self, symbol: &[u8; 8], view: &mut dyn FnMut(&BookImage<'_>)) -> bool {
        let inner = self
            .0
            .lock()
            .expect("invariant: no thread panics holding it");
        let Some((sym, locate, seq, bids)) = inner.books.iter().find(|b| &b.0 == symbol) else {
            return false;
        };
        view(&BookImage {
            symbol: *sym,
            locate: *locate,
            flags: 0,
            trading_state: b'T',
            feed_seq: *seq,
            bids,
            asks: &[],
        });
        true
    }

    fn symbols(&mut self, each: &mut dyn FnMut(&[u8; 8])) {
        let inner = self
            .0
            .lock()
            .expect("invariant: no thread panics holding it");
        for b in &inner.books {
            each(&b.0);
        }
    }
}

fn admission(args: &Args, retry_after: RetryAfter) -> GuardedAdmission {
    // Every client comes from 127.0.0.1 with its own account: per-IP limits would be the
    // whole defence, so they are opened up; the accept rate is what is under test.
    let many = PeerLimits {
        max_open: u32::try_from(args.clients + args.veterans + 64).unwrap_or(u32::MAX),
        max_attempts: u32::MAX,
        window_ns: 10_000_000_000,
    };
    GuardedAdmission::new(AdmissionConfig {
        connect: StageLimit {
            per_second: args.accept_per_second,
            burst: args.burst,
            max_in_flight: u32::try_from(args.clients + args.veterans + 64).unwrap_or(u32::MAX),
        },
        per_ip: many,
        retry_after,
        seed: args.seed,
        ..AdmissionConfig::default()
    })
}

fn serve(args: &Args) -> anyhow::Result<()> {
    raise_open_files(args.clients as u64 + args.veterans as u64 + 256, "server");
    let retry_after = args
        .serve_retry_after_ms
        .map_or(RetryAfter::DEFAULT, |r| r.0);
    let books = Books::new();
    let (hub, mut fanout) = SubscriberHub::new(SubscriberConfig {
        // Queues large and the hub's clocks out of the way: the storm is about admission.
        queue_events: 1 << 16,
        reserved_events: 16,
        codel: CodelConfig {
            target_ns: u64::MAX / 4,
            interval_ns: u64::MAX / 4,
        },
        deadline_ns: u64::MAX,
        ..SubscriberConfig::default()
    });
    let guard = admission(args, retry_after);
    let guard_counters = guard.counters();
    let security = match &args.secrets {
        Some(dir) => serve_security(dir)?,
        None => ServeSecurity::default(),
    };
    let server = start_secure_server(
        ServeConfig {
            max_clients: args.clients + args.veterans + 64,
            seed: args.seed,
            ..ServeConfig::new("127.0.0.1:0".parse().expect("invariant: a valid address"))
        },
        security,
        Some(hub),
        Box::new(books.clone()),
        Box::new(guard),
        Arc::default(),
    )
    .context("starting the server")?;
    fanout.accept_subscribers();
    let stop = Arc::new(AtomicBool::new(false));
    let publisher = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut n = 0usize;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                // The stamp rides in the shares field: the veterans subtract it.
                books.publish(&mut fanout, 0, n % LEVELS, mono_ns());
                if n.is_multiple_of(100) {
                    books.publish(&mut fanout, 1, n / 100 % LEVELS, 100 + n as u64 % 7);
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let mut out = std::io::stdout().lock();
    writeln!(out, "listening {}", server.local_addr())?;
    out.flush()?;
    // Until the storm side closes our stdin.
    let mut line = String::new();
    while std::io::stdin().read_line(&mut line)? > 0 {
        line.clear();
    }
    stop.store(true, Ordering::Relaxed);
    publisher
        .join()
        .map_err(|_| anyhow::anyhow!("the publisher panicked"))?;
    let counts = server.stop()?;
    let admission = guard_counters.load();
    writeln!(
        out,
        "count server accepted {} rejected {} cut_loose {} shed {} expired_requests {}",
        counts.accepted, counts.rejected, counts.cut_loose, counts.shed, counts.expired_requests
    )?;
    writeln!(
        out,
        "tls established {} failed {} timed_out {}; logins refused {} busy {}",
        counts.tls_established,
        counts.tls_failed,
        counts.tls_timed_out,
        counts.logins_not_authorised,
        counts.logins_verifier_busy
    )?;
    for stage in Stage::ALL {
        for reason in RejectReason::ALL {
            let n = admission.rejected_at(stage, reason);
            if n > 0 {
                writeln!(out, "reject {stage:?} {reason:?} {n}")?;
            }
        }
    }
    out.flush()?;
    Ok(())
}

// ---------------------------------------------------------------------------------------
// The storm role.

/// A server child and its stdout.
struct ServerChild {
    child: Child,
    stdout: BufReader<ChildStdout>,
    addr: SocketAddr,
}

impl ServerChild {
    fn start(
        args: &Args,
        retry_after: RetryAfter,
        secrets: Option<&Secrets>,
    ) -> anyhow::Result<ServerChild> {
        let exe = std::env::current_exe().context("finding this binary")?;
        let mut command = Command::new(exe);
        if let Some(secrets) = secrets {
            command.arg("--secrets").arg(secrets.dir.path());
        }
        let mut child = command
            .args([
                "--role".to_string(),
                "server".into(),
                "--clients".into(),
                args.clients.to_string(),
                "--veterans".into(),
                args.veterans.to_string(),
                "--accept-per-second".into(),
                args.accept_per_second.to_string(),
                "--burst".into(),
                args.burst.to_string(),
                "--seed".into(),
                args.seed.to_string(),
                "--serve-retry-after-ms".into(),
                format!("{}-{}", retry_after.min_ms, retry_after.max_ms),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .context("starting the server child")?;
        let mut stdout = BufReader::new(child.stdout.take().context("the child's stdout")?);
        let mut line = String::new();
        stdout.read_line(&mut line)?;
        let addr = line
            .strip_prefix("listening ")
            .and_then(|a| a.trim().parse().ok())
            .with_context(|| format!("the server child said {line:?}, not its address"))?;
        Ok(ServerChild {
            child,
            stdout,
            addr,
        })
    }

    /// (VmHWM, VmRSS) in KiB, from `/proc/<pid>/status`.
    fn memory_kib(&self) -> Option<(u64, u64)> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        };
        Some((field("VmHWM:")?, field("VmRSS:")?))
    }

    /// Closes its stdin (the signal to stop) and collects what it printed.
    fn finish(mut self) -> anyhow::Result<Vec<String>> {
        drop(self.child.stdin.take());
        let lines: Vec<String> = self.stdout.lines().collect::<Result<_, _>>()?;
        let status = self.child.wait()?;
        if !status.success() {
            bail!("the server child exited with {status}");
        }
        Ok(lines)
    }
}

/// A veteran's findings: latencies in ns before and during the storm, gaps.
struct Veteran {
    before: Histogram<u64>,
    during: Histogram<u64>,
    gaps: u64,
}

const BEFORE: u8 = 0;
const DURING: u8 = 1;
const DONE: u8 = 2;

fn veteran(
    addr: SocketAddr,
    n: usize,
    login: &StormLogin,
    window: Arc<AtomicU8>,
) -> anyhow::Result<Veteran> {
    let budget = Duration::from_secs(5);
    let account = format!("veteran{n}");
    let mut session =
        Session::connect_over(addr, login.tls.as_ref(), &account, &login.secret, budget)?;
    session.subscribe("AAPL", budget)?;
    let mut v = Veteran {
        before: Histogram::new_with_bounds(1_000, 60_000_000_000, 3)?,
        during: Histogram::new_with_bounds(1_000, 60_000_000_000, 3)?,
        gaps: 0,
    };
    let mut imaged = false;
    loop {
        let state = window.load(Ordering::Relaxed);
        if state == DONE {
            return Ok(v);
        }
        match session.recv()? {
            Received::Message(ServerMessage::BookImage { .. }) => imaged = true,
            Received::Message(ServerMessage::Level { level, .. }) if imaged => {
                let latency = mono_ns().saturating_sub(level.qty).max(1_000);
                let h = if state == BEFORE {
                    &mut v.before
                } else {
                    &mut v.during
                };
                h.saturating_record(latency);
            }
            Received::Gap { .. } => v.gaps += 1,
            Received::Message(_) => {}
        }
    }
}

/// One policy's run.
struct PolicyRun {
    name: String,
    seconds: StormSeconds,
    rss_kib: Vec<Option<u64>>,
    all_served: Option<Duration>,
    served: usize,
    not_served: usize,
    stopped: usize,
    expired: u64,
    dropped_after_login: u64,
    baseline_rss_kib: u64,
    peak_kib: u64,
    latency_before: Histogram<u64>,
    latency_during: Histogram<u64>,
    veteran_gaps: u64,
    /// The server's CPU seconds from the storm's start until all were served (or the
    /// deadline): its loop, its verifier, the whole process; and that span.
    cpu_s: [f64; 3],
    cpu_span: Duration,
    server_lines: Vec<String>,
    /// The accounts of the clients not served by the deadline, and why.
    unserved: Vec<String>,
}

/// One storm's settings: its name, the retry-after the server tells, and how clients log in.
struct Storm<'a> {
    name: String,
    retry_after: RetryAfter,
    secrets: Option<&'a Secrets>,
}

fn run_policy(args: &Args, storm: Storm<'_>) -> anyhow::Result<PolicyRun> {
    let Storm {
        name,
        retry_after,
        secrets,
    } = storm;
    let login = Arc::new(match secrets {
        None => StormLogin::plain(),
        Some(s) => StormLogin {
            tls: Some(s.client_tls()?),
            secret: Secret::new(PASSWORD).expect("invariant: a short password"),
        },
    });
    let server = ServerChild::start(args, retry_after, secrets)?;
    let addr = server.addr;
    let pid = server.child.id();
    let window = Arc::new(AtomicU8::new(BEFORE));
    let veterans: Vec<_> = (0..args.veterans)
        .map(|n| {
            let (window, login) = (Arc::clone(&window), Arc::clone(&login));
            std::thread::spawn(move || veteran(addr, n, &login, window))
        })
        .collect();
    // A second of latency before the storm: the baseline, in the same run.
    std::thread::sleep(Duration::from_secs(1));
    let baseline_rss_kib = server.memory_kib().map_or(0, |m| m.1);
    let cpu_before = cpu_ticks(pid, &SERVER_THREADS);

    let release = Arc::new(AtomicBool::new(false));
    let served = Arc::new(AtomicUsize::new(0));
    let threads = args.client_threads.min(args.clients);
    let began = Instant::now();
    window.store(DURING, Ordering::Relaxed);
    let drivers: Vec<_> = (0..threads)
        .map(|t| {
            let configs: Vec<ClientConfig> = (t..args.clients)
                .step_by(threads)
                .map(|n| ClientConfig {
                    account: format!("storm{n}"),
                    seed: args.seed ^ (0x5709_0000 + n as u64),
                    ..ClientConfig::new(addr, vec!["STRM".into()])
                })
                .collect();
            let (release, served, login) = (
                Arc::clone(&release),
                Arc::clone(&served),
                Arc::clone(&login),
            );
            std::thread::spawn(move || drive(addr, configs, &login, began, &release, &served))
        })
        .collect();
    // Watch: every 50 ms, whether all are served; at each second's end, the server's RSS.
    let deadline = Duration::from_secs(args.deadline_s);
    let mut rss_kib = Vec::new();
    let mut all_served = None;
    while began.elapsed() < deadline {
        let second = began.elapsed().as_secs() as usize;
        std::thread::sleep(Duration::from_millis(50));
        if began.elapsed().as_secs() as usize > second {
            rss_kib.push(server.memory_kib().map(|m| m.1));
        }
        if served.load(Ordering::Relaxed) >= args.clients {
            all_served = Some(began.elapsed());
            break;
        }
    }
    window.store(DONE, Ordering::Relaxed);
    let cpu_span = began.elapsed();
    let cpu_after = cpu_ticks(pid, &SERVER_THREADS);
    // Read the peak while every served client is still connected.
    let peak_kib = server.memory_kib().map_or(0, |m| m.0);
    let hz = rustix::param::clock_ticks_per_second() as f64;
    let cpu_s = match (cpu_before, cpu_after) {
        (Some((b, bw)), Some((a, aw))) => [
            a[0].saturating_sub(b[0]) as f64 / hz,
            a[1].saturating_sub(b[1]) as f64 / hz,
            aw.saturating_sub(bw) as f64 / hz,
        ],
        _ => [f64::NAN; 3],
    };
    release.store(true, Ordering::Relaxed);
    let mut seconds = StormSeconds::default();
    let mut run = PolicyRun {
        name,
        seconds: StormSeconds::default(),
        rss_kib,
        all_served: None,
        served: 0,
        not_served: 0,
        stopped: 0,
        expired: 0,
        dropped_after_login: 0,
        baseline_rss_kib,
        peak_kib,
        latency_before: Histogram::new_with_bounds(1_000, 60_000_000_000, 3)?,
        latency_during: Histogram::new_with_bounds(1_000, 60_000_000_000, 3)?,
        veteran_gaps: 0,
        cpu_s,
        cpu_span,
        server_lines: Vec::new(),
        unserved: Vec::new(),
    };
    let mut last_served = Duration::ZERO;
    for (t, d) in drivers.into_iter().enumerate() {
        let report: ThreadReport = d
            .join()
            .map_err(|_| anyhow::anyhow!("a client thread panicked"))??;
        seconds.merge(&report.seconds);
        run.expired += report.expired;
        run.dropped_after_login += report.dropped_after_login;
        for (i, end) in report.ends.into_iter().enumerate() {
            // Thread t stepped clients t, t + threads, t + 2 * threads, ...
            let account = format!("storm{}", t + i * threads);
            match end {
                ClientEnd::Served(at) => {
                    run.served += 1;
                    last_served = last_served.max(at);
                }
                ClientEnd::NotServed => {
                    run.not_served += 1;
                    run.unserved.push(format!("{account} (still trying)"));
                }
                ClientEnd::Stopped(why) => {
                    run.stopped += 1;
                    run.unserved.push(format!("{account} ({why})"));
                }
            }
        }
    }
    // The time until the last client's image arrived (all_served is when the watcher saw it).
    run.all_served = all_served.map(|_| last_served);
    run.seconds = seconds;
    for v in veterans {
        let v = v
            .join()
            .map_err(|_| anyhow::anyhow!("a veteran thread panicked"))??;
        run.latency_before.add(&v.before)?;
        run.latency_during.add(&v.during)?;
        run.veteran_gaps += v.gaps;
    }
    run.server_lines = server.finish()?;
    Ok(run)
}

fn storm(args: &Args) -> anyhow::Result<()> {
    let needed = args.clients as u64 + args.veterans as u64 + 256;
    let limit = raise_open_files(needed, "clients");
    let jittered = args.retry_after_ms.0;
    let fixed = RetryAfter::fixed(args.fixed_retry_after_ms);
    let mut policies = Vec::new();
    if matches!(args.policy, Policy::Fixed | Policy::Both) {
        policies.push((format!("fixed {} ms", fixed.min_ms), fixed));
    }
    if matches!(args.policy, Policy::Jittered | Policy::Both) {
        policies.push((
            format!("jittered {}-{} ms", jittered.min_ms, jittered.max_ms),
            jittered,
        ));
    }
    println!(
        "{} clients reconnecting at once over loopback; accept rate {}/s, burst {}; seed {:#x}; \
         deadline {} s; open-file limit {limit}",
        args.clients, args.accept_per_second, args.burst, args.seed, args.deadline_s
    );
    let secrets = match args.security {
        Security::Plain => None,
        Security::TlsLogins | Security::Both => Some(Secrets::make(args)?),
    };
    let mut securities: Vec<(&str, Option<&Secrets>)> = Vec::new();
    if matches!(args.security, Security::Plain | Security::Both) {
        securities.push(("plain", None));
    }
    if let Some(s) = &secrets {
        securities.push(("TLS+logins", Some(s)));
    }
    let mut runs = Vec::new();
    for (name, retry_after) in &policies {
        for &(security, secrets) in &securities {
            let name = if securities.len() > 1 || secrets.is_some() {
                format!("{name}, {security}")
            } else {
                name.clone()
            };
            eprintln!("serve_storm: running {name} ...");
            runs.push(run_policy(
                args,
                Storm {
                    name,
                    retry_after: *retry_after,
                    secrets,
                },
            )?);
        }
    }
    let columns: Vec<Column<'_>> = runs
        .iter()
        .map(|r| Column {
            name: &r.name,
            seconds: &r.seconds,
            rss_kib: &r.rss_kib,
        })
        .collect();
    print!("{}", side_by_side(&columns));
    let row = |label: &str, cell: &dyn Fn(&PolicyRun) -> String| {
        print!("{label:<32}");
        for r in &runs {
            print!(" | {:>28}", cell(r));
        }
        println!();
    };
    let ms = |h: &Histogram<u64>, q: f64| format!("{:.2}", h.value_at_quantile(q) as f64 / 1e6);
    row("policy", &|r| r.name.clone());
    row("all served after", &|r| {
        r.all_served.map_or_else(
            || format!("NOT ALL by {} s", args.deadline_s),
            |d| format!("{:.2} s", d.as_secs_f64()),
        )
    });
    row("served / not served / stopped", &|r| {
        format!("{} / {} / {}", r.served, r.not_served, r.stopped)
    });
    row("attempts", &|r| r.seconds.total().attempts.to_string());
    row("refused: told / closed", &|r| {
        let t = r.seconds.total();
        format!("{} / {}", t.told, t.closed)
    });
    row("server peak (VmHWM) MiB", &|r| {
        format!("{:.1}", r.peak_kib as f64 / 1024.0)
    });
    row("server RSS before storm MiB", &|r| {
        format!("{:.1}", r.baseline_rss_kib as f64 / 1024.0)
    });
    row("veteran updates before / during", &|r| {
        format!("{} / {}", r.latency_before.len(), r.latency_during.len())
    });
    row("latency before: p50 p99 ms", &|r| {
        format!(
            "{} {}",
            ms(&r.latency_before, 0.5),
            ms(&r.latency_before, 0.99)
        )
    });
    row("latency during: p50 p99 ms", &|r| {
        format!(
            "{} {}",
            ms(&r.latency_during, 0.5),
            ms(&r.latency_during, 0.99)
        )
    });
    row("latency during: p99.9 max ms", &|r| {
        format!(
            "{} {:.2}",
            ms(&r.latency_during, 0.999),
            r.latency_during.max() as f64 / 1e6
        )
    });
    row("veteran gaps", &|r| r.veteran_gaps.to_string());
    row("server CPU s: loop / verifier", &|r| {
        format!("{:.2} / {:.2}", r.cpu_s[0], r.cpu_s[1])
    });
    row("server CPU s: process (cores)", &|r| {
        format!(
            "{:.2} ({:.2})",
            r.cpu_s[2],
            r.cpu_s[2] / r.cpu_span.as_secs_f64().max(1e-9)
        )
    });
    row("TLS handshakes: done / failed", &|r| {
        r.server_lines
            .iter()
            .find_map(|l| l.strip_prefix("tls established "))
            .and_then(|l| {
                let mut words = l.split(' ');
                Some(format!("{} / {}", words.next()?, words.nth(1)?))
            })
            .unwrap_or_default()
    });
    row("logins refused: password / busy", &|r| {
        r.server_lines
            .iter()
            .find_map(|l| l.split_once("logins refused ").map(|(_, l)| l))
            .and_then(|l| {
                let mut words = l.split(' ');
                Some(format!("{} / {}", words.next()?, words.nth(1)?))
            })
            .unwrap_or_default()
    });
    row("expired requests / dropped", &|r| {
        format!("{} / {}", r.expired, r.dropped_after_login)
    });
    let mut keys: Vec<String> = runs
        .iter()
        .flat_map(|r| r.server_lines.iter())
        .filter_map(|l| l.strip_prefix("reject ").and_then(|l| l.rsplit_once(' ')))
        .map(|(k, _)| k.to_string())
        .collect();
    keys.sort();
    keys.dedup();
    for key in &keys {
        row(&format!("server refused {key}"), &|r| {
            r.server_lines
                .iter()
                .filter_map(|l| l.strip_prefix("reject ").and_then(|l| l.rsplit_once(' ')))
                .find(|(k, _)| k == key)
                .map_or("0".into(), |(_, n)| n.to_string())
        });
    }
    println!(
        "latency: publisher's CLOCK_MONOTONIC stamp (in the server process, just before the hub \
         delivery) to the veteran's CLOCK_MONOTONIC after decoding: hub queue, the server loop \
         (which looks at the hub every 1 ms at most), encoding, loopback TCP, the veteran's read"
    );
    let mut unserved = 0;
    for r in &runs {
        if !r.unserved.is_empty() {
            unserved += r.unserved.len();
            let shown: Vec<&str> = r.unserved.iter().take(20).map(String::as_str).collect();
            println!(
                "{}: {} clients not served by the deadline: {}{}",
                r.name,
                r.unserved.len(),
                shown.join(", "),
                if r.unserved.len() > shown.len() {
                    ", ..."
                } else {
                    ""
                }
            );
        }
    }
    if unserved > 0 {
        // The figures are printed; the exit status says the storm did not finish.
        std::process::exit(1);
    }
    Ok(())
}
