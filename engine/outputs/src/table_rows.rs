//! The rows of the tables a replay hands to a consumer in this process besides the top of
//! book ([`crate::row_chunks`]): trades, order events and status messages, one plain
//! record each, made on the book thread by [`crate::table_tap`]. Prices are ITCH's, in
//! 1/10,000 dollars; times are ITCH's, ns since midnight; stocks are space padded.
#![forbid(unsafe_code)]

use dbn::MboMsg;

/// One trade: an execution of a resting order (`E`, `C` marked printable) or a trade of a
/// non-displayed order (`P`), as the DBN trades schema prints it, with the match number
/// and the order it executed, which DBN has no field for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TradeRow {
    /// 1-based position of the message among the input's ITCH messages.
    pub msg_index: u64,
    /// The message's ITCH timestamp.
    pub timestamp_ns: u64,
    /// Nasdaq's match number.
    pub match_number: u64,
    /// The order executed: the resting order of `E` and `C`; `P`'s own reference.
    pub order_ref: u64,
    /// The trade's price (`E`: the resting order's; `C`: the execution price).
    pub price: u32,
    /// Shares traded (an execution takes no more than the order had left).
    pub shares: u32,
    /// The stock's locate.
    pub locate: u16,
    /// The stock, from its latest `R`.
    pub stock: [u8; 8],
    /// The aggressor as DBN gives it: `B`, `A` (opposite the resting order), `N` for `P`.
    pub side: u8,
    /// The ITCH message type: `E`, `C` or `P`.
    pub kind: u8,
    /// DBN's record flags (`F_LAST`, and `F_MAYBE_BAD_BOOK` once a loss was declared).
    pub flags: u8,
}

/// One order event: a DBN MBO record exactly as `--dbn-out --schema mbo` writes it, with
/// the ITCH time and the stock beside it.
#[derive(Clone, Copy, Debug)]
pub struct OrderRow {
    /// The record.
    pub record: MboMsg,
    /// The message's ITCH timestamp.
    pub timestamp_ns: u64,
    /// The stock, from its latest `R` for the record's instrument (its locate).
    pub stock: [u8; 8],
}

/// One status message: a system event (`S`), a trading action (`H`), a Reg SHO
/// restriction (`Y`), an operational halt (`h`), a market-wide circuit breaker's breach
/// (`W`), or a net order imbalance indicator (`I`, whose figures only it fills).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatusRow {
    /// 1-based position of the message among the input's ITCH messages.
    pub msg_index: u64,
    /// The message's ITCH timestamp.
    pub timestamp_ns: u64,
    /// `I`: shares paired at the reference price.
    pub paired_shares: u64,
    /// `I`: shares not paired.
    pub imbalance_shares: u64,
    /// `I`: the far, near and current reference prices.
    pub far_price: u32,
    /// See `far_price`.
    pub near_price: u32,
    /// See `far_price`.
    pub reference_price: u32,
    /// The stock's locate (0 for the market-wide `S` and `W`).
    pub locate: u16,
    /// The ITCH message type.
    pub kind: u8,
    /// The state the message sets: `S` its event code, `H` its trading state, `Y` its Reg
    /// SHO action, `h` its halt action, `W` the level breached, `I` the imbalance
    /// direction.
    pub state: u8,
    /// The message's own stock (spaces for `S` and `W`).
    pub stock: [u8; 8],
    /// `H`: the reason code (4 letters, space padded); `h`: the market code (1 letter).
    pub reason: [u8; 4],
    /// `I`: the cross type.
    pub cross_type: u8,
    /// `I`: the price variation indicator.
    pub price_variation: u8,
}
