//! One side of one book as price levels: a sorted array in a window of the books' level
//! arena (the books move a full window into a larger one; see `Books::grow_window`).
//!
//! Levels are kept sorted by a key that puts the best price last on both sides (the bid's
//! key is its price, the ask's is the price's bitwise complement), so the touch is at the
//! end of the array: adds and removals near the touch, where nearly all of them happen,
//! move only the few levels behind them, and the search for a price starts at the touch.

use bytemuck::{Pod, Zeroable};
use ticklane_itch::Price;

use super::order_table::Side;

/// One price level: its aggregate shares (64 bits: many large orders can pass 2^32) and how
/// many orders rest there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
#[repr(C)]
pub struct Level {
    /// `price` for bids, `!price` for asks: ascending order puts the best level last.
    key: u32,
    /// Orders resting at the level; at least 1 while the level is in the ladder.
    orders: u32,
    /// Sum of the open shares of those orders.
    qty: u64,
}

const _: () = assert!(core::mem::size_of::<Level>() == 16);

/// A level as readers see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct LevelView {
    /// Limit price of the level.
    pub price: Price,
    /// Aggregate open shares.
    pub qty: u64,
    /// Number of orders.
    pub orders: u32,
}

/// Which level of a side a change landed on. Only a change at the best level can move the
/// top of book, so callers skip re-reading the top (and the crossing check, and the
/// top-of-book row comparison) for the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Touched {
    /// The best level: changed, opened as the new best, or removed.
    Best,
    /// A level behind the best; the top of book is as it was.
    Behind,
}

impl Touched {
    #[inline(always)]
    fn at(index: usize, best: usize) -> Self {
        if index == best {
            Touched::Best
        } else {
            Touched::Behind
        }
    }
}

/// The ladder's window is full: a new price level has no room.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LadderFull;

#[inline(always)]
fn key_of(side: Side, price: Price) -> u32 {
    match side {
        Side::Bid => price.0,
        Side::Ask => !price.0,
    }
}

#[inline(always)]
fn view(side: Side, level: &Level) -> LevelView {
    LevelView {
        price: Price(key_of(side, Price(level.key))),
        qty: level.qty,
        orders: level.orders,
    }
}

/// Where `key` is in the sorted `levels`: `Ok(index)` if present, else `Err(insert_at)`.
#[inline(always)]
fn search(levels: &[Level], key: u32) -> Result<usize, usize> {
    // Walk down from the touch a few levels; only a deep price falls back to bisection. 16,
    // not 8: on a full day's wide books many changes land 8-16 levels deep, where a
    // bisection of a cold ladder is a chain of dependent misses and the walk is a sequential
    // read of lines the prefetch stages asked for (10M full day 1.27 -> 1.16 s).
    const WALK: usize = 16;
    let n = levels.len();
    let floor = n.saturating_sub(WALK);
    let mut i = n;
    while i > floor {
        let k = levels[i - 1].key;
        if k == key {
            return Ok(i - 1);
        }
        if k < key {
            return Err(i);
        }
        i -= 1;
    }
    levels[..floor].binary_search_by(|l| l.key.cmp(&key))
}

/// One side of a book, mutable: a window of `levels` of which the first `*len` are live.
pub struct PriceLadder<'a> {
    side: Side,
    /// The whole window; `levels[..*len]` sorted by strictly ascending key.
    levels: &'a mut [Level],
    len: &'a mut u32,
}

impl<'a> PriceLadder<'a> {
    /// Wraps a side's window and its live-level count.
    #[inline(always)]
    pub fn new(side: Side, levels: &'a mut [Level], len: &'a mut u32) -> Self {
        debug_assert!(*len as usize <= levels.len());
        PriceLadder { side, levels, len }
    }

    /// Adds one order of `shares` at `price`, opening the level if needed, and says which
    /// level it landed on.
    ///
    /// # Errors
    ///
    /// [`LadderFull`] if the level is new and the window has no room; nothing changes.
    #[inline(always)]
    pub fn add(&mut self, price: Price, shares: u32) -> Result<Touched, LadderFull> {
        let key = key_of(self.side, price);
        let n = *self.len as usize;
        match search(&self.levels[..n], key) {
            Ok(i) => {
                let level = &mut self.levels[i];
                level.qty += u64::from(shares);
                level.orders += 1;
                Ok(Touched::at(i, n - 1))
            }
            Err(at) => {
                if n == self.levels.len() {
                    return Err(LadderFull);
                }
                self.levels.copy_within(at..n, at + 1);
                self.levels[at] = Level {
                    key,
                    orders: 1,
                    qty: u64::from(shares),
                };
                *self.len += 1;
                // Inserted at the end: the new level is the best.
                Ok(Touched::at(at, n))
            }
        }
    }

    /// Takes `shares` off the level at `price`; `order_left` says the order's last shares
    /// went, so the level loses an order (and leaves when it has none).
    ///
    /// Says which level it was. The caller holds the order, so its level exists; if it does
    /// not (a broken invariant) nothing changes and `None` comes back.
    #[inline(always)]
    pub fn reduce(&mut self, price: Price, shares: u32, order_left: bool) -> Option<Touched> {
        let key = key_of(self.side, price);
        let n = *self.len as usize;
        let Ok(i) = search(&self.levels[..n], key) else {
            debug_assert!(false, "invariant: a live order's level exists");
            return None;
        };
        let level = &mut self.levels[i];
        level.qty -= u64::from(shares);
        if order_left {
            level.orders -= 1;
            if level.orders == 0 {
                debug_assert_eq!(level.qty, 0);
                self.levels.copy_within(i + 1..n, i);
                *self.len -= 1;
            }
        }
        Some(Touched::at(i, n - 1))
    }

    /// The read-only view of this side.
    #[inline(always)]
    pub fn as_view(&self) -> LadderView<'_> {
        LadderView {
            side: self.side,
            levels: &self.levels[..*self.len as usize],
        }
    }
}

/// One side of a book, read-only.
#[derive(Clone, Copy)]
pub struct LadderView<'a> {
    side: Side,
    /// Live levels, sorted with the best last.
    levels: &'a [Level],
}

impl<'a> LadderView<'a> {
    /// Wraps a side's live levels.
    #[inline(always)]
    pub fn new(side: Side, levels: &'a [Level]) -> Self {
        LadderView { side, levels }
    }

    /// The best level, if the side has any.
    #[inline(always)]
    pub fn best(&self) -> Option<LevelView> {
        self.levels.last().map(|l| view(self.side, l))
    }

    /// Number of price levels.
    #[inline]
    pub fn depth(&self) -> usize {
        self.levels.len()
    }

    /// The level at `price`, if one is live (the search starts at the touch, where nearly
    /// every change happens).
    #[inline]
    pub fn level(&self, price: Price) -> Option<LevelView> {
        search(self.levels, key_of(self.side, price))
            .ok()
            .map(|i| view(self.side, &self.levels[i]))
    }

    /// Levels from the best outwards.
    pub fn best_first(&self) -> impl Iterator<Item = LevelView> + 'a {
        let side = self.side;
        self.levels.iter().rev().map(move |l| view(side, l))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ladder_ops(side: Side) -> Vec<LevelView> {
        let mut window = [Level::zeroed(); 4];
        let mut len = 0;
        let mut ladder = PriceLadder::new(side, &mut window, &mut len);
        // Which level each change lands on is worked out by hand from the prices: the
        // best is the highest bid, the lowest ask.
        let best = |bid_best: bool| {
            if bid_best == (side == Side::Bid) {
                Touched::Best
            } else {
                Touched::Behind
            }
        };
        assert_eq!(ladder.add(Price(100), 10), Ok(Touched::Best), "first level");
        assert_eq!(ladder.add(Price(300), 30), Ok(best(true)));
        assert_eq!(ladder.add(Price(200), 20), Ok(Touched::Behind), "middle");
        assert_eq!(ladder.add(Price(200), 5), Ok(Touched::Behind));
        assert_eq!(
            ladder.reduce(Price(100), 10, true),
            Some(best(false)),
            "level 100 leaves"
        );
        ladder.as_view().best_first().collect()
    }

    #[test]
    fn bids_best_is_highest() {
        let levels = ladder_ops(Side::Bid);
        let prices: Vec<u32> = levels.iter().map(|l| l.price.0).collect();
        assert_eq!(prices, [300, 200]);
        assert_eq!(
            levels[1],
            LevelView {
                price: Price(200),
                qty: 25,
                orders: 2
            }
        );
    }

    #[test]
    fn asks_best_is_lowest() {
        let prices: Vec<u32> = ladder_ops(Side::Ask).iter().map(|l| l.price.0).collect();
        assert_eq!(prices, [200, 300]);
    }

    #[test]
    fn full_window_refuses_new_levels_only() {
        let mut window = [Level::zeroed(); 2];
        let mut len = 0;
        let mut ladder = PriceLadder::new(Side::Bid, &mut window, &mut len);
        ladder.add(Price(1), 1).expect("room");
        ladder.add(Price(2), 1).expect("room");
        assert_eq!(ladder.add(Price(3), 1), Err(LadderFull));
        assert_eq!(
            ladder.add(Price(2), 1),
            Ok(Touched::Best),
            "an existing level still takes orders"
        );
        assert_eq!(ladder.as_view().best().map(|l| l.orders), Some(2));
    }

    #[test]
    fn deep_search_matches_linear() {
        let levels: Vec<Level> = (0..100u32)
            .map(|k| Level {
                key: k * 3,
                orders: 1,
                qty: 1,
            })
            .collect();
        for key in 0..310u32 {
            let linear = levels.iter().position(|l| l.key == key).ok_or_else(|| {
                levels
                    .iter()
                    .position(|l| l.key > key)
                    .unwrap_or(levels.len())
            });
            assert_eq!(search(&levels, key), linear, "key {key}");
        }
    }
}
