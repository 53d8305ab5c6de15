//! One stock's depth at a boundary, as every sample format writes it ([`StockDepth`]):
//! read from the books by the one-thread sampler ([`DepthReader`]), or captured by a book
//! thread of `replay --threads` at each sample point and written later, in locate order
//! among every thread's stocks, by the merge thread ([`CapturedDepths`]).

use ticklane_itch::{Locate, Stock};

use crate::output_filter::OutputFilter;
use ticklane_book::{Books, LevelView, Side};

/// One stock's top levels a side, best first (at most the sample's depth each).
#[derive(Clone, Copy, Debug)]
pub struct StockDepth<'a> {
    pub locate: Locate,
    /// The ticker, trimmed.
    pub symbol: &'a [u8],
    pub bids: &'a [LevelView],
    pub asks: &'a [LevelView],
}

impl StockDepth<'_> {
    /// One side's levels.
    pub fn side(&self, side: Side) -> &[LevelView] {
        match side {
            Side::Bid => self.bids,
            Side::Ask => self.asks,
        }
    }
}

/// Appends the top `depth` levels of `locate`'s `side` to `into`; how many.
fn read_side(
    books: &Books,
    locate: Locate,
    side: Side,
    depth: usize,
    into: &mut Vec<LevelView>,
) -> usize {
    let before = into.len();
    if let Some(ladder) = books.side(locate, side) {
        into.extend(ladder.best_first().take(depth));
    }
    into.len() - before
}

/// Reads stocks' depths from the books into buffers it reuses.
#[derive(Debug, Default)]
pub struct DepthReader {
    bids: Vec<LevelView>,
    asks: Vec<LevelView>,
}

impl DepthReader {
    /// `locate`'s top `depth` levels a side in `books`.
    pub fn read<'a>(
        &'a mut self,
        books: &'a Books,
        locate: Locate,
        depth: usize,
    ) -> StockDepth<'a> {
        self.bids.clear();
        self.asks.clear();
        read_side(books, locate, Side::Bid, depth, &mut self.bids);
        read_side(books, locate, Side::Ask, depth, &mut self.asks);
        StockDepth {
            locate,
            symbol: books.symbol(locate),
            bids: &self.bids,
            asks: &self.asks,
        }
    }
}

/// One captured stock.
#[derive(Clone, Copy, Debug)]
pub struct CapturedStock {
    /// The sample point it was captured at (its number in the batch).
    point: u32,
    locate: Locate,
    symbol: Stock,
    /// Its levels in [`CapturedDepths::levels`]: bids from `at`, then asks.
    at: usize,
    bids: u32,
    asks: u32,
}

/// The depths of one book thread's stocks at the sample points of one batch, in point
/// order and, within a point, in locate order; reused batch after batch.
#[derive(Debug, Default)]
pub struct CapturedDepths {
    stocks: Vec<CapturedStock>,
    levels: Vec<LevelView>,
}

impl CapturedDepths {
    /// Forgets every depth, keeping the storage.
    pub fn clear(&mut self) {
        self.stocks.clear();
        self.levels.clear();
    }

    /// Captures, as sample point `point`, every stock of `books` that `filter` keeps, at
    /// `depth` levels a side.
    pub fn capture(&mut self, point: u32, books: &Books, depth: usize, filter: &OutputFilter) {
        for locate in books.locates() {
            if !filter.keeps_symbol(books.symbol(locate)) {
                continue;
            }
            let at = self.levels.len();
            let bids = read_side(books, locate, Side::Bid, depth, &mut self.levels);
            let asks = read_side(books, locate, Side::Ask, depth, &mut self.levels);
            self.stocks.push(CapturedStock {
                point,
                locate,
                symbol: books.symbol_raw(locate),
                at,
                // At most a ladder's levels a side (`--levels-per-side`): far below 4 G.
                bids: bids as u32,
                asks: asks as u32,
            });
        }
    }

    /// The stocks captured at `point`, starting the search at `*cursor` (the first stock
    /// not yet read; points are read in order) and moving it past them.
    pub fn at_point(&self, point: u32, cursor: &mut usize) -> &[CapturedStock] {
        let start = *cursor;
        let len = self.stocks[start..]
            .iter()
            .take_while(|s| s.point == point)
            .count();
        *cursor = start + len;
        &self.stocks[start..start + len]
    }

    /// The depth of `stock`.
    pub fn depth<'a>(&'a self, stock: &'a CapturedStock) -> StockDepth<'a> {
        let s = stock;
        let bids = s.at;
        let asks = bids + s.bids as usize;
        StockDepth {
            locate: s.locate,
            symbol: s.symbol.trimmed(),
            bids: &self.levels[bids..asks],
            asks: &self.levels[asks..asks + s.asks as usize],
        }
    }
}

impl CapturedStock {
    /// Its locate: the merge thread places every thread's stocks of a point in locate order.
    pub fn locate(&self) -> Locate {
        self.locate
    }
}
