//! The kernel path: the exchange simulator sends the day as MoldUDP64 over loopback UDP at a
//! fixed rate into the engine's real `MoldSource`.
//!
//! The simulator is started by [`UdpSource::open`], on the caller's thread, never on the
//! reader thread: threads inherit their creator's CPU affinity, and the simulator's threads
//! must not share the reader's pinned core. What it sends before the reader polls waits in
//! the socket and is stamped when it is read, as a real feed's would be. Latency here is
//! measured from
//! the receive stamp (when the reader takes the datagram off the socket): the simulator
//! batches messages into packets (a packet leaves when the last of its messages is due), so
//! an intended time per message would measure the simulator's batching as much as the
//! engine. The intended-time (coordinated-omission-free) figures come from the in-process
//! source, which has no batching.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use ticklane_engine::clock::Clock;
use ticklane_engine::pipeline::{
    FrameProducer, FrameSource, MoldFeedConfig, MoldSource, MoldSourceReport, WaitStrategy,
};
use ticklane_feed::moldudp64::{RecoveryConfig, Session};
use ticklane_feed::net::UdpFeedConfig;
use ticklane_sim::{MessageLog, MoldSimConfig, MoldSimulator, Rate, SimCounts};

/// What the UDP source did: the reader's report and the simulator's counters.
pub struct UdpReport {
    /// The engine's MoldUDP64 reader.
    pub source: MoldSourceReport,
    /// The simulator's counters, or why it failed.
    pub sim: Result<SimCounts, String>,
}

/// A `MoldSource` with its simulator; the simulator is stopped when the source ends.
pub struct UdpSource {
    mold: MoldSource,
    sim: MoldSimulator,
}

impl UdpSource {
    /// Opens the reader's sockets on loopback and starts the simulator sending `log` to them
    /// at `rate` messages per second (`None`: as fast as it can).
    ///
    /// # Errors
    ///
    /// If a socket cannot be opened or the simulator cannot start.
    pub fn open(
        log: Arc<MessageLog>,
        rate: Option<u64>,
        wait: WaitStrategy,
    ) -> std::io::Result<Self> {
        let feed = MoldFeedConfig {
            udp: UdpFeedConfig {
                bind: (std::net::Ipv4Addr::LOCALHOST, 0).into(),
                ..UdpFeedConfig::default()
            },
            recovery: RecoveryConfig {
                start_sequence: Some(1),
                retransmit_timeout: Duration::from_millis(20),
                max_retries: 10,
                ..RecoveryConfig::default()
            },
            silence_timeout: Duration::from_secs(5),
            max_duration: Some(Duration::from_secs(600)),
            ..MoldFeedConfig::default()
        };
        let mut mold = MoldSource::open(feed, wait)?;
        let session = Session::new(b"LATENCY").expect("invariant: 7 ASCII bytes fit a session");
        let mut config = MoldSimConfig::new(session, mold.local_addr()?);
        config.rate = rate.map_or(Rate::Max, Rate::per_second);
        let sim = MoldSimulator::start(log, config).map_err(std::io::Error::other)?;
        mold.set_request_server(sim.request_addr());
        Ok(UdpSource { mold, sim })
    }
}

impl FrameSource for UdpSource {
    type Report = UdpReport;

    fn run<Q: FrameProducer>(self, frames: Q, clock: Clock, stop: &AtomicBool) -> UdpReport {
        let source = self.mold.run(frames, clock, stop);
        UdpReport {
            source,
            sim: self.sim.stop().map_err(|e| e.to_string()),
        }
    }
}
