//! The subscriber's side: every book the stream carries, rebuilt from its records, and the
//! final depth in the `--book-out` CSV format.
//!
//! A book record carries the book's whole top [`LEVELS`] levels a side, so a book is its
//! latest record: nothing is replayed on top of an image, and a record missed is made good
//! by the next one for the same stock or by the next refresh.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::io::{self, Write};

use dbn::{Mbp10Msg, StatusMsg, SystemMsg, UNDEF_PRICE};
use ticklane_book::{LevelView, Side};
use ticklane_feed::itch::{Alpha, Locate, Price};
use ticklane_outputs::csv::{write_level_row, CsvBuffer, BOOK_HEADER};

use crate::records::{
    field_text, BookTop, SideTop, StreamRecord, END_TEXT, LEVELS, LINE_INSTRUMENT, REFRESH_TEXT,
};

/// One stock's book as the stream last described it.
#[derive(Clone, Copy, Debug)]
struct FollowedBook {
    /// The ticker its mapping record gave (space padded), blank until one came.
    symbol: [u8; 8],
    top: BookTop,
    trading_state: u8,
    /// The low 32 bits of the feed sequence of its latest record.
    sequence: u32,
    maybe_bad: bool,
    /// Whether a book record has come for it (a mapping alone makes no book).
    seen: bool,
}

impl Default for FollowedBook {
    fn default() -> Self {
        FollowedBook {
            symbol: [b' '; 8],
            top: BookTop::default(),
            trading_state: 0,
            sequence: 0,
            maybe_bad: false,
            seen: false,
        }
    }
}

/// What the stream has brought so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FollowCounts {
    /// Records read.
    pub records: u64,
    /// Book records that were changes.
    pub changes: u64,
    /// Book records that were trades.
    pub trades: u64,
    /// Book records that were refreshes (`F_SNAPSHOT`).
    pub refreshes: u64,
    /// Status records (trading states and the line's state).
    pub statuses: u64,
    /// Heartbeats.
    pub heartbeats: u64,
    /// Refresh cycles whose end was seen.
    pub cycles: u64,
    /// Records of a type the stream does not send.
    pub unknown: u64,
}

/// One update worth printing.
#[derive(Clone, Copy, Debug)]
pub enum Update<'a> {
    /// A book record: the stock, what happened, its top of book after.
    Book {
        /// The ticker (trimmed).
        symbol: &'a [u8],
        /// The record.
        record: &'a Mbp10Msg,
    },
    /// A stock's trading state.
    TradingState {
        /// The ticker (trimmed).
        symbol: &'a [u8],
        /// The record.
        record: &'a StatusMsg,
    },
    /// The line went stale or came back.
    Line {
        /// Whether the line is stale.
        stale: bool,
    },
    /// A refresh cycle ended: every book was sent once since the one before.
    CycleEnd {
        /// The record's text.
        text: &'a str,
    },
}

fn price_text(px: i64) -> String {
    if px == UNDEF_PRICE {
        return "-".into();
    }
    format!("{}", Price((px / 100_000) as u32))
}

impl fmt::Display for Update<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Update::Book { symbol, record } => {
                let r = record;
                let name = String::from_utf8_lossy(symbol);
                let best = r.levels[0];
                let kind = if r.flags.is_snapshot() {
                    "refresh".to_owned()
                } else if r.action as u8 == b'T' {
                    format!("trade {} @ {}", r.size, price_text(r.price))
                } else {
                    format!(
                        "{} {} {} x {} (level {})",
                        r.action as u8 as char,
                        r.side as u8 as char,
                        price_text(r.price),
                        r.size,
                        r.depth + 1
                    )
                };
                write!(
                    f,
                    "{name} #{} {kind}: {} x {} ({}) / {} x {} ({})",
                    r.sequence,
                    price_text(best.bid_px),
                    best.bid_sz,
                    best.bid_ct,
                    price_text(best.ask_px),
                    best.ask_sz,
                    best.ask_ct
                )?;
                if r.flags.is_maybe_bad_book() {
                    write!(f, " MAYBE_BAD")?;
                }
                Ok(())
            }
            Update::TradingState { symbol, record } => write!(
                f,
                "{} state {}",
                String::from_utf8_lossy(symbol),
                status_name(record)
            ),
            Update::Line { stale: true } => write!(f, "line STALE"),
            Update::Line { stale: false } => write!(f, "line live"),
            Update::CycleEnd { text } => write!(f, "{text}"),
        }
    }
}

fn status_name(record: &StatusMsg) -> &'static str {
    match record.action {
        a if a == dbn::StatusAction::Halt as u16 => "halted",
        a if a == dbn::StatusAction::Pause as u16 => "paused",
        a if a == dbn::StatusAction::Quoting as u16 => "quotation only",
        a if a == dbn::StatusAction::Trading as u16 => "trading",
        _ => "unknown",
    }
}

/// The books of one stream, as its records describe them.
#[derive(Debug, Default)]
pub struct FollowedBooks {
    books: BTreeMap<u32, FollowedBook>,
    /// Only these tickers' books are kept, when given.
    symbols: Option<HashSet<Vec<u8>>>,
    counts: FollowCounts,
    line_stale: bool,
    /// The last refresh cycle whose end was seen, and whether the one before it was seen too
    /// (then every book has been sent at least once since this subscriber joined).
    last_cycle: Option<u64>,
    complete: bool,
    ended: bool,
}

impl FollowedBooks {
    /// Every book, or only `symbols`' (tickers, trimmed).
    pub fn new(symbols: Option<&[String]>) -> Self {
        FollowedBooks {
            symbols: symbols.map(|s| s.iter().map(|t| t.as_bytes().to_vec()).collect()),
            ..FollowedBooks::default()
        }
    }

    /// What has come so far.
    pub fn counts(&self) -> FollowCounts {
        self.counts
    }

    /// Whether every book has been sent since this subscriber joined: it saw one whole
    /// refresh cycle (two cycle ends in a row), or the stream from its first record.
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// Whether the stream's last record came.
    pub fn has_ended(&self) -> bool {
        self.ended
    }

    /// Whether the line is stale, by its latest state record.
    pub fn is_line_stale(&self) -> bool {
        self.line_stale
    }

    /// Books kept so far.
    pub fn len(&self) -> usize {
        self.books.values().filter(|b| b.seen).count()
    }

    /// Whether no book was kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The stream's image went and may come back: records were missed, so every book is
    /// only as good as its latest record until a whole refresh cycle has come again.
    pub fn image_lost(&mut self) {
        self.complete = false;
        self.last_cycle = None;
    }

    /// A subscriber that saw the stream from its very first record (the publisher started
    /// after it) has every book from the start.
    pub fn joined_at_start(&mut self) {
        self.complete = true;
    }

    fn wanted(&self, symbol: &[u8; 8]) -> bool {
        match &self.symbols {
            None => true,
            Some(set) => set.contains(Alpha::<8>::trim(symbol)),
        }
    }

    /// Applies one record; returns what is worth printing of it.
    pub fn apply<'a>(&'a mut self, record: StreamRecord<'a>) -> Option<Update<'a>> {
        self.counts.records += 1;
        match record {
            StreamRecord::Mapping(m) => {
                let mut symbol = [b' '; 8];
                for (to, from) in symbol
                    .iter_mut()
                    .zip(field_text(&m.stype_in_symbol).bytes())
                {
                    *to = from;
                }
                self.books.entry(m.hd.instrument_id).or_default().symbol = symbol;
                None
            }
            StreamRecord::Book(r) => self.book(r),
            StreamRecord::Status(s) => {
                self.counts.statuses += 1;
                if s.hd.instrument_id == LINE_INSTRUMENT {
                    let stale = s.action == dbn::StatusAction::NotAvailableForTrading as u16;
                    let changed = stale != self.line_stale;
                    self.line_stale = stale;
                    return changed.then_some(Update::Line { stale });
                }
                let state = match s.action {
                    a if a == dbn::StatusAction::Halt as u16 => b'H',
                    a if a == dbn::StatusAction::Pause as u16 => b'P',
                    a if a == dbn::StatusAction::Quoting as u16 => b'Q',
                    a if a == dbn::StatusAction::Trading as u16 => b'T',
                    _ => 0,
                };
                let book = self.books.entry(s.hd.instrument_id).or_default();
                let symbol = book.symbol;
                if !self.wanted(&symbol) {
                    return None;
                }
                let book = self.books.get_mut(&s.hd.instrument_id)?;
                let changed = book.trading_state != state;
                book.trading_state = state;
                changed.then(|| Update::TradingState {
                    symbol: Alpha::<8>::trim(&book.symbol),
                    record: s,
                })
            }
            StreamRecord::System(s) => self.system(s),
            StreamRecord::Other(_) => {
                self.counts.unknown += 1;
                None
            }
        }
    }

    fn book<'a>(&'a mut self, r: &'a Mbp10Msg) -> Option<Update<'a>> {
        match (r.flags.is_snapshot(), r.action as u8) {
            (true, _) => self.counts.refreshes += 1,
            (false, b'T') => self.counts.trades += 1,
            (false, _) => self.counts.changes += 1,
        }
        let entry = self.books.entry(r.hd.instrument_id).or_default();
        let symbol = entry.symbol;
        if !self.wanted(&symbol) {
            return None;
        }
        let book = self.books.get_mut(&r.hd.instrument_id)?;
        book.top = top_of(r);
        book.sequence = r.sequence;
        book.maybe_bad = r.flags.is_maybe_bad_book();
        book.seen = true;
        Some(Update::Book {
            symbol: Alpha::<8>::trim(&book.symbol),
            record: r,
        })
    }

    fn system<'a>(&'a mut self, s: &'a SystemMsg) -> Option<Update<'a>> {
        let text = field_text(&s.msg);
        if s.code == dbn::SystemCode::Heartbeat as u8 {
            self.counts.heartbeats += 1;
            return None;
        }
        if text.starts_with(END_TEXT) {
            // The end closes a last cycle, in which every book was sent again: a
            // subscriber that saw the cycle end before it has every book.
            self.ended = true;
            if self.last_cycle.is_some() {
                self.complete = true;
            }
            return None;
        }
        if let Some(rest) = text.strip_prefix(REFRESH_TEXT) {
            let cycle = rest.split(' ').next().and_then(|n| n.parse::<u64>().ok())?;
            self.counts.cycles += 1;
            if self.last_cycle.is_some_and(|last| last + 1 == cycle) {
                self.complete = true;
            }
            self.last_cycle = Some(cycle);
            return Some(Update::CycleEnd {
                text: s.msg().unwrap_or(REFRESH_TEXT),
            });
        }
        None
    }

    /// Writes up to `depth` levels per side of every book kept, in the `--book-out` format:
    /// sorted by locate, then side (`B` before `S`), then level; sides with no levels write
    /// no rows. At most [`LEVELS`] levels a side are known.
    ///
    /// # Errors
    ///
    /// Whatever `sink` returns.
    pub fn write_book_csv<W: Write>(&self, depth: usize, sink: W) -> io::Result<W> {
        let mut out = CsvBuffer::new(sink);
        out.raw(BOOK_HEADER.as_bytes());
        for (&instrument, book) in &self.books {
            if !book.seen {
                continue;
            }
            let Ok(locate) = u16::try_from(instrument) else {
                continue;
            };
            let symbol = Alpha::<8>::trim(&book.symbol);
            for (side, levels) in [(Side::Bid, &book.top.bids), (Side::Ask, &book.top.asks)] {
                for (i, level) in levels.live().iter().take(depth).enumerate() {
                    write_level_row(&mut out, Locate(locate), symbol, side, i + 1, level)?;
                }
            }
        }
        out.finish()
    }

    /// The books flagged as maybe wrong by their latest record (tickers).
    pub fn maybe_bad(&self) -> Vec<String> {
        self.books
            .values()
            .filter(|b| b.seen && b.maybe_bad)
            .map(|b| String::from_utf8_lossy(Alpha::<8>::trim(&b.symbol)).into_owned())
            .collect()
    }
}

/// A book record's levels as a [`BookTop`].
fn top_of(r: &Mbp10Msg) -> BookTop {
    let side = |px: fn(&dbn::BidAskPair) -> (i64, u32, u32)| {
        let mut top = SideTop::default();
        top.set(
            r.levels
                .iter()
                .map(px)
                .take_while(|&(p, _, _)| p != UNDEF_PRICE)
                .map(|(p, qty, orders)| LevelView {
                    price: Price((p / 100_000) as u32),
                    qty: u64::from(qty),
                    orders,
                }),
        );
        top
    };
    BookTop {
        bids: side(|l| (l.bid_px, l.bid_sz, l.bid_ct)),
        asks: side(|l| (l.ask_px, l.ask_sz, l.ask_ct)),
    }
}

const _: () = assert!(LEVELS == 10, "a book record is MBP-10");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{StreamStamp, END_TEXT, REFRESH_TEXT};

    fn said(books: &mut FollowedBooks, text: &str) {
        let record = StreamStamp::nasdaq_today().system(dbn::SystemCode::EndOfInterval, text, 1);
        books.apply(StreamRecord::System(&record));
    }

    fn cycle_end(books: &mut FollowedBooks, cycle: u64) {
        said(
            books,
            &format!("{REFRESH_TEXT}{cycle} complete: 3 instruments"),
        );
    }

    #[test]
    fn a_joiner_has_every_book_after_two_cycle_ends_in_a_row() {
        let mut books = FollowedBooks::new(None);
        cycle_end(&mut books, 4);
        assert!(!books.is_complete(), "it joined inside cycle 4");
        cycle_end(&mut books, 5);
        assert!(books.is_complete());
        books.image_lost();
        assert!(!books.is_complete(), "records may have gone with the image");
        cycle_end(&mut books, 9);
        cycle_end(&mut books, 10);
        assert!(books.is_complete());
    }

    #[test]
    fn the_end_closes_the_last_cycle() {
        let mut late = FollowedBooks::new(None);
        cycle_end(&mut late, 7);
        said(&mut late, &format!("{END_TEXT}: 3 instruments"));
        assert!(late.has_ended());
        assert!(
            late.is_complete(),
            "the last refresh came whole after cycle 7's end"
        );

        let mut too_late = FollowedBooks::new(None);
        said(&mut too_late, &format!("{END_TEXT}: 3 instruments"));
        assert!(too_late.has_ended());
        assert!(
            !too_late.is_complete(),
            "no cycle end: part of the last refresh was before it"
        );
    }
}
