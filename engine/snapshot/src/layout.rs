//! The snapshot file's binary layout, version 2: what every reader, in any language, relies on.
//!
//! The file is a header of [`HEADER_SIZE`] bytes followed by `slot_capacity` slots of
//! `slot_size` bytes each, one per instrument. Every field is in the writer's native byte order
//! (little-endian on x86-64 and aarch64); `byte_order` lets a reader check that it agrees. The
//! file is read and written as 64-bit words only: each 8-byte-aligned word is loaded and stored
//! atomically, which is what lets readers in other processes share it without locks.
//!
//! # Header (128 bytes, at offset 0)
//!
//! | offset | size | field | meaning |
//! | ---: | ---: | --- | --- |
//! | 0 | 8 | `magic` | the ASCII bytes `TICKLANE` |
//! | 8 | 4 | `layout_version` | `2`; a reader refuses any other (version 1 had no line state, loss or full counters: bytes 88 to 128 were reserved) |
//! | 12 | 4 | `byte_order` | `0x01020304` as written by the writer; reads as `0x04030201` on a host of the other endianness |
//! | 16 | 4 | `header_size` | `128`: slot 0 starts here |
//! | 20 | 4 | `slot_size` | bytes per slot: `136 + 32 * depth` |
//! | 24 | 4 | `slot_capacity` | slots in the file (most instruments it can hold) |
//! | 28 | 4 | `depth` | price levels kept per side in each slot (N) |
//! | 32 | 8 | `file_size` | `header_size + slot_capacity * slot_size`; the file is at least this long |
//! | 40 | 4 | `writer_pid` | process id of the writer |
//! | 44 | 4 | `reserved0` | 0 |
//! | 48 | 8 | `created_ns` | wall-clock time the file was created, ns since the Unix epoch |
//! | 56 | 8 | `heartbeat_ns` | wall-clock time of the writer's latest heartbeat, ns since the Unix epoch; a heartbeat that stops advancing means the writer is gone |
//! | 64 | 8 | `instruments` | slots in use: slots `0 .. instruments` are initialised (stored with Release after the slot is written) |
//! | 72 | 8 | `flags` | bit 0 `STALE`: the feed is down, books are the last known state (since `stale_since_ns`, why in `line_state`); bit 1 `CLOSED`: the writer exited cleanly (the feed ended or a signal stopped it); bit 2 `MAYBE_BAD`: messages were declared lost, any book may be wrong until rebuilt |
//! | 80 | 8 | `behind_ns` | how far publication lags the feed, in ns (0 when keeping up) |
//! | 88 | 8 | `stale_since_ns` | wall-clock time `STALE` was set, ns since the Unix epoch; 0 while not stale |
//! | 96 | 8 | `line_state` | the feed line's state: 0 live, 1 silent, 2 disconnected, 3 reconnecting, 4 ended silent, 5 ended with an error (4 and 5 leave `STALE` set and `CLOSED` clear), 6 isolated by hand (the admin's `POST /feeds/{name}/isolate`), 7 loading a snapshot (the books are being built from a GLIMPSE snapshot: partial until live); a reader treats a code it does not know as stale, since `STALE` is set with it |
//! | 104 | 8 | `maybe_bad_since_ns` | wall-clock time of the first declared loss, ns since the Unix epoch; 0 while `MAYBE_BAD` is clear |
//! | 112 | 8 | `lost_messages` | messages the feed line declared lost so far |
//! | 120 | 8 | `full_publications` | publications lost because every slot was taken (an instrument past `slot_capacity`) |
//!
//! Bytes 0 to 56 never change once the file is in place (the writer builds the file under a
//! temporary name and renames it). Bytes 56 to 128 are independent words, each updated
//! atomically on its own; a reader that wants `STALE` with its since-when reads `flags`, then
//! `stale_since_ns` (the writer stores the time before it sets the flag).
//!
//! One writer per file: the writer holds an advisory lock (`flock`) on `PATH.lock` next to
//! the file for its whole life; a second writer on the same path is refused, naming the
//! holder's pid (written into the lock file). The lock dies with the process, so a restart
//! after `kill -9` needs no manual step.
//!
//! # Slot (`136 + 32 * depth` bytes, slot `i` at offset `header_size + i * slot_size`)
//!
//! Each slot is a seqlock: a sequence word, then the payload. The writer makes the sequence odd,
//! writes the payload words that change, then makes it even (2 more than before). A message
//! that changes a book is one write: an execution's trade fields and the book it changed go
//! out together. A reader loads the sequence; if
//! it is odd it retries; it copies the payload, then loads the sequence again: if unchanged,
//! the copy is consistent; otherwise it retries. A slot whose writer was killed mid-write keeps
//! an odd sequence until a new writer rewrites it: readers bound their retries and report it.
//!
//! | slot offset | payload offset | size | field | meaning |
//! | ---: | ---: | ---: | --- | --- |
//! | 0 | | 8 | `sequence` | seqlock sequence: odd while a write is in progress |
//! | 8 | 0 | 8 | `symbol` | stock symbol, ASCII, space-padded on the right (all spaces before the first `R`) |
//! | 16 | 8 | 2 | `locate` | ITCH stock locate |
//! | 18 | 10 | 1 | `trading_state` | latest `H` state (`T`, `H`, `P`, `Q`), 0 if none seen |
//! | 19 | 11 | 1 | `reserved` | 0 |
//! | 20 | 12 | 4 | `flags` | bit 0 `STALE`: this instrument's feed is down (since the header's `stale_since_ns`); bit 1 `CROSSED`: bid at or above ask; bit 2 `BEHIND`: publication is behind for this instrument; bit 3 `MAYBE_BAD`: messages were declared lost, this book may be wrong until rebuilt |
//! | 24 | 16 | 8 | `feed_seq` | feed sequence number of the last message applied to this book |
//! | 32 | 24 | 8 | `exchange_ts_ns` | ITCH timestamp of that message, ns since midnight |
//! | 40 | 32 | 8 | `updated_ns` | local wall-clock time stamped on the last publication, ns since the Unix epoch (the engine stamps when its book thread took the message published) |
//! | 48 | 40 | 8 | `behind_since_ns` | wall-clock time publication fell behind (ns since the Unix epoch), 0 when `BEHIND` is clear |
//! | 56 | 48 | 8 | `publishes` | publications of this slot so far (an activity count) |
//! | 64 | 56 | 4 | `bid_levels` | bid levels present in the ladder below (at most `depth`) |
//! | 68 | 60 | 4 | `ask_levels` | ask levels present in the ladder below (at most `depth`) |
//! | 72 | 64 | 16 | `best_bid` | the best bid as a level record (below); all zero when the bid is empty |
//! | 88 | 80 | 16 | `best_ask` | the best ask as a level record; all zero when the ask is empty |
//! | 104 | 96 | 4 | `last_trade_px` | price of the last trade (E, C or P), 1/10,000 dollars |
//! | 108 | 100 | 4 | `last_trade_shares` | its shares |
//! | 112 | 104 | 8 | `last_trade_ts_ns` | its ITCH timestamp, ns since midnight |
//! | 120 | 112 | 8 | `trades` | trades recorded so far (0: no last trade) |
//! | 128 | 120 | 8 | `traded_shares` | shares traded so far |
//! | 136 | 128 | 16 × depth | `bids` | bid levels, best first; records past `bid_levels` are zero |
//! | 136 + 16 × depth | 128 + 16 × depth | 16 × depth | `asks` | ask levels, best first; records past `ask_levels` are zero |
//!
//! A level record is 16 bytes: `price` (u32, 1/10,000 dollars) at 0, `orders` (u32) at 4,
//! `qty` (u64, aggregate open shares) at 8.

use core::mem::size_of;

use bytemuck::{Pod, Zeroable};

/// The first 8 bytes of every snapshot file.
pub const MAGIC: [u8; 8] = *b"TICKLANE";

/// The layout version this code writes and reads. Any change to a field's offset, size or
/// meaning bumps it.
pub const LAYOUT_VERSION: u32 = 2;

/// Written in native order; a reader of the other endianness sees `0x0403_0201`.
pub const BYTE_ORDER_MARK: u32 = 0x0102_0304;

/// Bytes in the header; slot 0 starts here.
pub const HEADER_SIZE: usize = size_of::<SnapshotHeader>();

/// Bytes in a slot before its ladders: the sequence word and the fixed payload.
pub const SLOT_FIXED_SIZE: usize = 8 + size_of::<SlotPayload>();

/// Bytes in one level record.
pub const LEVEL_SIZE: usize = size_of::<LevelRecord>();

/// Levels per side when none is asked for.
pub const DEFAULT_DEPTH: usize = 10;

/// Most levels per side a file may keep: a slot then spans 32 KiB, already far more than a
/// reader wants to copy under a seqlock.
pub const MAX_DEPTH: usize = 1024;

/// Most slots a file may hold: one per ITCH locate.
pub const MAX_CAPACITY: usize = 1 << 16;

/// Header `flags` bit: the feed is down; the books are the last known state.
pub const HEADER_STALE: u64 = 1 << 0;
/// Header `flags` bit: the writer exited cleanly; nothing will change any more.
pub const HEADER_CLOSED: u64 = 1 << 1;
/// Header `flags` bit: messages were declared lost; any book may be wrong until rebuilt.
pub const HEADER_MAYBE_BAD: u64 = 1 << 2;

/// Slot `flags` bit: this instrument's feed is down; its book is the last known state.
pub const SLOT_STALE: u32 = 1 << 0;
/// Slot `flags` bit: the book is crossed (best bid at or above best ask).
pub const SLOT_CROSSED: u32 = 1 << 1;
/// Slot `flags` bit: publication of this instrument is behind (see `behind_since_ns`).
pub const SLOT_BEHIND: u32 = 1 << 2;
/// Slot `flags` bit: messages were declared lost; this book may be wrong until rebuilt (as
/// Databento's `MAYBE_BAD_BOOK`).
pub const SLOT_MAYBE_BAD: u32 = 1 << 3;

/// The file header, exactly as it lies at offset 0 (see the [module docs](self)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
#[repr(C)]
pub struct SnapshotHeader {
    /// [`MAGIC`].
    pub magic: [u8; 8],
    /// [`LAYOUT_VERSION`].
    pub layout_version: u32,
    /// [`BYTE_ORDER_MARK`] in the writer's byte order.
    pub byte_order: u32,
    /// [`HEADER_SIZE`].
    pub header_size: u32,
    /// Bytes per slot: [`Geometry::slot_size`].
    pub slot_size: u32,
    /// Slots in the file.
    pub slot_capacity: u32,
    /// Levels per side in each slot.
    pub depth: u32,
    /// Bytes the file needs: [`Geometry::file_size`].
    pub file_size: u64,
    /// Process id of the writer.
    pub writer_pid: u32,
    /// Zero.
    pub reserved0: u32,
    /// Creation time, wall-clock ns since the Unix epoch.
    pub created_ns: u64,
    /// Latest heartbeat, wall-clock ns since the Unix epoch.
    pub heartbeat_ns: u64,
    /// Slots in use: `0 .. instruments` are initialised.
    pub instruments: u64,
    /// [`HEADER_STALE`], [`HEADER_CLOSED`].
    pub flags: u64,
    /// How far publication lags the feed, in ns.
    pub behind_ns: u64,
    /// When `STALE` was set, wall-clock ns since the Unix epoch; 0 while not stale.
    pub stale_since_ns: u64,
    /// The feed line's state, a [`LineState`] code.
    pub line_state: u64,
    /// When the first loss was declared, wall-clock ns since the Unix epoch; 0 if none.
    pub maybe_bad_since_ns: u64,
    /// Messages the feed line declared lost so far.
    pub lost_messages: u64,
    /// Publications lost because every slot was taken.
    pub full_publications: u64,
}

impl SnapshotHeader {
    /// The engine-wide `STALE` flag: the feed is down; books are the last known state.
    pub fn is_stale(&self) -> bool {
        self.flags & HEADER_STALE != 0
    }

    /// The `CLOSED` flag: the writer exited cleanly.
    pub fn is_closed(&self) -> bool {
        self.flags & HEADER_CLOSED != 0
    }

    /// The `MAYBE_BAD` flag: messages were declared lost; any book may be wrong.
    pub fn is_maybe_bad(&self) -> bool {
        self.flags & HEADER_MAYBE_BAD != 0
    }

    /// When the feed went stale (wall-clock ns since the Unix epoch), while it is.
    pub fn stale_since(&self) -> Option<u64> {
        (self.is_stale() && self.stale_since_ns != 0).then_some(self.stale_since_ns)
    }

    /// The feed line's state; `None` for a code this reader does not know.
    pub fn line(&self) -> Option<LineState> {
        LineState::from_code(self.line_state)
    }
}

/// A feed line's state as the snapshot header records it (`line_state`).
///
/// Every state but [`LineState::Live`] means the books are the last known state, not live:
/// the header and every slot carry `STALE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum LineState {
    /// Data (or heartbeats) arriving.
    Live = 0,
    /// Nothing arrived, not even a heartbeat, for the line's stale threshold.
    Silent = 1,
    /// The connection is down (SoupBinTCP) and not yet being made again.
    Disconnected = 2,
    /// The connection is being made again (SoupBinTCP).
    Reconnecting = 3,
    /// The line ended because it went silent: the writer is gone, the books are stale, and
    /// `CLOSED` stays clear.
    EndedSilent = 4,
    /// The line ended with a runtime error: as [`LineState::EndedSilent`].
    EndedError = 5,
    /// Isolated by hand (an operator's `isolate`): its packets are ignored, or its
    /// connection closed, until closed by hand.
    Isolated = 6,
    /// The books are being built from a snapshot (GLIMPSE), at the start or to rebuild them
    /// after a gap the retransmission server could not fill: partial until live again.
    Snapshot = 7,
}

impl LineState {
    /// The header's code for this state.
    pub const fn code(self) -> u64 {
        self as u64
    }

    /// The state of a header code; `None` if unknown.
    pub const fn from_code(code: u64) -> Option<Self> {
        Some(match code {
            0 => LineState::Live,
            1 => LineState::Silent,
            2 => LineState::Disconnected,
            3 => LineState::Reconnecting,
            4 => LineState::EndedSilent,
            5 => LineState::EndedError,
            6 => LineState::Isolated,
            7 => LineState::Snapshot,
            _ => return None,
        })
    }

    /// Whether the books are stale in this state (every state but live).
    pub const fn is_stale(self) -> bool {
        !matches!(self, LineState::Live)
    }

    /// Whether the line ended badly in this state (the file must not say `CLOSED`).
    pub const fn is_failed_end(self) -> bool {
        matches!(self, LineState::EndedSilent | LineState::EndedError)
    }

    /// A word for people: `live`, `silent`, `disconnected`, `reconnecting`, `ended silent`,
    /// `ended with an error`, `isolated`, `loading snapshot`.
    pub const fn as_str(self) -> &'static str {
        match self {
            LineState::Live => "live",
            LineState::Silent => "silent",
            LineState::Disconnected => "disconnected",
            LineState::Reconnecting => "reconnecting",
            LineState::EndedSilent => "ended silent",
            LineState::EndedError => "ended with an error",
            LineState::Isolated => "isolated",
            LineState::Snapshot => "loading snapshot",
        }
    }
}

/// Word index (offset / 8) of [`SnapshotHeader::heartbeat_ns`].
pub const HEARTBEAT_WORD: usize = core::mem::offset_of!(SnapshotHeader, heartbeat_ns) / 8;
/// Word index of [`SnapshotHeader::instruments`].
pub const INSTRUMENTS_WORD: usize = core::mem::offset_of!(SnapshotHeader, instruments) / 8;
/// Word index of [`SnapshotHeader::flags`].
pub const FLAGS_WORD: usize = core::mem::offset_of!(SnapshotHeader, flags) / 8;
/// Word index of [`SnapshotHeader::behind_ns`].
pub const BEHIND_WORD: usize = core::mem::offset_of!(SnapshotHeader, behind_ns) / 8;
/// Word index of [`SnapshotHeader::stale_since_ns`].
pub const STALE_SINCE_WORD: usize = core::mem::offset_of!(SnapshotHeader, stale_since_ns) / 8;
/// Word index of [`SnapshotHeader::line_state`].
pub const LINE_STATE_WORD: usize = core::mem::offset_of!(SnapshotHeader, line_state) / 8;
/// Word index of [`SnapshotHeader::maybe_bad_since_ns`].
pub const MAYBE_BAD_SINCE_WORD: usize =
    core::mem::offset_of!(SnapshotHeader, maybe_bad_since_ns) / 8;
/// Word index of [`SnapshotHeader::lost_messages`].
pub const LOST_WORD: usize = core::mem::offset_of!(SnapshotHeader, lost_messages) / 8;
/// Word index of [`SnapshotHeader::full_publications`].
pub const FULL_WORD: usize = core::mem::offset_of!(SnapshotHeader, full_publications) / 8;
/// Header words before the first one that changes after creation.
pub const STATIC_HEADER_WORDS: usize = HEARTBEAT_WORD;

/// One price level in a slot's ladder: the same shape as the engine's own level.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
#[repr(C)]
pub struct LevelRecord {
    /// Limit price, 1/10,000 dollars.
    pub price: u32,
    /// Orders resting at the level.
    pub orders: u32,
    /// Aggregate open shares.
    pub qty: u64,
}

/// A slot's fixed payload, exactly as it lies 8 bytes into the slot, after the sequence word;
/// the ladders follow it (see the [module docs](self)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
#[repr(C)]
pub struct SlotPayload {
    /// Symbol, space-padded ASCII.
    pub symbol: [u8; 8],
    /// ITCH stock locate.
    pub locate: u16,
    /// Latest `H` trading state, 0 if none seen.
    pub trading_state: u8,
    /// Zero.
    pub reserved: u8,
    /// [`SLOT_STALE`], [`SLOT_CROSSED`], [`SLOT_BEHIND`], [`SLOT_MAYBE_BAD`].
    pub flags: u32,
    /// Feed sequence number of the last message applied.
    pub feed_seq: u64,
    /// ITCH timestamp of that message, ns since midnight.
    pub exchange_ts_ns: u64,
    /// Local wall-clock time of the last publication, ns since the Unix epoch.
    pub updated_ns: u64,
    /// When publication fell behind, wall-clock ns since the Unix epoch; 0 if not behind.
    pub behind_since_ns: u64,
    /// Publications of this slot so far.
    pub publishes: u64,
    /// Bid levels present in the ladder.
    pub bid_levels: u32,
    /// Ask levels present in the ladder.
    pub ask_levels: u32,
    /// Best bid (zero when the bid is empty).
    pub best_bid: LevelRecord,
    /// Best ask (zero when the ask is empty).
    pub best_ask: LevelRecord,
    /// Price of the last trade, 1/10,000 dollars.
    pub last_trade_px: u32,
    /// Shares of the last trade.
    pub last_trade_shares: u32,
    /// ITCH timestamp of the last trade, ns since midnight.
    pub last_trade_ts_ns: u64,
    /// Trades recorded so far.
    pub trades: u64,
    /// Shares traded so far.
    pub traded_shares: u64,
}

/// Payload words in the fixed part of a slot.
pub const FIXED_PAYLOAD_WORDS: usize = size_of::<SlotPayload>() / 8;

// The seqlock moves whole words: every record must tile them exactly.
const _: () = assert!(size_of::<SlotPayload>().is_multiple_of(8));
const _: () = assert!(size_of::<LevelRecord>().is_multiple_of(8));
const _: () = assert!(size_of::<SnapshotHeader>().is_multiple_of(8));

/// The sizes that follow from a file's capacity and depth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Slots in the file.
    pub capacity: usize,
    /// Levels per side in each slot.
    pub depth: usize,
}

impl Geometry {
    /// Bytes per slot: the sequence word, the fixed payload, then `depth` levels per side.
    pub const fn slot_size(&self) -> usize {
        SLOT_FIXED_SIZE + 2 * self.depth * LEVEL_SIZE
    }

    /// Payload words per slot (the sequence word excluded).
    pub const fn payload_words(&self) -> usize {
        self.slot_size() / 8 - 1
    }

    /// Bytes in the whole file.
    pub const fn file_size(&self) -> usize {
        HEADER_SIZE + self.capacity * self.slot_size()
    }

    /// Byte offset of slot `index` in the file.
    pub const fn slot_offset(&self, index: usize) -> usize {
        HEADER_SIZE + index * self.slot_size()
    }

    /// Word range (byte offset / 8) of slot `index` in the file: its sequence word, then its
    /// payload.
    pub const fn slot_words(&self, index: usize) -> core::ops::Range<usize> {
        let start = self.slot_offset(index) / 8;
        start..start + self.slot_size() / 8
    }

    /// Byte offset of the first bid record inside a slot.
    pub const fn bids_offset(&self) -> usize {
        SLOT_FIXED_SIZE
    }

    /// Byte offset of the first ask record inside a slot.
    pub const fn asks_offset(&self) -> usize {
        SLOT_FIXED_SIZE + self.depth * LEVEL_SIZE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::offset_of;

    #[test]
    fn header_offsets_are_pinned() {
        assert_eq!(HEADER_SIZE, 128);
        assert_eq!(offset_of!(SnapshotHeader, magic), 0);
        assert_eq!(offset_of!(SnapshotHeader, layout_version), 8);
        assert_eq!(offset_of!(SnapshotHeader, byte_order), 12);
        assert_eq!(offset_of!(SnapshotHeader, header_size), 16);
        assert_eq!(offset_of!(SnapshotHeader, slot_size), 20);
        assert_eq!(offset_of!(SnapshotHeader, slot_capacity), 24);
        assert_eq!(offset_of!(SnapshotHeader, depth), 28);
        assert_eq!(offset_of!(SnapshotHeader, file_size), 32);
        assert_eq!(offset_of!(SnapshotHeader, writer_pid), 40);
        assert_eq!(offset_of!(SnapshotHeader, created_ns), 48);
        assert_eq!(offset_of!(SnapshotHeader, heartbeat_ns), 56);
        assert_eq!(offset_of!(SnapshotHeader, instruments), 64);
        assert_eq!(offset_of!(SnapshotHeader, flags), 72);
        assert_eq!(offset_of!(SnapshotHeader, behind_ns), 80);
        assert_eq!(offset_of!(SnapshotHeader, stale_since_ns), 88);
        assert_eq!(offset_of!(SnapshotHeader, line_state), 96);
        assert_eq!(offset_of!(SnapshotHeader, maybe_bad_since_ns), 104);
        assert_eq!(offset_of!(SnapshotHeader, lost_messages), 112);
        assert_eq!(offset_of!(SnapshotHeader, full_publications), 120);
        assert_eq!(
            (HEARTBEAT_WORD, INSTRUMENTS_WORD, FLAGS_WORD, BEHIND_WORD),
            (7, 8, 9, 10)
        );
        assert_eq!(
            (
                STALE_SINCE_WORD,
                LINE_STATE_WORD,
                MAYBE_BAD_SINCE_WORD,
                LOST_WORD,
                FULL_WORD
            ),
            (11, 12, 13, 14, 15)
        );
    }

    #[test]
    fn slot_offsets_are_pinned() {
        assert_eq!(size_of::<SlotPayload>(), 128);
        assert_eq!(size_of::<LevelRecord>(), 16);
        assert_eq!(offset_of!(SlotPayload, symbol), 0);
        assert_eq!(offset_of!(SlotPayload, locate), 8);
        assert_eq!(offset_of!(SlotPayload, trading_state), 10);
        assert_eq!(offset_of!(SlotPayload, flags), 12);
        assert_eq!(offset_of!(SlotPayload, feed_seq), 16);
        assert_eq!(offset_of!(SlotPayload, exchange_ts_ns), 24);
        assert_eq!(offset_of!(SlotPayload, updated_ns), 32);
        assert_eq!(offset_of!(SlotPayload, behind_since_ns), 40);
        assert_eq!(offset_of!(SlotPayload, publishes), 48);
        assert_eq!(offset_of!(SlotPayload, bid_levels), 56);
        assert_eq!(offset_of!(SlotPayload, ask_levels), 60);
        assert_eq!(offset_of!(SlotPayload, best_bid), 64);
        assert_eq!(offset_of!(SlotPayload, best_ask), 80);
        assert_eq!(offset_of!(SlotPayload, last_trade_px), 96);
        assert_eq!(offset_of!(SlotPayload, last_trade_shares), 100);
        assert_eq!(offset_of!(SlotPayload, last_trade_ts_ns), 104);
        assert_eq!(offset_of!(SlotPayload, trades), 112);
        assert_eq!(offset_of!(SlotPayload, traded_shares), 120);
        assert_eq!(offset_of!(LevelRecord, price), 0);
        assert_eq!(offset_of!(LevelRecord, orders), 4);
        assert_eq!(offset_of!(LevelRecord, qty), 8);
    }

    #[test]
    fn geometry_follows_depth() {
        let g = Geometry {
            capacity: 3,
            depth: DEFAULT_DEPTH,
        };
        assert_eq!(g.slot_size(), 456);
        assert_eq!(g.payload_words(), 56);
        assert_eq!(g.file_size(), 128 + 3 * 456);
        assert_eq!(g.slot_offset(2), 128 + 2 * 456);
        assert_eq!((g.bids_offset(), g.asks_offset()), (136, 296));
        assert_eq!(g.slot_words(0), 16..73);
        assert_eq!(g.slot_words(2), (128 + 2 * 456) / 8..(128 + 3 * 456) / 8);
        let one = Geometry {
            capacity: 1,
            depth: 1,
        };
        assert_eq!(one.slot_size(), 168);
    }
}
