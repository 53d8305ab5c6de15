//! `ticklane replay FILE`: a captured file through the books, with the contract outputs.

use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use ticklane_feed::capture::{CaptureReader, InputFormat, ReadOptions};

use super::summary::{PacketCounts, ReplaySummary};
use crate::book::{Applier, ApplyError, BookConfig};
use crate::csv::{write_book_csv, ThreadedBboSink};

/// What `ticklane replay` was asked to do.
#[derive(Clone, Debug, Default)]
pub struct ReplayOptions {
    /// The input: ITCH50 (optionally gzipped), pcap or pcapng.
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
}

/// Why a replay could not start or finish its outputs (input errors are in the summary).
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
    Snapshot(String),
    /// An output file could not be written.
    #[error("{path}: {source}")]
    Output {
        /// The output file.
        path: PathBuf,
        /// What went wrong.
        source: io::Error,
    },
}

fn output(path: &Path) -> Result<BufWriter<File>, ReplayError> {
    File::create(path)
        .map(BufWriter::new)
        .map_err(|source| ReplayError::Output {
            path: path.to_path_buf(),
            source,
        })
}

/// A finished replay: its report and the books as they ended.
pub struct ReplayOutcome {
    /// Counts, timings and the error that stopped the replay, if any.
    pub summary: ReplaySummary,
    /// The final books.
    pub books: crate::book::Books,
}

/// Messages between progress updates (a power of two: the check is a mask).
const PROGRESS_EVERY: u64 = 1 << 20;

/// Replays `opts.input`. Everything before an input error is applied and reported: the
/// summary's `error` says what stopped the replay, where, and at which message.
///
/// # Errors
///
/// [`ReplayError`] if the input cannot be opened or an output cannot be written.
pub fn replay_file(opts: &ReplayOptions) -> Result<ReplayOutcome, ReplayError> {
    let started = Instant::now();
    let mut reader = CaptureReader::open(
        &opts.input,
        ReadOptions {
            recover_lengths: opts.recover_lengths,
        },
    )?;
    let bbo =
        match &opts.bbo_out {
            Some(path) => Some(ThreadedBboSink::spawn(output(path)?).map_err(|source| {
                ReplayError::Output {
                    path: path.clone(),
                    source,
                }
            })?),
            None => None,
        };
    let mut applier = Applier::new(opts.books, bbo).map_err(ReplayError::Books)?;
    let show_progress = opts.progress && io::stderr().is_terminal();
    let mut error = None;
    loop {
        let raw = match reader.next_message() {
            Ok(Some(raw)) => raw,
            Ok(None) => break,
            Err(e) => {
                error = Some(e.to_string());
                break;
            }
        };
        let (index, offset) = (raw.index, raw.offset);
        match applier.step(index, raw.bytes) {
            Ok(_) => {}
            Err(ApplyError::Decode(e)) => {
                error = Some(format!(
                    "{}: byte {offset}, message {index}: {e}",
                    opts.input.display()
                ));
                break;
            }
            Err(ApplyError::Output(source)) => {
                let path = opts.bbo_out.clone().unwrap_or_default();
                return Err(ReplayError::Output { path, source });
            }
        }
        if show_progress && index & (PROGRESS_EVERY - 1) == 0 {
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
    }
    if show_progress {
        eprint!("\r{:60}\r", "");
    }
    let stats = reader.stats();
    let format = reader.format();
    let packets = matches!(format, InputFormat::Pcap | InputFormat::PcapNg).then(|| PacketCounts {
        packets: stats.packets,
        non_mold_packets: stats.non_mold_packets,
        gaps: stats.gaps,
        missing_messages: stats.missing_messages,
        gap_ranges: stats.gap_ranges.iter().map(|g| [g.first, g.last]).collect(),
        duplicates: stats.duplicates,
        session_changes: stats.session_changes,
    });
    let messages = applier.messages();
    let unknown_types = applier.unknown_types();
    let by_type = *applier.by_type();
    let bbo_rows = applier.bbo_rows();
    let books = applier.finish().map_err(|source| ReplayError::Output {
        path: opts.bbo_out.clone().unwrap_or_default(),
        source,
    })?;
    let elapsed_s = started.elapsed().as_secs_f64();
    if let Some(path) = &opts.book_out {
        write_book_csv(&books, opts.depth, output(path)?).map_err(|source| {
            ReplayError::Output {
                path: path.clone(),
                source,
            }
        })?;
    }
    let summary = ReplaySummary {
        input: opts.input.display().to_string(),
        format: format.to_string(),
        messages,
        by_type,
        unknown_types,
        book: books.counters(),
        crossed_books_end: books.crossed_books() as u64,
        live_orders_end: books.live_orders() as u64,
        bbo_rows,
        elapsed_s,
        packets,
        error,
    };
    if let Some(path) = &opts.summary_json {
        let mut out = output(path)?;
        out.write_all(summary.to_json().as_bytes())
            .and_then(|()| out.flush())
            .map_err(|source| ReplayError::Output {
                path: path.clone(),
                source,
            })?;
    }
    Ok(ReplayOutcome { summary, books })
}
