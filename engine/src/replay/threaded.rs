//! `ticklane replay FILE --threads N`: the stocks spread over N book threads, with the
//! outputs of one thread.
//!
//! The shape: N threads, no more. The calling thread opens the input, weighs its locates
//! ([`LocatePartition`]) and starts N book threads; each reads the whole input with a reader
//! of its own (over the one mapping of an uncompressed input; a gzip input is decompressed
//! by each), frames and checks every message (the checks `itch::decode` makes, so a corrupt
//! input stops every thread at the same message with the same error as on one thread), and
//! applies with the one-thread apply step and output writers only the messages whose locate
//! it owns. Framing costs a few tens of instructions a message, so no thread routes for the
//! others. Every [`EPOCH`] messages each book thread (`book_thread`) answers with what each
//! of its messages did and the rows and records it made; the first one's answer also
//! carries the epoch's route (which thread owns each message, in input order). The calling
//! thread then merges (`merge`): it walks the route, so visits every message in input order,
//! and places each answer in the outputs where one thread would have written it, a copy
//! each.
//!
//! Buffers travel in a loop and come back for reuse: after the first few epochs nothing is
//! allocated per message or per epoch. The channels are bounded ([`IN_FLIGHT`] epochs), so
//! a book thread ahead of the merge waits instead of letting memory grow; the merge takes
//! the threads' answers in the same order every epoch, so none can wait on one that waits
//! on it.
//!
//! Where the outputs can differ from one thread: only on input that breaks ITCH's own
//! rules. A modification whose locate is not its order's, or an add reusing a reference
//! live under a locate of another thread, is applied by the owner of the message's locate
//! alone; and the capacities (`--max-orders`, `--max-books`) hold per book thread. A lossy
//! capture is such input as soon as a lost delete's reference is reused under another
//! stock, so after a declared loss `ticklane replay` says that the outputs may differ.
//!
//! What is the same: `--bbo-out`, `--book-out`, `--dbn-out` (every schema, plain or zstd),
//! `--parquet-out` (both views; its footer but for the summary's timings), `--sample-out`
//! (CSV, DBN, Parquet) and the summary JSON (but for `elapsed_s` and `msgs_per_s`) are byte
//! for byte one thread's, with or without `--symbols`/`--between`, and so is the exit
//! status; a decode error stops every N at the same message with the same counts
//! (`tests/tests/it/replay_threads.rs` checks N = 1..4, a lossy pcap included). System events
//! (locate 0) go to the owner of locate 0, where they are counted. Each book thread formats
//! its own top-of-book rows and makes its own DBN and Parquet records with the one-thread
//! writers; the merge copies them into the files in message order, with the DBN tickers and
//! the metadata's room taken at the same messages as on one thread. Every book thread's
//! reader sees a capture's declared loss at the same message, and every book thread marks
//! its DBN records `F_MAYBE_BAD_BOOK` from the first message after it on. Not with
//! `--pace`; a DBN input replays on one thread. The calling thread's merge is the N+1st
//! busy thread, as one thread's replay has its writer beside the book thread; on a machine
//! with fewer cores than that the wall clock measures the wait for a core, and
//! `bench/README.md` has the per-thread instruction counts that say what cores to spare
//! would give.

use std::io;
use std::sync::mpsc;
use std::thread::{self, JoinHandle};
use std::time::Instant;

use ticklane_feed::capture::InputFormat;
use ticklane_feed::capture::{CaptureReader, ReadOptions};

use super::book_thread::{book_thread, BookInput, BookOutputs};
use super::merge::{merge, MergeOutputs};
use super::partition::LocatePartition;
use super::run::{
    end_of_input, finish_sample, finish_sample_unless_kept, open_sample_writer, output, provenance,
    with_failure_summary, write_output_file, write_summary_json, ReplayError, ReplayOptions,
};
use super::summary::{PacketCounts, ReplaySummary};
use crate::book::{BookCounts, Books, TypeCounts};
use crate::csv::{write_partitioned_book_csv, CsvBuffer, BBO_HEADER};
use crate::dbn_out::{DbnOutOptions, DbnSchema, InputEnd, ItchDataset, MergedDbnOut};
use crate::parquet_out::{BboParquet, Mbp10Parquet, ParquetOutError, ParquetSchema};
use crate::row_chunks::ChunkSink;
use crate::sample::BoundaryClock;

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
/// unchanged). The outputs (`--bbo-out`, `--book-out`, `--dbn-out` in every schema,
/// `--parquet-out` in both views, `--sample-out` in every format, the summary, each
/// filtered by `opts.filter`) are those of one thread; see the module documentation for
/// the one exception. A DBN input replays on one thread whatever `threads` says (its
/// records are not routed by locate yet).
///
/// # Errors
///
/// As [`super::replay_file`]; also [`ReplayError::Output`] if a thread cannot be started.
pub fn replay_file_threaded(
    opts: &ReplayOptions,
    threads: usize,
) -> Result<PartitionedOutcome, ReplayError> {
    if threads <= 1 || super::dbn_input::dbn_format(&opts.input).is_some() {
        let done = super::replay_file(opts)?;
        return Ok(PartitionedOutcome {
            summary: done.summary,
            books: vec![done.books],
        });
    }
    with_failure_summary(opts, |opts| replay_partitioned(opts, threads))
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

fn sum_counters(parts: &[BookCounts], live_orders_peak: u64) -> BookCounts {
    let mut c = BookCounts {
        live_orders_peak,
        ..BookCounts::default()
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
        c.symbols_replaced += p.symbols_replaced;
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
    let reader = CaptureReader::open(&opts.input, read)?;
    let partition = LocatePartition::weighed(&reader, read, threads);
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
    let provenance = provenance(opts)?;
    // MBP-10 in Parquet is the DBN writer's MBP-10 records, as on one thread.
    let mbp10 = match &opts.parquet_out {
        Some(p) if p.schema == ParquetSchema::Mbp10 => Some(DbnOutOptions {
            path: p.path.clone(),
            schema: DbnSchema::Mbp10,
            date: p.date.ok_or_else(|| ParquetOutError::NoDate {
                path: p.path.clone(),
            })?,
            // No Parquet column carries the dataset or the publisher.
            dataset: ItchDataset::default(),
        }),
        _ => None,
    };
    let parquet_bbo = matches!(&opts.parquet_out, Some(p) if p.schema == ParquetSchema::Bbo);
    let merge_outputs = MergeOutputs {
        csv,
        dbn: opts
            .dbn_out
            .clone()
            .map(|o| MergedDbnOut::create(o, opts.filter.clone()))
            .transpose()?,
        parquet_bbo: match &opts.parquet_out {
            Some(p) if parquet_bbo => Some(BboParquet::create(&p.path)?),
            _ => None,
        },
        chunks: opts
            .chunks
            .as_ref()
            .filter(|c| c.tables.bbo)
            .map(ChunkSink::bbo),
        mbp10: match &mbp10 {
            Some(o) => Some(Mbp10Parquet::create(&o.path)?),
            None => None,
        },
        sample: opts.sample.as_ref().map(open_sample_writer).transpose()?,
    };
    let book_outputs = BookOutputs {
        csv: opts.bbo_out.is_some(),
        // The rows in chunks are the typed rows the Parquet output takes.
        parquet_bbo: parquet_bbo || opts.chunks.as_ref().is_some_and(|c| c.tables.bbo),
        dbn: opts.dbn_out.clone(),
        mbp10,
        sample_depth: opts.sample.as_ref().map(|o| o.depth),
        filter: opts.filter.clone(),
    };

    let show_progress = opts.progress && io::IsTerminal::is_terminal(&io::stderr());
    // Whether the capture can declare losses that the DBN records must be marked with.
    let can_lose = (opts.dbn_out.is_some() || book_outputs.mbp10.is_some())
        && matches!(reader.format(), InputFormat::Pcap | InputFormat::PcapNg);
    // The sampling clock reads only timestamps: every book thread runs its own.
    let clock = opts
        .sample
        .as_ref()
        .map(|o| BoundaryClock::new(o.interval.nanos(), opts.filter.between()));
    let mut lanes = Vec::with_capacity(threads);
    let mut answers = Vec::with_capacity(threads);
    let mut recycle_out = Vec::with_capacity(threads);
    // The first thread takes the reader opened here; the others read the same mapping.
    let mut readers = Vec::with_capacity(threads);
    for _ in 1..threads {
        readers.push(reader.reopen(read)?);
    }
    readers.insert(0, reader);
    for (t, own) in readers.into_iter().enumerate() {
        let (output_tx, output_rx) = mpsc::sync_channel(IN_FLIGHT);
        let (recycle_out_tx, recycle_out_rx) = mpsc::sync_channel(IN_FLIGHT + 2);
        let input = BookInput {
            reader: own,
            path: opts.input.clone(),
            partition: partition.clone(),
            thread: t,
            can_lose,
            clock: clock.clone(),
            progress: (t == 0 && show_progress).then_some(started),
        };
        let (config, made) = (opts.books, book_outputs.clone());
        let thread = spawn(format!("book-{t}"), move || {
            book_thread(config, made, input, output_tx, recycle_out_rx)
        })?;
        lanes.push(thread);
        answers.push(output_rx);
        recycle_out.push(recycle_out_tx);
    }
    // The calling thread merges: it writes the files, in input order, as the book threads
    // answer. An output's error ends the merge, which lets go of the answers, so every book
    // thread stops at its next epoch.
    let merged = merge(answers, recycle_out, merge_outputs);
    let mut parts = Vec::with_capacity(threads);
    let mut failure = None;
    for lane in lanes {
        match lane.join() {
            Ok(Ok(part)) => parts.push(part),
            Ok(Err(why)) => failure = failure.or(Some(why)),
            Err(_) => failure = failure.or(Some(panicked("a book thread"))),
        }
    }
    // A book thread's failure first: the merge's is then only that it stopped.
    let merged = match failure {
        Some(why) => return Err(why),
        None => merged?,
    };

    // Every thread read the same input and stopped at the same message: the first one's
    // reader and fault stand for all.
    let Some(first) = parts.first_mut() else {
        return Err(ReplayError::Output {
            path: "(thread)".into(),
            source: io::Error::other("no book thread ran"),
        });
    };
    let unknown_types = first.unknown_types;
    let format = first.reader.format();
    let packets = PacketCounts::of_capture(format, &first.reader.stats());
    let (error, no_messages) = end_of_input(opts, first.error.take(), &first.reader);
    let mut by_type = TypeCounts::default();
    for part in &parts {
        for (sum, n) in by_type.0.iter_mut().zip(part.by_type.0) {
            *sum += n;
        }
    }
    let counters: Vec<BookCounts> = parts.iter().map(|p| p.books.counters()).collect();
    let messages = parts.iter().map(|p| p.messages).sum::<u64>() + unknown_types;
    let bbo_rows = parts.iter().map(|p| p.bbo_rows).sum();
    // The metadata ends at the last message the schema writers saw, as on one thread.
    let (_, last_ts_event) = parts.iter().map(|p| p.dbn_last).max().unwrap_or_default();
    let books: Vec<Books> = parts.into_iter().map(|p| p.books).collect();
    let dbn_out_records = match merged.outputs.dbn {
        Some(out) => Some(out.finish(last_ts_event, InputEnd::of(error.is_some()))?),
        None => None,
    };
    let sample = finish_sample_unless_kept(merged.outputs.sample)?;
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
    finish_sample(sample, provenance.as_ref(), &summary, opts)?;
    if let (Some(p), Some(provenance)) = (&opts.parquet_out, &provenance) {
        let footer = provenance.footer(p.schema.name(), &summary.to_json(), &opts.filter);
        if let Some(out) = merged.outputs.parquet_bbo {
            out.close(footer)?;
        } else if let Some(out) = merged.outputs.mbp10 {
            out.close(footer)?;
        }
    }
    write_summary_json(opts, &summary)?;
    Ok(PartitionedOutcome { summary, books })
}
