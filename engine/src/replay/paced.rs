//! `ticklane replay FILE --pace …`: a capture through the live pipeline (reader thread,
//! ring, book thread, snapshot) at the recorded pace, N times faster, or as fast as the
//! book thread goes.
//!
//! It prints the stage latency percentiles. The stamps come from the time-stamp counter
//! ([`crate::clock`]), read by the reader once per received datagram or read on a live
//! line, once per 32 messages at `--pace max` (and again after any wait for a free ring
//! slot), and by the book thread once per 16 applied messages and at each batch's end. So
//! `receive` marks when the reader began the packet or batch holding the message, and
//! `applied`/`published` when the group holding it was done: both err on the long side, by
//! at most a batch's read or apply time (about a microsecond); at paces where the ring
//! stays nearly empty the groups hold one or two messages. Not with `--dbn-out`,
//! `--parquet-out`, `--sample`, `--symbols`/`--between` or a DBN input.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use ticklane_feed::capture::{CaptureReader, ReadOptions};

use super::fault::ReplayFault;
use super::run::{with_failure_summary, ReplayError, ReplayOptions};
use super::summary::{PacketCounts, ReplaySummary};
use crate::book::Books;
use crate::csv::write_book_csv;
use crate::overload::{OverloadConfig, OverloadCounts, SheddingPublisher, SnapshotSink};
use crate::pipeline::{
    run_pipeline, CaptureSource, Pace, Percentiles, PipelineConfig, PipelineReport,
};
use crate::publish::NoPublisher;
use crate::snapshot::SnapshotWriter;

/// Where a paced replay publishes its books, if anywhere.
#[derive(Clone, Debug)]
pub struct SnapshotTarget {
    /// The snapshot file (created or replaced).
    pub path: PathBuf,
    /// Instrument slots.
    pub capacity: usize,
    /// Levels per side in each slot.
    pub depth: usize,
}

/// A finished paced replay.
pub struct PacedOutcome {
    /// Counts and timings, as for an unpaced replay.
    pub summary: ReplaySummary,
    /// Receive to applied, receive to published, intended send to published.
    pub latency: [(&'static str, Percentiles); 3],
    /// The final books.
    pub books: Books,
    /// What overload control did, when publishing into a snapshot.
    pub overload: Option<OverloadCounts>,
}

/// Replays `opts.input` through the pipeline at `pace`. `opts.bbo_out` is not supported
/// here (the top-of-book stream is the unpaced replay's output).
///
/// As for [`replay_file`](super::replay_file), an input that held no feed data is a
/// failure in the summary, and [`ReplaySummary::exit_status`] gives the exit status.
///
/// # Errors
///
/// [`ReplayError`] if the input cannot be opened, the snapshot cannot be created, the
/// threads cannot start, or an output cannot be written. With `opts.summary_json`, the
/// summary is written with that error.
pub fn replay_paced(
    opts: &ReplayOptions,
    pace: Pace,
    pipeline: PipelineConfig,
    snapshot: Option<&SnapshotTarget>,
) -> Result<PacedOutcome, ReplayError> {
    with_failure_summary(opts, |opts| {
        replay_paced_unreported(opts, pace, pipeline, snapshot)
    })
}

fn replay_paced_unreported(
    opts: &ReplayOptions,
    pace: Pace,
    pipeline: PipelineConfig,
    snapshot: Option<&SnapshotTarget>,
) -> Result<PacedOutcome, ReplayError> {
    if super::is_dbn_input(&opts.input) {
        return Err(ReplayError::Unsupported(
            "--pace plays ITCH captures through the live pipeline; a DBN MBO input replays without --pace",
        ));
    }
    let reader = CaptureReader::open(
        &opts.input,
        ReadOptions {
            recover_lengths: opts.recover_lengths,
        },
    )?;
    let source = CaptureSource::new(reader, pace, pipeline.wait);
    let pipeline = PipelineConfig {
        books: opts.books,
        ..pipeline
    };
    let stop = AtomicBool::new(false);
    let report = match snapshot {
        Some(target) => {
            let writer = SnapshotWriter::create(&target.path, target.capacity, target.depth)?;
            let publisher =
                SheddingPublisher::new(SnapshotSink::new(writer), OverloadConfig::default());
            run_pipeline(pipeline, source, publisher, &stop)
        }
        None => run_pipeline(pipeline, source, NoPublisher, &stop),
    }
    .map_err(ReplayError::Books)?;
    finish(opts, report)
}

fn finish(
    opts: &ReplayOptions,
    report: PipelineReport<crate::pipeline::CaptureSourceReport>,
) -> Result<PacedOutcome, ReplayError> {
    let PipelineReport {
        source,
        book,
        elapsed,
        ..
    } = report;
    if let Some(path) = &opts.book_out {
        let out = std::fs::File::create(path)
            .map(std::io::BufWriter::new)
            .and_then(|out| write_book_csv(&book.books, opts.depth, out))
            .and_then(|mut out| out.flush());
        out.map_err(|source| ReplayError::Output {
            path: path.clone(),
            source,
        })?;
    }
    let packets = PacketCounts::of_capture(source.format, &source.stats());
    let (error, no_messages) = match (source.error, book.first_decode_error, source.no_messages) {
        (Some(e), _, _) => (Some(ReplayFault::Input(e)), None),
        (None, Some(e), _) => (Some(ReplayFault::BookStage(e)), None),
        (None, None, Some(why)) if why.held_no_feed_data() => (
            Some(ReplayFault::NoFeedData {
                path: opts.input.clone(),
                why,
            }),
            None,
        ),
        (None, None, why) => (None, why),
    };
    let summary = ReplaySummary {
        input: opts.input.display().to_string(),
        format: Some(source.format),
        messages: book.messages,
        by_type: book.by_type,
        unknown_types: 0,
        book: book.books.counters(),
        crossed_books_end: book.books.crossed_books() as u64,
        live_orders_end: book.books.live_orders() as u64,
        bbo_rows: 0,
        elapsed_s: elapsed.as_secs_f64(),
        packets,
        dbn: None,
        dbn_out_records: None,
        no_messages,
        error,
    };
    if let Some(path) = &opts.summary_json {
        std::fs::write(path, summary.to_json()).map_err(|source| ReplayError::Output {
            path: path.clone(),
            source,
        })?;
    }
    let l = &book.latency;
    Ok(PacedOutcome {
        summary,
        latency: [
            ("receive -> applied", Percentiles::of(&l.receive_to_applied)),
            (
                "receive -> published",
                Percentiles::of(&l.receive_to_published),
            ),
            (
                "intended -> published",
                Percentiles::of(&l.intended_to_published),
            ),
        ],
        books: book.books,
        overload: None,
    })
}
