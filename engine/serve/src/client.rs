//! The Rust client of the subscriber server: a [`Session`] (one connection: log in,
//! subscribe, read messages, tell a sequence gap), and [`run_subscriber`], which keeps one
//! going: it reconnects with exponential backoff and full jitter, honours the server's
//! retry-after (a longer one than its cap is reported as maintenance, never slept on), and
//! resubscribes, so fresh images follow every reconnect.
//!
//! The decision after each attempt is [`Reconnect`]'s (shared with the storm harness's
//! non-blocking clients). An immediate reconnect loop is impossible by construction: every
//! reconnect waits at least [`ClientConfig::min_delay`] (plus full jitter up to the backoff's ceiling), and the
//! backoff's attempt count starts again only after a session that was accepted and stayed up
//! for [`ClientConfig::stable_after`].
#![forbid(unsafe_code)]

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ticklane_feed::resilience::BackoffConfig;

use super::client_stream::{ClientStream, ConnectError};
pub use super::client_stream::{ClientTls, TlsFailure};
use super::protocol::{
    account_field, decode_server, encode_client, ClientMessage, DecodeError, Reason, Secret,
    ServerMessage, MAX_FRAME, PROTOCOL_VERSION, PROTOCOL_VERSION_1,
};
use super::reconnect::{NextAttempt, Reconnect};

/// Why a session or the subscriber stopped.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The socket failed.
    #[error("{addr}: {source}")]
    Io {
        /// The server.
        addr: SocketAddr,
        /// What failed.
        source: io::Error,
    },
    /// The TLS handshake failed: the server's certificate is not trusted, not for this
    /// name, or expired; or no protocol version is common. Not retried.
    #[error("{addr}: TLS: {why}")]
    Tls {
        /// The server.
        addr: SocketAddr,
        /// What rustls said.
        why: TlsFailure,
    },
    /// The server sent bytes that are not protocol version 1.
    #[error("{addr}: bad frame from the server: {error}")]
    Decode {
        /// The server.
        addr: SocketAddr,
        /// What was wrong.
        error: DecodeError,
    },
    /// The server asked us to come back later than the backoff's cap: maintenance, not
    /// something to sleep on.
    #[error("{addr}: server in maintenance: asked to come back in {requested:?}, over the cap of {cap:?}")]
    Maintenance {
        /// The server.
        addr: SocketAddr,
        /// The delay it asked for.
        requested: Duration,
        /// The cap it exceeds.
        cap: Duration,
    },
    /// The server refused the login for good (a retry-after of 0).
    #[error("{addr}: login rejected: {reason}")]
    Rejected {
        /// The server.
        addr: SocketAddr,
        /// Why.
        reason: Reason,
    },
    /// The server ended the session (closed, cut loose, or came-back-later).
    #[error("{addr}: session ended: {why}")]
    Ended {
        /// The server.
        addr: SocketAddr,
        /// Why, as the server said or as seen.
        why: Ended,
    },
    /// The account is not one the protocol can carry (1 to 16 printable ASCII
    /// characters): refused before connecting, since the server would refuse it for good.
    #[error("account {account:?}: {why}")]
    BadAccount {
        /// The account given.
        account: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// Reconnecting gave up after the configured number of attempts.
    #[error("gave up after {attempts} connection attempts")]
    GaveUp {
        /// Attempts made.
        attempts: u32,
    },
}

/// How a session ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// The server closed the connection without a word.
    Closed,
    /// The server sent nothing for three heartbeat intervals.
    Silent,
    /// The server cut us loose.
    CutLoose(Reason),
    /// The server asked us to come back after this long.
    ComeBackLater(Reason, Duration),
    /// The login was rejected with a retry-after.
    LoginRejected(Reason, Duration),
}

impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ended::Closed => f.write_str("connection closed"),
            Ended::Silent => f.write_str("server silent"),
            Ended::CutLoose(r) => write!(f, "cut loose: {r}"),
            Ended::ComeBackLater(r, d) => write!(f, "come back in {} ms: {r}", d.as_millis()),
            Ended::LoginRejected(r, d) => {
                write!(f, "login rejected ({r}); retry in {} ms", d.as_millis())
            }
        }
    }
}

impl Ended {
    /// The delay the server asked for, if it asked.
    pub fn retry_after(self) -> Option<Duration> {
        match self {
            Ended::ComeBackLater(_, d) | Ended::LoginRejected(_, d) => Some(d),
            _ => None,
        }
    }
}

/// The space-padded 8-byte form of a symbol (longer ones are cut at 8 bytes).
pub fn padded_symbol(symbol: &str) -> [u8; 8] {
    let mut out = [b' '; 8];
    for (o, b) in out.iter_mut().zip(symbol.bytes()) {
        *o = b;
    }
    out
}

/// The space-padded 16-byte form of an account name.
pub fn padded_account(account: &str) -> [u8; 16] {
    let mut out = [b' '; 16];
    for (o, b) in out.iter_mut().zip(account.bytes()) {
        *o = b;
    }
    out
}

/// One connection to the server.
///
/// Blocking, with a read timeout of the heartbeat interval; `Send` but not `Sync`.
#[derive(Debug)]
pub struct Session {
    addr: SocketAddr,
    stream: ClientStream,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    out: Vec<u8>,
    /// The sequence number the next sequenced message should carry.
    expected_seq: u64,
    heartbeat: Duration,
    last_sent: Instant,
    last_heard: Instant,
    next_request: u32,
    /// [`Session::recv`] returns the server's heartbeats too (a caller with timers of its
    /// own wakes at each); off by default.
    heartbeats_returned: bool,
}

/// A message from [`Session::recv`], or what the sequence numbers say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Received<'a> {
    /// The next message (in sequence, if it is sequenced).
    Message(ServerMessage<'a>),
    /// A sequenced message whose number is not the next: messages in between were lost.
    /// The message itself follows as the next `recv`.
    Gap {
        /// The number expected.
        expected: u64,
        /// The number it carried.
        got: u64,
    },
}

impl Session {
    /// Connects to `addr` and logs in as `account`.
    ///
    /// # Errors
    ///
    /// [`ClientError::BadAccount`] for an account the protocol cannot carry;
    /// [`ClientError::Io`] if the connection fails; [`ClientError::Ended`] with
    /// [`Ended::LoginRejected`] when the server refuses with a retry-after, and
    /// [`ClientError::Rejected`] when it refuses for good.
    pub fn connect(
        addr: SocketAddr,
        account: &str,
        timeout: Duration,
    ) -> Result<Session, ClientError> {
        Session::connect_over(addr, None, account, &Secret::NONE, timeout)
    }

    /// [`Session::connect`], over TLS when `tls` is given (the server's certificate is
    /// verified before the login goes out), and with `secret` when it is not
    /// [`Secret::NONE`] (a version-2 login; without one, a version-1 login, which servers
    /// of either version take when they have no accounts).
    ///
    /// # Errors
    ///
    /// As [`Session::connect`], and [`ClientError::Tls`] when the handshake fails.
    pub fn connect_over(
        addr: SocketAddr,
        tls: Option<&ClientTls>,
        account: &str,
        secret: &Secret,
        timeout: Duration,
    ) -> Result<Session, ClientError> {
        let account_field = account_field(account).map_err(|why| ClientError::BadAccount {
            account: account.to_string(),
            why,
        })?;
        let io = |source| ClientError::Io { addr, source };
        let stream = ClientStream::connect(addr, tls, timeout).map_err(|e| match e {
            ConnectError::Io(source) => ClientError::Io { addr, source },
            ConnectError::Tls(why) => ClientError::Tls { addr, why },
        })?;
        let now = Instant::now();
        let mut session = Session {
            addr,
            stream,
            buf: vec![0; 2 * MAX_FRAME],
            start: 0,
            end: 0,
            out: Vec::with_capacity(64),
            expected_seq: 1,
            heartbeat: timeout,
            last_sent: now,
            last_heard: now,
            next_request: 1,
            heartbeats_returned: false,
        };
        let version = if secret.is_empty() {
            PROTOCOL_VERSION_1
        } else {
            PROTOCOL_VERSION
        };
        session.send(&ClientMessage::Login {
            version,
            account: account_field,
            secret: *secret,
        })?;
        match session.recv()? {
            Received::Message(ServerMessage::LoginAccepted { heartbeat_ms, .. }) => {
                session.heartbeat = Duration::from_millis(u64::from(heartbeat_ms.max(10)));
                session
                    .stream
                    .set_read_timeout(Some(session.heartbeat))
                    .map_err(io)?;
                Ok(session)
            }
            Received::Message(ServerMessage::LoginRejected {
                reason,
                retry_after_ms: 0,
            }) => Err(ClientError::Rejected { addr, reason }),
            Received::Message(ServerMessage::LoginRejected {
                reason,
                retry_after_ms,
            }) => Err(ClientError::Ended {
                addr,
                why: Ended::LoginRejected(reason, Duration::from_millis(u64::from(retry_after_ms))),
            }),
            Received::Message(other) => {
                Err(ended_by(addr, &other).unwrap_or(ClientError::Decode {
                    addr,
                    error: DecodeError::UnknownType(0),
                }))
            }
            Received::Gap { .. } => Err(ClientError::Decode {
                addr,
                error: DecodeError::UnknownType(0),
            }),
        }
    }

    /// The server's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Sends `message`.
    ///
    /// # Errors
    ///
    /// [`ClientError::Io`] if the write fails.
    pub fn send(&mut self, message: &ClientMessage) -> Result<(), ClientError> {
        self.out.clear();
        encode_client(message, &mut self.out);
        self.stream
            .write_all(&self.out)
            .map_err(|source| ClientError::Io {
                addr: self.addr,
                source,
            })?;
        self.last_sent = Instant::now();
        Ok(())
    }

    /// Sends bytes as they are (frames the caller encoded: a burst of requests in one write).
    ///
    /// # Errors
    ///
    /// [`ClientError::Io`] if the write fails.
    pub fn send_raw(&mut self, frames: &[u8]) -> Result<(), ClientError> {
        self.stream
            .write_all(frames)
            .map_err(|source| ClientError::Io {
                addr: self.addr,
                source,
            })?;
        self.last_sent = Instant::now();
        Ok(())
    }

    /// Asks for `symbol`'s image and updates, with `budget` to answer; the request id.
    ///
    /// # Errors
    ///
    /// [`ClientError::Io`] if the write fails.
    pub fn subscribe(&mut self, symbol: &str, budget: Duration) -> Result<u32, ClientError> {
        let request_id = self.next_request;
        self.next_request = self.next_request.wrapping_add(1).max(1);
        self.send(&ClientMessage::Subscribe {
            request_id,
            budget_ms: u32::try_from(budget.as_millis()).unwrap_or(u32::MAX),
            symbol: padded_symbol(symbol),
        })?;
        Ok(request_id)
    }

    /// Asks for the symbol list, with `budget` to answer; the request id.
    ///
    /// # Errors
    ///
    /// [`ClientError::Io`] if the write fails.
    pub fn symbol_list(&mut self, budget: Duration) -> Result<u32, ClientError> {
        let request_id = self.next_request;
        self.next_request = self.next_request.wrapping_add(1).max(1);
        self.send(&ClientMessage::SymbolList {
            request_id,
            budget_ms: u32::try_from(budget.as_millis()).unwrap_or(u32::MAX),
        })?;
        Ok(request_id)
    }

    /// Whether [`Session::recv`] returns the server's heartbeats (as
    /// `Received::Message(ServerMessage::Heartbeat)`) rather than reading past them.
    pub fn return_heartbeats(&mut self, returned: bool) {
        self.heartbeats_returned = returned;
    }

    /// The next message, blocking; heartbeats are answered, and skipped unless
    /// [`Session::return_heartbeats`] asked for them.
    ///
    /// # Errors
    ///
    /// [`ClientError::Ended`] when the server closes, goes silent for three heartbeat
    /// intervals, cuts us loose or says to come back later; [`ClientError::Io`] or
    /// [`ClientError::Decode`] on a broken connection.
    pub fn recv(&mut self) -> Result<Received<'_>, ClientError> {
        loop {
            let peek = match decode_server(&self.buf[self.start..self.end]) {
                Ok(Some((message, used))) => Some((
                    used,
                    message.seq(),
                    message == ServerMessage::Heartbeat,
                    ended_by(self.addr, &message),
                )),
                Ok(None) => None,
                Err(error) => {
                    return Err(ClientError::Decode {
                        addr: self.addr,
                        error,
                    })
                }
            };
            if let Some((used, seq, heartbeat, end)) = peek {
                if let Some(seq) = seq {
                    if seq != self.expected_seq {
                        let expected = self.expected_seq;
                        self.expected_seq = seq;
                        return Ok(Received::Gap { expected, got: seq });
                    }
                    self.expected_seq = seq + 1;
                }
                let start = self.start;
                self.start += used;
                if heartbeat && !self.heartbeats_returned {
                    continue;
                }
                if let Some(end) = end {
                    return Err(end);
                }
                let (message, _) = decode_server(&self.buf[start..start + used])
                    .ok()
                    .flatten()
                    .expect("invariant: the same bytes decoded a moment ago");
                return Ok(Received::Message(message));
            }
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            self.read_more()?;
        }
    }

    fn read_more(&mut self) -> Result<(), ClientError> {
        let addr = self.addr;
        loop {
            if self.last_sent.elapsed() >= self.heartbeat {
                self.send(&ClientMessage::Heartbeat)?;
            }
            match self.stream.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    return Err(ClientError::Ended {
                        addr,
                        why: Ended::Closed,
                    })
                }
                Ok(n) => {
                    self.end += n;
                    self.last_heard = Instant::now();
                    return Ok(());
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    if self.last_heard.elapsed() >= 3 * self.heartbeat {
                        return Err(ClientError::Ended {
                            addr,
                            why: Ended::Silent,
                        });
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // A TLS stream that ends without its close_notify reads as UnexpectedEof.
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::ConnectionReset | io::ErrorKind::UnexpectedEof
                    ) =>
                {
                    return Err(ClientError::Ended {
                        addr,
                        why: Ended::Closed,
                    })
                }
                Err(source) => return Err(ClientError::Io { addr, source }),
            }
        }
    }
}

/// The end a message announces, if it announces one.
fn ended_by(addr: SocketAddr, message: &ServerMessage<'_>) -> Option<ClientError> {
    let why = match *message {
        ServerMessage::CutLoose { reason } => Ended::CutLoose(reason),
        ServerMessage::ComeBackLater {
            reason,
            retry_after_ms,
        } => Ended::ComeBackLater(reason, Duration::from_millis(u64::from(retry_after_ms))),
        _ => return None,
    };
    Some(ClientError::Ended { addr, why })
}

/// Settings of [`run_subscriber`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientConfig {
    /// The server.
    pub server: SocketAddr,
    /// The account to log in as.
    pub account: String,
    /// Connect over TLS, verifying the server (`None`: plain TCP).
    pub tls: Option<ClientTls>,
    /// The account's secret ([`Secret::NONE`]: a version-1 login, for a server without
    /// accounts).
    pub secret: Secret,
    /// The symbols to follow.
    pub symbols: Vec<String>,
    /// Exponential backoff with full jitter between reconnects; its cap is also the longest
    /// server retry-after honoured.
    pub backoff: BackoffConfig,
    /// The least any reconnect waits: an immediate reconnect loop cannot happen.
    pub min_delay: Duration,
    /// A session accepted and up this long starts the backoff over.
    pub stable_after: Duration,
    /// Connect timeout, and the budget each image request carries.
    pub timeout: Duration,
    /// Give up after this many connection attempts in a row (`None`: never).
    pub max_attempts: Option<u32>,
    /// Seeds the jitter.
    pub seed: u64,
}

impl ClientConfig {
    /// Defaults for following `symbols` on `server`.
    pub fn new(server: SocketAddr, symbols: Vec<String>) -> Self {
        ClientConfig {
            server,
            account: "ticklane".into(),
            tls: None,
            secret: Secret::NONE,
            symbols,
            backoff: BackoffConfig {
                base: Duration::from_millis(100),
                cap: Duration::from_secs(30),
            },
            min_delay: Duration::from_millis(50),
            stable_after: Duration::from_secs(5),
            timeout: Duration::from_secs(2),
            max_attempts: None,
            seed: 0,
        }
    }
}

/// What [`run_subscriber`] reports as it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubscriberEvent<'a> {
    /// Logged in and subscribed.
    Connected {
        /// Connection attempts that failed in a row (no session: refused, timed out, login
        /// turned away) just before this one. A session that ended, however briefly it
        /// lasted, is no failed attempt: after a server's clean restart this is 0.
        failed_attempts: u32,
    },
    /// A message from the server.
    Message(ServerMessage<'a>),
    /// Messages were lost between `expected` and `got`.
    Gap {
        /// The sequence number expected.
        expected: u64,
        /// The one that came.
        got: u64,
    },
    /// The session ended or could not start; the next attempt comes after `delay`.
    Reconnecting {
        /// Why the session ended (`None`: the connection could not be made).
        why: Option<Ended>,
        /// How long the client waits first.
        delay: Duration,
        /// Whether `delay` is the server's retry-after.
        server_asked: bool,
    },
}

/// Keeps a subscription going until `on_event` breaks, `stop` is set, the server reports
/// maintenance, or `max_attempts` is reached. `pause` waits between attempts (a real
/// sleep in the binary; tests record it).
///
/// # Errors
///
/// [`ClientError::Maintenance`], [`ClientError::Rejected`], [`ClientError::GaveUp`],
/// [`ClientError::BadAccount`].
pub fn run_subscriber(
    config: &ClientConfig,
    stop: &AtomicBool,
    pause: &mut dyn FnMut(Duration),
    on_event: &mut dyn FnMut(SubscriberEvent<'_>) -> ControlFlow<()>,
) -> Result<(), ClientError> {
    let mut reconnect = Reconnect::new(config);
    // Not the backoff's count, which also grows over sessions that ended before they were
    // stable: this counts only attempts that got no session.
    let mut failed_attempts = 0u32;
    while !stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        let mut accepted = false;
        let outcome = session_once(config, failed_attempts, stop, &mut accepted, on_event);
        let why = match outcome {
            Ok(ControlFlow::Break(())) => return Ok(()),
            Ok(ControlFlow::Continue(())) => return Ok(()),
            Err(ClientError::Ended { why, .. }) => Some(why),
            Err(ClientError::Io { .. } | ClientError::Decode { .. }) => None,
            Err(e) => return Err(e),
        };
        failed_attempts = if accepted {
            0
        } else {
            failed_attempts.saturating_add(1)
        };
        let accepted_for = accepted.then(|| started.elapsed());
        let (delay, server_asked) =
            match reconnect.after_attempt(accepted_for, why.and_then(Ended::retry_after)) {
                NextAttempt::Wait {
                    delay,
                    server_asked,
                } => (delay, server_asked),
                NextAttempt::GaveUp { attempts } => return Err(ClientError::GaveUp { attempts }),
                NextAttempt::Maintenance { requested, cap } => {
                    return Err(ClientError::Maintenance {
                        addr: config.server,
                        requested,
                        cap,
                    })
                }
            };
        if on_event(SubscriberEvent::Reconnecting {
            why,
            delay,
            server_asked,
        })
        .is_break()
        {
            return Ok(());
        }
        pause(delay);
    }
    Ok(())
}

/// Longest a [`pause_unless_stopped`] sleeps before it looks at its flag again: how late a
/// stop can be noticed during a backoff.
pub const STOP_CHECK: Duration = Duration::from_millis(20);

/// Sleeps `delay`, in slices of at most [`STOP_CHECK`], and returns early once `stop` is
/// set: the `pause` for [`run_subscriber`] in a process whose signal handler sets `stop`,
/// so a Ctrl-C during a 30 s backoff ends it within [`STOP_CHECK`], not 30 s later.
/// `true` if it returned because of `stop`.
pub fn pause_unless_stopped(delay: Duration, stop: &AtomicBool) -> bool {
    let deadline = Instant::now() + delay;
    loop {
        if stop.load(Ordering::Relaxed) {
            return true;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        std::thread::sleep(left.min(STOP_CHECK));
    }
}

/// How long a subscriber waits before asking again for a symbol the server did not know.
const ASK_AGAIN: Duration = Duration::from_secs(1);

/// One session: connect, subscribe to everything, stream until it ends.
fn session_once(
    config: &ClientConfig,
    failed_attempts: u32,
    stop: &AtomicBool,
    accepted: &mut bool,
    on_event: &mut dyn FnMut(SubscriberEvent<'_>) -> ControlFlow<()>,
) -> Result<ControlFlow<()>, ClientError> {
    let mut session = Session::connect_over(
        config.server,
        config.tls.as_ref(),
        &config.account,
        &config.secret,
        config.timeout,
    )?;
    *accepted = true;
    for symbol in &config.symbols {
        session.subscribe(symbol, config.timeout)?;
    }
    if on_event(SubscriberEvent::Connected { failed_attempts }).is_break() {
        return Ok(ControlFlow::Break(()));
    }
    // Symbols the server did not know yet (a client started before the session's stock
    // directory): asked for again every ASK_AGAIN until their image comes (an answer lost or
    // expired is asked again too); the caller hears of each once. The heartbeats wake the
    // loop when nothing else comes.
    let mut not_yet: Vec<([u8; 8], Instant)> = Vec::new();
    session.return_heartbeats(true);
    while !stop.load(Ordering::Relaxed) {
        let event = match session.recv()? {
            Received::Message(ServerMessage::Heartbeat) => None,
            Received::Message(m @ ServerMessage::UnknownSymbol { symbol, .. }) => {
                let again = Instant::now() + ASK_AGAIN;
                match not_yet.iter_mut().find(|(s, _)| *s == symbol) {
                    Some((_, due)) => {
                        *due = again;
                        None
                    }
                    None => {
                        not_yet.push((symbol, again));
                        Some(SubscriberEvent::Message(m))
                    }
                }
            }
            Received::Message(m) => {
                if let ServerMessage::BookImage { header, .. } = &m {
                    not_yet.retain(|(s, _)| *s != header.symbol);
                }
                Some(SubscriberEvent::Message(m))
            }
            Received::Gap { expected, got } => Some(SubscriberEvent::Gap { expected, got }),
        };
        if let Some(event) = event {
            if on_event(event).is_break() {
                return Ok(ControlFlow::Break(()));
            }
        }
        let now = Instant::now();
        for (symbol, due) in &mut not_yet {
            if *due <= now {
                *due = now + ASK_AGAIN;
                let text = String::from_utf8_lossy(symbol).trim_end().to_owned();
                session.subscribe(&text, config.timeout)?;
            }
        }
    }
    Ok(ControlFlow::Continue(()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_pause_runs_its_length_unless_stopped_and_ends_soon_after_a_stop() {
        let stop = AtomicBool::new(false);
        let started = Instant::now();
        assert!(!pause_unless_stopped(Duration::from_millis(30), &stop));
        assert!(started.elapsed() >= Duration::from_millis(30));

        stop.store(true, Ordering::Relaxed);
        let started = Instant::now();
        assert!(pause_unless_stopped(Duration::from_secs(600), &stop));
        assert!(started.elapsed() < Duration::from_secs(60));

        // Set by another thread while the pause is under way (as the signal thread does):
        // a 600 s pause ends long before its length.
        let stop = Arc::new(AtomicBool::new(false));
        let setter = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || stop.store(true, Ordering::Relaxed))
        };
        let started = Instant::now();
        assert!(pause_unless_stopped(Duration::from_secs(600), &stop));
        assert!(started.elapsed() < Duration::from_secs(60));
        setter.join().expect("setter");
    }
}
