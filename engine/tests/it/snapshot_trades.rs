//! An execution reaches its snapshot slot in one write, together with the book it changed: a
//! reader never sees a trade whose book is not yet applied, nor a book whose trade is missing.
//!
//! A generated day runs through the publisher the book thread uses, into a real snapshot file.
//! The expected trades come from a naive order table kept by this test from the ITCH rules
//! (E at the resting price, C when printable at its own price, P as sent; executions clamped
//! to the shares left), not from the engine's trade code.

use std::collections::HashMap;

use ticklane_engine::book::Side;
use ticklane_engine::overload::{CodelConfig, OverloadConfig, SheddingPublisher, SnapshotSink};
use ticklane_engine::snapshot::{InstrumentState, LastTrade, SnapshotReader, SnapshotWriter};
use ticklane_feed::itch::{self, Locate, Message, Price};
use ticklane_sim::{write_itch50, GenConfig};

use crate::util::overload::Driver;

const DEPTH: usize = 5;

/// A generated day without the deliberately inconsistent cases (reused references, orphans),
/// so that the naive table below needs only the plain rules. Length prefixes removed.
fn day_messages(seed: u64) -> Vec<Vec<u8>> {
    let mut bytes = Vec::new();
    write_itch50(
        GenConfig {
            messages: 20_000,
            seed,
            stocks: 6,
            hard_cases: false,
            crossing: false,
        },
        &mut bytes,
    )
    .expect("writing to memory");
    let mut out = Vec::new();
    let mut rest = &bytes[..];
    while rest.len() >= 2 {
        let len = usize::from(u16::from_be_bytes([rest[0], rest[1]]));
        out.push(rest[2..2 + len].to_vec());
        rest = &rest[2 + len..];
    }
    out
}

/// An order as the naive table keeps it.
#[derive(Clone, Copy)]
struct Order {
    locate: u16,
    price: u32,
    shares: u32,
}

/// The trades of the day so far, per locate, each with the feed sequence of its message.
#[derive(Default)]
struct TradeModel {
    orders: HashMap<u64, Order>,
    trades: HashMap<u16, Vec<(u64, LastTrade)>>,
}

impl TradeModel {
    /// Applies `message` (feed sequence `seq`); returns the locate it traded, if it did.
    fn apply(&mut self, seq: u64, message: &Message<'_>) -> Option<u16> {
        let mut execute = |order_ref: u64, shares: u32, at: Option<u32>| {
            let order = self.orders.get_mut(&order_ref)?;
            let done = shares.min(order.shares);
            let trade = (order.locate, at.unwrap_or(order.price), done);
            order.shares -= done;
            if order.shares == 0 {
                self.orders.remove(&order_ref);
            }
            Some(trade)
        };
        let trade = match message {
            Message::AddOrder(m) => {
                self.add(m.order_ref().0, m.locate().0, m.price().0, m.shares());
                None
            }
            Message::AddOrderMpid(m) => {
                self.add(m.order_ref().0, m.locate().0, m.price().0, m.shares());
                None
            }
            Message::OrderExecuted(m) => execute(m.order_ref().0, m.executed_shares(), None),
            Message::OrderExecutedWithPrice(m) => {
                let trade = execute(
                    m.order_ref().0,
                    m.executed_shares(),
                    Some(m.execution_price().0),
                );
                trade.filter(|_| m.printable() == b'Y')
            }
            Message::OrderCancel(m) => {
                execute(m.order_ref().0, m.cancelled_shares(), None);
                None
            }
            Message::OrderDelete(m) => {
                self.orders.remove(&m.order_ref().0);
                None
            }
            Message::OrderReplace(m) => {
                if let Some(old) = self.orders.remove(&m.original_order_ref().0) {
                    self.add(m.new_order_ref().0, old.locate, m.price().0, m.shares());
                }
                None
            }
            Message::Trade(m) => Some((m.locate().0, m.price().0, m.shares())),
            _ => None,
        };
        let (locate, price, shares) = trade?;
        self.trades.entry(locate).or_default().push((
            seq,
            LastTrade {
                price: Price(price),
                shares,
                timestamp: message.timestamp(),
            },
        ));
        Some(locate)
    }

    fn add(&mut self, order_ref: u64, locate: u16, price: u32, shares: u32) {
        if shares > 0 {
            self.orders.entry(order_ref).or_insert(Order {
                locate,
                price,
                shares,
            });
        }
    }

    /// Panics unless `state` shows exactly the trades of its own book's message and before:
    /// the count, the share total and the last trade of every trade up to its feed sequence.
    fn check(&self, state: &InstrumentState) {
        let trades = self
            .trades
            .get(&state.locate.0)
            .map_or(&[][..], Vec::as_slice);
        let upto = trades.partition_point(|&(seq, _)| seq <= state.feed_seq);
        let shares: u64 = trades[..upto]
            .iter()
            .map(|(_, t)| u64::from(t.shares))
            .sum();
        assert_eq!(
            (state.trades, state.traded_shares, state.last_trade),
            (
                upto as u64,
                shares,
                upto.checked_sub(1).map(|i| trades[i].1)
            ),
            "locate {} at feed sequence {}: the trades shown are not those of the book shown",
            state.locate.0,
            state.feed_seq
        );
    }
}

/// The slot of each locate, found by reading the slots in use.
fn slot_of(reader: &SnapshotReader, slots: &mut HashMap<u16, usize>, locate: u16) -> usize {
    if let Some(&slot) = slots.get(&locate) {
        return slot;
    }
    for slot in reader.slots() {
        let state = reader.read(slot).expect("a consistent slot");
        slots.insert(state.locate.0, slot);
    }
    *slots.get(&locate).expect("a published locate has a slot")
}

#[test]
fn every_published_execution_is_one_write_with_its_trade_and_its_book() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("trades.snap");
    let writer = SnapshotWriter::create(&path, 64, DEPTH).expect("snapshot");
    let reader = SnapshotReader::open(&path).expect("reader");
    // In-order service: every change is published at its message's turn.
    let mut d = Driver::new(SheddingPublisher::new(
        SnapshotSink::new(writer),
        OverloadConfig::fifo(),
    ));
    let mut model = TradeModel::default();
    let mut slots = HashMap::new();
    let mut executions = 0u64;
    for (i, bytes) in day_messages(11).iter().enumerate() {
        let now = 1_000 * (i as u64 + 1);
        let message = itch::decode(bytes).expect("a valid day");
        let seq = i as u64 + 1;
        let traded = model.apply(seq, &message);
        let before = traded.and_then(|locate| {
            let known = slots.get(&locate).copied();
            known.and_then(|slot| reader.sequence(slot))
        });
        d.step(bytes, now, 0);
        assert_eq!(d.seq(), seq);
        let Some(locate) = traded else {
            continue;
        };
        executions += 1;
        let slot = slot_of(&reader, &mut slots, locate);
        let state = reader.read(slot).expect("a consistent slot");
        assert_eq!(state.feed_seq, seq, "the execution was published");
        assert_eq!(state.exchange_ts, message.timestamp());
        model.check(&state);
        // The book shown is the book after this message.
        let books = d.applier.books();
        let side = |side| {
            books
                .side(Locate(locate), side)
                .map(|l| l.best_first().take(DEPTH).collect::<Vec<_>>())
                .unwrap_or_default()
        };
        assert_eq!(
            (state.bids.clone(), state.asks.clone()),
            (side(Side::Bid), side(Side::Ask))
        );
        // One write: the state just checked is the only one a reader could have seen.
        if let Some(before) = before {
            assert_eq!(
                state.sequence,
                before + 2,
                "one write for the execution at {seq}"
            );
        }
    }
    assert!(
        executions > 200,
        "the day has executions to check ({executions})"
    );
}

#[test]
fn while_publication_is_shed_a_trade_waits_for_its_book() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("trades.snap");
    let writer = SnapshotWriter::create(&path, 64, DEPTH).expect("snapshot");
    let reader = SnapshotReader::open(&path).expect("reader");
    // Every frame waits 5 µs against a 1 µs target: the queue stands after 10 µs, and changes
    // are published newest first, conflated, at batch ends.
    let mut d = Driver::new(SheddingPublisher::new(
        SnapshotSink::new(writer),
        OverloadConfig {
            codel: CodelConfig {
                target_ns: 1_000,
                interval_ns: 10_000,
            },
            deadline_ns: u64::MAX,
            publish_budget_ns: u64::MAX,
            ..OverloadConfig::default()
        },
    ));
    let mut model = TradeModel::default();
    let mut slots = HashMap::new();
    let mut shed_trades = 0u64;
    let mut now = 0;
    for (i, bytes) in day_messages(12).iter().enumerate() {
        now += 1_000;
        let message = itch::decode(bytes).expect("a valid day");
        let traded = model.apply(i as u64 + 1, &message);
        let published = d.step(bytes, now, 5_000);
        if let Some(locate) = traded {
            shed_trades += u64::from(!published);
            if let Some(&slot) = slots.get(&locate) {
                model.check(&reader.read(slot).expect("a consistent slot"));
            }
        }
        if i % 16 == 15 {
            d.batch_end(now);
            for slot in reader.slots() {
                let state = reader.read(slot).expect("a consistent slot");
                slots.insert(state.locate.0, slot);
                model.check(&state);
            }
        }
    }
    d.finish();
    assert!(
        d.publisher.counters().overload_episodes > 0,
        "the queue stood"
    );
    assert!(shed_trades > 100, "trades were shed ({shed_trades})");
    for slot in reader.slots() {
        model.check(&reader.read(slot).expect("a consistent slot"));
    }
}
