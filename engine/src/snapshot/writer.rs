//! The book thread's side of the snapshot: creates the file and publishes each instrument's
//! state into its slot under the slot's seqlock.

use core::sync::atomic::{AtomicU64, Ordering};
use std::fs::{self, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use memmap2::MmapOptions;
use ticklane_feed::itch::{Locate, Nanos};

use super::clock::wall_clock_ns;
use super::error::{PublishError, SnapshotError};
use super::layout::{
    Geometry, LevelRecord, SlotPayload, SnapshotHeader, BEHIND_WORD, BYTE_ORDER_MARK,
    FIXED_PAYLOAD_WORDS, FLAGS_WORD, HEADER_CLOSED, HEADER_SIZE, HEADER_STALE, HEARTBEAT_WORD,
    INSTRUMENTS_WORD, LAYOUT_VERSION, MAGIC, MAX_CAPACITY, MAX_DEPTH, SLOT_BEHIND, SLOT_CROSSED,
    SLOT_STALE,
};
use super::mapping::SharedWords;
use crate::book::Trade;
use crate::book::{Books, LadderView, Side};
use crate::seqlock_words::SlotLock;

/// Every locate a 16-bit field can name.
const LOCATES: usize = 1 << 16;
/// `slot_of` entry of a locate that has no slot yet.
const NO_SLOT: u32 = u32::MAX;

/// Writes the snapshot file: one slot per instrument, each under its own seqlock.
///
/// Everything is allocated and mapped in [`SnapshotWriter::create`]; publishing allocates
/// nothing and makes no system call. Slots are handed out in order of first sight, so the
/// file's used slots are always `0 .. instruments`.
///
/// There is one writer per file: `SnapshotWriter` is `Send` (it may move to the book thread)
/// and its per-instrument methods take `&mut self`. Readers in any process see each slot
/// change atomically.
///
/// Dropping the writer marks the file closed, as [`SnapshotWriter::close`] does, unless the
/// thread is panicking: a file left by a panic or a `kill -9` is not closed, and readers tell
/// by the heartbeat that stopped.
#[derive(Debug)]
pub struct SnapshotWriter {
    map: SharedWords,
    geometry: Geometry,
    path: PathBuf,
    /// Slot index of each locate, or `NO_SLOT`.
    slot_of: Vec<u32>,
    /// Slots handed out: `0 .. in_use`, at most `geometry.capacity`.
    in_use: usize,
    /// One slot's payload words: where the next write is built before it is stored.
    scratch: Vec<u64>,
    closed: bool,
}

impl SnapshotWriter {
    /// Creates the snapshot file at `path` with room for `capacity` instruments and `depth`
    /// levels per side, writes its header and maps it.
    ///
    /// The file is built under a temporary name in the same directory and renamed over
    /// `path`, so a reader never sees a half-written header, and a reader still mapping a
    /// previous file at `path` keeps a whole (closed or stale) file instead of one truncated
    /// under it.
    ///
    /// # Errors
    ///
    /// [`SnapshotError::BadGeometry`] if `capacity` is not in `1 ..= 65536` or `depth` not in
    /// `1 ..= 1024`; [`SnapshotError::Io`] if the file cannot be created, sized, mapped or
    /// renamed.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_engine::snapshot::{SnapshotReader, SnapshotWriter};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("book.snap");
    /// let writer = SnapshotWriter::create(&path, 16, 5)?;
    /// let reader = SnapshotReader::open(&path)?;
    /// assert_eq!(reader.header().depth, 5);
    /// assert_eq!(reader.slots().len(), 0);
    /// writer.close()?;
    /// assert!(reader.header().is_closed());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create(
        path: impl AsRef<Path>,
        capacity: usize,
        depth: usize,
    ) -> Result<Self, SnapshotError> {
        let path = path.as_ref().to_path_buf();
        if !(1..=MAX_CAPACITY).contains(&capacity) || !(1..=MAX_DEPTH).contains(&depth) {
            return Err(SnapshotError::BadGeometry {
                capacity,
                depth,
                max_capacity: MAX_CAPACITY,
                max_depth: MAX_DEPTH,
            });
        }
        let geometry = Geometry { capacity, depth };
        let temp = temp_path(&path);
        let io_err = |source| SnapshotError::Io {
            path: path.clone(),
            source,
        };
        let map = match build_file(&temp, geometry) {
            Ok(map) => map,
            Err(source) => {
                // Best effort: the error that matters is the one being returned.
                let _ = fs::remove_file(&temp);
                return Err(SnapshotError::Io { path: temp, source });
            }
        };
        if let Err(source) = fs::rename(&temp, &path) {
            let _ = fs::remove_file(&temp);
            return Err(io_err(source));
        }
        Ok(SnapshotWriter {
            map,
            geometry,
            path,
            slot_of: vec![NO_SLOT; LOCATES],
            in_use: 0,
            scratch: vec![0; geometry.payload_words()],
            closed: false,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Slots in the file: the most instruments it can hold.
    pub fn capacity(&self) -> usize {
        self.geometry.capacity
    }

    /// Levels kept per side in each slot.
    pub fn depth(&self) -> usize {
        self.geometry.depth
    }

    /// Slots in use.
    pub fn instruments(&self) -> usize {
        self.in_use
    }

    /// The slot index of `locate`, if it has one.
    pub fn slot_of(&self, locate: Locate) -> Option<usize> {
        match self.slot_of[usize::from(locate.0)] {
            NO_SLOT => None,
            slot => Some(slot as usize),
        }
    }

    /// Publishes `locate`'s state from `books`: symbol, trading state, top of book and the top
    /// `depth` levels per side, with the feed sequence and ITCH timestamp of the message that
    /// changed it. The local update time is the wall clock now (see [`wall_clock_ns`]).
    ///
    /// The locate gets a slot on first sight. Call it after every message that changed a book
    /// and after `R` and `H` messages (which change a slot's symbol or trading state, not the
    /// book). Allocates nothing.
    ///
    /// # Errors
    ///
    /// [`PublishError::Full`] if the locate has no slot and none is free.
    #[inline]
    pub fn publish(
        &mut self,
        books: &Books,
        locate: Locate,
        feed_seq: u64,
        exchange_ts: Nanos,
    ) -> Result<(), PublishError> {
        self.publish_at(books, locate, feed_seq, exchange_ts, wall_clock_ns())
    }

    /// [`SnapshotWriter::publish`] with the local update time given, in ns since the Unix
    /// epoch: for callers that already read the clock for the message, and for tests.
    ///
    /// # Errors
    ///
    /// [`PublishError::Full`] if the locate has no slot and none is free.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_engine::book::{BookConfig, Books};
    /// use ticklane_engine::snapshot::{SnapshotReader, SnapshotWriter};
    /// use ticklane_feed::itch::{Locate, Nanos};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("book.snap");
    /// let books = Books::new(BookConfig { max_orders: 16, max_books: 4, levels_per_side: 8 })?;
    /// let mut writer = SnapshotWriter::create(&path, 4, 3)?;
    /// writer.publish_at(&books, Locate(7), 42, Nanos(34_200_000_000_000), 1_700_000_000)?;
    /// let reader = SnapshotReader::open(&path)?;
    /// let state = reader.read(0)?;
    /// assert_eq!((state.locate, state.feed_seq, state.updated_ns), (Locate(7), 42, 1_700_000_000));
    /// assert!(state.bids.is_empty() && state.asks.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn publish_at(
        &mut self,
        books: &Books,
        locate: Locate,
        feed_seq: u64,
        exchange_ts: Nanos,
        local_ns: u64,
    ) -> Result<(), PublishError> {
        let slot = self.slot_for(books, locate)?;
        let depth = self.geometry.depth;
        let lock = slot_lock(&self.map, self.geometry, slot);
        // Start from the slot's own words: the trade fields and the stale and behind flags are
        // kept by other methods and must survive a publication.
        lock.load_own(&mut self.scratch);
        let (fixed, ladders) = self.scratch.split_at_mut(FIXED_PAYLOAD_WORDS);
        let levels: &mut [LevelRecord] = bytemuck::cast_slice_mut(ladders);
        let (bids, asks) = levels.split_at_mut(depth);
        let bid_levels = fill_side(books.side(locate, Side::Bid), bids);
        let ask_levels = fill_side(books.side(locate, Side::Ask), asks);
        let (best_bid, best_ask) = (bids[0], asks[0]);
        let payload = payload_mut(fixed);
        payload.symbol = books.symbol_raw(locate).0;
        payload.locate = locate.0;
        payload.trading_state = books.trading_state(locate).unwrap_or(0);
        let crossed = bid_levels > 0 && ask_levels > 0 && best_bid.price >= best_ask.price;
        payload.flags = if crossed {
            payload.flags | SLOT_CROSSED
        } else {
            payload.flags & !SLOT_CROSSED
        };
        payload.feed_seq = feed_seq;
        payload.exchange_ts_ns = exchange_ts.0;
        payload.updated_ns = local_ns;
        payload.publishes = payload.publishes.wrapping_add(1);
        payload.bid_levels = bid_levels;
        payload.ask_levels = ask_levels;
        payload.best_bid = best_bid;
        payload.best_ask = best_ask;
        lock.store(&self.scratch);
        Ok(())
    }

    /// Records `trade` as its instrument's last trade and adds it to the trade and share
    /// counts. `books` supplies the symbol if the instrument gets its slot here. Allocates
    /// nothing.
    ///
    /// # Errors
    ///
    /// [`PublishError::Full`] if the locate has no slot and none is free.
    pub fn record_trade(&mut self, books: &Books, trade: Trade) -> Result<(), PublishError> {
        let slot = self.slot_for(books, trade.locate)?;
        self.update(slot, |payload| {
            payload.last_trade_px = trade.price.0;
            payload.last_trade_shares = trade.shares;
            payload.last_trade_ts_ns = trade.timestamp.0;
            payload.trades = payload.trades.wrapping_add(1);
            payload.traded_shares = payload.traded_shares.wrapping_add(u64::from(trade.shares));
        });
        Ok(())
    }

    /// Sets or clears one instrument's `STALE` flag (its feed line is down). Returns false,
    /// changing nothing, if the locate has no slot.
    pub fn set_instrument_stale(&mut self, locate: Locate, stale: bool) -> bool {
        let Some(slot) = self.slot_of(locate) else {
            return false;
        };
        self.update(slot, |payload| {
            payload.flags = if stale {
                payload.flags | SLOT_STALE
            } else {
                payload.flags & !SLOT_STALE
            };
        });
        true
    }

    /// Marks one instrument's publication as behind since `since_ns` (wall-clock ns since the
    /// Unix epoch), or caught up with `None`. Returns false, changing nothing, if the locate
    /// has no slot.
    pub fn set_instrument_behind(&mut self, locate: Locate, since_ns: Option<u64>) -> bool {
        let Some(slot) = self.slot_of(locate) else {
            return false;
        };
        self.update(slot, |payload| match since_ns {
            Some(since) => {
                payload.flags |= SLOT_BEHIND;
                payload.behind_since_ns = since;
            }
            None => {
                payload.flags &= !SLOT_BEHIND;
                payload.behind_since_ns = 0;
            }
        });
        true
    }

    /// Stores `now_ns` (wall-clock ns since the Unix epoch, e.g. [`wall_clock_ns`]) as the
    /// heartbeat. Call it periodically, also when nothing changes: readers judge the writer
    /// alive by it.
    pub fn heartbeat(&self, now_ns: u64) {
        self.header_word(HEARTBEAT_WORD)
            .store(now_ns, Ordering::Release);
    }

    /// Sets or clears the engine-wide `STALE` flag: the feed is down and every book is the
    /// last known state.
    pub fn set_stale(&self, stale: bool) {
        let flags = self.header_word(FLAGS_WORD);
        if stale {
            flags.fetch_or(HEADER_STALE, Ordering::Release);
        } else {
            flags.fetch_and(!HEADER_STALE, Ordering::Release);
        }
    }

    /// Stores how far publication lags the feed, in ns (0 when keeping up).
    pub fn set_behind(&self, behind_ns: u64) {
        self.header_word(BEHIND_WORD)
            .store(behind_ns, Ordering::Release);
    }

    /// Leaves `locate`'s slot with an odd sequence, as a writer killed in the middle of a write
    /// would: for testing readers only. The next write to the slot repairs it.
    #[doc(hidden)]
    pub fn abandon_write_for_tests(&self, locate: Locate) {
        if let Some(slot) = self.slot_of(locate) {
            slot_lock(&self.map, self.geometry, slot).abandon_write();
        }
    }

    /// Marks the file closed (the writer exited cleanly), stamps a last heartbeat and writes
    /// the mapping back to the file.
    ///
    /// # Errors
    ///
    /// [`SnapshotError::Io`] if the write-back fails; the file is marked closed all the same.
    pub fn close(mut self) -> Result<(), SnapshotError> {
        self.mark_closed().map_err(|source| SnapshotError::Io {
            path: self.path.clone(),
            source,
        })
    }

    fn mark_closed(&mut self) -> io::Result<()> {
        self.closed = true;
        self.heartbeat(wall_clock_ns());
        self.header_word(FLAGS_WORD)
            .fetch_or(HEADER_CLOSED, Ordering::Release);
        self.map.flush()
    }

    /// The slot of `locate`, handed out now if it has none.
    #[inline]
    fn slot_for(&mut self, books: &Books, locate: Locate) -> Result<usize, PublishError> {
        match self.slot_of[usize::from(locate.0)] {
            NO_SLOT => self.allocate(books, locate),
            slot => Ok(slot as usize),
        }
    }

    #[cold]
    fn allocate(&mut self, books: &Books, locate: Locate) -> Result<usize, PublishError> {
        let slot = self.in_use;
        if slot == self.geometry.capacity {
            return Err(PublishError::Full {
                capacity: self.geometry.capacity,
            });
        }
        // Written before it is counted in, so a reader scanning `0 .. instruments` never
        // meets a slot without its locate and symbol.
        self.scratch.fill(0);
        let payload = payload_mut(&mut self.scratch[..FIXED_PAYLOAD_WORDS]);
        payload.symbol = books.symbol_raw(locate).0;
        payload.locate = locate.0;
        slot_lock(&self.map, self.geometry, slot).store(&self.scratch);
        self.in_use = slot + 1;
        self.slot_of[usize::from(locate.0)] =
            u32::try_from(slot).expect("invariant: capacity is at most 65536");
        // Release: a reader that sees the new count (Acquire) sees the slot's first write.
        self.header_word(INSTRUMENTS_WORD)
            .store(self.in_use as u64, Ordering::Release);
        Ok(slot)
    }

    /// Rewrites the fixed part of a slot through `change`, keeping everything else.
    fn update(&mut self, slot: usize, change: impl FnOnce(&mut SlotPayload)) {
        let lock = slot_lock(&self.map, self.geometry, slot);
        lock.load_own(&mut self.scratch);
        change(payload_mut(&mut self.scratch[..FIXED_PAYLOAD_WORDS]));
        lock.store(&self.scratch);
    }

    #[inline(always)]
    fn header_word(&self, index: usize) -> &AtomicU64 {
        &self.map.words()[index]
    }
}

impl Drop for SnapshotWriter {
    fn drop(&mut self) {
        if !self.closed && !std::thread::panicking() {
            // Nowhere to report a failed write-back from a drop; `close` reports it.
            let _ = self.mark_closed();
        }
    }
}

/// Slot `slot`'s seqlock in the mapping. A free function, so that the writer can hold it while
/// it builds the next payload in its own scratch buffer.
#[inline(always)]
pub(crate) fn slot_lock(map: &SharedWords, geometry: Geometry, slot: usize) -> SlotLock<'_> {
    debug_assert!(slot < geometry.capacity);
    let words_per_slot = geometry.slot_size() / 8;
    let start = geometry.slot_offset(slot) / 8;
    SlotLock::new(&map.words()[start..start + words_per_slot])
}

/// Copies a side's best `records.len()` levels into `records`, zeroing the rest; returns how
/// many were copied.
#[inline]
fn fill_side(ladder: Option<LadderView<'_>>, records: &mut [LevelRecord]) -> u32 {
    let mut filled = 0;
    if let Some(ladder) = ladder {
        for (record, level) in records.iter_mut().zip(ladder.best_first()) {
            *record = LevelRecord {
                price: level.price.0,
                orders: level.orders,
                qty: level.qty,
            };
            filled += 1;
        }
    }
    records[filled..].fill(LevelRecord::default());
    // At most `MAX_DEPTH` records.
    filled as u32
}

/// The fixed payload inside a slot's words.
#[inline(always)]
fn payload_mut(fixed: &mut [u64]) -> &mut SlotPayload {
    &mut bytemuck::cast_slice_mut::<u64, SlotPayload>(fixed)[0]
}

/// `.NAME.tmp.PID` next to `path`: same directory, so the rename is atomic.
fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp.{}", std::process::id()))
}

/// Creates, sizes and maps the file at `path` and writes its header.
fn build_file(path: &Path, geometry: Geometry) -> io::Result<SharedWords> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    let file_size = geometry.file_size();
    // A fresh file of zeros: every slot starts with sequence 0 and an empty payload.
    file.set_len(file_size as u64)?;
    let map = SharedWords::new(MmapOptions::new().len(file_size).map_raw(&file)?)?;
    let now = wall_clock_ns();
    let header = SnapshotHeader {
        magic: MAGIC,
        layout_version: LAYOUT_VERSION,
        byte_order: BYTE_ORDER_MARK,
        header_size: HEADER_SIZE as u32,
        slot_size: geometry.slot_size() as u32,
        slot_capacity: geometry.capacity as u32,
        depth: geometry.depth as u32,
        file_size: file_size as u64,
        writer_pid: std::process::id(),
        reserved0: 0,
        created_ns: now,
        heartbeat_ns: now,
        instruments: 0,
        flags: 0,
        behind_ns: 0,
        reserved: [0; 5],
    };
    let words: [u64; HEADER_SIZE / 8] = bytemuck::cast(header);
    for (word, &value) in map.words().iter().zip(&words) {
        word.store(value, Ordering::Relaxed);
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::book::{BookConfig, LevelView};
    use crate::snapshot::layout::SLOT_FIXED_SIZE;
    use crate::snapshot::{LastTrade, ReadError, SnapshotReader};
    use ticklane_feed::itch::{self, owned, OrderRef, Price, Stock};

    fn books() -> Books {
        Books::new(BookConfig {
            max_orders: 64,
            max_books: 8,
            levels_per_side: 16,
        })
        .expect("small books")
    }

    fn apply(books: &mut Books, message: owned::Message) -> Option<Locate> {
        let mut buf = [0u8; 64];
        let len = message.encode(&mut buf);
        books.apply(&itch::decode(&buf[..len]).expect("valid message"))
    }

    fn directory(books: &mut Books, locate: u16, symbol: &str) {
        apply(
            books,
            owned::Message::StockDirectory(owned::StockDirectory {
                locate: Locate(locate),
                stock: Stock::new(symbol.as_bytes()).expect("short symbol"),
                ..Default::default()
            }),
        );
    }

    fn add(books: &mut Books, locate: u16, order_ref: u64, side: u8, shares: u32, price: u32) {
        let changed = apply(
            books,
            owned::Message::AddOrder(owned::AddOrder {
                locate: Locate(locate),
                order_ref: OrderRef(order_ref),
                side,
                shares,
                price: Price(price),
                ..Default::default()
            }),
        );
        assert_eq!(changed, Some(Locate(locate)));
    }

    fn level(price: u32, qty: u64, orders: u32) -> LevelView {
        LevelView {
            price: Price(price),
            qty,
            orders,
        }
    }

    #[test]
    fn a_published_book_reads_back_level_by_level() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("s.snap");
        let mut books = books();
        directory(&mut books, 3, "MSFT");
        apply(
            &mut books,
            owned::Message::StockTradingAction(owned::StockTradingAction {
                locate: Locate(3),
                trading_state: b'T',
                ..Default::default()
            }),
        );
        for (i, price) in [100, 101, 102].into_iter().enumerate() {
            add(&mut books, 3, i as u64, b'B', 10, price);
        }
        add(&mut books, 3, 10, b'B', 5, 102);
        add(&mut books, 3, 11, b'S', 7, 110);
        let mut writer = SnapshotWriter::create(&path, 4, 2).expect("create");
        writer
            .publish_at(&books, Locate(3), 99, Nanos(1234), 5678)
            .expect("room");
        let reader = SnapshotReader::open(&path).expect("open");
        assert_eq!(reader.find(b"MSFT"), Some(0));
        assert_eq!(reader.find(b"MSF"), None);
        let state = reader.read(0).expect("consistent");
        assert_eq!(state.symbol(), b"MSFT");
        assert_eq!(state.locate, Locate(3));
        assert_eq!(state.trading_state, Some(b'T'));
        assert_eq!(
            (state.feed_seq, state.exchange_ts, state.updated_ns),
            (99, Nanos(1234), 5678)
        );
        // Depth 2 keeps the two best bids of three.
        assert_eq!(state.bids, [level(102, 15, 2), level(101, 10, 1)]);
        assert_eq!(state.asks, [level(110, 7, 1)]);
        assert_eq!(state.publishes, 1);
        assert_eq!(state.sequence, 4, "allocation write, then publication");
        assert!(!state.flags.is_crossed() && !state.flags.is_stale());
        assert_eq!(state.last_trade, None);
        // The fixed payload's best levels repeat level 1 of each ladder.
        let bytes = std::fs::read(&path).expect("read file");
        let slot = &bytes[HEADER_SIZE..];
        let payload: SlotPayload = bytemuck::pod_read_unaligned(&slot[8..SLOT_FIXED_SIZE]);
        assert_eq!(
            (
                payload.best_bid.price,
                payload.best_bid.qty,
                payload.best_bid.orders
            ),
            (102, 15, 2)
        );
        assert_eq!((payload.bid_levels, payload.ask_levels), (2, 1));
    }

    #[test]
    fn trades_and_flags_survive_the_next_publication() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("s.snap");
        let mut books = books();
        add(&mut books, 1, 1, b'B', 10, 200);
        let mut writer = SnapshotWriter::create(&path, 2, 3).expect("create");
        let trade = Trade {
            locate: Locate(1),
            price: Price(199),
            shares: 40,
            timestamp: Nanos(77),
        };
        writer.record_trade(&books, trade).expect("room");
        writer.record_trade(&books, trade).expect("room");
        assert!(writer.set_instrument_stale(Locate(1), true));
        assert!(writer.set_instrument_behind(Locate(1), Some(1_000)));
        assert!(!writer.set_instrument_stale(Locate(2), true), "no slot");
        // Crossing: the ask at or below the bid is applied and flagged.
        add(&mut books, 1, 2, b'S', 3, 150);
        writer
            .publish(&books, Locate(1), 5, Nanos(6))
            .expect("room");
        let reader = SnapshotReader::open(&path).expect("open");
        let state = reader.read(0).expect("consistent");
        assert_eq!(
            state.last_trade,
            Some(LastTrade {
                price: Price(199),
                shares: 40,
                timestamp: Nanos(77)
            })
        );
        assert_eq!((state.trades, state.traded_shares), (2, 80));
        assert!(state.flags.is_stale() && state.flags.is_behind() && state.flags.is_crossed());
        assert_eq!(state.behind_since_ns, Some(1_000));
        assert!(state.updated_ns > 0, "stamped with the wall clock");
        writer.set_instrument_behind(Locate(1), None);
        writer.set_instrument_stale(Locate(1), false);
        let state = reader.read(0).expect("consistent");
        assert!(!state.flags.is_stale() && !state.flags.is_behind());
        assert_eq!(state.behind_since_ns, None);
    }

    #[test]
    fn header_words_move_on_their_own() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("s.snap");
        let writer = SnapshotWriter::create(&path, 2, 1).expect("create");
        let reader = SnapshotReader::open(&path).expect("open");
        let header = reader.header();
        assert_eq!(header.writer_pid, std::process::id());
        assert!(header.heartbeat_ns > 0 && !header.is_stale() && !header.is_closed());
        writer.heartbeat(header.heartbeat_ns + 5);
        writer.set_stale(true);
        writer.set_behind(250);
        let header = reader.header();
        assert!(header.is_stale());
        assert_eq!(header.behind_ns, 250);
        writer.set_stale(false);
        assert!(!reader.header().is_stale());
        // Dropping the writer closes the file, as `close` does.
        drop(writer);
        assert!(reader.header().is_closed());
    }

    #[test]
    fn a_full_file_refuses_new_instruments_but_keeps_serving_old_ones() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("s.snap");
        let books = books();
        let mut writer = SnapshotWriter::create(&path, 1, 1).expect("create");
        writer
            .publish(&books, Locate(9), 1, Nanos(1))
            .expect("room");
        assert_eq!(
            writer.publish(&books, Locate(10), 2, Nanos(2)),
            Err(PublishError::Full { capacity: 1 })
        );
        writer
            .publish(&books, Locate(9), 3, Nanos(3))
            .expect("has a slot");
        assert_eq!(writer.instruments(), 1);
        assert_eq!(writer.slot_of(Locate(9)), Some(0));
    }

    #[test]
    fn an_abandoned_write_is_reported_not_waited_on() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("s.snap");
        let books = books();
        let mut writer = SnapshotWriter::create(&path, 2, 1).expect("create");
        writer
            .publish(&books, Locate(1), 1, Nanos(1))
            .expect("room");
        writer.abandon_write_for_tests(Locate(1));
        let reader = SnapshotReader::open(&path)
            .expect("open")
            .with_read_attempts(50);
        assert!(matches!(
            reader.read(0),
            Err(ReadError::WriteInProgress { attempts: 50, sequence }) if sequence % 2 == 1
        ));
        assert_eq!(
            reader.read(1).err(),
            Some(ReadError::NoSuchSlot { slot: 1, in_use: 1 })
        );
        // The next publication repairs the slot.
        writer
            .publish(&books, Locate(1), 2, Nanos(2))
            .expect("room");
        assert_eq!(reader.read(0).expect("repaired").feed_seq, 2);
    }

    #[test]
    fn bad_geometry_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("s.snap");
        for (capacity, depth) in [(0, 10), (10, 0), (MAX_CAPACITY + 1, 1), (1, MAX_DEPTH + 1)] {
            assert!(matches!(
                SnapshotWriter::create(&path, capacity, depth),
                Err(SnapshotError::BadGeometry { .. })
            ));
        }
        assert!(!path.exists());
    }
}
