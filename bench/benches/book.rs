//! Applying messages to the books, per message type, and reading the top of book.
//!
//! A message applied once changes the book, so each type is timed inside a short cycle that
//! leaves the book as it found it (an add and the message that removes it again), on books
//! warmed with a generated day. `A+D` is the base cycle: a type's own cost is its cycle less
//! the part of `A+D` it replaces. Throughput is per message of the cycle.
//!
//! `cargo bench -p ticklane-bench --bench book`

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ticklane_bench::warm_books::warm_books;
use ticklane_engine::book::Books;
use ticklane_feed::itch::{self, owned, Locate, OrderRef, Price};

/// An order reference far above any the generated day uses.
const REF: u64 = 1 << 40;

/// The cycles, each a list of messages that leaves the book unchanged. The add joins the
/// best bid of stock 1, the most common place for an order to go.
fn cycles(books: &Books) -> Vec<(&'static str, Vec<owned::Message>)> {
    let locate = Locate(1);
    let top = books.top_of_book(locate);
    let price = if top.bid.price.0 > 0 {
        top.bid.price
    } else {
        Price(100_0000)
    };
    let stock = books.symbol_raw(locate);
    let add = owned::Message::AddOrder(owned::AddOrder {
        locate,
        order_ref: OrderRef(REF),
        side: b'B',
        shares: 300,
        stock,
        price,
        ..Default::default()
    });
    let add_mpid = owned::Message::AddOrderMpid(owned::AddOrderMpid {
        locate,
        order_ref: OrderRef(REF),
        side: b'B',
        shares: 300,
        stock,
        price,
        ..Default::default()
    });
    let delete = |r| {
        owned::Message::OrderDelete(owned::OrderDelete {
            locate,
            order_ref: OrderRef(r),
            ..Default::default()
        })
    };
    let execute = |n| {
        owned::Message::OrderExecuted(owned::OrderExecuted {
            locate,
            order_ref: OrderRef(REF),
            executed_shares: n,
            ..Default::default()
        })
    };
    let execute_with_price =
        owned::Message::OrderExecutedWithPrice(owned::OrderExecutedWithPrice {
            locate,
            order_ref: OrderRef(REF),
            executed_shares: 300,
            printable: b'Y',
            execution_price: price,
            ..Default::default()
        });
    let cancel = owned::Message::OrderCancel(owned::OrderCancel {
        locate,
        order_ref: OrderRef(REF),
        cancelled_shares: 100,
        ..Default::default()
    });
    let replace = owned::Message::OrderReplace(owned::OrderReplace {
        locate,
        original_order_ref: OrderRef(REF),
        new_order_ref: OrderRef(REF + 1),
        shares: 200,
        price: Price(price.0.saturating_sub(100)),
        ..Default::default()
    });
    let trade = owned::Message::Trade(owned::Trade {
        locate,
        order_ref: OrderRef(0),
        side: b'B',
        shares: 100,
        stock,
        price,
        ..Default::default()
    });
    vec![
        ("A+D", vec![add, delete(REF)]),
        ("F+D", vec![add_mpid, delete(REF)]),
        ("A+E(all)", vec![add, execute(300)]),
        ("A+E(part)+D", vec![add, execute(100), delete(REF)]),
        ("A+C(all)", vec![add, execute_with_price]),
        ("A+X+D", vec![add, cancel, delete(REF)]),
        ("A+U+D", vec![add, replace, delete(REF + 1)]),
        ("P", vec![trade]),
    ]
}

fn apply(c: &mut Criterion) {
    let mut books = warm_books();
    let cycles = cycles(&books);
    let mut group = c.benchmark_group("book_apply");
    for (name, messages) in &cycles {
        let wire: Vec<Vec<u8>> = messages
            .iter()
            .map(|m| {
                let mut buf = [0u8; 64];
                let len = m.encode(&mut buf);
                buf[..len].to_vec()
            })
            .collect();
        let views: Vec<itch::Message<'_>> = wire
            .iter()
            .map(|w| itch::decode(w).expect("encoded messages decode"))
            .collect();
        let before = books.live_orders();
        group.throughput(Throughput::Elements(views.len() as u64));
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                for m in &views {
                    black_box(books.apply(black_box(m)));
                }
            })
        });
        assert_eq!(
            books.live_orders(),
            before,
            "cycle {name} must leave the book as it was"
        );
    }
    group.finish();
}

fn top_of_book(c: &mut Criterion) {
    let mut books = warm_books();
    let cycles = cycles(&books);
    let mut group = c.benchmark_group("top_of_book");
    group.throughput(Throughput::Elements(1));
    group.bench_function("read", |b| {
        b.iter(|| black_box(books.top_of_book(black_box(Locate(1)))))
    });
    // The replay's top-of-book tracking: apply, then read the changed book's top.
    let wire: Vec<Vec<u8>> = cycles[0]
        .1
        .iter()
        .map(|m| {
            let mut buf = [0u8; 64];
            let len = m.encode(&mut buf);
            buf[..len].to_vec()
        })
        .collect();
    let views: Vec<itch::Message<'_>> = wire
        .iter()
        .map(|w| itch::decode(w).expect("encoded messages decode"))
        .collect();
    group.throughput(Throughput::Elements(views.len() as u64));
    group.bench_function("A+D, each followed by a top-of-book read", |b| {
        b.iter(|| {
            for m in &views {
                if let Some(locate) = books.apply(black_box(m)) {
                    black_box(books.top_of_book(locate));
                }
            }
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    targets = apply, top_of_book
}
criterion_main!(benches);
