//! The reader stage of a SoupBinTCP feed: a TCP connection through the SoupBinTCP client
//! machine into the ring; on a dropped connection (refused, connect timed out, closed, the
//! server silent past its timeout, the session not available yet) it waits an exponential
//! backoff with full jitter and logs in again from the next sequence. A login that is not
//! authorised ends the source at once: trying again would be refused again.

use std::collections::VecDeque;
use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mio::{Events, Interest, Poll, Token};
use ticklane_feed::net::{OsError, TcpFeed, TcpRead};
use ticklane_feed::resilience::{Backoff, BackoffConfig, BreakerConfig, CallOutcome};
use ticklane_feed::rng::SplitMix64;
use ticklane_feed::soupbintcp::{
    ClientConfig, ClientEvent, ClientState, ProtocolError, RejectReason, SoupClient, TimerEvent,
};

use super::contract_violations::{ContractViolations, ViolationAt, ViolationKind};
use super::frame::Frame;
use super::line_counters::{LineCounters, LineCountersWriter};
use super::line_guard::{drop_is_fault, GuardHandles, LineGuard};
use super::source_end::{Chain, DropCounts, DropReason, PollStep, SourceError};
use super::wait::{WaitStrategy, Waiter};
use super::{FrameProducer, FrameSource, SourceEnd};
use crate::clock::Clock;
use ticklane_book::publish::FeedState;
use ticklane_snapshot::wall_clock_ns;

const CONNECTION: Token = Token(0);
/// Dropped connections kept, with their reasons, in the report (every one is counted).
pub const DROPS_KEPT: usize = 16;
/// The longest silence on a connection before the books are flagged stale, whatever the
/// server timeout: SoupBinTCP servers send a heartbeat every second.
const STALE_AFTER_MAX: Duration = Duration::from_secs(2);
/// The longest single sleep of a backoff wait, so that a stop or the time limit is seen.
const WAIT_SLICE: Duration = Duration::from_millis(10);

/// The line's state as the book thread last heard it, and the pushes that tell it more.
struct LineTracker {
    state: FeedState,
    /// Set if the book thread went away while being told.
    gone: bool,
    /// The line's breaker: a call is one connect and login.
    guard: LineGuard,
}

impl LineTracker {
    /// Tells the book thread (a control frame, in order with the messages) that the line is
    /// `state` since `since_ns` on the pipeline clock, if that is news.
    #[cold]
    fn set<Q: FrameProducer>(
        &mut self,
        frames: &mut Q,
        waiter: &mut Waiter,
        clock: Clock,
        state: FeedState,
        since_ns: u64,
    ) {
        if state == self.state {
            return;
        }
        self.state = state;
        let now_ns = clock.now_ns();
        let since_wall = wall_clock_ns().saturating_sub(now_ns.saturating_sub(since_ns));
        if !frames.push_waiting(waiter, |f: &mut Frame| {
            f.set_line_state(state, since_wall, now_ns)
        }) {
            self.gone = true;
        }
    }
}

/// A SoupBinTCP feed line.
#[derive(Clone, Debug)]
pub struct SoupFeedConfig {
    /// The server.
    pub server: SocketAddr,
    /// Login, session, first sequence, heartbeat and timeout settings.
    pub client: ClientConfig,
    /// A connect that takes longer than this fails.
    pub connect_timeout: Duration,
    /// Connections tried again after a drop (each resumes at the next sequence).
    pub max_reconnects: u32,
    /// The wait before each reconnect: uniform in `[0, min(cap, base · 2^n)]` before
    /// reconnect `n + 1` (full jitter), so lines that dropped together do not return together.
    pub reconnect: BackoffConfig,
    /// Seed of the jitter; `None` seeds from the wall clock (tests fix it to check the
    /// schedule exactly).
    pub reconnect_seed: Option<u64>,
    /// End after this long in any case (tests, demos); `None` runs until end of session.
    pub max_duration: Option<Duration>,
    /// The line's circuit breaker (`line_guard`: a call is one connect and login).
    pub breaker: BreakerConfig,
}

/// What the SoupBinTCP source did.
#[derive(Debug, Default)]
pub struct SoupSourceReport {
    /// Sequenced messages pushed into the ring.
    pub messages: u64,
    /// Connections made (1 + reconnects).
    pub connections: u32,
    /// Every connection attempt that dropped, counted by reason, the last few kept.
    pub drops: ConnectionDrops,
    /// Why the source ended.
    pub end: SourceEnd,
}

/// One connection attempt that dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DroppedConnection {
    /// Which attempt it was (1 is the first connection).
    pub attempt: u32,
    /// When it dropped, in nanoseconds of the pipeline's clock.
    pub at_ns: u64,
    /// Why.
    pub reason: DropReason,
    /// The backoff waited before the next attempt; `None` when no attempt followed.
    pub wait: Option<Duration>,
}

/// The connection attempts of a line that dropped: all counted by reason, the last
/// [`DROPS_KEPT`] kept whole, so memory stays bounded however long the line flaps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConnectionDrops {
    /// Every drop, by reason.
    pub by_reason: DropCounts,
    /// The last drops, oldest first.
    pub last: VecDeque<DroppedConnection>,
}

impl ConnectionDrops {
    /// Records a drop.
    pub fn record(&mut self, drop: DroppedConnection) {
        self.by_reason.count(&drop.reason);
        if self.last.len() == DROPS_KEPT {
            self.last.pop_front();
        }
        self.last.push_back(drop);
    }
}

impl fmt::Display for ConnectionDrops {
    /// `none`, or the counts by reason and then one line per kept drop with its causes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.by_reason)?;
        for d in &self.last {
            write!(
                f,
                "\n  attempt {} at {:.3} s: {}",
                d.attempt,
                d.at_ns as f64 / 1e9,
                Chain(&d.reason)
            )?;
        }
        Ok(())
    }
}

/// The live SoupBinTCP reader.
pub struct SoupSource {
    config: SoupFeedConfig,
    wait: WaitStrategy,
    server_key: Option<&'static str>,
    counters: Option<LineCountersWriter>,
    violations: Option<Arc<ContractViolations>>,
    handles: GuardHandles,
}

impl SoupSource {
    /// A source for `config`; it connects when it runs.
    pub fn new(config: SoupFeedConfig, wait: WaitStrategy) -> Self {
        SoupSource {
            config,
            wait,
            server_key: None,
            counters: None,
            violations: None,
            handles: GuardHandles::default(),
        }
    }

    /// Copies the reader's counts into `counters` about once a millisecond while it runs.
    pub fn set_counters(&mut self, counters: std::sync::Arc<LineCounters>) {
        self.counters = Some(LineCountersWriter::new(counters));
    }

    /// Reports to these handles: manual isolate/close, the breaker's mirror, storm
    /// counters, health.
    pub fn with_handles(mut self, handles: GuardHandles) -> Self {
        self.handles = handles;
        self
    }

    /// [`SoupSource::with_handles`] in place, keeping the handles it has where `handles` has
    /// none ([`GuardHandles::fill_from`]).
    pub fn add_handles(&mut self, handles: GuardHandles) {
        self.handles.fill_from(handles);
    }

    /// Names the configuration key the server address came from (if any), for connect
    /// errors.
    pub fn with_server_key(mut self, key: Option<&'static str>) -> Self {
        self.server_key = key;
        self
    }

    /// Counts malformed frames in `violations` too (contract violations: logged, health
    /// Degraded).
    pub fn watch_violations(&mut self, violations: Arc<ContractViolations>) {
        self.violations = Some(violations);
    }
}

/// A frame that breaks SoupBinTCP is a contract violation: counted, logged, and the line
/// ends in error. It is never retried: a reconnect would resume into the same bytes.
#[cold]
fn broke_protocol(
    violations: Option<&ContractViolations>,
    error: ProtocolError,
    messages: u64,
) -> Outcome {
    if let Some(v) = violations {
        let wall = wall_clock_ns();
        v.record(
            ViolationKind::MalformedFrame,
            ViolationAt::AfterMessages { messages },
            &error,
            wall,
            wall,
        );
    }
    Outcome::Done(SourceEnd::Error(SourceError::Protocol(error)))
}

/// How one connection ended.
enum Outcome {
    /// The session is over (end of session, rejected, stop, time limit): do not reconnect.
    Done(SourceEnd),
    /// The connection dropped or the server went silent: reconnect and resume.
    Dropped(DropReason),
    /// Isolated by hand: disconnect, and do not reconnect until closed.
    Isolated,
}

/// What a refused login means for the line: a session not available yet is tried again
/// with backoff; not authorised (or a code the specification does not define) would be
/// refused again, so it ends the source after this one attempt.
fn rejected(reason: RejectReason) -> Outcome {
    match reason {
        RejectReason::SessionNotAvailable => Outcome::Dropped(DropReason::Rejected(reason)),
        RejectReason::NotAuthorized | RejectReason::Other(_) => {
            Outcome::Done(SourceEnd::Error(SourceError::LoginRejected(reason)))
        }
    }
}

/// The seed of the reconnect jitter: the configured one, or one from the wall clock so that
/// instances started together draw different waits.
fn jitter_seed(configured: Option<u64>) -> u64 {
    configured.unwrap_or_else(|| wall_clock_ns() ^ u64::from(std::process::id()).rotate_left(32))
}

/// Sleeps `wait` in slices, returning early (`false`) on a stop or past `deadline`.
fn wait_for_reconnect(
    wait: Duration,
    clock: Clock,
    stop: &AtomicBool,
    deadline: Option<u64>,
) -> bool {
    let until = clock.now_ns().saturating_add(wait.as_nanos() as u64);
    loop {
        if stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| clock.now_ns() > d) {
            return false;
        }
        let now = clock.now_ns();
        if now >= until {
            return true;
        }
        std::thread::sleep(Duration::from_nanos(until - now).min(WAIT_SLICE));
    }
}

/// Waits until the line's breaker lets a connection attempt through (`None`), or says why
/// the source ends: isolated by hand, the line is flagged so until an operator closes it;
/// open, it waits for the probes. A refused attempt is counted once per wait.
fn admitted<Q: FrameProducer>(
    line: &mut LineTracker,
    frames: &mut Q,
    clock: Clock,
    new_identity: bool,
    (stop, deadline, max): (&AtomicBool, Option<u64>, Option<Duration>),
) -> Option<SourceEnd> {
    let mut waiter = Waiter::new(WaitStrategy::Park);
    let mut counted = false;
    loop {
        let now_ns = clock.now_ns();
        let now = Duration::from_nanos(now_ns);
        line.guard.take_commands(now, None);
        line.guard.sync(now_ns, None, false);
        if line.guard.isolated() {
            line.set(frames, &mut waiter, clock, FeedState::Isolated, now_ns);
        } else if line.guard.admits(now) && line.guard.try_call(now, new_identity) {
            return None;
        } else if !counted {
            line.guard.count_refused();
        }
        counted = true;
        if line.gone {
            return Some(SourceEnd::BookThreadGone);
        }
        let wait = line
            .guard
            .refuses_until(now)
            .map_or(WAIT_SLICE, |at| at.saturating_sub(now))
            .clamp(Duration::from_micros(100), WAIT_SLICE);
        if !wait_for_reconnect(wait, clock, stop, deadline) {
            return Some(if stop.load(Ordering::Relaxed) {
                SourceEnd::Stopped
            } else {
                SourceEnd::TimeLimit(max.unwrap_or_default())
            });
        }
    }
}

fn poll_failed(step: PollStep, e: &std::io::Error) -> Outcome {
    Outcome::Done(SourceEnd::Error(SourceError::Poll {
        step,
        error: OsError::of(e),
    }))
}

impl SoupSource {
    fn connection<Q: FrameProducer>(
        &self,
        client: &mut SoupClient,
        frames: &mut Q,
        clock: Clock,
        (stop, deadline): (&AtomicBool, Option<u64>),
        report: &mut SoupSourceReport,
        line: &mut LineTracker,
    ) -> Outcome {
        let now = |c: &Clock| Duration::from_nanos(c.now_ns());
        let mut waiter = Waiter::new(self.wait);
        let addr = self.config.server;
        let connect_failed = |e: &std::io::Error| {
            Outcome::Dropped(DropReason::Connect {
                addr,
                key: self.server_key,
                error: OsError::of(e),
            })
        };
        let mut feed = match TcpFeed::connect(addr, self.server_key) {
            Ok(f) => f,
            Err(e) => return connect_failed(e.io_error()),
        };
        let mut poll = match Poll::new() {
            Ok(p) => p,
            Err(e) => return poll_failed(PollStep::Create, &e),
        };
        if let Err(e) = poll.registry().register(
            feed.source(),
            CONNECTION,
            Interest::READABLE | Interest::WRITABLE,
        ) {
            return poll_failed(PollStep::Register, &e);
        }
        let mut events = Events::with_capacity(16);
        let connect_by = clock.now_ns() + self.config.connect_timeout.as_nanos() as u64;
        let mut connected = false;
        let stale_after = (self.config.client.server_timeout / 2)
            .min(STALE_AFTER_MAX)
            .as_nanos() as u64;
        let mut last_heard = clock.now_ns();
        let attempt_at = now(&clock);
        let mut answered = false;
        loop {
            if line.gone {
                return Outcome::Done(SourceEnd::BookThreadGone);
            }
            line.guard.take_commands(now(&clock), None);
            line.guard.sync(clock.now_ns(), None, false);
            if line.guard.isolated() {
                return Outcome::Isolated;
            }
            if stop.load(Ordering::Relaxed) {
                return Outcome::Done(SourceEnd::Stopped);
            }
            if deadline.is_some_and(|d| clock.now_ns() > d) {
                return Outcome::Done(SourceEnd::TimeLimit(
                    self.config.max_duration.unwrap_or_default(),
                ));
            }
            let timeout = client
                .next_deadline()
                .map_or(Duration::from_millis(10), |d| d.saturating_sub(now(&clock)))
                .min(Duration::from_millis(10));
            let timeout = if self.wait == WaitStrategy::BusySpin {
                Duration::ZERO
            } else {
                timeout
            };
            if let Err(e) = poll.poll(&mut events, Some(timeout)) {
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return poll_failed(PollStep::Wait, &e);
                }
            }
            if let Some(c) = self.counters.as_ref().filter(|c| c.due(clock.now_ns())) {
                c.shared().store_soup(report);
            }
            if !connected {
                match feed.connected() {
                    Ok(true) => {
                        connected = true;
                        report.connections += 1;
                        if let Err(e) = client.on_connected(now(&clock)) {
                            return Outcome::Done(SourceEnd::Error(SourceError::Login(e)));
                        }
                    }
                    Ok(false) if clock.now_ns() > connect_by => {
                        return Outcome::Dropped(DropReason::ConnectTimedOut {
                            addr,
                            timeout: self.config.connect_timeout,
                        })
                    }
                    Ok(false) => continue,
                    Err(e) => return connect_failed(&e),
                }
            }
            if connected
                && line.state == FeedState::Live
                && clock.now_ns().saturating_sub(last_heard) > stale_after
            {
                line.set(frames, &mut waiter, clock, FeedState::Silent, last_heard);
            }
            // Read until WouldBlock, handing every frame to the client machine.
            loop {
                match feed.read_into(client.read_buf()) {
                    Ok(TcpRead::Data(n)) => {
                        last_heard = clock.now_ns();
                        client.commit_read(n, now(&clock));
                    }
                    Ok(TcpRead::WouldBlock) => break,
                    Ok(TcpRead::Closed) => return Outcome::Dropped(DropReason::Closed),
                    Err(e) => return Outcome::Dropped(DropReason::Read(OsError::of(&e))),
                }
                let recv_ns = clock.now_ns();
                while let Some(event) = client.poll_event() {
                    if event.is_ok() && line.state != FeedState::Live {
                        // Anything the server sends (login accepted, a heartbeat, data) says
                        // the line is up again; it goes ahead of the data.
                        line.set(frames, &mut waiter, clock, FeedState::Live, recv_ns);
                        if line.gone {
                            return Outcome::Done(SourceEnd::BookThreadGone);
                        }
                    }
                    if !answered
                        && matches!(
                            event,
                            Ok(ClientEvent::LoggedIn { .. } | ClientEvent::Rejected(_))
                        )
                    {
                        // The login was answered, accepted or not: the call succeeded.
                        answered = true;
                        let t = now(&clock);
                        let outcome = line.guard.outcome_of(Some(t.saturating_sub(attempt_at)));
                        line.guard.record(t, outcome);
                    }
                    match event {
                        Ok(ClientEvent::Sequenced { seq, payload }) => {
                            if !frames.push_waiting(&mut waiter, |f: &mut Frame| {
                                f.set_message_or_empty(payload, seq, recv_ns, 0)
                            }) {
                                return Outcome::Done(SourceEnd::BookThreadGone);
                            }
                            report.messages += 1;
                        }
                        Ok(ClientEvent::EndOfSession { .. }) => {
                            return Outcome::Done(SourceEnd::EndOfSession)
                        }
                        Ok(ClientEvent::Rejected(reason)) => return rejected(reason),
                        Ok(_) => {}
                        Err(e) => {
                            return broke_protocol(self.violations.as_deref(), e, report.messages)
                        }
                    }
                }
            }
            if let Some(TimerEvent::PeerDead { silent_for }) = client.poll_timers(now(&clock)) {
                return Outcome::Dropped(DropReason::ServerSilent { silent_for });
            }
            // Write what the client queued (login, heartbeats).
            while !client.output().is_empty() {
                match feed.write_some(client.output()) {
                    Ok(0) => break,
                    Ok(n) => client.consume_output(n),
                    Err(e) => return Outcome::Dropped(DropReason::Write(OsError::of(&e))),
                }
            }
            if matches!(client.state(), ClientState::Ended) {
                return Outcome::Done(SourceEnd::EndOfSession);
            }
        }
    }
}

impl FrameSource for SoupSource {
    type Report = SoupSourceReport;

    fn run<Q: FrameProducer>(
        self,
        mut frames: Q,
        clock: Clock,
        stop: &AtomicBool,
    ) -> SoupSourceReport {
        let mut report = SoupSourceReport::default();
        let deadline = self
            .config
            .max_duration
            .map(|d| clock.now_ns() + d.as_nanos() as u64);
        let mut client = SoupClient::new(self.config.client);
        let mut attempts = 0;
        let backoff = Backoff::new(self.config.reconnect);
        let mut jitter = SplitMix64::new(jitter_seed(self.config.reconnect_seed));
        let mut waiter = Waiter::new(self.wait);
        let mut line = LineTracker {
            state: FeedState::Live,
            gone: false,
            guard: LineGuard::new(self.config.breaker, self.handles.clone()),
        };
        let mut last_resume = None;
        report.end = loop {
            let resume = client.resume_config();
            let resume = Some((resume.session, resume.next_sequence));
            let limits = (stop, deadline, self.config.max_duration);
            if let Some(why) =
                admitted(&mut line, &mut frames, clock, resume != last_resume, limits)
            {
                break why;
            }
            last_resume = resume;
            let outcome = self.connection(
                &mut client,
                &mut frames,
                clock,
                (stop, deadline),
                &mut report,
                &mut line,
            );
            match outcome {
                Outcome::Done(why) => break why,
                Outcome::Isolated => {
                    // Not a drop: no reconnect counted; resume where the stream stopped once
                    // closed by hand.
                    line.set(
                        &mut frames,
                        &mut waiter,
                        clock,
                        FeedState::Isolated,
                        clock.now_ns(),
                    );
                    client = SoupClient::new(client.resume_config());
                }
                Outcome::Dropped(reason) => {
                    if drop_is_fault(&reason) {
                        line.guard
                            .record(Duration::from_nanos(clock.now_ns()), CallOutcome::Fault);
                    }
                    // Stale from the drop on (a snapshot keeps the since-when of a silence
                    // that came before it).
                    line.set(
                        &mut frames,
                        &mut waiter,
                        clock,
                        FeedState::Reconnecting,
                        clock.now_ns(),
                    );
                    let mut drop = DroppedConnection {
                        attempt: attempts + 1,
                        at_ns: clock.now_ns(),
                        reason,
                        wait: None,
                    };
                    if attempts >= self.config.max_reconnects {
                        report.drops.record(drop);
                        break SourceEnd::Error(SourceError::ReconnectsExhausted {
                            reconnects: attempts,
                            last: reason,
                        });
                    }
                    // Reconnect n + 1 waits uniform in [0, min(cap, base · 2^n)].
                    let wait = backoff.delay(attempts, &mut jitter);
                    drop.wait = Some(wait);
                    report.drops.record(drop);
                    attempts += 1;
                    // Resume where the stream stopped, with a new client machine.
                    client = SoupClient::new(client.resume_config());
                    if !wait_for_reconnect(wait, clock, stop, deadline) {
                        break if stop.load(Ordering::Relaxed) {
                            SourceEnd::Stopped
                        } else {
                            SourceEnd::TimeLimit(self.config.max_duration.unwrap_or_default())
                        };
                    }
                }
            }
        };
        if report.end.is_error() {
            // A line that ended badly leaves its books stale, and the snapshot not closed.
            line.set(
                &mut frames,
                &mut waiter,
                clock,
                FeedState::EndedError,
                clock.now_ns(),
            );
        }
        if let Some(c) = &self.counters {
            c.shared().store_soup(&report);
        }
        line.guard.sync(clock.now_ns(), None, true);
        frames.push_end(&mut waiter, clock.now_ns());
        report
    }
}
