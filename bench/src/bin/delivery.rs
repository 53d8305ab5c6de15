//! Delivery latency: how long a book change takes to reach a consumer's view of the book,
//! by each way ticklane hands its books out, in the same run on the same traffic.
//!
//! A `ticklane run` child (the real engine, `--serve` and `[aeron]` on) is fed MoldUDP64
//! over loopback by this harness, one ITCH message per packet at a fixed rate: change `k`
//! replaces the stock's one order with one of `k` shares at the same price. Every
//! consumer runs here, on the harness's clock, and takes the moment its own view of the
//! book first shows a best bid of `k` shares, less the moment change `k` was sent:
//!
//! - **snapshot**: a reader of the mapped file, polling the stock's slot (seqlock);
//! - **tcp**: a client of the subscriber server (`run --serve`), images and level updates;
//! - **aeron ipc** and **aeron udp**: a subscriber of the publisher's stream, one engine
//!   run each, the publisher and this subscriber on one media driver started here (a
//!   build with the `aeron` feature).
//!
//! So each figure is wire to consumer: the engine's receive, book and publication, then
//! the transport. A consumer that misses a change (the snapshot polled between two, the
//! stream conflated it) counts it as unseen, not as a figure.
//!
//! `cargo build --release -p ticklane --features aeron && cargo run --release -p
//! ticklane-bench --features aeron --bin delivery -- --help`; `--quick` for a smoke run.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Parser;
use hdrhistogram::Histogram;
use ticklane_engine::pipeline::{human_ns, new_histogram};
use ticklane_engine::serve::client::{Received, Session};
use ticklane_engine::serve::protocol::ServerMessage;
use ticklane_engine::snapshot::SnapshotReader;
use ticklane_feed::itch::{owned, Locate, OrderRef, Price, Stock};
use ticklane_feed::moldudp64::Session as MoldSession;
use ticklane_testkit::process::free_port;

/// Wire-to-consumer latency of the snapshot, the subscriber server and Aeron.
#[derive(Parser, Debug)]
#[command(name = "delivery")]
struct Args {
    /// Smoke run: 2,000 changes.
    #[arg(long)]
    quick: bool,
    /// Changes per engine run (the first 1,000 warm up, unmeasured).
    #[arg(long, default_value_t = 100_000)]
    changes: u64,
    /// Changes per second.
    #[arg(long, default_value_t = 10_000)]
    rate: u64,
    /// The `ticklane` binary (default: beside this one, as cargo builds both).
    #[arg(long)]
    ticklane: Option<PathBuf>,
    /// Where summary.csv goes.
    #[arg(long, default_value = "target/delivery")]
    out: PathBuf,
    /// The engine's `engine.wait` (busy-spin on cores to spare; spin-yield, park).
    #[arg(long, default_value = "spin-yield")]
    wait: String,
    /// Pin the engine's reader and book threads: `--cores 2,3` (unpinned by default).
    #[arg(long, value_delimiter = ',')]
    cores: Option<Vec<usize>>,
}

/// The stock every change is in.
const SYMBOL: &str = "DLVR";
/// Changes sent before measuring, so that every consumer has joined and warmed.
const WARM_UP: u64 = 1_000;
/// The one price every order rests at.
const PRICE: Price = Price(1_000_000);

/// When each change was sent, by `k`, on the harness's clock (ns since `epoch`; 0: not
/// yet).
struct SendTimes {
    epoch: Instant,
    sent: Vec<AtomicU64>,
}

impl SendTimes {
    fn new(changes: u64) -> Self {
        SendTimes {
            epoch: Instant::now(),
            sent: (0..=changes).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// One consumer's view: the latest change it has seen, and the latencies of those after
/// the warm-up.
struct Seen {
    times: Arc<SendTimes>,
    latest: u64,
    histogram: Histogram<u64>,
    seen: u64,
}

impl Seen {
    fn new(times: Arc<SendTimes>) -> Self {
        Seen {
            times,
            latest: 0,
            histogram: new_histogram(),
            seen: 0,
        }
    }

    /// The consumer's book shows a best bid of `shares`.
    fn best_bid(&mut self, shares: u64) {
        let now = self.times.now();
        if shares <= self.latest || shares as usize >= self.times.sent.len() {
            return;
        }
        self.latest = shares;
        let sent = self.times.sent[shares as usize].load(Ordering::Acquire);
        if shares > WARM_UP && sent != 0 {
            let _ = self.histogram.record(now.saturating_sub(sent).max(1));
            self.seen += 1;
        }
    }
}

fn main() -> Result<()> {
    let mut args = Args::parse();
    if args.cores.as_ref().is_some_and(|c| c.len() != 2) {
        bail!("--cores takes two cores, the reader's and the book thread's: --cores 2,3");
    }
    if args.quick {
        args.changes = 2_000 + WARM_UP;
    }
    let ticklane = match &args.ticklane {
        Some(path) => path.clone(),
        None => std::env::current_exe()?
            .parent()
            .context("this binary's folder")?
            .join("ticklane"),
    };
    if !ticklane.exists() {
        bail!(
            "{}: no ticklane binary (cargo build --release -p ticklane --features aeron)",
            ticklane.display()
        );
    }
    std::fs::create_dir_all(&args.out)?;
    let mut rows: Vec<(String, String, Seen)> = Vec::new();
    for transport in transports() {
        eprintln!(
            "delivery: {} changes at {}/s, aeron {}",
            args.changes,
            args.rate,
            transport.name()
        );
        let run = format!("aeron {}", transport.name());
        for (consumer, seen) in one_run(&args, &ticklane, &transport)? {
            rows.push((run.clone(), consumer, seen));
        }
    }
    let measured = args.changes.saturating_sub(WARM_UP);
    let mut table = String::from(
        "| run | consumer | p50 | p90 | p99 | p99.9 | max | seen |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    let mut csv = String::from("run,consumer,p50_ns,p90_ns,p99_ns,p999_ns,max_ns,seen,sent\n");
    for (run, name, seen) in &rows {
        let h = &seen.histogram;
        let q = |p: f64| h.value_at_quantile(p);
        let _ = writeln!(
            table,
            "| {run} | {name} | {} | {} | {} | {} | {} | {} of {measured} |",
            human_ns(q(0.5)),
            human_ns(q(0.9)),
            human_ns(q(0.99)),
            human_ns(q(0.999)),
            human_ns(h.max()),
            seen.seen
        );
        let _ = writeln!(
            csv,
            "{run},{name},{},{},{},{},{},{},{measured}",
            q(0.5),
            q(0.9),
            q(0.99),
            q(0.999),
            h.max(),
            seen.seen
        );
    }
    print!("{table}");
    std::fs::write(args.out.join("summary.csv"), csv)?;
    Ok(())
}

/// What the engine's `[aeron]` publishes on in one run.
enum Transport {
    /// No Aeron in this build: one run, the snapshot and the subscriber server only.
    #[cfg_attr(feature = "aeron", allow(dead_code))]
    None,
    #[cfg(feature = "aeron")]
    Aeron { name: &'static str, channel: String },
}

impl Transport {
    fn name(&self) -> &str {
        match self {
            Transport::None => "not built (the bench's `aeron` feature)",
            #[cfg(feature = "aeron")]
            Transport::Aeron { name, .. } => name,
        }
    }
}

#[cfg(not(feature = "aeron"))]
fn transports() -> Vec<Transport> {
    vec![Transport::None]
}

#[cfg(feature = "aeron")]
fn transports() -> Vec<Transport> {
    vec![
        Transport::Aeron {
            name: "ipc",
            channel: "aeron:ipc".into(),
        },
        Transport::Aeron {
            name: "udp",
            channel: format!("aeron:udp?endpoint=127.0.0.1:{}", free_port()),
        },
    ]
}

/// One engine run: the child, the consumers, the traffic; each consumer's row.
fn one_run(args: &Args, ticklane: &Path, transport: &Transport) -> Result<Vec<(String, Seen)>> {
    let dir = tempfile::tempdir()?;
    let snapshot = dir.path().join("books.snap");
    let (data, serve) = (free_port(), free_port());
    let pinned = match args.cores.as_deref() {
        Some([reader, book]) => format!("reader_core = {reader}\nbook_core = {book}\n"),
        _ => String::new(),
    };
    let wait = &args.wait;
    #[cfg_attr(not(feature = "aeron"), allow(unused_mut))]
    let mut config = format!(
        "[snapshot]\npath = {snapshot:?}\ndepth = 10\ncapacity = 16\n\n\
         [engine]\nmax_orders = 4096\nmax_books = 16\nlevels_per_side = 64\n\
         wait = {wait:?}\n{pinned}\n\
         [feed]\nkind = \"moldudp64\"\nbind = \"127.0.0.1:{data}\"\n\
         silence_timeout_s = 30.0\nmax_duration_s = 600.0\n"
    );
    #[cfg(feature = "aeron")]
    let driver = ticklane_aeron::aeron_link::AeronNode::connect(
        &ticklane_aeron::aeron_link::DriverPlace::Embedded,
    )?;
    #[cfg(feature = "aeron")]
    if let Transport::Aeron { channel, .. } = transport {
        let _ = writeln!(
            config,
            "\n[aeron]\nchannel = {channel:?}\ndir = {:?}\nstream_id = 9\nheartbeat_ms = 100\n",
            driver.dir()
        );
    }
    let config_path = dir.path().join("line.toml");
    std::fs::write(&config_path, config)?;
    let mut child = Command::new(ticklane)
        .args(["run", "--config"])
        .arg(&config_path)
        .args(["--serve", &format!("127.0.0.1:{serve}")])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("starting ticklane run")?;
    // The traffic starts once the line's socket is open (its `ready` line), so that the
    // first message is not lost before the engine listens.
    let (ready, is_ready) = std::sync::mpsc::channel();
    if let Some(stdout) = child.stdout.take() {
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line.starts_with("ticklane run: ready (") {
                    let _ = ready.send(());
                }
            }
        });
    }
    #[cfg(feature = "aeron")]
    let aeron_dir = Some(driver.dir().to_owned());
    #[cfg(not(feature = "aeron"))]
    let aeron_dir: Option<String> = None;
    let result = is_ready
        .recv_timeout(Duration::from_secs(20))
        .context("ticklane run was not ready within 20 s")
        .and_then(|()| {
            drive(
                args,
                transport,
                &snapshot,
                data,
                serve,
                aeron_dir.as_deref(),
                &mut child,
            )
        });
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let _ = child.wait();
    #[cfg(feature = "aeron")]
    drop(driver);
    result
}

/// Sends the traffic while every consumer watches; returns each consumer's row.
fn drive(
    args: &Args,
    transport: &Transport,
    snapshot: &Path,
    data: u16,
    serve: u16,
    aeron_dir: Option<&str>,
    child: &mut Child,
) -> Result<Vec<(String, Seen)>> {
    let times = Arc::new(SendTimes::new(args.changes));
    let sender = Sender::new(data)?;
    // The stock first, so that the snapshot has its slot and the server knows the symbol.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait()? {
            bail!("ticklane run ended first ({status})");
        }
        sender.directory()?;
        if SnapshotReader::open(snapshot)
            .ok()
            .is_some_and(|r| r.find(SYMBOL.as_bytes()).is_some())
        {
            break;
        }
        if Instant::now() > deadline {
            bail!("the engine did not take the stock in 10 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let mut consumers = vec![
        spawn_consumer("snapshot", &stop, &times, {
            let path = snapshot.to_path_buf();
            move |seen, stop| watch_snapshot(&path, seen, stop)
        }),
        spawn_consumer("tcp", &stop, &times, move |seen, stop| {
            watch_server(SocketAddr::from(([127, 0, 0, 1], serve)), seen, stop)
        }),
    ];
    #[cfg(feature = "aeron")]
    if let (Transport::Aeron { name, channel }, Some(dir)) = (transport, aeron_dir) {
        let (channel, dir) = (channel.clone(), dir.to_owned());
        consumers.push(spawn_consumer(
            &format!("aeron {name}"),
            &stop,
            &times,
            move |seen, stop| watch_aeron(&dir, &channel, seen, stop),
        ));
    }
    #[cfg(not(feature = "aeron"))]
    let _ = (transport, aeron_dir);
    // Every consumer has joined before the warm-up ends.
    std::thread::sleep(Duration::from_millis(500));
    sender.changes(args.changes, args.rate, &times)?;
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Release);
    let mut rows = Vec::new();
    for (name, handle) in consumers.drain(..) {
        let seen = handle
            .join()
            .map_err(|_| anyhow::anyhow!("{name}: the consumer panicked"))??;
        rows.push((name, seen));
    }
    Ok(rows)
}

type Consumer = (String, std::thread::JoinHandle<Result<Seen>>);

fn spawn_consumer(
    name: &str,
    stop: &Arc<AtomicBool>,
    times: &Arc<SendTimes>,
    watch: impl FnOnce(&mut Seen, &AtomicBool) -> Result<()> + Send + 'static,
) -> Consumer {
    let (stop, mut seen) = (Arc::clone(stop), Seen::new(Arc::clone(times)));
    let handle = std::thread::spawn(move || {
        watch(&mut seen, &stop)?;
        Ok(seen)
    });
    (name.to_owned(), handle)
}

fn watch_snapshot(path: &Path, seen: &mut Seen, stop: &AtomicBool) -> Result<()> {
    let reader = SnapshotReader::open(path)?;
    let slot = reader.find(SYMBOL.as_bytes()).context("the stock's slot")?;
    let mut words = Vec::new();
    let mut last_sequence = 0;
    while !stop.load(Ordering::Acquire) {
        let read = reader.read_with(slot, &mut words, |sequence, payload, bids, _| {
            (sequence, (payload.bid_levels > 0).then(|| bids[0].qty))
        });
        if let Ok((sequence, best)) = read {
            if sequence != last_sequence {
                last_sequence = sequence;
                if let Some(shares) = best {
                    seen.best_bid(shares);
                }
            }
        }
        std::thread::yield_now();
    }
    Ok(())
}

fn watch_server(server: SocketAddr, seen: &mut Seen, stop: &AtomicBool) -> Result<()> {
    let timeout = Duration::from_secs(5);
    // The server may still be starting: it is given the time the engine has to start.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut session = loop {
        match Session::connect(server, "delivery", timeout) {
            Ok(session) => break session,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(e.into()),
        }
    };
    session.subscribe(SYMBOL, timeout)?;
    // The server's heartbeats come back too, so that the loop sees `stop` in a quiet spell.
    session.return_heartbeats(true);
    while !stop.load(Ordering::Acquire) {
        if let Received::Message(ServerMessage::Level { level, .. }) = session.recv()? {
            if level.price == PRICE {
                seen.best_bid(level.qty);
            }
        }
    }
    Ok(())
}

#[cfg(feature = "aeron")]
fn watch_aeron(dir: &str, channel: &str, seen: &mut Seen, stop: &AtomicBool) -> Result<()> {
    use ticklane_aeron::aeron_link::{AeronNode, DriverPlace};
    use ticklane_aeron::{StreamDecoder, StreamRecord};

    let feed =
        AeronNode::connect(&DriverPlace::External(dir.into()))?.into_subscription(channel, 9)?;
    let mut decoder = StreamDecoder::new();
    // MBP-10 prices are in 1e-9 dollars, ITCH's in 1e-4.
    let price = i64::from(PRICE.0) * 100_000;
    while !stop.load(Ordering::Acquire) {
        let polled = feed.poll(256, |message| {
            let _ = decoder.decode(message, |record| {
                if let StreamRecord::Book(m) = record {
                    if m.levels[0].bid_px == price {
                        seen.best_bid(u64::from(m.levels[0].bid_sz));
                    }
                }
            });
        })?;
        if polled == 0 {
            std::thread::yield_now();
        }
    }
    Ok(())
}

/// The harness's side of the feed: MoldUDP64 packets of one message each.
struct Sender {
    socket: UdpSocket,
    to: SocketAddr,
    session: MoldSession,
    next: std::cell::Cell<u64>,
}

impl Sender {
    fn new(port: u16) -> Result<Self> {
        // Not connected: a datagram sent before the engine binds is lost quietly (a connected
        // socket would fail the next send with the ICMP error instead).
        let socket = UdpSocket::bind("127.0.0.1:0")?;
        Ok(Sender {
            socket,
            to: SocketAddr::from(([127, 0, 0, 1], port)),
            session: MoldSession::new(b"DELIVER").context("a session name")?,
            next: std::cell::Cell::new(1),
        })
    }

    fn send(&self, message: owned::Message) -> Result<()> {
        let mut body = [0u8; 64];
        let len = message.encode(&mut body);
        let mut packet = Vec::with_capacity(22 + len);
        packet.extend_from_slice(self.session.as_bytes());
        packet.extend_from_slice(&self.next.get().to_be_bytes());
        packet.extend_from_slice(&1u16.to_be_bytes());
        packet.extend_from_slice(&(len as u16).to_be_bytes());
        packet.extend_from_slice(&body[..len]);
        self.socket.send_to(&packet, self.to)?;
        self.next.set(self.next.get() + 1);
        Ok(())
    }

    fn directory(&self) -> Result<()> {
        self.send(owned::Message::StockDirectory(owned::StockDirectory {
            locate: Locate(1),
            stock: Stock::new(SYMBOL.as_bytes()).context("the symbol")?,
            ..Default::default()
        }))
    }

    /// Changes 1 to `changes` at `rate` a second, each stamped as it goes.
    fn changes(&self, changes: u64, rate: u64, times: &SendTimes) -> Result<()> {
        let every = Duration::from_nanos(1_000_000_000 / rate.max(1));
        let start = Instant::now();
        for k in 1..=changes {
            let due = start + every * u32::try_from(k).unwrap_or(u32::MAX);
            while Instant::now() < due {
                std::thread::yield_now();
            }
            times.sent[k as usize].store(times.now(), Ordering::Release);
            let shares = u32::try_from(k).unwrap_or(u32::MAX);
            // One message a change: the book goes from k - 1 shares to k at once and stays
            // there until the next change.
            self.send(if k == 1 {
                owned::Message::AddOrder(owned::AddOrder {
                    locate: Locate(1),
                    order_ref: OrderRef(k),
                    side: b'B',
                    shares,
                    price: PRICE,
                    ..Default::default()
                })
            } else {
                owned::Message::OrderReplace(owned::OrderReplace {
                    locate: Locate(1),
                    original_order_ref: OrderRef(k - 1),
                    new_order_ref: OrderRef(k),
                    shares,
                    price: PRICE,
                    ..Default::default()
                })
            })?;
        }
        Ok(())
    }
}
