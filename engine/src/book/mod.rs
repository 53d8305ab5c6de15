//! Order-by-order (L3) books with their L2 view and top of book, allocated at start-up.

mod books;
mod ladder;
mod order_table;
mod top_of_book;
mod zeroed_pages;

pub use books::{BookConfig, BookCounters, Books};
pub use ladder::{LadderFull, LadderView, Level, LevelView, PriceLadder};
pub use order_table::{InsertError, Order, OrderTable, Side};
pub use top_of_book::TopOfBook;
pub use zeroed_pages::ZeroedPages;
