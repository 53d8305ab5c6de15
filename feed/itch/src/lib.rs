//! Nasdaq TotalView-ITCH 5.0: sans-I/O decoding into zero-copy views, and encoding; and the
//! decoded order event of a Databento MBO record ([`MboRecord`]), which the books apply the
//! same way. Plain data and byte views: this crate depends on nothing and must never do I/O,
//! so that the books can depend on it alone. `ticklane-feed` re-exports it as
//! `ticklane_feed::itch`.
//!
//! # The wire facts this crate rests on
//!
//! From Nasdaq's TotalView-ITCH 5.0 specification:
//!
//! - Every message starts with its type (1 byte), the stock locate (2), a tracking number
//!   (2) and a timestamp (6 bytes: nanoseconds since midnight). Integers are big-endian.
//! - `Price(4)` is a `u32` with four implied decimals (1/10,000 dollars); `Price(8)`, used
//!   only by the MWCB levels of `V`, is a `u64` with eight.
//! - Each type has one fixed length, type byte included:
//!
//!   | type | S | R | H | Y | L | V | W | K | J | h | A | F | E | C | X | D | U | P | Q | B | I | N | O |
//!   |---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
//!   | bytes | 12 | 39 | 25 | 20 | 26 | 35 | 12 | 28 | 35 | 21 | 36 | 40 | 31 | 36 | 23 | 19 | 35 | 44 | 40 | 19 | 50 | 20 | 48 |
//!
//!   A frame whose length disagrees with its type's is corrupt input
//!   ([`DecodeError::WrongLength`]), never a message to guess at; a type the specification
//!   does not define is [`DecodeError::UnknownType`], which a length-framed input can skip.
//! - A replace (`U`) carries neither side nor stock: the new order takes both from the order
//!   it replaces. Executions, cancels and deletes (`E`, `C`, `X`, `D`) carry the order's
//!   reference and locate, but no side or price: a book must remember them per order.
//! - Nasdaq's day files (BinaryFILE, "ITCH50") put a 2-byte big-endian length before each
//!   message; `crate::capture` reads them.
//!
//! ```
//! use ticklane_itch::{self as itch, owned, Message, OrderRef, Price, Stock};
//!
//! let add = owned::AddOrder {
//!     order_ref: OrderRef(1),
//!     side: b'B',
//!     shares: 100,
//!     stock: Stock::new(b"AAPL").unwrap(),
//!     price: Price(1_500_000),
//!     ..Default::default()
//! };
//! let mut buf = [0u8; 64];
//! let len = add.encode(&mut buf);
//! match itch::decode(&buf[..len]) {
//!     Ok(Message::AddOrder(view)) => assert_eq!(view.shares(), 100),
//!     other => panic!("{other:?}"),
//! }
//! ```
#![forbid(unsafe_code)]

mod mbo_record;
mod messages;
mod types;

pub use mbo_record::MboRecord;
pub use messages::*;
pub use types::*;

use core::fmt;

/// Why a message's bytes could not be decoded. `Copy`, allocation-free: made on the hot path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// No bytes at all: a zero-length frame.
    Empty,
    /// The type byte is not one ITCH 5.0 defines. With a length-framed input the message can
    /// be skipped; without one (lengths recovered from the type) the input cannot go on.
    UnknownType {
        /// The type byte seen.
        tag: u8,
    },
    /// The frame's length is not the spec's length for its type: the input is corrupt or not
    /// ITCH 5.0.
    WrongLength {
        /// The type byte seen.
        tag: u8,
        /// The spec's length for that type, type byte included.
        expected: usize,
        /// The length the frame had.
        actual: usize,
    },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DecodeError::Empty => write!(f, "empty message (zero length)"),
            DecodeError::UnknownType { tag } => {
                write!(
                    f,
                    "unknown ITCH 5.0 message type 0x{tag:02x} ({})",
                    printable(tag)
                )
            }
            DecodeError::WrongLength {
                tag,
                expected,
                actual,
            } => write!(
                f,
                "message type '{}' must be {expected} bytes long, the frame holds {actual}",
                printable(tag)
            ),
        }
    }
}

impl std::error::Error for DecodeError {}

/// The byte as a character if it is printable ASCII, else `?`.
pub(crate) fn printable(b: u8) -> char {
    if b.is_ascii_graphic() {
        b as char
    } else {
        '?'
    }
}
