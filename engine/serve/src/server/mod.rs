//! The subscriber server: a mio loop on its own (unpinned) thread that logs clients in,
//! answers their requests, and fans the hub's update stream out to them by symbol.
//!
//! One [`Subscription`] of the [`SubscriberHub`] feeds the server; each event goes to the
//! clients subscribed to its instrument, with each client's own sequence number. A client
//! whose queue passes the high mark gets its state conflated (the latest image per
//! instrument, newest first, once the queue is back at the low mark); a trade or a
//! trading-state change that does not fit cuts it loose; when all queues together pass
//! their bound, the heaviest client is shed first. Nobody else waits for a slow client.
//!
//! Per-request scratch (a book image, the symbol list) comes from a `bumpalo` arena reset
//! after each request: once warm, serving a request allocates nothing.
#![forbid(unsafe_code)]

mod logins;

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bumpalo::Bump;
use mio::net::TcpListener;
use mio::{Events, Interest, Poll, Token};
use ticklane_feed::rng::SplitMix64;
use ticklane_pipeline::server_thread::{ServerThread, LISTENER, WAKE};
use ticklane_tls::{rustls, ServerSession};

use super::admission::{Admission, Stage, Verdict};
use super::audit::{AuditEvent, AuditLog};
use super::connection::{Connection, Phase, Sub};
use super::counters::{ServeCounters, ServeCounts};
use super::idle::{IdleAction, IdleRule};
use super::images::ImageSource;
use super::protocol::{
    decode_client, encode_image, encode_server, ClientMessage, ImageHeader, Reason, ServerMessage,
    FRAME_HEADER, IMAGE_AT_DEPTH, IMAGE_HEADER_BYTES, LEVEL_BYTES, MAX_IMAGE_LEVELS,
    SYMBOLS_PER_FRAME,
};
pub use logins::AccountsConfig;
use logins::Logins;
use ticklane_pipeline::clock::Clock;
use ticklane_pipeline::overload::{Event, EventBody, RecvError, SubscriberHub, Subscription};
use ticklane_pipeline::WaitStrategy;

/// Events the server takes from the hub per turn of the loop, so that reads and writes
/// are never starved by a busy feed.
const EVENTS_PER_TURN: usize = 4096;
/// How long the loop sleeps in `poll` at most: the hub has no waker, so its queue is
/// looked at this often (an update waits half of it on average), unless the loop spins.
const POLL_INTERVAL: Duration = Duration::from_millis(1);
/// With `ServeConfig::wait` busy-spin: empty turns after the last update during which the
/// loop polls its sockets without sleeping and spins between turns, so that an update goes
/// out as soon as the book thread has made it; then it sleeps in `poll` again.
///
/// Only then: measured in the reconnect storm of 300 clients on 2 vCPUs, the loop's CPU
/// went from 0.09 cores (the 1 ms poll) to 0.67 with 50 µs naps between turns and to a
/// whole core with spin-then-yield, for a p50 update latency of 0.56, 0.10 and 0.05 ms.
/// That core is worth it only where the stages have cores of their own.
const ACTIVE_TURNS: u32 = 20_000;

/// Settings of the subscriber server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServeConfig {
    /// The address to listen on.
    pub listen: SocketAddr,
    /// Clients at once; more are rejected with a retry-after.
    pub max_clients: usize,
    /// Subscriptions per connection.
    pub max_symbols: usize,
    /// Bytes a client's write queue holds at most.
    pub queue_bytes: usize,
    /// Above this many queued bytes a client's state updates are conflated.
    pub high_water: usize,
    /// Back at this many, the latest state goes out and updates stream again.
    pub low_water: usize,
    /// All clients' queued bytes together above this: the heaviest client is shed.
    pub total_queue_bytes: usize,
    /// The server sends a heartbeat after this long without sending (ms).
    pub heartbeat_ms: u32,
    /// The retry-after told to clients when the server stops: uniform in this range (ms).
    pub restart_retry_after_ms: (u32, u32),
    /// The retry-after of a rejection for want of room (ms, jittered the same way).
    pub busy_retry_after_ms: (u32, u32),
    /// How long a stopping server drains at most before it closes what is left.
    pub drain_timeout: Duration,
    /// How long a client being cut loose or told to go gets to read the reason.
    pub closing_grace: Duration,
    /// How long an image that is behind the update stream (its source has not yet
    /// published updates the server already sent) is held before it is sent as it is.
    pub stale_image_wait: Duration,
    /// A connection that has not logged in this long after it was accepted is cut loose
    /// (reason `T`), so that half-open connections do not hold slots.
    pub login_timeout: Duration,
    /// A logged-in client heard nothing from (no request, no heartbeat) this long is cut
    /// loose (reason `I`). Keep it at least three heartbeat intervals: a client sends a
    /// heartbeat after one interval without sending, and may notice that an interval late.
    pub idle_timeout: Duration,
    /// A TLS handshake not completed this long after the accept is dropped (counted):
    /// the first and cheapest stage to give up on.
    pub tls_handshake_timeout: Duration,
    /// Seeds the jitter of the retry-afters.
    pub seed: u64,
    /// The line's stages' `engine.wait`: with busy-spin the loop spins between turns while
    /// updates are coming (see `ACTIVE_TURNS`); otherwise, and once idle, it sleeps in
    /// `poll` up to a millisecond.
    pub wait: WaitStrategy,
}

impl ServeConfig {
    /// Defaults for `listen`.
    pub fn new(listen: SocketAddr) -> Self {
        ServeConfig {
            listen,
            max_clients: 1024,
            max_symbols: 256,
            queue_bytes: 1 << 20,
            high_water: 512 << 10,
            low_water: 64 << 10,
            total_queue_bytes: 256 << 20,
            heartbeat_ms: 1000,
            restart_retry_after_ms: (2000, 5000),
            busy_retry_after_ms: (2000, 5000),
            drain_timeout: Duration::from_secs(2),
            closing_grace: Duration::from_secs(1),
            stale_image_wait: Duration::from_millis(50),
            login_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(10),
            tls_handshake_timeout: Duration::from_secs(5),
            seed: 0x5eed,
            wait: WaitStrategy::SpinYield,
        }
    }
}

/// The running server. Dropping it stops it (gracefully) and waits for its thread.
#[derive(Debug)]
pub struct ServeHandle {
    counters: Arc<ServeCounters>,
    thread: ServerThread<io::Result<()>>,
}

impl ServeHandle {
    /// The address it listens on (the port the kernel chose, for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.thread.local_addr()
    }

    /// The counters, live.
    pub fn counters(&self) -> Arc<ServeCounters> {
        Arc::clone(&self.counters)
    }

    /// Stops the server: it stops accepting, tells every client to come back after a
    /// jittered delay, drains within `drain_timeout`, and returns its final counts.
    ///
    /// # Errors
    ///
    /// If the server thread failed or panicked.
    pub fn stop(self) -> io::Result<ServeCounts> {
        self.thread
            .stop()
            .ok_or_else(|| io::Error::other("the serve thread panicked"))??;
        Ok(self.counters.load())
    }
}

/// Starts the server on its own thread: binds `config.listen`, subscribes to `hub` (if
/// given), and serves images from `images` behind `admission`.
///
/// # Errors
///
/// If the address cannot be bound or the thread cannot be started.
pub fn start_server(
    config: ServeConfig,
    hub: Option<SubscriberHub>,
    images: Box<dyn ImageSource>,
    admission: Box<dyn Admission>,
) -> io::Result<ServeHandle> {
    start_server_stopping_on(config, hub, images, admission, Arc::default())
}

/// What the server asks of a connection before it serves it.
#[derive(Clone, Debug, Default)]
pub struct ServeSecurity {
    /// Speak TLS on every connection with this configuration (`None`: plain TCP, for
    /// loopback and tests). Over TLS a connection refused at accept is closed before the
    /// handshake, without a `J` frame: refusing costs the server nothing, and the client
    /// backs off as for any failed connect.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Require a version-2 login whose secret is an account's password, and serve each
    /// account what it is entitled to (`None`: any account name logs in and sees
    /// everything, over version 1 or 2).
    pub accounts: Option<AccountsConfig>,
    /// Write the audit trail here (logins, refusals, entitlement refusals, logouts).
    pub audit: Option<Arc<AuditLog>>,
}

/// [`start_server`], stopping gracefully as soon as `stop` is set (the process's shutdown
/// flag: on SIGTERM the server stops accepting and tells its clients to come back at once,
/// while the line drains), or when the handle is stopped or dropped.
///
/// # Errors
///
/// As [`start_server`].
pub fn start_server_stopping_on(
    config: ServeConfig,
    hub: Option<SubscriberHub>,
    images: Box<dyn ImageSource>,
    admission: Box<dyn Admission>,
    stop: Arc<AtomicBool>,
) -> io::Result<ServeHandle> {
    start_secure_server(
        config,
        ServeSecurity::default(),
        hub,
        images,
        admission,
        stop,
    )
}

/// [`start_server_stopping_on`], asking of every connection what `security` says.
///
/// # Errors
///
/// As [`start_server`].
pub fn start_secure_server(
    config: ServeConfig,
    security: ServeSecurity,
    hub: Option<SubscriberHub>,
    images: Box<dyn ImageSource>,
    admission: Box<dyn Admission>,
    stop: Arc<AtomicBool>,
) -> io::Result<ServeHandle> {
    let counters = Arc::new(ServeCounters::default());
    let logins = security.accounts.map(Logins::start).transpose()?;
    let subscription = hub.as_ref().map(SubscriberHub::subscribe);
    let thread_counters = Arc::clone(&counters);
    let server = move |poll, listener| Server {
        config,
        tls: security.tls,
        logins,
        audit: security.audit,
        next_ticket: 1,
        poll,
        listener: Some(listener),
        clients: Vec::with_capacity(config.max_clients),
        free: Vec::with_capacity(config.max_clients),
        hub,
        subscription,
        images,
        admission,
        counters: thread_counters,
        clock: Clock::start(),
        bump: Bump::with_capacity(64 << 10),
        rng: SplitMix64::new(config.seed),
        interest: vec![0u32; 1 << 16].into_boxed_slice(),
        last_fanned: vec![0u64; 1 << 16].into_boxed_slice(),
        conflation_mark: 0,
    };
    let thread = ServerThread::start(
        "ticklane-serve",
        config.listen,
        stop,
        move |poll, listener, stop| server(poll, listener).run(stop),
    )?;
    Ok(ServeHandle { counters, thread })
}

struct Server {
    config: ServeConfig,
    tls: Option<Arc<rustls::ServerConfig>>,
    /// The accounts, their verifier and their reloads, when logins need a secret.
    logins: Option<Logins>,
    audit: Option<Arc<AuditLog>>,
    /// The next connection's ticket.
    next_ticket: u64,
    poll: Poll,
    listener: Option<TcpListener>,
    /// Slot `i` is token `i + 1`.
    clients: Vec<Option<Connection>>,
    free: Vec<usize>,
    hub: Option<SubscriberHub>,
    subscription: Option<Subscription>,
    images: Box<dyn ImageSource>,
    admission: Box<dyn Admission>,
    counters: Arc<ServeCounters>,
    clock: Clock,
    /// Scratch for one request, reset after it.
    bump: Bump,
    rng: SplitMix64,
    /// Subscriptions per locate over all clients: events nobody wants are skipped at once.
    interest: Box<[u32]>,
    /// The newest feed sequence the server has taken from the hub, per locate: an image
    /// older than it misses updates already sent, and waits for the source to catch up.
    last_fanned: Box<[u64]>,
    conflation_mark: u64,
}

impl Server {
    fn run(&mut self, stop: &AtomicBool) -> io::Result<()> {
        let mut events = Events::with_capacity(1024);
        let mut drain_deadline = None;
        let spins = self.config.wait == WaitStrategy::BusySpin;
        // Turns since the hub last had an update (`ACTIVE_TURNS` and more: idle).
        let mut quiet_turns = ACTIVE_TURNS;
        loop {
            let active = spins && quiet_turns < ACTIVE_TURNS;
            let timeout = if active {
                Duration::ZERO
            } else {
                POLL_INTERVAL
            };
            if let Err(e) = self.poll.poll(&mut events, Some(timeout)) {
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
            let now = self.clock.now_ns();
            for event in events.iter() {
                match event.token() {
                    LISTENER => self.accept(now)?,
                    WAKE => {}
                    Token(t) => self.serve_readable(t - 1, now),
                }
            }
            self.take_verdicts(now);
            self.apply_reloads(now);
            if self.fan_out(now) > 0 {
                quiet_turns = 0;
            } else {
                quiet_turns = quiet_turns.saturating_add(1);
                if active && events.is_empty() {
                    std::hint::spin_loop();
                }
            }
            self.owe_images(now);
            self.shed_heaviest(now);
            self.flush_all(now);
            if stop.load(Ordering::Acquire) && drain_deadline.is_none() {
                drain_deadline = Some(self.begin_stop(now)?);
            }
            if let Some(deadline) = drain_deadline {
                let open = self.clients.iter().flatten().count();
                if open == 0 || now >= deadline {
                    return Ok(());
                }
            }
        }
    }

    fn jitter(&mut self, (low, high): (u32, u32)) -> u32 {
        let span = u64::from(high.saturating_sub(low)) + 1;
        low + self.rng.below(span) as u32
    }

    fn grace_deadline(&self, now: u64) -> u64 {
        now + self.config.closing_grace.as_nanos() as u64
    }

    /// Stop accepting first, then tell everyone to come back later.
    fn begin_stop(&mut self, now: u64) -> io::Result<u64> {
        if let Some(mut listener) = self.listener.take() {
            self.poll.registry().deregister(&mut listener)?;
        }
        let deadline = now + self.config.drain_timeout.as_nanos() as u64;
        for slot in 0..self.clients.len() {
            let retry_after_ms = self.jitter(self.config.restart_retry_after_ms);
            if let Some(conn) = self.clients[slot].as_mut() {
                conn.close_with(
                    &ServerMessage::ComeBackLater {
                        reason: Reason::Restarting,
                        retry_after_ms,
                    },
                    now,
                    deadline,
                );
            }
        }
        Ok(deadline)
    }

    fn accept(&mut self, now: u64) -> io::Result<()> {
        loop {
            let Some(listener) = self.listener.as_ref() else {
                return Ok(());
            };
            let (mut stream, peer) = match listener.accept() {
                Ok(accepted) => accepted,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // A connection that died in the backlog, or out of descriptors: not fatal.
                Err(_) => return Ok(()),
            };
            let verdict = if self.clients.iter().flatten().count() >= self.config.max_clients {
                Verdict::Reject {
                    retry_after_ms: self.jitter(self.config.busy_retry_after_ms),
                }
            } else {
                self.admission.on_accept(peer, now)
            };
            if let Verdict::Reject { retry_after_ms } = verdict {
                self.counters.add_rejected(1);
                if self.tls.is_some() {
                    // Closed before the handshake: no frame can be read before one.
                    continue;
                }
                // Rejected at once with a reason, never queued or left half open.
                let mut frame = Vec::with_capacity(8);
                encode_server(
                    &ServerMessage::LoginRejected {
                        reason: Reason::Busy,
                        retry_after_ms,
                    },
                    &mut frame,
                );
                let _ = io::Write::write(&mut stream, &frame);
                continue;
            }
            let tls = match self.tls.as_ref().map(ServerSession::new) {
                None => None,
                Some(Ok(session)) => Some(Box::new(session)),
                Some(Err(_)) => {
                    self.counters.add_tls_failed(1);
                    continue;
                }
            };
            // Updates are small and latency is the point: no Nagle delay.
            let _ = stream.set_nodelay(true);
            let slot = self.free.pop().unwrap_or_else(|| {
                self.clients.push(None);
                self.clients.len() - 1
            });
            self.poll.registry().register(
                &mut stream,
                Token(slot + 1),
                Interest::READABLE | Interest::WRITABLE,
            )?;
            self.clients[slot] = Some(Connection::new(
                stream,
                tls,
                peer,
                self.config.queue_bytes,
                self.config.max_symbols,
                now,
                self.next_ticket,
            ));
            self.next_ticket += 1;
            self.counters
                .set_clients(self.clients.iter().flatten().count());
        }
    }

    /// Reads and serves what the client sent. mio reports readiness once per edge, so the
    /// socket is read until it would block: a full read buffer is served, then read again.
    fn serve_readable(&mut self, slot: usize, now: u64) {
        let deadline = self.grace_deadline(now);
        loop {
            let Some(Some(conn)) = self.clients.get_mut(slot) else {
                return;
            };
            if conn.dead {
                return;
            }
            if matches!(conn.phase, Phase::Closing { .. }) {
                conn.discard_input();
                return;
            }
            let handshaking = conn.handshaking();
            match conn.fill() {
                Ok(established) => {
                    if established {
                        self.counters.add_tls_established(1);
                    }
                }
                Err(_) => {
                    if handshaking {
                        self.counters.add_tls_failed(1);
                    }
                    // The alert rustls queued tells the peer why.
                    let _ = conn.flush();
                    conn.dead = true;
                    return;
                }
            }
            let full = conn.read_len == conn.read_buf.len();
            let mut at = 0;
            loop {
                let Some(conn) = self.clients[slot].as_mut() else {
                    return;
                };
                if matches!(conn.phase, Phase::Closing { .. } | Phase::Verifying) {
                    break;
                }
                match decode_client(&conn.read_buf[at..conn.read_len]) {
                    Ok(Some((message, used))) => {
                        at += used;
                        conn.last_heard_ns = now;
                        self.handle(slot, message, now);
                    }
                    Ok(None) => break,
                    Err(_) => {
                        conn.cut(Reason::ProtocolError, now, deadline);
                        break;
                    }
                }
            }
            let Some(conn) = self.clients[slot].as_mut() else {
                return;
            };
            conn.consume(at);
            // While a login is verified the rest waits, read again after the verdict.
            if !full || conn.phase == Phase::Verifying {
                return;
            }
        }
    }

    fn handle(&mut self, slot: usize, message: ClientMessage, arrived: u64) {
        let grace = self.grace_deadline(arrived);
        let Some(conn) = self.clients[slot].as_mut() else {
            return;
        };
        match (conn.phase, message) {
            (
                Phase::AwaitingLogin,
                ClientMessage::Login {
                    version,
                    account,
                    secret,
                },
            ) => self.login(slot, version, account, &secret, arrived),
            (Phase::AwaitingLogin, _) => conn.cut(Reason::ProtocolError, arrived, grace),
            (Phase::Streaming, ClientMessage::Heartbeat) => {}
            (Phase::Streaming, ClientMessage::Logout) => conn.dead = true,
            (Phase::Streaming, ClientMessage::Login { .. }) => {
                conn.cut(Reason::ProtocolError, arrived, grace);
            }
            (Phase::Streaming, ClientMessage::Unsubscribe { symbol }) => {
                if let Some(i) = conn.sub_index(&symbol) {
                    let sub = conn.subs.swap_remove(i);
                    if sub.counted {
                        let n = &mut self.interest[usize::from(sub.locate)];
                        *n = n.saturating_sub(1);
                    }
                }
            }
            (
                Phase::Streaming,
                ClientMessage::Subscribe {
                    request_id,
                    budget_ms,
                    symbol,
                },
            ) => {
                if self.admit_request(slot, Stage::Subscribe, request_id, budget_ms, arrived) {
                    self.subscribe(slot, request_id, symbol, arrived);
                    self.bump.reset();
                }
            }
            (
                Phase::Streaming,
                ClientMessage::SymbolList {
                    request_id,
                    budget_ms,
                },
            ) => {
                if self.admit_request(slot, Stage::SymbolList, request_id, budget_ms, arrived) {
                    self.symbol_list(slot, request_id, arrived);
                    self.bump.reset();
                }
            }
            (Phase::Verifying | Phase::Closing { .. }, _) => {}
        }
    }

    /// Whether work on a request starts: its budget has not run out since it arrived, and
    /// admission lets it through. A request dropped is answered with `RequestExpired` and
    /// counted.
    fn admit_request(
        &mut self,
        slot: usize,
        stage: Stage,
        request_id: u32,
        budget_ms: u32,
        arrived: u64,
    ) -> bool {
        let now = self.clock.now_ns();
        let waited_ms = now.saturating_sub(arrived) / 1_000_000;
        let grace = self.grace_deadline(now);
        let Some(conn) = self.clients[slot].as_mut() else {
            return false;
        };
        if budget_ms == 0 || waited_ms >= u64::from(budget_ms) {
            self.counters.add_expired(1);
            conn.push_control(&ServerMessage::RequestExpired { request_id }, now);
            return false;
        }
        match self.admission.on_request(conn.peer, stage, now) {
            Verdict::Accept => {
                self.counters.add_requests(1);
                true
            }
            Verdict::Reject { retry_after_ms } => {
                self.counters.add_rejected(1);
                conn.close_with(
                    &ServerMessage::ComeBackLater {
                        reason: Reason::Busy,
                        retry_after_ms,
                    },
                    now,
                    grace,
                );
                false
            }
        }
    }

    fn subscribe(&mut self, slot: usize, request_id: u32, symbol: [u8; 8], now: u64) {
        if !self.entitled(slot, request_id, symbol, now) {
            return;
        }
        let grace = self.grace_deadline(now);
        let max_symbols = self.config.max_symbols;
        let Some(conn) = self.clients[slot].as_mut() else {
            return;
        };
        let index = match conn.sub_index(&symbol) {
            Some(i) => i,
            None if conn.subs.len() >= max_symbols => {
                conn.cut(Reason::TooManySymbols, now, grace);
                return;
            }
            None => {
                conn.subs.push(Sub {
                    symbol,
                    locate: 0,
                    counted: false,
                    image_feed_seq: 0,
                    pending: 0,
                    answer: 0,
                    owed_since_ns: 0,
                });
                conn.subs.len() - 1
            }
        };
        if let Some(conn) = self.clients[slot].as_mut() {
            conn.subs[index].answer = request_id;
        }
        if !self.send_image(slot, index, now) {
            // No such instrument (yet): say so; the subscription is not kept.
            let conn = self.clients[slot].as_mut().expect("invariant: still here");
            let sub = conn.subs.swap_remove(index);
            conn.push_sequenced(now, |seq| ServerMessage::UnknownSymbol {
                seq,
                request_id,
                symbol: sub.symbol,
            });
        }
    }

    /// Encodes subscription `index`'s image in the arena and queues it, answering its
    /// request (or as a refresh). `false` if the instrument is unknown. The image is owed
    /// instead when the client's queue cannot take it, or when the source is behind the
    /// update stream: the server already sent updates for the instrument newer than the
    /// image holds (the snapshot is published after the book thread delivers the events of a
    /// batch). An image behind for longer than `stale_image_wait` is taken as it is
    /// (a message that changed no published state leaves the snapshot's sequence behind for
    /// good).
    fn send_image(&mut self, slot: usize, index: usize, now: u64) -> bool {
        let Some(conn) = self.clients[slot].as_mut() else {
            return true;
        };
        let sub = conn.subs[index];
        let depth = if conn.top_only { 1 } else { MAX_IMAGE_LEVELS };
        let bump = &self.bump;
        let mut frame = bumpalo::collections::Vec::new_in(bump);
        let mut seen = None;
        let seq = conn.next_seq;
        let found = self.images.image(&sub.symbol, &mut |image| {
            let bids = image.bids.len().min(depth);
            let asks = image.asks.len().min(depth);
            // A side cut to the account's depth says so, as one cut to the snapshot's.
            let cut = bids < image.bids.len() || asks < image.asks.len();
            frame.reserve(FRAME_HEADER + IMAGE_HEADER_BYTES + (bids + asks) * LEVEL_BYTES);
            encode_image(
                ImageHeader {
                    seq,
                    request_id: sub.answer,
                    symbol: image.symbol,
                    locate: image.locate,
                    flags: image.flags | if cut { IMAGE_AT_DEPTH } else { 0 },
                    trading_state: image.trading_state,
                    feed_seq: image.feed_seq,
                    bid_levels: 0,
                    ask_levels: 0,
                },
                image.bids,
                image.asks,
                bids,
                asks,
                &mut frame,
            );
            seen = Some((image.locate, image.feed_seq));
        });
        let Some((locate, feed_seq)) = seen.filter(|_| found) else {
            return false;
        };
        // Counted once per subscription in `interest`, under the locate it has now.
        let at = usize::from(locate);
        if !sub.counted {
            self.interest[at] += 1;
        } else if sub.locate != locate {
            let old = usize::from(sub.locate);
            self.interest[old] = self.interest[old].saturating_sub(1);
            self.interest[at] += 1;
        }
        let behind = feed_seq < self.last_fanned[at];
        let owed_since = if sub.owed_since_ns == 0 {
            now
        } else {
            sub.owed_since_ns
        };
        let waited_out =
            now.saturating_sub(owed_since) >= self.config.stale_image_wait.as_nanos() as u64;
        let s = &mut conn.subs[index];
        s.locate = locate;
        s.counted = true;
        if (behind && !waited_out) || !conn.fits(frame.len()) {
            self.conflation_mark += 1;
            let s = &mut conn.subs[index];
            s.pending = self.conflation_mark;
            s.owed_since_ns = owed_since;
            if !behind {
                conn.conflating = true;
            }
            return true;
        }
        let _ = conn.queue.push(&frame);
        conn.last_queued_ns = now;
        conn.next_seq += 1;
        let s = &mut conn.subs[index];
        s.image_feed_seq = feed_seq.max(self.last_fanned[at]).max(1);
        s.pending = 0;
        s.answer = 0;
        s.owed_since_ns = 0;
        true
    }

    fn symbol_list(&mut self, slot: usize, request_id: u32, now: u64) {
        let Some(conn) = self.clients[slot].as_mut() else {
            return;
        };
        let mut symbols = bumpalo::collections::Vec::new_in(&self.bump);
        let (logins, account) = (self.logins.as_ref(), conn.account);
        self.images.symbols(&mut |symbol| {
            if Server::lists(logins, account, symbol) {
                symbols.extend_from_slice(symbol);
            }
        });
        let chunks = symbols.len().div_ceil(8 * SYMBOLS_PER_FRAME).max(1);
        let mut frame = bumpalo::collections::Vec::with_capacity_in(
            FRAME_HEADER + 15 + 8 * SYMBOLS_PER_FRAME,
            &self.bump,
        );
        for (i, chunk) in symbols
            .chunks(8 * SYMBOLS_PER_FRAME)
            .chain(symbols.is_empty().then_some(&[][..]))
            .enumerate()
        {
            frame.clear();
            encode_server(
                &ServerMessage::SymbolList {
                    seq: conn.next_seq,
                    request_id,
                    last: i + 1 == chunks,
                    symbols: chunk,
                },
                &mut frame,
            );
            if !conn.fits(frame.len()) {
                // The list did not fit the queue: the client asked for more than it reads.
                let grace = now + self.config.closing_grace.as_nanos() as u64;
                conn.cut(Reason::SlowConsumer, now, grace);
                self.counters.add_cut_loose(1);
                return;
            }
            let _ = conn.queue.push(&frame);
            conn.next_seq += 1;
            conn.last_queued_ns = now;
        }
    }

    /// Takes the hub's waiting events (at most a turn's) and queues each for the clients
    /// subscribed to it; returns how many came.
    fn fan_out(&mut self, now: u64) -> usize {
        for taken in 0..EVENTS_PER_TURN {
            let Some(subscription) = self.subscription.as_mut() else {
                return taken;
            };
            match subscription.try_recv() {
                Ok(event) => self.deliver(&event, now),
                Err(RecvError::Empty) => return taken,
                Err(RecvError::CutLoose(_)) => {
                    // The server itself fell behind the book thread: subscribe again and
                    // owe every client a fresh image of everything it follows.
                    self.subscription = self.hub.as_ref().map(SubscriberHub::subscribe);
                    self.owe_everything();
                    return taken;
                }
                Err(RecvError::Closed) => {
                    self.subscription = None;
                    return taken;
                }
            }
        }
        EVENTS_PER_TURN
    }

    fn owe_everything(&mut self) {
        for conn in self.clients.iter_mut().flatten() {
            for sub in &mut conn.subs {
                self.conflation_mark += 1;
                sub.pending = self.conflation_mark;
            }
        }
    }

    fn deliver(&mut self, event: &Event, now: u64) {
        let last = &mut self.last_fanned[usize::from(event.locate.0)];
        *last = (*last).max(event.feed_seq);
        if self.interest[usize::from(event.locate.0)] == 0 {
            return;
        }
        let high = self.config.high_water;
        for conn in self.clients.iter_mut().flatten() {
            if conn.phase != Phase::Streaming {
                continue;
            }
            let Some(index) = conn
                .subs
                .iter()
                .position(|s| s.locate == event.locate.0 && s.image_feed_seq != 0)
            else {
                continue;
            };
            let sub = conn.subs[index];
            if event.feed_seq <= sub.image_feed_seq {
                continue; // in the image already
            }
            if conn.top_only && matches!(event.body, EventBody::Level { .. }) {
                continue; // the account sees the top of book: quotes carry it
            }
            if conn.queue.len() >= high {
                // A burst filled the queue within one turn: offer it to the socket before
                // calling the client slow; only a client whose socket will not take it is.
                match conn.flush() {
                    Ok(n) => self.counters.add_bytes(n as u64),
                    Err(_) => conn.dead = true,
                }
            }
            let conflatable = event.is_conflatable();
            let refresh = matches!(event.body, EventBody::Refresh(_));
            if refresh
                || (conflatable
                    && (conn.conflating || conn.queue.len() >= high || sub.pending != 0))
            {
                // A refresh stands for state the server's own subscription missed: the
                // client is owed the latest image instead.
                conn.conflating |= !refresh;
                self.conflation_mark += 1;
                conn.subs[index].pending = self.conflation_mark;
                if !refresh {
                    self.counters.add_conflated(1);
                }
                continue;
            }
            let seq = conn.next_seq;
            let symbol = sub.symbol;
            let message = match event.body {
                EventBody::Quote(top) => ServerMessage::Quote { seq, symbol, top },
                EventBody::Level { side, level } => ServerMessage::Level {
                    seq,
                    symbol,
                    side,
                    level,
                },
                EventBody::Trade { price, shares } => ServerMessage::Trade {
                    seq,
                    symbol,
                    price,
                    shares,
                },
                EventBody::TradingState { state, reason } => ServerMessage::TradingState {
                    seq,
                    symbol,
                    state,
                    reason,
                },
                EventBody::Refresh(_) => continue,
            };
            let len = frame_len(&message);
            if conn.fits(len) {
                conn.queue
                    .push_encoded(len, |out| encode_server(&message, out));
                conn.next_seq += 1;
                conn.last_queued_ns = now;
            } else if conflatable {
                conn.conflating = true;
                self.conflation_mark += 1;
                conn.subs[index].pending = self.conflation_mark;
                self.counters.add_conflated(1);
            } else {
                // Neither conflatable nor deliverable: the client goes, with the reason.
                let deadline = now + self.config.closing_grace.as_nanos() as u64;
                conn.cut(Reason::SlowConsumer, now, deadline);
                self.counters.add_cut_loose(1);
            }
        }
    }

    /// Clients back at their low mark get the images they are owed, newest first.
    fn owe_images(&mut self, now: u64) {
        for slot in 0..self.clients.len() {
            while let Some(conn) = self.clients[slot].as_mut() {
                if conn.phase != Phase::Streaming {
                    break;
                }
                if conn.conflating {
                    if conn.queue.len() > self.config.low_water {
                        break;
                    }
                    conn.conflating = false;
                }
                let newest = conn
                    .subs
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| s.pending != 0)
                    .max_by_key(|(_, s)| s.pending)
                    .map(|(i, _)| i);
                let Some(index) = newest else {
                    break;
                };
                if conn.queue.len() >= self.config.high_water {
                    conn.conflating = true;
                    break;
                }
                if !self.send_image(slot, index, now) {
                    // Gone from the source: stop owing it.
                    if let Some(conn) = self.clients[slot].as_mut() {
                        conn.subs[index].pending = 0;
                    }
                }
                self.bump.reset();
                if self.clients[slot]
                    .as_ref()
                    .is_some_and(|c| c.subs[index].pending != 0)
                {
                    break; // still owed (the source is behind): next turn
                }
                if self.clients[slot].as_ref().is_some_and(|c| c.conflating) {
                    break;
                }
            }
        }
    }

    /// All queues together past their bound: shed the heaviest client first.
    fn shed_heaviest(&mut self, now: u64) {
        // Clients already going are not counted: their queues end with their grace, and
        // counting them would shed the next client for the one just shed.
        let total: usize = self
            .clients
            .iter()
            .flatten()
            .filter(|c| c.phase == Phase::Streaming)
            .map(|c| c.queue.len())
            .sum();
        if total <= self.config.total_queue_bytes {
            return;
        }
        let deadline = self.grace_deadline(now);
        if let Some(heaviest) = self
            .clients
            .iter_mut()
            .flatten()
            .filter(|c| c.phase == Phase::Streaming)
            .max_by_key(|c| c.queue.len())
        {
            heaviest.cut(Reason::Shed, now, deadline);
            self.counters.add_shed(1);
        }
    }

    fn flush_all(&mut self, now: u64) {
        let idle = IdleRule::new(self.config.heartbeat_ms, self.config.idle_timeout);
        for slot in 0..self.clients.len() {
            self.refuse_due(slot, now);
            let Some(conn) = self.clients[slot].as_mut() else {
                continue;
            };
            if conn.handshaking()
                && now.saturating_sub(conn.accepted_ns)
                    >= self.config.tls_handshake_timeout.as_nanos() as u64
            {
                // No frame can reach a client before its handshake: just close.
                self.counters.add_tls_timed_out(1);
                self.close(slot);
                continue;
            }
            if conn.phase == Phase::AwaitingLogin
                && now.saturating_sub(conn.accepted_ns)
                    >= self.config.login_timeout.as_nanos() as u64
            {
                let deadline = now + self.config.closing_grace.as_nanos() as u64;
                conn.cut(Reason::Silent, now, deadline);
            }
            if conn.phase == Phase::Streaming {
                match idle.check(
                    now,
                    conn.last_heard_ns,
                    conn.last_queued_ns,
                    conn.queue.is_empty(),
                ) {
                    IdleAction::Nothing => {}
                    IdleAction::Heartbeat => conn.push_control(&ServerMessage::Heartbeat, now),
                    IdleAction::Cut => {
                        let deadline = now + self.config.closing_grace.as_nanos() as u64;
                        conn.cut(Reason::Idle, now, deadline);
                        self.counters.add_cut_idle(1);
                    }
                }
            }
            match conn.flush() {
                Ok(n) => self.counters.add_bytes(n as u64),
                Err(_) => conn.dead = true,
            }
            let done = match conn.phase {
                Phase::Closing { deadline_ns } => {
                    if conn.queue.is_empty() {
                        conn.finish_sending();
                    }
                    now >= deadline_ns
                }
                _ => false,
            };
            if conn.dead || done {
                self.close(slot);
            }
        }
    }

    fn close(&mut self, slot: usize) {
        let Some(mut conn) = self.clients[slot].take() else {
            return;
        };
        for sub in &conn.subs {
            if sub.counted {
                let n = &mut self.interest[usize::from(sub.locate)];
                *n = n.saturating_sub(1);
            }
        }
        let _ = self.poll.registry().deregister(&mut conn.stream);
        self.admission.on_close(conn.peer);
        if let Some(account) = conn.account {
            let session = self.clock.now_ns().saturating_sub(conn.login_ns);
            self.audit(
                AuditEvent::Logout {
                    reason: conn.ended,
                    session: Duration::from_nanos(session),
                },
                account,
                Some(conn.peer),
            );
        }
        self.free.push(slot);
        self.counters
            .set_clients(self.clients.iter().flatten().count());
    }
}

/// The encoded length of a fixed-size update.
fn frame_len(message: &ServerMessage<'_>) -> usize {
    FRAME_HEADER
        + match message {
            ServerMessage::Quote { .. } => 48,
            ServerMessage::Level { .. } => 33,
            ServerMessage::Trade { .. } => 24,
            ServerMessage::TradingState { .. } => 21,
            _ => 0,
        }
}
