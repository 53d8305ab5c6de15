//! A book thread of `replay --threads N`: the one-thread apply step over the messages of
//! its own stocks, batch by batch, answering each batch with what every message did and
//! the outputs' rows and records it made, for the merge thread (`merge_thread`) to place
//! in input order.
//!
//! The outputs are made here by the one-thread code, so they are the same bytes: the
//! top-of-book rows by the tracker in [`Applier`] (formatted as `--bbo-out` lines, kept
//! typed for Parquet), DBN records by the schema writers ([`DbnOut`]) into a
//! [`RecordBatch`], and MBP-10 records for Parquet by a second schema writer into a typed
//! batch, as one thread feeds its Parquet writer. `--symbols`/`--between` are applied here
//! with the one-thread code. A capture's declared loss reaches this thread as the index of
//! the first message after it ([`InBatch::lost_from`]): the DBN writers mark their records
//! `F_MAYBE_BAD_BOOK` from that message on, as one thread's do. With `--sample`, the reader
//! runs the boundary clock and sends every book thread the sample points of the epoch
//! ([`SamplePoint`]: before which message, which boundaries); a book thread captures its
//! stocks' depths just before its first message at or past the point, or at the end of the
//! batch if it has none (its books cannot change in between), and the merge thread writes
//! every thread's stocks in locate order, boundary by boundary.

use std::io;
use std::mem;
use std::sync::mpsc::{Receiver, SyncSender};

use dbn::Mbp10Msg;
use ticklane_feed::capture::MappedInput;
use ticklane_feed::itch::Nanos;

use super::run::ReplayError;
use super::threaded::EPOCH;
use crate::book::{
    Applier, ApplyError, BboRow, BboSink, BookConfig, Books, Touches, TouchesAhead, TypeCounts,
    PREFETCH_FAR, PREFETCH_MID, PREFETCH_NEAR,
};
use crate::csv::BboRowBytes;
use crate::dbn_out::{DbnOut, DbnOutOptions, FeedStamp, RecordBatch};
use crate::output_filter::OutputFilter;
use crate::sample::{Boundaries, CapturedDepths};

/// Where the sampled depth is taken: just before message `before`, for `boundaries`.
#[derive(Clone, Copy, Debug)]
pub(super) struct SamplePoint {
    pub before: u64,
    pub boundaries: Boundaries,
}

/// One message in a batch: its index and where its bytes lie, in the mapped input or in
/// the batch's own buffer.
#[derive(Clone, Copy, Debug)]
pub(super) struct Frame {
    pub index: u64,
    /// The first byte's position in the mapped input, or in [`InBatch::bytes`].
    pub at: u64,
    pub len: u16,
    pub in_batch: bool,
    /// The capture's sequence number and time, for the DBN records' `sequence` and
    /// `ts_recv`.
    pub feed: FeedStamp,
}

/// The messages of one epoch for one book thread: where they lie, and the bytes of those
/// not in the mapped input.
#[derive(Debug)]
pub(super) struct InBatch {
    pub bytes: Vec<u8>,
    pub frames: Vec<Frame>,
    /// The first message the capture's sequencer declared a loss before ([`NO_LOSS`] if
    /// none yet): DBN records from it on are marked `F_MAYBE_BAD_BOOK`.
    pub lost_from: u64,
    /// The epoch's sample points, in order (every book thread gets them all).
    pub samples: Vec<SamplePoint>,
}

/// [`InBatch::lost_from`] when no loss was declared.
pub(super) const NO_LOSS: u64 = u64::MAX;

impl InBatch {
    /// An empty batch with room for a share of an epoch among `threads` (a quarter over the
    /// even share, as the partition balances activity, not counts), so a new batch is not
    /// grown message by message while the first ones are still on their way back.
    pub fn for_share(threads: usize) -> Self {
        InBatch {
            bytes: Vec::new(),
            frames: Vec::with_capacity(EPOCH / threads.max(1) * 5 / 4),
            lost_from: NO_LOSS,
            samples: Vec::new(),
        }
    }

    /// Frame `f`'s bytes: in `mapped` (the shared input; empty when there is none) or in
    /// this batch.
    #[inline(always)]
    fn message<'a>(&'a self, mapped: &'a [u8], f: Frame) -> &'a [u8] {
        let source = if f.in_batch { &self.bytes[..] } else { mapped };
        &source[f.at as usize..][..usize::from(f.len)]
    }
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

/// One book thread's answer to one [`InBatch`].
#[derive(Debug, Default)]
pub(super) struct OutBatch {
    /// One per message of the batch, in batch order.
    pub effects: Vec<Effect>,
    /// The rows kept, in batch order, as `--bbo-out` lines (if a CSV is written).
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

/// The reader checked type and length, and rows go to memory: an apply error is
/// unreachable unless those checks and `itch::decode` part ways.
fn unreachable(index: u64, e: ApplyError) -> ReplayError {
    ReplayError::Output {
        path: "(book thread)".into(),
        source: io::Error::other(format!("message {index}: {e:?}")),
    }
}

/// The book thread: the one-thread apply step over each batch, answering with effects,
/// rows and records. Ends when the reader hangs up, or early if the merge thread has gone.
pub(super) fn book_thread(
    config: BookConfig,
    outputs: BookOutputs,
    mapped: Option<MappedInput>,
    input: Receiver<InBatch>,
    recycle_in: SyncSender<InBatch>,
    output: SyncSender<OutBatch>,
    recycled_out: Receiver<OutBatch>,
) -> Result<BookPart, ReplayError> {
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
    let mut marked = false;
    let mapped = mapped.as_ref().map_or(&[][..], MappedInput::bytes);
    for batch in input {
        let mut out = recycled_out.try_recv().unwrap_or_default();
        out.effects.clear();
        out.rows.clear();
        out.typed_rows.clear();
        out.records.clear();
        out.mbp10.clear();
        out.depths.clear();
        out.points.clone_from(&batch.samples);
        swap_outputs(&mut applier, &mut dbn, &mut mbp10, &mut out);
        // The next sample point to capture.
        let mut point = 0;
        // This thread's books decide, batch by batch, whether looking ahead pays.
        let look_ahead = applier.books().worth_prefetching();
        for (k, &frame) in batch.frames.iter().enumerate() {
            if look_ahead {
                let ahead = |d: usize| match batch.frames.get(k + d) {
                    Some(&f) => Touches::of_itch(batch.message(mapped, f)),
                    None => Touches::Nothing,
                };
                applier.prefetch(TouchesAhead {
                    far: ahead(PREFETCH_FAR),
                    mid: ahead(PREFETCH_MID),
                    near: ahead(PREFETCH_NEAR),
                });
            }
            if let Some(depth) = outputs.sample_depth {
                while point < batch.samples.len() && batch.samples[point].before <= frame.index {
                    out.depths
                        .capture(point as u32, applier.books(), depth, &filter);
                    point += 1;
                }
            }
            let bytes = batch.message(mapped, frame);
            let live = applier.books().live_orders();
            let kept = applier.sink_mut().map_or(0, |s| s.kept);
            if !records {
                applier
                    .step(frame.index, bytes)
                    .map_err(|e| unreachable(frame.index, e))?;
            } else {
                if !marked && frame.index >= batch.lost_from {
                    marked = true;
                    if let Some(out) = &mut dbn {
                        out.mark_maybe_bad_book();
                    }
                    if let Some(out) = &mut mbp10 {
                        out.mark_maybe_bad_book();
                    }
                }
                let applied = applier
                    .step_with(frame.index, bytes, |books, m| {
                        if let Some(out) = &mut dbn {
                            out.before(books, m);
                        }
                        if let Some(out) = &mut mbp10 {
                            out.before(books, m);
                        }
                    })
                    .map_err(|e| unreachable(frame.index, e))?;
                if let Some(message) = &applied.message {
                    let (index, changed, books) = (frame.index, applied.changed, applier.books());
                    if let Some(out) = &mut dbn {
                        out.after(index, message, changed, books, frame.feed)?;
                    }
                    if let Some(out) = &mut mbp10 {
                        out.after(index, message, changed, books, frame.feed)?;
                    }
                }
                // Every message closes its part, so the merge thread finds message `k`'s.
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
        }
        // The points after this thread's last message of the batch: its books are as they
        // will be at those points (its next messages come in later epochs).
        if let Some(depth) = outputs.sample_depth {
            for p in point..batch.samples.len() {
                out.depths
                    .capture(p as u32, applier.books(), depth, &filter);
            }
        }
        swap_outputs(&mut applier, &mut dbn, &mut mbp10, &mut out);
        // A full recycling queue means the reader holds spares already: drop this one.
        let _ = recycle_in.try_send(batch);
        if output.send(out).is_err() {
            break;
        }
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
}
