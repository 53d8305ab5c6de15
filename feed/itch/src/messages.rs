//! The 23 message types of Nasdaq TotalView-ITCH 5.0, as zero-copy views and owned values.
//!
//! One table below is the single source of truth for every layout: each type's tag, its
//! length (type byte included) and the offset of each field after the common header
//! (type 1, stock locate 2, tracking number 2, timestamp 6). A compile-time check proves the
//! fields tile the message exactly, so a typo in an offset does not build.
//!
//! A view (`AddOrder<'a>`) borrows exactly `LEN` bytes, checked once by [`decode`]; its
//! accessors read big-endian fields at constant offsets and cannot fail. The owned twin
//! (`owned::AddOrder`) holds the same fields by value and encodes them.

use super::types::{Alpha, Locate, MatchNumber, Nanos, OrderRef, Price, Price8, Stock, WireField};
use super::DecodeError;

/// Bytes of the header every message starts with: type, locate, tracking number, timestamp.
pub const HEADER_LEN: usize = 11;

/// Checks that `(offset, size)` pairs tile `HEADER_LEN .. len` with no gap or overlap.
const fn check_layout(len: usize, fields: &[(usize, usize)]) {
    let mut next = HEADER_LEN;
    let mut i = 0;
    while i < fields.len() {
        assert!(
            fields[i].0 == next,
            "ITCH layout: field offset does not follow the previous field"
        );
        next += fields[i].1;
        i += 1;
    }
    assert!(
        next == len,
        "ITCH layout: fields do not end at the message length"
    );
}

macro_rules! itch_messages {
    ($(
        $(#[$doc:meta])*
        $tag:literal $Name:ident len $len:literal {
            $( $(#[$fdoc:meta])* $field:ident : $ty:ty = $off:literal ),* $(,)?
        }
    )*) => {
        $(
            $(#[$doc])*
            ///
            /// A zero-copy view over exactly the message's bytes.
            #[derive(Clone, Copy)]
            pub struct $Name<'a>(&'a [u8; $len]);

            const _: () = check_layout($len, &[$(($off, <$ty as WireField>::SIZE)),*]);

            impl<'a> $Name<'a> {
                /// The message type byte.
                pub const TAG: u8 = $tag;
                /// Length on the wire, type byte included.
                pub const LEN: usize = $len;

                /// Wraps bytes already checked to hold this message.
                #[inline(always)]
                pub fn new(bytes: &'a [u8; $len]) -> Self {
                    $Name(bytes)
                }
                /// The raw bytes of the message.
                #[inline(always)]
                pub fn bytes(&self) -> &'a [u8; $len] {
                    self.0
                }
                /// Stock locate code (for E, C, X, D and U the order's own locate is
                /// authoritative; the header should agree).
                #[inline(always)]
                pub fn locate(&self) -> Locate {
                    Locate::read(&self.0[1..])
                }
                /// Nasdaq internal tracking number.
                #[inline(always)]
                pub fn tracking(&self) -> u16 {
                    u16::read(&self.0[3..])
                }
                /// Nanoseconds since midnight.
                #[inline(always)]
                pub fn timestamp(&self) -> Nanos {
                    Nanos::read(&self.0[5..])
                }
                $(
                    $(#[$fdoc])*
                    #[inline(always)]
                    pub fn $field(&self) -> $ty {
                        <$ty as WireField>::read(&self.0[$off..])
                    }
                )*
                /// Copies the fields into an owned value.
                pub fn to_owned(&self) -> owned::$Name {
                    owned::$Name {
                        locate: self.locate(),
                        tracking: self.tracking(),
                        timestamp: self.timestamp(),
                        $($field: self.$field(),)*
                    }
                }
            }

            impl core::fmt::Debug for $Name<'_> {
                fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                    core::fmt::Debug::fmt(&self.to_owned(), f)
                }
            }
        )*

        /// Every ITCH 5.0 message, borrowed from the bytes it was decoded from.
        #[derive(Clone, Copy, Debug)]
        pub enum Message<'a> {
            $( $(#[$doc])* $Name($Name<'a>), )*
        }

        impl<'a> Message<'a> {
            /// The message type byte.
            #[inline]
            pub fn tag(&self) -> u8 {
                match self { $( Message::$Name(_) => $tag, )* }
            }
            /// Stock locate code from the header.
            #[inline]
            pub fn locate(&self) -> Locate {
                match self { $( Message::$Name(m) => m.locate(), )* }
            }
            /// Nanoseconds since midnight from the header.
            #[inline]
            pub fn timestamp(&self) -> Nanos {
                match self { $( Message::$Name(m) => m.timestamp(), )* }
            }
            /// Copies the message into an owned value.
            pub fn to_owned(&self) -> owned::Message {
                match self { $( Message::$Name(m) => owned::Message::$Name(m.to_owned()), )* }
            }
        }

        /// Decodes one message from exactly its bytes (no length prefix).
        ///
        /// The length is checked once against the spec; the view's accessors then cannot fail.
        ///
        /// # Errors
        ///
        /// [`DecodeError::Empty`] for no bytes, [`DecodeError::UnknownType`] for a type byte
        /// that ITCH 5.0 does not define, [`DecodeError::WrongLength`] when the length is not
        /// the spec's for that type.
        #[inline]
        pub fn decode(bytes: &[u8]) -> Result<Message<'_>, DecodeError> {
            let Some(&tag) = bytes.first() else {
                return Err(DecodeError::Empty);
            };
            match tag {
                $(
                    $tag => match <&[u8; $len]>::try_from(bytes) {
                        Ok(exact) => Ok(Message::$Name($Name(exact))),
                        Err(_) => Err(DecodeError::WrongLength {
                            tag,
                            expected: $len,
                            actual: bytes.len(),
                        }),
                    },
                )*
                _ => Err(DecodeError::UnknownType { tag }),
            }
        }

        /// The spec length of a message type (type byte included), or `None` if ITCH 5.0 does
        /// not define the type.
        #[inline]
        pub const fn message_len(tag: u8) -> Option<usize> {
            match tag {
                $( $tag => Some($len), )*
                _ => None,
            }
        }

        /// [`message_len`] as a table by type byte, 0 for a type ITCH 5.0 does not define (every
        /// length is below 256; the longest, `I`, is 50): one load on a hot path, where the
        /// `match` is a jump or a chain of compares.
        pub const MESSAGE_LENS: [u8; 256] = {
            let mut table = [0u8; 256];
            $( table[$tag as usize] = $len; )*
            table
        };

        /// Every type byte ITCH 5.0 defines, in the spec's order.
        pub const ALL_TAGS: &[u8] = &[$($tag),*];

        /// Owned copies of each message, for building feeds and for tests.
        pub mod owned {
            use super::*;

            $(
                $(#[$doc])*
                #[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
                pub struct $Name {
                    /// Stock locate code.
                    pub locate: Locate,
                    /// Nasdaq internal tracking number.
                    pub tracking: u16,
                    /// Nanoseconds since midnight (at most 2^48 - 1).
                    pub timestamp: Nanos,
                    $( $(#[$fdoc])* pub $field: $ty, )*
                }

                impl $Name {
                    /// Length on the wire, type byte included.
                    pub const LEN: usize = $len;

                    /// Writes the message (no length prefix) into the first `LEN` bytes of
                    /// `out` and returns `LEN`.
                    ///
                    /// # Panics
                    ///
                    /// If `out` is shorter than `LEN`.
                    pub fn encode(&self, out: &mut [u8]) -> usize {
                        let out = &mut out[..$len];
                        out[0] = $tag;
                        self.locate.write(&mut out[1..]);
                        self.tracking.write(&mut out[3..]);
                        self.timestamp.write(&mut out[5..]);
                        $( self.$field.write(&mut out[$off..]); )*
                        $len
                    }
                }
            )*

            /// Every ITCH 5.0 message, owned.
            #[derive(Clone, Copy, Debug, PartialEq, Eq)]
            pub enum Message {
                $( $(#[$doc])* $Name($Name), )*
            }

            impl Message {
                /// The message type byte.
                pub fn tag(&self) -> u8 {
                    match self { $( Message::$Name(_) => $tag, )* }
                }
                /// Writes the message (no length prefix) into `out` and returns its length.
                ///
                /// # Panics
                ///
                /// If `out` is shorter than the message (64 bytes always suffice).
                pub fn encode(&self, out: &mut [u8]) -> usize {
                    match self { $( Message::$Name(m) => m.encode(out), )* }
                }
            }
        }
    };
}

itch_messages! {
    /// `S` System Event.
    b'S' SystemEvent len 12 {
        /// `O` start of messages, `S` start of system hours, `Q` start of market hours,
        /// `M` end of market hours, `E` end of system hours, `C` end of messages.
        event_code: u8 = 11,
    }
    /// `R` Stock Directory.
    b'R' StockDirectory len 39 {
        /// Symbol, space padded.
        stock: Stock = 11,
        market_category: u8 = 19,
        financial_status: u8 = 20,
        /// Shares in a round lot.
        round_lot_size: u32 = 21,
        round_lots_only: u8 = 25,
        issue_classification: u8 = 26,
        issue_subtype: Alpha<2> = 27,
        authenticity: u8 = 29,
        short_sale_threshold: u8 = 30,
        ipo_flag: u8 = 31,
        luld_reference_price_tier: u8 = 32,
        etp_flag: u8 = 33,
        etp_leverage_factor: u32 = 34,
        inverse_indicator: u8 = 38,
    }
    /// `H` Stock Trading Action.
    b'H' StockTradingAction len 25 {
        stock: Stock = 11,
        /// `H` halted, `P` paused, `Q` quotation only, `T` trading.
        trading_state: u8 = 19,
        reserved: u8 = 20,
        reason: Alpha<4> = 21,
    }
    /// `Y` Reg SHO Short Sale Price Test Restricted Indicator.
    b'Y' RegShoRestriction len 20 {
        stock: Stock = 11,
        /// `0` no test, `1` restriction in effect (intraday drop), `2` restriction remains.
        reg_sho_action: u8 = 19,
    }
    /// `L` Market Participant Position.
    b'L' MarketParticipantPosition len 26 {
        mpid: Alpha<4> = 11,
        stock: Stock = 15,
        primary_market_maker: u8 = 23,
        market_maker_mode: u8 = 24,
        market_participant_state: u8 = 25,
    }
    /// `V` MWCB Decline Level: the three market-wide circuit-breaker levels.
    b'V' MwcbDeclineLevel len 35 {
        /// In 1/100,000,000 dollars.
        level1: Price8 = 11,
        /// In 1/100,000,000 dollars.
        level2: Price8 = 19,
        /// In 1/100,000,000 dollars.
        level3: Price8 = 27,
    }
    /// `W` MWCB Status: a circuit-breaker level was breached.
    b'W' MwcbStatus len 12 {
        breached_level: u8 = 11,
    }
    /// `K` IPO Quoting Period Update.
    b'K' IpoQuotingPeriod len 28 {
        stock: Stock = 11,
        /// Seconds since midnight.
        release_time: u32 = 19,
        release_qualifier: u8 = 23,
        ipo_price: Price = 24,
    }
    /// `J` LULD Auction Collar.
    b'J' LuldAuctionCollar len 35 {
        stock: Stock = 11,
        reference_price: Price = 19,
        upper_price: Price = 23,
        lower_price: Price = 27,
        extension: u32 = 31,
    }
    /// `h` Operational Halt.
    b'h' OperationalHalt len 21 {
        stock: Stock = 11,
        market_code: u8 = 19,
        /// `H` halted, `T` resumed.
        halt_action: u8 = 20,
    }
    /// `A` Add Order, no MPID attribution.
    b'A' AddOrder len 36 {
        order_ref: OrderRef = 11,
        /// `B` buy, `S` sell.
        side: u8 = 19,
        shares: u32 = 20,
        stock: Stock = 24,
        price: Price = 32,
    }
    /// `F` Add Order with MPID attribution.
    b'F' AddOrderMpid len 40 {
        order_ref: OrderRef = 11,
        /// `B` buy, `S` sell.
        side: u8 = 19,
        shares: u32 = 20,
        stock: Stock = 24,
        price: Price = 32,
        attribution: Alpha<4> = 36,
    }
    /// `E` Order Executed, at the resting order's price.
    b'E' OrderExecuted len 31 {
        order_ref: OrderRef = 11,
        executed_shares: u32 = 19,
        match_number: MatchNumber = 23,
    }
    /// `C` Order Executed With Price: the print is at `execution_price`, the resting order
    /// is reduced all the same.
    b'C' OrderExecutedWithPrice len 36 {
        order_ref: OrderRef = 11,
        executed_shares: u32 = 19,
        match_number: MatchNumber = 23,
        /// `Y` printable, `N` not.
        printable: u8 = 31,
        execution_price: Price = 32,
    }
    /// `X` Order Cancel: part of the order's shares are cancelled.
    b'X' OrderCancel len 23 {
        order_ref: OrderRef = 11,
        cancelled_shares: u32 = 19,
    }
    /// `D` Order Delete.
    b'D' OrderDelete len 19 {
        order_ref: OrderRef = 11,
    }
    /// `U` Order Replace: the original order leaves, a new one takes its side and stock.
    b'U' OrderReplace len 35 {
        original_order_ref: OrderRef = 11,
        new_order_ref: OrderRef = 19,
        shares: u32 = 27,
        price: Price = 31,
    }
    /// `P` Trade (non-cross), against a non-displayed order.
    b'P' Trade len 44 {
        order_ref: OrderRef = 11,
        side: u8 = 19,
        shares: u32 = 20,
        stock: Stock = 24,
        price: Price = 32,
        match_number: MatchNumber = 36,
    }
    /// `Q` Cross Trade.
    b'Q' CrossTrade len 40 {
        shares: u64 = 11,
        stock: Stock = 19,
        cross_price: Price = 27,
        match_number: MatchNumber = 31,
        /// `O` opening, `C` closing, `H` halt or IPO, `I` intraday.
        cross_type: u8 = 39,
    }
    /// `B` Broken Trade.
    b'B' BrokenTrade len 19 {
        match_number: MatchNumber = 11,
    }
    /// `I` Net Order Imbalance Indicator.
    b'I' Noii len 50 {
        paired_shares: u64 = 11,
        imbalance_shares: u64 = 19,
        imbalance_direction: u8 = 27,
        stock: Stock = 28,
        far_price: Price = 36,
        near_price: Price = 40,
        current_reference_price: Price = 44,
        cross_type: u8 = 48,
        price_variation_indicator: u8 = 49,
    }
    /// `N` Retail Price Improvement Indicator.
    b'N' RetailInterest len 20 {
        stock: Stock = 11,
        interest_flag: u8 = 19,
    }
    /// `O` Direct Listing with Capital Raise Price Discovery.
    b'O' DlcrPriceDiscovery len 48 {
        stock: Stock = 11,
        open_eligibility_status: u8 = 19,
        minimum_allowable_price: Price = 20,
        maximum_allowable_price: Price = 24,
        near_execution_price: Price = 28,
        /// Nanoseconds since midnight, in 8 bytes.
        near_execution_time: u64 = 32,
        lower_price_range_collar: Price = 40,
        upper_price_range_collar: Price = 44,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_lengths() {
        let expected: &[(u8, usize)] = &[
            (b'S', 12),
            (b'R', 39),
            (b'H', 25),
            (b'Y', 20),
            (b'L', 26),
            (b'V', 35),
            (b'W', 12),
            (b'K', 28),
            (b'J', 35),
            (b'h', 21),
            (b'A', 36),
            (b'F', 40),
            (b'E', 31),
            (b'C', 36),
            (b'X', 23),
            (b'D', 19),
            (b'U', 35),
            (b'P', 44),
            (b'Q', 40),
            (b'B', 19),
            (b'I', 50),
            (b'N', 20),
            (b'O', 48),
        ];
        assert_eq!(ALL_TAGS.len(), 23);
        for &(tag, len) in expected {
            assert_eq!(message_len(tag), Some(len), "type {}", tag as char);
        }
        assert_eq!(message_len(b'Z'), None);
    }

    #[test]
    fn add_order_fields_at_spec_offsets() {
        let mut b = [0u8; 36];
        b[0] = b'A';
        b[1..3].copy_from_slice(&7u16.to_be_bytes());
        b[5..11].copy_from_slice(&[0, 0, 0, 0, 1, 2]);
        b[11..19].copy_from_slice(&42u64.to_be_bytes());
        b[19] = b'S';
        b[20..24].copy_from_slice(&100u32.to_be_bytes());
        b[24..32].copy_from_slice(b"AAPL    ");
        b[32..36].copy_from_slice(&1_500_000u32.to_be_bytes());
        let Ok(Message::AddOrder(a)) = decode(&b) else {
            panic!("not an add")
        };
        assert_eq!(a.locate(), Locate(7));
        assert_eq!(a.timestamp(), Nanos(258));
        assert_eq!(a.order_ref(), OrderRef(42));
        assert_eq!(a.side(), b'S');
        assert_eq!(a.shares(), 100);
        assert_eq!(a.stock().trimmed(), b"AAPL");
        assert_eq!(a.price(), Price(1_500_000));
    }

    /// Any bytes of the right length for a type: every byte lies in some field.
    fn any_message_bytes() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        proptest::sample::select(ALL_TAGS).prop_flat_map(|tag| {
            let len = message_len(tag).expect("a defined type");
            proptest::collection::vec(any::<u8>(), len - 1).prop_map(move |rest| {
                let mut bytes = Vec::with_capacity(len);
                bytes.push(tag);
                bytes.extend(rest);
                bytes
            })
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2_000))]

        /// bytes -> view -> owned -> bytes is the identity for all 23 types, and so is
        /// owned -> bytes -> owned: each field is read and written at its spec offset.
        #[test]
        fn every_type_round_trips(bytes in any_message_bytes()) {
            let view = decode(&bytes).expect("right length for its type");
            proptest::prop_assert_eq!(view.tag(), bytes[0]);
            let owned = view.to_owned();
            let mut out = [0u8; 64];
            let len = owned.encode(&mut out);
            proptest::prop_assert_eq!(&out[..len], &bytes[..]);
            let again = decode(&out[..len]).expect("encoded bytes decode").to_owned();
            proptest::prop_assert_eq!(again, owned);
        }

        /// Any other length for a defined type is an error naming both lengths.
        #[test]
        fn any_wrong_length_is_an_error(tag in proptest::sample::select(ALL_TAGS), len in 1usize..80) {
            let expected = message_len(tag).expect("a defined type");
            proptest::prop_assume!(len != expected);
            let mut bytes = vec![0u8; len];
            bytes[0] = tag;
            proptest::prop_assert_eq!(
                decode(&bytes).unwrap_err(),
                DecodeError::WrongLength { tag, expected, actual: len }
            );
        }
    }

    #[test]
    fn wrong_length_and_unknown_type_are_errors() {
        assert_eq!(decode(&[]).unwrap_err(), DecodeError::Empty);
        assert_eq!(
            decode(&[b'D'; 18]).unwrap_err(),
            DecodeError::WrongLength {
                tag: b'D',
                expected: 19,
                actual: 18
            }
        );
        assert_eq!(
            decode(&[b'z'; 5]).unwrap_err(),
            DecodeError::UnknownType { tag: b'z' }
        );
    }
}
