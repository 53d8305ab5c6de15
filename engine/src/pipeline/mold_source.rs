//! The reader stage of a live MoldUDP64 feed: UDP packets through the recovery machine into
//! the ring, with gaps requested from the retransmission server.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mio::{Events, Interest, Poll, Token};
use ticklane_feed::moldudp64::{
    Delivered, GapRange, LostRanges, MoldRecovery, Packet, RecoveryConfig, RecoverySink,
    RecoveryStats, RetransmitRequest,
};
use ticklane_feed::net::{
    FeedKeys, NetError, OsError, SocketError, SocketErrorCounts, UdpFeed, UdpFeedConfig,
};

use super::frame::Frame;
use super::overrun_watch::{KernelOverruns, OverrunWatch};
use super::source_end::{PollStep, SourceError};
use super::wait::{WaitStrategy, Waiter};
use super::{FrameProducer, FrameSource, SourceEnd};
use crate::clock::Clock;
use crate::publish::{DeclaredLoss, FeedState};
use crate::snapshot::wall_clock_ns;

const DATA: Token = Token(0);
const REQUESTS: Token = Token(1);
/// Largest datagram read.
const DATAGRAM: usize = 65_536;
/// The longest silence before the books are flagged stale, whatever the silence timeout:
/// MoldUDP64 heartbeats come every second, so two missed ones mean the line is down.
const STALE_AFTER_MAX: Duration = Duration::from_secs(2);

/// A MoldUDP64 feed line.
#[derive(Clone, Debug)]
pub struct MoldFeedConfig {
    /// The data socket.
    pub udp: UdpFeedConfig,
    /// The retransmission (request) server, if the line has one.
    pub request_server: Option<SocketAddr>,
    /// Gap recovery: reorder store, timeouts, retries.
    pub recovery: RecoveryConfig,
    /// A feed silent this long is dead: the source ends with an error (DESIGN: a silent feed
    /// is a dead feed; MoldUDP64 heartbeats come every second).
    pub silence_timeout: Duration,
    /// End after this long in any case (tests, demos); `None` runs until end of session.
    pub max_duration: Option<Duration>,
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
            request_server: None,
            recovery: RecoveryConfig::default(),
            silence_timeout: Duration::from_secs(5),
            max_duration: None,
        }
    }
}

/// What the MoldUDP64 source did.
#[derive(Debug, Default)]
pub struct MoldSourceReport {
    /// Recovery counters: packets, gaps, requests, recovered and lost messages, duplicates.
    pub recovery: RecoveryStats,
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
    /// Datagrams the kernel dropped on the data socket because its receive buffer was full
    /// (the reader did not keep up); `None` where the kernel does not report it.
    pub kernel_overruns: Option<KernelOverruns>,
    /// Why the source ended.
    pub end: SourceEnd,
}

/// The live MoldUDP64 reader.
pub struct MoldSource {
    config: MoldFeedConfig,
    data: UdpFeed,
    requests: UdpFeed,
    wait: WaitStrategy,
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
        let local = match config.udp.interface {
            i if i.is_unspecified() => std::net::Ipv4Addr::LOCALHOST,
            i => i,
        };
        let requests = UdpFeed::ephemeral(local, keys.interface)?;
        Ok(MoldSource {
            config,
            data,
            requests,
            wait,
        })
    }

    /// Sets the retransmission server (when it is started after the feed's port is known).
    pub fn set_request_server(&mut self, server: SocketAddr) {
        self.config.request_server = Some(server);
    }

    /// The data socket's address (its port, when bound to port 0).
    ///
    /// # Errors
    ///
    /// As `getsockname`.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.data.local_addr()
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
    }

    fn lost(&mut self, gap: GapRange) {
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
        let mut recovery = MoldRecovery::new(self.config.recovery);
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
        let mut overruns = OverrunWatch::new(&self.data, started);
        let busy = self.wait == WaitStrategy::BusySpin;
        report.end = loop {
            if stop.load(Ordering::Relaxed) {
                break SourceEnd::Stopped;
            }
            let now_ns = clock.now_ns();
            overruns.poll(now_ns);
            if recovery.ended() && recovery.open_gaps() == 0 {
                break SourceEnd::EndOfSession;
            }
            if now_ns - last_heard > self.config.silence_timeout.as_nanos() as u64 {
                break SourceEnd::Silent(self.config.silence_timeout);
            }
            if line == FeedState::Live && now_ns - last_heard > stale_after {
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
                recovery
                    .next_deadline()
                    .map_or(Duration::from_millis(10), |d| d.saturating_sub(now))
                    .min(Duration::from_millis(10))
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
                abandoned: false,
            };
            for event in events.iter() {
                let socket = if event.token() == DATA {
                    &self.data
                } else {
                    &self.requests
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
                    sink.recv_ns = clock.now_ns();
                    last_heard = sink.recv_ns;
                    if line != FeedState::Live {
                        // Any packet, a heartbeat too, says the line is up again; it goes
                        // ahead of the packet's messages.
                        line = FeedState::Live;
                        if !push_line_state(sink.frames, sink.waiter, clock, line, sink.recv_ns) {
                            sink.abandoned = true;
                            break;
                        }
                    }
                    match Packet::parse(datagram) {
                        Ok(packet) => recovery.on_packet(
                            &packet,
                            Duration::from_nanos(sink.recv_ns),
                            &mut sink,
                        ),
                        Err(_) => sink.report.bad_packets += 1,
                    }
                }
            }
            sink.recv_ns = clock.now_ns();
            recovery.poll_timers(Duration::from_nanos(sink.recv_ns), &mut sink);
            if sink.abandoned {
                break SourceEnd::BookThreadGone;
            }
        };
        report.recovery = recovery.stats();
        report.lost = recovery.lost_ranges().clone();
        report.kernel_overruns = overruns.finish(clock.now_ns());
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
