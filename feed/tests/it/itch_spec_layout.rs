//! Every ITCH 5.0 message type against bytes laid out by hand from the specification.
//!
//! `itch::messages` builds the views and the encoders from one table, so the round-trip
//! property there cannot see a wrong offset: the view and the encoder would share it. Here
//! each type's bytes are placed field by field at the offsets of the Nasdaq TotalView-ITCH
//! 5.0 specification (section 4, "Message Formats"; cross-checked against Essenceia/ITCH's
//! generated field map and, for the 2020 `O` message, two independent decoders), written
//! out below as literal numbers, never taken from the crate. Every field holds a value
//! unlike its neighbours', so a field read one byte off, or two fields swapped, fails.
//!
//! Each test asserts every accessor of the decoded view, that an owned value built from
//! the same literals encodes to exactly the hand-laid bytes, and that the view copies into
//! that owned value.

use ticklane_feed::itch::{
    self, owned, Alpha, Locate, MatchNumber, Message, Nanos, OrderRef, Price, Price8, Stock,
};

/// Header values shared by every test (spec: locate at 1, tracking at 3, timestamp at 5).
const LOCATE: u16 = 0x0A0B;
const TRACKING: u16 = 0x0C0D;
const TIMESTAMP: u64 = 0x0102_0304_0506;

/// A message laid out by hand: bytes placed at explicit offsets, each byte exactly once.
struct HandLaid {
    bytes: Vec<u8>,
    written: Vec<bool>,
}

impl HandLaid {
    /// The spec's length (type byte included) and the header every message starts with.
    fn new(tag: u8, len: usize) -> Self {
        let mut m = HandLaid {
            bytes: vec![0; len],
            written: vec![false; len],
        };
        m.at(0, &[tag]);
        m.at(1, &LOCATE.to_be_bytes());
        m.at(3, &TRACKING.to_be_bytes());
        m.at(5, &TIMESTAMP.to_be_bytes()[2..]);
        m
    }

    fn at(&mut self, offset: usize, field: &[u8]) -> &mut Self {
        for (i, &b) in field.iter().enumerate() {
            assert!(!self.written[offset + i], "byte {} laid twice", offset + i);
            self.written[offset + i] = true;
            self.bytes[offset + i] = b;
        }
        self
    }

    fn u8(&mut self, offset: usize, v: u8) -> &mut Self {
        self.at(offset, &[v])
    }
    fn u32(&mut self, offset: usize, v: u32) -> &mut Self {
        self.at(offset, &v.to_be_bytes())
    }
    fn u64(&mut self, offset: usize, v: u64) -> &mut Self {
        self.at(offset, &v.to_be_bytes())
    }

    /// The bytes, once every byte of the message has been laid.
    fn done(&self) -> Vec<u8> {
        let missing: Vec<usize> = (0..self.bytes.len())
            .filter(|&i| !self.written[i])
            .collect();
        assert!(missing.is_empty(), "bytes never laid: {missing:?}");
        self.bytes.clone()
    }
}

fn stock(text: &[u8; 8]) -> Stock {
    Alpha(*text)
}

/// What an owned message's encoder writes.
fn encoded(encode: impl Fn(&mut [u8]) -> usize) -> Vec<u8> {
    let mut out = [0xEEu8; 64];
    let len = encode(&mut out);
    out[..len].to_vec()
}

/// Decodes `bytes` (checking the header accessors) and hands back the message.
fn decoded(bytes: &[u8]) -> Message<'_> {
    let message = itch::decode(bytes).expect("hand-laid bytes decode");
    assert_eq!(message.tag(), bytes[0]);
    assert_eq!(message.locate(), Locate(LOCATE));
    assert_eq!(message.timestamp(), Nanos(TIMESTAMP));
    assert_eq!(itch::message_len(bytes[0]), Some(bytes.len()));
    message
}

/// Asserts the three header accessors of a view.
macro_rules! assert_header {
    ($v:expr) => {{
        assert_eq!($v.locate(), Locate(LOCATE));
        assert_eq!($v.tracking(), TRACKING);
        assert_eq!($v.timestamp(), Nanos(TIMESTAMP));
    }};
}

#[test]
fn s_system_event() {
    let bytes = HandLaid::new(b'S', 12).u8(11, b'Q').done();
    let Message::SystemEvent(v) = decoded(&bytes) else {
        panic!("not S")
    };
    assert_header!(v);
    assert_eq!(v.event_code(), b'Q');
    let o = owned::SystemEvent {
        locate: Locate(LOCATE),
        tracking: TRACKING,
        timestamp: Nanos(TIMESTAMP),
        event_code: b'Q',
    };
    assert_eq!(encoded(|b| o.encode(b)), bytes);
    assert_eq!(v.to_owned(), o);
}

#[test]
fn r_stock_directory() {
    let bytes = HandLaid::new(b'R', 39)
        .at(11, b"TICKL   ")
        .u8(19, b'G')
        .u8(20, b'D')
        .u32(21, 0x2122_2324)
        .u8(25, b'Y')
        .u8(26, b'C')
        .at(27, b"RT")
        .u8(29, b'P')
        .u8(30, b'N')
        .u8(31, b'1')
        .u8(32, b'2')
        .u8(33, b'3')
        .u32(34, 0x3132_3334)
        .u8(38, b'4')
        .done();
    let Message::StockDirectory(v) = decoded(&bytes) else {
        panic!("not R")
    };
    assert_header!(v);
    assert_eq!(v.stock(), stock(b"TICKL   "));
    assert_eq!(v.market_category(), b'G');
    assert_eq!(v.financial_status(), b'D');
    assert_eq!(v.round_lot_size(), 0x2122_2324);
    assert_eq!(v.round_lots_only(), b'Y');
    assert_eq!(v.issue_classification(), b'C');
    assert_eq!(v.issue_subtype(), Alpha(*b"RT"));
    assert_eq!(v.authenticity(), b'P');
    assert_eq!(v.short_sale_threshold(), b'N');
    assert_eq!(v.ipo_flag(), b'1');
    assert_eq!(v.luld_reference_price_tier(), b'2');
    assert_eq!(v.etp_flag(), b'3');
    assert_eq!(v.etp_leverage_factor(), 0x3132_3334);
    assert_eq!(v.inverse_indicator(), b'4');
    let o = owned::StockDirectory {
        locate: Locate(LOCATE),
        tracking: TRACKING,
        timestamp: Nanos(TIMESTAMP),
        stock: stock(b"TICKL   "),
        market_category: b'G',
        financial_status: b'D',
        round_lot_size: 0x2122_2324,
        round_lots_only: b'Y',
        issue_classification: b'C',
        issue_subtype: Alpha(*b"RT"),
        authenticity: b'P',
        short_sale_threshold: b'N',
        ipo_flag: b'1',
        luld_reference_price_tier: b'2',
        etp_flag: b'3',
        etp_leverage_factor: 0x3132_3334,
        inverse_indicator: b'4',
    };
    assert_eq!(encoded(|b| o.encode(b)), bytes);
    assert_eq!(v.to_owned(), o);
}

#[test]
fn h_stock_trading_action() {
    let bytes = HandLaid::new(b'H', 25)
        .at(11, b"HALTD   ")
        .u8(19, b'H')
        .u8(20, b'r')
        .at(21, b"IPO1")
        .done();
    let Message::StockTradingAction(v) = decoded(&bytes) else {
        panic!("not H")
    };
    assert_header!(v);
    assert_eq!(v.stock(), stock(b"HALTD   "));
    assert_eq!(v.trading_state(), b'H');
    assert_eq!(v.reserved(), b'r');
    assert_eq!(v.reason(), Alpha(*b"IPO1"));
    let o = owned::StockTradingAction {
        locate: Locate(LOCATE),
        tracking: TRACKING,
        timestamp: Nanos(TIMESTAMP),
        stock: stock(b"HALTD   "),
        trading_state: b'H',
        reserved: b'r',
        reason: Alpha(*b"IPO1"),
    };
    assert_eq!(encoded(|b| o.encode(b)), bytes);
    assert_eq!(v.to_owned(), o);
}

#[test]
fn y_reg_sho_restriction() {
    let bytes = HandLaid::new(b'Y', 20)
        .at(11, b"SHORT   ")
        .u8(19, b'1')
        .done();
    let Message::RegShoRestriction(v) = decoded(&bytes) else {
        panic!("not Y")
    };
    assert_header!(v);
    assert_eq!(v.stock(), stock(b"SHORT   "));
    assert_eq!(v.reg_sho_action(), b'1');
    let o = owned::RegShoRestriction {
        locate: Locate(LOCATE),
        tracking: TRACKING,
        timestamp: Nanos(TIMESTAMP),
        stock: stock(b"SHORT   "),
        reg_sho_action: b'1',
    };
    assert_eq!(encoded(|b| o.encode(b)), bytes);
    assert_eq!(v.to_owned(), o);
}

#[test]
fn l_market_participant_position() {
    let bytes = HandLaid::new(b'L', 26)
        .at(11, b"NSDQ")
        .at(15, b"MKTMK   ")
        .u8(23, b'Y')
        .u8(24, b'N')
        .u8(25, b'A')
        .done();
    let Message::MarketParticipantPosition(v) = decoded(&bytes) else {
        panic!("not L")
    };
    assert_header!(v);
    assert_eq!(v.mpid(), Alpha(*b"NSDQ"));
    assert_eq!(v.stock(), stock(b"MKTMK   "));
    assert_eq!(v.primary_market_maker(), b'Y');
    assert_eq!(v.market_maker_mode(), b'N');
    assert_eq!(v.market_participant_state(), b'A');
    let o = owned::MarketParticipantPosition {
        locate: Locate(LOCATE),
        tracking: TRACKING,
        timestamp: Nanos(TIMESTAMP),
        mpid: Alpha(*b"NSDQ"),
        stock: stock(b"MKTMK   "),
        primary_market_maker: b'Y',
        market_maker_mode: b'N',
        market_participant_state: b'A',
    };
    assert_eq!(encoded(|b| o.encode(b)), bytes);
    assert_eq!(v.to_owned(), o);
}

#[test]
fn v_mwcb_decline_level() {
    let bytes = HandLaid::new(b'V', 35)
        .u64(11, 0x1112_1314_1516_1718)
        .u64(19, 0x2122_2324_2526_2728)
        .u64(27, 0x3132_3334_3536_3738)
        .done();
    let Message::MwcbDeclineLevel(v) = decoded(&bytes) else {
        panic!("not V")
    };
    assert_header!(v);
    assert_eq!(v.level1(), Price8(0x1112_1314_1516_1718));
    assert_eq!(v.level2(), Price8(0x2122_2324_2526_2728));
    assert_eq!(v.level3(), Price8(0x3132_3334_3536_3738));
    let o = owned::MwcbDeclineLevel {
        locate: Locate(LOCATE),
        tracking: TRACKING,
        timestamp: Nanos(TIMESTAMP),
        level1: Price8(0x1112_1314_1516_1718),
        level2: Price8(0x2122_2324_2526_2728),
        level3: Price8(0x3132_3334_3536_3738),
    };
    assert_eq!(encoded(|b| o.encode(b)), bytes);
    assert_eq!(v.to_owned(), o);
}

#[test]
fn w_mwcb_status() {
    let bytes = HandLaid::new(b'W', 12).u8(11, b'2').done();
    let Message::MwcbStatus(v) = decoded(&bytes) else {
        panic!("not W")
    };
    assert_header!(v);
    assert_eq!(v.breached_level(), b'2');
    let o = owned::MwcbStatus {
        locate: Locate(LOCATE),
        tracking: TRACKING,
        timestamp: Nanos(TIMESTAMP),
        breached_level: b'2',
    };
    assert_eq!(encoded(|b| o.encode(b)), bytes);
    assert_eq!(v.to_owned(), o);
}

#[test]
fn k_ipo_quoting_period() {
    let bytes = HandLaid::new(b'K', 28)
        .at(11, b"NEWCO   ")
        .u32(19, 0x1112_1314)
        .u8(23, b'A')
        .u32(24, 0x2122_2324)
        .done();
    let Message::IpoQuotingPeriod(v) = decoded(&bytes) else {
        panic!("not K")
    };
    assert_header!(v);
    assert_eq!(v.stock(), stock(b"NEWCO   "));
    assert_eq!(v.release_time(), 0x1112_1314);
    assert_eq!(v.release_qualifier(), b'A');
    assert_eq!(v.ipo_price(), Price(0x2122_2324));
    let o = owned::IpoQuotingPeriod {
        locate: Locate(LOCATE),
        tracking: TRACKING,
        timestamp: Nanos(TIMESTAMP),
        stock: stock(b"NEWCO   "),
        release_time: 0x1112_1314,
        release_qualifier: b'A',
        ipo_price: Price(0x2122_2324),
    };
    assert_eq!(encoded(|b| o.encode(b)), bytes);
    assert_eq!(v.to_owned(), o);
}

#[test]
fn j_luld_auction_collar() {
    let bytes = HandLaid::new(b'J', 35)
        .at(11, b"COLLR   ")
        .u32(19, 0x1112_1314)
        .u32(23, 0x2122_2324)
        .u32(27, 0x3132_3334)
        .u32(31, 0x4142_4344)
        .done();
    let Message::LuldAuctionCollar(v) = decoded(&bytes) else {
        panic!("not J")
    };
    assert_header!(v);
    assert_eq!(v.stock(), stock(b"COLLR   "));
    assert_eq!(v.reference_price(), Price(0x1112_1314));
    assert_eq!(v.upper_price(), Price(0x2122_2324));
    assert_eq!(v.lower_price(), Price(0x3132_3334));
    assert_eq!(v.extension(), 0x4142_4344);
    let o = owned::LuldAuctionCollar {
        locate: Locate(LOCATE),
        tracking: TRACKING,
        timestamp: Nanos(TIMESTAMP),
        stock: stock(b"COLLR   "),
        reference_price: Price(0x1112_1314),
        upper_price: Price(0x2122_2324),
        lower_price: Price(0x3132_3334),
        extension: 0x4142_4344,
    };
    assert_eq!(encoded(|b| o.encode(b)), bytes);
    assert_eq!(v.to_owned(), o);
}

#[test]
fn h_lower_operational_halt() {
    let bytes = HandLaid::new(b'h', 21)
        .at(11, b"OPHLT   ")
        .u8(19, b'Q')
        .u8(20, b'H')
        .done();
    let Message::OperationalHalt(v) = decoded(&bytes) else {
        panic!("not h")
    };
    assert_header!(v);
    assert_eq!(v.stock(), stock(b"OPHLT   "));
    assert_eq!(v.market_code(), b'Q');
    assert_eq!(v.halt_action(), b'H');
    let o = owned::OperationalHalt {
        locate: Locate(LOCATE),
        tracking: TRACKING,
        timestamp: Nanos(TIMESTAMP),
        stock: stock(b"OPHLT   "),
        market_code: b'Q',
        halt_action: b'H',
    };
    assert_eq!(encoded(|b| o.encode(b)), bytes);
    assert_eq!(v.to_owned(), o);
}

#[test]
fn a_add_order() {
    let bytes = HandLaid::new(b'A', 36)
        .u64(11, 0x1112_1314_1516_1718)
        .u8(19, b'S')
        .u32(20, 0x2122_2324)
        .at(24, b"ADDOR   ")
        .u32(32, 0x3132_3334)
        .done();
    let Message::AddOrder(v) = decoded(&bytes) else {
        panic!("not A")
    };
    assert_header!(v);
    assert_eq!(v.order_ref(), OrderRef(0x1112_1314_1516_1718));
    assert_eq!(v.side(), b'S');
    assert_eq!(v.shares(), 0x2122_2324);
    assert_eq!(v.stock(), stock(b"ADDOR   "));
    assert_eq!(v.price(), Price(0x3132_3334));
    let o = owned::AddOrder {
        locate: Locate(LOCATE),
        tracking: TRACKING,
        timestamp: Nanos(TIMESTAMP),
        order_ref: OrderRef(0x1112_1314_1516_1718),
        side: b'S',
        shares: 0x2122_2324,
        stock: stock(b"ADDOR   "),
        price: Price(0x3132_3334),
    };
    assert_eq!(encoded(|b| o.encode(b)), bytes);
    assert_eq!(v.to_owned(), o);
}

#[test]
fn f_add_order_mpid() {
    let bytes = HandLaid::new(b'F', 40)
        .u64(11, 0x1112_1314_1516_1718)
        .u8(19, b'B')
        .u32(20, 0x2122_2324)
        .at(24, b"ADDMP   ")
        .u32(32, 0x3132_3334)
        .at(36, b"GSCO")
        .done();
    let Message::AddOrderMpid(v) = decoded(&bytes) else {
        panic!("not F")
    };
    assert_header!(v);
    assert_eq!(v.order_ref(), OrderRef(0x1112_1314_1516_1718));
    assert_eq!(v.side(), b'B');
    assert_eq!(v.shares(), 0x2122_2324);
    assert_eq!(v.stock(), stock(b"ADDMP   "));
    assert_eq!(v.price(), Price(0x3132_3334));
    assert_eq!(v.attribution(), Alpha(*b"GSCO"));
    let o = owned::AddOrderMpid {
        locate: Locate(LOCATE),
        tracking: TRACKING,
        timestamp: Nanos(TIMESTAMP),
        order_ref: OrderRef(0x1112_1314_1516_1718),
        side: b'B',
        shares: 0x2122_2324,
        stock: stock(b"ADDMP   "),
        price: Price(0x3132_3334),
        attribution: Alpha(*b"GSCO"),
    };
    assert_eq!(encoded(|b| o.encode(b)), bytes);
    assert_eq!(v.to_owned(), o);
}

#[test]
fn e_order_executed() {
    let bytes = HandLaid::new(b'E', 31)
        .u64(11, 0x1112_1314_1516_1718)
        .u32(19, 0x2122_2324)
        .u64(23, 0x3132_3334_3536_3738)
        .done();
    let Message::OrderExecuted(v) = decoded(&bytes) else {
        panic!("not E")
    };
    assert_header!(v);
    assert_eq!(v.order_ref(), OrderRef(0x1112_1314_1516_1718));
    assert_eq!(v.executed_shares(), 0x2122_2324);
    assert_eq!(v.match_number(), MatchNumber(0x3132_3334_3536_3738));
    let o = owned::OrderExecuted {
        locate: Locate(LOCATE),
        tracking: TRACKING,
        timestamp: Nanos(TIMESTAMP),
        order_ref: OrderRef(0x1112_1314_1516_1718),
        executed_shares: 0x2122_2324,
        match_number: MatchNumber(0x3132_3334_3536_3738),
    };
    assert_eq!(encoded(|b| o.encode(b)), bytes);
    assert_eq!(v.to_owned(), o);
}

#[test]
fn c_order_executed_with_price() {
    let bytes = HandLaid::new(b'C', 36)
        .u64(11, 0x1112_1314_1516_1718)
        .u32(19, 0x2122_2324)
        .u64(23, 0x3132_3334_3536_3738)
        .u8(31, b'Y')
        .u32(32, 0x4142_4344)
        .done();
    let Message::OrderExecutedWithPrice(v) = decoded(&bytes) else {
        panic!("not C")
    };
    assert_header!(v);
    assert_eq!(v.order_ref(), OrderRef(0x1112_1314_1516_1718));
    assert_eq!(v.executed_shares(), 0x2122_2324);
    assert_eq!(v.match_number(), MatchNumber(0x3132_3334_3536_3738));
    assert_eq!(v.printable(), b'Y');
    assert_eq!(v.execution_price(), Price(0x4142_4344));
    let o = owned::OrderExecutedWithPrice {
        locate: Locate(LOCATE),
        tracking: TRACKING,
        timestamp: Nanos(TIMESTAMP),
        order_ref: OrderRef(0x1112_1314_1516_1718),
        executed_shares: 0x2122_2324,
        match_number: MatchNumber(0x3132_3334_3536_3738),
        printable: b'Y',
        execution_price: Price(0x4142_4344),
    };
    assert_eq!(encoded(|b| o.encode(b)), bytes);
    assert_eq!(v.to_owned(), o);
}

#[test]
fn x_order_cancel() {
    let bytes = HandLaid::new(b'X', 23)
        .u64(11, 0x1112_1314_1516_1718)
        .u32(19, 0x2122_2324)
        .done();
    let Message::OrderCancel(v) = decoded(&bytes) else {
        panic!("not X")
    };
    assert_header!(v);
    assert_eq!(v.order_ref(), OrderRef(0x1112_1314_1516_1718));
    assert_eq!(v.cancelled_shares(), 0x2122_2324);
    let o = owned::OrderCancel {
        locate: Locate(LOCATE),
        tracking: TRACKING,
        timestamp: Nanos(TIMESTAMP),
        order_ref: OrderRef(0x1112_1314_1516_1718),
        cancelled_shares: 0x2122_2324,
    };
    assert_eq!(encoded(|b| o.encode(b)), bytes);
    assert_eq!(v.to_owned(), o);
}

#[test]
fn d_order_delete() {
    let bytes = HandLaid::new(b'D', 19)
        .u64(11, 0x1112_1314_1516_1718)
        .done();
    let Message::OrderDelete(v) = decoded(&bytes) else {
        panic!("not D")
    };
    assert_header!(v);
    assert_eq!(v.order_ref(), OrderRef(0x1112_1314_1516_1718));
    let o = owned::OrderDelete {
        locate: Locate(LOCATE),
        tracking: TRACKING,
        timestamp: Nanos(TIMESTAMP),
        order_ref: OrderRef(0x1112_1314_1516_1718),
    };
    assert_eq!(encoded(|b| o.encode(b)), bytes);
    assert_eq!(v.to_owned(), o);
}

#[test]
fn u_order_replace() {
    let bytes = HandLaid::new(b'U', 35)
        .u64(11, 0x1112_1314_1516_1718)
        .u64(19, 0x2122_2324_2526_2728)
        .u32(27, 0x3132_3334)
        .u32(31, 0x4142_4344)
        .done();
    let Message::OrderReplace(v) = decoded(&bytes) else {
        panic!("not U")
    };
    assert_header!(v);
    assert_eq!(v.original_order_ref(), OrderRef(0x1112_1314_1516_1718));
    assert_eq!(v.new_order_ref(), OrderRef(0x2122_2324_2526_2728));
    assert_eq!(v.shares(), 0x3132_3334);
    assert_eq!(v.price(), Price(0x4142_4344));
    let o = owned::OrderReplace {
        locate: Locate(LOCATE),
        tracking: TRACKING,
        timestamp: Nanos(TIMESTAMP),
        original_order_ref: OrderRef(0x1112_1314_1516_1718),
        new_order_ref: OrderRef(0x2122_2324_2526_2728),
        shares: 0x3132_3334,
        price: Price(0x4142_4344),
    };
    assert_eq!(encoded(|b| o.encode(b)), bytes);
    assert_eq!(v.to_owned(), o);
}

#[test]
fn p_trade() {
    let bytes = HandLaid::new(b'P', 44)
        .u64(11, 0x1112_1314_1516_1718)
        .u8(19, b'B')
        .u32(20, 0x2122_2324)
        .at(24, b"TRADE   ")
        .u32(32, 0x3132_3334)
        .u64(36, 0x4142_4344_4546_4748)
        .done();
    let Message::Trade(v) = decoded(&bytes) else {
        panic!("not P")
    };
    assert_header!(v);
    assert_eq!(v.order_ref(), OrderRef(0x1112_1314_1516_1718));
    assert_eq!(v.side(), b'B');
    assert_eq!(v.shares(), 0x2122_2324);
    assert_eq!(v.stock(), stock(b"TRADE   "));
    assert_eq!(v.price(), Price(0x3132_3334));
    assert_eq!(v.match_number(), MatchNumber(0x4142_4344_4546_4748));
    let o = owned::Trade {
        locate: Locate(LOCATE),
        tracking: TRACKING,
        timestamp: Nanos(TIMESTAMP),
        order_ref: OrderRef(0x1112_1314_1516_1718),
        side: b'B',
        shares: 0x2122_2324,
        stock: stock(b"TRADE   "),
        price: Price(0x3132_3334),
        match_number: MatchNumber(0x4142_4344_4546_4748),
    };
    assert_eq!(encoded(|b| o.encode(b)), bytes);
    assert_eq!(v.to_owned(), o);
}

#[test]
fn q_cross_trade() {
    let bytes = HandLaid::new(b'Q', 40)
        .u64(11, 0x1112_1314_1516_1718)
        .at(19, b"CROSS   ")
        .u32(27, 0x2122_2324)
        .u64(31, 0x3132_3334_3536_3738)
        .u8(39, b'O')
        .done();
    let Message::CrossTrade(v) = decoded(&bytes) else {
        panic!("not Q")
    };
    assert_header!(v);
    assert_eq!(v.shares(), 0x1112_1314_1516_1718);
    assert_eq!(v.stock(), stock(b"CROSS   "));
    assert_eq!(v.cross_price(), Price(0x2122_2324));
    assert_eq!(v.match_number(), MatchNumber(0x3132_3334_3536_3738));
    assert_eq!(v.cross_type(), b'O');
    let o = owned::CrossTrade {
        locate: Locate(LOCATE),
        tracking: TRACKING,
        timestamp: Nanos(TIMESTAMP),
        shares: 0x1112_1314_1516_1718,
        stock: stock(b"CROSS   "),
        cross_price: Price(0x2122_2324),
        match_number: MatchNumber(0x3132_3334_3536_3738),
        cross_type: b'O',
    };
    assert_eq!(encoded(|b| o.encode(b)), bytes);
    assert_eq!(v.to_owned(), o);
}

#[test]
fn b_broken_trade() {
    let bytes = HandLaid::new(b'B', 19)
        .u64(11, 0x1112_1314_1516_1718)
        .done();
    let Message::BrokenTrade(v) = decoded(&bytes) else {
        panic!("not B")
    };
    assert_header!(v);
    assert_eq!(v.match_number(), MatchNumber(0x1112_1314_1516_1718));
    let o = owned::BrokenTrade {
        locate: Locate(LOCATE),
        tracking: TRACKING,
        timestamp: Nanos(TIMESTAMP),
        match_number: MatchNumber(0x1112_1314_1516_1718),
    };
    assert_eq!(encoded(|b| o.encode(b)), bytes);
    assert_eq!(v.to_owned(), o);
}

#[test]
fn i_net_order_imbalance() {
    let bytes = HandLaid::new(b'I', 50)
        .u64(11, 0x1112_1314_1516_1718)
        .u64(19, 0x2122_2324_2526_2728)
        .u8(27, b'B')
        .at(28, b"NOII    ")
        .u32(36, 0x3132_3334)
        .u32(40, 0x4142_4344)
        .u32(44, 0x5152_5354)
        .u8(48, b'C')
        .u8(49, b'L')
        .done();
    let Message::Noii(v) = decoded(&bytes) else {
        panic!("not I")
    };
    assert_header!(v);
    assert_eq!(v.paired_shares(), 0x1112_1314_1516_1718);
    assert_eq!(v.imbalance_shares(), 0x2122_2324_2526_2728);
    assert_eq!(v.imbalance_direction(), b'B');
    assert_eq!(v.stock(), stock(b"NOII    "));
    assert_eq!(v.far_price(), Price(0x3132_3334));
    assert_eq!(v.near_price(), Price(0x4142_4344));
    assert_eq!(v.current_reference_price(), Price(0x5152_5354));
    assert_eq!(v.cross_type(), b'C');
    assert_eq!(v.price_variation_indicator(), b'L');
    let o = owned::Noii {
        locate: Locate(LOCATE),
        tracking: TRACKING,
        timestamp: Nanos(TIMESTAMP),
        paired_shares: 0x1112_1314_1516_1718,
        imbalance_shares: 0x2122_2324_2526_2728,
        imbalance_direction: b'B',
        stock: stock(b"NOII    "),
        far_price: Price(0x3132_3334),
        near_price: Price(0x4142_4344),
        current_reference_price: Price(0x5152_5354),
        cross_type: b'C',
        price_variation_indicator: b'L',
    };
    assert_eq!(encoded(|b| o.encode(b)), bytes);
    assert_eq!(v.to_owned(), o);
}

#[test]
fn n_retail_interest() {
    let bytes = HandLaid::new(b'N', 20)
        .at(11, b"RPII    ")
        .u8(19, b'A')
        .done();
    let Message::RetailInterest(v) = decoded(&bytes) else {
        panic!("not N")
    };
    assert_header!(v);
    assert_eq!(v.stock(), stock(b"RPII    "));
    assert_eq!(v.interest_flag(), b'A');
    let o = owned::RetailInterest {
        locate: Locate(LOCATE),
        tracking: TRACKING,
        timestamp: Nanos(TIMESTAMP),
        stock: stock(b"RPII    "),
        interest_flag: b'A',
    };
    assert_eq!(encoded(|b| o.encode(b)), bytes);
    assert_eq!(v.to_owned(), o);
}

#[test]
fn o_dlcr_price_discovery() {
    let bytes = HandLaid::new(b'O', 48)
        .at(11, b"DLCR    ")
        .u8(19, b'Y')
        .u32(20, 0x1112_1314)
        .u32(24, 0x2122_2324)
        .u32(28, 0x3132_3334)
        .u64(32, 0x4142_4344_4546_4748)
        .u32(40, 0x5152_5354)
        .u32(44, 0x6162_6364)
        .done();
    let Message::DlcrPriceDiscovery(v) = decoded(&bytes) else {
        panic!("not O")
    };
    assert_header!(v);
    assert_eq!(v.stock(), stock(b"DLCR    "));
    assert_eq!(v.open_eligibility_status(), b'Y');
    assert_eq!(v.minimum_allowable_price(), Price(0x1112_1314));
    assert_eq!(v.maximum_allowable_price(), Price(0x2122_2324));
    assert_eq!(v.near_execution_price(), Price(0x3132_3334));
    assert_eq!(v.near_execution_time(), 0x4142_4344_4546_4748);
    assert_eq!(v.lower_price_range_collar(), Price(0x5152_5354));
    assert_eq!(v.upper_price_range_collar(), Price(0x6162_6364));
    let o = owned::DlcrPriceDiscovery {
        locate: Locate(LOCATE),
        tracking: TRACKING,
        timestamp: Nanos(TIMESTAMP),
        stock: stock(b"DLCR    "),
        open_eligibility_status: b'Y',
        minimum_allowable_price: Price(0x1112_1314),
        maximum_allowable_price: Price(0x2122_2324),
        near_execution_price: Price(0x3132_3334),
        near_execution_time: 0x4142_4344_4546_4748,
        lower_price_range_collar: Price(0x5152_5354),
        upper_price_range_collar: Price(0x6162_6364),
    };
    assert_eq!(encoded(|b| o.encode(b)), bytes);
    assert_eq!(v.to_owned(), o);
}

/// The tests above cover each type ITCH 5.0 defines, and no more: if the crate gains or
/// loses a type, this list and the tests must follow.
#[test]
fn the_tests_above_cover_all_23_types() {
    let covered = b"SRHYLVWKJhAFECXDUPQBINO";
    assert_eq!(covered.len(), 23);
    let mut ours = itch::ALL_TAGS.to_vec();
    let mut theirs = covered.to_vec();
    ours.sort_unstable();
    theirs.sort_unstable();
    assert_eq!(ours, theirs);
}
