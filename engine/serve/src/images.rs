//! Where the server takes a subscriber's initial book image and the symbol list from.
//!
//! The live server reads the snapshot ([`SnapshotImages`]): it holds every book's levels and
//! its STALE / MAYBE_BAD flags, and a reader copies a slot out lock-free, off the book
//! thread, without allocating once its scratch is warm. Tests hand in their own source.
//!
//! An image is as deep as the snapshot: `snapshot.depth` levels per side at most (10 by
//! default). A side that fills that depth carries [`IMAGE_AT_DEPTH`]: the book may hold
//! more levels than the image shows, and a deeper image needs a larger `snapshot.depth`.
#![forbid(unsafe_code)]

use ticklane_feed::itch::Price;

use super::protocol::{IMAGE_AT_DEPTH, IMAGE_MAYBE_BAD, IMAGE_STALE};
use ticklane_book::LevelView;
use ticklane_snapshot::{LevelRecord, SlotPayload, SnapshotReader};

/// One instrument's book as an image source holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BookImage<'a> {
    /// Symbol, space padded.
    pub symbol: [u8; 8],
    /// ITCH stock locate.
    pub locate: u16,
    /// [`IMAGE_STALE`], [`IMAGE_MAYBE_BAD`], [`IMAGE_AT_DEPTH`].
    pub flags: u8,
    /// `H`, `P`, `Q`, `T`; 0 if none seen.
    pub trading_state: u8,
    /// Feed sequence number of the last message applied: the server skips updates at or
    /// below it, since the image already holds them.
    pub feed_seq: u64,
    /// Bid levels, best first.
    pub bids: &'a [LevelView],
    /// Ask levels, best first.
    pub asks: &'a [LevelView],
}

/// A source of book images and of the symbol list. Called on the server thread only.
pub trait ImageSource: Send {
    /// Hands `symbol`'s image to `view`; `false` if no such instrument (yet).
    fn image(&mut self, symbol: &[u8; 8], view: &mut dyn FnMut(&BookImage<'_>)) -> bool;

    /// Calls `each` with every symbol known, in a stable order.
    fn symbols(&mut self, each: &mut dyn FnMut(&[u8; 8]));
}

/// Images from the snapshot file the engine writes.
pub struct SnapshotImages {
    reader: SnapshotReader,
    /// Levels per side the snapshot holds (`snapshot.depth`).
    depth: usize,
    words: Vec<u64>,
    bids: Vec<LevelView>,
    asks: Vec<LevelView>,
}

impl std::fmt::Debug for SnapshotImages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SnapshotImages")
            .field("path", &self.reader.path())
            .finish_non_exhaustive()
    }
}

impl SnapshotImages {
    /// Images from `reader`; allocates its scratch (the ladders at the file's depth) here.
    pub fn new(reader: SnapshotReader) -> Self {
        let depth = reader.depth();
        SnapshotImages {
            reader,
            depth,
            words: Vec::new(),
            bids: Vec::with_capacity(depth),
            asks: Vec::with_capacity(depth),
        }
    }
}

fn fill(out: &mut Vec<LevelView>, records: &[LevelRecord], live: u32) {
    out.clear();
    out.extend(records.iter().take(live as usize).map(|r| LevelView {
        price: Price(r.price),
        qty: r.qty,
        orders: r.orders,
    }));
}

/// The image's flags: the slot's STALE and MAYBE_BAD, and [`IMAGE_AT_DEPTH`] when a side
/// fills the snapshot's `depth`.
fn image_flags(payload: &SlotPayload, depth: usize) -> u8 {
    let mut flags = 0;
    if payload.bid_levels as usize >= depth || payload.ask_levels as usize >= depth {
        flags |= IMAGE_AT_DEPTH;
    }
    if payload.flags & ticklane_snapshot::layout::SLOT_STALE != 0 {
        flags |= IMAGE_STALE;
    }
    if payload.flags & ticklane_snapshot::layout::SLOT_MAYBE_BAD != 0 {
        flags |= IMAGE_MAYBE_BAD;
    }
    flags
}

impl ImageSource for SnapshotImages {
    fn image(&mut self, symbol: &[u8; 8], view: &mut dyn FnMut(&BookImage<'_>)) -> bool {
        let trimmed = ticklane_feed::itch::Alpha::<8>::trim(symbol);
        let Some(slot) = self.reader.find(trimmed) else {
            return false;
        };
        let (bids, asks, depth) = (&mut self.bids, &mut self.asks, self.depth);
        let read = self
            .reader
            .read_with(slot, &mut self.words, |_, payload, b, a| {
                fill(bids, b, payload.bid_levels);
                fill(asks, a, payload.ask_levels);
                (
                    payload.symbol,
                    payload.locate,
                    image_flags(payload, depth),
                    payload.trading_state,
                    payload.feed_seq,
                )
            });
        let Ok((symbol, locate, flags, trading_state, feed_seq)) = read else {
            return false;
        };
        view(&BookImage {
            symbol,
            locate,
            flags,
            trading_state,
            feed_seq,
            bids: &self.bids,
            asks: &self.asks,
        });
        true
    }

    fn symbols(&mut self, each: &mut dyn FnMut(&[u8; 8])) {
        for slot in self.reader.slots() {
            if let Ok(symbol) = self
                .reader
                .read_with(slot, &mut self.words, |_, payload, _, _| payload.symbol)
            {
                each(&symbol);
            }
        }
    }
}
