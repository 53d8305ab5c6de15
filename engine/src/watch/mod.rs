//! The commands that watch a running engine from another process and print as they go:
//! `book` (one book, or every book as CSV, from the snapshot file), `top` (frames of the
//! busiest books) and `subscribe` (a subscriber server's updates). They read and render, so
//! they sit above the views; each takes the writers it prints to, so a test runs it without
//! a process.

mod book;
mod subscribe;
mod top;

pub use book::{print_book, BookRequest};
pub use subscribe::{print_subscriber_updates, BookOut};
pub use top::{print_top, TopRequest};
