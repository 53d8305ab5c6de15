//! Writer to reader: the snapshot's CSV equals `--book-out`'s for the same books.

use std::collections::HashMap;

use ticklane_engine::book::{Books, Side};
use ticklane_engine::csv::write_snapshot_book_csv;
use ticklane_engine::snapshot::{read_all, LastTrade, SnapshotReader, SnapshotWriter};
use ticklane_feed::itch::{self, Message, Nanos, Price};

use crate::util::snapshot::{book_csv, day, messages, publish_day, replay, snapshot_of};

/// A resting order, as far as prints need it.
struct Resting {
    locate: u16,
    price: u32,
    shares: u32,
}

/// The expected prints, from the messages alone: an order table kept by the book rules in
/// `ticklane_engine::book`'s docs (adds of 0 shares or onto a live reference rejected; E, C
/// and X clamped to what is left; an order leaves at 0 shares; U moves the order, keeping
/// its locate) and the print rule: E prints at the resting order's price, C at its own
/// execution price and only when printable is 'Y', both for the shares the order had left at
/// most; P prints its own price and shares at its own locate; an execution of an unknown
/// order prints nothing.
#[derive(Default)]
struct NaiveTrades {
    orders: HashMap<u64, Resting>,
    unknown: u64,
    clamped: u64,
    unprinted: u64,
}

impl NaiveTrades {
    fn add(&mut self, reference: u64, locate: u16, price: u32, shares: u32) {
        if shares > 0 && !self.orders.contains_key(&reference) {
            self.orders.insert(
                reference,
                Resting {
                    locate,
                    price,
                    shares,
                },
            );
        }
    }

    /// Takes up to `shares` from the order; its locate, price and the shares taken.
    fn take(&mut self, reference: u64, shares: u32) -> Option<(u16, u32, u32)> {
        let Some(order) = self.orders.get_mut(&reference) else {
            self.unknown += 1;
            return None;
        };
        let taken = shares.min(order.shares);
        self.clamped += u64::from(taken < shares);
        order.shares -= taken;
        let out = (order.locate, order.price, taken);
        if order.shares == 0 {
            self.orders.remove(&reference);
        }
        Some(out)
    }

    /// Applies `message`; the print it makes, if any, with its kind (0 E, 1 C, 2 P).
    fn apply(&mut self, message: &Message<'_>) -> Option<(u16, LastTrade, usize)> {
        let print = |price: u32, shares: u32, timestamp: Nanos| LastTrade {
            price: Price(price),
            shares,
            timestamp,
        };
        match message {
            Message::AddOrder(m) => {
                self.add(m.order_ref().0, m.locate().0, m.price().0, m.shares());
            }
            Message::AddOrderMpid(m) => {
                self.add(m.order_ref().0, m.locate().0, m.price().0, m.shares());
            }
            Message::OrderExecuted(m) => {
                let (locate, price, shares) = self.take(m.order_ref().0, m.executed_shares())?;
                return Some((locate, print(price, shares, m.timestamp()), 0));
            }
            Message::OrderExecutedWithPrice(m) => {
                let (locate, _, shares) = self.take(m.order_ref().0, m.executed_shares())?;
                if m.printable() != b'Y' {
                    self.unprinted += 1;
                    return None;
                }
                let trade = print(m.execution_price().0, shares, m.timestamp());
                return Some((locate, trade, 1));
            }
            Message::OrderCancel(m) => {
                self.take(m.order_ref().0, m.cancelled_shares());
            }
            Message::OrderDelete(m) => {
                let removed = self.orders.remove(&m.order_ref().0);
                self.unknown += u64::from(removed.is_none());
            }
            Message::OrderReplace(m) => match self.orders.remove(&m.original_order_ref().0) {
                Some(old) => self.add(m.new_order_ref().0, old.locate, m.price().0, m.shares()),
                None => self.unknown += 1,
            },
            Message::Trade(m) => {
                return Some((
                    m.locate().0,
                    print(m.price().0, m.shares(), m.timestamp()),
                    2,
                ));
            }
            _ => {}
        }
        None
    }
}

fn snapshot_csv(reader: &SnapshotReader, depth: usize) -> String {
    String::from_utf8(write_snapshot_book_csv(reader, depth, Vec::new()).expect("readable"))
        .expect("ASCII")
}

#[test]
fn final_books_read_back_as_the_book_out_csv() {
    let day = day(60_000, 7, 12, false);
    let books = replay(&day);
    let dir = tempfile::tempdir().expect("temp dir");
    for depth in [1, 3, 10] {
        let path = dir.path().join(format!("d{depth}.snap"));
        let writer = snapshot_of(&books, &path, depth);
        let reader = SnapshotReader::open(&path).expect("open");
        let expected = book_csv(&books, depth);
        assert!(expected.lines().count() > 12, "a day with books");
        assert_eq!(snapshot_csv(&reader, depth), expected, "depth {depth}");
        // Asking for fewer levels than the file keeps matches too.
        assert_eq!(snapshot_csv(&reader, 1), book_csv(&books, 1));
        writer.close().expect("close");
    }
}

#[test]
fn publishing_every_message_ends_on_the_final_books_and_last_trades() {
    let day = day(60_000, 11, 10, true);
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("live.snap");
    let mut writer = SnapshotWriter::create(&path, 64, 10).expect("create");
    let books = publish_day(&day, &mut writer);
    let reader = SnapshotReader::open(&path).expect("open");
    assert_eq!(snapshot_csv(&reader, 10), book_csv(&books, 10));
    assert_eq!(snapshot_csv(&reader, 10), book_csv(&replay(&day), 10));

    // The naive model: the last print and the totals per locate, straight from the messages
    // by the rule written out in `NaiveTrades`, not by `snapshot::trade_of`.
    let mut model = Books::new(crate::util::snapshot::book_config()).expect("books");
    let mut naive = NaiveTrades::default();
    let mut last: HashMap<u16, (LastTrade, u64, u64)> = HashMap::new();
    let mut last_seq: HashMap<u16, u64> = HashMap::new();
    let mut kinds = [0u64; 3];
    for (i, bytes) in messages(&day).into_iter().enumerate() {
        let message = itch::decode(bytes).expect("valid");
        if let Some((locate, trade, kind)) = naive.apply(&message) {
            kinds[kind] += 1;
            let e = last.entry(locate).or_insert((trade, 0, 0));
            e.0 = trade;
            e.1 += 1;
            e.2 += u64::from(trade.shares);
        }
        if let Some(locate) = model.apply(&message) {
            last_seq.insert(locate.0, i as u64 + 1);
        }
    }
    assert!(
        kinds.iter().all(|&n| n > 0),
        "the day prints through E, C and P: {kinds:?}"
    );
    assert!(
        naive.unknown > 0 && naive.clamped > 0 && naive.unprinted > 0,
        "the day has executions of unknown orders, over-sized ones and non-printable ones"
    );
    assert!(!last.is_empty(), "the day has executions");
    let states = read_all(&reader).into_complete().expect("readable");
    assert_eq!(reader.header().instruments as usize, states.len());
    let mut crossed = 0;
    for state in &states {
        let trade = last.get(&state.locate.0);
        assert_eq!(state.last_trade, trade.map(|t| t.0), "{:?}", state.locate);
        assert_eq!(state.trades, trade.map_or(0, |t| t.1));
        assert_eq!(state.traded_shares, trade.map_or(0, |t| t.2));
        if let Some(&seq) = last_seq.get(&state.locate.0) {
            assert!(
                state.feed_seq >= seq,
                "published at or after its last change"
            );
        }
        assert_eq!(state.symbol(), books.symbol(state.locate));
        assert_eq!(state.trading_state, books.trading_state(state.locate));
        let top = books.top_of_book(state.locate);
        assert_eq!(state.flags.is_crossed(), top.is_crossed());
        crossed += usize::from(top.is_crossed());
        let depth = |side| books.side(state.locate, side).map_or(0, |l| l.depth());
        assert_eq!(state.bids.len(), depth(Side::Bid).min(10));
        assert_eq!(state.asks.len(), depth(Side::Ask).min(10));
    }
    assert_eq!(crossed, books.crossed_books());
    // Slots carry their locate: every symbol is found where it is.
    for (slot, state) in states.iter().enumerate() {
        if !state.symbol().is_empty() {
            assert_eq!(reader.find(state.symbol()), Some(slot));
        }
    }
    writer.close().expect("close");
    assert!(reader.header().is_closed());
}
