//! `ticklane run`, `ticklane sim` and `ticklane record`: argument parsing and printing only;
//! the work is in `ticklane_engine::live` and `ticklane_feed::sim`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use ticklane_engine::config::{FeedConfig, RunConfig};
use ticklane_engine::live::{
    install_shutdown, record_udp, run_demo, run_line, DemoConfig, LineSource, LineSourceReport,
};
use ticklane_engine::overload::{OverloadConfig, OverloadCounters};
use ticklane_engine::pipeline::{human_ns, Percentiles};
use ticklane_engine::replay::group;
use ticklane_engine::snapshot::SnapshotWriter;
use ticklane_feed::capture::ReadOptions;
use ticklane_feed::moldudp64::Session;
use ticklane_feed::sim::{
    BurstLoss, Faults, GenConfig, Interruption, MessageLog, MoldSimConfig, MoldSimulator, Rate,
    SoupSimConfig, SoupSimulator,
};
use ticklane_feed::soupbintcp::Credentials;

/// `ticklane run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// The line to run (TOML; see engine/ticklane.example.toml). Without it, the built-in
    /// demo runs: a simulated exchange on loopback feeding the real pipeline.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Demo only: messages in the simulated day.
    #[arg(long, default_value_t = 1_000_000)]
    pub messages: u64,
    /// Demo only: messages per second the simulator sends.
    #[arg(long, default_value_t = 1_000_000)]
    pub rate: u64,
    /// Demo only: fraction of packets the simulator drops (recovered by retransmission).
    #[arg(long, default_value_t = 0.002)]
    pub drop: f64,
}

/// `ticklane sim`.
#[derive(Args, Debug)]
pub struct SimArgs {
    /// ITCH50 file (or capture) to serve; without it, a generated day.
    pub file: Option<PathBuf>,
    /// Generated day: messages.
    #[arg(long, default_value_t = 1_000_000)]
    pub messages: u64,
    /// Generated day and faults: seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Serve MoldUDP64 to this address (unicast, or a multicast group:port).
    #[arg(long)]
    pub udp: Option<SocketAddr>,
    /// Answer retransmission requests on this address.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub request: SocketAddr,
    /// Serve SoupBinTCP on this address.
    #[arg(long)]
    pub tcp: Option<SocketAddr>,
    /// SoupBinTCP login (user:password).
    #[arg(long, default_value = "user:pass")]
    pub login: String,
    /// Messages per second (default: as fast as possible).
    #[arg(long, conflicts_with = "speed")]
    pub rate: Option<u64>,
    /// Play at the file's own timestamps, this many times faster.
    #[arg(long)]
    pub speed: Option<f64>,
    /// Fraction of packets dropped.
    #[arg(long, default_value_t = 0.0)]
    pub drop: f64,
    /// Burst loss: probability per packet that a burst starts.
    #[arg(long, default_value_t = 0.0)]
    pub burst_probability: f64,
    /// Burst loss: packets lost per burst.
    #[arg(long, default_value_t = 10)]
    pub burst_packets: u32,
    /// Fraction of packets sent twice.
    #[arg(long, default_value_t = 0.0)]
    pub duplicate: f64,
    /// Fraction of packets swapped with the next.
    #[arg(long, default_value_t = 0.0)]
    pub reorder: f64,
    /// Stall for --stall-ms after this many messages.
    #[arg(long)]
    pub stall_after: Option<u64>,
    /// Length of the stall.
    #[arg(long, default_value_t = 500)]
    pub stall_ms: u64,
    /// Disconnect after this many messages (UDP: silence for a second; TCP: close).
    #[arg(long)]
    pub disconnect_after: Option<u64>,
}

/// `ticklane record`.
#[derive(Args, Debug)]
pub struct RecordArgs {
    /// The MoldUDP64 line to record (TOML, as for `run`).
    #[arg(long)]
    pub config: PathBuf,
    /// The pcap file to write.
    #[arg(long)]
    pub out: PathBuf,
}

fn print_latency(name: &str, p: &Percentiles) {
    if p.count > 0 {
        println!("  {name:<22} {}", p.to_line());
    }
}

fn print_overload(counters: Option<&OverloadCounters>) {
    if let Some(c) = counters {
        println!("  overload     {}", c.to_text());
    }
}

fn print_source(source: &LineSourceReport) {
    match source {
        LineSourceReport::Mold(r) => {
            let s = &r.recovery;
            println!(
                "  packets      {:>14}   gaps {}   recovered {}   lost {}   duplicates {}   requests {}",
                group(s.packets),
                s.gaps,
                group(s.recovered),
                group(s.messages_lost),
                group(s.duplicates),
                s.requests_sent
            );
            for gap in &r.lost {
                println!("  LOST         sequences {} ..= {}", gap.first, gap.last);
            }
        }
        LineSourceReport::Soup(r) => println!("  connections  {:>14}", r.connections),
    }
    println!("  ended        {}", source.end());
}

/// `ticklane run`.
pub fn run(args: &RunArgs) -> Result<ExitCode> {
    let stop = install_shutdown()?;
    let Some(path) = &args.config else {
        return demo(args, &stop);
    };
    let config = RunConfig::load(path)?;
    let pipeline = config.pipeline().map_err(anyhow::Error::msg)?;
    let feed = config.feed_config().map_err(anyhow::Error::msg)?;
    let snapshot = match &config.snapshot.path {
        Some(p) => Some(
            SnapshotWriter::create(p, config.snapshot.capacity, config.snapshot.depth)
                .with_context(|| format!("snapshot {}", p.display()))?,
        ),
        None => None,
    };
    let source = LineSource::open(&feed, &pipeline)?;
    println!(
        "ticklane run: {} (Ctrl-C stops, drains and flushes)",
        path.display()
    );
    let run = run_line(source, pipeline, snapshot, OverloadConfig::default(), &stop)?;
    let report = &run.report;
    println!(
        "  messages     {:>14}   in {:.3} s",
        group(report.book.messages),
        report.elapsed.as_secs_f64()
    );
    print_source(&report.source);
    print_latency(
        "receive -> applied",
        &Percentiles::of(&report.book.latency.receive_to_applied),
    );
    print_latency(
        "receive -> published",
        &Percentiles::of(&report.book.latency.receive_to_published),
    );
    print_overload(run.overload.as_ref());
    Ok(if report.source.end().is_error() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn demo(args: &RunArgs, stop: &Arc<std::sync::atomic::AtomicBool>) -> Result<ExitCode> {
    println!(
        "ticklane live demo: a simulated exchange sends {} messages as MoldUDP64 over loopback UDP at {} msg/s,",
        group(args.messages),
        group(args.rate)
    );
    println!(
        "dropping {:.1}% of packets; the pipeline (reader thread -> SPSC ring -> book thread -> snapshot)",
        args.drop * 100.0
    );
    println!("recovers them from the retransmission server.\n");
    use std::io::IsTerminal;
    let config = DemoConfig {
        progress: std::io::stdout().is_terminal(),
        messages: args.messages,
        rate: args.rate,
        drop_ratio: args.drop,
        ..DemoConfig::default()
    };
    let r = run_demo(config, stop)?;
    println!(
        "  messages     {:>14}   in {:.3} s = {:.2} M msg/s",
        group(r.messages),
        r.elapsed.as_secs_f64(),
        r.messages as f64 / r.elapsed.as_secs_f64() / 1e6
    );
    print_source(&r.source);
    print_latency("receive -> applied", &r.receive_to_applied);
    print_latency("receive -> published", &r.receive_to_published);
    print_overload(r.overload.as_ref());
    println!(
        "  snapshot     books {} a replay of the same messages",
        if r.books_match_replay {
            "equal"
        } else {
            "DIFFER FROM"
        }
    );
    println!(
        "\n  (latency from the reader's receive stamp to the snapshot slot published; p50 {} here on a\n   shared 2-core machine with spin-yield waits. Next: `ticklane run --config FILE` for a real line.)",
        human_ns(r.receive_to_published.p50)
    );
    if stop.load(Ordering::Relaxed) {
        return Ok(ExitCode::from(130));
    }
    Ok(if r.books_match_replay && r.messages == args.messages {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `ticklane sim`.
pub fn sim(args: &SimArgs) -> Result<ExitCode> {
    let stop = install_shutdown()?;
    let log = Arc::new(match &args.file {
        Some(path) => MessageLog::from_capture(path, ReadOptions::default())?,
        None => MessageLog::from_generator(GenConfig {
            messages: args.messages,
            seed: args.seed,
            ..GenConfig::default()
        }),
    });
    let rate = match (args.rate, args.speed) {
        (Some(n), _) => Rate::per_second(n),
        (None, Some(speed)) => Rate::timestamps(speed),
        (None, None) => Rate::Max,
    };
    let faults = Faults {
        seed: args.seed,
        drop_ratio: args.drop,
        burst_loss: (args.burst_probability > 0.0).then_some(BurstLoss {
            probability: args.burst_probability,
            packets: args.burst_packets,
        }),
        duplicate_ratio: args.duplicate,
        reorder_ratio: args.reorder,
        stall: args.stall_after.map(|after| Interruption {
            after_messages: after,
            duration: Duration::from_millis(args.stall_ms),
        }),
        disconnect: args.disconnect_after.map(|after| Interruption {
            after_messages: after,
            duration: Duration::from_secs(1),
        }),
        ..Faults::default()
    };
    if args.udp.is_none() && args.tcp.is_none() {
        bail!("give --udp ADDR (MoldUDP64) and/or --tcp ADDR (SoupBinTCP)");
    }
    let session = Session::new(b"TICKLANE").expect("fits");
    let mold = match args.udp {
        Some(destination) => {
            let mut c = MoldSimConfig::new(session, destination);
            c.rate = rate;
            c.faults = faults;
            c.request_bind = args.request;
            let sim = MoldSimulator::start(Arc::clone(&log), c)?;
            println!(
                "MoldUDP64 to {destination}, retransmissions on {}",
                sim.request_addr()
            );
            Some(sim)
        }
        None => None,
    };
    let soup = match args.tcp {
        Some(bind) => {
            let (user, pass) = args
                .login
                .split_once(':')
                .context("--login is user:password")?;
            let credentials = Credentials::new(user.as_bytes(), pass.as_bytes())
                .context("username at most 6, password at most 10 characters")?;
            let mut c = SoupSimConfig::new(bind, credentials, session);
            c.rate = rate;
            c.disconnect_after = args.disconnect_after;
            let sim = SoupSimulator::start(Arc::clone(&log), c)?;
            println!("SoupBinTCP on {}", sim.local_addr());
            Some(sim)
        }
        None => None,
    };
    println!("serving {} messages; Ctrl-C stops", group(log.len() as u64));
    while !stop.load(Ordering::Relaxed) && !mold.as_ref().is_some_and(|m| m.is_finished()) {
        std::thread::sleep(Duration::from_millis(100));
    }
    if let Some(m) = mold {
        let s = m.stop()?;
        println!(
            "MoldUDP64: {} messages in {} packets; dropped {}, duplicated {}, reordered {}; resent {} on {} requests",
            group(s.messages_sent),
            group(s.packets_sent),
            s.packets_dropped,
            s.packets_duplicated,
            s.packets_reordered,
            group(s.messages_retransmitted),
            s.retransmit_requests
        );
    }
    if let Some(s) = soup {
        let s = s.stop();
        println!(
            "SoupBinTCP: {} logins, {} messages sent, {} disconnects",
            s.logins,
            group(s.messages_sent),
            s.disconnects
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `ticklane record`.
pub fn record(args: &RecordArgs) -> Result<ExitCode> {
    let stop = install_shutdown()?;
    let config = RunConfig::load(&args.config)?;
    let FeedConfig::Mold(feed) = config.feed_config().map_err(anyhow::Error::msg)? else {
        bail!("{}: record takes a MoldUDP64 line", args.config.display());
    };
    println!(
        "recording {} to {} (Ctrl-C stops)",
        feed.udp.bind,
        args.out.display()
    );
    let r = record_udp(&feed, &args.out, &stop)?;
    println!("wrote {} packets; {}", group(r.packets), r.end);
    Ok(ExitCode::SUCCESS)
}
