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
//! Exits 1 (after printing everything) when a client was not served by the deadline.
//!
//! `cargo run --release -p ticklane-bench --bin serve_storm -- [--clients 2000]
//! [--accept-per-second 500] [--burst 100] [--retry-after-ms 2000-5000]
//! [--fixed-retry-after-ms 3500] [--seed N] [--deadline-s 40] [--policy fixed|jittered|both]`

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::{Parser, ValueEnum};
use hdrhistogram::Histogram;
use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
use ticklane_bench::storm_clients::{drive, ClientEnd, ThreadReport};
use ticklane_bench::storm_seconds::{side_by_side, Column, StormSeconds};
use ticklane_engine::book::{LevelView, Side};
use ticklane_engine::overload::{
    CodelConfig, Event, EventBody, EventFanout, SubscriberConfig, SubscriberHub,
};
use ticklane_engine::serve::client::{ClientConfig, Received, Session};
use ticklane_engine::serve::protocol::ServerMessage;
use ticklane_engine::serve::{start_server, BookImage, GuardedAdmission, ImageSource, ServeConfig};
use ticklane_engine::serve_guard::{
    AdmissionConfig, PeerLimits, RejectReason, RetryAfter, Stage, StageLimit,
};
use ticklane_feed::itch::{Locate, Nanos, Price};

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
    #[arg(long, value_enum, default_value_t = Role::Storm, hide = true)]
    role: Role,
    /// (server role) the retry-after range this server tells.
    #[arg(long, hide = true)]
    serve_retry_after_ms: Option<MsRange>,
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
    let server = start_server(
        ServeConfig {
            max_clients: args.clients + args.veterans + 64,
            seed: args.seed,
            ..ServeConfig::new("127.0.0.1:0".parse().expect("invariant: a valid address"))
        },
        Some(hub),
        Box::new(books.clone()),
        Box::new(guard),
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
    fn start(args: &Args, retry_after: RetryAfter) -> anyhow::Result<ServerChild> {
        let exe = std::env::current_exe().context("finding this binary")?;
        let mut child = Command::new(exe)
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

fn veteran(addr: SocketAddr, n: usize, window: Arc<AtomicU8>) -> anyhow::Result<Veteran> {
    let budget = Duration::from_secs(5);
    let mut session = Session::connect(addr, &format!("veteran{n}"), budget)?;
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
    server_lines: Vec<String>,
    /// The accounts of the clients not served by the deadline, and why.
    unserved: Vec<String>,
}

fn run_policy(args: &Args, name: String, retry_after: RetryAfter) -> anyhow::Result<PolicyRun> {
    let server = ServerChild::start(args, retry_after)?;
    let addr = server.addr;
    let window = Arc::new(AtomicU8::new(BEFORE));
    let veterans: Vec<_> = (0..args.veterans)
        .map(|n| {
            let window = Arc::clone(&window);
            std::thread::spawn(move || veteran(addr, n, window))
        })
        .collect();
    // A second of latency before the storm: the baseline, in the same run.
    std::thread::sleep(Duration::from_secs(1));
    let baseline_rss_kib = server.memory_kib().map_or(0, |m| m.1);

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
            let (release, served) = (Arc::clone(&release), Arc::clone(&served));
            std::thread::spawn(move || drive(addr, configs, began, &release, &served))
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
    // Read the peak while every served client is still connected.
    let peak_kib = server.memory_kib().map_or(0, |m| m.0);
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
    let mut runs = Vec::new();
    for (name, policy) in policies {
        eprintln!("serve_storm: running {name} ...");
        runs.push(run_policy(args, name, policy)?);
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
