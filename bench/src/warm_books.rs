//! Books warmed by a generated day, the starting point of the book and snapshot suites.

use ticklane_engine::book::{BookConfig, Books};
use ticklane_feed::itch;
use ticklane_sim::{GenConfig, MessageLog};

/// Books after a generated day of 200,000 messages over 50 stocks (seed 7).
///
/// # Panics
///
/// If the book tables cannot be allocated (a benchmark has nothing to measure then).
pub fn warm_books() -> Books {
    let mut books = Books::new(BookConfig {
        max_orders: 1 << 20,
        max_books: 1024,
        ..BookConfig::default()
    })
    .expect("books fit in memory");
    let log = MessageLog::from_generator(GenConfig {
        messages: 200_000,
        seed: 7,
        stocks: 50,
        hard_cases: false,
        crossing: false,
    });
    for seq in 1..=log.len() as u64 {
        if let Some(Ok(m)) = log.get(seq).map(itch::decode) {
            books.apply(&m);
        }
    }
    books
}
