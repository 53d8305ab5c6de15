//! Order-by-order (L3) books with their L2 view and top of book, allocated at start-up, and
//! the per-message apply step that file replay and the live book thread both call.
//!
//! # What this crate must never depend on
//!
//! No I/O, threads, servers, file formats or configuration: the books see ITCH messages
//! (as `ticklane-feed`'s views) and nothing else. What a book change is published to is the
//! [`publish::Publisher`] trait, implemented above this crate.
#![deny(unsafe_code)]

pub mod publish;

mod apply;
mod bbo_row;
mod books;
mod ladder;
mod mbo;
mod order_table;
mod prefetch;
mod top_of_book;
mod trade;
mod type_counts;
mod zeroed_pages;

pub use apply::{Applied, Applier, ApplyError, NoBbo};
pub use bbo_row::{BboRow, BboSink};
pub use books::{BookChange, BookConfig, BookCounters, Books};
pub use ladder::{LadderFull, LadderView, Level, LevelView, PriceLadder, Touched};
pub use mbo::{
    MboApplier, MboCounts, ACTIONS as MBO_ACTIONS, F_LAST, F_MAYBE_BAD_BOOK, F_SNAPSHOT,
};
pub use order_table::{InsertError, Order, OrderTable, Side};
pub use prefetch::{
    Touches, TouchesAhead, FAR as PREFETCH_FAR, FROM_BOOKS as PREFETCH_FROM_BOOKS,
    FROM_ORDERS as PREFETCH_FROM_ORDERS, MID as PREFETCH_MID, NEAR as PREFETCH_NEAR,
};
pub use top_of_book::TopOfBook;
pub use trade::{trade_of, Trade};
pub use type_counts::TypeCounts;
pub use zeroed_pages::ZeroedPages;
