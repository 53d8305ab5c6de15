//! The best bid and offer of one book, as the outputs compare and print it.

use ticklane_itch::Price;

use super::ladder::LevelView;

/// Best bid and best offer, each as price, aggregate shares and order count. An empty side
/// is all zero, which is also how a stock compares before its first published row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TopOfBook {
    /// Best bid level (zero when the bid is empty).
    pub bid: LevelView,
    /// Best ask level (zero when the ask is empty).
    pub ask: LevelView,
}

impl TopOfBook {
    /// Builds the top from each side's best level, if any.
    #[inline(always)]
    pub fn new(bid: Option<LevelView>, ask: Option<LevelView>) -> Self {
        TopOfBook {
            bid: bid.unwrap_or_default(),
            ask: ask.unwrap_or_default(),
        }
    }

    /// True when both sides are present and the bid is at or above the ask.
    #[inline(always)]
    pub fn is_crossed(&self) -> bool {
        self.bid.orders > 0 && self.ask.orders > 0 && self.bid.price >= self.ask.price
    }

    /// Best bid price, if the bid has orders.
    pub fn bid_price(&self) -> Option<Price> {
        (self.bid.orders > 0).then_some(self.bid.price)
    }

    /// Best ask price, if the ask has orders.
    pub fn ask_price(&self) -> Option<Price> {
        (self.ask.orders > 0).then_some(self.ask.price)
    }
}
