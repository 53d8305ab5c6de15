//! `ticklane run`, `ticklane sim` and `ticklane record`: argument parsing and printing only;
//! the work is in `ticklane_engine::live` and `ticklane_sim`.

use std::io::{self, IsTerminal};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use ticklane_engine::config::{FeedConfig, RunConfig};
use ticklane_engine::health::Health;
use ticklane_engine::live::{
    install_draining_shutdown, install_shutdown, record_udp, run_configured_line, run_demo,
    ConfiguredLineOptions, DemoConfig, ExchangeSim, ExchangeSimConfig, RunNotice,
};
use ticklane_engine::views::{
    demo_status, group, line_run_status, ready_line, write_demo_intro, write_demo_report,
    write_line_run, write_mold_sim_stats, write_serve_counts, write_soup_sim_stats, ExitStatus,
    NO_REQUEST_SERVER,
};
use ticklane_feed::capture::ReadOptions;
use ticklane_feed::soupbintcp::Credentials;
use ticklane_sim::{BurstLoss, Faults, GenConfig, Interruption, LineB, MessageLog, Rate};

use super::arg_values::{
    destination, fraction, linger_seconds, login, sim_rate, speed, DEFAULT_SIM_RATE,
};

/// `ticklane run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// The line to run (TOML; see engine/ticklane.example.toml). Without it, the built-in
    /// demo runs: a simulated exchange on loopback feeding the real pipeline.
    #[arg(long, conflicts_with_all = ["messages", "rate", "drop"])]
    pub config: Option<PathBuf>,
    /// Serve health, metrics and admin calls over HTTP on this address (overrides the
    /// file's `admin.listen`; loopback is the safe choice).
    #[arg(long, requires = "config", value_name = "ADDR")]
    pub admin: Option<SocketAddr>,
    /// Serve subscribers (`ticklane subscribe`) on this address (overrides the file's
    /// `serve.listen`; needs `snapshot.path`, where the initial book images come from).
    #[arg(long, requires = "config", value_name = "ADDR")]
    pub serve: Option<SocketAddr>,
    /// Serve the browser view (a live page of the books) on this address (overrides the
    /// file's `web.listen`; needs `snapshot.path`).
    #[arg(long, requires = "config", value_name = "ADDR")]
    pub web: Option<SocketAddr>,
    /// Demo only: messages in the simulated day (at least 1).
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub messages: u64,
    /// Demo only: messages per second the simulator sends (at least 1).
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..))]
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
            admin: None,
            serve: None,
            web: None,
            messages: demo.messages,
            rate: demo.rate,
            drop: demo.drop_ratio,
        }
    }
}

/// `ticklane sim`.
#[derive(Args, Debug)]
#[command(group = clap::ArgGroup::new("serve").args(["udp", "tcp"]).required(true).multiple(true))]
#[command(group = clap::ArgGroup::new("bursts").args(["burst_probability", "burst_probability_b"]).multiple(true))]
pub struct SimArgs {
    /// ITCH50 file (or capture) to serve; without it, a generated day.
    pub file: Option<PathBuf>,
    /// Generated day: messages (at least 1; not with FILE).
    #[arg(long, default_value_t = 1_000_000, conflicts_with = "file",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub messages: u64,
    /// Generated day and faults: seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Serve MoldUDP64 to this address (unicast, or a multicast group:port).
    #[arg(long, value_parser = destination)]
    pub udp: Option<SocketAddr>,
    /// With --udp: answer retransmission requests on this address.
    #[arg(long, default_value = "127.0.0.1:0", requires = "udp")]
    pub request: SocketAddr,
    /// Serve SoupBinTCP on this address.
    #[arg(long)]
    pub tcp: Option<SocketAddr>,
    /// With --tcp: the SoupBinTCP login (user:password).
    #[arg(long, default_value = "user:pass", requires = "tcp", value_parser = login)]
    pub login: Credentials,
    /// Messages per second, or `max` for unpaced (which may overrun the reader). Default:
    /// 400,000, of the order of a busy second at Nasdaq's open.
    #[arg(long, conflicts_with = "speed", value_parser = sim_rate)]
    pub rate: Option<Rate>,
    /// Play at the file's own timestamps, this many times faster (a positive factor).
    #[arg(long, value_parser = speed)]
    pub speed: Option<f64>,
    // The packet faults are MoldUDP64's: each needs --udp, so that one given to a
    // SoupBinTCP-only simulator is refused rather than ignored.
    /// With --udp: fraction of packets dropped.
    #[arg(long, default_value_t = 0.0, requires = "udp", value_parser = fraction)]
    pub drop: f64,
    /// With --udp: burst loss, probability per packet that a burst starts.
    #[arg(long, default_value_t = 0.0, requires = "udp", value_parser = fraction)]
    pub burst_probability: f64,
    /// Burst loss: packets lost per burst (at least 1; with --burst-probability or
    /// --burst-probability-b).
    #[arg(long, default_value_t = 10, requires = "bursts",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub burst_packets: u32,
    /// Line B: serve the same MoldUDP64 stream to this address too (A/B lines), with the
    /// --*-b faults of its own.
    #[arg(long, requires = "udp", value_parser = destination)]
    pub udp_b: Option<SocketAddr>,
    /// Line B: fraction of packets dropped (independently of line A's --drop; with --udp-b).
    #[arg(long, default_value_t = 0.0, requires = "udp_b", value_parser = fraction)]
    pub drop_b: f64,
    /// Line B: burst loss, probability per packet that a burst starts (--burst-packets
    /// long; with --udp-b).
    #[arg(long, default_value_t = 0.0, requires = "udp_b", value_parser = fraction)]
    pub burst_probability_b: f64,
    /// With --udp: fraction of packets sent twice.
    #[arg(long, default_value_t = 0.0, requires = "udp", value_parser = fraction)]
    pub duplicate: f64,
    /// With --udp: fraction of packets swapped with the next.
    #[arg(long, default_value_t = 0.0, requires = "udp", value_parser = fraction)]
    pub reorder: f64,
    /// With --udp: stall for --stall-ms after this many messages.
    #[arg(long, requires = "udp")]
    pub stall_after: Option<u64>,
    /// Length of the stall, in ms (at least 1; with --stall-after).
    #[arg(long, default_value_t = 500, requires = "stall_after",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub stall_ms: u64,
    /// Disconnect after this many messages (UDP: silence for a second; TCP: close).
    #[arg(long)]
    pub disconnect_after: Option<u64>,
    /// With --udp: seconds the servers stay up after the MoldUDP64 end of session, answering
    /// retransmission requests for the gaps a line still has open, as a real request
    /// server does; then the simulator exits (Ctrl-C stops it sooner). 0 exits at once.
    /// SoupBinTCP alone serves until Ctrl-C.
    #[arg(long = "linger-s", default_value = "5", requires = "udp", value_parser = linger_seconds,
          value_name = "SECONDS")]
    pub linger: Duration,
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
    let Some(path) = &args.config else {
        let stop = install_shutdown()?;
        return demo(args, &stop);
    };
    let config = RunConfig::load(path)?.with_environment()?;
    // Health exists before anything runs: draining starts at the first signal, whatever the
    // line is doing then (waiting out its stagger included).
    let health = Arc::new(Health::new());
    let stop = install_draining_shutdown(
        Some(Arc::clone(&health)),
        Some(config.engine.shutdown_timeout),
    )?;
    let options = ConfiguredLineOptions {
        admin: args.admin,
        web: args.web,
        serve: args.serve,
    };
    let mut ready = Ok(());
    let ended = run_configured_line(
        &config,
        options,
        health,
        &stop,
        &mut |notice| match notice {
            RunNotice::NoRequestServer => {
                eprintln!("ticklane run: {}: {NO_REQUEST_SERVER}", path.display());
            }
            RunNotice::Admin { addr, token } => {
                let calls = if token {
                    "admin calls need the token"
                } else {
                    "admin calls off: no token"
                };
                println!("ticklane run: admin on http://{addr} (/health, /metrics; {calls})");
            }
            RunNotice::Web(addr) => println!("ticklane run: browser view on http://{addr}/"),
            RunNotice::Staggered { instance, delay } => println!(
                "staggered start: instance {instance} waits {} ms before it connects",
                delay.as_millis()
            ),
            RunNotice::Serve(addr) => println!("ticklane run: subscribers on {addr}"),
            RunNotice::Ready(source) => match ready_line(path, source) {
                Ok(line) => println!("{line}"),
                Err(e) => ready = Err(e),
            },
        },
    )?;
    ready?;
    let mut out = io::stdout().lock();
    write_line_run(&mut out, &ended.run, ended.unrecoverable)?;
    if let Some((counts, admission)) = &ended.served {
        write_serve_counts(&mut out, counts, Some(admission))?;
    }
    let status = line_run_status(&ended.run);
    if status == ExitStatus::Failure {
        // The summary is on stdout; why the line failed goes to stderr as well, for a
        // caller that keeps only that.
        eprintln!(
            "ticklane run: {}: the line ended: {}",
            path.display(),
            ended.run.report.source.end()
        );
    }
    Ok(status)
}

fn demo(args: &RunArgs, stop: &AtomicBool) -> Result<ExitStatus> {
    write_demo_intro(
        &mut io::stdout().lock(),
        args.messages,
        args.rate,
        args.drop,
    )?;
    let config = DemoConfig {
        progress: io::stdout().is_terminal(),
        messages: args.messages,
        rate: args.rate,
        drop_ratio: args.drop,
        ..DemoConfig::default()
    };
    let report = run_demo(config, stop)?;
    write_demo_report(&mut io::stdout().lock(), &report)?;
    Ok(demo_status(
        &report,
        args.messages,
        stop.load(Ordering::Relaxed),
    ))
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
            (Some(rate), _) => rate,
            (None, Some(speed)) => Rate::timestamps(speed),
            (None, None) => Rate::per_second(DEFAULT_SIM_RATE),
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
        line_b: args.udp_b.map(|destination| LineB {
            destination,
            faults: Faults {
                seed: args.seed,
                drop_ratio: args.drop_b,
                burst_loss: (args.burst_probability_b > 0.0).then_some(BurstLoss {
                    probability: args.burst_probability_b,
                    packets: args.burst_packets,
                }),
                ..Faults::default()
            },
        }),
        disconnect_after: args.disconnect_after,
        linger: args.linger,
    };
    let unpaced = config.rate == Rate::Max;
    let sim = ExchangeSim::start(&log, config)?;
    if unpaced {
        println!(
            "unpaced (--rate max): a reader may be overrun; its kernel drops what its socket \
             buffer cannot hold (ticklane run reports them as OVERRUN)"
        );
    }
    if let (Some(udp), Some(request)) = (args.udp, sim.request_addr()) {
        match args.udp_b {
            Some(b) => println!(
                "MoldUDP64 to {udp} (line A) and {b} (line B), retransmissions on {request}"
            ),
            None => println!("MoldUDP64 to {udp}, retransmissions on {request}"),
        }
    }
    if let Some(tcp) = sim.soup_addr() {
        println!("SoupBinTCP on {tcp}");
    }
    if args.udp.is_some() {
        println!(
            "serving {} messages; retransmissions answered until {:.1} s after the end of \
             session; Ctrl-C stops",
            group(log.len() as u64),
            args.linger.as_secs_f64()
        );
    } else {
        println!("serving {} messages; Ctrl-C stops", group(log.len() as u64));
    }
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
    if let Some(folder) = args.out.parent().filter(|p| !p.as_os_str().is_empty()) {
        if !folder.is_dir() {
            eprintln!(
                "ticklane: --out {}: the folder {} does not exist",
                args.out.display(),
                folder.display()
            );
            return Ok(ExitStatus::Usage);
        }
    }
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
    if let Some(at) = r.joined_at.filter(|&at| at > 1) {
        eprintln!(
            "ticklane: warning: the recording joined the line at sequence {at}: messages 1 ..= {} \
             (the stock directory among them) are not in {}",
            at - 1,
            args.out.display()
        );
    }
    if let Some(at) = r.joined_at {
        println!(
            "joined at sequence {at}; gaps {} ({} messages missing from the file)",
            r.gaps,
            group(r.missing)
        );
    }
    if r.missing > 0 {
        // Said on stderr too, so that a script that keeps only stderr knows the file is not
        // the whole line.
        eprintln!(
            "ticklane: {} messages in {} gaps never reached {}",
            group(r.missing),
            r.gaps,
            args.out.display()
        );
    }
    Ok(ExitStatus::of_loss(r.missing))
}
