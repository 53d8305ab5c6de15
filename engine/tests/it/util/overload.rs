//! Helpers for the overload tests: ITCH messages by hand, and a driver that plays the book
//! stage's part on one thread with sojourn times the test chooses.

use bytemuck::Zeroable;
use ticklane_engine::book::Trade;
use ticklane_engine::book::{Applier, NoBbo};
use ticklane_engine::book::{BookConfig, Books, TopOfBook};
use ticklane_engine::overload::{Change, SheddingPublisher, StateSink};
use ticklane_engine::pipeline::Frame;
use ticklane_engine::publish::Publisher;
use ticklane_feed::itch::{owned, Alpha, Locate, OrderRef, Price};

/// Encodes an owned message.
pub fn enc(message: owned::Message) -> Vec<u8> {
    let mut buf = [0u8; 64];
    let n = message.encode(&mut buf);
    buf[..n].to_vec()
}

/// `R`: names `locate`.
pub fn directory(locate: u16, symbol: &str) -> Vec<u8> {
    enc(owned::Message::StockDirectory(owned::StockDirectory {
        locate: Locate(locate),
        stock: Alpha::new(symbol.as_bytes()).expect("short symbol"),
        ..Default::default()
    }))
}

/// `A`: a buy (`b'B'`) or sell order.
pub fn add(locate: u16, order_ref: u64, side: u8, shares: u32, price: u32) -> Vec<u8> {
    enc(owned::Message::AddOrder(owned::AddOrder {
        locate: Locate(locate),
        order_ref: OrderRef(order_ref),
        side,
        shares,
        price: Price(price),
        ..Default::default()
    }))
}

/// `E`: executes `shares` of an order (a trade).
pub fn execute(locate: u16, order_ref: u64, shares: u32) -> Vec<u8> {
    enc(owned::Message::OrderExecuted(owned::OrderExecuted {
        locate: Locate(locate),
        order_ref: OrderRef(order_ref),
        executed_shares: shares,
        ..Default::default()
    }))
}

/// `H`: a trading-state change.
pub fn halt(locate: u16, state: u8) -> Vec<u8> {
    enc(owned::Message::StockTradingAction(
        owned::StockTradingAction {
            locate: Locate(locate),
            trading_state: state,
            reason: Alpha(*b"T1  "),
            ..Default::default()
        },
    ))
}

/// What a recording sink saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    /// A publication: the change and the top of book it published.
    Published(Change, TopOfBook),
    /// A trade recorded.
    Trade(Trade),
    /// An instrument marked behind (`Some(age)`) or caught up.
    Behind(Locate, Option<u64>),
    /// The engine-wide lag.
    EngineBehind(u64),
}

/// A sink that records what it is asked to do.
#[derive(Debug, Default)]
pub struct RecordingSink {
    /// Everything, in order.
    pub seen: Vec<Seen>,
}

impl RecordingSink {
    /// The publications, in order.
    pub fn published(&self) -> Vec<(Change, TopOfBook)> {
        self.seen
            .iter()
            .filter_map(|s| match s {
                Seen::Published(c, t) => Some((*c, *t)),
                _ => None,
            })
            .collect()
    }

    /// The trades, in order.
    pub fn trades(&self) -> Vec<Trade> {
        self.seen
            .iter()
            .filter_map(|s| match s {
                Seen::Trade(t) => Some(*t),
                _ => None,
            })
            .collect()
    }
}

impl StateSink for RecordingSink {
    fn publish_state(&mut self, books: &Books, change: &Change) -> bool {
        self.seen
            .push(Seen::Published(*change, books.top_of_book(change.locate)));
        true
    }
    fn record_trade(&mut self, _: &Books, trade: Trade) {
        self.seen.push(Seen::Trade(trade));
    }
    fn set_instrument_behind(&mut self, locate: Locate, age_ns: Option<u64>) {
        self.seen.push(Seen::Behind(locate, age_ns));
    }
    fn set_engine_behind(&mut self, behind_ns: u64) {
        self.seen.push(Seen::EngineBehind(behind_ns));
    }
}

/// The book stage's part, on the test's thread: apply, publish with a chosen sojourn,
/// batch ends and drains when the test says.
pub struct Driver<S: StateSink> {
    /// The books.
    pub applier: Applier<NoBbo>,
    /// The publisher under test.
    pub publisher: SheddingPublisher<S>,
    frame: Frame,
    seq: u64,
}

impl<S: StateSink> Driver<S> {
    /// Small books and `publisher`.
    pub fn new(publisher: SheddingPublisher<S>) -> Self {
        Driver {
            applier: Applier::new(
                BookConfig {
                    max_orders: 1 << 16,
                    max_books: 64,
                    levels_per_side: 256,
                },
                None,
            )
            .expect("books fit"),
            publisher,
            frame: Frame::zeroed(),
            seq: 0,
        }
    }

    /// Applies `bytes` at `now_ns` as a frame that waited `sojourn_ns`; returns whether it
    /// was published at its turn.
    pub fn step(&mut self, bytes: &[u8], now_ns: u64, sojourn_ns: u64) -> bool {
        self.seq += 1;
        assert!(self
            .frame
            .set_message(bytes, self.seq, now_ns - sojourn_ns, 0));
        let publisher = &mut self.publisher;
        let applied = self
            .applier
            .step_with(self.seq, self.frame.message(), |books, m| {
                publisher.before_apply(books, m)
            })
            .expect("valid message");
        self.publisher
            .publish(self.applier.books(), &applied, self.frame.arrival(), now_ns)
    }

    /// The feed sequence of the last message stepped.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// A batch ended at `now_ns`.
    pub fn batch_end(&mut self, now_ns: u64) {
        self.publisher.batch_end(self.applier.books(), now_ns);
    }

    /// The ring was found empty at `now_ns`.
    pub fn drained(&mut self, now_ns: u64) {
        self.publisher.drained(self.applier.books(), now_ns);
    }

    /// The feed ended.
    pub fn finish(&mut self) {
        self.publisher.finish(self.applier.books());
    }
}
