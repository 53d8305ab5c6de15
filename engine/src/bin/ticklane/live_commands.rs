//! `ticklane run`, `ticklane sim` and `ticklane record`: argument parsing and printing only;
//! the work is in `ticklane_engine::live` and `ticklane_feed::sim`.

use std::io::{self, IsTerminal, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use ticklane_engine::config::{FeedConfig, RunConfig};
use ticklane_engine::live::{
    install_shutdown, record_udp, run_demo, run_line, DemoConfig, ExchangeSim, ExchangeSimConfig,
    LineSource, LineSourceReport, TransportCheck,
};
use ticklane_engine::overload::OverloadConfig;
use ticklane_engine::pipeline::{human_ns, Percentiles};
use ticklane_engine::snapshot::SnapshotWriter;
use ticklane_engine::views::{
    group, write_latency, write_mold_sim_stats, write_mold_source, write_overload,
    write_soup_sim_stats, write_soup_source, ExitStatus, NO_REQUEST_SERVER,
};
use ticklane_feed::capture::ReadOptions;
use ticklane_feed::sim::{BurstLoss, Faults, GenConfig, Interruption, MessageLog, Rate};
use ticklane_feed::soupbintcp::Credentials;

use super::arg_values::{fraction, login};

/// `ticklane run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// The line to run (TOML; see engine/ticklane.example.toml). Without it, the built-in
    /// demo runs: a simulated exchange on loopback feeding the real pipeline.
    #[arg(long, conflicts_with_all = ["messages", "rate", "drop"])]
    pub config: Option<PathBuf>,
    /// Demo only: messages in the simulated day.
    #[arg(long, default_value_t = 1_000_000)]
    pub messages: u64,
    /// Demo only: messages per second the simulator sends.
    #[arg(long, default_value_t = 1_000_000)]
    pub rate: u64,
    /// Demo only: fraction of packets the simulator drops (recovered by retransmission).
    #[arg(long, default_value_t = 0.002, value_parser = fraction)]
    pub drop: f64,
}

impl RunArgs {
    /// `ticklane` with no subcommand: the demo with its defaults.
    pub fn demo() -> Self {
        let demo = DemoConfig::default();
        RunArgs {
            config: None,
            messages: demo.messages,
            rate: demo.rate,
            drop: demo.drop_ratio,
        }
    }
}

/// `ticklane sim`.
#[derive(Args, Debug)]
#[command(group = clap::ArgGroup::new("serve").args(["udp", "tcp"]).required(true).multiple(true))]
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
    #[arg(long, default_value = "user:pass", value_parser = login)]
    pub login: Credentials,
    /// Messages per second (default: as fast as possible).
    #[arg(long, conflicts_with = "speed")]
    pub rate: Option<u64>,
    /// Play at the file's own timestamps, this many times faster.
    #[arg(long)]
    pub speed: Option<f64>,
    /// Fraction of packets dropped.
    #[arg(long, default_value_t = 0.0, value_parser = fraction)]
    pub drop: f64,
    /// Burst loss: probability per packet that a burst starts.
    #[arg(long, default_value_t = 0.0, value_parser = fraction)]
    pub burst_probability: f64,
    /// Burst loss: packets lost per burst.
    #[arg(long, default_value_t = 10)]
    pub burst_packets: u32,
    /// Fraction of packets sent twice.
    #[arg(long, default_value_t = 0.0, value_parser = fraction)]
    pub duplicate: f64,
    /// Fraction of packets swapped with the next.
    #[arg(long, default_value_t = 0.0, value_parser = fraction)]
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

/// `ticklane run`.
pub fn run(args: &RunArgs) -> Result<ExitStatus> {
    let stop = install_shutdown()?;
    let Some(path) = &args.config else {
        return demo(args, &stop);
    };
    let config = RunConfig::load(path)?;
    let pipeline = config.pipeline()?;
    let feed = config.feed_config()?;
    let snapshot = match &config.snapshot.path {
        Some(p) => Some(
            SnapshotWriter::create(p, config.snapshot.capacity, config.snapshot.depth)
                .with_context(|| format!("snapshot {}", p.display()))?,
        ),
        None => None,
    };
    let unrecoverable = matches!(&feed, FeedConfig::Mold(c) if c.request_server.is_none());
    if unrecoverable {
        eprintln!("ticklane run: {}: {NO_REQUEST_SERVER}", path.display());
    }
    let source = LineSource::open(&feed, &pipeline)?;
    println!("{}", ready_line(path, &source)?);
    let run = run_line(source, pipeline, snapshot, OverloadConfig::default(), &stop)?;
    let report = &run.report;
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "  messages     {:>14}   in {:.3} s",
        group(report.book.messages),
        report.elapsed.as_secs_f64()
    )?;
    if unrecoverable {
        writeln!(out, "  retransmit   {NO_REQUEST_SERVER}")?;
    }
    write_source(&mut out, &report.source)?;
    let latency = &report.book.latency;
    write_latency(
        &mut out,
        "receive -> applied",
        &Percentiles::of(&latency.receive_to_applied),
    )?;
    write_latency(
        &mut out,
        "receive -> published",
        &Percentiles::of(&latency.receive_to_published),
    )?;
    write_overload(&mut out, run.overload.as_ref())?;
    // A failure outranks loss: the loss count of a line that failed may be incomplete.
    Ok(if report.source.end().is_error() {
        ExitStatus::Failure
    } else {
        ExitStatus::of_loss(declared_lost(&report.source))
    })
}

/// Messages the line declared lost: a MoldUDP64 line's lost ranges; SoupBinTCP cannot
/// declare loss (TCP delivers in order or the session fails).
fn declared_lost(source: &LineSourceReport) -> u64 {
    match source {
        LineSourceReport::Mold(r) => r.lost.messages(),
        LineSourceReport::Soup(_) => 0,
    }
}

/// The line a parent process waits for: printed once the signal handlers are installed and
/// a MoldUDP64 line's sockets are bound (a SoupBinTCP line connects when it runs).
fn ready_line(config: &Path, source: &LineSource) -> io::Result<String> {
    let listening = match source {
        LineSource::Mold(s) => format!("MoldUDP64 bound on {}", s.local_addr()?),
        LineSource::Soup(_) => "SoupBinTCP connecting".to_string(),
    };
    Ok(format!(
        "ticklane run: ready ({}; {listening}; Ctrl-C stops, drains and flushes)",
        config.display()
    ))
}

fn write_source(out: &mut impl Write, source: &LineSourceReport) -> io::Result<()> {
    match source {
        LineSourceReport::Mold(r) => write_mold_source(out, r),
        LineSourceReport::Soup(r) => write_soup_source(out, r),
    }
}

fn demo(args: &RunArgs, stop: &AtomicBool) -> Result<ExitStatus> {
    println!(
        "ticklane live demo: a simulated exchange sends {} messages as MoldUDP64 over loopback UDP at {} msg/s,\n\
         dropping {:.1}% of packets; the pipeline (reader thread -> SPSC ring -> book thread -> snapshot)\n\
         recovers them from the retransmission server.\n",
        group(args.messages),
        group(args.rate),
        args.drop * 100.0
    );
    let config = DemoConfig {
        progress: io::stdout().is_terminal(),
        messages: args.messages,
        rate: args.rate,
        drop_ratio: args.drop,
        ..DemoConfig::default()
    };
    let r = run_demo(config, stop)?;
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "  messages     {:>14}   in {:.3} s = {:.2} M msg/s",
        group(r.messages),
        r.elapsed.as_secs_f64(),
        r.messages as f64 / r.elapsed.as_secs_f64() / 1e6
    )?;
    write_source(&mut out, &r.source)?;
    write_latency(&mut out, "receive -> applied", &r.receive_to_applied)?;
    write_latency(&mut out, "receive -> published", &r.receive_to_published)?;
    write_overload(&mut out, r.overload.as_ref())?;
    if r.interrupted {
        writeln!(
            out,
            "  interrupted  by a signal, after {} messages",
            group(r.messages)
        )?;
    }
    let check = match r.transport {
        TransportCheck::Same { messages } => format!(
            "books equal a replay of the {} messages received (the transport check: same messages, same books)",
            group(messages)
        ),
        TransportCheck::Differs { messages } => format!(
            "books DIFFER FROM a replay of the {} messages received: the transport changed them",
            group(messages)
        ),
        TransportCheck::Unknown => {
            "not compared: the line was not MoldUDP64, so what it delivered is not known by sequence".to_string()
        }
    };
    writeln!(out, "  snapshot     {check}")?;
    writeln!(
        out,
        "\n  (latency from the reader's receive stamp to the snapshot slot published; p50 {} here on a\n   shared 2-core machine with spin-yield waits. Next: `ticklane run --config FILE` for a real line.)",
        human_ns(r.receive_to_published.p50)
    )?;
    // The day is accounted for when every message was applied or declared lost; loss is a
    // status of its own, below a failure.
    let lost = declared_lost(&r.source);
    Ok(if !r.transport.is_same() {
        ExitStatus::Failure
    } else if r.interrupted || stop.load(Ordering::Relaxed) {
        ExitStatus::Interrupted
    } else if r.messages + lost == args.messages {
        ExitStatus::of_loss(lost)
    } else {
        ExitStatus::Failure
    })
}

/// `ticklane sim`.
pub fn sim(args: &SimArgs) -> Result<ExitStatus> {
    let stop = install_shutdown()?;
    let log = Arc::new(match &args.file {
        Some(path) => MessageLog::from_capture(path, ReadOptions::default())?,
        None => MessageLog::from_generator(GenConfig {
            messages: args.messages,
            seed: args.seed,
            ..GenConfig::default()
        }),
    });
    let interruption = |after: Option<u64>, duration| {
        after.map(|after_messages| Interruption {
            after_messages,
            duration,
        })
    };
    let config = ExchangeSimConfig {
        udp: args.udp,
        request: args.request,
        tcp: args.tcp.map(|bind| (bind, args.login)),
        rate: match (args.rate, args.speed) {
            (Some(n), _) => Rate::per_second(n),
            (None, Some(speed)) => Rate::timestamps(speed),
            (None, None) => Rate::Max,
        },
        faults: Faults {
            seed: args.seed,
            drop_ratio: args.drop,
            burst_loss: (args.burst_probability > 0.0).then_some(BurstLoss {
                probability: args.burst_probability,
                packets: args.burst_packets,
            }),
            duplicate_ratio: args.duplicate,
            reorder_ratio: args.reorder,
            stall: interruption(args.stall_after, Duration::from_millis(args.stall_ms)),
            disconnect: interruption(args.disconnect_after, Duration::from_secs(1)),
            ..Faults::default()
        },
        disconnect_after: args.disconnect_after,
    };
    let sim = ExchangeSim::start(&log, config)?;
    if let (Some(udp), Some(request)) = (args.udp, sim.request_addr()) {
        println!("MoldUDP64 to {udp}, retransmissions on {request}");
    }
    if let Some(tcp) = sim.soup_addr() {
        println!("SoupBinTCP on {tcp}");
    }
    println!("serving {} messages; Ctrl-C stops", group(log.len() as u64));
    let report = sim.serve(&stop)?;
    let mut out = io::stdout().lock();
    if let Some(s) = &report.mold {
        write_mold_sim_stats(&mut out, s)?;
    }
    if let Some(s) = &report.soup {
        write_soup_sim_stats(&mut out, s)?;
    }
    Ok(ExitStatus::Success)
}

/// `ticklane record`.
pub fn record(args: &RecordArgs) -> Result<ExitStatus> {
    let stop = install_shutdown()?;
    let config = RunConfig::load(&args.config)?;
    let FeedConfig::Mold(feed) = config.feed_config()? else {
        eprintln!(
            "ticklane: {}: record takes a MoldUDP64 line (kind = \"moldudp64\")",
            args.config.display()
        );
        return Ok(ExitStatus::Usage);
    };
    println!(
        "recording {} to {} (Ctrl-C stops)",
        feed.udp.bind,
        args.out.display()
    );
    let r = record_udp(&feed, &args.out, &stop)?;
    println!("wrote {} packets; {}", group(r.packets), r.end);
    Ok(ExitStatus::Success)
}
