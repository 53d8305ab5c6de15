//! The per-instrument update stream consumers subscribe to: top-of-book and L2 level
//! changes, trades, trading-state changes, and the conflated refresh that replaces missed
//! state events under overload.
#![forbid(unsafe_code)]

use ticklane_feed::itch::{Alpha, Locate, Message, Nanos, Price};

use ticklane_book::Applied;
use ticklane_book::{trade_of, Trade};
use ticklane_book::{Books, LevelView, Side, TopOfBook};

/// Levels per side a [`Refresh`] carries.
pub const REFRESH_DEPTH: usize = 5;
/// Every locate a 16-bit field can name.
const LOCATES: usize = 1 << 16;

/// An instrument's whole published state, sent in place of the state events a consumer
/// missed while its queue stood (or that expired): the top [`REFRESH_DEPTH`] levels a side.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Refresh {
    /// Bid levels, best first; `bid_levels` of them are live, the rest zero.
    pub bids: [LevelView; REFRESH_DEPTH],
    /// Ask levels, best first; `ask_levels` of them are live, the rest zero.
    pub asks: [LevelView; REFRESH_DEPTH],
    /// Live bid levels in `bids`.
    pub bid_levels: u8,
    /// Live ask levels in `asks`.
    pub ask_levels: u8,
    /// The instrument's trading state (`H`, `P`, `Q`, `T`), 0 if none was seen.
    pub trading_state: u8,
}

impl Refresh {
    /// `locate`'s current state in `books`.
    #[inline]
    pub fn of(books: &Books, locate: Locate) -> Self {
        let mut refresh = Refresh {
            trading_state: books.trading_state(locate).unwrap_or(0),
            ..Refresh::default()
        };
        let fill = |side, levels: &mut [LevelView; REFRESH_DEPTH]| {
            let mut n = 0u8;
            if let Some(ladder) = books.side(locate, side) {
                for (slot, level) in levels.iter_mut().zip(ladder.best_first()) {
                    *slot = level;
                    n += 1;
                }
            }
            n
        };
        refresh.bid_levels = fill(Side::Bid, &mut refresh.bids);
        refresh.ask_levels = fill(Side::Ask, &mut refresh.asks);
        refresh
    }

    /// The best bid and offer in the refresh.
    pub fn top(&self) -> TopOfBook {
        TopOfBook::new(
            (self.bid_levels > 0).then_some(self.bids[0]),
            (self.ask_levels > 0).then_some(self.asks[0]),
        )
    }
}

/// What happened to the instrument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventBody {
    /// The best bid or offer changed (price, shares or order count).
    Quote(TopOfBook),
    /// One price level changed; `qty` and `orders` are 0 when the level is gone.
    Level {
        /// The side of the level.
        side: Side,
        /// The level as it now stands.
        level: LevelView,
    },
    /// A trade printed (`E`, printable `C`, `P`). Never conflated, never dropped.
    Trade {
        /// Price, 1/10,000 dollars.
        price: Price,
        /// Shares traded.
        shares: u32,
    },
    /// The trading state changed (`H`). Never conflated, never dropped.
    TradingState {
        /// `H` halted, `P` paused, `Q` quotation only, `T` trading.
        state: u8,
        /// The reason code, space padded.
        reason: [u8; 4],
    },
    /// The latest state, standing in for state events conflated or expired.
    Refresh(Refresh),
}

/// One update for consumers. `Copy` and fixed-size, so it travels through a preallocated
/// ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// The instrument.
    pub locate: Locate,
    /// Its symbol, space padded (all spaces or zero before its `R` message).
    pub symbol: [u8; 8],
    /// Feed sequence number of the message that caused it (for a refresh: of the latest).
    pub feed_seq: u64,
    /// ITCH timestamp of that message (ns since midnight).
    pub exchange_ts: Nanos,
    /// When it entered the consumer's queue (ns on the subscriber hub's clock).
    pub queued_ns: u64,
    /// What happened.
    pub body: EventBody,
}

impl Event {
    /// Whether a later state may replace this event: quotes, levels and refreshes may;
    /// trades and trading-state changes may not.
    #[inline(always)]
    pub fn is_conflatable(&self) -> bool {
        matches!(
            self.body,
            EventBody::Quote(_) | EventBody::Level { .. } | EventBody::Refresh(_)
        )
    }

    /// The symbol without its padding.
    pub fn symbol(&self) -> &[u8] {
        Alpha::<8>::trim(&self.symbol)
    }
}

/// Derives events from each applied message: which levels it touched (seen before it is
/// applied), whether the top of book moved, whether it traded or changed trading state.
///
/// Allocates once (a top of book per locate, about 3 MiB); deriving allocates nothing.
pub struct EventDeriver {
    /// The last top of book sent per locate: a quote goes out only when it differs.
    last_top: Box<[TopOfBook]>,
    /// Levels the message being applied touches: at most two (`U` moves an order).
    touched: [Option<(Side, Price)>; 2],
    /// The trade the message being applied prints.
    trade: Option<Trade>,
}

impl Default for EventDeriver {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for EventDeriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventDeriver").finish_non_exhaustive()
    }
}

impl EventDeriver {
    /// A deriver that has sent nothing yet.
    pub fn new() -> Self {
        EventDeriver {
            last_top: vec![TopOfBook::default(); LOCATES].into_boxed_slice(),
            touched: [None; 2],
            trade: None,
        }
    }

    /// Notes what `message` will touch; call it just before the message is applied.
    #[inline]
    pub fn before_apply(&mut self, books: &Books, message: &Message<'_>) {
        self.trade = trade_of(books, message);
        let order_at = |r| books.order(r).map(|o| (o.side, o.price));
        self.touched = match message {
            Message::AddOrder(m) => [Side::from_wire(m.side()).map(|s| (s, m.price())), None],
            Message::AddOrderMpid(m) => [Side::from_wire(m.side()).map(|s| (s, m.price())), None],
            Message::OrderExecuted(m) => [order_at(m.order_ref()), None],
            Message::OrderExecutedWithPrice(m) => [order_at(m.order_ref()), None],
            Message::OrderCancel(m) => [order_at(m.order_ref()), None],
            Message::OrderDelete(m) => [order_at(m.order_ref()), None],
            Message::OrderReplace(m) => {
                let old = order_at(m.original_order_ref());
                let new = old
                    .map(|(side, _)| (side, m.price()))
                    .filter(|&n| Some(n) != old);
                [old, new]
            }
            _ => [None, None],
        };
    }

    /// The trade the message being applied prints, as seen by [`EventDeriver::before_apply`].
    #[inline(always)]
    pub fn trade(&self) -> Option<Trade> {
        self.trade
    }

    /// Emits the events of the message just applied, in the order a consumer should apply
    /// them: trading state, trade, level changes, then the quote.
    #[inline]
    pub fn after_apply(
        &mut self,
        books: &Books,
        applied: &Applied<'_>,
        feed_seq: u64,
        mut emit: impl FnMut(Event),
    ) {
        let Some(message) = applied.message else {
            return;
        };
        let event = |locate: Locate, body| Event {
            locate,
            symbol: books.symbol_raw(locate).0,
            feed_seq,
            exchange_ts: message.timestamp(),
            queued_ns: 0,
            body,
        };
        // A snapshot's at locate 0 waits in the books for its locate, and says so when placed.
        let parked = at_locate_zero(&message) && books.parked() != (0, 0);
        if let (Message::StockTradingAction(m), false) = (&message, parked) {
            emit(event(
                m.locate(),
                EventBody::TradingState {
                    state: m.trading_state(),
                    reason: m.reason().0,
                },
            ));
        }
        if let Some(trade) = self.trade.take() {
            emit(event(
                trade.locate,
                EventBody::Trade {
                    price: trade.price,
                    shares: trade.shares,
                },
            ));
        }
        let touched = std::mem::take(&mut self.touched);
        let Some(locate) = applied.changed else {
            return;
        };
        if applied.placed {
            // A snapshot's orders joined the book with this message: more changed than its
            // levels, so the whole state goes out.
            let top = books.top_of_book(locate);
            self.last_top[usize::from(locate.0)] = top;
            emit(event(
                locate,
                EventBody::Refresh(Refresh::of(books, locate)),
            ));
            return;
        }
        for (side, price) in touched.into_iter().flatten() {
            let level = books
                .side(locate, side)
                .and_then(|ladder| ladder.level(price))
                .unwrap_or(LevelView {
                    price,
                    qty: 0,
                    orders: 0,
                });
            emit(event(locate, EventBody::Level { side, level }));
        }
        let top = books.top_of_book(locate);
        let last = &mut self.last_top[usize::from(locate.0)];
        if top != *last {
            *last = top;
            emit(event(locate, EventBody::Quote(top)));
        }
    }

    /// Every order was removed ([`ticklane_book::publish::Publisher::books_cleared`]): emits
    /// a refresh of each book, empty now, numbered `feed_seq`, so that a consumer drops what
    /// it held; the rebuild's events follow.
    #[cold]
    pub fn cleared(&mut self, books: &Books, feed_seq: u64, mut emit: impl FnMut(Event)) {
        for locate in books.locates() {
            self.last_top[usize::from(locate.0)] = books.top_of_book(locate);
            emit(Event {
                locate,
                symbol: books.symbol_raw(locate).0,
                feed_seq,
                exchange_ts: Nanos(0),
                queued_ns: 0,
                body: EventBody::Refresh(Refresh::of(books, locate)),
            });
        }
    }
}

/// Whether `message` names stock locate 0 (a snapshot's, on some venues).
fn at_locate_zero(message: &Message<'_>) -> bool {
    message.locate().0 == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklane_book::BookConfig;
    use ticklane_book::{Applier, NoBbo};
    use ticklane_feed::itch::{owned, OrderRef};

    fn enc(message: owned::Message) -> Vec<u8> {
        let mut buf = [0u8; 64];
        let n = message.encode(&mut buf);
        buf[..n].to_vec()
    }

    fn books() -> Applier<NoBbo> {
        Applier::new(
            BookConfig {
                max_orders: 64,
                max_books: 4,
                levels_per_side: 16,
            },
            None,
        )
        .expect("books fit")
    }

    fn step(applier: &mut Applier<NoBbo>, deriver: &mut EventDeriver, bytes: &[u8]) -> Vec<Event> {
        let mut out = Vec::new();
        let applied = applier
            .step_with(1, bytes, |books, m| deriver.before_apply(books, m))
            .expect("valid");
        deriver.after_apply(applier.books(), &applied, 1, |e| out.push(e));
        out
    }

    #[test]
    fn add_execute_and_halt_give_levels_quotes_trades_and_states() {
        let mut r = books();
        let mut d = EventDeriver::new();
        let add = enc(owned::Message::AddOrder(owned::AddOrder {
            locate: Locate(1),
            order_ref: OrderRef(10),
            side: b'B',
            shares: 100,
            price: Price(1_000_000),
            ..Default::default()
        }));
        let events = step(&mut r, &mut d, &add);
        let bodies: Vec<_> = events.iter().map(|e| e.body).collect();
        let level = LevelView {
            price: Price(1_000_000),
            qty: 100,
            orders: 1,
        };
        assert_eq!(
            bodies,
            [
                EventBody::Level {
                    side: Side::Bid,
                    level
                },
                EventBody::Quote(TopOfBook::new(Some(level), None)),
            ]
        );
        let exec = enc(owned::Message::OrderExecuted(owned::OrderExecuted {
            locate: Locate(1),
            order_ref: OrderRef(10),
            executed_shares: 100,
            ..Default::default()
        }));
        let bodies: Vec<_> = step(&mut r, &mut d, &exec).iter().map(|e| e.body).collect();
        let gone = LevelView {
            price: Price(1_000_000),
            qty: 0,
            orders: 0,
        };
        assert_eq!(
            bodies,
            [
                EventBody::Trade {
                    price: Price(1_000_000),
                    shares: 100
                },
                EventBody::Level {
                    side: Side::Bid,
                    level: gone
                },
                EventBody::Quote(TopOfBook::default()),
            ]
        );
        assert!(events.iter().all(Event::is_conflatable));
        let halt = enc(owned::Message::StockTradingAction(
            owned::StockTradingAction {
                locate: Locate(1),
                trading_state: b'H',
                reason: Alpha(*b"T1  "),
                ..Default::default()
            },
        ));
        let halted = step(&mut r, &mut d, &halt);
        assert_eq!(
            halted.iter().map(|e| e.body).collect::<Vec<_>>(),
            [EventBody::TradingState {
                state: b'H',
                reason: *b"T1  "
            }]
        );
        assert!(!halted[0].is_conflatable());
    }

    #[test]
    fn a_replace_touches_both_levels_and_a_refresh_reads_the_book() {
        let mut r = books();
        let mut d = EventDeriver::new();
        for (order_ref, price) in [(1, 100), (2, 200)] {
            step(
                &mut r,
                &mut d,
                &enc(owned::Message::AddOrder(owned::AddOrder {
                    locate: Locate(2),
                    order_ref: OrderRef(order_ref),
                    side: b'S',
                    shares: 10,
                    price: Price(price),
                    ..Default::default()
                })),
            );
        }
        let replace = enc(owned::Message::OrderReplace(owned::OrderReplace {
            locate: Locate(2),
            original_order_ref: OrderRef(1),
            new_order_ref: OrderRef(3),
            shares: 5,
            price: Price(200),
            ..Default::default()
        }));
        let bodies: Vec<_> = step(&mut r, &mut d, &replace)
            .iter()
            .map(|e| e.body)
            .collect();
        let at_200 = LevelView {
            price: Price(200),
            qty: 15,
            orders: 2,
        };
        assert_eq!(bodies.len(), 3, "{bodies:?}");
        assert_eq!(
            bodies[1],
            EventBody::Level {
                side: Side::Ask,
                level: at_200
            }
        );
        let refresh = Refresh::of(r.books(), Locate(2));
        assert_eq!((refresh.bid_levels, refresh.ask_levels), (0, 1));
        assert_eq!(refresh.top(), TopOfBook::new(None, Some(at_200)));
    }
}
