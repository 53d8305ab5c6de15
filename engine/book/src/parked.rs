//! A snapshot's state for stocks whose locate it did not say: kept by symbol until the live
//! stream names the locate.
//!
//! Some venues' GLIMPSE 5.0 definitions send the stock directory (`R`), trading actions
//! (`H`) and the resting orders (`A`, `F`) with stock locate 0: the locate is a live-stream
//! number, assigned for the day. A book keyed by locate cannot take them as they come, so
//! they wait here, keyed by symbol (and each order by its reference), until a live message
//! names the locate: an add carries the symbol and the locate, and an execution, cancel,
//! delete or replace of a waiting order carries its locate. Then every order of that
//! symbol joins the book at that locate, in the snapshot's time priority, ahead of the live
//! message that named it.
//!
//! Cold by design: it exists only after a locate-0 snapshot message, and the apply step
//! looks here only for an add while something waits, or for a reference the books do not
//! hold.

use std::collections::HashMap;

use ticklane_itch::{OrderRef, Price, Stock};

/// One resting order of a snapshot, waiting for its stock's locate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ParkedOrder {
    /// The ITCH side byte (`B` or `S`; any other is rejected when it joins its book).
    pub side: u8,
    pub order_ref: OrderRef,
    pub shares: u32,
    pub price: Price,
}

/// What waits for one symbol's locate.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ParkedSymbol {
    /// Its resting orders, in the snapshot's order (time priority).
    pub orders: Vec<ParkedOrder>,
    /// Its latest trading state (`H`), if the snapshot sent one.
    pub trading_state: Option<u8>,
}

/// Every symbol's waiting state, and which symbol each waiting order belongs to.
#[derive(Debug, Default)]
pub(crate) struct Parked {
    by_symbol: HashMap<Stock, ParkedSymbol>,
    symbol_of: HashMap<OrderRef, Stock>,
}

impl Parked {
    /// Keeps a resting order of `symbol`.
    pub fn order(&mut self, symbol: Stock, order: ParkedOrder) {
        self.symbol_of.insert(order.order_ref, symbol);
        self.by_symbol.entry(symbol).or_default().orders.push(order);
    }

    /// Keeps `symbol`'s directory entry: its book is shown once its locate is known, with
    /// no orders if it has none.
    pub fn directory(&mut self, symbol: Stock) {
        self.by_symbol.entry(symbol).or_default();
    }

    /// Keeps `symbol`'s latest trading state.
    pub fn trading_state(&mut self, symbol: Stock, state: u8) {
        self.by_symbol.entry(symbol).or_default().trading_state = Some(state);
    }

    /// The symbol a waiting order belongs to.
    pub fn symbol_of(&self, order_ref: OrderRef) -> Option<Stock> {
        self.symbol_of.get(&order_ref).copied()
    }

    /// Takes what waits for `symbol`.
    pub fn take(&mut self, symbol: Stock) -> Option<ParkedSymbol> {
        let taken = self.by_symbol.remove(&symbol)?;
        for order in &taken.orders {
            self.symbol_of.remove(&order.order_ref);
        }
        Some(taken)
    }

    /// Symbols still waiting, and their orders.
    pub fn waiting(&self) -> (usize, usize) {
        (self.by_symbol.len(), self.symbol_of.len())
    }
}

#[cfg(test)]
mod tests {
    use ticklane_itch::Locate;

    use crate::{Applier, BookConfig, NoBbo, TopOfBook};

    /// An ITCH 5.0 message of type `tag`, `len` bytes, at `locate`, with `fields` written at
    /// their offsets.
    fn message(tag: u8, len: usize, locate: u16, fields: &[(usize, &[u8])]) -> Vec<u8> {
        let mut m = vec![0u8; len];
        m[0] = tag;
        m[1..3].copy_from_slice(&locate.to_be_bytes());
        for (at, bytes) in fields {
            m[*at..*at + bytes.len()].copy_from_slice(bytes);
        }
        m
    }

    fn add(locate: u16, order_ref: u64, side: u8, shares: u32, price: u32) -> Vec<u8> {
        let fields: [(usize, &[u8]); 5] = [
            (11, &order_ref.to_be_bytes()),
            (19, &[side]),
            (20, &shares.to_be_bytes()),
            (24, b"ZVZZT   "),
            (32, &price.to_be_bytes()),
        ];
        message(b'A', 36, locate, &fields)
    }

    fn executed(locate: u16, order_ref: u64, shares: u32) -> Vec<u8> {
        message(
            b'E',
            31,
            locate,
            &[(11, &order_ref.to_be_bytes()), (19, &shares.to_be_bytes())],
        )
    }

    fn halted(locate: u16) -> Vec<u8> {
        message(b'H', 25, locate, &[(11, b"ZVZZT   "), (19, b"H")])
    }

    fn applier() -> Applier<NoBbo> {
        let config = BookConfig {
            max_orders: 64,
            max_books: 8,
            levels_per_side: 8,
        };
        Applier::new(config, None).expect("small tables")
    }

    /// A snapshot at locate 0: its orders wait, in no book, until the live stream names
    /// the locate.
    fn loaded() -> Applier<NoBbo> {
        let mut a = applier();
        a.books_mut().set_loading_snapshot(true);
        for m in [
            halted(0),
            add(0, 1, b'B', 100, 1_000),
            add(0, 2, b'B', 50, 1_100),
        ] {
            a.step(1, &m).expect("valid");
        }
        a.books_mut().set_loading_snapshot(false);
        assert_eq!(a.books().parked(), (1, 2));
        assert_eq!(a.books().live_orders(), 0);
        a
    }

    #[test]
    fn a_live_add_places_its_symbols_snapshot_orders_first() {
        let mut a = loaded();
        let live = add(7, 3, b'S', 10, 1_200);
        let applied = a.step(2, &live).expect("valid");
        assert_eq!((applied.changed, applied.placed), (Some(Locate(7)), true));
        let books = a.books();
        assert_eq!(books.parked(), (0, 0));
        assert_eq!(books.live_orders(), 3);
        assert_eq!(books.symbol(Locate(7)), b"ZVZZT");
        assert_eq!(books.trading_state(Locate(7)), Some(b'H'));
        assert_eq!(
            books.top_of_book(Locate(7)).bid_price(),
            Some(ticklane_itch::Price(1_100))
        );
        let counts = books.counters();
        assert_eq!(
            (counts.snapshot_orders_parked, counts.snapshot_orders_placed),
            (2, 2)
        );
        // The next message is an ordinary one.
        let next = add(7, 4, b'S', 10, 1_300);
        let applied = a.step(3, &next).expect("valid");
        assert!(!applied.placed);
    }

    #[test]
    fn an_execution_of_a_waiting_order_places_it_and_is_no_unknown_reference() {
        let mut a = loaded();
        let live = executed(7, 2, 20);
        let applied = a.step(2, &live).expect("valid");
        assert_eq!((applied.changed, applied.placed), (Some(Locate(7)), true));
        let books = a.books();
        assert_eq!(books.counters().unknown_refs, 0);
        assert_eq!(
            books.order(ticklane_itch::OrderRef(2)).map(|o| o.shares),
            Some(30)
        );
        assert_eq!(books.live_orders(), 2);
    }

    #[test]
    fn locate_zero_outside_a_snapshot_is_an_ordinary_locate() {
        let mut a = applier();
        let plain = add(0, 1, b'B', 100, 1_000);
        let applied = a.step(1, &plain).expect("valid");
        assert_eq!(applied.changed, Some(Locate(0)));
        assert_eq!(a.books().parked(), (0, 0));
        assert_ne!(a.books().top_of_book(Locate(0)), TopOfBook::default());
    }
}
