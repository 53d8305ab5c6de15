//! `ticklane replay FILE`: a captured file through the books, with the contract outputs.

use std::cell::Cell;
use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use ticklane_feed::capture::{CaptureReader, InputFormat, NoMessages, RawMessage, ReadOptions};

use super::bbo_outputs::{BboOutputs, ThreadedBboOutputs};
use super::each_message::{each_message, Next};
use super::fault::ReplayFault;
use super::summary::{PacketCounts, ReplaySummary};
use crate::book::{Applier, ApplyError, BookConfig, TouchesAhead};
use crate::csv::{write_book_csv_filtered, FilteredBboCsv};
use crate::dbn_out::{
    DbnOut, DbnOutError, DbnOutOptions, DbnSchema, FeedStamp, InputEnd, ItchDataset, SessionDate,
};
use crate::output_filter::OutputFilter;
use crate::parquet_out::{
    BboParquet, Mbp10Parquet, ParquetOutError, ParquetOutOptions, ParquetSchema, Provenance,
    SampledParquet,
};
use crate::row_chunks::{ChunkSink, RowChunks};
use crate::sample::{SampleError, SampleOptions, SampleWriter, Sampler};
use crate::snapshot::SnapshotError;
use crate::table_tap::TableTap;

/// What `ticklane replay` was asked to do.
#[derive(Clone, Debug, Default)]
pub struct ReplayOptions {
    /// The input: ITCH50 (optionally gzipped), pcap, pcapng, or DBN MBO (optionally zstd).
    pub input: PathBuf,
    /// Where the top-of-book stream goes, if anywhere.
    pub bbo_out: Option<PathBuf>,
    /// Where the final depth goes, if anywhere.
    pub book_out: Option<PathBuf>,
    /// Levels per side in the final depth.
    pub depth: usize,
    /// Where the summary JSON goes, if anywhere.
    pub summary_json: Option<PathBuf>,
    /// Take each ITCH50 message's length from its type (for files whose prefixes are 0).
    pub recover_lengths: bool,
    /// Book capacities.
    pub books: BookConfig,
    /// Show a progress line on a terminal.
    pub progress: bool,
    /// Where the DBN output goes, in which schema, if anywhere.
    pub dbn_out: Option<DbnOutOptions>,
    /// Where the depth sampled at intervals goes, if anywhere (one thread).
    pub sample: Option<SampleOptions>,
    /// Which rows every output writes (`--symbols`, `--between`); the books still apply
    /// every message.
    pub filter: OutputFilter,
    /// Where the Parquet output goes, in which view, if anywhere.
    pub parquet_out: Option<ParquetOutOptions>,
    /// The session date (`--date`). A DBN input's rows are stamped in ns since its New York
    /// midnight; without it, the date comes from the DBN metadata or the first record.
    pub date: Option<SessionDate>,
    /// Where the rows of the tables asked for go in chunks, in this process (the Python
    /// package's batches): the top of book the same rows as `bbo_out`, every table
    /// filtered as the files are.
    pub chunks: Option<RowChunks>,
}

/// Why a replay could not start or finish its outputs (input errors are in the summary, as a
/// [`ReplayFault`]). With `--summary-json`, the summary is written with this error too.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The input could not be opened or recognised.
    #[error(transparent)]
    Open(#[from] ticklane_feed::capture::CaptureError),
    /// The book tables could not be allocated at the configured capacities.
    #[error("allocating the books: {0} (lower --max-orders, --max-books or --levels-per-side)")]
    Books(io::Error),
    /// The snapshot file could not be created.
    #[error("snapshot: {0}")]
    Snapshot(#[from] SnapshotError),
    /// An output file could not be written.
    #[error("{path}: {source}")]
    Output {
        /// The output file.
        path: PathBuf,
        /// What went wrong.
        source: io::Error,
    },
    /// The DBN output could not be written.
    #[error("--dbn-out {0}")]
    Dbn(#[from] DbnOutError),
    /// The sampled depth could not be written.
    #[error(transparent)]
    Sample(#[from] SampleError),
    /// An option this input or path does not support.
    #[error("{0}")]
    Unsupported(&'static str),
    /// An output would overwrite the input or another output.
    #[error(transparent)]
    PathClash(#[from] super::PathClash),
    /// An output names a folder, or a file in a folder that does not exist: said with its
    /// flag before anything is opened.
    #[error("{0}")]
    Unwritable(String),
    /// The Parquet output could not be written.
    #[error("--parquet-out: {0}")]
    Parquet(#[from] ParquetOutError),
    /// The consumer of the rows in chunks went away before the replay ended.
    #[error("the rows in chunks: {0}")]
    Consumer(io::Error),
    /// An output's writer thread panicked (a bug).
    #[error(transparent)]
    WriterPanicked(#[from] crate::writer_thread::WriterThreadPanicked),
    /// The replay failed, and the `--summary-json` that should carry the failure could not
    /// be written either.
    #[error("{error}; the summary could not be written either: {}: {source}", path.display())]
    SummaryNotWritten {
        /// Why the replay failed.
        error: Box<ReplayError>,
        /// The summary file.
        path: PathBuf,
        /// Why it could not be written.
        source: io::Error,
    },
}

/// Writes `summary` as JSON to `path`.
pub(super) fn write_summary(path: &Path, json: &str) -> io::Result<()> {
    let mut out = BufWriter::new(File::create(path)?);
    out.write_all(json.as_bytes())?;
    out.flush()
}

/// Runs `replay`; if it fails and `opts.summary_json` is given, writes a summary with the
/// error there (`replay::summary` documents the summary with every error), unless writing that very
/// file is what failed.
pub(super) fn with_failure_summary<T>(
    opts: &ReplayOptions,
    replay: impl FnOnce(&ReplayOptions) -> Result<T, ReplayError>,
) -> Result<T, ReplayError> {
    let error = match replay(opts) {
        Ok(done) => return Ok(done),
        Err(error) => error,
    };
    let Some(path) = &opts.summary_json else {
        return Err(error);
    };
    if matches!(&error, ReplayError::Output { path: failed, .. } if failed == path) {
        return Err(error);
    }
    let summary = ReplaySummary {
        input: opts.input.display().to_string(),
        ..ReplaySummary::default()
    };
    match write_summary(path, &summary.to_json_with_error(&error)) {
        Ok(()) => Err(error),
        Err(source) => Err(ReplayError::SummaryNotWritten {
            error: Box::new(error),
            path: path.clone(),
            source,
        }),
    }
}

pub(super) fn output(path: &Path) -> Result<BufWriter<File>, ReplayError> {
    File::create(path)
        .map(BufWriter::new)
        .map_err(|source| ReplayError::Output {
            path: path.to_path_buf(),
            source,
        })
}

/// Writes the output file at `path`, if one was asked for, with `write`, and flushes it (a
/// buffer dropped unflushed would lose the last write's error); an error names the file.
pub(super) fn write_output_file(
    path: Option<&PathBuf>,
    write: impl FnOnce(BufWriter<File>) -> io::Result<BufWriter<File>>,
) -> Result<(), ReplayError> {
    let Some(path) = path else {
        return Ok(());
    };
    write(output(path)?)
        .and_then(|mut out| out.flush())
        .map_err(|source| ReplayError::Output {
            path: path.clone(),
            source,
        })
}

/// Writes `summary` as JSON where `opts.summary_json` says, if anywhere.
pub(super) fn write_summary_json(
    opts: &ReplayOptions,
    summary: &ReplaySummary,
) -> Result<(), ReplayError> {
    write_output_file(opts.summary_json.as_ref(), |mut out| {
        out.write_all(summary.to_json().as_bytes())?;
        Ok(out)
    })
}

/// Overwrites the terminal's progress line: how far through the input, how fast.
#[cold]
pub(super) fn progress_line(reader: &CaptureReader, index: u64, started: Instant) {
    let stats = reader.stats();
    let pct = stats
        .bytes_total
        .map(|total| {
            format!(
                "{:5.1}%",
                100.0 * stats.bytes_consumed as f64 / total.max(1) as f64
            )
        })
        .unwrap_or_default();
    let rate = index as f64 / started.elapsed().as_secs_f64() / 1e6;
    eprint!(
        "\r  {pct} {:>12} messages  {rate:.1} M msg/s",
        super::group(index)
    );
}

/// The fault that ended the input, if any, else why it delivered no messages: an input
/// that held no feed data at all is a fault too.
pub(super) fn end_of_input(
    opts: &ReplayOptions,
    error: Option<ReplayFault>,
    reader: &CaptureReader,
) -> (Option<ReplayFault>, Option<NoMessages>) {
    match (error, reader.no_messages()) {
        (Some(error), _) => (Some(error), None),
        (None, Some(why)) if why.held_no_feed_data() => (
            Some(ReplayFault::NoFeedData {
                path: opts.input.clone(),
                why,
            }),
            None,
        ),
        (None, why) => (None, why),
    }
}

/// The error of a failed MBP-10 Parquet record: when its writer thread stopped, the
/// thread's own error (which names the file and says why), not the stop.
pub(super) fn mbp10_failed(mbp: Option<Mbp10Parquet>, error: DbnOutError) -> ReplayError {
    if let (DbnOutError::WriterStopped(_), Some(mbp)) = (&error, mbp) {
        if let Err(real) = mbp.close(Vec::new()) {
            return real.into();
        }
    }
    ParquetOutError::from(error).into()
}

/// Where the input came from, for a Parquet footer, if any Parquet is written. Read before the
/// replay (the page cache then serves the replay's own read).
pub(super) fn provenance(opts: &ReplayOptions) -> Result<Option<Provenance>, ReplayError> {
    let sample_parquet = opts.sample.as_ref().is_some_and(SampleOptions::is_parquet);
    Ok((opts.parquet_out.is_some() || sample_parquet)
        .then(|| Provenance::of_input(&opts.input))
        .transpose()?)
}

/// The top-of-book outputs (`--bbo-out`, and `parquet` for `--parquet-schema bbo`) on their
/// writer thread, if any is asked for.
pub(super) fn bbo_outputs(
    opts: &ReplayOptions,
    parquet: Option<BboParquet>,
) -> Result<Option<ThreadedBboOutputs>, ReplayError> {
    let csv = match &opts.bbo_out {
        Some(path) => Some((
            FilteredBboCsv::new(output(path)?, OutputFilter::default()).map_err(|source| {
                ReplayError::Output {
                    path: path.clone(),
                    source,
                }
            })?,
            path.clone(),
        )),
        None => None,
    };
    let bbo = BboOutputs {
        csv,
        parquet,
        chunks: opts
            .chunks
            .as_ref()
            .filter(|c| c.tables.bbo)
            .map(ChunkSink::bbo),
        filter: opts.filter.clone(),
    };
    if !bbo.any() {
        return Ok(None);
    }
    bbo.spawn().map(Some).map_err(|source| ReplayError::Output {
        path: opts.bbo_out.clone().unwrap_or_default(),
        source,
    })
}

/// The tables of the rows in chunks that the book thread makes, if any is asked for.
/// The order events are stamped by the session date where it is known (`--date`, else the
/// file name), else by any date: their consumer counts ITCH time from that date's midnight.
fn table_tap(opts: &ReplayOptions) -> Option<TableTap> {
    let chunks = opts.chunks.as_ref().filter(|c| c.tables.any_tapped())?;
    let date = opts
        .date
        .or_else(|| SessionDate::from_file_name(&opts.input).ok())
        .unwrap_or(SessionDate::UNDATED);
    let dataset = ItchDataset::from_file_name(&opts.input).unwrap_or_default();
    Some(TableTap::new(chunks, date, dataset, opts.filter.clone()))
}

/// The sample output `o` asks for: CSV or DBN written by the sample writer itself, Parquet
/// handed down.
pub(super) fn open_sample_writer(o: &SampleOptions) -> Result<SampleWriter, ReplayError> {
    if o.is_parquet() {
        Ok(SampleWriter::with_rows(Box::new(SampledParquet::create(
            o,
        )?)))
    } else {
        Ok(SampleWriter::create(o)?)
    }
}

/// The sampler `o` asks for, keeping what `filter` keeps.
pub(super) fn open_sampler(
    o: &SampleOptions,
    filter: &OutputFilter,
) -> Result<Sampler, ReplayError> {
    Ok(Sampler::with_writer(
        o,
        filter.clone(),
        open_sample_writer(o)?,
    ))
}

/// Finishes a CSV or DBN sample now; a Parquet sample's footer waits for the summary
/// ([`finish_sample`]), so it is handed back.
pub(super) fn finish_sample_unless_kept(
    sample: Option<SampleWriter>,
) -> Result<Option<SampleWriter>, ReplayError> {
    match sample {
        Some(s) if !s.keeps_metadata() => {
            s.finish_with(Vec::new())?;
            Ok(None)
        }
        other => Ok(other),
    }
}

/// Finishes a Parquet sample, whose footer says where it came from as the other views' do
/// (the others finished before the summary was made).
pub(super) fn finish_sample(
    sample: Option<SampleWriter>,
    provenance: Option<&Provenance>,
    summary: &ReplaySummary,
    opts: &ReplayOptions,
) -> Result<(), ReplayError> {
    let Some(sample) = sample else {
        return Ok(());
    };
    let footer = match provenance {
        Some(p) if sample.keeps_metadata() => p.footer("sample", &summary.to_json(), &opts.filter),
        _ => Vec::new(),
    };
    sample.finish_with(footer)?;
    Ok(())
}

/// What a failed apply step means for the replay: a decode error stops it at this message
/// (kept in `error`, naming the input, the byte offset and the message index); the
/// top-of-book writer's refusal halts it.
#[inline(always)]
fn stop_on(
    step: Result<(), ApplyError>,
    error: &mut Option<ReplayFault>,
    opts: &ReplayOptions,
    raw: &RawMessage<'_>,
) -> Result<Next, Halt> {
    match step {
        Ok(()) => Ok(Next::Continue),
        Err(ApplyError::Decode(e)) => {
            *error = Some(ReplayFault::Decode {
                path: opts.input.clone(),
                offset: raw.offset,
                index: raw.index,
                error: e,
            });
            Ok(Next::Stop)
        }
        Err(ApplyError::Output(source)) => Err(Halt::Bbo(source)),
    }
}

/// Why a replay stopped at a writer's failure, kept until the writers can be taken back.
enum Halt {
    /// The top-of-book writer thread refused a row.
    Bbo(io::Error),
    /// The Parquet MBP-10 writer failed.
    Mbp10(DbnOutError),
    /// The consumer of the tables in chunks went away.
    Tables(io::Error),
    /// Any other output failed.
    Other(ReplayError),
}

/// A finished replay: its report and the books as they ended.
pub struct ReplayOutcome {
    /// Counts, timings and the error that stopped the replay, if any.
    pub summary: ReplaySummary,
    /// The final books.
    pub books: crate::book::Books,
}

/// Messages between progress updates (a power of two: the check is a mask).
pub(super) const PROGRESS_EVERY: u64 = 1 << 20;

/// Replays `opts.input`. Everything before an input error is applied and reported: the
/// summary's `error` says what stopped the replay, where, and at which message; an input
/// that held no feed data at all (empty, or a capture with no MoldUDP64) is an `error` too.
/// [`ReplaySummary::exit_status`] gives the exit status.
///
/// # Errors
///
/// [`ReplayError`] if the input cannot be opened, the books cannot be allocated or an output
/// cannot be written. With `opts.summary_json`, the summary is written with that error.
pub fn replay_file(opts: &ReplayOptions) -> Result<ReplayOutcome, ReplayError> {
    with_failure_summary(opts, replay_unreported)
}

fn replay_unreported(opts: &ReplayOptions) -> Result<ReplayOutcome, ReplayError> {
    if let Some(format) = super::dbn_input::dbn_format(&opts.input) {
        return super::dbn_input::replay_dbn(opts, format);
    }
    let started = Instant::now();
    let mut reader = CaptureReader::open(
        &opts.input,
        ReadOptions {
            recover_lengths: opts.recover_lengths,
        },
    )?;
    let provenance = provenance(opts)?;
    let parquet_bbo = match &opts.parquet_out {
        Some(p) if p.schema == ParquetSchema::Bbo => Some(BboParquet::create(&p.path)?),
        _ => None,
    };
    let bbo = bbo_outputs(opts, parquet_bbo)?;
    let mut applier = Applier::new(opts.books, bbo).map_err(ReplayError::Books)?;
    let mut dbn = opts
        .dbn_out
        .clone()
        .map(|o| DbnOut::create(o).map(|out| out.with_filter(opts.filter.clone())))
        .transpose()?;
    // MBP-10 in Parquet is the DBN writer's MBP-10 records, taken as they are made.
    let mut mbp = match &opts.parquet_out {
        Some(p) if p.schema == ParquetSchema::Mbp10 => {
            let date = p.date.ok_or_else(|| ParquetOutError::NoDate {
                path: p.path.clone(),
            })?;
            let dbn_opts = DbnOutOptions {
                path: p.path.clone(),
                schema: DbnSchema::Mbp10,
                date,
                // No Parquet column carries the dataset or the publisher.
                dataset: ItchDataset::default(),
            };
            Some(
                DbnOut::with_sink(dbn_opts, Mbp10Parquet::create(&p.path)?)
                    .with_filter(opts.filter.clone()),
            )
        }
        _ => None,
    };
    let mut sample = opts
        .sample
        .as_ref()
        .map(|o| open_sampler(o, &opts.filter))
        .transpose()?;
    let mut tap = table_tap(opts);
    let mut dbn_message = Vec::with_capacity(64);
    let can_lose = matches!(reader.format(), InputFormat::Pcap | InputFormat::PcapNg);
    let show_progress = opts.progress && io::stderr().is_terminal();
    let mut error = None;
    // Whether a message needs a copy so the reader can be asked about losses (pcap only).
    let any_after = dbn.is_some() || mbp.is_some() || tap.is_some();
    let check_losses = can_lose && any_after;
    let progress = |reader: &CaptureReader, index: u64| {
        if show_progress && index & (PROGRESS_EVERY - 1) == 0 {
            progress_line(reader, index, started);
        }
    };
    // Set after each message: the read loop looks ahead in its next block once the books
    // have outgrown the caches.
    let look_ahead = Cell::new(false);
    let ended = if !any_after && sample.is_none() {
        // A plain replay: the apply step and nothing else, compiled into the read loop.
        // `inline(always)`: left to itself the compiler called the closure once a message
        // (the read loop has two call sites), passing the message and the lookahead by
        // value: 14.5 M of the 300k day's 122.1 M instructions (callgrind), and the full
        // day's --bbo-out /dev/null 1.167 -> 1.000 s once inlined.
        each_message(
            &mut reader,
            None,
            &look_ahead,
            #[inline(always)]
            |raw, _, ahead| {
                if let Some(ahead) = ahead {
                    applier.prefetch(ahead);
                }
                let step = applier.apply(raw.index, raw.bytes);
                look_ahead.set(applier.books().worth_prefetching());
                stop_on(step, &mut error, opts, &raw)
            },
            progress,
        )
    } else {
        // One message, and whether the capture's sequencer declared a loss before it. A
        // writer's failure halts the replay; it is turned into the error that names its file
        // below, once the closure lets go of the writers.
        let losses = check_losses.then_some(&mut dbn_message);
        each_message(
            &mut reader,
            losses,
            &look_ahead,
            // Inlined at both call sites in the read loop: a call per message, passing the
            // message and the lookahead by value, cost ~50 instructions a message.
            #[inline(always)]
            |raw: RawMessage<'_>, lost: bool, ahead: Option<TouchesAhead>| -> Result<Next, Halt> {
                let index = raw.index;
                let feed = FeedStamp {
                    seq: raw.seq,
                    capture_ns: raw.capture_ns,
                };
                if let Some(ahead) = ahead {
                    applier.prefetch(ahead);
                }
                // `--dbn-out` and `--sample` see the books before each message (a sampling
                // boundary is the state just before the first message at or past it).
                if lost {
                    if let Some(out) = &mut dbn {
                        out.mark_maybe_bad_book();
                    }
                    if let Some(out) = &mut mbp {
                        out.mark_maybe_bad_book();
                    }
                    if let Some(tap) = &mut tap {
                        tap.mark_maybe_bad_book();
                    }
                }
                let step = applier.step_with(index, raw.bytes, |books, m| {
                    if let Some(s) = &mut sample {
                        s.before(index, books, m.timestamp());
                    }
                    if let Some(out) = &mut dbn {
                        out.before(books, m);
                    }
                    if let Some(out) = &mut mbp {
                        out.before(books, m);
                    }
                    if let Some(tap) = &mut tap {
                        tap.before(books, m);
                    }
                });
                let applied = match step {
                    Ok(applied) => applied,
                    Err(e) => return stop_on(Err(e), &mut error, opts, &raw),
                };
                if let (true, Some(message)) = (any_after, &applied.message) {
                    if let Some(out) = &mut dbn {
                        out.after(index, message, applied.changed, applier.books(), feed)
                            .map_err(|e| Halt::Other(e.into()))?;
                    }
                    if let Some(out) = &mut mbp {
                        out.after(index, message, applied.changed, applier.books(), feed)
                            .map_err(Halt::Mbp10)?;
                    }
                    if let Some(tap) = &mut tap {
                        tap.after(index, message, applied.changed, applier.books(), feed)
                            .map_err(Halt::Tables)?;
                    }
                }
                look_ahead.set(applier.books().worth_prefetching());
                Ok(Next::Continue)
            },
            progress,
        )
    };
    let halt = match ended {
        Ok(None) => None,
        Ok(Some(e)) => {
            error = Some(ReplayFault::Input(e));
            None
        }
        Err(h) => Some(h),
    };
    match halt {
        None => {}
        Some(Halt::Bbo(source)) => {
            // The writer thread stopped on an error of its own: finishing it returns that
            // error, which names the file.
            let (_, bbo) = applier.into_parts();
            if let Some(bbo) = bbo {
                bbo.finish()?;
            }
            let path = opts.bbo_out.clone().unwrap_or_default();
            return Err(ReplayError::Output { path, source });
        }
        Some(Halt::Mbp10(e)) => return Err(mbp10_failed(mbp.map(DbnOut::into_sink), e)),
        Some(Halt::Tables(e)) => return Err(ReplayError::Consumer(e)),
        Some(Halt::Other(e)) => return Err(e),
    }
    if show_progress {
        eprint!("\r{:60}\r", "");
    }
    let format = reader.format();
    let packets = PacketCounts::of_capture(format, &reader.stats());
    let (error, no_messages) = end_of_input(opts, error, &reader);
    let messages = applier.messages();
    let unknown_types = applier.unknown_types();
    let by_type = *applier.by_type();
    let bbo_rows = applier.bbo_rows();
    let (books, bbo) = applier.into_parts();
    let parquet_bbo = bbo.map(ThreadedBboOutputs::finish).transpose()?.flatten();
    let dbn_out_records = match dbn {
        Some(out) => Some(out.finish(InputEnd::of(error.is_some()))?),
        None => None,
    };
    let sample = finish_sample_unless_kept(sample.map(Sampler::into_writer))?;
    if let Some(tap) = tap {
        tap.finish().map_err(ReplayError::Consumer)?;
    }
    let elapsed_s = started.elapsed().as_secs_f64();
    write_output_file(opts.book_out.as_ref(), |out| {
        write_book_csv_filtered(&books, opts.depth, &opts.filter, out)
    })?;
    let summary = ReplaySummary {
        input: opts.input.display().to_string(),
        format: Some(format),
        messages,
        by_type,
        unknown_types,
        book: books.counters(),
        crossed_books_end: books.crossed_books() as u64,
        live_orders_end: books.live_orders() as u64,
        bbo_rows,
        elapsed_s,
        packets,
        dbn: None,
        dbn_out_records,
        no_messages,
        error,
    };
    finish_sample(sample, provenance.as_ref(), &summary, opts)?;
    if let (Some(p), Some(provenance)) = (&opts.parquet_out, &provenance) {
        let footer = provenance.footer(p.schema.name(), &summary.to_json(), &opts.filter);
        if let Some(out) = parquet_bbo {
            out.close(footer)?;
        } else if let Some(out) = mbp {
            out.into_sink().close(footer)?;
        }
    }
    write_summary_json(opts, &summary)?;
    Ok(ReplayOutcome { summary, books })
}
