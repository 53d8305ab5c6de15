//! Databento MBO records applied to the same books as ITCH, through the books' own
//! operations (add, reduce, delete, modify in place, clear), so the ITCH apply step and
//! its hot loop stay as they are.
//!
//! How each action maps (Databento's documented MBO conventions):
//!
//! | action | books |
//! | --- | --- |
//! | `A`dd | add the order (ITCH add rules: 0 shares or a live reference rejected, counted) |
//! | `C`ancel | take `size` shares off the order; it leaves at 0 (more than it has: clamped, counted) |
//! | `M`odify | the order takes the new price and size; an unknown order is added, as Databento's own book example does, and counted |
//! | clea`R` | every order of the instrument leaves |
//! | `T`rade, `F`ill, `N`one | nothing: Databento sends a Cancel for every fill of a resting order |
//!
//! Instruments: an `instrument_id` that fits 16 bits is its own locate, so a DBN file
//! written from ITCH (where `instrument_id` is the locate) replays to the same locates; a
//! larger id is counted and its records skipped. Prices: DBN's 1e-9 units become ITCH's
//! 1e-4 units when exact and within `u32`; any other price is counted and its record
//! skipped. The top-of-book stream is examined once per event, at the record that carries
//! `F_LAST` (Databento: the book is only consistent there), with the event's `sequence` as
//! `msg_index` and `ts_event` as `timestamp_ns`, in ITCH time once the session is set
//! ([`MboApplier::set_session`]: nanoseconds since the session's New York midnight; before
//! that, since the Unix epoch). A record stamped before the session's midnight is applied
//! and counted, but writes no row (ITCH time cannot say it); one stamped on a later day is
//! applied, counted, and stamped past 24 hours.

use std::io;

use ticklane_itch::MboRecord;
use ticklane_itch::{Locate, Nanos, OrderRef, Price, Stock};

use super::apply::Applier;
use super::bbo_row::BboSink;
use super::{BookConfig, Books, Side, Touches, TouchesAhead};

/// `F_LAST`: the last record of an event for an instrument.
pub const F_LAST: u8 = 1 << 7;
/// `F_SNAPSHOT`: the record comes from a book snapshot, not a live event.
pub const F_SNAPSHOT: u8 = 1 << 5;
/// `F_MAYBE_BAD_BOOK`: the venue's book may be wrong here (a gap upstream).
pub const F_MAYBE_BAD_BOOK: u8 = 1 << 2;

/// DBN price units per ITCH price unit (1e-4 / 1e-9).
const DBN_PER_ITCH_PRICE: i64 = 100_000;

/// The actions, in the order [`MboCounts::by_action`] counts them.
pub const ACTIONS: [u8; 7] = [b'A', b'C', b'M', b'R', b'T', b'F', b'N'];

/// What the MBO translation counted (the books count the rest: unknown references,
/// rejected adds, clamped cancels).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MboCounts {
    /// MBO records handled.
    pub records: u64,
    /// Records by action, in the order of [`ACTIONS`].
    pub by_action: [u64; 7],
    /// Records whose action byte is none of the seven: skipped.
    pub unknown_actions: u64,
    /// Records whose `instrument_id` does not fit a 16-bit locate: skipped.
    pub instrument_out_of_range: u64,
    /// Add or Modify records whose price is not a whole number of 1e-4 units within
    /// `u32` (negative, undefined, or finer than ITCH can say): skipped.
    pub unrepresentable_prices: u64,
    /// Modify records naming an order not in the book, added as new orders.
    pub modify_unknown_added: u64,
    /// Records flagged `F_SNAPSHOT`.
    pub snapshot_records: u64,
    /// Whether the first record was flagged `F_SNAPSHOT`: the input opens with a book
    /// snapshot (a clear, then each resting order), so its books are whole from the start.
    pub opened_with_snapshot: bool,
    /// Cancel and Modify records naming an order the books never had (an unknown Modify is
    /// added, and counted in `modify_unknown_added` too).
    pub unknown_orders: u64,
    /// Records flagged `F_MAYBE_BAD_BOOK`.
    pub maybe_bad_book_records: u64,
    /// Records stamped before the session's New York midnight: applied, no row written.
    pub before_session_day: u64,
    /// Records stamped at or after the next day's New York midnight: applied, stamped past
    /// 24 hours.
    pub after_session_day: u64,
}

impl MboCounts {
    /// Whether the input began mid-day: it did not open with a snapshot, and records named
    /// orders from before it. Its books lack whatever rested from before the input: every
    /// one of them may be wrong.
    pub fn started_mid_day(&self) -> bool {
        !self.opened_with_snapshot && self.unknown_orders > 0
    }
}

/// An event's changed book waiting for its `F_LAST` record.
#[derive(Clone, Copy, Debug)]
struct Pending {
    locate: Locate,
    index: u64,
    /// `None` before the session's midnight: no row.
    timestamp: Option<Nanos>,
}

/// The apply step for MBO records: books plus the optional top-of-book stream.
pub struct MboApplier<S: BboSink> {
    applier: Applier<S>,
    counts: MboCounts,
    pending: Option<Pending>,
    /// Stamps are `ts_event` less this (ns since the Unix epoch; 0 until a session is set).
    midnight_ns: u64,
    /// Records at or after this are on a later day (`u64::MAX` until a session is set).
    next_midnight_ns: u64,
}

impl<S: BboSink> MboApplier<S> {
    /// Books at `config`, sending the top-of-book stream to `bbo` if given.
    ///
    /// # Errors
    ///
    /// If the book tables cannot be allocated.
    pub fn new(config: BookConfig, bbo: Option<S>) -> io::Result<Self> {
        Ok(MboApplier {
            applier: Applier::new(config, bbo)?,
            counts: MboCounts::default(),
            pending: None,
            midnight_ns: 0,
            next_midnight_ns: u64::MAX,
        })
    }

    /// Stamps rows from here on in ITCH time: ns since `midnight_ns` (the session's New
    /// York midnight, ns since the Unix epoch); records at or after `next_midnight_ns` are
    /// counted as on a later day.
    pub fn set_session(&mut self, midnight_ns: u64, next_midnight_ns: u64) {
        self.midnight_ns = midnight_ns;
        self.next_midnight_ns = next_midnight_ns;
    }

    /// `ts_event` in ITCH time (see [`MboApplier::set_session`]), or `None` before the
    /// session's midnight.
    #[inline]
    pub fn time_of_day(&self, ts_event: u64) -> Option<Nanos> {
        ts_event.checked_sub(self.midnight_ns).map(Nanos)
    }

    /// Names an instrument (from DBN metadata or a symbol mapping record); an id that does
    /// not fit a locate is ignored (its records are counted when they come).
    pub fn set_symbol(&mut self, instrument_id: u32, symbol: Stock) {
        if let Some(locate) = locate_of(instrument_id) {
            self.applier.books_mut().set_symbol(locate, symbol);
        }
    }

    /// Asks for the memory the records ahead will touch ([`Books::prefetch`], with
    /// [`Touches::of_mbo`] of each); call it before each [`MboApplier::step`] when the
    /// records ahead have been read.
    #[inline]
    pub fn prefetch(&self, ahead: TouchesAhead) {
        self.applier.books().prefetch(ahead);
    }

    /// Applies one MBO record. Returns the locate whose book it changed, if any.
    ///
    /// # Errors
    ///
    /// If the top-of-book stream cannot be written.
    pub fn step(&mut self, record: &MboRecord) -> io::Result<Option<Locate>> {
        let counts = &mut self.counts;
        counts.records += 1;
        if counts.records == 1 {
            counts.opened_with_snapshot = record.flags & F_SNAPSHOT != 0;
        }
        if record.flags & F_SNAPSHOT != 0 {
            counts.snapshot_records += 1;
        }
        if record.flags & F_MAYBE_BAD_BOOK != 0 {
            counts.maybe_bad_book_records += 1;
        }
        match ACTIONS.iter().position(|&a| a == record.action) {
            Some(i) => counts.by_action[i] += 1,
            None => counts.unknown_actions += 1,
        }
        let timestamp = self.time_of_day(record.ts_event);
        if timestamp.is_none() {
            self.counts.before_session_day += 1;
        } else if record.ts_event >= self.next_midnight_ns {
            self.counts.after_session_day += 1;
        }
        let changed = self.apply(record);
        if let Some(locate) = changed {
            if let Some(p) = self.pending {
                if p.locate != locate {
                    self.flush()?;
                }
            }
            self.pending = Some(Pending {
                locate,
                index: u64::from(record.sequence),
                timestamp,
            });
        }
        if record.flags & F_LAST != 0 {
            self.flush()?;
        }
        Ok(changed)
    }

    fn apply(&mut self, record: &MboRecord) -> Option<Locate> {
        let Some(locate) = locate_of(record.instrument_id) else {
            self.counts.instrument_out_of_range += 1;
            return None;
        };
        let order_ref = OrderRef(record.order_id);
        let books = self.applier.books_mut();
        match record.action {
            b'A' => {
                let price = self.price(record.price)?;
                let books = self.applier.books_mut();
                add(books, locate, record.side, order_ref, record.size, price)
            }
            b'C' => {
                let changed = books.reduce_order(order_ref, record.size);
                self.counts.unknown_orders += u64::from(changed.is_none());
                changed
            }
            b'M' => {
                let price = self.price(record.price)?;
                let books = self.applier.books_mut();
                match books.modify_order(order_ref, record.size, price) {
                    Some(changed) => Some(changed),
                    None => {
                        self.counts.modify_unknown_added += 1;
                        self.counts.unknown_orders += 1;
                        let books = self.applier.books_mut();
                        add(books, locate, record.side, order_ref, record.size, price)
                    }
                }
            }
            b'R' => books.clear_book(locate),
            _ => None,
        }
    }

    /// `price` in ITCH units, or `None` (counted) if it has no exact ITCH form.
    fn price(&mut self, price: i64) -> Option<Price> {
        let itch = (price % DBN_PER_ITCH_PRICE == 0)
            .then(|| u32::try_from(price / DBN_PER_ITCH_PRICE).ok())
            .flatten();
        if itch.is_none() {
            self.counts.unrepresentable_prices += 1;
        }
        itch.map(Price)
    }

    /// Writes the pending event's top-of-book row, if one is waiting.
    fn flush(&mut self) -> io::Result<()> {
        match self.pending.take() {
            Some(Pending {
                locate,
                index,
                timestamp: Some(timestamp),
            }) => self.applier.track_top_of_book(index, timestamp, locate),
            _ => Ok(()),
        }
    }

    /// Writes the last event's row if its `F_LAST` never came (an event longer than the
    /// replay holds back), so that [`MboApplier::bbo_rows`] counts every row written.
    ///
    /// # Errors
    ///
    /// If the top-of-book stream cannot be written.
    pub fn end_of_input(&mut self) -> io::Result<()> {
        self.flush()
    }

    /// What was counted so far.
    pub fn counts(&self) -> MboCounts {
        self.counts
    }

    /// The books as they stand.
    pub fn books(&self) -> &Books {
        self.applier.books()
    }

    /// Top-of-book rows written so far.
    pub fn bbo_rows(&self) -> u64 {
        self.applier.bbo_rows()
    }

    /// Writes the last event's row if its `F_LAST` never came, flushes the top-of-book
    /// stream, and gives back the books.
    ///
    /// # Errors
    ///
    /// If the top-of-book stream cannot be written.
    pub fn finish(mut self) -> io::Result<Books> {
        self.flush()?;
        self.applier.finish()
    }

    /// Writes the last event's row if its `F_LAST` never came, and gives back the books and
    /// the top-of-book sink unfinished (for a sink whose close needs what the replay learns
    /// at the end, as the Parquet footer needs the summary).
    ///
    /// # Errors
    ///
    /// If the top-of-book stream cannot be written.
    pub fn into_parts(mut self) -> io::Result<(Books, Option<S>)> {
        self.flush()?;
        Ok(self.applier.into_parts())
    }
}

impl Touches {
    /// What an MBO record will touch: the order a cancel or modify names, the book side an
    /// add joins.
    #[inline(always)]
    pub fn of_mbo(r: &MboRecord) -> Touches {
        match (r.action, locate_of(r.instrument_id)) {
            (b'C' | b'M', _) => Touches::Order(OrderRef(r.order_id)),
            (b'A', Some(locate)) => {
                let side = match r.side {
                    b'B' => Some(Side::Bid),
                    b'A' => Some(Side::Ask),
                    _ => None,
                };
                Touches::Add(locate, side)
            }
            _ => Touches::Nothing,
        }
    }
}

/// The locate of an instrument: itself, when it fits 16 bits.
fn locate_of(instrument_id: u32) -> Option<Locate> {
    u16::try_from(instrument_id).ok().map(Locate)
}

/// An add with DBN's side letters (`B`id, `A`sk); any other side is rejected by the books
/// as a bad side, and counted there.
fn add(
    books: &mut Books,
    locate: Locate,
    side: u8,
    order_ref: OrderRef,
    shares: u32,
    price: Price,
) -> Option<Locate> {
    let itch_side = match side {
        b'B' => Side::Bid.wire(),
        b'A' => Side::Ask.wire(),
        _ => 0,
    };
    books.add_order(locate, itch_side, order_ref, shares, price)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoBbo;

    fn rec(action: u8, side: u8, order_id: u64, price_dollars_e4: i64, size: u32) -> MboRecord {
        MboRecord {
            instrument_id: 7,
            order_id,
            price: price_dollars_e4 * DBN_PER_ITCH_PRICE,
            size,
            action,
            side,
            flags: F_LAST,
            ts_event: 1,
            sequence: 1,
        }
    }

    fn applier() -> MboApplier<NoBbo> {
        let config = BookConfig {
            max_orders: 64,
            max_books: 4,
            levels_per_side: 8,
        };
        MboApplier::new(config, None).expect("books")
    }

    #[test]
    fn prices_must_be_whole_itch_units() {
        let mut m = applier();
        let mut odd = rec(b'A', b'B', 1, 100, 10);
        odd.price += 1;
        assert_eq!(m.step(&odd).expect("step"), None);
        let mut negative = rec(b'A', b'B', 2, 100, 10);
        negative.price = -negative.price;
        assert_eq!(m.step(&negative).expect("step"), None);
        let mut undefined = rec(b'A', b'B', 3, 100, 10);
        undefined.price = i64::MAX;
        assert_eq!(m.step(&undefined).expect("step"), None);
        assert_eq!(m.counts().unrepresentable_prices, 3);
        assert_eq!(m.books().live_orders(), 0);
    }

    #[test]
    fn an_input_that_names_orders_from_before_it_without_a_snapshot_started_mid_day() {
        // A whole day: every order named was added first.
        let mut whole = applier();
        for r in [rec(b'A', b'B', 1, 100, 10), rec(b'C', b'B', 1, 100, 10)] {
            whole.step(&r).expect("step");
        }
        assert!(!whole.counts().started_mid_day());
        // Cut mid-day: a cancel and a modify of orders the input never added.
        let mut cut = applier();
        for r in [rec(b'C', b'B', 5, 100, 10), rec(b'M', b'S', 6, 101, 3)] {
            cut.step(&r).expect("step");
        }
        let counts = cut.counts();
        assert_eq!(
            (counts.unknown_orders, counts.opened_with_snapshot),
            (2, false)
        );
        assert!(counts.started_mid_day());
        // Opened with a snapshot: whatever it names later, the books were whole.
        let snapshot = |mut r: MboRecord| {
            r.flags |= F_SNAPSHOT;
            r
        };
        let mut opened = applier();
        let records = [
            snapshot(rec(b'R', b'N', 0, 0, 0)),
            snapshot(rec(b'A', b'B', 1, 100, 10)),
            rec(b'C', b'B', 9, 100, 10),
        ];
        for r in records {
            opened.step(&r).expect("step");
        }
        assert!(opened.counts().opened_with_snapshot);
        assert!(!opened.counts().started_mid_day());
    }

    #[test]
    fn wide_instrument_ids_are_counted_not_applied() {
        let mut m = applier();
        let mut wide = rec(b'A', b'B', 1, 100, 10);
        wide.instrument_id = 1 << 16;
        assert_eq!(m.step(&wide).expect("step"), None);
        assert_eq!(m.counts().instrument_out_of_range, 1);
        assert_eq!(m.books().live_orders(), 0);
    }

    #[test]
    fn unknown_action_and_side_never_panic() {
        let mut m = applier();
        assert_eq!(m.step(&rec(b'Z', b'B', 1, 100, 10)).expect("step"), None);
        assert_eq!(m.counts().unknown_actions, 1);
        assert_eq!(m.step(&rec(b'A', b'N', 1, 100, 10)).expect("step"), None);
        assert_eq!(m.books().counters().rejected_bad_side, 1);
    }

    /// A sink that keeps the rows' timestamps.
    #[derive(Default)]
    struct Stamps(Vec<u64>);

    impl BboSink for Stamps {
        fn write_row(&mut self, row: &crate::BboRow) -> io::Result<()> {
            self.0.push(row.timestamp_ns);
            Ok(())
        }
        fn finish(self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn rows_are_stamped_since_the_session_midnight_and_other_days_counted() {
        let config = BookConfig {
            max_orders: 64,
            max_books: 4,
            levels_per_side: 8,
        };
        let mut m = MboApplier::new(config, Some(Stamps::default())).expect("books");
        // A made-up day: midnight at 1,000 ns, the next at 5,000 ns.
        m.set_session(1_000, 5_000);
        let at = |mut r: MboRecord, ts: u64| {
            r.ts_event = ts;
            r
        };
        for (order, ts) in [(1, 999), (2, 1_000), (3, 4_999), (4, 5_000)] {
            let price = 100 + order as i64;
            m.step(&at(rec(b'A', b'B', order, price, 10), ts))
                .expect("step");
        }
        assert_eq!(m.counts().before_session_day, 1);
        assert_eq!(m.counts().after_session_day, 1);
        assert_eq!(m.books().live_orders(), 4, "every record is applied");
        let (_, sink) = m.into_parts().expect("parts");
        assert_eq!(sink.expect("a sink").0, [0, 3_999, 4_000]);
    }

    #[test]
    fn modify_of_an_unknown_order_adds_it() {
        let mut m = applier();
        assert_eq!(
            m.step(&rec(b'M', b'A', 9, 250, 30)).expect("step"),
            Some(Locate(7))
        );
        assert_eq!(m.counts().modify_unknown_added, 1);
        let top = m.books().top_of_book(Locate(7));
        assert_eq!((top.bid.orders, top.ask.orders), (0, 1));
        assert_eq!((top.ask.price, top.ask.qty), (Price(250), 30));
    }
}
