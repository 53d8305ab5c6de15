//! The per-message apply step: decode, apply to the books, track the top of book.
//!
//! File replay and the live book thread both feed this one step, so a message is handled
//! the same way wherever it came from.

use std::io;

use ticklane_itch::{
    self, AddOrder, AddOrderMpid, DecodeError, Locate, Message, Nanos, OrderCancel, OrderDelete,
    OrderExecuted, OrderExecutedWithPrice, OrderReplace, Stock, WireField,
};

use super::bbo_row::{BboRow, BboSink};
use super::books::{per_locate, LOCATES};
use super::type_counts::TypeCounts;
use super::{BookChange, BookConfig, Books, TopOfBook, TouchesAhead};

/// Why one message could not be applied.
#[derive(Debug)]
pub enum ApplyError {
    /// The bytes are not a valid ITCH 5.0 message of a known type.
    Decode(DecodeError),
    /// The top-of-book output could not be written.
    Output(io::Error),
}

/// What one step did: the message (absent for an unknown type, which is skipped) and the
/// locate whose book it changed, if any.
#[derive(Clone, Copy, Debug)]
pub struct Applied<'m> {
    /// The decoded message.
    pub message: Option<Message<'m>>,
    /// The locate whose book changed (for E, C, X, D and U, the order's own locate).
    pub changed: Option<Locate>,
    /// A locate-0 snapshot's orders joined the changed book ahead of the message (the live
    /// stream named their locate): the book changed beyond the levels the message touched.
    pub placed: bool,
}

/// `bytes` as exactly the `N` bytes a message of type `tag` has, or the decode error
/// `itch::decode` gives for a wrong length.
#[inline(always)]
fn exact<const N: usize>(tag: u8, bytes: &[u8]) -> Result<&[u8; N], ApplyError> {
    bytes.try_into().map_err(|_| {
        ApplyError::Decode(DecodeError::WrongLength {
            tag,
            expected: N,
            actual: bytes.len(),
        })
    })
}

/// A top-of-book sink for replays that want none; it is never called.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoBbo;

impl BboSink for NoBbo {
    fn write_row(&mut self, _row: &BboRow) -> io::Result<()> {
        Ok(())
    }
    fn finish(self) -> io::Result<()> {
        Ok(())
    }
}

/// The top-of-book stream's state: where rows go and the last row sent per stock.
struct BboTracker<S> {
    sink: S,
    /// Last row sent per locate; all zero before the first, as the contract says.
    last: Box<[TopOfBook; LOCATES]>,
    rows: u64,
}

/// The apply step: books plus the optional top-of-book stream, fed one message at a time.
pub struct Applier<S: BboSink> {
    books: Books,
    bbo: Option<BboTracker<S>>,
    by_type: TypeCounts,
    /// ITCH messages handled (unknown types included).
    messages: u64,
    /// Length-framed messages of a type ITCH 5.0 does not define: skipped and counted.
    unknown_types: u64,
}

impl<S: BboSink> Applier<S> {
    /// Books at `config`, sending the top-of-book stream to `bbo` if given: a row each time
    /// any of a stock's six top-of-book values differs from its last row.
    ///
    /// # Errors
    ///
    /// If the book tables cannot be allocated.
    pub fn new(config: BookConfig, bbo: Option<S>) -> io::Result<Self> {
        Ok(Applier {
            books: Books::new(config)?,
            bbo: bbo.map(|sink| BboTracker {
                sink,
                last: per_locate(TopOfBook::default()),
                rows: 0,
            }),
            by_type: TypeCounts::default(),
            messages: 0,
            unknown_types: 0,
        })
    }

    /// Handles message number `index` (1-based, in input order) given as exactly its bytes.
    ///
    /// # Errors
    ///
    /// [`ApplyError::Decode`] for a wrong length or an empty frame: the input is corrupt and
    /// the caller stops (everything before has been applied). An unknown type is counted
    /// and skipped, since its frame's length already says where the next message starts.
    /// [`ApplyError::Output`] if the top-of-book stream cannot be written.
    #[inline]
    pub fn step<'m>(&mut self, index: u64, bytes: &'m [u8]) -> Result<Applied<'m>, ApplyError> {
        self.step_with(index, bytes, |_, _| {})
    }

    /// Asks for the memory the messages ahead will touch ([`Books::prefetch`]); call it
    /// before each [`Applier::step`] when the input lets you look ahead.
    #[inline(always)]
    pub fn prefetch(&self, ahead: TouchesAhead) {
        self.books.prefetch(ahead);
    }

    /// [`Applier::step`], calling `before` with the books and the decoded message just
    /// before it is applied (to see the order an execution will reduce or remove).
    ///
    /// # Errors
    ///
    /// As [`Applier::step`].
    #[inline(always)]
    pub fn step_with<'m>(
        &mut self,
        index: u64,
        bytes: &'m [u8],
        before: impl FnOnce(&Books, &Message<'m>),
    ) -> Result<Applied<'m>, ApplyError> {
        Ok(match self.apply_message(index, bytes, before)? {
            Some((message, change)) => Applied {
                message: Some(message),
                changed: change.map(|c| c.locate),
                placed: self.books.take_placed(),
            },
            None => Applied {
                message: None,
                changed: None,
                placed: false,
            },
        })
    }

    /// [`Applier::step`] for a caller that wants only whether the message went through (a
    /// replay with no output but the top-of-book stream): nothing is built for it to read.
    /// Nor is [`Applied::placed`] taken, so an applier is fed by this or by
    /// [`Applier::step_with`] throughout, never both.
    ///
    /// # Errors
    ///
    /// As [`Applier::step`].
    #[inline(always)]
    pub fn apply(&mut self, index: u64, bytes: &[u8]) -> Result<(), ApplyError> {
        self.apply_message(index, bytes, |_, _| {}).map(drop)
    }

    /// The apply step: the message decoded and applied, with the change it made, or `None`
    /// for a type ITCH 5.0 does not define (counted and skipped).
    #[inline(always)]
    fn apply_message<'m>(
        &mut self,
        index: u64,
        bytes: &'m [u8],
        before: impl FnOnce(&Books, &Message<'m>),
    ) -> Result<Option<(Message<'m>, Option<BookChange>)>, ApplyError> {
        let Some(&tag) = bytes.first() else {
            return Err(ApplyError::Decode(DecodeError::Empty));
        };
        // One match on the type byte (a jump table): each arm that changes a book checks its
        // length, makes its view and applies it, with no second dispatch on a decoded enum.
        // Every other type goes through `itch::decode` and `Books::apply_change` as before.
        macro_rules! arm {
            ($View:ident, |$m:ident| $apply:expr) => {{
                let $m = $View::new(exact(tag, bytes)?);
                let message = Message::$View($m);
                before(&self.books, &message);
                (message, $apply)
            }};
        }
        let (message, change) = match tag {
            b'A' => arm!(AddOrder, |m| self.books.add_or_park(
                m.locate(),
                m.stock(),
                m.side(),
                m.order_ref(),
                m.shares(),
                m.price()
            )),
            b'F' => arm!(AddOrderMpid, |m| self.books.add_or_park(
                m.locate(),
                m.stock(),
                m.side(),
                m.order_ref(),
                m.shares(),
                m.price()
            )),
            b'E' => arm!(OrderExecuted, |m| {
                let (r, shares) = (m.order_ref(), m.executed_shares());
                let change = self.books.reduce(r, shares);
                self.books
                    .or_placed(change, r, m.locate(), |b| b.reduce(r, shares))
            }),
            b'C' => arm!(OrderExecutedWithPrice, |m| {
                let (r, shares) = (m.order_ref(), m.executed_shares());
                let change = self.books.reduce(r, shares);
                self.books
                    .or_placed(change, r, m.locate(), |b| b.reduce(r, shares))
            }),
            b'X' => arm!(OrderCancel, |m| {
                let (r, shares) = (m.order_ref(), m.cancelled_shares());
                let change = self.books.reduce(r, shares);
                self.books
                    .or_placed(change, r, m.locate(), |b| b.reduce(r, shares))
            }),
            b'D' => arm!(OrderDelete, |m| {
                let r = m.order_ref();
                let change = self.books.delete(r);
                self.books.or_placed(change, r, m.locate(), |b| b.delete(r))
            }),
            b'U' => arm!(OrderReplace, |m| {
                let (r, new, shares, price) = (
                    m.original_order_ref(),
                    m.new_order_ref(),
                    m.shares(),
                    m.price(),
                );
                let change = self.books.replace(r, new, shares, price);
                self.books
                    .or_placed(change, r, m.locate(), |b| b.replace(r, new, shares, price))
            }),
            _ => {
                let message = match ticklane_itch::decode(bytes) {
                    Ok(m) => m,
                    Err(DecodeError::UnknownType { .. }) => {
                        self.messages += 1;
                        self.unknown_types += 1;
                        return Ok(None);
                    }
                    Err(e) => return Err(ApplyError::Decode(e)),
                };
                before(&self.books, &message);
                let change = self.books.apply_change(&message);
                (message, change)
            }
        };
        self.messages += 1;
        self.by_type.0[usize::from(tag)] += 1;
        if let (Some(change), Some(bbo)) = (change, &mut self.bbo) {
            // A change behind the best levels leaves the top as its last row has it (the
            // row was written, or found equal, after the last change that reached it).
            if change.top_moved {
                // Every ITCH 5.0 message has its timestamp at bytes 5..11 (and a decoded one
                // is longer): read there rather than through a second match on `message`.
                let timestamp = Nanos::read(&bytes[5..]);
                Self::track(bbo, &self.books, index, timestamp, change.locate)
                    .map_err(ApplyError::Output)?;
            }
        }
        Ok(Some((message, change)))
    }

    #[inline(always)]
    fn track(
        bbo: &mut BboTracker<S>,
        books: &Books,
        index: u64,
        timestamp: Nanos,
        locate: Locate,
    ) -> io::Result<()> {
        let top = books.top_of_book(locate);
        let last = &mut bbo.last[usize::from(locate.0)];
        if top == *last {
            return Ok(());
        }
        *last = top;
        bbo.rows += 1;
        let symbol: Stock = books.symbol_raw(locate);
        bbo.sink
            .write_row(&BboRow::new(index, timestamp, locate, symbol, &top))
    }

    /// The books, for inputs that are not ITCH messages (DBN MBO records) and change them
    /// through the book-level operations; such a caller writes the top-of-book stream with
    /// [`Applier::track_top_of_book`].
    pub fn books_mut(&mut self) -> &mut Books {
        &mut self.books
    }

    /// Writes a top-of-book row for `locate` if its top of book differs from its last row
    /// (what [`Applier::step`] does after each message that changed a book).
    ///
    /// # Errors
    ///
    /// If the top-of-book stream cannot be written.
    pub fn track_top_of_book(
        &mut self,
        index: u64,
        timestamp: Nanos,
        locate: Locate,
    ) -> io::Result<()> {
        match &mut self.bbo {
            Some(bbo) => Self::track(bbo, &self.books, index, timestamp, locate),
            None => Ok(()),
        }
    }

    /// The books as they stand.
    pub fn books(&self) -> &Books {
        &self.books
    }

    /// Messages handled so far.
    pub fn messages(&self) -> u64 {
        self.messages
    }

    /// Messages skipped for an unknown type.
    pub fn unknown_types(&self) -> u64 {
        self.unknown_types
    }

    /// Counts by type.
    pub fn by_type(&self) -> &TypeCounts {
        &self.by_type
    }

    /// The top-of-book sink, if there is a stream: for a caller that hands the rows on
    /// in batches of its own (`replay --threads N`).
    pub fn sink_mut(&mut self) -> Option<&mut S> {
        self.bbo.as_mut().map(|b| &mut b.sink)
    }

    /// Top-of-book rows written so far.
    pub fn bbo_rows(&self) -> u64 {
        self.bbo.as_ref().map_or(0, |b| b.rows)
    }

    /// The books and the top-of-book sink, not finished: for a caller whose sink needs
    /// more than [`BboSink::finish`] takes (a Parquet footer written after the summary).
    pub fn into_parts(self) -> (Books, Option<S>) {
        (self.books, self.bbo.map(|b| b.sink))
    }

    /// Flushes the top-of-book stream, if any, and gives back the books.
    ///
    /// # Errors
    ///
    /// Whatever the stream's sink returns.
    pub fn finish(self) -> io::Result<Books> {
        if let Some(bbo) = self.bbo {
            bbo.sink.finish()?;
        }
        Ok(self.books)
    }
}
