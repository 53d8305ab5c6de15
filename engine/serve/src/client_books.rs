//! The books a subscriber rebuilds from the server's messages: each symbol's image, then
//! every level update (`V`) on top of it, so that `ticklane subscribe --book-out` can write
//! the final depth in the `replay --book-out` format.
//!
//! An image carries at most `snapshot.depth` levels a side and says when a side filled it
//! (flag `AT_DEPTH`): that side may hold more levels than the image showed, and a level
//! further out that never changes after the image never reaches the client. So a side
//! whose image filled the depth is known exactly only as far as its image's last price
//! (its *horizon*): levels beyond it, even those a `V` named, are never written, and a book
//! whose known levels run out at the horizon before the depth asked for is reported as
//! possibly short instead of written as if it were whole.

use std::collections::{BTreeMap, HashMap};

use crate::protocol::{image_levels, ServerMessage, IMAGE_AT_DEPTH, IMAGE_MAYBE_BAD};
use ticklane_book::{LevelView, Side};

/// One side of a followed book: levels by price, and how far the image knew them.
#[derive(Clone, Debug, Default)]
struct FollowedSide {
    levels: BTreeMap<u32, LevelView>,
    /// The image's last price, when the image filled the depth on this side.
    horizon: Option<u32>,
}

impl FollowedSide {
    fn set(&mut self, level: LevelView) {
        if level.qty == 0 {
            self.levels.remove(&level.price.0);
        } else {
            self.levels.insert(level.price.0, level);
        }
    }

    /// The known levels, best first: bids from the highest price, asks from the lowest;
    /// none beyond the horizon.
    fn best_first(&self, side: Side) -> Box<dyn Iterator<Item = &LevelView> + '_> {
        match (side, self.horizon) {
            (Side::Bid, None) => Box::new(self.levels.values().rev()),
            (Side::Bid, Some(h)) => Box::new(self.levels.range(h..).rev().map(|(_, l)| l)),
            (Side::Ask, None) => Box::new(self.levels.values()),
            (Side::Ask, Some(h)) => Box::new(self.levels.range(..=h).map(|(_, l)| l)),
        }
    }

    /// Whether the best `depth` levels may include one the client was never sent.
    fn may_be_short(&self, side: Side, depth: usize) -> bool {
        self.horizon.is_some() && self.best_first(side).take(depth).count() < depth
    }
}

/// A followed book.
#[derive(Clone, Debug)]
pub struct FollowedBook {
    /// The symbol, space padded.
    pub symbol: [u8; 8],
    /// ITCH stock locate.
    pub locate: u16,
    /// The latest image's flags (`IMAGE_*` in [`crate::protocol`]).
    pub flags: u8,
    /// Whether messages were lost (a sequence gap, or the session ended) since its latest
    /// image: the book may be behind until the next one.
    pub behind: bool,
    bids: FollowedSide,
    asks: FollowedSide,
}

impl FollowedBook {
    /// The best `depth` levels of `side` that the client knows exactly, best first.
    pub fn levels(&self, side: Side, depth: usize) -> impl Iterator<Item = &LevelView> {
        self.side(side).best_first(side).take(depth)
    }

    /// Whether the best `depth` levels of either side may hold one the server never sent
    /// (the image filled `snapshot.depth` there, and levels since went).
    pub fn may_be_short(&self, depth: usize) -> bool {
        self.bids.may_be_short(Side::Bid, depth) || self.asks.may_be_short(Side::Ask, depth)
    }

    /// Whether the server flagged the book maybe wrong (messages declared lost) in its
    /// latest image. (A stale flag is not kept: it says the line was recovering when the
    /// image was taken, and the updates since say where the book went.)
    pub fn is_maybe_bad(&self) -> bool {
        self.flags & IMAGE_MAYBE_BAD != 0
    }

    fn side(&self, side: Side) -> &FollowedSide {
        match side {
            Side::Bid => &self.bids,
            Side::Ask => &self.asks,
        }
    }

    fn side_mut(&mut self, side: Side) -> &mut FollowedSide {
        match side {
            Side::Bid => &mut self.bids,
            Side::Ask => &mut self.asks,
        }
    }
}

/// Every book a subscriber follows, by locate.
#[derive(Clone, Debug, Default)]
pub struct ClientBooks {
    books: BTreeMap<u16, FollowedBook>,
    locates: HashMap<[u8; 8], u16>,
    /// Updates for a symbol with no image yet: never expected, counted.
    orphans: u64,
}

impl ClientBooks {
    /// No books yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies one message from the server; those that do not change a book are ignored.
    pub fn apply(&mut self, message: &ServerMessage<'_>) {
        match *message {
            ServerMessage::BookImage { header, levels } => {
                let bid_count = usize::from(header.bid_levels);
                let filled = usize::from(header.bid_levels.max(header.ask_levels));
                let at_depth = header.flags & IMAGE_AT_DEPTH != 0;
                let mut book = FollowedBook {
                    symbol: header.symbol,
                    locate: header.locate,
                    flags: header.flags,
                    behind: false,
                    bids: FollowedSide::default(),
                    asks: FollowedSide::default(),
                };
                for (i, level) in image_levels(levels).enumerate() {
                    let (side, count) = if i < bid_count {
                        (&mut book.bids, bid_count)
                    } else {
                        (&mut book.asks, usize::from(header.ask_levels))
                    };
                    side.set(level);
                    // The depth is the same for both sides, so the side that filled it is
                    // the one with the most levels.
                    let last = i + 1 == bid_count || i + 1 == bid_count + count;
                    if at_depth && count == filled && last {
                        side.horizon = Some(level.price.0);
                    }
                }
                self.locates.insert(header.symbol, header.locate);
                self.books.insert(header.locate, book);
            }
            ServerMessage::Level {
                symbol,
                side,
                level,
                ..
            } => match self.book_mut(&symbol) {
                Some(book) => book.side_mut(side).set(level),
                None => self.orphans += 1,
            },
            ServerMessage::Quote { symbol, top, .. } => {
                // The top of book agrees with the level updates; an account served only
                // the top gets no level updates, and this keeps its best levels right.
                let Some(book) = self.book_mut(&symbol) else {
                    self.orphans += 1;
                    return;
                };
                for (side, level) in [(Side::Bid, top.bid), (Side::Ask, top.ask)] {
                    let levels = &mut book.side_mut(side).levels;
                    let better = |price: u32| match side {
                        Side::Bid => price > level.price.0 || level.qty == 0,
                        Side::Ask => price < level.price.0 || level.qty == 0,
                    };
                    levels.retain(|&price, _| !better(price));
                    if level.qty != 0 {
                        levels.insert(level.price.0, level);
                    }
                }
            }
            _ => {}
        }
    }

    /// Messages were lost (a gap in the sequence, or the session ended): every book may be
    /// behind until its next image.
    pub fn messages_lost(&mut self) {
        for book in self.books.values_mut() {
            book.behind = true;
        }
    }

    /// The books, by locate.
    pub fn books(&self) -> impl Iterator<Item = &FollowedBook> {
        self.books.values()
    }

    /// Level updates and quotes that came for a symbol with no image.
    pub fn orphans(&self) -> u64 {
        self.orphans
    }

    fn book_mut(&mut self, symbol: &[u8; 8]) -> Option<&mut FollowedBook> {
        let locate = self.locates.get(symbol)?;
        self.books.get_mut(locate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{encode_server, ImageHeader, LEVEL_BYTES};
    use ticklane_book::TopOfBook;
    use ticklane_feed::itch::Price;

    fn level(price: u32, qty: u64, orders: u32) -> LevelView {
        LevelView {
            price: Price(price),
            qty,
            orders,
        }
    }

    const SYMBOL: [u8; 8] = *b"AAPL    ";

    fn image(flags: u8, bids: &[LevelView], asks: &[LevelView]) -> Vec<u8> {
        let header = ImageHeader {
            seq: 1,
            request_id: 1,
            symbol: SYMBOL,
            locate: 7,
            flags,
            trading_state: b'T',
            feed_seq: 10,
            bid_levels: bids.len() as u16,
            ask_levels: asks.len() as u16,
        };
        let mut levels = Vec::new();
        for l in bids.iter().chain(asks) {
            levels.extend_from_slice(&l.price.0.to_be_bytes());
            levels.extend_from_slice(&l.qty.to_be_bytes());
            levels.extend_from_slice(&l.orders.to_be_bytes());
        }
        assert_eq!(levels.len(), (bids.len() + asks.len()) * LEVEL_BYTES);
        let mut frame = Vec::new();
        encode_server(
            &ServerMessage::BookImage {
                header,
                levels: &levels,
            },
            &mut frame,
        );
        frame
    }

    fn apply_image(books: &mut ClientBooks, flags: u8, bids: &[LevelView], asks: &[LevelView]) {
        let frame = image(flags, bids, asks);
        let (message, _) = crate::protocol::decode_server(&frame)
            .expect("decodes")
            .expect("whole");
        books.apply(&message);
    }

    fn set(books: &mut ClientBooks, side: Side, l: LevelView) {
        books.apply(&ServerMessage::Level {
            seq: 2,
            symbol: SYMBOL,
            side,
            level: l,
        });
    }

    fn prices(books: &ClientBooks, side: Side, depth: usize) -> Vec<u32> {
        let book = books.books().next().expect("a book");
        book.levels(side, depth).map(|l| l.price.0).collect()
    }

    #[test]
    fn level_updates_on_an_image_give_the_book_best_first() {
        let mut books = ClientBooks::new();
        apply_image(
            &mut books,
            0,
            &[level(100, 5, 1), level(99, 3, 1)],
            &[level(101, 2, 1)],
        );
        set(&mut books, Side::Bid, level(98, 7, 2));
        set(&mut books, Side::Bid, level(100, 0, 0));
        set(&mut books, Side::Ask, level(103, 1, 1));
        assert_eq!(prices(&books, Side::Bid, 10), [99, 98]);
        assert_eq!(prices(&books, Side::Ask, 10), [101, 103]);
        assert!(!books.books().next().unwrap().may_be_short(10));
    }

    #[test]
    fn a_side_that_filled_the_depth_is_known_only_to_its_horizon() {
        let mut books = ClientBooks::new();
        // Depth 2: the bids filled it, the asks did not.
        apply_image(
            &mut books,
            IMAGE_AT_DEPTH,
            &[level(100, 5, 1), level(99, 3, 1)],
            &[level(101, 2, 1)],
        );
        // A level beyond the bid horizon: known itself, but not what lies before it.
        set(&mut books, Side::Bid, level(97, 4, 1));
        assert_eq!(prices(&books, Side::Bid, 10), [100, 99]);
        let book = books.books().next().unwrap();
        assert!(!book.may_be_short(2));
        assert!(book.may_be_short(3));
        // The best bid goes: the second best is unknown past the horizon.
        set(&mut books, Side::Bid, level(100, 0, 0));
        assert_eq!(prices(&books, Side::Bid, 10), [99]);
        assert!(books.books().next().unwrap().may_be_short(2));
        // The asks were whole: any depth of them is exact.
        set(&mut books, Side::Ask, level(105, 1, 1));
        assert_eq!(prices(&books, Side::Ask, 10), [101, 105]);
    }

    #[test]
    fn a_quote_sets_the_best_levels() {
        let mut books = ClientBooks::new();
        apply_image(&mut books, 0, &[level(100, 5, 1)], &[level(101, 2, 1)]);
        books.apply(&ServerMessage::Quote {
            seq: 3,
            symbol: SYMBOL,
            top: TopOfBook {
                bid: level(99, 1, 1),
                ask: level(0, 0, 0),
            },
        });
        assert_eq!(prices(&books, Side::Bid, 10), [99]);
        assert!(prices(&books, Side::Ask, 10).is_empty());
    }

    #[test]
    fn an_update_before_any_image_is_counted() {
        let mut books = ClientBooks::new();
        set(&mut books, Side::Bid, level(100, 1, 1));
        assert_eq!(books.orphans(), 1);
        assert_eq!(books.books().count(), 0);
    }
}
