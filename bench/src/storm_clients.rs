//! Many subscriber clients on one thread: non-blocking sockets in a mio loop, each client a
//! small state machine that speaks the protocol through `serve::protocol`'s encode and
//! decode, and reconnects by the client library's rules ([`Reconnect`]: the server's
//! retry-after as told, full-jitter backoff otherwise, never under the minimum delay). So a
//! storm of thousands of clients needs a few threads, not thousands.
//!
//! A client does what `run_subscriber` does: connect (over TLS when [`StormLogin::tls`] is
//! given, verifying the server's certificate), log in (version 2 with the account's password
//! when [`StormLogin::secret`] is not empty), subscribe to its symbols, then stream; it is
//! *served* when its first book image arrives, and stays connected (answering nothing,
//! sending heartbeats) until the run is released.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use ticklane_engine::serve::client::{padded_account, padded_symbol, ClientConfig, ClientTls};
use ticklane_engine::serve::protocol::{
    decode_server, encode_client, ClientMessage, Secret, ServerMessage, PROTOCOL_VERSION,
    PROTOCOL_VERSION_1,
};
use ticklane_engine::serve::reconnect::{NextAttempt, Reconnect};
use ticklane_engine::serve::tls::rustls::ClientConnection;

use crate::storm_seconds::{Seen, StormSeconds};

/// How one client ended the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientEnd {
    /// Served this long after the storm began.
    Served(Duration),
    /// Still trying when the run was released.
    NotServed,
    /// Stopped by its own rules (gave up, maintenance, refused for good).
    Stopped(&'static str),
}

/// What one thread's clients saw.
#[derive(Debug)]
pub struct ThreadReport {
    /// Per second, since the storm began.
    pub seconds: StormSeconds,
    /// Each client's end, in the order given.
    pub ends: Vec<ClientEnd>,
    /// Requests the server dropped as expired, and sessions ended by the server after
    /// login (cut loose, come back later): not expected in a storm, so counted.
    pub expired: u64,
    /// Sessions that ended after their login was accepted.
    pub dropped_after_login: u64,
}

/// How the storm's clients reach the server and prove who they are.
#[derive(Clone, Debug)]
pub struct StormLogin {
    /// Speak TLS, trusting this (`None`: plain TCP).
    pub tls: Option<ClientTls>,
    /// Every account's password (empty: a version-1 login without one).
    pub secret: Secret,
}

impl StormLogin {
    /// Plain TCP and version-1 logins.
    pub fn plain() -> StormLogin {
        StormLogin {
            tls: None,
            secret: Secret::NONE,
        }
    }
}

/// A client's socket, plain or TLS; reads and writes are of the protocol's bytes and
/// never block.
enum StormStream {
    Plain(TcpStream),
    Tls(TcpStream, Box<ClientConnection>),
}

impl StormStream {
    fn socket(&mut self) -> &mut TcpStream {
        match self {
            StormStream::Plain(s) | StormStream::Tls(s, _) => s,
        }
    }

    /// Writes what it can of `bytes` (TLS takes them all into its buffer, sent as the
    /// handshake allows).
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        match self {
            StormStream::Plain(s) => s.write(bytes),
            StormStream::Tls(s, tls) => {
                let n = tls.writer().write(bytes)?;
                Self::send_tls(s, tls)?;
                Ok(n)
            }
        }
    }

    /// Sends the TLS records that are waiting, until the socket would block.
    fn send_tls(socket: &mut TcpStream, tls: &mut ClientConnection) -> io::Result<()> {
        while tls.wants_write() {
            match tls.write_tls(socket) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Reads every byte that has arrived into `inbox`, until the socket would block: Ok(true)
    /// when the peer closed. A TLS error (a certificate not trusted) is an error.
    fn read_into(&mut self, inbox: &mut Vec<u8>, scratch: &mut [u8]) -> io::Result<bool> {
        match self {
            StormStream::Plain(s) => loop {
                match s.read(scratch) {
                    Ok(0) => return Ok(true),
                    Ok(got) => inbox.extend_from_slice(&scratch[..got]),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            },
            StormStream::Tls(s, tls) => {
                let mut closed = false;
                loop {
                    match tls.read_tls(s) {
                        Ok(0) => {
                            closed = true;
                            break;
                        }
                        Ok(_) => {
                            tls.process_new_packets().map_err(io::Error::other)?;
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
                loop {
                    match tls.reader().read(scratch) {
                        Ok(0) => {
                            closed = true;
                            break;
                        }
                        Ok(got) => inbox.extend_from_slice(&scratch[..got]),
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) => return Err(e),
                    }
                }
                Self::send_tls(s, tls)?;
                Ok(closed)
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Waiting { until: Instant },
    Connecting,
    LoggingIn,
    Subscribing,
    Streaming,
    Stopped(&'static str),
}

struct Client<'a> {
    config: ClientConfig,
    login: &'a StormLogin,
    reconnect: Reconnect,
    phase: Phase,
    stream: Option<StormStream>,
    inbox: Vec<u8>,
    outbox: Vec<u8>,
    phase_since: Instant,
    last_sent: Instant,
    last_heard: Instant,
    /// The server's heartbeat once logged in; the connect timeout before.
    heartbeat: Duration,
    accepted_at: Option<Instant>,
    served_at: Option<Duration>,
}

/// What ended an attempt.
enum AttemptEnd {
    /// A retry-after from the server.
    Told(Duration),
    /// No answer, or an answer without a delay.
    Unanswered,
    /// Refused for good (a retry-after of 0).
    Refused,
}

/// Runs `configs` (one client each) against `server` from `began` until `release` is set,
/// each reaching it and logging in as `login` says; `served` counts the clients served so
/// far (shared by every thread of the storm).
///
/// # Errors
///
/// If the poll cannot be created or waited on.
pub fn drive(
    server: SocketAddr,
    configs: Vec<ClientConfig>,
    login: &StormLogin,
    began: Instant,
    release: &AtomicBool,
    served: &AtomicUsize,
) -> io::Result<ThreadReport> {
    let mut poll = Poll::new()?;
    let mut events = Events::with_capacity(1024);
    let mut clients: Vec<Client> = configs
        .into_iter()
        .map(|config| Client {
            login,
            reconnect: Reconnect::new(&config),
            heartbeat: config.timeout,
            config,
            phase: Phase::Waiting { until: began },
            stream: None,
            inbox: Vec::new(),
            outbox: Vec::new(),
            phase_since: began,
            last_sent: began,
            last_heard: began,
            accepted_at: None,
            served_at: None,
        })
        .collect();
    let mut report = ThreadReport {
        seconds: StormSeconds::default(),
        ends: Vec::new(),
        expired: 0,
        dropped_after_login: 0,
    };
    let mut scratch = vec![0u8; 64 << 10];
    while !release.load(Ordering::Relaxed) {
        match poll.poll(&mut events, Some(Duration::from_millis(5))) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        for event in &events {
            let n = event.token().0;
            let Some(client) = clients.get_mut(n) else {
                continue;
            };
            client.on_ready(began, &poll, &mut scratch, &mut report, served);
        }
        let now = Instant::now();
        for (n, client) in clients.iter_mut().enumerate() {
            client.on_tick(server, now, began, &poll, n, &mut report);
        }
    }
    report.ends = clients
        .iter()
        .map(|c| match (c.served_at, c.phase) {
            (Some(at), _) => ClientEnd::Served(at),
            (None, Phase::Stopped(why)) => ClientEnd::Stopped(why),
            (None, _) => ClientEnd::NotServed,
        })
        .collect();
    Ok(report)
}

impl Client<'_> {
    fn enter(&mut self, phase: Phase, now: Instant) {
        self.phase = phase;
        self.phase_since = now;
    }

    fn send(&mut self, message: &ClientMessage, now: Instant) -> io::Result<()> {
        encode_client(message, &mut self.outbox);
        self.last_sent = now;
        self.flush()
    }

    fn flush(&mut self) -> io::Result<()> {
        let Some(stream) = self.stream.as_mut() else {
            return Ok(());
        };
        if let StormStream::Tls(socket, tls) = stream {
            StormStream::send_tls(socket, tls)?;
        }
        while !self.outbox.is_empty() {
            match stream.write(&self.outbox) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.outbox.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Timers: start an attempt that is due, end one that timed out, send heartbeats.
    fn on_tick(
        &mut self,
        server: SocketAddr,
        now: Instant,
        began: Instant,
        poll: &Poll,
        n: usize,
        report: &mut ThreadReport,
    ) {
        let phase = self.phase;
        match phase {
            Phase::Waiting { until } if now >= until => {
                report.seconds.add(now - began, Seen::Attempt);
                self.inbox.clear();
                self.outbox.clear();
                self.accepted_at = None;
                let stream = TcpStream::connect(server).and_then(|socket| {
                    Ok(match &self.login.tls {
                        None => StormStream::Plain(socket),
                        Some(tls) => {
                            let conn = ClientConnection::new(
                                std::sync::Arc::clone(&tls.config),
                                tls.server_name.clone(),
                            )
                            .map_err(io::Error::other)?;
                            StormStream::Tls(socket, Box::new(conn))
                        }
                    })
                });
                match stream {
                    Ok(mut stream) => {
                        let interest = Interest::READABLE | Interest::WRITABLE;
                        if poll
                            .registry()
                            .register(stream.socket(), Token(n), interest)
                            .is_ok()
                        {
                            self.stream = Some(stream);
                            self.heartbeat = self.config.timeout;
                            self.last_heard = now;
                            self.enter(Phase::Connecting, now);
                        } else {
                            self.end_attempt(AttemptEnd::Unanswered, now, began, poll, report);
                        }
                    }
                    Err(_) => self.end_attempt(AttemptEnd::Unanswered, now, began, poll, report),
                }
            }
            // The library's connect timeout.
            Phase::Connecting if now - self.phase_since >= self.config.timeout => {
                self.end_attempt(AttemptEnd::Unanswered, now, began, poll, report);
            }
            // The library's read loop: silent for three heartbeats (the connect timeout
            // before the login answer) ends the session.
            Phase::LoggingIn | Phase::Subscribing | Phase::Streaming
                if now - self.last_heard >= 3 * self.heartbeat =>
            {
                self.end_attempt(AttemptEnd::Unanswered, now, began, poll, report);
            }
            // Quiet for a heartbeat interval: a heartbeat, as the library sends; a failed
            // write ends the session.
            Phase::LoggingIn | Phase::Subscribing | Phase::Streaming
                if now - self.last_sent >= self.heartbeat
                    && self.send(&ClientMessage::Heartbeat, now).is_err() =>
            {
                self.end_attempt(AttemptEnd::Unanswered, now, began, poll, report);
            }
            _ => {}
        }
    }

    fn on_ready(
        &mut self,
        began: Instant,
        poll: &Poll,
        scratch: &mut [u8],
        report: &mut ThreadReport,
        served: &AtomicUsize,
    ) {
        let now = Instant::now();
        if self.phase == Phase::Connecting {
            let Some(stream) = self.stream.as_mut() else {
                return;
            };
            let socket = stream.socket();
            match (socket.take_error(), socket.peer_addr()) {
                (Ok(None), Ok(_)) => {
                    // Over TLS the login waits in the session until the handshake is done.
                    let secret = self.login.secret;
                    let login = ClientMessage::Login {
                        version: if secret.is_empty() {
                            PROTOCOL_VERSION_1
                        } else {
                            PROTOCOL_VERSION
                        },
                        account: padded_account(&self.config.account),
                        secret,
                    };
                    self.enter(Phase::LoggingIn, now);
                    if self.send(&login, now).is_err() {
                        self.end_attempt(AttemptEnd::Unanswered, now, began, poll, report);
                        return;
                    }
                }
                (Ok(None), Err(e)) if e.kind() == io::ErrorKind::NotConnected => return,
                _ => {
                    self.end_attempt(AttemptEnd::Unanswered, now, began, poll, report);
                    return;
                }
            }
        }
        if self.flush().is_err() {
            self.end_attempt(AttemptEnd::Unanswered, now, began, poll, report);
            return;
        }
        // Read until it would block, then act on every whole frame.
        let Some(stream) = self.stream.as_mut() else {
            return;
        };
        let had = self.inbox.len();
        let closed = stream.read_into(&mut self.inbox, scratch).unwrap_or(true);
        if self.inbox.len() > had {
            self.last_heard = now;
        }
        // Taken out while its messages are acted on (they borrow it); put back after.
        let mut inbox = std::mem::take(&mut self.inbox);
        let mut used = 0;
        let mut end = None;
        while end.is_none() {
            let message = match decode_server(&inbox[used..]) {
                Ok(Some((message, len))) => {
                    used += len;
                    message
                }
                Ok(None) => break,
                Err(_) => {
                    end = Some(AttemptEnd::Unanswered);
                    break;
                }
            };
            end = self.on_message(&message, now, began, report, served);
        }
        inbox.drain(..used);
        self.inbox = inbox;
        if let Some(end) = end {
            self.end_attempt(end, now, began, poll, report);
        } else if closed {
            self.end_attempt(AttemptEnd::Unanswered, now, began, poll, report);
        }
    }

    /// Acts on one message; what ends the attempt, if it does.
    fn on_message(
        &mut self,
        message: &ServerMessage<'_>,
        now: Instant,
        began: Instant,
        report: &mut ThreadReport,
        served: &AtomicUsize,
    ) -> Option<AttemptEnd> {
        let told = |ms: u32| match ms {
            0 => AttemptEnd::Refused,
            ms => AttemptEnd::Told(Duration::from_millis(u64::from(ms))),
        };
        match (*message, self.phase) {
            (ServerMessage::LoginAccepted { heartbeat_ms, .. }, Phase::LoggingIn) => {
                report.seconds.add(now - began, Seen::Accepted);
                self.accepted_at = Some(now);
                self.heartbeat = Duration::from_millis(u64::from(heartbeat_ms.max(10)));
                self.enter(Phase::Subscribing, now);
                let budget_ms = u32::try_from(self.config.timeout.as_millis()).unwrap_or(u32::MAX);
                for (i, symbol) in self.config.symbols.clone().iter().enumerate() {
                    let subscribe = ClientMessage::Subscribe {
                        request_id: i as u32 + 1,
                        budget_ms,
                        symbol: padded_symbol(symbol),
                    };
                    if self.send(&subscribe, now).is_err() {
                        return Some(AttemptEnd::Unanswered);
                    }
                }
                None
            }
            (
                ServerMessage::LoginRejected { retry_after_ms, .. }
                | ServerMessage::ComeBackLater { retry_after_ms, .. },
                _,
            ) => {
                if self.phase == Phase::LoggingIn {
                    report.seconds.add(now - began, Seen::Told);
                }
                Some(told(retry_after_ms))
            }
            (ServerMessage::CutLoose { .. }, _) => Some(AttemptEnd::Unanswered),
            (ServerMessage::BookImage { .. }, Phase::Subscribing) => {
                if self.served_at.is_none() {
                    self.served_at = Some(now - began);
                    report.seconds.add(now - began, Seen::Served);
                    served.fetch_add(1, Ordering::Relaxed);
                }
                self.enter(Phase::Streaming, now);
                None
            }
            (ServerMessage::RequestExpired { .. }, _) => {
                // The library passes it on and keeps streaming; so does this client.
                report.expired += 1;
                None
            }
            _ => None,
        }
    }

    /// Closes the attempt's socket and decides, by the library's rules, what comes next.
    fn end_attempt(
        &mut self,
        end: AttemptEnd,
        now: Instant,
        began: Instant,
        poll: &Poll,
        report: &mut ThreadReport,
    ) {
        if let Some(mut stream) = self.stream.take() {
            let _ = poll.registry().deregister(stream.socket());
        }
        let answered = matches!(end, AttemptEnd::Told(_) | AttemptEnd::Refused);
        if self.accepted_at.is_some() {
            report.dropped_after_login += 1;
        } else if !answered {
            report.seconds.add(now - began, Seen::Closed);
        }
        let server_delay = match end {
            AttemptEnd::Told(d) => Some(d),
            AttemptEnd::Unanswered => None,
            AttemptEnd::Refused => {
                self.enter(Phase::Stopped("refused for good"), now);
                return;
            }
        };
        let accepted_for = self.accepted_at.map(|at| now - at);
        match self.reconnect.after_attempt(accepted_for, server_delay) {
            NextAttempt::Wait { delay, .. } => {
                self.enter(Phase::Waiting { until: now + delay }, now)
            }
            NextAttempt::GaveUp { .. } => self.enter(Phase::Stopped("gave up"), now),
            NextAttempt::Maintenance { .. } => self.enter(Phase::Stopped("maintenance"), now),
        }
    }
}
