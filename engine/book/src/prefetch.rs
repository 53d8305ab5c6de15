//! A hint to the CPU to bring a cache line in, ahead of the access that needs it.
//!
//! On a day shaped like Nasdaq's (thousands of names, hundreds of thousands of live orders)
//! the books no longer fit the caches: nearly every delete, execution or replace misses on
//! its order-table bucket, its order record and its price level, one after the other, and a
//! replay spends most of its time waiting for memory. Replay knows which messages come next,
//! so it asks for those lines a few messages early ([`super::Books::prefetch`], from what
//! [`Touches::of_itch`] or [`Touches::of_mbo`] reads of them), and the
//! misses of several messages overlap instead of following each other.
//!
//! The hint is the one `unsafe` outside the ring and the snapshot mapping: the intrinsic is
//! `unsafe` only because it carries a target feature, and x86-64 always has SSE.

use ticklane_itch::{Locate, OrderRef};

use super::order_table::Side;

/// Asks for the cache line holding `address` to be brought into every cache level. Any
/// address will do (it may point anywhere, or nowhere): a prefetch never faults and changes
/// nothing a program can observe, which is why callers may compute addresses with
/// `wrapping_add` and no bounds check. On targets other than x86-64 it does nothing.
#[inline(always)]
pub(super) fn prefetch<T>(address: *const T) {
    #[cfg(target_arch = "x86_64")]
    #[allow(unsafe_code)]
    // SAFETY: `_mm_prefetch` needs SSE, which every x86-64 CPU has (it is in the target's
    // baseline); a prefetch is a hint that reads nothing into the program and cannot fault,
    // whatever the address.
    unsafe {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(address.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}

/// How many messages ahead of the one being applied each stage of [`super::Books::prefetch`]
/// looks. A stage reads only lines the stage before it asked for, and each gap spans a few
/// messages' time (on this day's misses, a few hundred nanoseconds), about a memory access.
pub const FAR: usize = 16;
/// See [`FAR`].
pub const MID: usize = 8;
/// See [`FAR`].
pub const NEAR: usize = 3;

/// Live orders from which [`super::Books::worth_prefetching`] says yes. 32 Ki orders are
/// about 1 MiB of order records and bucket heads, a core's L2 cache on the machines this was
/// measured on. Below it (and below [`FROM_BOOKS`]) the lines a message needs are mostly in
/// cache already, and looking ahead costs more than the misses it hides: framing each
/// message twice and the stages' own lookups, 138 instructions a message on a 300-stock day
/// (callgrind). Measured on the 2-core development VM, books alone, best of 3:
/// 300 stocks, 23,600 live orders at the peak, 5% slower with the stages; 1,000 stocks,
/// 61,400 live orders, 12% faster; a full-day profile, 24% faster (8,900 books).
pub const FROM_ORDERS: usize = 32 << 10;
/// Books open from which [`super::Books::worth_prefetching`] says yes, whatever the live
/// orders: each book's state and each side's best levels are lines of their own, and spread
/// over hundreds of books they no longer stay in a core's first caches. Measured on the
/// 2-core development VM, top-of-book stream on, min of 11: a 600-stock day of 600,000
/// messages (27,100 live orders at the peak, so only the books turn the stages on) took
/// 42.5 ms with the stages from 512 books and 46.9 ms without.
pub const FROM_BOOKS: usize = 512;

/// What an upcoming message or record will touch, as far as the prefetch stages care: an
/// order by its reference (a delete, execution, cancel, replace or modify), or a book's side
/// (an add).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Touches {
    /// A live order, by reference.
    Order(OrderRef),
    /// The side of a locate's book that an add joins (`None`: a side byte that is no side).
    Add(Locate, Option<Side>),
    /// Nothing the stages prefetch.
    Nothing,
}

impl Touches {
    /// What an ITCH 5.0 message (any bytes: the framing ahead is unchecked) will touch.
    #[inline(always)]
    pub fn of_itch(message: &[u8]) -> Touches {
        match *message {
            [b'D' | b'E' | b'C' | b'X' | b'U', ..] => match message.get(11..19) {
                Some(&[a, b, c, d, e, f, g, h]) => {
                    Touches::Order(OrderRef(u64::from_be_bytes([a, b, c, d, e, f, g, h])))
                }
                _ => Touches::Nothing,
            },
            [b'A' | b'F', hi, lo, ..] => Touches::Add(
                Locate(u16::from_be_bytes([hi, lo])),
                message.get(19).copied().and_then(Side::from_wire),
            ),
            _ => Touches::Nothing,
        }
    }
}

/// What the messages or records [`FAR`], [`MID`] and [`NEAR`] places after the one being
/// applied will touch: what [`super::Books::prefetch`] takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TouchesAhead {
    /// [`FAR`] places on.
    pub far: Touches,
    /// [`MID`] places on.
    pub mid: Touches,
    /// [`NEAR`] places on.
    pub near: Touches,
}

impl Default for TouchesAhead {
    fn default() -> Self {
        TouchesAhead {
            far: Touches::Nothing,
            mid: Touches::Nothing,
            near: Touches::Nothing,
        }
    }
}
