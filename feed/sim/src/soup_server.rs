//! The simulator's SoupBinTCP side: serves a message log over TCP to clients that log in
//! with the configured credentials, from the sequence each asks for, at a paced rate, with
//! an optional disconnect after N messages per connection (a fault a client must survive by
//! logging in again at its next sequence).
//!
//! The same server serves GLIMPSE 5.0 ([`SoupSimulator::start_glimpse`]): each login is
//! sent the snapshot of the day at the live stream's position at that moment
//! (`glimpse.rs`), from sequence 1, then end of session.
//!
//! One thread accepts; each connection gets a thread of its own (at most
//! `max_connections` at once), driving the sans-I/O `SoupServerSession`.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::clock::{MonotonicClock, SimClock};
use super::glimpse::{glimpse_snapshot_as, SnapshotForm};
use super::pacing::{Pacer, Rate, WaitStrategy};
use super::{MessageLog, SimError};
use ticklane_feed::moldudp64::Session;
use ticklane_feed::soupbintcp::{
    Credentials, ServerConfig, ServerEvent, ServerState, SoupServerSession,
};

/// What the SoupBinTCP simulator serves and how.
#[derive(Clone, Copy, Debug)]
pub struct SoupSimConfig {
    /// Address to listen on (`127.0.0.1:0` picks a free port).
    pub bind: SocketAddr,
    /// The only credentials accepted.
    pub credentials: Credentials,
    /// The session name announced at login.
    pub session: Session,
    /// How fast each connection streams.
    pub rate: Rate,
    /// Close each connection after sending this many messages on it (a fault).
    pub disconnect_after: Option<u64>,
    /// Go half-open on each connection after sending this many messages on it (a fault):
    /// nothing more is written, not even a heartbeat, and nothing is closed; what the
    /// client sends is read and ignored until it closes. The client sees a peer that
    /// vanished without a FIN, which only its heartbeat timeout can tell.
    pub half_open_after: Option<u64>,
    /// A GLIMPSE snapshot ends with a malformed End of Snapshot (a sequence field that is no
    /// number): a fault.
    pub malformed_end: bool,
    /// A GLIMPSE snapshot names every stock by symbol only, at stock locate 0 (as some
    /// venues' definitions do), to every login.
    pub locate_zero: bool,
    /// The faults above apply to this many logins, the first ones, only (`None`: to
    /// every login): a GLIMPSE snapshot cut once, then served whole when asked again.
    pub faulty_logins: Option<u64>,
    /// Accept this many logins, then refuse every later one as not authorized (`None`: no
    /// limit): a snapshot server that served the start and then shut its door.
    pub logins_allowed: Option<u64>,
    /// Send end of session after the last message.
    pub end_of_session: bool,
    /// Connections served at once; more are refused (closed at accept).
    pub max_connections: usize,
}

impl SoupSimConfig {
    /// Listening on `bind`, accepting `credentials`, at full speed, no faults.
    pub fn new(bind: SocketAddr, credentials: Credentials, session: Session) -> Self {
        SoupSimConfig {
            bind,
            credentials,
            session,
            rate: Rate::Max,
            disconnect_after: None,
            half_open_after: None,
            malformed_end: false,
            locate_zero: false,
            faulty_logins: None,
            logins_allowed: None,
            end_of_session: true,
            max_connections: 8,
        }
    }
}

/// Counters of the SoupBinTCP simulator, over all connections.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SoupSimCounts {
    /// Connections accepted.
    pub connections: u64,
    /// Logins accepted.
    pub logins: u64,
    /// Logins rejected.
    pub rejected: u64,
    /// Sequenced messages sent.
    pub messages_sent: u64,
    /// Connections closed by the disconnect fault.
    pub disconnects: u64,
    /// Connections left half-open by the half-open fault.
    pub half_opened: u64,
    /// Connections refused because `max_connections` were busy.
    pub refused: u64,
}

/// The first live sequence not yet released, read at each GLIMPSE login.
pub type LivePosition = Arc<dyn Fn() -> u64 + Send + Sync>;

/// What each connection is served.
#[derive(Clone)]
enum Served {
    /// The day's messages, from the sequence the client asks for.
    Day(Arc<MessageLog>),
    /// A GLIMPSE snapshot of the day, made at each login at the live position.
    Glimpse(Arc<MessageLog>, LivePosition),
}

#[derive(Default)]
struct Counters {
    connections: AtomicU64,
    logins: AtomicU64,
    rejected: AtomicU64,
    messages_sent: AtomicU64,
    disconnects: AtomicU64,
    half_opened: AtomicU64,
    refused: AtomicU64,
    active: AtomicUsize,
}

impl Counters {
    fn snapshot(&self) -> SoupSimCounts {
        SoupSimCounts {
            connections: self.connections.load(Ordering::Relaxed),
            logins: self.logins.load(Ordering::Relaxed),
            rejected: self.rejected.load(Ordering::Relaxed),
            messages_sent: self.messages_sent.load(Ordering::Relaxed),
            disconnects: self.disconnects.load(Ordering::Relaxed),
            half_opened: self.half_opened.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
        }
    }
}

/// A running SoupBinTCP simulator; dropping it stops it.
pub struct SoupSimulator {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    counters: Arc<Counters>,
    acceptor: Option<JoinHandle<()>>,
}

impl SoupSimulator {
    /// Listens and starts accepting.
    ///
    /// # Errors
    ///
    /// [`SimError::InvalidConfig`] for a bad rate; [`SimError::Socket`] if the listener
    /// cannot be bound; [`SimError::Spawn`] if the thread cannot start.
    pub fn start(log: Arc<MessageLog>, config: SoupSimConfig) -> Result<Self, SimError> {
        Self::serve_as(Served::Day(log), config)
    }

    /// Listens and serves GLIMPSE 5.0: each login gets the snapshot of `log` before the
    /// sequence `live` says is next, whatever sequence it asked for, then end of session.
    ///
    /// # Errors
    ///
    /// As [`SoupSimulator::start`].
    pub fn start_glimpse(
        log: Arc<MessageLog>,
        live: LivePosition,
        config: SoupSimConfig,
    ) -> Result<Self, SimError> {
        Self::serve_as(Served::Glimpse(log, live), config)
    }

    fn serve_as(served: Served, config: SoupSimConfig) -> Result<Self, SimError> {
        config.rate.validate()?;
        let socket_error = |action, source| SimError::Socket {
            addr: config.bind,
            action,
            source,
        };
        let listener = TcpListener::bind(config.bind).map_err(|e| socket_error("bind", e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| socket_error("set non-blocking", e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| socket_error("read the bound address", e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let counters = Arc::new(Counters::default());
        let acceptor = {
            let (stop, counters) = (Arc::clone(&stop), Arc::clone(&counters));
            thread::Builder::new()
                .name("sim-soup-accept".into())
                .spawn(move || accept_loop(listener, &served, config, &stop, &counters))
                .map_err(|source| SimError::Spawn {
                    thread: "sim-soup-accept",
                    source,
                })?
        };
        Ok(SoupSimulator {
            addr,
            stop,
            counters,
            acceptor: Some(acceptor),
        })
    }

    /// The address clients connect to.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Counters so far.
    pub fn stats(&self) -> SoupSimCounts {
        self.counters.snapshot()
    }

    /// Stops accepting and serving; returns the final counters.
    pub fn stop(mut self) -> SoupSimCounts {
        self.shutdown();
        self.counters.snapshot()
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

impl Drop for SoupSimulator {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn accept_loop(
    listener: TcpListener,
    served: &Served,
    config: SoupSimConfig,
    stop: &Arc<AtomicBool>,
    counters: &Arc<Counters>,
) {
    let mut workers: Vec<JoinHandle<()>> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => {
                counters.connections.fetch_add(1, Ordering::Relaxed);
                if counters.active.load(Ordering::Relaxed) >= config.max_connections {
                    counters.refused.fetch_add(1, Ordering::Relaxed);
                    continue; // dropping the stream closes it
                }
                counters.active.fetch_add(1, Ordering::Relaxed);
                let (served, stop, shared) =
                    (served.clone(), Arc::clone(stop), Arc::clone(counters));
                let spawned =
                    thread::Builder::new()
                        .name("sim-soup-conn".into())
                        .spawn(move || {
                            let _ = serve(stream, &served, config, &stop, &shared);
                            shared.active.fetch_sub(1, Ordering::Relaxed);
                        });
                match spawned {
                    Ok(handle) => workers.push(handle),
                    Err(_) => {
                        counters.active.fetch_sub(1, Ordering::Relaxed);
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                thread::sleep(Duration::from_millis(1))
            }
            Err(_) => thread::sleep(Duration::from_millis(1)),
        }
        workers.retain(|w| !w.is_finished());
    }
    for w in workers {
        let _ = w.join();
    }
}

/// Writes what the session queued; `false` if the peer is gone.
fn flush(stream: &mut TcpStream, session: &mut SoupServerSession) -> bool {
    while !session.output().is_empty() {
        match stream.write(session.output()) {
            Ok(0) => return false,
            Ok(n) => session.consume_output(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    true
}

/// The half-open fault: reads (and ignores) until the client closes, the connection fails
/// or the simulator stops; writes nothing.
fn hang(stream: &mut TcpStream, stop: &AtomicBool) -> io::Result<()> {
    let mut sink = [0u8; 1024];
    while !stop.load(Ordering::Relaxed) {
        match stream.read(&mut sink) {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                thread::sleep(Duration::from_millis(1));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Serves one connection until it logs out, ends, is cut by the fault, or the simulator
/// stops.
fn serve(
    mut stream: TcpStream,
    served: &Served,
    config: SoupSimConfig,
    stop: &AtomicBool,
    counters: &Counters,
) -> io::Result<()> {
    stream.set_nonblocking(true)?;
    stream.set_nodelay(true)?;
    let origin = Instant::now();
    let now = || origin.elapsed();
    let clock = MonotonicClock::new(WaitStrategy::default());
    let over = config
        .logins_allowed
        .is_some_and(|n| counters.logins.load(Ordering::Relaxed) >= n);
    // Past the logins allowed only a login nobody is given matches: every real one is
    // refused as not authorized.
    let accepted = match Credentials::new(b"shut", b"no-entry") {
        Some(nobody) if over && nobody != config.credentials => nobody,
        _ => config.credentials,
    };
    let server = ServerConfig::new(accepted, config.session);
    // A GLIMPSE snapshot exists from the login on; every login is served it from 1.
    let (day, live) = match served {
        Served::Day(log) => (log, None),
        Served::Glimpse(log, live) => (log, Some(live)),
    };
    let mut snapshot: Option<MessageLog> = None;
    let available = if live.is_some() {
        1
    } else {
        day.len() as u64 + 1
    };
    let mut session = SoupServerSession::new(server, available, now());
    let mut buf = [0u8; 4096];
    let mut pacer: Option<(Pacer, u64)> = None; // (pacer, first sequence streamed)
    let mut sent_here = 0u64;
    let mut next = 0u64;
    let mut faulty = false;
    while !stop.load(Ordering::Relaxed) {
        // Read what the client sent.
        match stream.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                session.feed(&buf[..n], now());
            }
            Err(e)
                if e.kind() == io::ErrorKind::WouldBlock
                    || e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        while let Some(event) = session.poll_event(now()) {
            match event {
                Ok(ServerEvent::LoginAccepted { next_sequence }) => {
                    let login = counters.logins.fetch_add(1, Ordering::Relaxed) + 1;
                    faulty = config.faulty_logins.is_none_or(|n| login <= n);
                    if let Some(live) = live {
                        let form = SnapshotForm {
                            malformed_end: faulty && config.malformed_end,
                            locate_zero: config.locate_zero,
                        };
                        snapshot = Some(glimpse_snapshot_as(day, live(), form));
                    }
                    next = next_sequence;
                    pacer = Some((Pacer::new(config.rate, clock.now()), next_sequence));
                }
                Ok(ServerEvent::LoginRejected(_)) => {
                    counters.rejected.fetch_add(1, Ordering::Relaxed);
                }
                Ok(ServerEvent::LogoutRequested) => {
                    flush(&mut stream, &mut session);
                    return Ok(());
                }
                Ok(_) => {}
                Err(_) => return Ok(()),
            }
        }
        session.poll_timers(now());
        if matches!(
            session.state(),
            ServerState::Rejected(_) | ServerState::Dead(_) | ServerState::LoggedOut
        ) {
            flush(&mut stream, &mut session);
            return Ok(());
        }
        // Stream what is due.
        let log = snapshot.as_ref().unwrap_or(day);
        let mut idle = true;
        if let Some((pacer, first)) = &mut pacer {
            while session.state() == ServerState::Streaming {
                let Some(message) = log.get(next) else {
                    if config.end_of_session && session.end_session(now()).is_ok() {
                        flush(&mut stream, &mut session);
                        // Let the client read the end of session before the close.
                        let deadline = Instant::now() + Duration::from_millis(200);
                        while !session.output().is_empty() && Instant::now() < deadline {
                            if !flush(&mut stream, &mut session) {
                                break;
                            }
                        }
                    }
                    break;
                };
                let index = (next - *first) as usize;
                if let Some(due) = pacer.due(index, log, clock.now()) {
                    if due > clock.now() {
                        // Not yet: wait a bounded step, then serve reads and timers again.
                        clock.sleep_until(due);
                        break;
                    }
                }
                if faulty && config.disconnect_after.is_some_and(|n| sent_here >= n) {
                    counters.disconnects.fetch_add(1, Ordering::Relaxed);
                    flush(&mut stream, &mut session);
                    return Ok(());
                }
                if faulty && config.half_open_after.is_some_and(|n| sent_here >= n) {
                    counters.half_opened.fetch_add(1, Ordering::Relaxed);
                    flush(&mut stream, &mut session);
                    return hang(&mut stream, stop);
                }
                if session.send_sequenced(message, now()).is_err() {
                    // Outbox full: write it out, then continue.
                    if !flush(&mut stream, &mut session) {
                        return Ok(());
                    }
                    break;
                }
                idle = false;
                next += 1;
                sent_here += 1;
                counters.messages_sent.fetch_add(1, Ordering::Relaxed);
            }
        }
        if !flush(&mut stream, &mut session) {
            return Ok(());
        }
        if session.state() == ServerState::Ended && session.output().is_empty() {
            return Ok(());
        }
        if idle {
            thread::sleep(Duration::from_micros(200));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::GenConfig;
    use std::net::{Ipv4Addr, SocketAddrV4};
    use ticklane_feed::soupbintcp::{ClientConfig, ClientEvent, SoupClient};

    fn credentials() -> Credentials {
        Credentials::new(b"user", b"pass").expect("fits")
    }

    /// A blocking client: logs in from `next_sequence`, returns the sequences it received
    /// and whether it saw end of session.
    fn receive(addr: SocketAddr, next_sequence: u64, creds: Credentials) -> (Vec<u64>, bool, bool) {
        let mut stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_millis(50)))
            .expect("timeout");
        let origin = Instant::now();
        let mut config = ClientConfig::new(creds);
        config.next_sequence = next_sequence;
        let mut client = SoupClient::new(config);
        client.on_connected(origin.elapsed()).expect("login queued");
        stream.write_all(client.output()).expect("send login");
        let n = client.output().len();
        client.consume_output(n);
        let (mut seqs, mut ended, mut rejected) = (Vec::new(), false, false);
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut buf = [0u8; 8192];
        while Instant::now() < deadline && !ended && !rejected {
            match stream.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    client.feed(&buf[..n], origin.elapsed());
                }
                Err(_) => continue,
            }
            while let Some(event) = client.poll_event() {
                match event.expect("valid stream") {
                    ClientEvent::Sequenced { seq, .. } => seqs.push(seq),
                    ClientEvent::EndOfSession { .. } => ended = true,
                    ClientEvent::Rejected(_) => rejected = true,
                    _ => {}
                }
            }
        }
        (seqs, ended, rejected)
    }

    fn start(config: impl FnOnce(&mut SoupSimConfig)) -> (SoupSimulator, usize) {
        let log = Arc::new(MessageLog::from_generator(GenConfig {
            messages: 3_000,
            ..GenConfig::default()
        }));
        let n = log.len();
        let bind = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0));
        let mut c = SoupSimConfig::new(bind, credentials(), Session::new(b"SIM").expect("fits"));
        config(&mut c);
        (SoupSimulator::start(log, c).expect("start"), n)
    }

    #[test]
    fn streams_every_message_then_ends_the_session() {
        let (sim, n) = start(|_| {});
        let (seqs, ended, _) = receive(sim.local_addr(), 1, credentials());
        assert!(ended, "end of session seen");
        assert_eq!(seqs, (1..=n as u64).collect::<Vec<_>>());
        let stats = sim.stop();
        assert_eq!((stats.logins, stats.messages_sent), (1, n as u64));
    }

    #[test]
    fn paced_stream_delivers_every_message() {
        // A regression: a paced connection used to wait on every message, even one already
        // due, and so never sent any.
        let (sim, n) = start(|c| c.rate = Rate::per_second(100_000));
        let (seqs, ended, _) = receive(sim.local_addr(), 1, credentials());
        assert!(ended, "end of session seen");
        assert_eq!(seqs, (1..=n as u64).collect::<Vec<_>>());
    }

    #[test]
    fn resumes_from_the_requested_sequence() {
        let (sim, n) = start(|_| {});
        let (seqs, _, _) = receive(sim.local_addr(), 2_001, credentials());
        assert_eq!(seqs.first(), Some(&2_001));
        assert_eq!(seqs.last(), Some(&(n as u64)));
    }

    #[test]
    fn wrong_credentials_are_rejected() {
        let (sim, _) = start(|_| {});
        let (seqs, _, rejected) = receive(
            sim.local_addr(),
            1,
            Credentials::new(b"user", b"nope").expect("fits"),
        );
        assert!(rejected && seqs.is_empty());
        assert_eq!(sim.stop().rejected, 1);
    }

    #[test]
    fn half_open_fault_goes_quiet_without_closing() {
        let (sim, _) = start(|c| c.half_open_after = Some(500));
        // `receive` reads for up to 10 s; give it a connection that goes quiet: it sees 500
        // messages, then neither data, heartbeat, end nor close until its own deadline.
        let mut stream = TcpStream::connect(sim.local_addr()).expect("connect");
        let origin = Instant::now();
        let mut client = SoupClient::new(ClientConfig::new(credentials()));
        client.on_connected(origin.elapsed()).expect("login queued");
        stream.write_all(client.output()).expect("send login");
        stream
            .set_read_timeout(Some(Duration::from_millis(50)))
            .expect("timeout");
        let (mut seqs, mut frames_after, mut closed) = (0u64, 0u64, false);
        let mut buf = [0u8; 8192];
        // 1.5 s: a heartbeat (every second) would have come by then.
        let deadline = Instant::now() + Duration::from_millis(1_500);
        while Instant::now() < deadline {
            match stream.read(&mut buf) {
                Ok(0) => {
                    closed = true;
                    break;
                }
                Ok(n) => {
                    client.feed(&buf[..n], origin.elapsed());
                }
                Err(_) => continue,
            }
            while let Some(event) = client.poll_event() {
                match event.expect("valid stream") {
                    ClientEvent::Sequenced { .. } => seqs += 1,
                    ClientEvent::LoggedIn { .. } => {}
                    _ => frames_after += 1,
                }
            }
        }
        assert!(!closed, "half-open: never closed");
        assert_eq!((seqs, frames_after), (500, 0));
        // The login's answer and the 500 messages; no heartbeat after them.
        assert_eq!(client.stats().frames_received, 501);
        assert_eq!(sim.stats().half_opened, 1);
    }

    #[test]
    fn disconnect_fault_cuts_each_connection() {
        let (sim, _) = start(|c| c.disconnect_after = Some(1_000));
        let (seqs, ended, _) = receive(sim.local_addr(), 1, credentials());
        assert!(!ended);
        assert_eq!(seqs, (1..=1_000).collect::<Vec<_>>());
        let (seqs, _, _) = receive(sim.local_addr(), 1_001, credentials());
        assert_eq!(seqs.first(), Some(&1_001), "a new login resumes");
        assert_eq!(sim.stop().disconnects, 2);
    }
}
