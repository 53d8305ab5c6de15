//! The books against a naive model: random message sequences, applied to both, must give
//! the same L2 levels, the same best bid and offer, and the same counters after every
//! message.
//!
//! The model is deliberately simple (a `HashMap` of orders, `BTreeMap` levels rebuilt from
//! them) and written from the book rules (`ticklane_engine::book`'s docs), not from the
//! engine's code. It covers the cases the independent oracle cannot: reference 0, adds onto
//! a live reference, zero-share adds, unknown sides, replaces onto live references.

use std::collections::{BTreeMap, HashMap, HashSet};

use proptest::prelude::*;
use ticklane_engine::book::{BookConfig, Books, Side};
use ticklane_feed::itch::{self, owned, Locate, OrderRef, Price, Stock};

#[derive(Clone, Copy, Debug)]
struct ModelOrder {
    locate: u16,
    side: u8,
    price: u32,
    shares: u32,
}

struct Model {
    /// The engine's `levels_per_side`: an add that would open one more level is rejected.
    levels_per_side: usize,
    orders: HashMap<u64, ModelOrder>,
    unknown_refs: u64,
    rejected: u64,
    clamped: u64,
}

impl Model {
    fn new(levels_per_side: usize) -> Self {
        Model {
            levels_per_side,
            orders: HashMap::new(),
            unknown_refs: 0,
            rejected: 0,
            clamped: 0,
        }
    }

    /// Whether an order at `price` would open a level its side has no room for.
    fn side_full(&self, locate: u16, side: u8, price: u32) -> bool {
        let on_side = |o: &&ModelOrder| o.locate == locate && o.side == side;
        let prices: HashSet<u32> = self
            .orders
            .values()
            .filter(on_side)
            .map(|o| o.price)
            .collect();
        !prices.contains(&price) && prices.len() >= self.levels_per_side
    }

    fn add(&mut self, locate: u16, side: u8, r: u64, shares: u32, price: u32) -> bool {
        if (side != b'B' && side != b'S')
            || shares == 0
            || self.orders.contains_key(&r)
            || self.side_full(locate, side, price)
        {
            self.rejected += 1;
            return false;
        }
        self.orders.insert(
            r,
            ModelOrder {
                locate,
                side,
                price,
                shares,
            },
        );
        true
    }

    fn reduce(&mut self, r: u64, shares: u32) -> Option<u16> {
        let Some(o) = self.orders.get_mut(&r) else {
            self.unknown_refs += 1;
            return None;
        };
        let locate = o.locate;
        if shares > o.shares {
            self.clamped += 1;
        }
        o.shares -= shares.min(o.shares);
        if o.shares == 0 {
            self.orders.remove(&r);
        }
        Some(locate)
    }

    fn apply(&mut self, m: &owned::Message) -> Option<u16> {
        use owned::Message as M;
        match *m {
            M::AddOrder(a) => self
                .add(a.locate.0, a.side, a.order_ref.0, a.shares, a.price.0)
                .then_some(a.locate.0),
            M::OrderExecuted(e) => self.reduce(e.order_ref.0, e.executed_shares),
            M::OrderExecutedWithPrice(c) => self.reduce(c.order_ref.0, c.executed_shares),
            M::OrderCancel(x) => self.reduce(x.order_ref.0, x.cancelled_shares),
            M::OrderDelete(d) => {
                let Some(o) = self.orders.remove(&d.order_ref.0) else {
                    self.unknown_refs += 1;
                    return None;
                };
                Some(o.locate)
            }
            M::OrderReplace(u) => {
                let Some(o) = self.orders.remove(&u.original_order_ref.0) else {
                    self.unknown_refs += 1;
                    return None;
                };
                self.add(o.locate, o.side, u.new_order_ref.0, u.shares, u.price.0);
                Some(o.locate)
            }
            _ => None,
        }
    }

    /// `(locate, side) -> price -> (qty, orders)`, best first when iterated per side.
    fn levels(&self) -> BTreeMap<(u16, u8), BTreeMap<u32, (u64, u32)>> {
        let mut out: BTreeMap<(u16, u8), BTreeMap<u32, (u64, u32)>> = BTreeMap::new();
        for o in self.orders.values() {
            let level = out
                .entry((o.locate, o.side))
                .or_default()
                .entry(o.price)
                .or_default();
            level.0 += u64::from(o.shares);
            level.1 += 1;
        }
        out
    }
}

fn engine_levels(books: &Books) -> BTreeMap<(u16, u8), BTreeMap<u32, (u64, u32)>> {
    let mut out: BTreeMap<(u16, u8), BTreeMap<u32, (u64, u32)>> = BTreeMap::new();
    for locate in books.locates() {
        for side in [Side::Bid, Side::Ask] {
            let ladder = books.side(locate, side).expect("listed locates have books");
            let mut last: Option<u32> = None;
            for level in ladder.best_first() {
                if let Some(prev) = last {
                    // Best first: bids descend, asks ascend, strictly.
                    match side {
                        Side::Bid => assert!(level.price.0 < prev, "bids out of order"),
                        Side::Ask => assert!(level.price.0 > prev, "asks out of order"),
                    }
                }
                last = Some(level.price.0);
                out.entry((locate.0, side.letter() as u8))
                    .or_default()
                    .insert(level.price.0, (level.qty, level.orders));
            }
        }
    }
    out
}

/// One random message over a small reference and price space, so collisions, reuse,
/// unknown references and clamping all happen often.
fn message() -> impl Strategy<Value = owned::Message> {
    message_over(24, 4, 12)
}

/// One random message with references below `refs`, locates from 1 below `locates` and
/// ordinary prices from 1 below `prices` (and the extreme prices now and then).
fn message_over(refs: u64, locates: u16, prices: u32) -> impl Strategy<Value = owned::Message> {
    let r = 0u64..refs;
    let locate = 1u16..locates;
    let price = prop_oneof![8 => 1u32..prices, 1 => Just(u32::MAX), 1 => Just(0u32)];
    let shares = prop_oneof![6 => 1u32..400, 1 => Just(0u32), 2 => (u32::MAX - 3)..=u32::MAX];
    let side = prop_oneof![10 => Just(b'B'), 10 => Just(b'S'), 1 => Just(b'X')];
    prop_oneof![
        6 => (locate.clone(), side, r.clone(), shares.clone(), price.clone()).prop_map(
            |(l, side, r, shares, p)| owned::Message::AddOrder(owned::AddOrder {
                locate: Locate(l),
                order_ref: OrderRef(r),
                side,
                shares,
                stock: Stock::new(b"T").expect("fits"),
                price: Price(p),
                ..Default::default()
            })
        ),
        2 => (r.clone(), shares.clone()).prop_map(|(r, n)| owned::Message::OrderExecuted(
            owned::OrderExecuted { order_ref: OrderRef(r), executed_shares: n, ..Default::default() }
        )),
        1 => (r.clone(), shares.clone(), price.clone()).prop_map(|(r, n, p)| {
            owned::Message::OrderExecutedWithPrice(owned::OrderExecutedWithPrice {
                order_ref: OrderRef(r),
                executed_shares: n,
                execution_price: Price(p),
                printable: b'Y',
                ..Default::default()
            })
        }),
        2 => (r.clone(), shares.clone()).prop_map(|(r, n)| owned::Message::OrderCancel(
            owned::OrderCancel { order_ref: OrderRef(r), cancelled_shares: n, ..Default::default() }
        )),
        3 => r.clone().prop_map(|r| owned::Message::OrderDelete(owned::OrderDelete {
            order_ref: OrderRef(r),
            ..Default::default()
        })),
        2 => (r.clone(), r, shares, price, locate).prop_map(|(a, b, n, p, l)| {
            owned::Message::OrderReplace(owned::OrderReplace {
                // The header locate is deliberately unrelated: the order's own locate rules.
                locate: Locate(l),
                original_order_ref: OrderRef(a),
                new_order_ref: OrderRef(b),
                shares: n,
                price: Price(p),
                ..Default::default()
            })
        }),
    ]
}

/// Applies `messages` to books of `config` and to the naive model, and checks after each
/// message that both hold the same levels, tops of book and counters.
fn books_follow_the_model(
    config: BookConfig,
    messages: &[owned::Message],
) -> Result<(), TestCaseError> {
    let mut books = Books::new(config).expect("books fit");
    let mut model = Model::new(config.levels_per_side);
    let mut buf = [0u8; 64];
    for (i, m) in messages.iter().enumerate() {
        let len = m.encode(&mut buf);
        let view = itch::decode(&buf[..len]).expect("encoded messages decode");
        let changed = books.apply(&view);
        let model_changed = model.apply(m);
        prop_assert_eq!(
            changed.map(|l| l.0),
            model_changed,
            "changed locate, message {}",
            i
        );
        let expected = model.levels();
        prop_assert_eq!(
            &engine_levels(&books),
            &expected,
            "levels after message {}: {:?}",
            i,
            m
        );
        for ((locate, side), levels) in &expected {
            let top = books.top_of_book(Locate(*locate));
            let best = if *side == b'B' {
                levels.iter().next_back()
            } else {
                levels.iter().next()
            };
            let (price, (qty, orders)) = best.expect("model keeps no empty sides");
            let level = if *side == b'B' { top.bid } else { top.ask };
            prop_assert_eq!(
                (level.price.0, level.qty, level.orders),
                (*price, *qty, *orders)
            );
        }
        let c = books.counters();
        prop_assert_eq!(
            (c.unknown_refs, c.rejected, c.clamped),
            (model.unknown_refs, model.rejected, model.clamped),
            "counters after message {}",
            i
        );
        prop_assert_eq!(books.live_orders(), model.orders.len());
    }
    prop_assert_eq!(books.check_invariants(), Ok(()));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn books_equal_the_naive_model(messages in prop::collection::vec(message(), 1..300)) {
        let config = BookConfig { max_orders: 64, max_books: 8, levels_per_side: 64 };
        books_follow_the_model(config, &messages)?;
    }

    /// Deep sides: enough live orders at enough prices that sides grow out of their first
    /// level window (16 levels) into the 24 of `levels_per_side` and fill, with the two
    /// books' windows interleaved in the arena as they grow.
    #[test]
    fn deep_books_equal_the_naive_model(messages in prop::collection::vec(message_over(200, 3, 60), 1..800)) {
        let config = BookConfig { max_orders: 256, max_books: 4, levels_per_side: 24 };
        books_follow_the_model(config, &messages)?;
    }
}

#[test]
fn reference_zero_is_ordinary_and_reusable() {
    let mut books = Books::new(BookConfig {
        max_orders: 8,
        max_books: 2,
        levels_per_side: 8,
    })
    .expect("books fit");
    let mut buf = [0u8; 64];
    let mut apply = |books: &mut Books, m: owned::Message| {
        let len = m.encode(&mut buf);
        books.apply(&itch::decode(&buf[..len]).expect("valid"))
    };
    let add = |shares| {
        owned::Message::AddOrder(owned::AddOrder {
            locate: Locate(1),
            order_ref: OrderRef(0),
            side: b'B',
            shares,
            price: Price(100),
            ..Default::default()
        })
    };
    assert_eq!(apply(&mut books, add(10)), Some(Locate(1)));
    assert_eq!(apply(&mut books, add(20)), None, "live reference: rejected");
    assert_eq!(
        books.top_of_book(Locate(1)).bid.qty,
        10,
        "the live order stays"
    );
    let delete = owned::Message::OrderDelete(owned::OrderDelete {
        order_ref: OrderRef(0),
        ..Default::default()
    });
    assert_eq!(apply(&mut books, delete), Some(Locate(1)));
    assert_eq!(
        apply(&mut books, add(30)),
        Some(Locate(1)),
        "reused after delete"
    );
    assert_eq!(books.top_of_book(Locate(1)).bid.qty, 30);
    assert_eq!(books.counters().rejected_live_ref, 1);
}

#[test]
fn capacity_exhaustion_is_counted_not_fatal() {
    let mut books = Books::new(BookConfig {
        max_orders: 2,
        max_books: 1,
        levels_per_side: 1,
    })
    .expect("books fit");
    let mut buf = [0u8; 64];
    let mut add = |books: &mut Books, locate: u16, r: u64, price: u32| {
        let m = owned::Message::AddOrder(owned::AddOrder {
            locate: Locate(locate),
            order_ref: OrderRef(r),
            side: b'S',
            shares: 1,
            price: Price(price),
            ..Default::default()
        });
        let len = m.encode(&mut buf);
        books.apply(&itch::decode(&buf[..len]).expect("valid"))
    };
    assert!(add(&mut books, 1, 1, 5).is_some());
    assert!(
        add(&mut books, 1, 2, 6).is_none(),
        "no room for a second level"
    );
    assert!(
        add(&mut books, 2, 3, 5).is_none(),
        "no room for a second book"
    );
    assert!(
        add(&mut books, 1, 4, 5).is_some(),
        "the existing level takes more"
    );
    assert!(add(&mut books, 1, 5, 5).is_none(), "order table full");
    let c = books.counters();
    assert_eq!(
        (
            c.rejected_level_capacity,
            c.rejected_book_capacity,
            c.rejected_order_capacity
        ),
        (1, 1, 1)
    );
    assert_eq!(books.live_orders(), 2);
    assert_eq!(books.check_invariants(), Ok(()));
}
