//! In-process subscribers: each consumer gets the update stream through its own bounded
//! queue, and a slow consumer never slows the book thread or any other consumer.
//!
//! The book thread owns an [`EventFanout`] (inside the publisher) and is the single producer
//! of every consumer's ring; each [`Subscription`] is the single consumer of its own. A
//! consumer measures how long its events waited and runs its own
//! [`SojournDetector`](super::SojournDetector); while its queue stands it raises a flag, and
//! the book thread stops queueing state events for it: they are conflated into a pending
//! refresh per instrument, sent newest first, with the latest state, once the queue has
//! drained. Trades and trading-state changes are never conflated and never dropped: when one
//! cannot be queued, the consumer is cut loose with a logged reason and learns why when it
//! has read what was queued before; it may subscribe again.
//!
//! # Examples
//!
//! ```
//! use ticklane_pipeline::overload::{RecvError, SubscriberConfig, SubscriberHub};
//!
//! let (hub, fanout) = SubscriberHub::new(SubscriberConfig::default());
//! let mut subscription = hub.subscribe();
//! // `fanout` goes to the book thread, inside a `SheddingPublisher`; dropping it ends
//! // every subscription.
//! drop(fanout);
//! assert_eq!(subscription.try_recv(), Err(RecvError::Closed));
//! ```
#![forbid(unsafe_code)]

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use ticklane_feed::itch::{Locate, Nanos};

use super::codel::{CodelConfig, SojournDetector, Transition};
use super::dirty_set::DirtySet;
use super::events::{Event, EventBody, Refresh};
use crate::clock::Clock;
use ticklane_book::Books;
use ticklane_ring::ring::{Consumer, Producer, Ring};

/// Every locate a 16-bit field can name.
const LOCATES: usize = 1 << 16;

/// Sizes and limits of the subscriber queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubscriberConfig {
    /// Events each consumer's queue holds (rounded up to a power of two).
    pub queue_events: usize,
    /// Slots of each queue kept free of state events, so that trades and trading-state
    /// changes still find room while state is conflated.
    pub reserved_events: usize,
    /// The standing-queue detector each consumer runs on its own queue.
    pub codel: CodelConfig,
    /// A state event older than this when the consumer reaches it is dropped, counted, and
    /// replaced by a refresh with the latest state (ns).
    pub deadline_ns: u64,
    /// Most consumers at once; more are refused (cut loose at once).
    pub max_subscribers: usize,
}

impl Default for SubscriberConfig {
    fn default() -> Self {
        SubscriberConfig {
            queue_events: 4096,
            reserved_events: 1024,
            codel: CodelConfig::default(),
            deadline_ns: 1_000_000,
            max_subscribers: 16,
        }
    }
}

/// Why a consumer was cut loose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CutReason {
    /// A trade could not be queued: the consumer's queue was full. Subscribe again and
    /// read faster, or give the queue more room.
    TradeUndeliverable {
        /// Feed sequence of the trade that could not be delivered.
        feed_seq: u64,
    },
    /// A trading-state change could not be queued: the consumer's queue was full.
    TradingStateUndeliverable {
        /// Feed sequence of the change that could not be delivered.
        feed_seq: u64,
    },
    /// The engine already serves `SubscriberConfig::max_subscribers` consumers.
    TooManySubscribers,
}

impl fmt::Display for CutReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CutReason::TradeUndeliverable { feed_seq } => {
                write!(
                    f,
                    "queue full, trade at feed sequence {feed_seq} undeliverable"
                )
            }
            CutReason::TradingStateUndeliverable { feed_seq } => write!(
                f,
                "queue full, trading-state change at feed sequence {feed_seq} undeliverable"
            ),
            CutReason::TooManySubscribers => write!(f, "too many subscribers"),
        }
    }
}

/// Why [`Subscription::try_recv`] returned no event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecvError {
    /// Nothing queued now; try again.
    Empty,
    /// The consumer was cut loose, for this reason, after every event queued before.
    CutLoose(CutReason),
    /// The engine stopped publishing (the feed ended), after every event queued before.
    Closed,
}

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecvError::Empty => write!(f, "no event queued"),
            RecvError::CutLoose(reason) => write!(f, "cut loose: {reason}"),
            RecvError::Closed => write!(f, "the engine stopped publishing"),
        }
    }
}

impl std::error::Error for RecvError {}

/// What one consumer and the book thread share besides the rings.
#[derive(Debug, Default)]
struct SubscriberShared {
    /// Set by the consumer while its queue stands (Relaxed: a late flag costs a few events'
    /// worth of conflation, nothing more).
    standing: AtomicBool,
    /// Why the consumer was cut loose; written once by the book thread before it drops the
    /// producer, read by the consumer after it sees the producer gone.
    cut: Mutex<Option<CutReason>>,
}

/// What the hub and every subscription share.
#[derive(Debug)]
struct HubShared {
    config: SubscriberConfig,
    clock: Clock,
    /// New consumers waiting for the book thread to take them on.
    joining: Mutex<Vec<Sink>>,
    /// `joining.len()`, readable without the lock: the book thread looks at it each batch.
    joining_len: AtomicUsize,
    /// Set when the fanout is gone: new subscriptions are closed at once.
    closed: AtomicBool,
    next_id: AtomicU64,
    /// State events consumers found past the deadline.
    consumer_expired: AtomicU64,
}

/// Where consumers subscribe. Cheap to clone; `Send` and `Sync`, so any thread may subscribe
/// at any time, including again after being cut loose.
#[derive(Clone, Debug)]
pub struct SubscriberHub {
    shared: Arc<HubShared>,
}

impl SubscriberHub {
    /// A hub and the fanout the book thread delivers through. Allocates the fanout's tables
    /// (about 1 MiB, plus room for `max_subscribers` consumers).
    pub fn new(config: SubscriberConfig) -> (SubscriberHub, EventFanout) {
        let shared = Arc::new(HubShared {
            config,
            clock: Clock::start(),
            joining: Mutex::new(Vec::with_capacity(config.max_subscribers)),
            joining_len: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
            next_id: AtomicU64::new(1),
            consumer_expired: AtomicU64::new(0),
        });
        let fanout = EventFanout {
            hub: Arc::clone(&shared),
            sinks: Vec::with_capacity(config.max_subscribers),
            last_seen: vec![(0, Nanos(0)); LOCATES].into_boxed_slice(),
            delivered: 0,
            conflated: 0,
            expired: 0,
            cut: 0,
        };
        (SubscriberHub { shared }, fanout)
    }

    /// A new consumer. It receives events from the next batch the book thread applies; the
    /// state before that it learns from the snapshot, or from refreshes. Allocates its queue.
    pub fn subscribe(&self) -> Subscription {
        let config = self.shared.config;
        let (events_tx, events_rx) = Ring::new(config.queue_events);
        // A request per event the consumer can drop: the request ring never limits it.
        let (requests_tx, requests_rx) = Ring::new(config.queue_events);
        let shared = Arc::new(SubscriberShared::default());
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let sink = Sink {
            id,
            reserve: config
                .reserved_events
                .min(events_tx.capacity().saturating_sub(1)),
            events: events_tx,
            requests: requests_rx,
            shared: Arc::clone(&shared),
            pending: DirtySet::new(),
        };
        let mut joining = self
            .shared
            .joining
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Checked under the lock the fanout takes to close: a sink pushed here is either
        // taken on or dropped by the fanout, never left holding the ring open.
        if !self.shared.closed.load(Ordering::Acquire) {
            joining.push(sink);
            self.shared
                .joining_len
                .store(joining.len(), Ordering::Release);
        }
        drop(joining);
        Subscription {
            id,
            events: events_rx,
            requests: requests_tx,
            shared,
            hub: Arc::clone(&self.shared),
            detector: SojournDetector::new(config.codel),
            received: 0,
            expired: 0,
        }
    }
}

/// The book thread's half of one consumer.
struct Sink {
    id: u64,
    events: Producer<Event>,
    /// Instruments whose state events were dropped by the consumer for age.
    requests: Consumer<Locate>,
    shared: Arc<SubscriberShared>,
    /// Instruments with a refresh owed to this consumer (their state events were conflated).
    pending: DirtySet,
    /// Slots kept for events that cannot be conflated.
    reserve: usize,
}

impl fmt::Debug for Sink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sink")
            .field("id", &self.id)
            .field("pending", &self.pending.len())
            .finish_non_exhaustive()
    }
}

impl Sink {
    /// Whether state events should be conflated rather than queued now.
    #[inline]
    fn conflating(&self) -> bool {
        self.shared.standing.load(Ordering::Relaxed) || self.events.slots() <= self.reserve
    }
}

/// The book thread's side of every consumer: delivers each event to each queue, conflates
/// for consumers whose queue stands, and cuts loose those that cannot take a trade.
///
/// `Send`, not `Sync`: it lives on the book thread. Allocates nothing per event.
pub struct EventFanout {
    hub: Arc<HubShared>,
    sinks: Vec<Sink>,
    /// Feed sequence and ITCH timestamp of the latest event per locate, for refreshes.
    last_seen: Box<[(u64, Nanos)]>,
    delivered: u64,
    conflated: u64,
    expired: u64,
    cut: u64,
}

impl fmt::Debug for EventFanout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventFanout")
            .field("sinks", &self.sinks)
            .finish_non_exhaustive()
    }
}

/// Counts of a fanout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FanoutCounts {
    /// Events queued to consumers.
    pub delivered: u64,
    /// State events folded into a pending refresh instead of queued.
    pub conflated: u64,
    /// Refreshes owed for longer than the deadline when their turn came, plus state events
    /// consumers dropped for age.
    pub expired: u64,
    /// Consumers cut loose.
    pub cut: u64,
}

impl EventFanout {
    /// The hub clock's time now: stamp the events of one message with it.
    #[inline]
    pub fn now_ns(&self) -> u64 {
        self.hub.clock.now_ns()
    }

    /// Consumers served now.
    pub fn subscribers(&self) -> usize {
        self.sinks.len()
    }

    /// What the fanout has done so far.
    pub fn counters(&self) -> FanoutCounts {
        FanoutCounts {
            delivered: self.delivered,
            conflated: self.conflated,
            expired: self.expired + self.hub.consumer_expired.load(Ordering::Relaxed),
            cut: self.cut,
        }
    }

    /// Queues `event`, stamped `now_ns`, to every consumer: a state event is conflated for
    /// a consumer whose queue stands or is nearly full; a trade or trading-state change
    /// that does not fit cuts the consumer loose.
    #[inline]
    pub fn deliver(&mut self, mut event: Event, now_ns: u64) {
        self.last_seen[usize::from(event.locate.0)] = (event.feed_seq, event.exchange_ts);
        event.queued_ns = now_ns;
        let conflatable = event.is_conflatable();
        let mut i = 0;
        while i < self.sinks.len() {
            let sink = &mut self.sinks[i];
            if conflatable && sink.conflating() {
                sink.pending
                    .mark(event.locate, now_ns, event.feed_seq, event.exchange_ts);
                self.conflated += 1;
            } else if sink.events.push(event).is_ok() {
                self.delivered += 1;
            } else {
                let reason = match event.body {
                    EventBody::TradingState { .. } => CutReason::TradingStateUndeliverable {
                        feed_seq: event.feed_seq,
                    },
                    _ => CutReason::TradeUndeliverable {
                        feed_seq: event.feed_seq,
                    },
                };
                self.cut_loose(i, reason);
                continue;
            }
            i += 1;
        }
    }

    /// Batch-boundary work: takes on new consumers, turns consumers' refresh requests into
    /// owed refreshes, and sends owed refreshes, newest first, to consumers whose queue is
    /// not standing, as far as their room outside the reserve allows.
    pub fn maintain(&mut self, books: &Books, now_ns: u64) {
        if self.hub.joining_len.load(Ordering::Acquire) > 0 {
            self.take_on_joiners();
        }
        let deadline = self.hub.config.deadline_ns;
        for sink in &mut self.sinks {
            while let Ok(locate) = sink.requests.pop() {
                let (feed_seq, ts) = self.last_seen[usize::from(locate.0)];
                sink.pending.mark(locate, now_ns, feed_seq, ts);
            }
            if sink.pending.is_empty() || sink.shared.standing.load(Ordering::Relaxed) {
                continue;
            }
            let mut room = sink.events.slots().saturating_sub(sink.reserve);
            while room > 0 {
                let Some(entry) = sink.pending.pop_newest() else {
                    break;
                };
                if now_ns.saturating_sub(entry.first_ns) > deadline {
                    self.expired += 1;
                }
                let (feed_seq, exchange_ts) = self.last_seen[usize::from(entry.locate.0)];
                let refresh = Event {
                    locate: entry.locate,
                    symbol: books.symbol_raw(entry.locate).0,
                    feed_seq,
                    exchange_ts,
                    queued_ns: now_ns,
                    body: EventBody::Refresh(Refresh::of(books, entry.locate)),
                };
                if sink.events.push(refresh).is_err() {
                    break;
                }
                self.delivered += 1;
                room -= 1;
            }
        }
    }

    /// Takes on the consumers that subscribed so far, so they see every event from the
    /// first message on (the book thread also does this at each batch boundary).
    pub fn accept_subscribers(&mut self) {
        if self.hub.joining_len.load(Ordering::Acquire) > 0 {
            self.take_on_joiners();
        }
    }

    /// Ends every subscription: consumers read what is queued, then [`RecvError::Closed`].
    pub fn close(&mut self) {
        self.hub.closed.store(true, Ordering::Release);
        let mut joining = self
            .hub
            .joining
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        joining.clear();
        self.hub.joining_len.store(0, Ordering::Release);
        drop(joining);
        self.sinks.clear();
    }

    #[cold]
    fn take_on_joiners(&mut self) {
        let hub = Arc::clone(&self.hub);
        let mut joining = hub
            .joining
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let max = hub.config.max_subscribers;
        while let Some(sink) = joining.pop() {
            if self.sinks.len() < max {
                self.sinks.push(sink);
            } else {
                self.cut_sink(sink, CutReason::TooManySubscribers);
            }
        }
        hub.joining_len.store(0, Ordering::Release);
    }

    /// Cuts consumer `i` loose: records why, logs it, counts it, and drops its producer so
    /// the consumer sees the end after what was queued.
    #[cold]
    fn cut_loose(&mut self, i: usize, reason: CutReason) {
        let sink = self.sinks.swap_remove(i);
        self.cut_sink(sink, reason);
    }

    #[cold]
    fn cut_sink(&mut self, sink: Sink, reason: CutReason) {
        *sink
            .shared
            .cut
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(reason);
        self.cut += 1;
        eprintln!("ticklane: subscriber {} cut loose: {reason}", sink.id);
    }
}

impl Drop for EventFanout {
    fn drop(&mut self) {
        self.close();
    }
}

/// One consumer's end of the update stream.
///
/// `Send` but not `Sync`: read it from one thread. Poll it with
/// [`Subscription::try_recv`]; it never blocks.
pub struct Subscription {
    id: u64,
    events: Consumer<Event>,
    requests: Producer<Locate>,
    shared: Arc<SubscriberShared>,
    hub: Arc<HubShared>,
    detector: SojournDetector,
    received: u64,
    expired: u64,
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription")
            .field("id", &self.id)
            .field("received", &self.received)
            .finish_non_exhaustive()
    }
}

impl Subscription {
    /// The consumer's number (as the cut-loose log line names it).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Events received so far.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// State events dropped for age so far (each replaced by a refresh).
    pub fn expired(&self) -> u64 {
        self.expired
    }

    /// Whether this consumer's queue stands now (by its own detector).
    pub fn is_standing(&self) -> bool {
        self.detector.is_standing()
    }

    /// The next event.
    ///
    /// A quote or level change that waited longer than the deadline is dropped here and a
    /// refresh with the instrument's latest state is asked for in its place.
    ///
    /// # Errors
    ///
    /// [`RecvError::Empty`] when nothing is queued; [`RecvError::CutLoose`] or
    /// [`RecvError::Closed`] once everything queued before the end has been read.
    pub fn try_recv(&mut self) -> Result<Event, RecvError> {
        loop {
            // Looked at before the pop: a producer gone before an empty pop sent nothing more.
            let gone = self.events.is_abandoned();
            let Ok(event) = self.events.pop() else {
                if self.detector.drained(self.hub.clock.now_ns()) == Transition::Left {
                    self.shared.standing.store(false, Ordering::Relaxed);
                }
                if !gone {
                    return Err(RecvError::Empty);
                }
                let reason = *self
                    .shared
                    .cut
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                return Err(reason.map_or(RecvError::Closed, RecvError::CutLoose));
            };
            let now = self.hub.clock.now_ns();
            let sojourn = now.saturating_sub(event.queued_ns);
            match self.detector.observe(sojourn, now) {
                Transition::Entered => self.shared.standing.store(true, Ordering::Relaxed),
                Transition::Left => self.shared.standing.store(false, Ordering::Relaxed),
                Transition::None => {}
            }
            let expirable = matches!(event.body, EventBody::Quote(_) | EventBody::Level { .. });
            // A late event is still delivered when no replacement can be asked for.
            if expirable
                && sojourn > self.hub.config.deadline_ns
                && !gone
                && self.requests.push(event.locate).is_ok()
            {
                self.expired += 1;
                self.hub.consumer_expired.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            self.received += 1;
            return Ok(event);
        }
    }
}
