//! `ticklane sim`: the exchange simulator serving one day as MoldUDP64 (with its
//! retransmission server) and/or over SoupBinTCP, until the MoldUDP64 stream has ended or a
//! stop is requested.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ticklane_feed::moldudp64::Session;
use ticklane_feed::sim::{
    Faults, LineB, MessageLog, MoldSimConfig, MoldSimulator, Rate, SimError, SimStats,
    SoupSimConfig, SoupSimStats, SoupSimulator,
};
use ticklane_feed::soupbintcp::Credentials;

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
}

/// A running simulator.
pub struct ExchangeSim {
    mold: Option<MoldSimulator>,
    soup: Option<SoupSimulator>,
}

/// What the simulator sent.
#[derive(Clone, Copy, Debug)]
pub struct ExchangeSimReport {
    /// The MoldUDP64 stream's counters, if it ran.
    pub mold: Option<SimStats>,
    /// The SoupBinTCP server's counters, if it ran.
    pub soup: Option<SoupSimStats>,
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
        Ok(ExchangeSim { mold, soup })
    }

    /// The retransmission server's address, when MoldUDP64 is served.
    pub fn request_addr(&self) -> Option<SocketAddr> {
        self.mold.as_ref().map(MoldSimulator::request_addr)
    }

    /// The SoupBinTCP server's address, when it is served.
    pub fn soup_addr(&self) -> Option<SocketAddr> {
        self.soup.as_ref().map(SoupSimulator::local_addr)
    }

    /// Serves until the MoldUDP64 stream has ended (its end of session sent) or `stop` is
    /// set, then stops both servers. A SoupBinTCP-only simulator serves until `stop`.
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
        let soup = self.soup.map(SoupSimulator::stop);
        let mold = self.mold.map(MoldSimulator::stop).transpose()?;
        Ok(ExchangeSimReport { mold, soup })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use ticklane_feed::sim::GenConfig;

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
            rate: Rate::Max,
            faults: Faults::default(),
            line_b: None,
            disconnect_after: None,
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
        let config = ExchangeSimConfig {
            udp: Some(sink.local_addr().expect("sink address")),
            request: "127.0.0.1:0".parse().expect("address"),
            tcp: None,
            rate: Rate::Max,
            faults: Faults::default(),
            line_b: None,
            disconnect_after: None,
        };
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
