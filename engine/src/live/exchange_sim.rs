//! `ticklane sim`: the exchange simulator serving one day as MoldUDP64 (with its
//! retransmission server) and/or over SoupBinTCP, until a linger after the MoldUDP64 stream
//! has ended, or a stop is requested.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ticklane_feed::moldudp64::Session;
use ticklane_feed::soupbintcp::Credentials;
use ticklane_sim::{
    Faults, LineB, MessageLog, MoldSimConfig, MoldSimulator, Rate, SimCounts, SimError,
    SoupSimConfig, SoupSimCounts, SoupSimulator,
};

/// The session name the simulator announces.
const SESSION: &[u8] = b"TICKLANE";

/// How often [`ExchangeSim::serve`] looks at the stop flag and the stream.
const POLL: Duration = Duration::from_millis(100);

/// What to serve, and how.
#[derive(Clone, Debug)]
pub struct ExchangeSimConfig {
    /// Send MoldUDP64 to this address (unicast, or a multicast group:port).
    pub udp: Option<SocketAddr>,
    /// Where the retransmission server listens (port 0: any free port).
    pub request: SocketAddr,
    /// Serve SoupBinTCP on this address, to this login.
    pub tcp: Option<(SocketAddr, Credentials)>,
    /// With `udp`: serve GLIMPSE 5.0 snapshots of the MoldUDP64 stream's day: each login
    /// gets the state at the stream's position then.
    pub glimpse: Option<GlimpseServer>,
    /// Messages per second, the file's own timestamps sped up, or as fast as possible.
    pub rate: Rate,
    /// Seeded faults on the MoldUDP64 stream (line A; its stall and disconnect silence both
    /// lines).
    pub faults: Faults,
    /// Line B: the same MoldUDP64 stream to a second address, with per-packet faults of its
    /// own.
    pub line_b: Option<LineB>,
    /// SoupBinTCP: close the connection after this many messages.
    pub disconnect_after: Option<u64>,
    /// How long the servers stay up after the MoldUDP64 end of session: a line that ends
    /// the day with gaps open asks for them after it, as from a real request server.
    pub linger: Duration,
}

/// The GLIMPSE server of [`ExchangeSimConfig::glimpse`], and its faults, which hit the
/// first login only (a client asking again is served whole).
#[derive(Clone, Copy, Debug)]
pub struct GlimpseServer {
    /// Where it listens.
    pub bind: SocketAddr,
    /// The only login accepted.
    pub credentials: Credentials,
    /// Close the first connection after this many snapshot messages.
    pub cut_after: Option<u64>,
    /// Go silent on the first connection after this many snapshot messages.
    pub stall_after: Option<u64>,
    /// Send every snapshot at stock locate 0, stocks named by symbol only (not a fault: some
    /// venues' definitions do).
    pub locate_zero: bool,
}

impl GlimpseServer {
    /// On `bind`, accepting `credentials`, no faults.
    pub fn new(bind: SocketAddr, credentials: Credentials) -> Self {
        GlimpseServer {
            bind,
            credentials,
            cut_after: None,
            stall_after: None,
            locate_zero: false,
        }
    }
}

/// A running simulator.
pub struct ExchangeSim {
    mold: Option<MoldSimulator>,
    soup: Option<SoupSimulator>,
    glimpse: Option<SoupSimulator>,
    linger: Duration,
}

/// What the simulator sent.
#[derive(Clone, Copy, Debug)]
pub struct ExchangeSimReport {
    /// The MoldUDP64 stream's counters, if it ran.
    pub mold: Option<SimCounts>,
    /// The SoupBinTCP server's counters, if it ran.
    pub soup: Option<SoupSimCounts>,
    /// The GLIMPSE server's counters (its messages are snapshot messages), if it ran.
    pub glimpse: Option<SoupSimCounts>,
}

impl ExchangeSim {
    /// Starts whichever of the two protocols `config` names.
    ///
    /// # Errors
    ///
    /// [`SimError::InvalidConfig`] if it names neither; a socket or thread error otherwise.
    pub fn start(log: &Arc<MessageLog>, config: ExchangeSimConfig) -> Result<Self, SimError> {
        if config.udp.is_none() && config.tcp.is_none() {
            return Err(SimError::InvalidConfig {
                what: "serve MoldUDP64 (a UDP destination), SoupBinTCP (a TCP address), or both",
            });
        }
        if config.udp.is_none() && config.glimpse.is_some() {
            return Err(SimError::InvalidConfig {
                what: "GLIMPSE snapshots the MoldUDP64 stream: serve MoldUDP64 too",
            });
        }
        let session = Session::new(SESSION).expect("invariant: 8 bytes fit a 10-byte session");
        let mold = match config.udp {
            Some(destination) => {
                let mut c = MoldSimConfig::new(session, destination);
                c.rate = config.rate;
                c.faults = config.faults;
                c.line_b = config.line_b;
                c.request_bind = config.request;
                Some(MoldSimulator::start(Arc::clone(log), c)?)
            }
            None => None,
        };
        let soup = match config.tcp {
            Some((bind, credentials)) => {
                let mut c = SoupSimConfig::new(bind, credentials, session);
                c.rate = config.rate;
                c.disconnect_after = config.disconnect_after;
                Some(SoupSimulator::start(Arc::clone(log), c)?)
            }
            None => None,
        };
        let glimpse = match (&mold, config.glimpse) {
            (Some(mold), Some(g)) => {
                let mut c = SoupSimConfig::new(g.bind, g.credentials, session);
                c.disconnect_after = g.cut_after;
                c.half_open_after = g.stall_after;
                c.locate_zero = g.locate_zero;
                c.faulty_logins = Some(1);
                let live = mold.live_position();
                Some(SoupSimulator::start_glimpse(Arc::clone(log), live, c)?)
            }
            _ => None,
        };
        Ok(ExchangeSim {
            mold,
            soup,
            glimpse,
            linger: config.linger,
        })
    }

    /// The retransmission server's address, when MoldUDP64 is served.
    pub fn request_addr(&self) -> Option<SocketAddr> {
        self.mold.as_ref().map(MoldSimulator::request_addr)
    }

    /// The SoupBinTCP server's address, when it is served.
    pub fn soup_addr(&self) -> Option<SocketAddr> {
        self.soup.as_ref().map(SoupSimulator::local_addr)
    }

    /// The GLIMPSE server's address, when it is served.
    pub fn glimpse_addr(&self) -> Option<SocketAddr> {
        self.glimpse.as_ref().map(SoupSimulator::local_addr)
    }

    /// The MoldUDP64 stream's counters now, when it is served.
    pub fn mold_stats(&self) -> Option<SimCounts> {
        self.mold.as_ref().map(MoldSimulator::stats)
    }

    /// Starts the simulator for `log`, tells `started` (its addresses are known then), and
    /// serves as [`ExchangeSim::serve`] does until the linger ends or SIGINT/SIGTERM.
    ///
    /// # Errors
    ///
    /// The signal handler could not be installed, a server could not start, or the
    /// MoldUDP64 stream failed.
    pub fn serve_until_signal(
        log: &Arc<MessageLog>,
        config: ExchangeSimConfig,
        started: &mut dyn FnMut(&ExchangeSim),
    ) -> anyhow::Result<ExchangeSimReport> {
        let stop = super::install_shutdown()?;
        let sim = ExchangeSim::start(log, config)?;
        started(&sim);
        Ok(sim.serve(&stop)?)
    }

    /// Serves until the MoldUDP64 stream has ended (its end of session sent) and the linger
    /// after it has passed, or until `stop` is set; then stops both servers. Through the
    /// linger the retransmission server goes on answering. A SoupBinTCP-only simulator
    /// serves until `stop`.
    ///
    /// # Errors
    ///
    /// If the MoldUDP64 stream failed (a send or the retransmission server).
    pub fn serve(self, stop: &AtomicBool) -> Result<ExchangeSimReport, SimError> {
        while !stop.load(Ordering::Relaxed)
            && !self.mold.as_ref().is_some_and(MoldSimulator::is_finished)
        {
            std::thread::sleep(POLL);
        }
        let linger_ends = Instant::now() + self.linger;
        while !stop.load(Ordering::Relaxed) {
            let left = linger_ends.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(POLL));
        }
        let soup = self.soup.map(SoupSimulator::stop);
        let glimpse = self.glimpse.map(SoupSimulator::stop);
        let mold = self.mold.map(MoldSimulator::stop).transpose()?;
        Ok(ExchangeSimReport {
            mold,
            soup,
            glimpse,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use ticklane_feed::moldudp64::{Packet, PacketKind, RetransmitRequest};
    use ticklane_sim::GenConfig;

    fn mold_only(destination: SocketAddr, linger: Duration) -> ExchangeSimConfig {
        ExchangeSimConfig {
            udp: Some(destination),
            request: "127.0.0.1:0".parse().expect("address"),
            tcp: None,
            glimpse: None,
            rate: Rate::Max,
            faults: Faults::default(),
            line_b: None,
            disconnect_after: None,
            linger,
        }
    }

    /// Reads `socket` until a MoldUDP64 end of session comes (each read bounded by the
    /// socket's timeout).
    fn wait_for_end_of_session(socket: &UdpSocket) {
        let mut buf = [0u8; 2048];
        loop {
            let (len, _) = socket
                .recv_from(&mut buf)
                .expect("a packet within the timeout");
            let packet = Packet::parse(&buf[..len]).expect("MoldUDP64");
            if packet.kind() == PacketKind::EndOfSession {
                return;
            }
        }
    }

    #[test]
    fn the_request_server_answers_through_the_linger_and_a_stop_ends_it() {
        let log = Arc::new(MessageLog::from_generator(GenConfig {
            messages: 2_000,
            seed: 6,
            ..GenConfig::default()
        }));
        let sink = UdpSocket::bind("127.0.0.1:0").expect("sink");
        sink.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let config = mold_only(
            sink.local_addr().expect("sink address"),
            Duration::from_secs(60),
        );
        let sim = ExchangeSim::start(&log, config).expect("start");
        let request = sim.request_addr().expect("a retransmission server");
        let stop = Arc::new(AtomicBool::new(false));
        let serving = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || sim.serve(&stop))
        };
        wait_for_end_of_session(&sink);
        // Well past the poll after which the simulator used to stop serving.
        let ended = Instant::now();
        while ended.elapsed() < 5 * POLL {
            assert!(
                !serving.is_finished(),
                "the simulator stopped serving {:?} after its end of session",
                ended.elapsed()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let asker = UdpSocket::bind("127.0.0.1:0").expect("asker");
        asker
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let ask = RetransmitRequest {
            session: Session::new(SESSION).expect("fits"),
            first_seq: 1,
            count: 10,
        };
        asker.send_to(&ask.to_bytes(), request).expect("ask");
        let mut buf = [0u8; 2048];
        let (len, _) = asker
            .recv_from(&mut buf)
            .expect("answered after the end of session");
        let reply = Packet::parse(&buf[..len]).expect("MoldUDP64");
        assert_eq!((reply.sequence(), reply.message_count()), (1, 10));

        let stopping = Instant::now();
        stop.store(true, Ordering::Relaxed);
        let report = serving.join().expect("serve thread").expect("serve");
        assert!(
            stopping.elapsed() < Duration::from_secs(10),
            "a stop ends the linger at once, not after 60 s: {:?}",
            stopping.elapsed()
        );
        assert_eq!(
            report.mold.expect("MoldUDP64 ran").messages_retransmitted,
            10
        );
    }

    #[test]
    fn neither_protocol_is_refused() {
        let log = Arc::new(MessageLog::from_generator(GenConfig {
            messages: 10,
            ..GenConfig::default()
        }));
        let config = ExchangeSimConfig {
            udp: None,
            request: "127.0.0.1:0".parse().expect("address"),
            tcp: None,
            glimpse: None,
            rate: Rate::Max,
            faults: Faults::default(),
            line_b: None,
            disconnect_after: None,
            linger: Duration::ZERO,
        };
        assert!(matches!(
            ExchangeSim::start(&log, config),
            Err(SimError::InvalidConfig { .. })
        ));
    }

    #[test]
    fn a_mold_stream_serves_every_message_and_ends_by_itself() {
        let log = Arc::new(MessageLog::from_generator(GenConfig {
            messages: 2_000,
            seed: 5,
            ..GenConfig::default()
        }));
        let sink = UdpSocket::bind("127.0.0.1:0").expect("sink");
        let config = mold_only(sink.local_addr().expect("sink address"), Duration::ZERO);
        let sim = ExchangeSim::start(&log, config).expect("start");
        assert!(sim.request_addr().is_some());
        assert!(sim.soup_addr().is_none());
        let never = AtomicBool::new(false);
        let report = sim.serve(&never).expect("serve");
        let mold = report.mold.expect("MoldUDP64 ran");
        assert_eq!(mold.messages_sent, 2_000);
        assert!(report.soup.is_none());
    }
}
