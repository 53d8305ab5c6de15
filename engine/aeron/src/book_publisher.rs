//! The publisher's service: which records go out, in what order, and what happens when the
//! transport refuses them. Transport-agnostic ([`Transport`]): Aeron in the process, an
//! in-memory one in tests.
//!
//! It is driven by the line's update stream (a `Subscription` of the subscriber hub, which
//! never waits on this stage) and reads each changed book out of the snapshot, lock-free:
//!
//! - a quote, level or refresh event marks its stock dirty ([`DirtySet`]); a dirty stock is
//!   published as one book record holding its top [`LEVELS`] levels as the snapshot has
//!   them now, so several changes waiting together go out as one (conflated, counted);
//! - a trade goes out as its own record, in order, never conflated; the trade queue is
//!   bounded ([`PublisherConfig::trade_queue`]) and a trade that finds it full is shed and
//!   counted;
//! - a trading-state change goes out as a status record before the book's next record;
//! - in normal service dirty stocks go out oldest first; once the transport back-pressures,
//!   newest first, until nothing is pending;
//! - while no subscriber is connected nothing can be sent: pending work is dropped and
//!   counted (the refresh cycle brings whoever connects up to date);
//! - the refresh cycle sends every book once per [`PublisherConfig::refresh_cycle`], spread
//!   evenly over it, then a cycle-end record; a heartbeat goes out after
//!   [`PublisherConfig::heartbeat`] without a record;
//! - at the end of the update stream every book not yet sent as it stands is sent, then the
//!   stream's last record.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ticklane_book::LevelView;
use ticklane_feed::itch::{Locate, Nanos, Price};
use ticklane_pipeline::overload::{DirtySet, Event, EventBody};
use ticklane_snapshot::layout::SLOT_MAYBE_BAD;
use ticklane_snapshot::SnapshotReader;

use crate::driver_counts::{DriverCounters, DriverCounts};
use crate::records::{
    record_bytes, BookChange, BookStamp, BookTop, StreamStamp, END_TEXT, HEARTBEAT_TEXT, LEVELS,
    REFRESH_TEXT,
};

/// What became of one offered record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offer {
    /// It is on the stream.
    Sent,
    /// The transport is full for now (its subscribers are behind): try again later.
    BackPressured,
    /// No subscriber is connected: nobody would receive it.
    NotConnected,
    /// The transport is gone for good.
    Closed,
}

/// Where the records go.
pub trait Transport {
    /// Offers one record's bytes.
    fn offer(&mut self, record: &[u8]) -> Offer;

    /// After the stream's last record: keeps what carries the stream up for at most `wait`
    /// so that subscribers can read to its end (nothing to do by default).
    fn linger(&mut self, wait: Duration) {
        let _ = wait;
    }

    /// The media driver's loss and repair counters, where there is a driver.
    fn driver_counts(&self) -> Option<DriverCounts> {
        None
    }
}

/// How the publisher paces what it sends besides the changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PublisherConfig {
    /// Every book is refreshed once per cycle.
    pub refresh_cycle: Duration,
    /// A heartbeat after this long without a record.
    pub heartbeat: Duration,
    /// Trades waiting for the transport, at most.
    pub trade_queue: usize,
    /// The venue and the session's midnight.
    pub stamp: StreamStamp,
}

/// The publisher's counters, shared with `/metrics` and the run's summary.
#[derive(Debug, Default)]
pub struct PublisherCounters {
    /// Records on the stream.
    pub records: AtomicU64,
    /// Bytes on the stream.
    pub bytes: AtomicU64,
    /// Book records sent for changes.
    pub changes: AtomicU64,
    /// Trade records sent.
    pub trades: AtomicU64,
    /// Refresh records sent.
    pub refreshes: AtomicU64,
    /// Refresh cycles completed.
    pub cycles: AtomicU64,
    /// The last cycle's length, ns.
    pub cycle_ns: AtomicU64,
    /// Changes folded into a later record of the same book.
    pub conflated: AtomicU64,
    /// Offers refused because the subscribers were behind.
    pub back_pressured: AtomicU64,
    /// 1 while the publisher serves newest first under back pressure.
    pub back_pressure: AtomicU64,
    /// 1 while some subscriber is connected.
    pub connected: AtomicU64,
    /// Records not sent because no subscriber was connected.
    pub not_connected: AtomicU64,
    /// Trades shed: the trade queue was full.
    pub trades_shed: AtomicU64,
    /// Times the hub cut the publisher loose (it subscribed again and refreshed everything).
    pub rejoined: AtomicU64,
    /// Changes for stocks the snapshot has no slot for (its capacity was reached).
    pub unmapped: AtomicU64,
    /// The media driver's loss and repair counters, read every [`DRIVER_READ_EVERY`].
    pub driver: DriverCounters,
}

/// How often the publisher copies the driver's counters.
pub const DRIVER_READ_EVERY: Duration = Duration::from_millis(100);

/// A plain copy of [`PublisherCounters`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PublisherCounts {
    /// Records on the stream.
    pub records: u64,
    /// Bytes on the stream.
    pub bytes: u64,
    /// Book records sent for changes.
    pub changes: u64,
    /// Trade records sent.
    pub trades: u64,
    /// Refresh records sent.
    pub refreshes: u64,
    /// Refresh cycles completed.
    pub cycles: u64,
    /// Changes folded into a later record.
    pub conflated: u64,
    /// Offers refused under back pressure.
    pub back_pressured: u64,
    /// Records not sent with no subscriber connected.
    pub not_connected: u64,
    /// Trades shed.
    pub trades_shed: u64,
    /// Times cut loose by the hub.
    pub rejoined: u64,
    /// Changes without a snapshot slot.
    pub unmapped: u64,
    /// The media driver's loss and repair counters.
    pub driver: DriverCounts,
}

impl PublisherCounters {
    /// The counts now (each loaded on its own, Relaxed).
    pub fn load(&self) -> PublisherCounts {
        let l = |c: &AtomicU64| c.load(Ordering::Relaxed);
        PublisherCounts {
            records: l(&self.records),
            bytes: l(&self.bytes),
            changes: l(&self.changes),
            trades: l(&self.trades),
            refreshes: l(&self.refreshes),
            cycles: l(&self.cycles),
            conflated: l(&self.conflated),
            back_pressured: l(&self.back_pressured),
            not_connected: l(&self.not_connected),
            trades_shed: l(&self.trades_shed),
            rejoined: l(&self.rejoined),
            unmapped: l(&self.unmapped),
            driver: self.driver.load(),
        }
    }
}

fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

/// What the stream last said about one snapshot slot's stock.
#[derive(Clone, Copy, Debug, Default)]
struct SentBook {
    top: BookTop,
    feed_seq: u64,
    trading_state: u8,
    /// Its mapping record went out.
    mapped: bool,
    /// Any book record went out.
    sent: bool,
}

/// One slot as the snapshot holds it now.
#[derive(Clone, Copy, Debug)]
struct SlotBook {
    locate: u16,
    symbol: [u8; 8],
    feed_seq: u64,
    exchange_ts: u64,
    trading_state: u8,
    maybe_bad: bool,
    top: BookTop,
}

/// A trade waiting for the transport.
#[derive(Clone, Copy, Debug)]
struct QueuedTrade {
    locate: Locate,
    price: Price,
    shares: u32,
    feed_seq: u64,
    exchange_ts: Nanos,
}

const NO_SLOT: u32 = u32::MAX;

/// Why a turn stopped sending.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stopped {
    BackPressured,
    Closed,
}

/// The publisher stage's state.
pub struct BookPublisher<T> {
    transport: T,
    reader: SnapshotReader,
    config: PublisherConfig,
    counters: Arc<PublisherCounters>,
    words: Vec<u64>,
    /// The snapshot slot of each locate, [`NO_SLOT`] until found.
    slot_of: Box<[u32]>,
    /// Slots whose locate is in `slot_of`: `0 .. slots_known`.
    slots_known: usize,
    /// Per slot.
    sent: Vec<SentBook>,
    dirty: DirtySet,
    trades: VecDeque<QueuedTrade>,
    newest_first: bool,
    /// The refresh cycle: its number, when it began, the next slot to refresh.
    cycle: u64,
    cycle_began_ns: u64,
    refresh_next: usize,
    last_record_ns: u64,
    driver_read_ns: u64,
    /// The line state last sent (`None` before the first).
    line_stale: Option<bool>,
    closed: bool,
}

impl<T> std::fmt::Debug for BookPublisher<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BookPublisher")
            .field("cycle", &self.cycle)
            .field("pending", &self.dirty.len())
            .finish_non_exhaustive()
    }
}

impl<T: Transport> BookPublisher<T> {
    /// A publisher reading books from `reader`, sending on `transport`; allocates every
    /// table it needs here (a slot table per locate, one entry per snapshot slot).
    pub fn new(transport: T, reader: SnapshotReader, config: PublisherConfig, now_ns: u64) -> Self {
        let capacity = reader.header().slot_capacity as usize;
        BookPublisher {
            transport,
            reader,
            config,
            counters: Arc::default(),
            words: Vec::new(),
            slot_of: vec![NO_SLOT; 1 << 16].into_boxed_slice(),
            slots_known: 0,
            sent: vec![SentBook::default(); capacity],
            dirty: DirtySet::new(),
            trades: VecDeque::with_capacity(config.trade_queue),
            newest_first: false,
            cycle: 1,
            cycle_began_ns: now_ns,
            refresh_next: 0,
            last_record_ns: now_ns,
            driver_read_ns: 0,
            line_stale: None,
            closed: false,
        }
    }

    /// The counters, to share.
    pub fn counters(&self) -> Arc<PublisherCounters> {
        Arc::clone(&self.counters)
    }

    /// The transport.
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// See [`Transport::linger`].
    pub fn linger(&mut self, wait: Duration) {
        self.transport.linger(wait);
    }

    /// Whether the transport is gone for good.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Takes in one event of the update stream.
    pub fn on_event(&mut self, event: &Event, now_ns: u64) {
        if let EventBody::Trade { price, shares } = event.body {
            if self.trades.len() >= self.config.trade_queue {
                add(&self.counters.trades_shed, 1);
            } else {
                self.trades.push_back(QueuedTrade {
                    locate: event.locate,
                    price,
                    shares,
                    feed_seq: event.feed_seq,
                    exchange_ts: event.exchange_ts,
                });
            }
        }
        if self
            .dirty
            .mark(event.locate, now_ns, event.feed_seq, event.exchange_ts)
        {
            add(&self.counters.conflated, 1);
        }
    }

    /// Marks every book dirty: after the hub cut this publisher loose, events were lost.
    pub fn rejoined(&mut self, now_ns: u64) {
        add(&self.counters.rejoined, 1);
        self.learn_slots();
        for slot in 0..self.slots_known {
            if let Some(book) = self.read_slot(slot) {
                self.dirty
                    .mark(Locate(book.locate), now_ns, book.feed_seq, Nanos(0));
            }
        }
    }

    /// Sends what is due: the line's state if it changed, queued trades, dirty books, the
    /// refresh cycle's share, a heartbeat. Returns how many records went out.
    pub fn publish(&mut self, now_ns: u64) -> usize {
        let before = self.counters.records.load(Ordering::Relaxed);
        let stopped = self
            .publish_changes(now_ns)
            .and_then(|()| self.refresh(now_ns));
        if stopped.is_ok()
            && now_ns.saturating_sub(self.last_record_ns) >= nanos(self.config.heartbeat)
        {
            let record =
                self.config
                    .stamp
                    .system(dbn::SystemCode::Heartbeat, HEARTBEAT_TEXT, now_ns);
            let _sent = self.offer(record_bytes(&record), now_ns);
        }
        if now_ns.saturating_sub(self.driver_read_ns) >= nanos(DRIVER_READ_EVERY) {
            self.read_driver(now_ns);
        }
        (self.counters.records.load(Ordering::Relaxed) - before) as usize
    }

    /// Copies the driver's counters into [`PublisherCounters::driver`].
    pub fn read_driver(&mut self, now_ns: u64) {
        self.driver_read_ns = now_ns;
        if let Some(counts) = self.transport.driver_counts() {
            self.counters.driver.store(&counts);
        }
    }

    /// At the end of the update stream: sends every queued trade and pending change, then
    /// every book once more as a refresh (a last cycle, which the end record closes), then
    /// the stream's last record, trying until `give_up_ns` (on the same clock as `now`)
    /// while the transport back-pressures. Returns whether the last record went out.
    pub fn finish(&mut self, mut now: impl FnMut() -> u64, give_up_ns: u64) -> bool {
        self.learn_slots();
        self.refresh_next = 0;
        loop {
            let t = now();
            match self.publish_changes(t).and_then(|()| self.last_refresh(t)) {
                Ok(()) => {
                    let text = format!("{END_TEXT}: {} instruments", self.slots_known);
                    let record = self
                        .config
                        .stamp
                        .system(dbn::SystemCode::EndOfInterval, &text, t);
                    loop {
                        match self.offer(record_bytes(&record), t) {
                            Ok(_) => return true,
                            Err(Stopped::Closed) => return false,
                            Err(Stopped::BackPressured) if now() >= give_up_ns => return false,
                            Err(Stopped::BackPressured) => {
                                std::thread::sleep(Duration::from_micros(100))
                            }
                        }
                    }
                }
                Err(Stopped::Closed) => return false,
                Err(Stopped::BackPressured) if t >= give_up_ns => return false,
                Err(Stopped::BackPressured) => std::thread::sleep(Duration::from_micros(100)),
            }
        }
    }

    /// The end's last cycle: every book not yet sent in it.
    fn last_refresh(&mut self, now_ns: u64) -> Result<(), Stopped> {
        while self.refresh_next < self.slots_known {
            self.send_book(self.refresh_next, true, now_ns)?;
            self.refresh_next += 1;
        }
        Ok(())
    }

    fn publish_changes(&mut self, now_ns: u64) -> Result<(), Stopped> {
        self.line_state(now_ns)?;
        while let Some(trade) = self.trades.front().copied() {
            self.send_trade(trade, now_ns)?;
            self.trades.pop_front();
        }
        loop {
            let entry = if self.newest_first {
                self.dirty.pop_newest()
            } else {
                self.dirty.pop_eldest()
            };
            let Some(entry) = entry else {
                break;
            };
            let Some(slot) = self.slot(entry.locate) else {
                add(&self.counters.unmapped, 1);
                continue;
            };
            if let Err(stopped) = self.send_book(slot, false, now_ns) {
                self.dirty.mark(
                    entry.locate,
                    entry.first_ns,
                    entry.feed_seq,
                    entry.exchange_ts,
                );
                if stopped == Stopped::BackPressured && !self.newest_first {
                    self.newest_first = true;
                    self.counters.back_pressure.store(1, Ordering::Relaxed);
                }
                return Err(stopped);
            }
        }
        if self.newest_first {
            self.newest_first = false;
            self.counters.back_pressure.store(0, Ordering::Relaxed);
        }
        Ok(())
    }

    /// The refresh cycle's share due by `now`: slots in proportion to the time gone in the
    /// cycle; the cycle-end record once every slot went.
    fn refresh(&mut self, now_ns: u64) -> Result<(), Stopped> {
        self.learn_slots();
        let cycle_ns = nanos(self.config.refresh_cycle).max(1);
        let gone = now_ns.saturating_sub(self.cycle_began_ns).min(cycle_ns);
        let due = ((self.slots_known as u128 * u128::from(gone)) / u128::from(cycle_ns)) as usize;
        while self.refresh_next < due.min(self.slots_known) {
            self.send_book(self.refresh_next, true, now_ns)?;
            self.refresh_next += 1;
        }
        if gone >= cycle_ns && self.refresh_next >= self.slots_known {
            let text = format!(
                "{REFRESH_TEXT}{} complete: {} instruments",
                self.cycle, self.slots_known
            );
            let record = self
                .config
                .stamp
                .system(dbn::SystemCode::EndOfInterval, &text, now_ns);
            self.offer(record_bytes(&record), now_ns)?;
            add(&self.counters.cycles, 1);
            self.counters
                .cycle_ns
                .store(now_ns - self.cycle_began_ns, Ordering::Relaxed);
            self.cycle += 1;
            self.cycle_began_ns = now_ns;
            self.refresh_next = 0;
        }
        Ok(())
    }

    fn line_state(&mut self, now_ns: u64) -> Result<(), Stopped> {
        let stale = self.reader.header().is_stale();
        if self.line_stale != Some(stale) {
            let record = self.config.stamp.line_state(stale, now_ns);
            self.offer(record_bytes(&record), now_ns)?;
            self.line_stale = Some(stale);
        }
        Ok(())
    }

    fn send_trade(&mut self, trade: QueuedTrade, now_ns: u64) -> Result<(), Stopped> {
        let Some(slot) = self.slot(trade.locate) else {
            add(&self.counters.unmapped, 1);
            return Ok(());
        };
        let sent = self.sent[slot];
        let at = BookStamp {
            locate: trade.locate.0,
            feed_seq: trade.feed_seq,
            exchange_ts: trade.exchange_ts.0,
            ts_recv: now_ns,
            refresh: false,
            maybe_bad: false,
        };
        let change = BookChange {
            action: b'T',
            side: b'N',
            price: trade.price,
            size: u64::from(trade.shares),
            depth: 0,
        };
        if !sent.mapped {
            self.send_book(slot, false, now_ns)?;
        }
        let record = self.config.stamp.book(at, &self.sent[slot].top, change);
        if self.offer(record_bytes(&record), now_ns)? {
            add(&self.counters.trades, 1);
        }
        Ok(())
    }

    /// Sends slot `slot`'s book as the snapshot holds it: its mapping first if it never
    /// went (and in every refresh, for subscribers that joined since), its trading state if that changed, then the book record (a change only if the
    /// levels or the sequence moved since the last one; a refresh always).
    fn send_book(&mut self, slot: usize, refresh: bool, now_ns: u64) -> Result<(), Stopped> {
        let Some(book) = self.read_slot(slot) else {
            return Ok(());
        };
        let stamp = self.config.stamp;
        if refresh || !self.sent[slot].mapped {
            let symbol = ticklane_feed::itch::Alpha::<8>::trim(&book.symbol);
            let record = stamp.mapping(book.locate, symbol, now_ns);
            self.offer(record_bytes(&record), now_ns)?;
            self.sent[slot].mapped = true;
        }
        let sent = self.sent[slot];
        if refresh || sent.trading_state != book.trading_state {
            if book.trading_state != 0 || refresh {
                let record =
                    stamp.trading_state(book.locate, book.trading_state, book.exchange_ts, now_ns);
                self.offer(record_bytes(&record), now_ns)?;
            }
            self.sent[slot].trading_state = book.trading_state;
        }
        if !refresh && sent.sent && sent.feed_seq == book.feed_seq && sent.top == book.top {
            return Ok(());
        }
        let change = if refresh {
            BookChange::NONE
        } else {
            BookChange::between(&sent.top, &book.top)
        };
        let at = BookStamp {
            locate: book.locate,
            feed_seq: book.feed_seq,
            exchange_ts: book.exchange_ts,
            ts_recv: now_ns,
            refresh,
            maybe_bad: book.maybe_bad,
        };
        let record = stamp.book(at, &book.top, change);
        if self.offer(record_bytes(&record), now_ns)? {
            add(
                if refresh {
                    &self.counters.refreshes
                } else {
                    &self.counters.changes
                },
                1,
            );
        }
        let sent = &mut self.sent[slot];
        sent.top = book.top;
        sent.feed_seq = book.feed_seq;
        sent.sent = true;
        Ok(())
    }

    /// Offers one record: whether it went out (`false`: nobody was connected to take it).
    fn offer(&mut self, bytes: &[u8], now_ns: u64) -> Result<bool, Stopped> {
        if self.closed {
            return Err(Stopped::Closed);
        }
        match self.transport.offer(bytes) {
            Offer::Sent => {
                add(&self.counters.records, 1);
                add(&self.counters.bytes, bytes.len() as u64);
                self.counters.connected.store(1, Ordering::Relaxed);
                self.last_record_ns = now_ns;
                Ok(true)
            }
            Offer::BackPressured => {
                add(&self.counters.back_pressured, 1);
                Err(Stopped::BackPressured)
            }
            Offer::NotConnected => {
                // Nobody to send to: the record is dropped (counted), as if sent.
                add(&self.counters.not_connected, 1);
                self.counters.connected.store(0, Ordering::Relaxed);
                self.last_record_ns = now_ns;
                Ok(false)
            }
            Offer::Closed => {
                self.closed = true;
                Err(Stopped::Closed)
            }
        }
    }

    /// The slot of `locate`, looking at slots added since the last look if need be.
    fn slot(&mut self, locate: Locate) -> Option<usize> {
        let known = self.slot_of[usize::from(locate.0)];
        if known != NO_SLOT {
            return Some(known as usize);
        }
        self.learn_slots();
        let found = self.slot_of[usize::from(locate.0)];
        (found != NO_SLOT).then_some(found as usize)
    }

    fn learn_slots(&mut self) {
        let in_use = self.reader.slots().end.min(self.sent.len());
        while self.slots_known < in_use {
            let slot = self.slots_known;
            let read = self
                .reader
                .read_with(slot, &mut self.words, |_, payload, _, _| payload.locate);
            let Ok(locate) = read else {
                // Being written: looked at again next time.
                return;
            };
            self.slot_of[usize::from(locate)] = slot as u32;
            self.slots_known += 1;
        }
    }

    fn read_slot(&mut self, slot: usize) -> Option<SlotBook> {
        let depth = LEVELS;
        self.reader
            .read_with(slot, &mut self.words, |_, payload, bids, asks| {
                let mut top = BookTop::default();
                let level = |r: &ticklane_snapshot::LevelRecord| LevelView {
                    price: Price(r.price),
                    qty: r.qty,
                    orders: r.orders,
                };
                top.bids.set(
                    bids.iter()
                        .take((payload.bid_levels as usize).min(depth))
                        .map(level),
                );
                top.asks.set(
                    asks.iter()
                        .take((payload.ask_levels as usize).min(depth))
                        .map(level),
                );
                SlotBook {
                    locate: payload.locate,
                    symbol: payload.symbol,
                    feed_seq: payload.feed_seq,
                    exchange_ts: payload.exchange_ts_ns,
                    trading_state: payload.trading_state,
                    maybe_bad: payload.flags & SLOT_MAYBE_BAD != 0,
                    top,
                }
            })
            .ok()
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{StreamDecoder, StreamRecord};
    use crate::MemoryTransport;
    use ticklane_book::{BookConfig, Books, TopOfBook};
    use ticklane_snapshot::SnapshotWriter;

    const SECOND: u64 = 1_000_000_000;

    fn quote(locate: u16, feed_seq: u64) -> Event {
        Event {
            locate: Locate(locate),
            symbol: *b"TEST    ",
            feed_seq,
            exchange_ts: Nanos(feed_seq),
            queued_ns: 0,
            body: EventBody::Quote(TopOfBook::new(None, None)),
        }
    }

    /// What the records say, one word each.
    fn kinds(records: Vec<Vec<u8>>) -> Vec<String> {
        let mut decoder = StreamDecoder::new();
        let mut out = Vec::new();
        for r in records {
            decoder
                .decode(&r, |rec| {
                    out.push(match rec {
                        StreamRecord::Book(m) if m.flags.is_snapshot() => {
                            format!("refresh {}", m.hd.instrument_id)
                        }
                        StreamRecord::Book(m) if m.action as u8 == b'T' => {
                            format!("trade {}", m.hd.instrument_id)
                        }
                        StreamRecord::Book(m) => format!("book {}", m.hd.instrument_id),
                        StreamRecord::Status(s) => format!("status {}", s.hd.instrument_id),
                        StreamRecord::Mapping(m) => format!("mapping {}", m.hd.instrument_id),
                        StreamRecord::System(s) => crate::records::field_text(&s.msg),
                        StreamRecord::Other(t) => format!("other {t}"),
                    })
                })
                .expect("decodes");
        }
        out
    }

    fn publisher(dir: &std::path::Path) -> (BookPublisher<MemoryTransport>, MemoryTransport) {
        let path = dir.join("books.snap");
        let books = Books::new(BookConfig {
            max_orders: 16,
            max_books: 8,
            levels_per_side: 8,
        })
        .expect("books");
        let mut writer = SnapshotWriter::create(&path, 8, 10).expect("snapshot");
        for locate in [7, 8] {
            writer
                .publish_at(&books, Locate(locate), 1, Nanos(1), 1)
                .expect("publish");
        }
        // The writer stays open for the test's life: leak its handle into the directory.
        std::mem::forget(writer);
        let transport = MemoryTransport::new();
        let config = PublisherConfig {
            refresh_cycle: Duration::from_secs(1),
            heartbeat: Duration::from_millis(100),
            trade_queue: 2,
            stamp: StreamStamp {
                publisher_id: 2,
                midnight_ns: 0,
            },
        };
        let reader = SnapshotReader::open(&path).expect("reader");
        (
            BookPublisher::new(transport.clone(), reader, config, 0),
            transport,
        )
    }

    #[test]
    fn a_change_goes_out_once_with_its_mapping_first_and_back_pressure_conflates() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (mut p, t) = publisher(dir.path());
        p.on_event(&quote(7, 1), 10);
        p.publish(10);
        assert_eq!(kinds(t.take()), ["status 0", "mapping 7", "book 7"]);

        t.refuse(Some(Offer::BackPressured));
        p.on_event(&quote(8, 1), 20);
        p.on_event(&quote(8, 1), 21);
        assert_eq!(p.publish(22), 0);
        let counts = p.counters().load();
        assert_eq!((counts.conflated, counts.back_pressured), (1, 1));
        assert_eq!(p.counters().back_pressure.load(Ordering::Relaxed), 1);

        t.refuse(None);
        p.publish(30);
        assert_eq!(kinds(t.take()), ["mapping 8", "book 8"]);
        assert_eq!(
            p.counters().back_pressure.load(Ordering::Relaxed),
            0,
            "served again"
        );
    }

    #[test]
    fn trades_beyond_the_queue_are_shed_and_counted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (mut p, t) = publisher(dir.path());
        t.refuse(Some(Offer::BackPressured));
        for seq in 0..5 {
            let trade = Event {
                body: EventBody::Trade {
                    price: Price(100),
                    shares: 10,
                },
                ..quote(7, seq)
            };
            p.on_event(&trade, 1);
        }
        assert_eq!(p.counters().load().trades_shed, 3, "a queue of two");
        t.refuse(None);
        p.publish(2);
        let sent = kinds(t.take());
        assert_eq!(
            sent.iter().filter(|k| *k == "trade 7").count(),
            2,
            "{sent:?}"
        );
        assert_eq!(
            sent[..3],
            ["status 0", "mapping 7", "book 7"],
            "the book before its trades"
        );
        assert_eq!(p.counters().load().trades, 2);
    }

    #[test]
    fn the_refresh_cycle_sends_every_book_then_its_end_and_heartbeats_fill_silence() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (mut p, t) = publisher(dir.path());
        p.publish(SECOND / 2);
        let half = kinds(t.take());
        assert!(half.contains(&"refresh 7".to_owned()), "{half:?}");
        assert!(
            !half.contains(&"refresh 8".to_owned()),
            "half a cycle, half the books: {half:?}"
        );
        p.publish(SECOND);
        let rest = kinds(t.take());
        assert!(rest.contains(&"refresh 8".to_owned()), "{rest:?}");
        assert_eq!(
            rest.last().map(String::as_str),
            Some("refresh 1 complete: 2 instruments")
        );
        p.publish(SECOND + SECOND / 5);
        assert_eq!(kinds(t.take()), ["heartbeat"]);
    }

    #[test]
    fn with_nobody_connected_records_are_counted_not_kept_and_the_end_goes_out() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (mut p, t) = publisher(dir.path());
        t.refuse(Some(Offer::NotConnected));
        p.on_event(&quote(7, 1), 1);
        p.publish(2);
        assert!(p.counters().load().not_connected >= 2);
        t.refuse(None);
        assert!(p.finish(|| 3, 10));
        let end = kinds(t.take());
        assert_eq!(
            end.last().map(String::as_str),
            Some("end of stream: 2 instruments"),
            "{end:?}"
        );
        // The last cycle: every book once more, as it stands, then the end.
        for book in ["refresh 7", "refresh 8"] {
            assert!(end.iter().any(|k| k == book), "{book}: {end:?}");
        }
    }

    #[test]
    fn the_end_closes_a_last_cycle_of_every_book() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (mut p, t) = publisher(dir.path());
        p.publish(1);
        let _ = t.take();
        assert!(p.finish(|| 2, 10));
        let end = kinds(t.take());
        let refreshed = end.iter().filter(|k| k.starts_with("refresh ")).count();
        assert_eq!(refreshed, 2, "{end:?}");
        assert_eq!(
            end.last().map(String::as_str),
            Some("end of stream: 2 instruments")
        );
    }
}
