//! The reader stage of a live MoldUDP64 feed: UDP packets through the recovery machine into
//! the ring, with gaps requested from the retransmission server.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mio::{Events, Interest, Poll, Token};
use ticklane_feed::moldudp64::{
    Delivered, GapRange, LossReason, LostRanges, MoldError, MoldRecovery, Packet, PacketKind,
    RecoveryConfig, RecoveryCounts, RecoverySink, RetransmitRequest,
};
use ticklane_feed::net::{
    FeedKeys, NetError, OsError, SocketError, SocketErrorCounts, UdpFeed, UdpFeedConfig,
};
use ticklane_feed::resilience::BreakerConfig;

use super::arbitration::{Arbitration, ArbitrationReport, Line};
use super::contract_violations::{
    mold_error_offset, ContractViolations, ViolationAt, ViolationKind,
};
use super::frame::Frame;
use super::glimpse_start::{load_snapshot, GlimpseConfig, GlimpseReport, Held, SnapshotFailure};
use super::join_notice::JoinNotice;
use super::line_counters::{LineCounters, LineCountersWriter};
use super::line_guard::{GuardHandles, LineCalls, LineGuard, Listening, DEFAULT_LINE_BREAKER};
use super::overrun_watch::{KernelOverruns, OverrunWatch};
use super::session_tail::SessionTail;
use super::source_end::{PollStep, SourceError};
use super::wait::{WaitStrategy, Waiter};
use super::{FrameProducer, FrameSource, SourceEnd};
use crate::clock::Clock;
use ticklane_book::publish::{DeclaredLoss, FeedState, LateJoin};
use ticklane_snapshot::wall_clock_ns;

const DATA: Token = Token(0);
const REQUESTS: Token = Token(1);
const DATA_B: Token = Token(2);
/// The configuration keys of line B's socket, named in its errors.
const LINE_B_KEYS: FeedKeys = FeedKeys {
    bind: Some("feed.b_bind"),
    multicast_group: Some("feed.b_multicast_group"),
    interface: Some("feed.b_interface"),
    server: None,
};
/// Largest datagram read.
const DATAGRAM: usize = 65_536;
/// The longest silence before the books are flagged stale, whatever the silence timeout:
/// MoldUDP64 heartbeats come every second, so two missed ones mean the line is down.
const STALE_AFTER_MAX: Duration = Duration::from_secs(2);
/// With no retransmission server, how long a gap waits for late or reordered packets before
/// it is declared lost: UDP reordering on a LAN is a matter of microseconds, so 1 ms covers
/// it without holding every message behind a gap for long.
pub const NO_SERVER_REORDER_WAIT: Duration = Duration::from_millis(1);

/// A MoldUDP64 feed line.
#[derive(Clone, Debug)]
pub struct MoldFeedConfig {
    /// The data socket.
    pub udp: UdpFeedConfig,
    /// Line B: the same session on a second socket, arbitrated with line A (the first copy
    /// of each sequence wins); `None` for one line. Set
    /// [`RecoveryConfig::arbitration_wait`] with it.
    pub line_b: Option<UdpFeedConfig>,
    /// The retransmission (request) server, if the line has one.
    pub request_server: Option<SocketAddr>,
    /// Gap recovery: reorder store, timeouts, retries.
    pub recovery: RecoveryConfig,
    /// A feed silent this long is dead: the source ends with an error (a silent feed
    /// is a dead feed; MoldUDP64 heartbeats come every second).
    pub silence_timeout: Duration,
    /// End after this long in any case (tests, demos); `None` runs until end of session.
    pub max_duration: Option<Duration>,
    /// The line's circuit breaker (`line_guard`: a call is one stale-threshold interval).
    pub line_breaker: BreakerConfig,
    /// Start from a GLIMPSE 5.0 snapshot (`glimpse_start`): the books are built from it,
    /// and the live stream applied from the sequence it names. `None`: start as
    /// `recovery.start_sequence` says.
    pub glimpse: Option<GlimpseConfig>,
}

impl MoldFeedConfig {
    /// How long the line may be silent (no packet, not even a heartbeat) before its books are
    /// flagged `STALE`: half the silence timeout, at most 2 s, so that a reader is told well
    /// before the line is given up.
    pub fn stale_after(&self) -> Duration {
        (self.silence_timeout / 2).min(STALE_AFTER_MAX)
    }
}

impl Default for MoldFeedConfig {
    fn default() -> Self {
        MoldFeedConfig {
            udp: UdpFeedConfig::default(),
            line_b: None,
            request_server: None,
            recovery: RecoveryConfig::default(),
            silence_timeout: Duration::from_secs(5),
            max_duration: None,
            line_breaker: DEFAULT_LINE_BREAKER,
            glimpse: None,
        }
    }
}

/// What the MoldUDP64 source did.
#[derive(Debug, Default)]
pub struct MoldSourceReport {
    /// Recovery counters: packets, gaps, requests, recovered and lost messages, duplicates.
    pub recovery: RecoveryCounts,
    /// Messages pushed into the ring.
    pub messages: u64,
    /// Every range declared lost (adjacent ones merged), however many: each declared after
    /// its retries ran out, or at once with no retransmission server to ask.
    pub lost: LostRanges,
    /// Datagrams that were not MoldUDP64 packets.
    pub bad_packets: u64,
    /// Receive errors on the data and request sockets, by kind (nothing waiting is not one).
    pub recv_errors: SocketErrorCounts,
    /// Retransmission requests that could not be sent, by kind (the recovery machine's
    /// timer asks again).
    pub request_send_errors: SocketErrorCounts,
    /// Per-line counters when the line has an A and a B socket (`None` for one line).
    pub lines: Option<ArbitrationReport>,
    /// Datagrams the kernel dropped on the data socket because its receive buffer was full
    /// (the reader did not keep up); `None` where the kernel does not report it.
    pub kernel_overruns: Option<KernelOverruns>,
    /// The same for line B's socket; `None` for one line, or where the kernel does not
    /// report it.
    pub kernel_overruns_b: Option<KernelOverruns>,
    /// Why the source ended.
    pub end: SourceEnd,
    /// Data packets ignored while the line was isolated by hand.
    pub ignored_packets: u64,
    /// The line breaker's calls (stale-threshold listening intervals).
    pub line_calls: LineCalls,
    /// What the snapshot start did, when the line started from one.
    pub glimpse: Option<GlimpseReport>,
}

/// The live MoldUDP64 reader.
pub struct MoldSource {
    config: MoldFeedConfig,
    data: UdpFeed,
    data_b: Option<UdpFeed>,
    requests: UdpFeed,
    wait: WaitStrategy,
    counters: Option<LineCountersWriter>,
    violations: Option<Arc<ContractViolations>>,
    handles: GuardHandles,
}

impl MoldSource {
    /// Opens the sockets now (so the caller knows the bound port before anything is sent).
    ///
    /// # Errors
    ///
    /// If a socket cannot be opened: an `io::Error` that displays the [`NetError`] (the
    /// operation and the address) and has the OS error as its source;
    /// [`MoldSource::open_keyed`] returns the [`NetError`] itself.
    pub fn open(config: MoldFeedConfig, wait: WaitStrategy) -> std::io::Result<Self> {
        Ok(Self::open_keyed(config, wait, &FeedKeys::NONE)?)
    }

    /// [`MoldSource::open`], with the configuration keys the addresses came from, so that a
    /// socket error names them.
    ///
    /// # Errors
    ///
    /// [`NetError`] naming the operation, the address or interface, and its key.
    pub fn open_keyed(
        config: MoldFeedConfig,
        wait: WaitStrategy,
        keys: &FeedKeys,
    ) -> Result<Self, NetError> {
        let data = UdpFeed::open(&config.udp, keys)?;
        let b_keys = if keys.bind.is_some() {
            LINE_B_KEYS
        } else {
            FeedKeys::NONE
        };
        let data_b = match &config.line_b {
            Some(b) => Some(UdpFeed::open(b, &b_keys)?),
            None => None,
        };
        let local = match config.udp.interface {
            i if i.is_unspecified() => std::net::Ipv4Addr::LOCALHOST,
            i => i,
        };
        let requests = UdpFeed::ephemeral(local, keys.interface)?;
        Ok(MoldSource {
            config,
            data,
            data_b,
            requests,
            wait,
            counters: None,
            violations: None,
            handles: GuardHandles::default(),
        })
    }

    /// Counts malformed packets in `violations` too (contract violations: logged, health
    /// Degraded).
    pub fn watch_violations(&mut self, violations: Arc<ContractViolations>) {
        self.violations = Some(violations);
    }

    /// Reports to these handles: manual isolate/close, breaker mirrors, storm counters,
    /// health (the line's, and its retransmission server's).
    pub fn with_handles(mut self, handles: GuardHandles) -> Self {
        self.handles = handles;
        self
    }

    /// [`MoldSource::with_handles`] in place, keeping the handles it has where `handles` has
    /// none ([`GuardHandles::fill_from`]).
    pub fn add_handles(&mut self, handles: GuardHandles) {
        self.handles.fill_from(handles);
    }

    /// Sets the retransmission server (when it is started after the feed's port is known).
    pub fn set_request_server(&mut self, server: SocketAddr) {
        self.config.request_server = Some(server);
    }

    /// Starts the line from this GLIMPSE server's snapshot (when it is started after the
    /// feed's port is known).
    pub fn set_glimpse(&mut self, glimpse: GlimpseConfig) {
        self.config.glimpse = Some(glimpse);
    }

    /// Copies the reader's stats into `counters` about once a millisecond while it runs.
    pub fn set_counters(&mut self, counters: std::sync::Arc<LineCounters>) {
        self.counters = Some(LineCountersWriter::new(counters));
    }

    /// The data socket's address (its port, when bound to port 0).
    ///
    /// # Errors
    ///
    /// As `getsockname`.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.data.local_addr()
    }

    /// Line B's data socket's address, when the line has one.
    ///
    /// # Errors
    ///
    /// As `getsockname`.
    pub fn local_addr_b(&self) -> std::io::Result<Option<SocketAddr>> {
        self.data_b.as_ref().map(UdpFeed::local_addr).transpose()
    }
}

/// Where the recovery machine's decisions go while one packet (or timer) is handled.
struct Sink<'a, Q> {
    frames: &'a mut Q,
    waiter: &'a mut Waiter,
    recv_ns: u64,
    requests: &'a UdpFeed,
    server: Option<SocketAddr>,
    report: &'a mut MoldSourceReport,
    /// Which line each delivered message came from.
    lines: &'a mut Arbitration,
    /// Set if the book thread went away: stop.
    abandoned: bool,
}

impl<Q: FrameProducer> Sink<'_, Q> {
    /// Tells the book thread, in order with the messages, that `gap` is lost: every book may
    /// be wrong from here on.
    #[cold]
    fn declare(&mut self, gap: GapRange) {
        let loss = DeclaredLoss {
            first: gap.first,
            count: gap.len(),
            at_ns: wall_clock_ns(),
        };
        let recv_ns = self.recv_ns;
        if !self.frames.push_waiting(self.waiter, |f: &mut Frame| {
            f.set_declared_loss(loss, recv_ns)
        }) {
            self.abandoned = true;
        }
    }

    /// Tells the book thread that the line joined at `first_seen` without asking for the
    /// messages before: every book may lack orders from before the join.
    #[cold]
    fn late_join(&mut self, first_seen: u64) {
        let join = LateJoin {
            first_seen,
            at_ns: wall_clock_ns(),
        };
        let recv_ns = self.recv_ns;
        if !self
            .frames
            .push_waiting(self.waiter, |f: &mut Frame| f.set_late_join(join, recv_ns))
        {
            self.abandoned = true;
        }
    }
}

/// Tells the book thread, in order with the messages, that the line is now `state`, since
/// `since_ns` on the pipeline clock (turned into wall-clock time here: a cold path).
fn push_line_state<Q: FrameProducer>(
    frames: &mut Q,
    waiter: &mut Waiter,
    clock: Clock,
    state: FeedState,
    since_ns: u64,
) -> bool {
    let now_ns = clock.now_ns();
    let since_wall = wall_clock_ns().saturating_sub(now_ns.saturating_sub(since_ns));
    frames.push_waiting(waiter, |f: &mut Frame| {
        f.set_line_state(state, since_wall, now_ns)
    })
}

impl<Q: FrameProducer> RecoverySink for Sink<'_, Q> {
    #[inline]
    fn message(&mut self, m: Delivered<'_>) {
        // An unsequenced (sanitized) packet's messages carry no number: 0, which MoldUDP64,
        // numbering from 1, never uses.
        let (seq, bytes) = (m.seq.unwrap_or(0), m.bytes);
        let recv_ns = self.recv_ns;
        let pushed = self.frames.push_waiting(self.waiter, |f: &mut Frame| {
            f.set_message_or_empty(bytes, seq, recv_ns, 0)
        });
        if !pushed {
            self.abandoned = true;
            return;
        }
        self.report.messages += 1;
        self.lines.on_delivered(m.origin);
    }

    fn lost(&mut self, gap: GapRange, _: LossReason) {
        self.declare(gap);
        // The recovery machine keeps every declared range; the report takes them at the end.
    }

    fn request(&mut self, request: RetransmitRequest) {
        if let Some(server) = self.server {
            // A request not sent (buffer full, or an error, counted) is asked again by the
            // recovery machine's timer.
            if let Err(e) = self.requests.send_to(&request.to_bytes(), server) {
                self.report.request_send_errors.count(e);
            }
        }
    }
}

impl FrameSource for MoldSource {
    type Report = MoldSourceReport;

    fn run<Q: FrameProducer>(
        mut self,
        mut frames: Q,
        clock: Clock,
        stop: &AtomicBool,
    ) -> MoldSourceReport {
        let mut report = MoldSourceReport::default();
        let mut waiter = Waiter::new(self.wait);
        let mut recovery = MoldRecovery::new(recovery_config(&self.config));
        let mut buf = vec![0u8; DATAGRAM].into_boxed_slice();
        let setup = Poll::new()
            .map_err(|e| (PollStep::Create, e))
            .and_then(|poll| {
                let registry = poll.registry();
                registry
                    .register(self.data.source(), DATA, Interest::READABLE)
                    .and_then(|()| {
                        registry.register(self.requests.source(), REQUESTS, Interest::READABLE)
                    })
                    .and_then(|()| match &mut self.data_b {
                        Some(b) => registry.register(b.source(), DATA_B, Interest::READABLE),
                        None => Ok(()),
                    })
                    .map_err(|e| (PollStep::Register, e))?;
                Ok(poll)
            });
        let mut poll = match setup {
            Ok(p) => p,
            Err((step, e)) => {
                report.end = SourceEnd::Error(SourceError::Poll {
                    step,
                    error: OsError::of(&e),
                });
                return report;
            }
        };
        let mut events = Events::with_capacity(64);
        let started = clock.now_ns();
        let mut last_heard = started;
        let stale_after = self.config.stale_after().as_nanos() as u64;
        let mut line = FeedState::Live;
        let mut lines = Arbitration::new(started, self.config.stale_after());
        // Datagrams received on either socket, for the position of a malformed one.
        let mut datagrams = 0u64;
        let mut overruns = OverrunWatch::new(&self.data, started);
        let mut overruns_b = self.data_b.as_ref().map(|b| OverrunWatch::new(b, started));
        let mut tail =
            SessionTail::new(self.data_b.is_some(), self.config.recovery.arbitration_wait);
        let busy = self.wait == WaitStrategy::BusySpin;
        let mut guard = LineGuard::new(self.config.line_breaker, self.handles.clone());
        let mut listening = Listening::new(started);
        let mut join = JoinNotice::default();
        let mut ended_early = None;
        if let Some(glimpse) = self.config.glimpse {
            join = JoinNotice::after_snapshot();
            let mut glimpse_report = GlimpseReport::default();
            let loading = push_line_state(
                &mut frames,
                &mut waiter,
                clock,
                FeedState::Snapshot,
                clock.now_ns(),
            );
            let (loaded, held) = if loading {
                self.load_from_snapshot(
                    &glimpse,
                    SnapshotUse::Start,
                    &mut frames,
                    &mut waiter,
                    clock,
                    stop,
                    &mut glimpse_report,
                    &mut report.recv_errors,
                )
            } else {
                (Err(SourceEnd::BookThreadGone), Held::new(0))
            };
            report.glimpse = Some(glimpse_report);
            match loaded {
                Ok(next_sequence) => {
                    let mut config = recovery_config(&self.config);
                    config.start_sequence = Some(next_sequence);
                    recovery = MoldRecovery::new(config);
                    let mut sink = Sink {
                        frames: &mut frames,
                        waiter: &mut waiter,
                        recv_ns: 0,
                        requests: &self.requests,
                        server: self.config.request_server,
                        report: &mut report,
                        lines: &mut lines,
                        abandoned: false,
                    };
                    self.replay_held(
                        &held,
                        &mut sink,
                        &mut recovery,
                        &mut tail,
                        &mut datagrams,
                        clock,
                    );
                    last_heard = clock.now_ns();
                    let live = !sink.abandoned
                        && push_line_state(&mut frames, &mut waiter, clock, line, last_heard);
                    if !live {
                        ended_early = Some(SourceEnd::BookThreadGone);
                    }
                }
                Err(end) => ended_early = Some(end),
            }
        }
        report.end = loop {
            if let Some(end) = ended_early.take() {
                break end;
            }
            if stop.load(Ordering::Relaxed) {
                break SourceEnd::Stopped;
            }
            let now_ns = clock.now_ns();
            if let Some(c) = self.counters.as_ref().filter(|c| c.due(now_ns)) {
                c.shared().store_mold(&recovery.stats(), report.messages);
            }
            listening.tick(&mut guard, &mut recovery, now_ns, stale_after);
            let isolated = guard.isolated();
            if isolated != (line == FeedState::Isolated) {
                // Isolated: stale until closed by hand; closed: stale until a packet comes.
                line = if isolated {
                    FeedState::Isolated
                } else {
                    FeedState::Silent
                };
                if !push_line_state(&mut frames, &mut waiter, clock, line, now_ns) {
                    break SourceEnd::BookThreadGone;
                }
            }
            overruns.poll(now_ns);
            if let Some(b) = overruns_b.as_mut() {
                b.poll(now_ns);
            }
            if recovery.ended() && recovery.open_gaps() == 0 && tail.may_stop(now_ns) {
                break SourceEnd::EndOfSession;
            }
            // After the end of session the feed is silent by design: a line with gaps still
            // open waits for them (filled by their replies, or declared by their retries and
            // deadlines) before any silence ends it.
            let waits_for_gaps = recovery.end_announced() && recovery.open_gaps() > 0;
            if !waits_for_gaps
                && now_ns - last_heard > self.config.silence_timeout.as_nanos() as u64
            {
                break SourceEnd::Silent(self.config.silence_timeout);
            }
            if self.data_b.is_some() {
                // One line silent while the other flows: counted, the books stay live.
                lines.check_silence(now_ns);
            }
            // After the end of session silence is the feed's design, not a fault: the books
            // are the session's last, not stale, while open gaps are still waited for.
            if line == FeedState::Live
                && !recovery.end_announced()
                && now_ns - last_heard > stale_after
            {
                line = FeedState::Silent;
                if !push_line_state(&mut frames, &mut waiter, clock, line, last_heard) {
                    break SourceEnd::BookThreadGone;
                }
            }
            if let Some(max) = self.config.max_duration {
                if now_ns - started > max.as_nanos() as u64 {
                    break SourceEnd::TimeLimit(max);
                }
            }
            // Wake for the next retransmission timer, and at least every 10 ms for the checks
            // above; a busy-spinning reader never sleeps in the kernel.
            let timeout = if busy {
                Duration::ZERO
            } else {
                let now = Duration::from_nanos(now_ns);
                let limit = tail.poll_limit(now_ns).unwrap_or(Duration::MAX);
                recovery
                    .next_deadline()
                    .map_or(Duration::from_millis(10), |d| d.saturating_sub(now))
                    .min(Duration::from_millis(10))
                    .min(limit)
            };
            if let Err(e) = poll.poll(&mut events, Some(timeout)) {
                if e.kind() != std::io::ErrorKind::Interrupted {
                    break SourceEnd::Error(SourceError::Poll {
                        step: PollStep::Wait,
                        error: OsError::of(&e),
                    });
                }
            }
            let mut sink = Sink {
                frames: &mut frames,
                waiter: &mut waiter,
                recv_ns: 0,
                requests: &self.requests,
                server: self.config.request_server,
                report: &mut report,
                lines: &mut lines,
                abandoned: false,
            };
            for event in events.iter() {
                let (socket, from) = match (event.token(), &self.data_b) {
                    (DATA, _) => (&self.data, Line::A),
                    (DATA_B, Some(b)) => (b, Line::B),
                    _ => (&self.requests, Line::Retransmission),
                };
                // Drain until WouldBlock, then back to poll. Every error is counted; after an
                // interruption, a refusal or a cut datagram the socket still holds data, after
                // any other error poll decides when to try again (a socket that keeps failing
                // must not spin this loop).
                loop {
                    let datagram = match socket.recv(&mut buf) {
                        Ok(Some(d)) => d,
                        Ok(None) => break,
                        Err(e) => {
                            sink.report.recv_errors.count(e);
                            match e {
                                SocketError::Interrupted
                                | SocketError::Refused
                                | SocketError::Truncated => continue,
                                SocketError::Other(_) => break,
                            }
                        }
                    };
                    datagrams += 1;
                    sink.recv_ns = clock.now_ns();
                    last_heard = sink.recv_ns;
                    listening.heard = true;
                    if line == FeedState::Isolated && event.token() == DATA {
                        sink.report.ignored_packets += 1;
                        continue;
                    }
                    if line != FeedState::Live {
                        // Any packet, a heartbeat too, says the line is up again; it goes
                        // ahead of the packet's messages.
                        line = FeedState::Live;
                        if !push_line_state(sink.frames, sink.waiter, clock, line, sink.recv_ns) {
                            sink.abandoned = true;
                            break;
                        }
                    }
                    on_datagram(
                        datagram,
                        from,
                        &mut sink,
                        &mut recovery,
                        &mut tail,
                        self.violations.as_deref(),
                        datagrams,
                    );
                }
            }
            sink.recv_ns = clock.now_ns();
            recovery.poll_timers(Duration::from_nanos(sink.recv_ns), &mut sink);
            if let Some(first_seen) = join.check(&recovery, sink.server.is_some()) {
                sink.late_join(first_seen);
            }
            if sink.abandoned {
                break SourceEnd::BookThreadGone;
            }
            if let (true, Some(glimpse)) = (recovery.rebuild_wanted(), self.config.glimpse) {
                let rebuilt = self.rebuild(
                    &glimpse,
                    &mut frames,
                    &mut waiter,
                    clock,
                    stop,
                    &mut report,
                    &mut recovery,
                    &mut lines,
                    &mut tail,
                    &mut datagrams,
                );
                if let Err(end) = rebuilt {
                    break end;
                }
                line = FeedState::Live;
                last_heard = clock.now_ns();
            }
        };
        if !matches!(report.end, SourceEnd::BookThreadGone) {
            // The line is over, however it ended: what the store holds is delivered and every
            // gap still open is declared lost, so the books hold everything received (flagged
            // MAYBE_BAD) and the summary accounts for every sequence up to the highest seen.
            let mut sink = Sink {
                frames: &mut frames,
                waiter: &mut waiter,
                recv_ns: clock.now_ns(),
                requests: &self.requests,
                server: None,
                report: &mut report,
                lines: &mut lines,
                abandoned: false,
            };
            recovery.end_of_input(&mut sink);
        }
        guard.sync(clock.now_ns(), Some(&recovery), true);
        report.line_calls = guard.calls();
        report.recovery = recovery.stats();
        report.lost = recovery.lost_ranges().clone();
        if self.data_b.is_some() {
            report.lines = Some(lines.report(clock.now_ns()));
        }
        if let Some(c) = &self.counters {
            c.shared().store_mold(&report.recovery, report.messages);
        }
        report.kernel_overruns = overruns.finish(clock.now_ns());
        report.kernel_overruns_b = overruns_b.and_then(|b| b.finish(clock.now_ns()));
        // A line that ended badly leaves its books stale, and the snapshot not closed.
        let ended_badly = match report.end {
            SourceEnd::Silent(_) => Some((FeedState::EndedSilent, last_heard)),
            SourceEnd::Error(_) => Some((FeedState::EndedError, clock.now_ns())),
            _ => None,
        };
        if let Some((state, since_ns)) = ended_badly {
            // A snapshot already stale keeps its since-when.
            push_line_state(&mut frames, &mut waiter, clock, state, since_ns);
        }
        frames.push_end(&mut waiter, clock.now_ns());
        report
    }
}

/// One datagram from `from` into the recovery machine; a malformed one is counted (and
/// recorded as a contract violation, as the `datagrams`-th received).
fn on_datagram<Q: FrameProducer>(
    datagram: &[u8],
    from: Line,
    sink: &mut Sink<'_, Q>,
    recovery: &mut MoldRecovery,
    tail: &mut SessionTail,
    violations: Option<&ContractViolations>,
    datagrams: u64,
) {
    match Packet::parse(datagram) {
        Ok(packet) => {
            if packet.kind() == PacketKind::EndOfSession {
                tail.line_ended(from);
            }
            sink.lines.on_packet(
                from,
                packet.session().0,
                packet.sequence(),
                packet.next_sequence(),
                sink.recv_ns,
            );
            recovery.on_packet_from(
                &packet,
                from.origin(),
                Duration::from_nanos(sink.recv_ns),
                sink,
            );
        }
        Err(e) => {
            sink.report.bad_packets += 1;
            if let Some(v) = violations {
                malformed_packet(v, &e, datagram.len(), datagrams, sink.recv_ns);
            }
        }
    }
}

/// Why a snapshot is loaded: the books start from it, or are rebuilt from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SnapshotUse {
    /// The line's start: the books are empty.
    Start,
    /// A rebuild after a gap: every order goes before the snapshot's messages come.
    Rebuild,
}

impl MoldSource {
    /// Loads a GLIMPSE snapshot while holding the data sockets' packets, and hands its
    /// messages to the book thread as the books of the sequence before the one it names
    /// (for a rebuild, after clearing every order). Returns that sequence (or how the line
    /// ends instead), and the held packets.
    #[cold]
    #[allow(clippy::too_many_arguments)]
    fn load_from_snapshot<Q: FrameProducer>(
        &self,
        glimpse: &GlimpseConfig,
        to: SnapshotUse,
        frames: &mut Q,
        waiter: &mut Waiter,
        clock: Clock,
        stop: &AtomicBool,
        glimpse_report: &mut GlimpseReport,
        recv_errors: &mut SocketErrorCounts,
    ) -> (Result<u64, SourceEnd>, Held<Line>) {
        let mut held = Held::new(glimpse.hold_bytes);
        let mut buf = vec![0u8; DATAGRAM].into_boxed_slice();
        let sockets: Vec<(&UdpFeed, Line)> = std::iter::once((&self.data, Line::A))
            .chain(self.data_b.as_ref().map(|b| (b, Line::B)))
            .collect();
        let mut hold = || {
            for &(socket, line) in &sockets {
                // As the main loop drains a socket: every error counted; after one that
                // leaves data waiting, read on.
                loop {
                    match socket.recv(&mut buf) {
                        Ok(Some(datagram)) => held.keep(datagram, line),
                        Ok(None) => break,
                        Err(e) => {
                            recv_errors.count(e);
                            if matches!(e, SocketError::Other(_)) {
                                break;
                            }
                        }
                    }
                }
            }
        };
        let violations = self.violations.clone();
        let mut record = |v: &ticklane_feed::glimpse::SnapshotViolation| {
            if let Some(violations) = &violations {
                let now_ns = clock.now_ns();
                violations.record(
                    ViolationKind::MalformedSnapshot,
                    ViolationAt::Snapshot,
                    v,
                    now_ns,
                    wall_clock_ns(),
                );
            }
        };
        let loaded = load_snapshot(
            glimpse,
            wall_clock_ns(),
            stop,
            glimpse_report,
            &mut hold,
            &mut record,
        );
        glimpse_report.held_packets += held.len() as u64;
        glimpse_report.unheld_packets += held.unheld();
        let snapshot = match loaded {
            Ok(snapshot) => snapshot,
            Err(SnapshotFailure::Stopped) => return (Err(SourceEnd::Stopped), held),
            Err(failure) => {
                return (Err(SourceEnd::Error(SourceError::Snapshot(failure))), held);
            }
        };
        let seq = snapshot.next_sequence - 1;
        let recv_ns = clock.now_ns();
        if to == SnapshotUse::Rebuild
            && !frames.push_waiting(waiter, |f: &mut Frame| f.set_clear_orders(seq, recv_ns))
        {
            return (Err(SourceEnd::BookThreadGone), held);
        }
        for message in snapshot.messages() {
            let pushed = frames.push_waiting(waiter, |f: &mut Frame| {
                f.set_message_or_empty(message, seq, recv_ns, 0)
            });
            if !pushed {
                return (Err(SourceEnd::BookThreadGone), held);
            }
        }
        (Ok(snapshot.next_sequence), held)
    }

    /// The packets held while a snapshot loaded, into the recovery machine as if they came
    /// now (those before the snapshot's sequence are duplicates there).
    #[cold]
    fn replay_held<Q: FrameProducer>(
        &self,
        held: &Held<Line>,
        sink: &mut Sink<'_, Q>,
        recovery: &mut MoldRecovery,
        tail: &mut SessionTail,
        datagrams: &mut u64,
        clock: Clock,
    ) {
        for (datagram, from) in held.iter() {
            *datagrams += 1;
            sink.recv_ns = clock.now_ns();
            let violations = self.violations.as_deref();
            on_datagram(datagram, from, sink, recovery, tail, violations, *datagrams);
            if sink.abandoned {
                return;
            }
        }
    }

    /// Rebuilds the books from a new snapshot, for a gap the recovery machine will not ask
    /// for or was not answered on: the line says it is loading a snapshot (the books stale),
    /// loads one, and goes on from its sequence, live again. A snapshot that cannot be had
    /// leaves the books as they were and the gaps to be declared lost. `Err` if the line
    /// must end (stopped, or the book thread gone).
    #[cold]
    #[allow(clippy::too_many_arguments)]
    fn rebuild<Q: FrameProducer>(
        &self,
        glimpse: &GlimpseConfig,
        frames: &mut Q,
        waiter: &mut Waiter,
        clock: Clock,
        stop: &AtomicBool,
        report: &mut MoldSourceReport,
        recovery: &mut MoldRecovery,
        lines: &mut Arbitration,
        tail: &mut SessionTail,
        datagrams: &mut u64,
    ) -> Result<(), SourceEnd> {
        let since_ns = clock.now_ns();
        if !push_line_state(frames, waiter, clock, FeedState::Snapshot, since_ns) {
            return Err(SourceEnd::BookThreadGone);
        }
        let glimpse_report = report.glimpse.get_or_insert_with(GlimpseReport::default);
        let (loaded, held) = self.load_from_snapshot(
            glimpse,
            SnapshotUse::Rebuild,
            frames,
            waiter,
            clock,
            stop,
            glimpse_report,
            &mut report.recv_errors,
        );
        match loaded {
            Ok(next_sequence) => {
                glimpse_report.rebuilds += 1;
                recovery.restart_at(next_sequence);
            }
            Err(SourceEnd::Error(SourceError::Snapshot(failure))) => {
                eprintln!(
                    "ticklane: warning: no snapshot to rebuild the books from ({failure}); the \
                     gaps are declared lost, and later ones will be too"
                );
                glimpse_report.rebuild_failures += 1;
                recovery.stop_rebuilding();
            }
            Err(end) => return Err(end),
        }
        let mut sink = Sink {
            frames,
            waiter,
            recv_ns: 0,
            requests: &self.requests,
            server: self.config.request_server,
            report,
            lines,
            abandoned: false,
        };
        self.replay_held(&held, &mut sink, recovery, tail, datagrams, clock);
        let now_ns = clock.now_ns();
        if sink.abandoned || !push_line_state(frames, waiter, clock, FeedState::Live, now_ns) {
            return Err(SourceEnd::BookThreadGone);
        }
        Ok(())
    }
}

/// The recovery settings a line runs with: as configured, except that a line with no
/// retransmission server asks nobody: a gap waits [`NO_SERVER_REORDER_WAIT`] (or the A/B
/// arbitration wait, if longer) for late or reordered packets, then is declared lost; and a
/// line with a snapshot server rebuilds from it instead of declaring a loss, and for every
/// gap past its `max_recovery_gap` (`glimpse_start`).
fn recovery_config(config: &MoldFeedConfig) -> RecoveryConfig {
    let mut recovery = config.recovery;
    recovery.rebuild_above = config.glimpse.map(|g| g.max_recovery_gap);
    if config.request_server.is_none() {
        recovery.retransmission = false;
        recovery.reorder_wait = Some(recovery.arbitration_wait.max(NO_SERVER_REORDER_WAIT));
    }
    recovery
}

/// Records a malformed datagram (the `packet`-th received) as a contract violation.
#[cold]
fn malformed_packet(
    violations: &ContractViolations,
    error: &MoldError,
    len: usize,
    packet: u64,
    now_ns: u64,
) {
    let at = ViolationAt::Packet {
        packet,
        offset: mold_error_offset(error, len),
    };
    violations.record(
        ViolationKind::MalformedPacket,
        at,
        error,
        now_ns,
        wall_clock_ns(),
    );
}
