//! Trades as the snapshot records them: the last print per instrument, taken from `E`, `C`
//! and `P` messages.

use ticklane_itch::{Locate, Message, Nanos, Price};

use crate::Books;

/// One trade print for an instrument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trade {
    /// The instrument.
    pub locate: Locate,
    /// Price, 1/10,000 dollars.
    pub price: Price,
    /// Shares traded.
    pub shares: u32,
    /// ITCH timestamp, ns since midnight.
    pub timestamp: Nanos,
}

/// The trade a message prints, if it prints one: `E` (at the resting order's price), `C`
/// marked printable (at its execution price) and `P` (a non-displayed order).
///
/// Call it *before* applying the message to `books`: an execution can take the last shares
/// of the order, and the order's locate and price are looked up in the book. An execution of
/// more shares than the order has left prints the shares the book clamps it to; one naming an
/// unknown order prints nothing, as it changes nothing in the book.
pub fn trade_of(books: &Books, message: &Message<'_>) -> Option<Trade> {
    match message {
        Message::OrderExecuted(m) => {
            let order = books.order(m.order_ref())?;
            Some(Trade {
                locate: order.locate,
                price: order.price,
                shares: m.executed_shares().min(order.shares),
                timestamp: m.timestamp(),
            })
        }
        Message::OrderExecutedWithPrice(m) => {
            let order = books.order(m.order_ref())?;
            (m.printable() == b'Y').then(|| Trade {
                locate: order.locate,
                price: m.execution_price(),
                shares: m.executed_shares().min(order.shares),
                timestamp: m.timestamp(),
            })
        }
        Message::Trade(m) => Some(Trade {
            locate: m.locate(),
            price: m.price(),
            shares: m.shares(),
            timestamp: m.timestamp(),
        }),
        _ => None,
    }
}
