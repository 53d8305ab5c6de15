//! The stream's records: DBN version 3 records, one to an Aeron message, built by the
//! publisher and read back by [`StreamDecoder`]. What each one means is in the
//! [crate docs](crate).

use std::ffi::c_char;

use dbn::decode::dbn::fsm::{DbnFsm, ProcessResult};
use dbn::{
    rtype, BidAskPair, FlagSet, Mbp10Msg, RecordHeader, SType, StatusMsg, SymbolMappingMsg,
    SystemMsg, UNDEF_PRICE,
};
use ticklane_book::LevelView;
use ticklane_feed::itch::Price;

/// Levels per side a book record carries (MBP-10).
pub const LEVELS: usize = 10;

/// `instrument_id` of the records about the line rather than one stock (heartbeats,
/// refresh markers, the line's state). ITCH locates start at 1.
pub const LINE_INSTRUMENT: u32 = 0;

/// The `msg` of a heartbeat.
pub const HEARTBEAT_TEXT: &str = "heartbeat";
/// How the `msg` of the record closing a refresh cycle begins: `refresh CYCLE complete:
/// N instruments`.
pub const REFRESH_TEXT: &str = "refresh ";
/// How the `msg` of the stream's last record begins: `end of stream: N instruments`.
pub const END_TEXT: &str = "end of stream";

/// One side's top levels, best first, and how many are live.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SideTop {
    /// The levels; `len` of them are live, the rest zero.
    pub levels: [LevelView; LEVELS],
    /// Live levels.
    pub len: u8,
}

impl SideTop {
    /// The live levels.
    pub fn live(&self) -> &[LevelView] {
        &self.levels[..usize::from(self.len)]
    }

    /// Sets the live levels to the first [`LEVELS`] of `levels`.
    pub fn set(&mut self, levels: impl IntoIterator<Item = LevelView>) {
        self.len = 0;
        for (slot, level) in self.levels.iter_mut().zip(levels) {
            *slot = level;
            self.len += 1;
        }
        for slot in &mut self.levels[usize::from(self.len)..] {
            *slot = LevelView::default();
        }
    }
}

/// A book's top [`LEVELS`] levels a side.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BookTop {
    /// Bids, best (highest) first.
    pub bids: SideTop,
    /// Asks, best (lowest) first.
    pub asks: SideTop,
}

/// What a book record says happened (`action`, `side`, `price`, `size`, `depth`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BookChange {
    /// `A` a level appeared, `C` one went, `M` one changed, `T` a trade, `N` none (a
    /// refresh, or a record whose levels did not move).
    pub action: u8,
    /// `B`, `A` or `N`.
    pub side: u8,
    /// The level's (or the trade's) price.
    pub price: Price,
    /// The level's shares after the change (before it, for `C`), or the trade's shares.
    pub size: u64,
    /// The level's index on its side (0 = best).
    pub depth: u8,
}

impl BookChange {
    /// No change: a refresh.
    pub const NONE: BookChange = BookChange {
        action: b'N',
        side: b'N',
        price: Price(0),
        size: 0,
        depth: 0,
    };

    /// The first level that differs between `before` and `after`, the better of the two
    /// sides' first differences (the bid's on a tie); [`BookChange::NONE`] when none does.
    pub fn between(before: &BookTop, after: &BookTop) -> BookChange {
        let bid = first_difference(&before.bids, &after.bids);
        let ask = first_difference(&before.asks, &after.asks);
        match (bid, ask) {
            (Some(b), Some(a)) if a < b => side_change(b'A', &before.asks, &after.asks, a),
            (Some(b), _) => side_change(b'B', &before.bids, &after.bids, b),
            (None, Some(a)) => side_change(b'A', &before.asks, &after.asks, a),
            (None, None) => BookChange::NONE,
        }
    }
}

fn first_difference(before: &SideTop, after: &SideTop) -> Option<usize> {
    let n = usize::from(before.len.max(after.len));
    (0..n).find(|&i| level_at(before, i) != level_at(after, i))
}

fn level_at(side: &SideTop, i: usize) -> Option<LevelView> {
    (i < usize::from(side.len)).then(|| side.levels[i])
}

fn side_change(side: u8, before: &SideTop, after: &SideTop, i: usize) -> BookChange {
    let (old, new) = (level_at(before, i), level_at(after, i));
    let (action, level) = match (old, new) {
        // The level at this index is a price the side did not have: a level appeared.
        (_, Some(n)) if !before.live().iter().any(|l| l.price == n.price) => (b'A', n),
        (_, Some(n)) if old.is_some_and(|o| o.price == n.price) => (b'M', n),
        // The old level's price is gone from the side: it was removed.
        (Some(o), _) if !after.live().iter().any(|l| l.price == o.price) => (b'C', o),
        (_, Some(n)) => (b'M', n),
        (Some(o), None) => (b'C', o),
        (None, None) => return BookChange::NONE,
    };
    BookChange {
        action,
        side,
        price: level.price,
        size: level.qty,
        depth: i as u8,
    }
}

/// What every record of one stream shares: the venue, and the session's midnight that turns
/// an ITCH timestamp into `ts_event`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamStamp {
    /// DBN `publisher_id` (the venue's).
    pub publisher_id: u16,
    /// The session's New York midnight, ns since the Unix epoch.
    pub midnight_ns: u64,
}

/// Where a book record's levels stand in the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BookStamp {
    /// The stock locate.
    pub locate: u16,
    /// Feed sequence of the last message the levels hold.
    pub feed_seq: u64,
    /// That message's ITCH timestamp, ns since midnight.
    pub exchange_ts: u64,
    /// When the publisher read the levels, ns since the Unix epoch.
    pub ts_recv: u64,
    /// A refresh (`F_SNAPSHOT`) rather than a change.
    pub refresh: bool,
    /// The book may be wrong: messages were declared lost (`F_MAYBE_BAD_BOOK`).
    pub maybe_bad: bool,
}

/// DBN prices are 1e-9; ITCH's are 1e-4.
fn price_1e9(price: Price) -> i64 {
    i64::from(price.0) * 100_000
}

fn level_pair(bid: Option<&LevelView>, ask: Option<&LevelView>) -> BidAskPair {
    let size = |l: &LevelView| u32::try_from(l.qty).unwrap_or(u32::MAX);
    BidAskPair {
        bid_px: bid.map_or(UNDEF_PRICE, |l| price_1e9(l.price)),
        ask_px: ask.map_or(UNDEF_PRICE, |l| price_1e9(l.price)),
        bid_sz: bid.map_or(0, size),
        ask_sz: ask.map_or(0, size),
        bid_ct: bid.map_or(0, |l| l.orders),
        ask_ct: ask.map_or(0, |l| l.orders),
    }
}

impl StreamStamp {
    /// Nasdaq's `publisher_id`, and the New York session date the clock reads now (New
    /// York is UTC−5, or UTC−4 in daylight time): a live line's records carry today's date.
    pub fn nasdaq_today() -> Self {
        use ticklane_outputs::dbn_out::{ItchDataset, SessionDate};
        let now = time::OffsetDateTime::now_utc();
        let date_at = |hours: i64| {
            let d = (now - time::Duration::hours(hours)).date();
            SessionDate::parse(&format!(
                "{:04}-{:02}-{:02}",
                d.year(),
                u8::from(d.month()),
                d.day()
            ))
        };
        let midnight_ns = match date_at(5) {
            Ok(standard) if standard.is_daylight_time() => date_at(4).unwrap_or(standard),
            Ok(standard) => standard,
            Err(_) => {
                return StreamStamp {
                    publisher_id: ItchDataset::XnasItch.publisher_id(),
                    midnight_ns: 0,
                }
            }
        }
        .midnight_utc_ns();
        StreamStamp {
            publisher_id: ItchDataset::XnasItch.publisher_id(),
            midnight_ns,
        }
    }

    fn header<R: dbn::record::HasRType>(
        &self,
        rtype: u8,
        instrument: u32,
        ts: u64,
    ) -> RecordHeader {
        RecordHeader::new::<R>(rtype, self.publisher_id, instrument, ts)
    }

    /// A book record: `book`'s levels after `change`, as of `at`. Sizes above
    /// 4,294,967,295 shares are written as that (DBN sizes are 32-bit).
    pub fn book(&self, at: BookStamp, book: &BookTop, change: BookChange) -> Mbp10Msg {
        let mut flags = FlagSet::empty().set_last().set_mbp();
        if at.refresh {
            flags = flags.set_snapshot();
        }
        if at.maybe_bad {
            flags = flags.set_maybe_bad_book();
        }
        let mut levels = [level_pair(None, None); LEVELS];
        for (i, pair) in levels.iter_mut().enumerate() {
            *pair = level_pair(book.bids.live().get(i), book.asks.live().get(i));
        }
        Mbp10Msg {
            hd: self.header::<Mbp10Msg>(
                rtype::MBP_10,
                u32::from(at.locate),
                self.midnight_ns + at.exchange_ts,
            ),
            price: if change.action == b'N' {
                UNDEF_PRICE
            } else {
                price_1e9(change.price)
            },
            size: u32::try_from(change.size).unwrap_or(u32::MAX),
            action: change.action as c_char,
            side: change.side as c_char,
            flags,
            depth: change.depth,
            ts_recv: at.ts_recv,
            ts_in_delta: 0,
            // DBN's sequence is 32-bit: the feed sequence's low 32 bits.
            sequence: at.feed_seq as u32,
            levels,
        }
    }

    /// A stock's trading state (`H`, `P`, `Q`, `T`; 0 unknown) as a status record.
    pub fn trading_state(
        &self,
        locate: u16,
        state: u8,
        exchange_ts: u64,
        ts_recv: u64,
    ) -> StatusMsg {
        let (action, trading, quoting) = match state {
            b'H' => (dbn::StatusAction::Halt, b'N', b'N'),
            b'P' => (dbn::StatusAction::Pause, b'N', b'N'),
            b'Q' => (dbn::StatusAction::Quoting, b'N', b'Y'),
            b'T' => (dbn::StatusAction::Trading, b'Y', b'Y'),
            _ => (dbn::StatusAction::None, b'~', b'~'),
        };
        self.status(
            u32::from(locate),
            self.midnight_ns + exchange_ts,
            ts_recv,
            (action, dbn::StatusReason::None),
            (trading, quoting),
        )
    }

    /// The line's state: stale (the feed is down or recovering; every book is the last
    /// known state) or live.
    pub fn line_state(&self, stale: bool, now_ns: u64) -> StatusMsg {
        let action = if stale {
            (
                dbn::StatusAction::NotAvailableForTrading,
                dbn::StatusReason::RecoveryInProcess,
            )
        } else {
            (dbn::StatusAction::None, dbn::StatusReason::None)
        };
        self.status(LINE_INSTRUMENT, now_ns, now_ns, action, (b'~', b'~'))
    }

    fn status(
        &self,
        instrument: u32,
        ts_event: u64,
        ts_recv: u64,
        (action, reason): (dbn::StatusAction, dbn::StatusReason),
        (trading, quoting): (u8, u8),
    ) -> StatusMsg {
        StatusMsg {
            hd: self.header::<StatusMsg>(rtype::STATUS, instrument, ts_event),
            ts_recv,
            action: action as u16,
            reason: reason as u16,
            trading_event: 0,
            is_trading: trading as c_char,
            is_quoting: quoting as c_char,
            is_short_sell_restricted: b'~' as c_char,
            _reserved: [0; 7],
        }
    }

    /// The symbol of `locate`: `stype_in_symbol` the ticker, `stype_out_symbol` the locate.
    pub fn mapping(&self, locate: u16, symbol: &[u8], now_ns: u64) -> SymbolMappingMsg {
        let mut record = SymbolMappingMsg {
            hd: self.header::<SymbolMappingMsg>(rtype::SYMBOL_MAPPING, u32::from(locate), now_ns),
            stype_in: SType::RawSymbol as u8,
            stype_out: SType::InstrumentId as u8,
            start_ts: self.midnight_ns,
            end_ts: self.midnight_ns + 86_400_000_000_000,
            ..SymbolMappingMsg::default()
        };
        copy_text(&mut record.stype_in_symbol, symbol);
        copy_text(&mut record.stype_out_symbol, locate.to_string().as_bytes());
        record
    }

    /// A system record about the line: `code` and `text`.
    pub fn system(&self, code: dbn::SystemCode, text: &str, now_ns: u64) -> SystemMsg {
        let mut record = SystemMsg {
            hd: self.header::<SystemMsg>(rtype::SYSTEM, LINE_INSTRUMENT, now_ns),
            code: code as u8,
            ..SystemMsg::default()
        };
        copy_text(&mut record.msg, text.as_bytes());
        record
    }
}

/// Copies `text` into a C string field, leaving at least one NUL at the end.
fn copy_text(field: &mut [c_char], text: &[u8]) {
    field.fill(0);
    let n = text.len().min(field.len() - 1);
    for (to, &from) in field.iter_mut().zip(&text[..n]) {
        *to = from as c_char;
    }
}

/// A C string field's text, up to its first NUL.
pub fn field_text(field: &[c_char]) -> String {
    field
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8 as char)
        .collect()
}

/// One record of the stream, decoded.
#[derive(Clone, Copy, Debug)]
pub enum StreamRecord<'a> {
    /// A book's top levels (a change, a trade, or a refresh).
    Book(&'a Mbp10Msg),
    /// A stock's trading state, or the line's state (instrument 0).
    Status(&'a StatusMsg),
    /// A locate's symbol.
    Mapping(&'a SymbolMappingMsg),
    /// A heartbeat, a refresh cycle's end, or the end of the stream.
    System(&'a SystemMsg),
    /// A record of a type this stream does not send (counted, skipped).
    Other(u8),
}

/// Why a message of the stream could not be read.
#[derive(Debug, thiserror::Error)]
#[error("not a DBN record ({len} bytes): {source}")]
pub struct DecodeError {
    len: usize,
    #[source]
    source: dbn::Error,
}

/// Reads the stream's messages back into records: a sans-I/O DBN decoder kept for the
/// stream's life, so decoding allocates nothing after its first message.
pub struct StreamDecoder {
    fsm: DbnFsm,
}

impl std::fmt::Debug for StreamDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamDecoder").finish_non_exhaustive()
    }
}

impl StreamDecoder {
    /// A decoder of DBN version 3 records with no metadata in front.
    pub fn new() -> Self {
        StreamDecoder { fsm: Self::fsm() }
    }

    fn fsm() -> DbnFsm {
        DbnFsm::builder()
            .compat_size(dbn::MAX_RECORD_LEN)
            .skip_metadata(true)
            .input_dbn_version(Some(dbn::DBN_VERSION))
            .and_then(|b| b.upgrade_policy(dbn::VersionUpgradePolicy::AsIs).build())
            .expect("invariant: the current DBN version decodes as it is")
    }

    /// Hands each record of `message` to `each`.
    ///
    /// # Errors
    ///
    /// [`DecodeError`] if `message` is not whole DBN records; the decoder starts afresh, so
    /// the next message decodes on its own.
    pub fn decode(
        &mut self,
        message: &[u8],
        mut each: impl FnMut(StreamRecord<'_>),
    ) -> Result<(), DecodeError> {
        self.fsm.write_all(message);
        loop {
            match self.fsm.process() {
                ProcessResult::Record(()) => {
                    let Some(record) = self.fsm.last_record() else {
                        continue;
                    };
                    let decoded = if let Some(r) = record.get::<Mbp10Msg>() {
                        StreamRecord::Book(r)
                    } else if let Some(r) = record.get::<StatusMsg>() {
                        StreamRecord::Status(r)
                    } else if let Some(r) = record.get::<SymbolMappingMsg>() {
                        StreamRecord::Mapping(r)
                    } else if let Some(r) = record.get::<SystemMsg>() {
                        StreamRecord::System(r)
                    } else {
                        StreamRecord::Other(record.header().rtype)
                    };
                    each(decoded);
                }
                ProcessResult::ReadMore(_) => {
                    if self.fsm.data().is_empty() {
                        return Ok(());
                    }
                    let len = self.fsm.data().len();
                    self.fsm = Self::fsm();
                    return Err(DecodeError {
                        len,
                        source: dbn::Error::decode("a message ends inside a record"),
                    });
                }
                ProcessResult::Metadata(_) => {}
                ProcessResult::Err(source) => {
                    let len = message.len();
                    self.fsm = Self::fsm();
                    return Err(DecodeError { len, source });
                }
            }
        }
    }
}

impl Default for StreamDecoder {
    fn default() -> Self {
        StreamDecoder::new()
    }
}

/// The bytes of a record, as they go on the stream.
pub fn record_bytes<R: AsRef<[u8]>>(record: &R) -> &[u8] {
    record.as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(price: u32, qty: u64, orders: u32) -> LevelView {
        LevelView {
            price: Price(price),
            qty,
            orders,
        }
    }

    fn top(bids: &[LevelView], asks: &[LevelView]) -> BookTop {
        let mut book = BookTop::default();
        book.bids.set(bids.iter().copied());
        book.asks.set(asks.iter().copied());
        book
    }

    const STAMP: StreamStamp = StreamStamp {
        publisher_id: 39,
        midnight_ns: 1_548_824_400_000_000_000,
    };

    #[test]
    fn a_change_is_the_first_level_that_differs() {
        let before = top(&[level(100, 5, 1), level(99, 7, 2)], &[level(101, 3, 1)]);
        let added = top(
            &[level(100, 5, 1), level(99, 7, 2)],
            &[level(101, 3, 1), level(102, 1, 1)],
        );
        assert_eq!(
            BookChange::between(&before, &added),
            BookChange {
                action: b'A',
                side: b'A',
                price: Price(102),
                size: 1,
                depth: 1
            }
        );
        let modified = top(&[level(100, 9, 2), level(99, 7, 2)], &[level(101, 3, 1)]);
        assert_eq!(
            BookChange::between(&before, &modified),
            BookChange {
                action: b'M',
                side: b'B',
                price: Price(100),
                size: 9,
                depth: 0
            }
        );
        let removed = top(&[level(99, 7, 2)], &[level(101, 3, 1)]);
        assert_eq!(
            BookChange::between(&before, &removed),
            BookChange {
                action: b'C',
                side: b'B',
                price: Price(100),
                size: 5,
                depth: 0
            }
        );
        let better = top(
            &[level(100, 5, 1), level(99, 7, 2)],
            &[level(100, 2, 1), level(101, 3, 1)],
        );
        assert_eq!(BookChange::between(&before, &better).action, b'A');
        assert_eq!(BookChange::between(&before, &before), BookChange::NONE);
    }

    #[test]
    fn records_read_back_as_they_were_written() {
        let book = top(
            &[level(1_000_000, 300, 2)],
            &[level(1_000_100, u64::MAX, 3)],
        );
        let at = BookStamp {
            locate: 7,
            feed_seq: (1 << 32) + 5,
            exchange_ts: 34_200_000_000_000,
            ts_recv: 9,
            refresh: true,
            maybe_bad: true,
        };
        let mbp = STAMP.book(at, &book, BookChange::NONE);
        let status = STAMP.trading_state(7, b'H', 1, 2);
        let mapping = STAMP.mapping(7, b"AAPL", 3);
        let system = STAMP.system(dbn::SystemCode::Heartbeat, HEARTBEAT_TEXT, 4);
        let mut message = Vec::new();
        message.extend_from_slice(record_bytes(&mbp));
        message.extend_from_slice(record_bytes(&status));
        message.extend_from_slice(record_bytes(&mapping));
        message.extend_from_slice(record_bytes(&system));
        let mut decoder = StreamDecoder::new();
        let mut seen = Vec::new();
        decoder
            .decode(&message, |r| {
                seen.push(match r {
                    StreamRecord::Book(m) => {
                        assert_eq!(m.levels[0].bid_px, 100_000_000_000);
                        assert_eq!(m.levels[0].ask_sz, u32::MAX);
                        assert_eq!(m.levels[1].bid_px, UNDEF_PRICE);
                        assert_eq!(m.sequence, 5);
                        assert_eq!(m.hd.instrument_id, 7);
                        assert_eq!(m.hd.ts_event, STAMP.midnight_ns + 34_200_000_000_000);
                        assert!(m.flags.is_snapshot() && m.flags.is_maybe_bad_book());
                        "book".to_owned()
                    }
                    StreamRecord::Status(s) => {
                        assert_eq!(s.action, dbn::StatusAction::Halt as u16);
                        "status".to_owned()
                    }
                    StreamRecord::Mapping(m) => field_text(&m.stype_in_symbol),
                    StreamRecord::System(s) => field_text(&s.msg),
                    StreamRecord::Other(t) => format!("other {t}"),
                })
            })
            .expect("decode");
        assert_eq!(seen, ["book", "status", "AAPL", "heartbeat"]);
        let torn = decoder.decode(&message[..100], |_| {});
        assert!(torn.is_err(), "a message that ends inside a record");
        let mut again = 0;
        decoder
            .decode(record_bytes(&status), |_| again += 1)
            .expect("after a reset");
        assert_eq!(again, 1);
    }
}
