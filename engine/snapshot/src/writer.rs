//! The book thread's side of the snapshot: creates the file and publishes each instrument's
//! state into its slot under the slot's seqlock.
//!
//! The writer keeps its own copy of every slot's fixed payload, so that a write never reads
//! the file back: it builds the new payload, then stores only the words that differ from what
//! the slot holds, and of the ladders only the levels in use now or before. A trade is held
//! until the publication of the book it changed and goes out in the same write: one write
//! per book change, and a reader never sees a trade before the book that reflects it.

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, Read as _, Seek as _, Write as _};
use std::path::{Path, PathBuf};

use memmap2::MmapOptions;
use ticklane_itch::{Locate, Nanos};

use super::clock::wall_clock_ns;
use super::error::{PublishError, SnapshotError};
use super::layout::{
    Geometry, LevelRecord, LineState, SlotPayload, SnapshotHeader, BEHIND_WORD, BYTE_ORDER_MARK,
    FIXED_PAYLOAD_WORDS, FLAGS_WORD, FULL_WORD, HEADER_CLOSED, HEADER_MAYBE_BAD, HEADER_SIZE,
    HEADER_STALE, HEARTBEAT_WORD, INSTRUMENTS_WORD, LAYOUT_VERSION, LINE_STATE_WORD, LOST_WORD,
    MAGIC, MAX_CAPACITY, MAX_DEPTH, MAYBE_BAD_SINCE_WORD, SLOT_BEHIND, SLOT_CROSSED,
    SLOT_MAYBE_BAD, SLOT_STALE, STALE_SINCE_WORD,
};
use super::mapping::WritableWords;
use ticklane_book::Trade;
use ticklane_book::{Books, LadderView, Side};
use ticklane_ring::seqlock::{SeqLockWriter, SlotWrite};

/// Every locate a 16-bit field can name.
const LOCATES: usize = 1 << 16;
/// `slot_of` entry of a locate that has no slot yet.
const NO_SLOT: u32 = u32::MAX;

/// Trades recorded for a slot since its last publication: they go out with the next one.
#[derive(Clone, Copy, Debug, Default)]
struct PendingTrades {
    /// Trades recorded (0: none pending).
    trades: u64,
    /// Their shares, summed.
    shares: u64,
    /// The latest of them.
    last: Option<Trade>,
}

/// Writes the snapshot file: one slot per instrument, each under its own seqlock.
///
/// Everything is allocated and mapped in [`SnapshotWriter::create`]; publishing allocates
/// nothing, makes no system call and never reads the file back. Slots are handed out in order
/// of first sight, so the file's used slots are always `0 .. instruments`.
///
/// There is one writer per file, in this process and across processes: the writer holds an
/// advisory lock on `PATH.lock` for its whole life (see [`SnapshotWriter::create`]).
/// `SnapshotWriter` is `Send` (it may move to the book thread) and its per-instrument methods
/// take `&mut self`. Readers in any process see each slot change atomically.
///
/// Dropping the writer marks the file closed, as [`SnapshotWriter::close`] does, unless the
/// thread is panicking or the line ended badly ([`SnapshotWriter::set_line_state`] with
/// [`LineState::EndedSilent`] or [`LineState::EndedError`]): a file left by a panic, a bad
/// end or a `kill -9` is not closed, and readers tell by the heartbeat that stopped and, for
/// a bad end, by `STALE` and the line state.
#[derive(Debug)]
pub struct SnapshotWriter {
    map: WritableWords,
    geometry: Geometry,
    path: PathBuf,
    /// Slot index of each locate, or `NO_SLOT`.
    slot_of: Vec<u32>,
    /// Slots handed out: `0 .. in_use`, at most `geometry.capacity`.
    in_use: usize,
    /// Each slot's fixed payload exactly as the file holds it (this is the only writer, and
    /// the file starts zeroed), one per slot of the file.
    written: Vec<SlotPayload>,
    /// Trades recorded since each slot's last publication, one per slot of the file.
    pending: Vec<PendingTrades>,
    /// The next publication's level records, `depth` bids then `depth` asks: built before its
    /// write begins, so readers are held off only for the stores.
    levels: Vec<LevelRecord>,
    /// The line's state as the header holds it.
    line: LineState,
    /// Whether a loss was declared (`MAYBE_BAD` set on the header and every slot).
    maybe_bad: bool,
    /// Publications and trades refused because every slot was taken.
    full: u64,
    closed: bool,
    /// The open lock file: its `flock` is this writer's claim on the path, released when the
    /// file is closed (dropped with the writer, or by the kernel when the process dies).
    _lock: File,
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
    /// Before anything is written, the writer takes an exclusive advisory lock (`flock`) on
    /// `PATH.lock` (created if missing, never removed: removing it would let two writers lock
    /// two different files) and writes its pid into it. The lock is held until the writer is
    /// dropped; the kernel releases it when the process dies, `kill -9` included, so a restart
    /// needs no manual step.
    ///
    /// # Errors
    ///
    /// [`SnapshotError::BadGeometry`] if `capacity` is not in `1 ..= 65536` or `depth` not in
    /// `1 ..= 1024`; [`SnapshotError::Locked`], naming the holder's pid, if another writer
    /// (in this process or another) holds the path; [`SnapshotError::Io`] if the lock file or
    /// the file cannot be created, sized, mapped or renamed.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_snapshot::{SnapshotReader, SnapshotWriter};
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
        let lock = lock_path(&path)?;
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
            written: vec![bytemuck::Zeroable::zeroed(); capacity],
            pending: vec![PendingTrades::default(); capacity],
            levels: vec![LevelRecord::default(); 2 * depth],
            line: LineState::Live,
            maybe_bad: false,
            full: 0,
            closed: false,
            _lock: lock,
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
    /// Trades recorded for the instrument since its last publication (see
    /// [`SnapshotWriter::record_trade`]) go out in this same write.
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
    /// use ticklane_book::{BookConfig, Books};
    /// use ticklane_snapshot::{SnapshotReader, SnapshotWriter};
    /// use ticklane_itch::{Locate, Nanos};
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
        let (bids, asks) = self.levels.split_at_mut(depth);
        let bid_levels = fill_side(books.side(locate, Side::Bid), bids);
        let ask_levels = fill_side(books.side(locate, Side::Ask), asks);
        let old = self.written[slot];
        let mut new = old;
        new.symbol = books.symbol_raw(locate).0;
        new.locate = locate.0;
        new.trading_state = books.trading_state(locate).unwrap_or(0);
        let crossed = bid_levels > 0 && ask_levels > 0 && bids[0].price >= asks[0].price;
        new.flags = if crossed {
            old.flags | SLOT_CROSSED
        } else {
            old.flags & !SLOT_CROSSED
        };
        new.feed_seq = feed_seq;
        new.exchange_ts_ns = exchange_ts.0;
        new.updated_ns = local_ns;
        new.publishes = old.publishes.wrapping_add(1);
        new.bid_levels = bid_levels;
        new.ask_levels = ask_levels;
        // `fill_side` zeroes the records past the ladder, so an empty side is all zero.
        new.best_bid = bids[0];
        new.best_ask = asks[0];
        let pending = core::mem::take(&mut self.pending[slot]);
        if let Some(trade) = pending.last {
            new.last_trade_px = trade.price.0;
            new.last_trade_shares = trade.shares;
            new.last_trade_ts_ns = trade.timestamp.0;
            new.trades = old.trades.wrapping_add(pending.trades);
            new.traded_shares = old.traded_shares.wrapping_add(pending.shares);
        }
        // The levels in use now, and those in use before that must become zero; the records
        // past both are zero already.
        let bid_records = bid_levels.max(old.bid_levels) as usize;
        let ask_records = ask_levels.max(old.ask_levels) as usize;
        let lock = slot_writer(&self.map, self.geometry, slot);
        lock.write(|w| {
            store_changed(w, &old, &new);
            w.store_from(
                FIXED_PAYLOAD_WORDS,
                bytemuck::cast_slice(&bids[..bid_records]),
            );
            w.store_from(
                FIXED_PAYLOAD_WORDS + 2 * depth,
                bytemuck::cast_slice(&asks[..ask_records]),
            );
        });
        self.written[slot] = new;
        Ok(())
    }

    /// Records `trade` to go out with the next publication of its instrument, which is the
    /// publication of the book the trade changed: as the last trade, and added to the trade
    /// and share counts. Nothing is written until then, so a reader never sees a trade before
    /// the book that reflects it. `books` supplies the symbol if the instrument gets its slot
    /// here. Allocates nothing.
    ///
    /// # Errors
    ///
    /// [`PublishError::Full`] if the locate has no slot and none is free.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_book::{BookConfig, Books, Trade};
    /// use ticklane_snapshot::{SnapshotReader, SnapshotWriter};
    /// use ticklane_itch::{Locate, Nanos, Price};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("book.snap");
    /// let books = Books::new(BookConfig { max_orders: 16, max_books: 4, levels_per_side: 8 })?;
    /// let mut writer = SnapshotWriter::create(&path, 4, 3)?;
    /// let reader = SnapshotReader::open(&path)?;
    /// let trade = Trade { locate: Locate(2), price: Price(1_000), shares: 5, timestamp: Nanos(9) };
    /// writer.record_trade(&books, trade)?;
    /// assert_eq!(reader.read(0)?.trades, 0, "not before its book");
    /// writer.publish_at(&books, Locate(2), 1, Nanos(9), 1_700_000_000)?;
    /// assert_eq!(reader.read(0)?.trades, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn record_trade(&mut self, books: &Books, trade: Trade) -> Result<(), PublishError> {
        let slot = self.slot_for(books, trade.locate)?;
        let pending = &mut self.pending[slot];
        pending.trades = pending.trades.wrapping_add(1);
        pending.shares = pending.shares.wrapping_add(u64::from(trade.shares));
        pending.last = Some(trade);
        Ok(())
    }

    /// Sets or clears one instrument's `STALE` flag (its feed line is down). Returns false,
    /// changing nothing, if the locate has no slot.
    pub fn set_instrument_stale(&mut self, locate: Locate, stale: bool) -> bool {
        let Some(slot) = self.slot_of(locate) else {
            return false;
        };
        self.write_fixed(slot, |payload| {
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
        self.write_fixed(slot, |payload| match since_ns {
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

    /// Records the feed line's state: `STALE` on the header and on every slot in use (and on
    /// every slot handed out while it lasts) for any state but [`LineState::Live`], with
    /// `since_ns` (wall-clock ns since the Unix epoch) as the header's `stale_since_ns`;
    /// [`LineState::Live`] clears both. The header's `line_state` says which.
    ///
    /// [`LineState::EndedSilent`] and [`LineState::EndedError`] also mean the writer will not
    /// mark the file `CLOSED` when it closes: the line did not end cleanly.
    ///
    /// A change between two stale states keeps the first since-when: the books have been
    /// stale since then. Cold: touches every slot when staleness changes.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_snapshot::{LineState, SnapshotReader, SnapshotWriter};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("book.snap");
    /// let mut writer = SnapshotWriter::create(&path, 4, 3)?;
    /// let reader = SnapshotReader::open(&path)?;
    /// writer.set_line_state(LineState::Silent, 1_700_000_000_000_000_000);
    /// let header = reader.header();
    /// assert_eq!(header.stale_since(), Some(1_700_000_000_000_000_000));
    /// assert_eq!(header.line(), Some(LineState::Silent));
    /// writer.set_line_state(LineState::Live, 1_700_000_001_000_000_000);
    /// assert!(!reader.header().is_stale());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_line_state(&mut self, state: LineState, since_ns: u64) {
        let was_stale = self.line.is_stale();
        let stale = state.is_stale();
        self.line = state;
        let flags = self.header_word(FLAGS_WORD);
        if stale && !was_stale {
            // The time first, then the flag: a reader that sees the flag sees its time.
            self.header_word(STALE_SINCE_WORD)
                .store(since_ns, Ordering::Release);
            self.header_word(LINE_STATE_WORD)
                .store(state.code(), Ordering::Release);
            flags.fetch_or(HEADER_STALE, Ordering::Release);
        } else if !stale && was_stale {
            self.header_word(LINE_STATE_WORD)
                .store(state.code(), Ordering::Release);
            flags.fetch_and(!HEADER_STALE, Ordering::Release);
            self.header_word(STALE_SINCE_WORD)
                .store(0, Ordering::Release);
        } else {
            self.header_word(LINE_STATE_WORD)
                .store(state.code(), Ordering::Release);
        }
        if stale != was_stale {
            for slot in 0..self.in_use {
                self.write_fixed(slot, |payload| {
                    payload.flags = if stale {
                        payload.flags | SLOT_STALE
                    } else {
                        payload.flags & !SLOT_STALE
                    };
                });
            }
        }
    }

    /// The line state last recorded.
    pub fn line_state(&self) -> LineState {
        self.line
    }

    /// Records that the feed line declared `messages` lost at `at_ns` (wall-clock ns since the
    /// Unix epoch): the header's `lost_messages` grows, and on the first loss `MAYBE_BAD` goes
    /// on the header (with `maybe_bad_since_ns`) and on every slot, now and handed out later:
    /// an ITCH gap can touch any book. Nothing clears it but a new file (a recovery that
    /// rebuilds the books); cold.
    pub fn declare_loss(&mut self, messages: u64, at_ns: u64) {
        let lost = self.header_word(LOST_WORD);
        lost.store(
            lost.load(Ordering::Relaxed).saturating_add(messages),
            Ordering::Release,
        );
        self.flag_maybe_bad(at_ns);
    }

    /// Flags every book `MAYBE_BAD` from `at_ns` (wall-clock ns since the Unix epoch) on,
    /// as [`SnapshotWriter::declare_loss`] does, without counting a loss: for messages that
    /// were never asked for (a line that joined past its opening), not declared lost. Cold.
    pub fn flag_maybe_bad(&mut self, at_ns: u64) {
        if self.maybe_bad {
            return;
        }
        self.maybe_bad = true;
        self.header_word(MAYBE_BAD_SINCE_WORD)
            .store(at_ns, Ordering::Release);
        self.header_word(FLAGS_WORD)
            .fetch_or(HEADER_MAYBE_BAD, Ordering::Release);
        for slot in 0..self.in_use {
            self.write_fixed(slot, |payload| payload.flags |= SLOT_MAYBE_BAD);
        }
    }

    /// Whether a loss was declared (the books are flagged `MAYBE_BAD`).
    pub fn is_maybe_bad(&self) -> bool {
        self.maybe_bad
    }

    /// Publications and trades refused so far because every slot was taken (the header's
    /// `full_publications`).
    pub fn full_publications(&self) -> u64 {
        self.full
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
            slot_writer(&self.map, self.geometry, slot).abandon_write();
        }
    }

    /// Marks the file closed (the writer exited cleanly), stamps a last heartbeat and writes
    /// the mapping back to the file. If the line ended badly (see
    /// [`SnapshotWriter::set_line_state`]) the file is not marked closed: it keeps `STALE` and
    /// the line state that says why.
    ///
    /// # Errors
    ///
    /// [`SnapshotError::Io`] if the write-back fails; the flags are set all the same.
    pub fn close(mut self) -> Result<(), SnapshotError> {
        self.mark_closed().map_err(|source| SnapshotError::Io {
            path: self.path.clone(),
            source,
        })
    }

    fn mark_closed(&mut self) -> io::Result<()> {
        self.closed = true;
        self.heartbeat(wall_clock_ns());
        if !self.line.is_failed_end() {
            self.header_word(FLAGS_WORD)
                .fetch_or(HEADER_CLOSED, Ordering::Release);
            MARKED_CLOSED.store(true, Ordering::Release);
        }
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
            self.full += 1;
            self.header_word(FULL_WORD)
                .store(self.full, Ordering::Release);
            return Err(PublishError::Full {
                capacity: self.geometry.capacity,
            });
        }
        // Written before it is counted in, so a reader scanning `0 .. instruments` never
        // meets a slot without its locate and symbol.
        // A slot handed out while the line is stale, or after a loss, is as stale or as
        // doubtful as the others.
        let inherited = if self.line.is_stale() { SLOT_STALE } else { 0 }
            | if self.maybe_bad { SLOT_MAYBE_BAD } else { 0 };
        self.write_fixed(slot, |payload| {
            payload.symbol = books.symbol_raw(locate).0;
            payload.locate = locate.0;
            payload.flags |= inherited;
        });
        self.in_use = slot + 1;
        self.slot_of[usize::from(locate.0)] =
            u32::try_from(slot).expect("invariant: capacity is at most 65536");
        // Release: a reader that sees the new count (Acquire) sees the slot's first write.
        self.header_word(INSTRUMENTS_WORD)
            .store(self.in_use as u64, Ordering::Release);
        Ok(slot)
    }

    /// One write of the fixed part of a slot: `change` edits the writer's copy, and only the
    /// words it changed are stored.
    fn write_fixed(&mut self, slot: usize, change: impl FnOnce(&mut SlotPayload)) {
        let old = self.written[slot];
        let mut new = old;
        change(&mut new);
        slot_writer(&self.map, self.geometry, slot).write(|w| store_changed(w, &old, &new));
        self.written[slot] = new;
    }

    #[inline(always)]
    fn header_word(&self, index: usize) -> &AtomicU64 {
        &self.map.words()[index]
    }
}

/// Set once a writer of this process has marked its file `CLOSED`.
static MARKED_CLOSED: AtomicBool = AtomicBool::new(false);

/// Whether a snapshot writer of this process has marked its file `CLOSED` (its books
/// drained and flushed): what a drain watchdog that fires later must not deny.
pub fn marked_closed_in_this_process() -> bool {
    MARKED_CLOSED.load(Ordering::Acquire)
}

impl Drop for SnapshotWriter {
    fn drop(&mut self) {
        if !self.closed && !std::thread::panicking() {
            // Nowhere to report a failed write-back from a drop; `close` reports it.
            let _ = self.mark_closed();
        }
    }
}

/// The writer's side of slot `slot`'s seqlock in the mapping. A free function, so that the
/// writer can hold it while it reads its own buffers.
#[inline(always)]
fn slot_writer(map: &WritableWords, geometry: Geometry, slot: usize) -> SeqLockWriter<'_> {
    debug_assert!(slot < geometry.capacity);
    SeqLockWriter::new(&map.words()[geometry.slot_words(slot)])
        .expect("invariant: a slot has a sequence word")
}

/// Stores the fixed payload words in which `new` differs from `old`, what the slot holds.
#[inline(always)]
fn store_changed(w: &SlotWrite<'_>, old: &SlotPayload, new: &SlotPayload) {
    let old: &[u64; FIXED_PAYLOAD_WORDS] = bytemuck::cast_ref(old);
    let new: &[u64; FIXED_PAYLOAD_WORDS] = bytemuck::cast_ref(new);
    for (index, (&was, &now)) in old.iter().zip(new).enumerate() {
        if was != now {
            w.store(index, now);
        }
    }
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

/// Removes a throwaway snapshot (a demo's, a benchmark's) and its lock file, once its writer
/// is gone. A snapshot that readers may still open is left alone by its writer; this is for
/// the caller that made one only for itself.
///
/// # Errors
///
/// The first removal that failed for a reason other than the file not being there.
pub fn remove_snapshot_files(path: &Path) -> io::Result<()> {
    for file in [path.to_path_buf(), lock_file_path(path)] {
        match fs::remove_file(&file) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// `PATH.lock`: the file whose `flock` says who writes `path`.
fn lock_file_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Takes the exclusive lock on `path`'s lock file and writes this process's pid into it.
fn lock_path(path: &Path) -> Result<File, SnapshotError> {
    let lock_path = lock_file_path(path);
    let io_err = |source| SnapshotError::Io {
        path: lock_path.clone(),
        source,
    };
    // Not truncated on open: the holder's pid must stay readable to a refused writer.
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock_path)
        .map_err(io_err)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut text = String::new();
            // Best effort: the refusal matters, the pid only helps.
            let _ = file.read_to_string(&mut text);
            return Err(SnapshotError::Locked {
                path: path.to_path_buf(),
                lock: lock_path,
                holder_pid: text.trim().parse().ok(),
            });
        }
        Err(TryLockError::Error(source)) => return Err(io_err(source)),
    }
    let pid = std::process::id().to_string();
    file.set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| file.write_all(pid.as_bytes()))
        .map_err(io_err)?;
    Ok(file)
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
fn build_file(path: &Path, geometry: Geometry) -> io::Result<WritableWords> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    let file_size = geometry.file_size();
    // A fresh file of zeros: every slot starts with sequence 0 and an empty payload.
    file.set_len(file_size as u64)?;
    let map = WritableWords::new(MmapOptions::new().len(file_size).map_raw(&file)?)?;
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
        stale_since_ns: 0,
        line_state: LineState::Live.code(),
        maybe_bad_since_ns: 0,
        lost_messages: 0,
        full_publications: 0,
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
    use crate::layout::SLOT_FIXED_SIZE;
    use crate::{LastTrade, ReadError, SnapshotReader};
    use ticklane_book::{BookConfig, LevelView};
    use ticklane_itch::{self as itch, owned, OrderRef, Price, Stock};

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
    fn a_trade_goes_out_in_the_one_write_of_its_book() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("s.snap");
        let mut books = books();
        add(&mut books, 1, 1, b'B', 10, 200);
        let mut writer = SnapshotWriter::create(&path, 2, 3).expect("create");
        writer
            .publish_at(&books, Locate(1), 1, Nanos(1), 1)
            .expect("room");
        let reader = SnapshotReader::open(&path).expect("open");
        let before = reader.sequence(0).expect("slot 0");
        // The execution of 4 of the 10 shares: its trade, then its book.
        writer
            .record_trade(
                &books,
                Trade {
                    locate: Locate(1),
                    price: Price(200),
                    shares: 4,
                    timestamp: Nanos(2),
                },
            )
            .expect("room");
        assert_eq!(reader.sequence(0), Some(before), "nothing written yet");
        assert_eq!(reader.read(0).expect("consistent").last_trade, None);
        let mut executed = Books::new(BookConfig {
            max_orders: 64,
            max_books: 8,
            levels_per_side: 16,
        })
        .expect("small books");
        add(&mut executed, 1, 1, b'B', 6, 200);
        writer
            .publish_at(&executed, Locate(1), 2, Nanos(2), 2)
            .expect("room");
        let state = reader.read(0).expect("consistent");
        assert_eq!(state.sequence, before + 2, "one write");
        assert_eq!(
            (state.feed_seq, state.trades, state.traded_shares),
            (2, 1, 4)
        );
        assert_eq!(state.bids, [level(200, 6, 1)]);
    }

    #[test]
    fn a_publication_stores_only_what_changed() {
        use std::os::unix::fs::FileExt;
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("s.snap");
        let mut books = books();
        for (i, price) in [100, 101, 102].into_iter().enumerate() {
            add(&mut books, 1, i as u64, b'B', 10, price);
        }
        let geometry = Geometry {
            capacity: 2,
            depth: 4,
        };
        let mut writer = SnapshotWriter::create(&path, 2, 4).expect("create");
        writer
            .publish_at(&books, Locate(1), 1, Nanos(1), 1)
            .expect("room");
        // Marks the writer never wrote, where the slot holds zeros it has no reason to store
        // again: the fourth bid record (three levels in use) and `behind_since_ns`.
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .expect("open for writing");
        let slot_at = geometry.slot_offset(0) as u64;
        let fourth_bid = slot_at + geometry.bids_offset() as u64 + 3 * 16;
        let behind_since = slot_at + 8 + 40;
        file.write_at(&u64::MAX.to_ne_bytes(), fourth_bid + 8)
            .expect("poke");
        file.write_at(&7u64.to_ne_bytes(), behind_since)
            .expect("poke");
        // The best bid leaves: two levels in use, the third goes back to zero.
        apply(
            &mut books,
            owned::Message::OrderDelete(owned::OrderDelete {
                locate: Locate(1),
                order_ref: OrderRef(2),
                ..Default::default()
            }),
        );
        writer
            .publish_at(&books, Locate(1), 2, Nanos(2), 2)
            .expect("room");
        let bytes = std::fs::read(&path).expect("read file");
        let word = |at: u64| {
            let at = at as usize;
            u64::from_ne_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
        };
        assert_eq!(
            word(fourth_bid + 8),
            u64::MAX,
            "past every ladder in use: untouched"
        );
        assert_eq!(word(behind_since), 7, "unchanged field: not stored again");
        let third_bid = fourth_bid - 16;
        assert_eq!(
            (word(third_bid), word(third_bid + 8)),
            (0, 0),
            "left the ladder: zeroed"
        );
        let state = SnapshotReader::open(&path)
            .expect("open")
            .read(0)
            .expect("consistent");
        assert_eq!(state.bids, [level(101, 10, 1), level(100, 10, 1)]);
        assert_eq!(state.feed_seq, 2);
    }

    #[test]
    fn header_words_move_on_their_own() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("s.snap");
        let mut writer = SnapshotWriter::create(&path, 2, 1).expect("create");
        let reader = SnapshotReader::open(&path).expect("open");
        let header = reader.header();
        assert_eq!(header.writer_pid, std::process::id());
        assert!(header.heartbeat_ns > 0 && !header.is_stale() && !header.is_closed());
        writer.heartbeat(header.heartbeat_ns + 5);
        writer.set_line_state(LineState::Silent, 1_000);
        writer.set_behind(250);
        let header = reader.header();
        assert!(header.is_stale());
        assert_eq!(header.behind_ns, 250);
        writer.set_line_state(LineState::Live, 2_000);
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
    fn stale_and_maybe_bad_reach_every_slot_and_new_ones() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("s.snap");
        let books = books();
        let mut writer = SnapshotWriter::create(&path, 4, 1).expect("create");
        writer
            .publish(&books, Locate(1), 1, Nanos(1))
            .expect("room");
        writer
            .publish(&books, Locate(2), 2, Nanos(2))
            .expect("room");
        let reader = SnapshotReader::open(&path).expect("open");
        writer.set_line_state(LineState::Silent, 111);
        // A second stale state keeps the first since-when.
        writer.set_line_state(LineState::Reconnecting, 222);
        writer
            .publish(&books, Locate(3), 3, Nanos(3))
            .expect("room");
        let header = reader.header();
        assert_eq!(header.flags & HEADER_STALE, HEADER_STALE);
        assert_eq!(header.stale_since(), Some(111));
        assert_eq!(header.line(), Some(LineState::Reconnecting));
        for slot in 0..3 {
            let state = reader.read(slot).expect("consistent");
            assert!(state.flags.is_stale(), "slot {slot}");
            assert!(!state.flags.is_maybe_bad(), "slot {slot}");
        }
        writer.declare_loss(7, 333);
        writer.declare_loss(5, 444);
        writer.set_line_state(LineState::Live, 555);
        writer
            .publish(&books, Locate(4), 4, Nanos(4))
            .expect("room");
        let header = reader.header();
        assert!(!header.is_stale() && header.stale_since().is_none());
        assert_eq!(header.line(), Some(LineState::Live));
        assert!(header.is_maybe_bad());
        assert_eq!((header.maybe_bad_since_ns, header.lost_messages), (333, 12));
        for slot in 0..4 {
            let state = reader.read(slot).expect("consistent");
            assert!(!state.flags.is_stale(), "slot {slot}");
            assert!(
                state.flags.is_maybe_bad(),
                "slot {slot}: an ITCH gap can touch any book"
            );
        }
    }

    #[test]
    fn a_full_file_counts_what_it_refused_in_the_header() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("s.snap");
        let books = books();
        let mut writer = SnapshotWriter::create(&path, 1, 1).expect("create");
        writer
            .publish(&books, Locate(1), 1, Nanos(1))
            .expect("room");
        for seq in 2..5 {
            assert!(writer.publish(&books, Locate(2), seq, Nanos(seq)).is_err());
        }
        let trade = Trade {
            locate: Locate(3),
            price: Price(1),
            shares: 1,
            timestamp: Nanos(9),
        };
        assert!(writer.record_trade(&books, trade).is_err());
        assert_eq!(writer.full_publications(), 4);
        let reader = SnapshotReader::open(&path).expect("open");
        assert_eq!(reader.header().full_publications, 4);
    }

    #[test]
    fn a_line_that_ended_badly_leaves_the_file_stale_not_closed() {
        let dir = tempfile::tempdir().expect("temp dir");
        for (end, closed) in [
            (LineState::EndedSilent, false),
            (LineState::EndedError, false),
            (LineState::Reconnecting, true),
            (LineState::Live, true),
        ] {
            let path = dir.path().join(format!("{end:?}.snap"));
            let mut writer = SnapshotWriter::create(&path, 1, 1).expect("create");
            writer.set_line_state(end, 10);
            drop(writer);
            let header = SnapshotReader::open(&path).expect("open").header();
            assert_eq!(header.is_closed(), closed, "{end:?}");
            assert_eq!(header.is_stale(), end.is_stale(), "{end:?}");
            assert_eq!(header.line(), Some(end));
        }
    }

    #[test]
    fn a_second_writer_on_the_same_path_is_refused_naming_the_holder() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("s.snap");
        let first = SnapshotWriter::create(&path, 1, 1).expect("create");
        let created = SnapshotReader::open(&path)
            .expect("open")
            .header()
            .created_ns;
        // flock locks belong to the open file description: a second open in this same
        // process conflicts, as a second process would.
        match SnapshotWriter::create(&path, 1, 1) {
            Err(SnapshotError::Locked {
                path: p,
                holder_pid,
                ..
            }) => {
                assert_eq!(p, path);
                assert_eq!(holder_pid, Some(std::process::id()));
            }
            other => panic!("expected Locked, got {other:?}"),
        }
        let text = SnapshotWriter::create(&path, 1, 1)
            .expect_err("still locked")
            .to_string();
        assert!(text.contains(&path.display().to_string()), "{text}");
        assert!(
            text.contains(&format!("pid {}", std::process::id())),
            "{text}"
        );
        // Not replaced: the first writer's file is still the one at the path.
        let header = SnapshotReader::open(&path).expect("open").header();
        assert_eq!(header.created_ns, created);
        assert!(!header.is_closed());
        drop(first);
        SnapshotWriter::create(&path, 1, 1).expect("the lock went with the first writer");
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
