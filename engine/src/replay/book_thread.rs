//! A book thread of `replay --threads N`: reads the whole input with a reader of its own,
//! checks and frames every message (so every thread stops at the same message with the same
//! error), applies with the one-thread apply step only the messages of its own stocks, and
//! answers each epoch with what each of them did and the outputs' rows and records it made,
//! for the merge (`merge`, on the calling thread) to place in input order. The first thread also
//! sends the epoch's route (which thread owns each message, in input order), counts the
//! messages of undefined types and keeps the reader's report.
//!
//! The outputs are made here by the one-thread code, so they are the same bytes: the
//! top-of-book rows by the tracker in [`Applier`] (formatted as `--bbo-out` lines, kept
//! typed for Parquet), DBN records by the schema writers ([`DbnOut`]) into a
//! [`RecordBatch`], and MBP-10 records for Parquet by a second schema writer into a typed
//! batch, as one thread feeds its Parquet writer. `--symbols`/`--between` are applied here
//! with the one-thread code. A capture's declared loss is seen by every thread's reader at
//! the same message: the DBN writers mark their records `F_MAYBE_BAD_BOOK` from the first
//! message after it on, as one thread's do. With `--sample`, every thread runs the boundary
//! clock over every message's timestamp, so all find the same sample points ([`SamplePoint`]:
//! before which message, which boundaries); each captures its own stocks' depths at each
//! point, and the merge writes every thread's stocks in locate order, boundary by
//! boundary.

use std::cell::Cell;
use std::io;
use std::mem;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, SyncSender};
use std::time::Instant;

use dbn::Mbp10Msg;
use ticklane_feed::capture::{CaptureReader, RawMessage};
use ticklane_feed::itch::{self, DecodeError, Nanos};

use super::each_message::{each_message, Next};
use super::fault::ReplayFault;
use super::partition::locate_of;
use super::partition::LocatePartition;
use super::run::{progress_line, ReplayError, PROGRESS_EVERY};
use super::threaded::EPOCH;
use crate::book::{
    Applier, ApplyError, BboRow, BboSink, BookConfig, Books, TouchesAhead, TypeCounts,
};
use crate::csv::BboRowBytes;
use crate::dbn_out::{DbnOut, DbnOutOptions, FeedStamp, RecordBatch};
use crate::output_filter::OutputFilter;
use crate::sample::{Boundaries, BoundaryClock, CapturedDepths};

/// Where the sampled depth is taken: just before message `before`, for `boundaries`.
#[derive(Clone, Copy, Debug)]
pub(super) struct SamplePoint {
    pub before: u64,
    pub boundaries: Boundaries,
}

/// The timestamp of a message `check` passed: bytes 5..11 of every ITCH 5.0 message, ns
/// since midnight.
#[inline(always)]
fn timestamp_of(bytes: &[u8]) -> u64 {
    bytes[5..11]
        .iter()
        .fold(0, |ns, &b| (ns << 8) | u64::from(b))
}

/// The checks `itch::decode` makes before it reads a field, giving the same error; the
/// message's locate when they pass. Every book thread makes them on every message.
#[inline(always)]
fn check(bytes: &[u8]) -> Result<u16, DecodeError> {
    let Some(&tag) = bytes.first() else {
        return Err(DecodeError::Empty);
    };
    match usize::from(itch::MESSAGE_LENS[usize::from(tag)]) {
        0 => Err(DecodeError::UnknownType { tag }),
        len if len == bytes.len() => {
            Ok(locate_of(bytes).expect("invariant: every ITCH 5.0 type is at least 12 bytes"))
        }
        expected => Err(DecodeError::WrongLength {
            tag,
            expected,
            actual: bytes.len(),
        }),
    }
}

/// The first message after a declared loss, while none was declared.
const NO_LOSS: u64 = u64::MAX;

/// What one book thread reads, and which of it is its own.
pub(super) struct BookInput {
    /// A reader of the whole input, from its start.
    pub reader: CaptureReader,
    /// The input's path, for a decode error.
    pub path: PathBuf,
    /// Which thread owns each locate, and this thread's number in it.
    pub partition: LocatePartition,
    pub thread: usize,
    /// Whether the capture can declare losses the DBN records must be marked with.
    pub can_lose: bool,
    /// `--sample`'s clock: every thread runs one over every message.
    pub clock: Option<BoundaryClock>,
    /// Progress lines on stderr (the first thread only, on a terminal).
    pub progress: Option<Instant>,
}

/// What one message did, in one byte: bit 0, a top-of-book row was kept (made, and kept by
/// the filter); bits 1..3, the change in live orders plus one (a message moves it by -1, 0
/// or +1). What it asked of the DBN outputs is in their [`RecordBatch`]es.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Effect(u8);

impl Effect {
    #[inline(always)]
    fn new(row: bool, live_change: i64) -> Self {
        debug_assert!((-1..=1).contains(&live_change), "{live_change}");
        Effect(u8::from(row) | (((live_change + 1) as u8) << 1))
    }

    #[inline(always)]
    pub fn row(self) -> bool {
        self.0 & 1 != 0
    }

    #[inline(always)]
    pub fn live_change(self) -> i64 {
        i64::from(self.0 >> 1) - 1
    }
}

/// One book thread's answer to one epoch of the input.
#[derive(Debug, Default)]
pub(super) struct OutBatch {
    /// The first thread's only: the owner of each of the epoch's messages, in input order.
    pub route: Vec<u8>,
    /// One per message of this thread's, in input order.
    pub effects: Vec<Effect>,
    /// The rows kept, in input order, as `--bbo-out` lines (if a CSV is written).
    pub rows: BboRowBytes,
    /// The same rows, typed (if a Parquet top-of-book view is written).
    pub typed_rows: Vec<BboRow>,
    /// `--dbn-out`'s records, tickers and metadata requests, message by message.
    pub records: RecordBatch,
    /// Parquet MBP-10's records and tickers, message by message.
    pub mbp10: RecordBatch<Mbp10Msg>,
    /// The batch's sample points, and this thread's stocks' depths at each.
    pub points: Vec<SamplePoint>,
    pub depths: CapturedDepths,
}

/// The outputs a book thread makes, each kept by `filter`.
#[derive(Clone)]
pub(super) struct BookOutputs {
    /// Top-of-book rows as `--bbo-out` lines.
    pub csv: bool,
    /// Top-of-book rows typed (`--parquet-out`, view `bbo`).
    pub parquet_bbo: bool,
    /// `--dbn-out`.
    pub dbn: Option<DbnOutOptions>,
    /// MBP-10 records for `--parquet-out`, view `mbp-10`.
    pub mbp10: Option<DbnOutOptions>,
    /// `--sample`'s depth (levels a side), if sampled.
    pub sample_depth: Option<usize>,
    pub filter: OutputFilter,
}

/// What a book thread hands back at the end.
pub(super) struct BookPart {
    pub books: Books,
    pub messages: u64,
    pub by_type: TypeCounts,
    /// Top-of-book rows made (before the filter, as the summary counts them).
    pub bbo_rows: u64,
    /// The last message the DBN schema writers saw: index and `ts_event`.
    pub dbn_last: (u64, u64),
    /// The reader at the end, with its counts; what stopped the replay, if anything; and
    /// the messages of undefined types (the same for every thread: the first one's count).
    pub reader: CaptureReader,
    pub error: Option<ReplayFault>,
    pub unknown_types: u64,
}

/// A book thread's top-of-book rows: those `filter` keeps, formatted and typed as asked.
struct KeptRows {
    rows: BboRowBytes,
    typed: Vec<BboRow>,
    csv: bool,
    parquet: bool,
    filter: OutputFilter,
    /// Rows kept so far.
    kept: u64,
}

impl BboSink for KeptRows {
    #[inline]
    fn write_row(&mut self, row: &BboRow) -> io::Result<()> {
        if !self.filter.keeps_all()
            && !self
                .filter
                .keeps(row.symbol_trimmed(), Nanos(row.timestamp_ns))
        {
            return Ok(());
        }
        self.kept += 1;
        if self.parquet {
            self.typed.push(*row);
        }
        if self.csv {
            self.rows.write_row(row)?;
        }
        Ok(())
    }

    fn finish(self) -> io::Result<()> {
        Ok(())
    }
}

/// Type and length were checked before the apply step, and rows go to memory: an apply
/// error is unreachable unless those checks and `itch::decode` part ways.
fn unreachable(index: u64, e: ApplyError) -> ReplayError {
    ReplayError::Output {
        path: "(book thread)".into(),
        source: io::Error::other(format!("message {index}: {e:?}")),
    }
}

/// Empties `out` for the next epoch, keeping its buffers.
fn clear(out: &mut OutBatch) {
    out.route.clear();
    out.effects.clear();
    out.rows.clear();
    out.typed_rows.clear();
    out.records.clear();
    out.mbp10.clear();
    out.points.clear();
    out.depths.clear();
}

/// The book thread: reads every message, applies its own, answers epoch by epoch with
/// effects, rows and records. Ends at the input's end or its first fault, or early if the
/// merge has gone.
pub(super) fn book_thread(
    config: BookConfig,
    outputs: BookOutputs,
    input: BookInput,
    output: SyncSender<OutBatch>,
    recycled_out: Receiver<OutBatch>,
) -> Result<BookPart, ReplayError> {
    let BookInput {
        mut reader,
        path,
        partition,
        thread: me,
        can_lose,
        mut clock,
        progress,
    } = input;
    let first = me == 0;
    let rows = (outputs.csv || outputs.parquet_bbo).then(|| KeptRows {
        rows: BboRowBytes::default(),
        typed: Vec::new(),
        csv: outputs.csv,
        parquet: outputs.parquet_bbo,
        filter: outputs.filter.clone(),
        kept: 0,
    });
    let mut applier = Applier::new(config, rows).map_err(ReplayError::Books)?;
    let filter = outputs.filter;
    let mut dbn = outputs
        .dbn
        .map(|o| DbnOut::with_sink(o, RecordBatch::default()).with_filter(filter.clone()));
    let mut mbp10 = outputs.mbp10.map(|o| {
        DbnOut::with_sink(o, RecordBatch::<Mbp10Msg>::default()).with_filter(filter.clone())
    });
    let records = dbn.is_some() || mbp10.is_some();
    let sample_depth = outputs.sample_depth;
    let mut marked = false;
    let mut lost_from = NO_LOSS;
    let mut out = OutBatch::default();
    swap_outputs(&mut applier, &mut dbn, &mut mbp10, &mut out);
    let mut in_epoch = 0usize;
    let mut flowing = true;
    let mut unknown_types = 0u64;
    let mut error = None;
    let look_ahead = Cell::new(false);
    // Sends the epoch's answer and starts the next; false if the merge has gone.
    let send = |applier: &mut Applier<KeptRows>,
                dbn: &mut Option<DbnOut<RecordBatch>>,
                mbp10: &mut Option<DbnOut<RecordBatch<Mbp10Msg>>>,
                out: &mut OutBatch|
     -> bool {
        let mut next = recycled_out.try_recv().unwrap_or_default();
        clear(&mut next);
        swap_outputs(applier, dbn, mbp10, out);
        let done = mem::replace(out, next);
        swap_outputs(applier, dbn, mbp10, out);
        output.send(done).is_ok()
    };
    let mut copy = Vec::new();
    let ended = each_message(
        &mut reader,
        can_lose.then_some(&mut copy),
        &look_ahead,
        #[inline(always)]
        |raw: RawMessage<'_>,
         lost: bool,
         ahead: Option<TouchesAhead>|
         -> Result<Next, ReplayError> {
            let (index, bytes) = (raw.index, raw.bytes);
            if lost && lost_from == NO_LOSS {
                lost_from = index;
            }
            let locate = match check(bytes) {
                Ok(locate) => locate,
                Err(DecodeError::UnknownType { .. }) => {
                    unknown_types += 1;
                    return Ok(Next::Continue);
                }
                Err(e) => {
                    error = Some(ReplayFault::Decode {
                        path: path.clone(),
                        offset: raw.offset,
                        index,
                        error: e,
                    });
                    return Ok(Next::Stop);
                }
            };
            if let Some(ahead) = ahead {
                applier.prefetch(ahead);
            }
            if let Some(clock) = &mut clock {
                if let Some(boundaries) = clock.passes(timestamp_of(bytes)) {
                    let point = out.points.len() as u32;
                    out.points.push(SamplePoint {
                        before: index,
                        boundaries,
                    });
                    if let Some(depth) = sample_depth {
                        out.depths.capture(point, applier.books(), depth, &filter);
                    }
                }
            }
            let owner = partition.owner(locate);
            if first {
                out.route.push(owner as u8);
            }
            if owner == me {
                let live = applier.books().live_orders();
                let kept = applier.sink_mut().map_or(0, |s| s.kept);
                if !records {
                    applier
                        .apply(index, bytes)
                        .map_err(|e| unreachable(index, e))?;
                } else {
                    let feed = FeedStamp {
                        seq: raw.seq,
                        capture_ns: raw.capture_ns,
                    };
                    if !marked && index >= lost_from {
                        marked = true;
                        if let Some(out) = &mut dbn {
                            out.mark_maybe_bad_book();
                        }
                        if let Some(out) = &mut mbp10 {
                            out.mark_maybe_bad_book();
                        }
                    }
                    let applied = applier
                        .step_with(index, bytes, |books, m| {
                            if let Some(out) = &mut dbn {
                                out.before(books, m);
                            }
                            if let Some(out) = &mut mbp10 {
                                out.before(books, m);
                            }
                        })
                        .map_err(|e| unreachable(index, e))?;
                    if let Some(message) = &applied.message {
                        let (changed, books) = (applied.changed, applier.books());
                        if let Some(out) = &mut dbn {
                            out.after(index, message, changed, books, feed)?;
                        }
                        if let Some(out) = &mut mbp10 {
                            out.after(index, message, changed, books, feed)?;
                        }
                    }
                    // Every message closes its part, so the merge finds message `k`'s.
                    if let Some(out) = &mut dbn {
                        out.sink_mut().end_message();
                    }
                    if let Some(out) = &mut mbp10 {
                        out.sink_mut().end_message();
                    }
                }
                let live_change = applier.books().live_orders() as i64 - live as i64;
                let row = applier.sink_mut().map_or(0, |s| s.kept) != kept;
                out.effects.push(Effect::new(row, live_change));
                look_ahead.set(applier.books().worth_prefetching());
            }
            in_epoch += 1;
            if in_epoch == EPOCH {
                in_epoch = 0;
                if !send(&mut applier, &mut dbn, &mut mbp10, &mut out) {
                    flowing = false;
                    return Ok(Next::Stop);
                }
            }
            Ok(Next::Continue)
        },
        |reader, index| {
            if let Some(started) = progress {
                if index & (PROGRESS_EVERY - 1) == 0 {
                    progress_line(reader, index, started);
                }
            }
        },
    );
    match ended {
        Ok(None) => {}
        Ok(Some(e)) => error = Some(ReplayFault::Input(e)),
        Err(e) => return Err(e),
    }
    if progress.is_some() {
        eprint!("\r{:60}\r", "");
    }
    if flowing && in_epoch > 0 {
        send(&mut applier, &mut dbn, &mut mbp10, &mut out);
    }
    let (messages, by_type, bbo_rows) =
        (applier.messages(), *applier.by_type(), applier.bbo_rows());
    let dbn_last = dbn.as_ref().map_or((0, 0), DbnOut::last_event);
    let books = applier.finish().map_err(|source| ReplayError::Output {
        path: "(book thread)".into(),
        source,
    })?;
    Ok(BookPart {
        books,
        messages,
        by_type,
        bbo_rows,
        dbn_last,
        reader,
        error,
        unknown_types,
    })
}

/// Swaps the outputs' buffers being filled with `out`'s: empty ones in before a batch, the
/// filled ones out after it.
fn swap_outputs(
    applier: &mut Applier<KeptRows>,
    dbn: &mut Option<DbnOut<RecordBatch>>,
    mbp10: &mut Option<DbnOut<RecordBatch<Mbp10Msg>>>,
    out: &mut OutBatch,
) {
    if let Some(sink) = applier.sink_mut() {
        mem::swap(&mut sink.rows, &mut out.rows);
        mem::swap(&mut sink.typed, &mut out.typed_rows);
    }
    if let Some(dbn) = dbn {
        mem::swap(dbn.sink_mut(), &mut out.records);
    }
    if let Some(mbp10) = mbp10 {
        mem::swap(mbp10.sink_mut(), &mut out.mbp10);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_effect_keeps_its_row_flag_and_live_change() {
        for row in [false, true] {
            for change in -1..=1 {
                let e = Effect::new(row, change);
                assert_eq!((e.row(), e.live_change()), (row, change));
            }
        }
    }

    #[test]
    fn the_book_threads_checks_give_decode_s_errors() {
        // Hand-laid: a 19-byte D with locate 0x0102, then the same cut short, then empty,
        // then an undefined type.
        let mut delete = [0u8; 19];
        delete[0] = b'D';
        delete[1..3].copy_from_slice(&[1, 2]);
        assert_eq!(check(&delete), Ok(0x0102));
        assert!(itch::decode(&delete).is_ok());
        for bytes in [&delete[..18], &[][..], &b"z\x00\x01"[..]] {
            let expected = itch::decode(bytes).map(|_| ()).expect_err("invalid");
            assert_eq!(check(bytes).map(|_| ()), Err(expected));
        }
    }
}
