//! Order-by-order (L3) books with their L2 view and top of book, allocated at start-up, and
//! the per-message apply step that file replay and the live book thread both call.
//!
//! # The book rules
//!
//! A book is kept exactly as the feed says, and every message it could not apply as sent is
//! counted ([`BookCounts`]), never dropped in silence. The CSV, DBN, Parquet and snapshot
//! outputs, the naive model in `tests/tests/it/book_model.rs` and the itch-book oracle all rest
//! on these rules:
//!
//! - Prices are ITCH integers (1/10,000 dollars); a level's shares are summed in 64 bits, so
//!   a level holding more than 2^32 shares is still exact.
//! - An order leaves its book when its shares reach 0.
//! - An execution or cancel (E, C, X) for more shares than the order has left takes what is
//!   left, and is counted (`clamped`).
//! - E, C, X, D or U naming a reference that is not live changes nothing and is counted
//!   (`unknown_refs`); such a U adds nothing either.
//! - An add (A, F) with 0 shares, a side byte other than `B` or `S`, or a reference that is
//!   already live is rejected and counted (`rejected`, the reason in `rejected_by_reason`);
//!   the live order stays as it was. Reference 0 is an ordinary reference.
//! - E, C, X, D and U act on the book of the stock the order was added under, whatever
//!   locate the message carries.
//! - A replace (U) removes the original order and adds the new reference with the
//!   original's side and stock, under the add rules: if the new half is rejected, the
//!   original is still gone.
//! - An add that crosses the book is applied as sent: a feed handler has no matching engine
//!   behind it, so crossing is the feed's business. Crossed books are flagged and counted
//!   (`crossed_events`, `crossed_books_end`), never rejected or uncrossed.
//! - Levels carry aggregate shares and an order count; queue position within a level is
//!   not kept.
//! - While a snapshot loads ([`Books::set_loading_snapshot`]), an add, stock directory or
//!   trading action at stock locate 0 (a venue that names stocks by symbol only in its
//!   snapshot) waits under its symbol; the first live message that names the symbol's
//!   locate (an add of the symbol, or an execution, cancel, delete or replace of a waiting
//!   order) places it in that book, ahead of itself, in the snapshot's order. Outside a
//!   snapshot, locate 0 is an ordinary locate.
//! - Capacities are fixed at start-up ([`BookConfig`]); exhausting one is a counted reject
//!   (`rejected_by_reason`), never a crash. The memory is zeroed pages made resident only
//!   when touched, so a 10-million-message day runs in about 50 MB.
//!
//! # What this crate must never depend on
//!
//! No I/O, threads, servers, file formats or configuration: the books see ITCH messages
//! (as `ticklane-itch`'s views) and nothing else. What a book change is published to is the
//! [`publish::Publisher`] trait, implemented above this crate.
#![deny(unsafe_code)]

pub mod publish;

mod apply;
mod bbo_row;
mod books;
mod ladder;
mod mbo;
mod order_table;
mod parked;
mod prefetch;
mod top_of_book;
mod trade;
mod type_counts;
mod zeroed_pages;

pub use apply::{Applied, Applier, ApplyError, NoBbo};
pub use bbo_row::{BboRow, BboSink};
pub use books::{BookChange, BookConfig, BookCounts, Books};
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
