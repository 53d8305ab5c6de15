//! The `replay` command as one call: what was asked ([`ReplayRequest`], every option of the
//! command as plain data), checked before anything is opened, turned into
//! [`ReplayOptions`], and run on one book thread, on several, or paced through the live
//! pipeline. The command line fills the request from its flags and prints what comes back.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::Result;
use ticklane_feed::itch::Locate;
use ticklane_pipeline::{Pace, PipelineConfig, WaitStrategy};

use super::{
    check_output_paths, is_dbn_input, refuse_what_needs_itch, replay_file, replay_file_threaded,
    replay_paced, ReplayError, ReplayOptions, ReplaySummary, SnapshotTarget,
};
use crate::book::{BookConfig, Books};
use crate::dbn_out::{DbnOutOptions, DbnSchema, ItchDataset, SessionDate};
use crate::digit_groups::group;
use crate::output_filter::OutputFilter;
use crate::overload::OverloadCounts;
use crate::parquet_out::{ParquetOutOptions, ParquetSchema};
use crate::pipeline::Percentiles;
use crate::row_chunks::RowChunks;
use crate::sample::{is_dbn_path, SampleInterval, SampleOptions};

/// Everything `replay` may be asked, as plain data. Paths that are `None` are outputs not
/// asked for; the flags that name them in messages are the command's (`--bbo-out`, …).
#[derive(Clone, Debug)]
pub struct ReplayRequest {
    /// The input file; its format is detected from its first bytes.
    pub input: PathBuf,
    /// The top-of-book stream (one CSV row per change).
    pub bbo_out: Option<PathBuf>,
    /// The final L2 book, as CSV.
    pub book_out: Option<PathBuf>,
    /// Levels per side in `book_out` and in the paced snapshot.
    pub depth: usize,
    /// The replay as Databento DBN, in this schema.
    pub dbn_out: Option<PathBuf>,
    /// The DBN schema of `dbn_out`.
    pub schema: DbnSchema,
    /// The DBN dataset; else the one the input's file name names, else XNAS.ITCH.
    pub dataset: Option<ItchDataset>,
    /// The session date; else read from the input's file name where one is needed.
    pub date: Option<SessionDate>,
    /// Sampled depth: the file, the interval of ITCH time, and the levels per side.
    pub sample: Option<(PathBuf, SampleInterval, usize)>,
    /// Only these stocks' rows (comma separated; empty: every stock).
    pub symbols: String,
    /// Only rows stamped in this window of ITCH time (empty: every row).
    pub between: String,
    /// The replay as Parquet, in this view.
    pub parquet_out: Option<PathBuf>,
    /// The Parquet view of `parquet_out`.
    pub parquet_schema: ParquetSchema,
    /// The summary as one JSON object.
    pub summary_json: Option<PathBuf>,
    /// Take each ITCH50 message's length from its type byte.
    pub recover_lengths: bool,
    /// A progress line on the terminal.
    pub progress: bool,
    /// Book threads the stocks are spread over (1: one set of books).
    pub threads: usize,
    /// Play the capture through the live pipeline instead, at a pace.
    pub paced: Option<PacedRequest>,
    /// Book capacities.
    pub books: BookConfig,
    /// The top-of-book rows in chunks, to a consumer in this process (not paced).
    pub chunks: Option<RowChunks>,
}

/// `replay --pace`: the live pipeline's own options.
#[derive(Clone, Debug)]
pub struct PacedRequest {
    /// `max`, `recorded`, or `<N>x`.
    pub pace: Pace,
    /// Publish the books into this memory-mapped snapshot file.
    pub snapshot: Option<PathBuf>,
    /// How the pipeline's threads wait.
    pub wait: WaitStrategy,
    /// Pin the reader thread to this core.
    pub reader_core: Option<usize>,
    /// Pin the book thread to this core.
    pub book_core: Option<usize>,
}

/// What a replay returns: its summary, the books and, when paced, the pipeline's figures.
pub struct ReplayRun {
    /// Counts, timings, and the fault that stopped the replay, if any.
    pub summary: ReplaySummary,
    /// With a pace: the pipeline's figures.
    pub paced: Option<PacedFigures>,
    /// The books as the replay left them: one set, or each book thread's (whose stocks
    /// are its own); none when paced.
    pub books: Vec<Books>,
}

impl std::fmt::Debug for ReplayRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplayRun")
            .field("summary", &self.summary)
            .field("paced", &self.paced)
            .field("books", &format_args!("{} sets", self.books.len()))
            .finish()
    }
}

/// What a paced replay measured.
#[derive(Debug)]
pub struct PacedFigures {
    /// Each stage's latency, those with samples only.
    pub latency: Vec<(&'static str, Percentiles)>,
    /// What overload control did, when publishing into a snapshot.
    pub overload: Option<OverloadCounts>,
}

impl ReplayRequest {
    /// The outputs asked for, each with the flag that names it.
    pub fn outputs(&self) -> Vec<(&'static str, &Path)> {
        let snapshot = self.paced.as_ref().and_then(|p| p.snapshot.as_deref());
        let sample = self.sample.as_ref().map(|(path, ..)| path.as_path());
        [
            ("--bbo-out", self.bbo_out.as_deref()),
            ("--book-out", self.book_out.as_deref()),
            ("--summary-json", self.summary_json.as_deref()),
            ("--dbn-out", self.dbn_out.as_deref()),
            ("--sample-out", sample),
            ("--parquet-out", self.parquet_out.as_deref()),
            ("--snapshot", snapshot),
        ]
        .into_iter()
        .filter_map(|(flag, path)| Some((flag, path?)))
        .collect()
    }

    /// The session date: the one given, else the input's file name's.
    fn session_date(&self) -> Result<SessionDate> {
        Ok(match self.date {
            Some(date) => date,
            None => SessionDate::from_file_name(&self.input)?,
        })
    }

    /// The library's options for this request.
    fn options(&self, filter: OutputFilter) -> Result<ReplayOptions> {
        let dbn_input = is_dbn_input(&self.input);
        Ok(ReplayOptions {
            input: self.input.clone(),
            bbo_out: self.bbo_out.clone(),
            book_out: self.book_out.clone(),
            depth: self.depth,
            summary_json: self.summary_json.clone(),
            recover_lengths: self.recover_lengths,
            books: self.books,
            progress: self.progress,
            dbn_out: match &self.dbn_out {
                None => None,
                Some(path) => Some(DbnOutOptions {
                    path: path.clone(),
                    schema: self.schema,
                    date: self.session_date()?,
                    dataset: self
                        .dataset
                        .or_else(|| ItchDataset::from_file_name(&self.input))
                        .unwrap_or_default(),
                }),
            },
            sample: match &self.sample {
                None => None,
                Some((path, interval, depth)) => Some(SampleOptions {
                    path: path.clone(),
                    interval: *interval,
                    depth: *depth,
                    // A DBN input's replay dates its samples by its own session.
                    date: if is_dbn_path(path) && !dbn_input {
                        Some(self.session_date()?)
                    } else {
                        None
                    },
                }),
            },
            filter,
            date: self.date,
            chunks: self.chunks.clone(),
            parquet_out: match &self.parquet_out {
                None => None,
                Some(path) => Some(ParquetOutOptions {
                    path: path.clone(),
                    schema: self.parquet_schema,
                    date: match self.parquet_schema {
                        ParquetSchema::Bbo => None,
                        ParquetSchema::Mbp10 => Some(self.session_date()?),
                    },
                }),
            },
        })
    }
}

/// Runs the `replay` command. Before anything is opened it refuses an output over the input
/// or another output, in a folder that does not exist, or that the input cannot give (a DBN
/// input's ITCH-only outputs); what it says without refusing (a `--threads` not used, a
/// `--symbols` the day never listed, a threaded replay's loss) goes to `note`, one line
/// each. An output that fails is named by its flag.
///
/// # Errors
///
/// A refusal ([`ReplayError::Unwritable`], a [`ReplayError::PathClash`], a missing session
/// date, …) or the replay's own error.
pub fn run_replay(request: &ReplayRequest, note: &mut dyn FnMut(String)) -> Result<ReplayRun> {
    let outputs = request.outputs();
    // Before anything is opened: an output over the input truncates what is being read.
    check_output_paths(&request.input, &outputs).map_err(ReplayError::from)?;
    if let Some(unwritable) = unwritable_output(&outputs) {
        return Err(ReplayError::Unwritable(unwritable).into());
    }
    if request.paced.is_some() && request.chunks.is_some() {
        return Err(ReplayError::Unsupported(
            "a paced replay hands its rows to the pipeline, not to a consumer in chunks",
        )
        .into());
    }
    if let Some(refused) = refuse_tables(request) {
        return Err(ReplayError::Unsupported(refused).into());
    }
    let filter = OutputFilter::parse(&request.symbols, &request.between)?;
    // A DBN input refuses the ITCH-only outputs before any date is looked for (the reason is
    // the input, not a missing --date), and brings its own session date (its metadata).
    refuse_what_needs_itch(
        &request.input,
        request.dbn_out.is_some(),
        request
            .parquet_out
            .as_deref()
            .map(|p| (p, request.parquet_schema)),
    )?;
    if is_dbn_input(&request.input) && request.threads > 1 {
        // Said, not refused: the outputs are the same either way, only slower.
        note(format!(
            "note: a DBN input replays on one book thread; --threads {} is not used",
            request.threads
        ));
    }
    let opts = request.options(filter.clone())?;
    let named = |e| name_the_output(e, &outputs);
    match &request.paced {
        None if request.threads > 1 => {
            let outcome = replay_file_threaded(&opts, request.threads).map_err(named)?;
            if outcome.summary.error.is_none() {
                warn_unlisted_symbols(&filter, &outcome.books, note);
            }
            if outcome.summary.declared_lost_messages() > 0 {
                note(format!(
                    "warning: --threads {}: after a declared loss the outputs may depart from \
                     one thread's (an add reusing a reference whose delete was lost is applied \
                     by its own stock's thread, where one thread rejects it); --threads 1 \
                     keeps one set of books",
                    request.threads
                ));
            }
            Ok(ReplayRun {
                summary: outcome.summary,
                paced: None,
                books: outcome.books,
            })
        }
        None => {
            let outcome = replay_file(&opts).map_err(named)?;
            if outcome.summary.error.is_none() {
                warn_unlisted_symbols(&filter, std::slice::from_ref(&outcome.books), note);
            }
            if let Some(mbo) = outcome.summary.dbn.as_ref().map(|d| d.mbo) {
                if mbo.started_mid_day() {
                    // Said quiet or not: the outputs hold books that may lack orders.
                    note(format!(
                        "warning: {} starts mid-day without a snapshot: {} records named \
                         orders from before it, so every book may lack orders",
                        request.input.display(),
                        group(mbo.unknown_orders)
                    ));
                }
            }
            Ok(ReplayRun {
                summary: outcome.summary,
                paced: None,
                books: vec![outcome.books],
            })
        }
        Some(paced) => {
            let target = paced.snapshot.as_ref().map(|path| SnapshotTarget {
                path: path.clone(),
                capacity: 16_384,
                depth: request.depth.min(64),
            });
            let pipeline = PipelineConfig {
                wait: paced.wait,
                reader_core: paced.reader_core,
                book_core: paced.book_core,
                books: opts.books,
                ..PipelineConfig::default()
            };
            let outcome =
                replay_paced(&opts, paced.pace, pipeline, target.as_ref()).map_err(named)?;
            // A stage with no samples (intended times at `--pace max`, where nothing is
            // scheduled) says nothing rather than a line of zeros.
            let latency = outcome.latency.into_iter().filter(|(_, p)| p.count > 0);
            Ok(ReplayRun {
                summary: outcome.summary,
                paced: Some(PacedFigures {
                    latency: latency.collect(),
                    overload: outcome.overload,
                }),
                books: Vec::new(),
            })
        }
    }
}

/// Why the tables in chunks asked for cannot come from this replay, if they cannot: the
/// trades, order events and status messages are taken on the one book thread of an ITCH
/// input as it applies each message.
fn refuse_tables(request: &ReplayRequest) -> Option<&'static str> {
    let tapped = request
        .chunks
        .as_ref()
        .is_some_and(|c| c.tables.any_tapped());
    if !tapped {
        return None;
    }
    if is_dbn_input(&request.input) {
        return Some(
            "the trades, orders and status tables come from ITCH; a DBN MBO input's order \
             events are its records (read it with databento-dbn), and it has no status \
             messages",
        );
    }
    (request.threads > 1).then_some(
        "the trades, orders and status tables come from one book thread: use threads=1 \
         (the bbo and depth tables take any)",
    )
}

/// Exit status 3's reason, for stderr (said there too, quiet or not: a caller that keeps
/// only stderr learns why the status is not 0); `None` when nothing was declared lost.
pub fn declared_lost_line(input: &Path, summary: &ReplaySummary) -> Option<String> {
    let lost = summary.declared_lost_messages();
    (summary.exit_status() == crate::exit_status::ExitStatus::DeclaredLost).then(|| {
        let gaps = summary.packets.as_ref().map_or(0, |p| p.gaps);
        format!(
            "{}: {} messages declared lost in {} sequence gaps (exit 3; the summary lists the \
             ranges)",
            input.display(),
            group(lost),
            group(gaps)
        )
    })
}

/// The first output that names a folder, or whose folder does not exist, said with its
/// flag: every output is created only after the input is read, so this is told before
/// anything runs.
fn unwritable_output(outputs: &[(&str, &Path)]) -> Option<String> {
    outputs.iter().find_map(|&(flag, path)| {
        if path.is_dir() {
            return Some(format!(
                "{flag} {}: is a folder; name a file in it",
                path.display()
            ));
        }
        let folder = path.parent().filter(|p| !p.as_os_str().is_empty())?;
        (!folder.is_dir()).then(|| {
            format!(
                "{flag} {}: the folder {} does not exist",
                path.display(),
                folder.display()
            )
        })
    })
}

/// An output that could not be created or written, named by its flag as well as its path.
fn name_the_output(error: ReplayError, outputs: &[(&'static str, &Path)]) -> anyhow::Error {
    let flag = match &error {
        ReplayError::Output { path, .. } => outputs
            .iter()
            .find(|(_, p)| *p == path.as_path())
            .map(|(flag, _)| *flag),
        ReplayError::Snapshot(_) => Some("--snapshot"),
        ReplayError::Sample(_) => Some("--sample-out"),
        _ => None,
    };
    match flag {
        Some(flag) if !error.to_string().contains(flag) => anyhow::Error::new(error).context(flag),
        _ => error.into(),
    }
}

/// `--symbols` that the input's stock directory never listed: a warning, not an error, since
/// one list serves many days and a stock may not trade on one of them (an IPO, a delisting);
/// the warning shows a typo.
fn warn_unlisted_symbols(filter: &OutputFilter, parts: &[Books], note: &mut dyn FnMut(String)) {
    if !filter.has_symbols() {
        return;
    }
    let listed: HashSet<&[u8]> = parts
        .iter()
        .flat_map(|books| (0..=u16::MAX).map(|l| books.symbol(Locate(l))))
        .filter(|s| !s.is_empty())
        .collect();
    let missing: Vec<String> = filter
        .symbols()
        .into_iter()
        .filter(|s| !listed.contains(s.as_bytes()))
        .collect();
    if !missing.is_empty() {
        note(format!(
            "warning: --symbols {}: not in the input's stock directory; their rows are empty",
            missing.join(",")
        ));
    }
}
