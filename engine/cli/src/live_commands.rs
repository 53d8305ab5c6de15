//! `ticklane run`, `ticklane sim` and `ticklane record`: argument parsing and printing only;
//! the work is in `ticklane_engine::live` and `ticklane_sim`.

use std::io::{self, IsTerminal};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;

use crate::aeron_publish::AeronPublish;
use clap::Args;
use ticklane_engine::live::{
    record_line_file, run_demo_until_signal, run_line_file, ConfiguredLineOptions, DemoConfig,
    ExchangeSim, ExchangeSimConfig, GlimpseServer,
};
use ticklane_engine::views::{
    demo_status, write_demo_intro, write_demo_report, write_line_end, write_record_end,
    write_run_notice, write_sim_banner, write_sim_report, ExitStatus,
};
use ticklane_feed::capture::ReadOptions;
use ticklane_feed::soupbintcp::Credentials;
use ticklane_sim::{BurstLoss, Faults, GenConfig, Interruption, LineB, MessageLog, Rate};

use super::arg_values::{destination, fraction, linger_seconds, speed};

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
    /// Publish every book change on this Aeron channel (overrides the file's
    /// `aeron.channel`; needs `snapshot.path`, and a build with the `aeron` feature), e.g.
    /// `aeron:udp?endpoint=239.1.1.1:40456|interface=10.0.0.5` or `aeron:ipc`.
    #[arg(long, requires = "config", value_name = "CHANNEL")]
    pub aeron: Option<String>,
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
            aeron: None,
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
    #[arg(long, default_value = "user:pass", requires = "tcp", value_parser = Credentials::parse)]
    pub login: Credentials,
    /// With --udp: serve GLIMPSE 5.0 snapshots on this address: each login gets the state
    /// of the day at the MoldUDP64 stream's position, then End of Snapshot.
    #[arg(long, requires = "udp")]
    pub glimpse: Option<SocketAddr>,
    /// With --glimpse: its SoupBinTCP login (user:password).
    #[arg(long, default_value = "user:pass", requires = "glimpse", value_parser = Credentials::parse)]
    pub glimpse_login: Credentials,
    /// With --glimpse: close the first snapshot connection after this many messages.
    #[arg(long, requires = "glimpse")]
    pub glimpse_cut_after: Option<u64>,
    /// With --glimpse: go silent on the first snapshot connection after this many messages.
    #[arg(long, requires = "glimpse")]
    pub glimpse_stall_after: Option<u64>,
    /// With --glimpse: send snapshots at stock locate 0, each stock named by symbol only, as
    /// some venues do; the line learns each locate from the live stream.
    #[arg(long, requires = "glimpse")]
    pub glimpse_locate_zero: bool,
    /// Messages per second, or `max` for unpaced (which may overrun the reader). Default:
    /// 400,000, of the order of a busy second at Nasdaq's open.
    #[arg(long, conflicts_with = "speed", value_parser = Rate::parse)]
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
        return demo(args);
    };
    let options = ConfiguredLineOptions {
        admin: args.admin,
        web: args.web,
        serve: args.serve,
    };
    let mut written = Ok(());
    let mut aeron = AeronPublish::new(args.aeron.clone());
    let ended = run_line_file(
        path,
        options,
        &mut |notice| {
            let (mut out, mut err) = (io::stdout().lock(), io::stderr().lock());
            if let Err(e) = write_run_notice(&mut out, &mut err, path, notice) {
                written = Err(e);
            }
        },
        Some(&mut aeron),
    )?;
    written?;
    let status = write_line_end(
        &mut io::stdout().lock(),
        &mut io::stderr().lock(),
        path,
        &ended,
    )?;
    if let Some(line) = aeron.summary() {
        println!("{line}");
    }
    Ok(status)
}

fn demo(args: &RunArgs) -> Result<ExitStatus> {
    let config = DemoConfig {
        progress: io::stdout().is_terminal(),
        messages: args.messages,
        rate: args.rate,
        drop_ratio: args.drop,
        ..DemoConfig::default()
    };
    let (report, stopped) = run_demo_until_signal(config, &mut || {
        write_demo_intro(
            &mut io::stdout().lock(),
            args.messages,
            args.rate,
            args.drop,
        )
    })?;
    write_demo_report(&mut io::stdout().lock(), &report)?;
    Ok(demo_status(&report, args.messages, stopped))
}

/// `ticklane sim`.
pub fn sim(args: &SimArgs) -> Result<ExitStatus> {
    let log = Arc::new(match &args.file {
        Some(path) => MessageLog::from_capture(path, ReadOptions::default())?,
        None => MessageLog::from_generator(GenConfig {
            messages: args.messages,
            seed: args.seed,
            ..GenConfig::default()
        }),
    });
    let config = args.config();
    let unpaced = config.rate == Rate::Max;
    let udp = args.udp.map(|udp| (udp, args.udp_b));
    let mut banner = Ok(());
    let report = ExchangeSim::serve_until_signal(&log, config, &mut |sim| {
        let out = &mut io::stdout().lock();
        banner = write_sim_banner(out, sim, udp, unpaced, log.len(), args.linger);
    })?;
    banner?;
    write_sim_report(&mut io::stdout().lock(), &report)?;
    Ok(ExitStatus::Success)
}

impl SimArgs {
    /// The simulator's configuration: what to serve, at what rate, with which faults.
    fn config(&self) -> ExchangeSimConfig {
        let interruption = |after: Option<u64>, duration| {
            after.map(|after_messages| Interruption {
                after_messages,
                duration,
            })
        };
        let burst = |probability: f64| {
            (probability > 0.0).then_some(BurstLoss {
                probability,
                packets: self.burst_packets,
            })
        };
        ExchangeSimConfig {
            udp: self.udp,
            request: self.request,
            tcp: self.tcp.map(|bind| (bind, self.login)),
            glimpse: self.glimpse.map(|bind| GlimpseServer {
                cut_after: self.glimpse_cut_after,
                stall_after: self.glimpse_stall_after,
                locate_zero: self.glimpse_locate_zero,
                ..GlimpseServer::new(bind, self.glimpse_login)
            }),
            rate: match (self.rate, self.speed) {
                (Some(rate), _) => rate,
                (None, Some(speed)) => Rate::timestamps(speed),
                (None, None) => Rate::per_second(Rate::DEFAULT_PER_SECOND),
            },
            faults: Faults {
                seed: self.seed,
                drop_ratio: self.drop,
                burst_loss: burst(self.burst_probability),
                duplicate_ratio: self.duplicate,
                reorder_ratio: self.reorder,
                stall: interruption(self.stall_after, Duration::from_millis(self.stall_ms)),
                disconnect: interruption(self.disconnect_after, Duration::from_secs(1)),
                ..Faults::default()
            },
            line_b: self.udp_b.map(|destination| LineB {
                destination,
                faults: Faults {
                    seed: self.seed,
                    drop_ratio: self.drop_b,
                    burst_loss: burst(self.burst_probability_b),
                    ..Faults::default()
                },
            }),
            disconnect_after: self.disconnect_after,
            linger: self.linger,
        }
    }
}

/// `ticklane record`.
pub fn record(args: &RecordArgs) -> Result<ExitStatus> {
    let report = record_line_file(&args.config, &args.out, &mut |feed| {
        println!(
            "recording {} to {} (Ctrl-C stops)",
            feed.udp.bind,
            args.out.display()
        );
    })?;
    Ok(write_record_end(
        &mut io::stdout().lock(),
        &mut io::stderr().lock(),
        &args.out,
        &report,
    )?)
}
