//! `ticklane replay FILE --threads N`: the stocks spread over N book threads, with the
//! outputs of one thread.
//!
//! The shape: the calling thread reads the input once, frames each message, checks its
//! type and length (the checks `itch::decode` makes, so a corrupt input stops at the same
//! message with the same error as on one thread) and routes it, with its message index, to
//! the batch of the book thread that owns its locate ([`LocatePartition`]). An uncompressed
//! input is mapped by the reader and shared with the book threads, so a message is routed
//! as its position in the input (no copy of its bytes); a gzip input, or a message a capture
//! split, is copied into the batch. Every
//! [`EPOCH`] messages it sends each book thread its batch (empty ones too) and the merge
//! thread the epoch's route: which thread got each message, in input order. Each book thread
//! runs the one-thread apply step ([`Applier`]) on its own books and sends back, per
//! message, its [`Effect`] (did it write a top-of-book row, how did the live-order count
//! move, what did it ask of the DBN output) and its rows, already formatted as `--bbo-out`
//! lines ([`BboRowBytes`]: the same formatting code as one thread's writer, into a buffer
//! reused epoch after epoch), and with `--dbn-out` its DBN records ([`RecordBatch`]: the
//! one-thread schema writers over its own stocks). `--symbols`/`--between` are applied
//! there too, by the same code as on one thread. The merge thread walks the route and so
//! visits every message in input order: it copies each row's line and each message's
//! records into the outputs where the single thread would have written them (a copy each:
//! formatting and the MBP levels, most of the outputs' cost, are spread over the book
//! threads), and it keeps the live-order count of all books together, whose maximum is the
//! summary's `live_orders_peak` (a per-thread peak would not add up to it).
//!
//! A capture's declared losses mark every later DBN record `F_MAYBE_BAD_BOOK`, as on one
//! thread: the reader notes the first message after a loss and each batch carries it.
//!
//! Buffers travel in a loop and come back for reuse: after the first few epochs nothing is
//! allocated per message or per batch. The channels are bounded ([`IN_FLIGHT`] epochs), so
//! a slow stage holds the reader back instead of letting memory grow; every stage takes
//! epochs in the same order, so no stage can wait on one that waits on it.
//!
//! Where the outputs can differ from one thread: only on input that breaks ITCH's own
//! rules. A modification whose locate is not its order's, or an add reusing a reference
//! live under a locate of another thread, is applied by the owner of the message's locate
//! alone; and the capacities (`--max-orders`, `--max-books`) hold per book thread.

use std::convert::Infallible;
use std::fs::File;
use std::io::{self, BufWriter};
use std::mem;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::{self, JoinHandle};
use std::time::Instant;

use ticklane_feed::capture::InputFormat;
use ticklane_feed::capture::{CaptureReader, MappedInput, RawMessage, ReadOptions};
use ticklane_feed::itch::{self, DecodeError, Nanos};

use super::each_message::{each_message, Next};
use super::fault::ReplayFault;
use super::partition::{locate_of, LocatePartition};
use super::run::{
    end_of_input, output, progress_line, with_failure_summary, write_output_file,
    write_summary_json, ReplayError, ReplayOptions, PROGRESS_EVERY,
};
use super::summary::{PacketCounts, ReplaySummary};
use crate::book::{Applier, BboRow, BboSink, BookConfig, BookCounters, Books, TypeCounts};
use crate::csv::{write_partitioned_book_csv, BboRowBytes, CsvBuffer, BBO_HEADER};
use crate::dbn_out::{DbnOut, DbnOutOptions, MergedDbnOut, RecordBatch, RecordSink};
use crate::output_filter::OutputFilter;

/// Messages per epoch: the unit in which batches are sent and merged.
pub const EPOCH: usize = 16 * 1024;
/// Epochs a stage may run ahead of the next one.
pub const IN_FLIGHT: usize = 4;

/// A finished multi-threaded replay: its report and each book thread's books (every
/// locate's book is in exactly one of them).
pub struct PartitionedOutcome {
    /// Counts, timings and the error that stopped the replay, if any: the same as one
    /// thread's but for `elapsed_s` and `msgs_per_s`.
    pub summary: ReplaySummary,
    /// The final books, one table per book thread.
    pub books: Vec<Books>,
}

/// Replays `opts.input` on `threads` book threads (1 is [`super::replay_file`] itself,
/// unchanged). The outputs (`--bbo-out`, `--book-out`, `--dbn-out` in every schema, the
/// summary, each filtered by `opts.filter`) are those of one thread; see the module
/// documentation for the one exception. A DBN input replays on one thread whatever
/// `threads` says (its records are not routed by locate yet), and so does a replay with
/// `opts.sample` or `opts.parquet_out` (their writers follow one set of books).
///
/// # Errors
///
/// As [`super::replay_file`]; also [`ReplayError::Output`] if a thread cannot be started.
pub fn replay_file_threaded(
    opts: &ReplayOptions,
    threads: usize,
) -> Result<PartitionedOutcome, ReplayError> {
    if threads <= 1
        || opts.sample.is_some()
        || opts.parquet_out.is_some()
        || super::dbn_input::dbn_format(&opts.input).is_some()
    {
        let done = super::replay_file(opts)?;
        return Ok(PartitionedOutcome {
            summary: done.summary,
            books: vec![done.books],
        });
    }
    with_failure_summary(opts, |opts| replay_partitioned(opts, threads))
}

/// One message in a batch: its index and where its bytes lie, in the mapped input or in
/// the batch's own buffer.
#[derive(Clone, Copy, Debug)]
struct Frame {
    index: u64,
    /// The first byte's position in the mapped input, or in [`InBatch::bytes`].
    at: u64,
    len: u16,
    in_batch: bool,
}

/// The messages of one epoch for one book thread: where they lie, and the bytes of those
/// not in the mapped input.
#[derive(Debug)]
struct InBatch {
    bytes: Vec<u8>,
    frames: Vec<Frame>,
    /// The first message the capture's sequencer declared a loss before ([`NO_LOSS`] if
    /// none yet): DBN records from it on are marked `F_MAYBE_BAD_BOOK`.
    lost_from: u64,
}

/// [`InBatch::lost_from`] when no loss was declared.
const NO_LOSS: u64 = u64::MAX;

impl InBatch {
    /// An empty batch with room for a share of an epoch among `threads` (a quarter over the
    /// even share, as the partition balances activity, not counts), so a new batch is not
    /// grown message by message while the first ones are still on their way back.
    fn for_share(threads: usize) -> Self {
        InBatch {
            bytes: Vec::new(),
            frames: Vec::with_capacity(EPOCH / threads.max(1) * 5 / 4),
            lost_from: NO_LOSS,
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

/// What one message did, in two bytes: bit 0, a top-of-book row was written (and kept by
/// the filter); bits 1..3, the change in live orders plus one (a message moves it by -1, 0
/// or +1); bit 3, the stock directory named a ticker for the DBN metadata; bit 4, the DBN
/// output asked for the metadata's room; bits 8..16, the DBN records it wrote (at most 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Effect(u16);

impl Effect {
    const ROW: u16 = 1;
    const SYMBOL: u16 = 1 << 3;
    const RESERVE: u16 = 1 << 4;
    const DBN: u16 = Self::SYMBOL | Self::RESERVE | 0xff00;

    #[inline(always)]
    fn new(row: bool, live_change: i64) -> Self {
        debug_assert!((-1..=1).contains(&live_change), "{live_change}");
        Effect(u16::from(row) | (((live_change + 1) as u16) << 1))
    }

    /// With what the message asked of the DBN output: `records` records (fewer than 256),
    /// a ticker named, the metadata's room asked for.
    #[inline(always)]
    fn with_dbn(self, records: u64, symbol: bool, reserve: bool) -> Self {
        debug_assert!(records < 256, "{records}");
        let flags = if symbol { Self::SYMBOL } else { 0 } | if reserve { Self::RESERVE } else { 0 };
        Effect(self.0 | flags | ((records as u16) << 8))
    }

    #[inline(always)]
    fn row(self) -> bool {
        self.0 & Self::ROW != 0
    }

    #[inline(always)]
    fn live_change(self) -> i64 {
        i64::from((self.0 >> 1) & 3) - 1
    }

    /// Whether the message asked anything of the DBN output.
    #[inline(always)]
    fn dbn(self) -> bool {
        self.0 & Self::DBN != 0
    }

    fn symbol(self) -> bool {
        self.0 & Self::SYMBOL != 0
    }

    fn reserve(self) -> bool {
        self.0 & Self::RESERVE != 0
    }

    fn records(self) -> usize {
        usize::from(self.0 >> 8)
    }
}

/// One book thread's answer to one [`InBatch`].
#[derive(Debug, Default)]
struct OutBatch {
    /// One per message of the batch, in batch order.
    effects: Vec<Effect>,
    /// The rows those messages wrote, in batch order, as `--bbo-out` lines.
    rows: BboRowBytes,
    /// The DBN records they wrote, the tickers and the metadata's room they asked for.
    records: RecordBatch,
}

/// What a book thread hands back at the end.
struct BookPart {
    books: Books,
    messages: u64,
    by_type: TypeCounts,
    /// Top-of-book rows made (before the filter, as the summary counts them).
    bbo_rows: u64,
    /// The last message the DBN schema writers saw: index and `ts_event`.
    dbn_last: (u64, u64),
}

/// What the merge thread hands back at the end: the DBN output waits for the metadata's end
/// time, which the book threads hold.
struct Merged {
    live_orders_peak: u64,
    dbn: Option<MergedDbnOut>,
}

/// The outputs a book thread makes: the top-of-book rows (`--bbo-out`), DBN records
/// (`--dbn-out`), each kept by `filter`.
#[derive(Clone)]
struct BookOutputs {
    bbo: bool,
    dbn: Option<DbnOutOptions>,
    filter: OutputFilter,
}

/// A book thread's top-of-book rows: formatted if `filter` keeps them.
struct KeptRows {
    rows: BboRowBytes,
    filter: OutputFilter,
}

impl BboSink for KeptRows {
    #[inline]
    fn write_row(&mut self, row: &BboRow) -> io::Result<()> {
        if self.filter.keeps_all()
            || self
                .filter
                .keeps(row.symbol_trimmed(), Nanos(row.timestamp_ns))
        {
            self.rows.write_row(row)
        } else {
            Ok(())
        }
    }

    fn finish(self) -> io::Result<()> {
        Ok(())
    }
}

/// A book thread's ends of its channels, as the reader and the merge thread see them.
struct BookLane {
    input: SyncSender<InBatch>,
    recycled: Receiver<InBatch>,
    thread: JoinHandle<Result<BookPart, ReplayError>>,
}

/// A thread that panicked (a bug), as the replay's error.
fn panicked(what: &str) -> ReplayError {
    ReplayError::Output {
        path: "(thread)".into(),
        source: io::Error::other(format!("{what} panicked")),
    }
}

fn spawn<T: Send + 'static>(
    name: String,
    body: impl FnOnce() -> T + Send + 'static,
) -> Result<JoinHandle<T>, ReplayError> {
    thread::Builder::new()
        .name(name)
        .spawn(body)
        .map_err(|source| ReplayError::Output {
            path: "(thread)".into(),
            source,
        })
}

/// The book thread: the one-thread apply step over each batch, answering with effects,
/// rows and records. Ends when the reader hangs up, or early if the merge thread has gone.
fn book_thread(
    config: BookConfig,
    outputs: BookOutputs,
    mapped: Option<MappedInput>,
    input: Receiver<InBatch>,
    recycle_in: SyncSender<InBatch>,
    output: SyncSender<OutBatch>,
    recycled_out: Receiver<OutBatch>,
) -> Result<BookPart, ReplayError> {
    let rows = outputs.bbo.then(|| KeptRows {
        rows: BboRowBytes::default(),
        filter: outputs.filter.clone(),
    });
    let mut applier = Applier::new(config, rows).map_err(ReplayError::Books)?;
    let mut dbn = outputs
        .dbn
        .map(|o| DbnOut::with_sink(o, RecordBatch::default()).with_filter(outputs.filter));
    let mut marked = false;
    let mapped = mapped.as_ref().map_or(&[][..], MappedInput::bytes);
    let unreachable = |index: u64, e: crate::book::ApplyError| {
        // The reader checked type and length, and rows go to memory: unreachable unless
        // those checks and `itch::decode` part ways.
        ReplayError::Output {
            path: "(book thread)".into(),
            source: io::Error::other(format!("message {index}: {e:?}")),
        }
    };
    for batch in input {
        let mut out = recycled_out.try_recv().unwrap_or_default();
        out.effects.clear();
        out.rows.clear();
        out.records.clear();
        if let Some(sink) = applier.sink_mut() {
            mem::swap(&mut sink.rows, &mut out.rows);
        }
        if let Some(dbn) = &mut dbn {
            mem::swap(dbn.sink_mut(), &mut out.records);
        }
        for &frame in &batch.frames {
            let bytes = batch.message(mapped, frame);
            let live = applier.books().live_orders();
            let rows = applier.sink_mut().map_or(0, |s| s.rows.rows());
            let dbn_effect = match &mut dbn {
                None => {
                    applier
                        .step(frame.index, bytes)
                        .map_err(|e| unreachable(frame.index, e))?;
                    None
                }
                Some(dbn) => {
                    if !marked && frame.index >= batch.lost_from {
                        dbn.mark_maybe_bad_book();
                        marked = true;
                    }
                    let sink = dbn.sink_mut();
                    let was = (sink.count(), sink.symbols().len(), sink.reserves());
                    let applied = applier
                        .step_with(frame.index, bytes, |books, m| dbn.before(books, m))
                        .map_err(|e| unreachable(frame.index, e))?;
                    if let Some(message) = &applied.message {
                        dbn.after(frame.index, message, applied.changed, applier.books())?;
                    }
                    let sink = dbn.sink_mut();
                    Some((
                        sink.count() - was.0,
                        sink.symbols().len() != was.1,
                        sink.reserves() != was.2,
                    ))
                }
            };
            let live_change = applier.books().live_orders() as i64 - live as i64;
            let row = applier.sink_mut().map_or(0, |s| s.rows.rows()) != rows;
            let mut effect = Effect::new(row, live_change);
            if let Some((records, symbol, reserve)) = dbn_effect {
                effect = effect.with_dbn(records, symbol, reserve);
            }
            out.effects.push(effect);
        }
        if let Some(sink) = applier.sink_mut() {
            mem::swap(&mut sink.rows, &mut out.rows);
        }
        if let Some(dbn) = &mut dbn {
            mem::swap(dbn.sink_mut(), &mut out.records);
        }
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

/// The merge thread: every message in input order, by the reader's route; each row's line
/// copied to the CSV output and each message's records to the DBN output, the live-order
/// count of all books kept to find its peak.
fn merge_thread(
    routes: Receiver<Vec<u8>>,
    recycle_route: SyncSender<Vec<u8>>,
    outputs: Vec<Receiver<OutBatch>>,
    recycle_out: Vec<SyncSender<OutBatch>>,
    mut csv: Option<(CsvBuffer<BufWriter<File>>, PathBuf)>,
    mut dbn: Option<MergedDbnOut>,
) -> Result<Merged, ReplayError> {
    let threads = outputs.len();
    let mut batches: Vec<OutBatch> = (0..threads).map(|_| OutBatch::default()).collect();
    // Per book thread: the next effect, row, ticker and record byte of its batch.
    let mut at = vec![[0usize; 4]; threads];
    let record_len = dbn.as_ref().map_or(0, MergedDbnOut::record_len);
    let (mut live, mut peak) = (0i64, 0i64);
    let csv_failed = |path: &PathBuf| {
        let path = path.clone();
        move |source| ReplayError::Output { path, source }
    };
    for route in routes {
        for (t, output) in outputs.iter().enumerate() {
            batches[t] = output.recv().map_err(|_| ReplayError::Output {
                path: "(merge thread)".into(),
                source: io::Error::other("a book thread stopped early"),
            })?;
        }
        at.fill([0; 4]);
        for &t in &route {
            let t = usize::from(t);
            let [effect_at, row_at, symbol_at, record_at] = &mut at[t];
            let batch = &batches[t];
            let effect = batch.effects[*effect_at];
            *effect_at += 1;
            live += effect.live_change();
            peak = peak.max(live);
            if effect.row() {
                if let Some((csv, path)) = &mut csv {
                    csv.bytes(batch.rows.row(*row_at))
                        .map_err(csv_failed(path))?;
                }
                *row_at += 1;
            }
            if let (true, Some(dbn)) = (effect.dbn(), &mut dbn) {
                if effect.symbol() {
                    let (locate, ticker) = &batch.records.symbols()[*symbol_at];
                    dbn.symbol(*locate, ticker);
                    *symbol_at += 1;
                }
                if effect.reserve() {
                    dbn.reserve_metadata()?;
                }
                let len = effect.records() * record_len;
                if len > 0 {
                    dbn.records(&batch.records.bytes()[*record_at..][..len])?;
                    *record_at += len;
                }
            }
        }
        for (t, batch) in batches.iter_mut().enumerate() {
            let _ = recycle_out[t].try_send(mem::take(batch));
        }
        let _ = recycle_route.try_send(route);
    }
    if let Some((csv, path)) = csv {
        csv.finish().map_err(csv_failed(&path))?;
    }
    Ok(Merged {
        live_orders_peak: peak.max(0) as u64,
        dbn,
    })
}

/// The checks `itch::decode` makes before it reads a field, giving the same error; the
/// message's locate when they pass.
#[inline(always)]
fn check(bytes: &[u8]) -> Result<u16, DecodeError> {
    let Some(&tag) = bytes.first() else {
        return Err(DecodeError::Empty);
    };
    match itch::message_len(tag) {
        None => Err(DecodeError::UnknownType { tag }),
        Some(len) if len == bytes.len() => {
            Ok(locate_of(bytes).expect("invariant: every ITCH 5.0 type is at least 12 bytes"))
        }
        Some(expected) => Err(DecodeError::WrongLength {
            tag,
            expected,
            actual: bytes.len(),
        }),
    }
}

fn sum_counters(parts: &[BookCounters], live_orders_peak: u64) -> BookCounters {
    let mut c = BookCounters {
        live_orders_peak,
        ..BookCounters::default()
    };
    for p in parts {
        c.unknown_refs += p.unknown_refs;
        c.rejected += p.rejected;
        c.rejected_zero_shares += p.rejected_zero_shares;
        c.rejected_live_ref += p.rejected_live_ref;
        c.rejected_bad_side += p.rejected_bad_side;
        c.rejected_order_capacity += p.rejected_order_capacity;
        c.rejected_level_capacity += p.rejected_level_capacity;
        c.rejected_book_capacity += p.rejected_book_capacity;
        c.clamped += p.clamped;
        c.crossed_events += p.crossed_events;
    }
    c
}

fn replay_partitioned(
    opts: &ReplayOptions,
    threads: usize,
) -> Result<PartitionedOutcome, ReplayError> {
    let started = Instant::now();
    let read = ReadOptions {
        recover_lengths: opts.recover_lengths,
    };
    let mut reader = CaptureReader::open(&opts.input, read)?;
    let mapped = reader.mapped_input();
    let partition = LocatePartition::weighed(&opts.input, read, threads);
    let threads = partition.threads();
    let csv = match &opts.bbo_out {
        Some(path) => {
            let mut csv = CsvBuffer::new(output(path)?);
            csv.bytes(BBO_HEADER.as_bytes())
                .map_err(|source| ReplayError::Output {
                    path: path.clone(),
                    source,
                })?;
            Some((csv, path.clone()))
        }
        None => None,
    };
    let dbn = opts.dbn_out.clone().map(MergedDbnOut::create).transpose()?;
    let book_outputs = BookOutputs {
        bbo: opts.bbo_out.is_some(),
        dbn: opts.dbn_out.clone(),
        filter: opts.filter.clone(),
    };

    let mut lanes = Vec::with_capacity(threads);
    let mut outputs = Vec::with_capacity(threads);
    let mut recycle_out = Vec::with_capacity(threads);
    for t in 0..threads {
        let (input_tx, input_rx) = mpsc::sync_channel(IN_FLIGHT);
        let (recycle_in_tx, recycle_in_rx) = mpsc::sync_channel(IN_FLIGHT + 2);
        let (output_tx, output_rx) = mpsc::sync_channel(IN_FLIGHT);
        let (recycle_out_tx, recycle_out_rx) = mpsc::sync_channel(IN_FLIGHT + 2);
        let (config, made, shared) = (opts.books, book_outputs.clone(), mapped.clone());
        let thread = spawn(format!("book-{t}"), move || {
            book_thread(
                config,
                made,
                shared,
                input_rx,
                recycle_in_tx,
                output_tx,
                recycle_out_rx,
            )
        })?;
        lanes.push(BookLane {
            input: input_tx,
            recycled: recycle_in_rx,
            thread,
        });
        outputs.push(output_rx);
        recycle_out.push(recycle_out_tx);
    }
    let (route_tx, route_rx) = mpsc::sync_channel::<Vec<u8>>(IN_FLIGHT);
    let (recycle_route_tx, recycle_route_rx) = mpsc::sync_channel(IN_FLIGHT + 2);
    let merge = spawn("merge".into(), move || {
        merge_thread(route_rx, recycle_route_tx, outputs, recycle_out, csv, dbn)
    })?;

    let show_progress = opts.progress && io::IsTerminal::is_terminal(&io::stderr());
    let mut batches: Vec<InBatch> = (0..threads).map(|_| InBatch::for_share(threads)).collect();
    let mut route: Vec<u8> = Vec::with_capacity(EPOCH);
    let mut unknown_types = 0u64;
    let mut error = None;
    // Whether the capture can declare losses that the DBN records must be marked with.
    let can_lose = opts.dbn_out.is_some()
        && matches!(reader.format(), InputFormat::Pcap | InputFormat::PcapNg);
    let mut lost_from = NO_LOSS;
    // Sends the epoch gathered so far; false if a stage downstream has stopped.
    let send_epoch = |batches: &mut Vec<InBatch>, route: &mut Vec<u8>, lost_from: u64| -> bool {
        let next_route = recycle_route_rx
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(EPOCH));
        if route_tx.send(mem::replace(route, next_route)).is_err() {
            return false;
        }
        route.clear();
        for (lane, batch) in lanes.iter().zip(batches.iter_mut()) {
            let mut next = lane
                .recycled
                .try_recv()
                .unwrap_or_else(|_| InBatch::for_share(threads));
            next.bytes.clear();
            next.frames.clear();
            batch.lost_from = lost_from;
            if lane.input.send(mem::replace(batch, next)).is_err() {
                return false;
            }
        }
        true
    };
    let mut flowing = true;
    // Routes one message; stops the replay at it on a decode error (in `error`) or when a
    // book thread is gone.
    let mut route_one = |raw: RawMessage<'_>, lost: bool| -> Next {
        let (index, offset, bytes) = (raw.index, raw.offset, raw.bytes);
        if lost && lost_from == NO_LOSS {
            lost_from = index;
        }
        match check(bytes) {
            Ok(locate) => {
                let t = partition.owner(locate);
                let batch = &mut batches[t];
                // `check` passed: the length is an ITCH 5.0 type's, at most 50.
                let len = bytes.len() as u16;
                let frame = match mapped.as_ref().and_then(|m| m.position(bytes)) {
                    Some(at) => Frame {
                        index,
                        at: at as u64,
                        len,
                        in_batch: false,
                    },
                    None => {
                        let at = batch.bytes.len() as u64;
                        batch.bytes.extend_from_slice(bytes);
                        Frame {
                            index,
                            at,
                            len,
                            in_batch: true,
                        }
                    }
                };
                batch.frames.push(frame);
                route.push(t as u8);
                if route.len() == EPOCH && !send_epoch(&mut batches, &mut route, lost_from) {
                    flowing = false;
                    return Next::Stop;
                }
                Next::Continue
            }
            Err(DecodeError::UnknownType { .. }) => {
                unknown_types += 1;
                Next::Continue
            }
            Err(e) => {
                error = Some(ReplayFault::Decode {
                    path: opts.input.clone(),
                    offset,
                    index,
                    error: e,
                });
                Next::Stop
            }
        }
    };
    let progress = |reader: &CaptureReader, index: u64| {
        if show_progress && index & (PROGRESS_EVERY - 1) == 0 {
            progress_line(reader, index, started);
        }
    };
    let mut copy = Vec::new();
    let ended = each_message(
        &mut reader,
        can_lose.then_some(&mut copy),
        |raw, lost| Ok::<_, Infallible>(route_one(raw, lost)),
        progress,
    );
    if let Ok(Some(e)) = ended {
        error = Some(ReplayFault::Input(e));
    }
    if show_progress {
        eprint!("\r{:60}\r", "");
    }
    if flowing && !route.is_empty() {
        send_epoch(&mut batches, &mut route, lost_from);
    }
    let _ = send_epoch;
    drop(route_tx);
    let mut parts = Vec::with_capacity(threads);
    let mut failure = None;
    for lane in lanes {
        drop(lane.input);
        match lane.thread.join() {
            Ok(Ok(part)) => parts.push(part),
            Ok(Err(why)) => failure = failure.or(Some(why)),
            Err(_) => failure = failure.or(Some(panicked("a book thread"))),
        }
    }
    // A book thread's failure first: the merge thread's is then only that it stopped.
    let merged = match (failure, merge.join()) {
        (Some(why), _) => return Err(why),
        (None, Ok(merged)) => merged?,
        (None, Err(_)) => return Err(panicked("the merge thread")),
    };

    let format = reader.format();
    let packets = PacketCounts::of_capture(format, &reader.stats());
    let (error, no_messages) = end_of_input(opts, error, &reader);
    let mut by_type = TypeCounts::default();
    for part in &parts {
        for (sum, n) in by_type.0.iter_mut().zip(part.by_type.0) {
            *sum += n;
        }
    }
    let counters: Vec<BookCounters> = parts.iter().map(|p| p.books.counters()).collect();
    let messages = parts.iter().map(|p| p.messages).sum::<u64>() + unknown_types;
    let bbo_rows = parts.iter().map(|p| p.bbo_rows).sum();
    // The metadata ends at the last message the schema writers saw, as on one thread.
    let (_, last_ts_event) = parts.iter().map(|p| p.dbn_last).max().unwrap_or_default();
    let books: Vec<Books> = parts.into_iter().map(|p| p.books).collect();
    let dbn_out_records = match merged.dbn {
        Some(out) => Some(out.finish(last_ts_event)?),
        None => None,
    };
    let elapsed_s = started.elapsed().as_secs_f64();
    write_output_file(opts.book_out.as_ref(), |out| {
        write_partitioned_book_csv(&books, opts.depth, &opts.filter, out)
    })?;
    let summary = ReplaySummary {
        input: opts.input.display().to_string(),
        format: Some(format),
        messages,
        by_type,
        unknown_types,
        book: sum_counters(&counters, merged.live_orders_peak),
        crossed_books_end: books.iter().map(|b| b.crossed_books() as u64).sum(),
        live_orders_end: books.iter().map(|b| b.live_orders() as u64).sum(),
        bbo_rows,
        elapsed_s,
        packets,
        no_messages,
        error,
        dbn: None,
        dbn_out_records,
    };
    write_summary_json(opts, &summary)?;
    Ok(PartitionedOutcome { summary, books })
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
    fn the_reader_checks_give_decode_s_errors() {
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
