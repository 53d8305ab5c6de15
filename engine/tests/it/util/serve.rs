//! Shared by the serve tests: a naive book model (BTreeMaps) that is both the image source
//! the server reads and the oracle the clients' books are checked against, and the hub
//! events that change it.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use ticklane_engine::book::{LevelView, Side};
use ticklane_engine::overload::{CodelConfig, Event, EventBody, EventFanout, SubscriberConfig};
use ticklane_engine::serve::protocol::{image_levels, ImageHeader, ServerMessage};
use ticklane_engine::serve::{BookImage, ImageSource};
use ticklane_feed::itch::{Locate, Nanos, Price};

/// One book: price -> (shares, orders), per side.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelBook {
    pub bids: BTreeMap<u32, (u64, u32)>,
    pub asks: BTreeMap<u32, (u64, u32)>,
}

impl ModelBook {
    pub fn set(&mut self, side: Side, level: LevelView) {
        let map = match side {
            Side::Bid => &mut self.bids,
            Side::Ask => &mut self.asks,
        };
        if level.qty == 0 {
            map.remove(&level.price.0);
        } else {
            map.insert(level.price.0, (level.qty, level.orders));
        }
    }

    /// Replaces the book with a decoded image.
    pub fn load(&mut self, header: &ImageHeader, levels: &[u8]) {
        *self = ModelBook::default();
        for (i, level) in image_levels(levels).enumerate() {
            let side = if i < usize::from(header.bid_levels) {
                Side::Bid
            } else {
                Side::Ask
            };
            self.set(side, level);
        }
    }

    /// Applies an update message; whether it was one.
    pub fn apply(&mut self, message: &ServerMessage<'_>) -> bool {
        match *message {
            ServerMessage::BookImage { header, levels } => self.load(&header, levels),
            ServerMessage::Level { side, level, .. } => self.set(side, level),
            _ => return false,
        }
        true
    }

    fn side(map: &BTreeMap<u32, (u64, u32)>, best_high: bool) -> Vec<LevelView> {
        let view = |(&p, &(qty, orders)): (&u32, &(u64, u32))| LevelView {
            price: Price(p),
            qty,
            orders,
        };
        if best_high {
            map.iter().rev().map(view).collect()
        } else {
            map.iter().map(view).collect()
        }
    }
}

/// Every book the "engine" holds, by symbol, with its locate and last feed sequence.
#[derive(Clone, Debug, Default)]
pub struct Model {
    pub books: HashMap<[u8; 8], (u16, u64, ModelBook)>,
    /// Scratch the image source hands out (filled per image).
    bids: Vec<LevelView>,
    asks: Vec<LevelView>,
}

/// The model as an image source, shared with the test that changes it.
#[derive(Clone, Debug, Default)]
pub struct SharedModel(pub Arc<Mutex<Model>>);

impl SharedModel {
    pub fn add_symbol(&self, symbol: &[u8; 8], locate: u16) {
        let mut model = self.0.lock().unwrap();
        model.bids.reserve(64);
        model.asks.reserve(64);
        model
            .books
            .insert(*symbol, (locate, 0, ModelBook::default()));
    }

    /// Changes one level in the model and delivers the event for it through `fanout`.
    pub fn level(
        &self,
        fanout: &mut EventFanout,
        symbol: &[u8; 8],
        feed_seq: u64,
        side: Side,
        level: LevelView,
    ) {
        let locate = {
            let mut model = self.0.lock().unwrap();
            let entry = model.books.get_mut(symbol).expect("known symbol");
            entry.1 = feed_seq;
            entry.2.set(side, level);
            entry.0
        };
        let now = fanout.now_ns();
        fanout.deliver(
            event(symbol, locate, feed_seq, EventBody::Level { side, level }),
            now,
        );
    }

    /// Delivers a trade (the model's book does not change).
    pub fn trade(&self, fanout: &mut EventFanout, symbol: &[u8; 8], feed_seq: u64, shares: u32) {
        let locate = {
            let mut model = self.0.lock().unwrap();
            let entry = model.books.get_mut(symbol).expect("known symbol");
            entry.1 = feed_seq;
            entry.0
        };
        let now = fanout.now_ns();
        fanout.deliver(
            event(
                symbol,
                locate,
                feed_seq,
                EventBody::Trade {
                    price: Price(1),
                    shares,
                },
            ),
            now,
        );
    }

    pub fn book(&self, symbol: &[u8; 8]) -> ModelBook {
        self.0.lock().unwrap().books[symbol].2.clone()
    }
}

pub fn event(symbol: &[u8; 8], locate: u16, feed_seq: u64, body: EventBody) -> Event {
    Event {
        locate: Locate(locate),
        symbol: *symbol,
        feed_seq,
        exchange_ts: Nanos(0),
        queued_ns: 0,
        body,
    }
}

impl ImageSource for SharedModel {
    fn image(&mut self, symbol: &[u8; 8], view: &mut dyn FnMut(&BookImage<'_>)) -> bool {
        let mut guard = self.0.lock().unwrap();
        let model = &mut *guard;
        let Some((locate, feed_seq, book)) = model.books.get(symbol) else {
            return false;
        };
        model.bids.clear();
        model.bids.extend(ModelBook::side(&book.bids, true));
        model.asks.clear();
        model.asks.extend(ModelBook::side(&book.asks, false));
        view(&BookImage {
            symbol: *symbol,
            locate: *locate,
            flags: 0,
            trading_state: b'T',
            feed_seq: *feed_seq,
            bids: &model.bids,
            asks: &model.asks,
        });
        true
    }

    fn symbols(&mut self, each: &mut dyn FnMut(&[u8; 8])) {
        let model = self.0.lock().unwrap();
        let mut symbols: Vec<_> = model.books.keys().copied().collect();
        symbols.sort_unstable();
        for s in &symbols {
            each(s);
        }
    }
}

/// Hub queues large and their clocks out of the way: these tests are about the server's
/// queues, not the hub's.
pub fn hub_config() -> SubscriberConfig {
    SubscriberConfig {
        queue_events: 1 << 16,
        reserved_events: 16,
        codel: CodelConfig {
            target_ns: u64::MAX / 4,
            interval_ns: u64::MAX / 4,
        },
        deadline_ns: u64::MAX,
        ..SubscriberConfig::default()
    }
}
