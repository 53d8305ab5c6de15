//! One top-of-book change, as the book thread hands it to whatever writes it out.

use std::io;

use bytemuck::{Pod, Zeroable};
use ticklane_itch::{Locate, Nanos, Stock};

use crate::TopOfBook;

/// A row of the top-of-book stream: one cache line, plain old data, so it can cross a ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
#[repr(C)]
pub struct BboRow {
    /// 1-based position of the message among the input's ITCH messages.
    pub msg_index: u64,
    /// The message's ITCH timestamp, nanoseconds since midnight.
    pub timestamp_ns: u64,
    /// Aggregate shares at the best bid (0 when empty).
    pub bid_qty: u64,
    /// Aggregate shares at the best ask (0 when empty).
    pub ask_qty: u64,
    /// Best bid price in 1/10,000 dollars (0 when empty).
    pub bid_px: u32,
    /// Orders at the best bid.
    pub bid_orders: u32,
    /// Best ask price in 1/10,000 dollars (0 when empty).
    pub ask_px: u32,
    /// Orders at the best ask.
    pub ask_orders: u32,
    /// The stock's symbol from its latest `R`, space padded (spaces when none was seen).
    pub symbol: [u8; 8],
    /// Stock locate.
    pub locate: u16,
    _pad: [u8; 6],
}

const _: () = assert!(core::mem::size_of::<BboRow>() == 64);

impl BboRow {
    /// The row for `locate`'s top of book after message `msg_index`.
    #[inline(always)]
    pub fn new(
        msg_index: u64,
        timestamp: Nanos,
        locate: Locate,
        symbol: Stock,
        top: &TopOfBook,
    ) -> Self {
        BboRow {
            msg_index,
            timestamp_ns: timestamp.0,
            bid_qty: top.bid.qty,
            ask_qty: top.ask.qty,
            bid_px: top.bid.price.0,
            bid_orders: top.bid.orders,
            ask_px: top.ask.price.0,
            ask_orders: top.ask.orders,
            symbol: symbol.0,
            locate: locate.0,
            _pad: [0; 6],
        }
    }

    /// The symbol with trailing spaces removed.
    #[inline(always)]
    pub fn symbol_trimmed(&self) -> &[u8] {
        Stock::trim(&self.symbol)
    }
}

/// Where the top-of-book stream goes: formatted in place, or handed to another thread.
pub trait BboSink {
    /// Takes one row.
    ///
    /// # Errors
    ///
    /// Whatever writing the row out returns.
    fn write_row(&mut self, row: &BboRow) -> io::Result<()>;

    /// Writes out everything taken so far.
    ///
    /// # Errors
    ///
    /// Whatever writing out returns.
    fn finish(self) -> io::Result<()>;
}
