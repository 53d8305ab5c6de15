//! The book thread's publisher under overload control: every message is applied, and the
//! derived work (publishing instrument state) is served in order while the input queue
//! moves, newest first with conflation while it stands.
#![forbid(unsafe_code)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use ticklane_feed::itch::{Locate, Message, Nanos};

use super::codel::{CodelConfig, SojournDetector, Transition};
use super::counters::{OverloadCounters, OverloadCounts};
use super::dirty_set::DirtySet;
use super::events::EventDeriver;
use super::jittered_period::JitteredPeriod;
use super::subscribers::EventFanout;
use ticklane_book::publish::{Arrival, DeclaredLoss, FeedState, LateJoin, Publisher};
use ticklane_book::Applied;
use ticklane_book::Books;
use ticklane_book::{trade_of, Trade};

/// How publication is served.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ServicePolicy {
    /// Sojourn detection, newest-first conflated service while the queue stands, deadlines.
    #[default]
    Shed,
    /// Every change published in order, whatever the queue: the baseline overload control
    /// is measured against.
    Fifo,
}

/// Settings of overload control on the book thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OverloadConfig {
    /// Shedding, or plain in-order service.
    pub policy: ServicePolicy,
    /// When the input queue counts as standing.
    pub codel: CodelConfig,
    /// A state update whose message waited longer than this when its turn came is not
    /// published then: it is deferred, and published later with the latest state (ns).
    /// Trades and trading-state changes are never deferred.
    pub deadline_ns: u64,
    /// While the queue still stands, the publication time allowed per batch (ns): the
    /// newest changes go first, at least one per batch, and the rest wait for the next
    /// batch. Once the newest frame of a batch waited less than the target, every pending
    /// instrument is published.
    pub publish_budget_ns: u64,
}

impl Default for OverloadConfig {
    fn default() -> Self {
        let codel = CodelConfig::default();
        OverloadConfig {
            policy: ServicePolicy::Shed,
            codel,
            deadline_ns: 1_000_000,
            // One interval: a round of newest-first publications may hold the input back
            // no longer than the detector takes to notice a standing queue. A tighter
            // budget starves the instruments that changed least recently (measured: p99
            // staleness 10 ms at 2x with a 25 µs budget, against 1 ms without).
            publish_budget_ns: codel.interval_ns,
        }
    }
}

impl OverloadConfig {
    /// Plain in-order service: nothing shed, nothing conflated (the baseline).
    pub fn fifo() -> Self {
        OverloadConfig {
            policy: ServicePolicy::Fifo,
            ..OverloadConfig::default()
        }
    }
}

/// The publication a change needs: which instrument, stamped with its latest change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Change {
    /// The instrument.
    pub locate: Locate,
    /// Feed sequence of the latest change.
    pub feed_seq: u64,
    /// ITCH timestamp of the latest change.
    pub exchange_ts: Nanos,
    /// When the oldest change this publication makes visible was received (ns, pipeline
    /// clock): the publication's staleness is measured from here.
    pub first_ns: u64,
    /// When the latest change was received (ns, pipeline clock).
    pub last_ns: u64,
    /// Changes this one publication serves (more than 1 when conflated).
    pub changes: u32,
    /// The book stage's latest clock reading when the publication is made (ns, pipeline
    /// clock): a sink stamps the publication with it instead of reading a clock again.
    pub now_ns: u64,
}

/// Where instrument state goes: the snapshot file, or a test's record.
pub trait StateSink {
    /// Publishes `change.locate`'s current state from `books`. Returns false if it could
    /// not (no room for the instrument).
    fn publish_state(&mut self, books: &Books, change: &Change) -> bool;
    /// Records a trade. Called for every trade at its message's turn, just before that
    /// message's publication of the trade's instrument is made or, while publication is shed,
    /// deferred. A sink that shows state shows the trade with that publication, in the same
    /// write, so that a reader never sees a trade before the book that reflects it.
    fn record_trade(&mut self, _books: &Books, _trade: Trade) {}
    /// Marks an instrument's publication behind by `age_ns` (its oldest unpublished change
    /// is that old), or caught up with `None`.
    fn set_instrument_behind(&mut self, _locate: Locate, _age_ns: Option<u64>) {}
    /// Stores how far publication lags the feed as a whole (ns; 0 when keeping up).
    fn set_engine_behind(&mut self, _behind_ns: u64) {}
    /// The input was idle: time for periodic work (a heartbeat).
    fn idle(&mut self) {}
    /// The feed line changed state (see [`Publisher::line_state`]).
    fn line_state(&mut self, _state: FeedState, _since_ns: u64) {}
    /// The feed line declared messages lost (see [`Publisher::declared_loss`]).
    fn declared_loss(&mut self, _loss: DeclaredLoss) {}
    /// The feed line joined past its opening (see [`Publisher::late_join`]).
    fn late_join(&mut self, _join: LateJoin) {}
    /// Publications (and trades) refused so far because the sink had no room.
    fn refused(&self) -> u64 {
        0
    }
    /// The feed ended; everything pending has been published.
    fn finish(&mut self, _books: &Books) {}
}

/// A [`Publisher`] that applies overload control in front of a [`StateSink`] and, if given,
/// an [`EventFanout`] to in-process subscribers.
///
/// In normal service each change is published at its message's turn, in order. When the
/// book thread's input queue stands (by a [`SojournDetector`] fed every frame's sojourn),
/// changes only mark their instrument dirty; at each batch end the dirty instruments are
/// published newest first, each once with its latest state, within a time budget; the
/// instruments left waiting are marked behind in the snapshot, and the header says how far
/// behind the engine is. When the queue drains, everything pending is published and
/// service returns to normal. Trades and trading-state changes are never deferred.
///
/// Allocates in [`SheddingPublisher::new`] only.
pub struct SheddingPublisher<S: StateSink> {
    sink: S,
    config: OverloadConfig,
    detector: SojournDetector,
    dirty: DirtySet,
    counters: OverloadCounts,
    shared: Arc<OverloadCounters>,
    events: Option<(EventDeriver, EventFanout)>,
    pending_trade: Option<Trade>,
    /// Sojourn of the latest frame (ns).
    last_sojourn_ns: u64,
    /// Whether the sink was told the engine is behind (so catching up is told once).
    engine_behind: bool,
    /// The latest time the book stage gave (ns, pipeline clock).
    now_ns: u64,
    /// When the sink's idle work (the snapshot heartbeat) is due: about every
    /// `IDLE_PERIOD_NS`, jittered.
    heartbeat: JitteredPeriod,
}

/// How often, on average (each period is jittered by half of it either way), an idle book
/// thread lets the sink do its periodic work: the snapshot's
/// heartbeat reads the wall clock, which an empty poll must not pay every time (it was a
/// quarter of the book thread's samples at 1 M msg/s, and a message arriving meanwhile
/// waited for it).
const IDLE_PERIOD_NS: u64 = 10_000_000;

impl<S: StateSink> SheddingPublisher<S> {
    /// Publishes into `sink` under `config`.
    pub fn new(sink: S, config: OverloadConfig) -> Self {
        SheddingPublisher {
            sink,
            config,
            detector: SojournDetector::new(config.codel),
            dirty: DirtySet::new(),
            counters: OverloadCounts::default(),
            shared: Arc::new(OverloadCounters::default()),
            events: None,
            pending_trade: None,
            last_sojourn_ns: 0,
            engine_behind: false,
            now_ns: 0,
            // Seeded by the process, so that engines on one host beat out of step.
            heartbeat: JitteredPeriod::new(IDLE_PERIOD_NS, u64::from(std::process::id())),
        }
    }

    /// Also delivers the update stream to the consumers of `fanout`.
    pub fn with_subscribers(mut self, mut fanout: EventFanout) -> Self {
        fanout.accept_subscribers();
        self.events = Some((EventDeriver::new(), fanout));
        self
    }

    /// Stores its counters into `shared` (one made before the run, handed to a metrics
    /// endpoint) instead of a block of its own.
    pub fn with_shared_counters(mut self, shared: Arc<OverloadCounters>) -> Self {
        self.shared = shared;
        self
    }

    /// The counters, readable from any thread while the engine runs (updated each batch).
    pub fn shared_counters(&self) -> Arc<OverloadCounters> {
        Arc::clone(&self.shared)
    }

    /// The counters now.
    pub fn counters(&self) -> OverloadCounts {
        let mut c = self.counters;
        c.snapshot_full = self.sink.refused();
        c.overload_episodes = self.detector.episodes();
        c.max_sojourn_ns = self.detector.max_sojourn_ns();
        if let Some((_, fanout)) = &self.events {
            let f = fanout.counters();
            c.events_delivered = f.delivered;
            c.events_conflated = f.conflated;
            c.events_expired = f.expired;
            c.consumers_cut = f.cut;
        }
        c
    }

    /// Whether publication is in overload service now.
    pub fn is_overloaded(&self) -> bool {
        self.detector.is_standing()
    }

    /// Instruments waiting for publication.
    pub fn pending(&self) -> usize {
        self.dirty.len()
    }

    /// The sink.
    pub fn sink(&self) -> &S {
        &self.sink
    }

    /// Gives the sink back (after the run).
    pub fn into_sink(self) -> S {
        self.sink
    }

    #[inline]
    fn publish_now(&mut self, books: &Books, change: Change) {
        if self.sink.publish_state(books, &change) {
            self.counters.published += 1;
        }
        // The instrument's latest state is out: whatever was pending for it is served.
        if let Some(entry) = self.dirty.remove(change.locate) {
            self.counters.conflated += u64::from(entry.changes);
            if entry.flagged {
                self.sink.set_instrument_behind(change.locate, None);
            }
        }
    }

    /// Publishes pending instruments: all of them in order when the queue moves, newest
    /// first within the budget while it still stands.
    fn flush(&mut self, books: &Books, now_ns: u64) {
        if self.dirty.is_empty() {
            self.tell_engine_behind(0);
            return;
        }
        let limited =
            self.detector.is_standing() && self.last_sojourn_ns > self.config.codel.target_ns;
        let budget = Duration::from_nanos(self.config.publish_budget_ns);
        let started = Instant::now();
        loop {
            let entry = if limited {
                self.dirty.pop_newest()
            } else {
                self.dirty.pop_eldest()
            };
            let Some(entry) = entry else {
                break;
            };
            if now_ns.saturating_sub(entry.first_ns) > self.config.deadline_ns {
                self.counters.expired += 1;
            }
            // Every change but the one published was folded into it.
            self.counters.conflated += u64::from(entry.changes - 1);
            let change = Change {
                locate: entry.locate,
                feed_seq: entry.feed_seq,
                exchange_ts: entry.exchange_ts,
                first_ns: entry.first_ns,
                last_ns: entry.last_ns,
                changes: entry.changes,
                now_ns,
            };
            if self.sink.publish_state(books, &change) {
                self.counters.published += 1;
            }
            if entry.flagged {
                self.sink.set_instrument_behind(entry.locate, None);
            }
            if limited && started.elapsed() >= budget {
                break;
            }
        }
        // What is left waits: its slots say since when, the header how far behind.
        let sink = &mut self.sink;
        self.dirty.flag_new(|entry| {
            sink.set_instrument_behind(entry.locate, Some(now_ns.saturating_sub(entry.first_ns)));
        });
        let behind = self
            .dirty
            .eldest_first_ns()
            .map_or(0, |first| now_ns.saturating_sub(first));
        self.tell_engine_behind(behind.max(if self.detector.is_standing() {
            self.last_sojourn_ns
        } else {
            0
        }));
    }

    #[inline]
    fn tell_engine_behind(&mut self, behind_ns: u64) {
        if behind_ns > 0 || self.engine_behind {
            self.sink.set_engine_behind(behind_ns);
            self.engine_behind = behind_ns > 0;
        }
    }

    fn store_counters(&mut self, now_ns: u64) {
        self.counters.overload_ns = self.detector.overload_ns(now_ns);
        let counters = self.counters();
        self.shared.store(&counters);
    }
}

impl<S: StateSink> Publisher for SheddingPublisher<S> {
    #[inline]
    fn before_apply(&mut self, books: &Books, message: &Message<'_>) {
        match &mut self.events {
            Some((deriver, _)) => {
                deriver.before_apply(books, message);
                self.pending_trade = deriver.trade();
            }
            None => self.pending_trade = trade_of(books, message),
        }
    }

    #[inline]
    fn publish(
        &mut self,
        books: &Books,
        applied: &Applied<'_>,
        arrival: Arrival,
        now_ns: u64,
    ) -> bool {
        let sojourn = now_ns.saturating_sub(arrival.recv_ns);
        self.last_sojourn_ns = sojourn;
        self.now_ns = now_ns;
        let shedding = self.config.policy == ServicePolicy::Shed;
        // The baseline runs the detector too, to report how long its queue stood.
        if self.detector.observe(sojourn, now_ns) == Transition::Entered && shedding {
            // The header says so at once; the slots as their instruments fall behind.
            self.tell_engine_behind(sojourn);
        }
        if let Some((deriver, fanout)) = &mut self.events {
            let stamp = fanout.now_ns();
            deriver.after_apply(books, applied, arrival.seq, |event| {
                fanout.deliver(event, stamp)
            });
        }
        let Some(message) = applied.message else {
            return false;
        };
        // The trade goes to the sink first, and out with this message's publication below
        // (or, shed, with the conflated one that serves it): one write, trade and book.
        let trade = self.pending_trade.take();
        if let Some(trade) = trade {
            self.sink.record_trade(books, trade);
        }
        // The book changed, or its symbol or trading state did (R, H), or it traded.
        let (locate, never_shed) = match (applied.changed, &message) {
            // A snapshot's at locate 0 waits in the books for its locate: nothing to show.
            (_, Message::StockDirectory(_) | Message::StockTradingAction(_))
                if message.locate().0 == 0 && books.parked() != (0, 0) =>
            {
                return false
            }
            (_, Message::StockDirectory(_) | Message::StockTradingAction(_)) => {
                (message.locate(), true)
            }
            (Some(locate), _) => (locate, false),
            (None, _) if trade.is_some() => (message.locate(), false),
            (None, _) => return false,
        };
        let stale = sojourn > self.config.deadline_ns;
        if shedding && !never_shed && (self.detector.is_standing() || stale) {
            self.counters.shed += 1;
            self.dirty
                .mark(locate, arrival.recv_ns, arrival.seq, message.timestamp());
            return false;
        }
        self.publish_now(
            books,
            Change {
                locate,
                feed_seq: arrival.seq,
                exchange_ts: message.timestamp(),
                first_ns: arrival.recv_ns,
                last_ns: arrival.recv_ns,
                changes: 1,
                now_ns,
            },
        );
        true
    }

    #[inline]
    fn batch_end(&mut self, books: &Books, now_ns: u64) {
        self.now_ns = now_ns;
        self.flush(books, now_ns);
        if let Some((_, fanout)) = &mut self.events {
            fanout.maintain(books, now_ns);
        }
        self.store_counters(now_ns);
    }

    #[inline]
    fn drained(&mut self, books: &Books, now_ns: u64) {
        self.now_ns = now_ns;
        let left = self.detector.drained(now_ns) == Transition::Left;
        if left || !self.dirty.is_empty() || self.engine_behind {
            self.flush(books, now_ns);
            self.store_counters(now_ns);
        }
        if let Some((_, fanout)) = &mut self.events {
            fanout.maintain(books, now_ns);
        }
    }

    fn idle(&mut self, now_ns: u64) {
        if self.heartbeat.due(now_ns) {
            self.sink.idle();
        }
    }

    fn line_state(&mut self, _books: &Books, state: FeedState, since_ns: u64) {
        self.sink.line_state(state, since_ns);
    }

    fn declared_loss(&mut self, _books: &Books, loss: DeclaredLoss) {
        self.sink.declared_loss(loss);
    }

    fn late_join(&mut self, _books: &Books, join: LateJoin) {
        self.sink.late_join(join);
    }

    /// Every book goes out empty at once, whatever the queue: a rebuild is never shed, and
    /// nothing pending from before it may be published after it.
    fn books_cleared(&mut self, books: &Books, arrival: Arrival) {
        let now_ns = self.now_ns;
        for locate in books.locates() {
            self.publish_now(
                books,
                Change {
                    locate,
                    feed_seq: arrival.seq,
                    exchange_ts: Nanos(0),
                    first_ns: arrival.recv_ns,
                    last_ns: arrival.recv_ns,
                    changes: 1,
                    now_ns,
                },
            );
        }
        if let Some((deriver, fanout)) = &mut self.events {
            let stamp = fanout.now_ns();
            deriver.cleared(books, arrival.seq, |event| fanout.deliver(event, stamp));
        }
    }

    fn finish(&mut self, books: &Books) {
        // Whatever the queue did, the last state of every instrument goes out.
        let now_ns = self.now_ns;
        let _ = self.detector.drained(now_ns);
        self.flush(books, now_ns);
        self.tell_engine_behind(0);
        if let Some((_, fanout)) = &mut self.events {
            fanout.maintain(books, now_ns);
            fanout.close();
        }
        self.sink.finish(books);
        self.store_counters(now_ns);
    }
}
