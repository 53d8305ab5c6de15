//! `ticklane replay FILE.dbn[.zst]`: Databento MBO records through the same books and the
//! same outputs as an ITCH replay (the mapping is in [`crate::book::MboApplier`]): the
//! top-of-book stream (CSV, and Parquet `bbo`), the final depth, the sampled depth, each
//! filtered by `--symbols` and `--between`, all stamped in ITCH time (ns since the
//! session's New York midnight, [`super::dbn_session`]). `--dbn-out` and Parquet `mbp-10`
//! are refused: they are written from ITCH messages, which a DBN input does not have.
//!
//! ```text
//! ticklane replay tests/data/dbn/test_data.mbo.v3.dbn.zst --book-out book.csv --depth 5 --summary-json summary.json
//! ```
//!
//! - Symbols come from the metadata's symbol mappings and from symbol mapping records, cut
//!   to ITCH's 8 bytes (counted: `long_symbols`). An `instrument_id` past the book capacity
//!   is rejected as an ITCH stock's would be (`rejected_by_reason.book_capacity`). Trading
//!   states are not read from DBN.
//! - In `--bbo-out` a row is written once per event, at the record flagged `F_LAST`, and
//!   `msg_index` is that record's `sequence` (for a file `--dbn-out` wrote from an ITCH50
//!   file, the ITCH message index, so the rows are the ITCH replay's). A file written by
//!   `--dbn-out` from one ITCH day replays to that day's `--bbo-out`, `--book-out`,
//!   `--sample-out` (CSV) and Parquet `bbo` byte for byte (`tests/tests/it/dbn_round_trip.rs`).
//! - A file cut inside a record, a cut zstd stream or a record the decoder rejects stops the
//!   replay with an error naming the file, the decompressed byte offset and the record index
//!   (exit 1); so does a file that ends between two records of one event (no `F_LAST` after
//!   them). The records of the event the input ends inside are not applied, so every output
//!   shows the books as of the last whole event, and the summary counts them
//!   (`dbn.incomplete_event_records`).
//! - An input that opens with a book snapshot (Databento's: per instrument a clear, then
//!   each resting order as an Add, all flagged `F_SNAPSHOT`) builds its books from it, as a
//!   live stream with `snapshot=1` would. One that does not, and whose Cancel or Modify
//!   records name orders it never added, started mid-day: its books lack what rested
//!   before it. That is said on stderr and in the summary (`dbn.started_mid_day`, with the
//!   records that named such orders), quiet or not; the exit status stays 0, since the file
//!   was read whole and nothing it holds was lost.
//! - Records are read 16 ahead and prefetched for as ITCH messages are. A DBN input replays
//!   on one thread whatever `--threads` says (with a note on stderr), and `--pace` does not
//!   read DBN.

use std::collections::VecDeque;
use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::time::Instant;

use ticklane_feed::capture::{detect, CaptureError, DbnItem, DbnMboReader, InputFormat, MboRecord};

use super::bbo_outputs::ThreadedBboOutputs;
use super::dbn_session::{session_of_instant, SessionSpan};
use super::fault::ReplayFault;
use super::run::{
    bbo_outputs, finish_sample, finish_sample_unless_kept, open_sampler, provenance,
    write_output_file, write_summary_json, ReplayError, ReplayOptions, ReplayOutcome,
};
use super::summary::{DbnCounts, ReplaySummary};
use crate::book::{
    MboApplier, Touches, TouchesAhead, TypeCounts, F_LAST, PREFETCH_FAR, PREFETCH_MID,
    PREFETCH_NEAR,
};
use crate::csv::write_book_csv_filtered;
use crate::parquet_out::{BboParquet, ParquetOutError, ParquetSchema};

/// `Dbn` or `ZstdDbn` if `path` starts like DBN. A file that cannot be read is not DBN,
/// so the capture reader reports why it cannot be opened.
pub(super) fn dbn_format(path: &Path) -> Option<InputFormat> {
    let mut head = [0u8; 4];
    let got = File::open(path)
        .and_then(|mut file| {
            let mut got = 0;
            while got < head.len() {
                match file.read(&mut head[got..])? {
                    0 => break,
                    n => got += n,
                }
            }
            Ok(got)
        })
        .unwrap_or(0);
    let format = detect(&head[..got]);
    matches!(format, InputFormat::Dbn | InputFormat::ZstdDbn).then_some(format)
}

/// Replays a DBN MBO file. Everything before an input error is applied and reported in the
/// summary's `error`, as for ITCH inputs.
///
/// # Errors
///
/// As [`super::replay_file`]; [`ReplayError::Unsupported`] (a usage error) for `--dbn-out`,
/// and [`ParquetOutError::NotFromDbnInput`] for Parquet `mbp-10`.
pub(super) fn replay_dbn(
    opts: &ReplayOptions,
    format: InputFormat,
) -> Result<ReplayOutcome, ReplayError> {
    refuse_for_dbn(
        opts.dbn_out.is_some(),
        opts.parquet_out
            .as_ref()
            .map(|p| (p.path.as_path(), p.schema)),
    )?;
    let started = Instant::now();
    let mut reader = DbnMboReader::open(&opts.input)?;
    let provenance = provenance(opts)?;
    let bbo_error = |source| ReplayError::Output {
        path: opts.bbo_out.clone().unwrap_or_default(),
        source,
    };
    let parquet = match &opts.parquet_out {
        Some(p) => Some(BboParquet::create(&p.path)?),
        None => None,
    };
    let bbo = bbo_outputs(opts, parquet)?;
    let mut mbo = MboApplier::new(opts.books, bbo).map_err(ReplayError::Books)?;
    for &(instrument_id, symbol) in reader.symbols() {
        mbo.set_symbol(instrument_id, symbol);
    }
    let mut error = None;
    // The session: --date, else the metadata's start, else the first record's ts_event (read
    // ahead here, applied first below).
    let mut first = None;
    // Items are read a few ahead of the one applied, so the books can prefetch for them;
    // a symbol mapping still takes effect in its place among the records.
    let mut ahead = ReadAhead::default();
    let session_date = match opts.date.or_else(|| session_of_instant(reader.start())) {
        Some(date) => Some(date),
        None => match next_record(&mut ahead, &mut reader, &mut mbo) {
            Ok(Some(record)) => {
                first = Some(record);
                session_of_instant(record.ts_event)
            }
            Ok(None) => None,
            Err(e) => {
                error = Some(ReplayFault::Input(e));
                None
            }
        },
    };
    if let (Some(chunks), Some(date)) = (&opts.chunks, session_date) {
        // Rows in chunks carry no date: say which midnight their stamps count from.
        let _ = chunks.midnight_utc_ns.set(date.midnight_utc_ns());
    }
    let span = session_date.map(SessionSpan::of);
    if let Some(span) = span {
        mbo.set_session(span.midnight_ns, span.next_midnight_ns);
    }
    let mut sample = match &opts.sample {
        Some(o) => {
            let mut o = o.clone();
            o.date = session_date.or(o.date);
            Some(open_sampler(&o, &opts.filter)?)
        }
        None => None,
    };
    let mut last_sequence = 0u64;
    let mut apply = |mbo: &mut MboApplier<ThreadedBboOutputs>, record: &MboRecord| {
        last_sequence = u64::from(record.sequence);
        // A boundary is the books just before the first record at or past it.
        if let (Some(s), Some(at)) = (&mut sample, mbo.time_of_day(record.ts_event)) {
            s.before(last_sequence.max(1), mbo.books(), at);
        }
        mbo.step(record).map(drop)
    };
    if let Some(record) = first {
        apply(&mut mbo, &record).map_err(bbo_error)?;
    }
    while error.is_none() {
        match next_record(&mut ahead, &mut reader, &mut mbo) {
            Ok(Some(record)) => {
                if mbo.books().worth_prefetching() {
                    mbo.prefetch(ahead.touches_ahead());
                }
                apply(&mut mbo, &record).map_err(bbo_error)?;
            }
            Ok(None) => break,
            Err(e) => error = Some(ReplayFault::Input(e)),
        }
    }
    // The file covers up to its metadata's end (exclusive): sample through its last
    // nanosecond, as an ITCH replay samples through its last message (the metadata ticklane
    // writes ends just after the last message's timestamp).
    if let (Some(s), Some(end), None) = (&mut sample, reader.end(), &error) {
        if let Some(at) = mbo.time_of_day(end.saturating_sub(1)) {
            s.before(last_sequence.saturating_add(1), mbo.books(), at);
        }
    }
    let counts = DbnCounts {
        reader: reader.stats(),
        mbo: mbo.counts(),
        session_date,
        incomplete_event_records: ahead.held_back,
    };
    // Counted after the last row is out, so the summary says what the file holds.
    mbo.end_of_input().map_err(bbo_error)?;
    let bbo_rows = mbo.bbo_rows();
    let (books, bbo) = mbo.into_parts().map_err(bbo_error)?;
    let parquet = bbo.map(ThreadedBboOutputs::finish).transpose()?.flatten();
    let sample = finish_sample_unless_kept(sample.map(crate::sample::Sampler::into_writer))?;
    let elapsed_s = started.elapsed().as_secs_f64();
    write_output_file(opts.book_out.as_ref(), |out| {
        write_book_csv_filtered(&books, opts.depth, &opts.filter, out)
    })?;
    let summary = ReplaySummary {
        input: opts.input.display().to_string(),
        format: Some(format),
        messages: counts.mbo.records,
        by_type: TypeCounts::default(),
        unknown_types: 0,
        book: books.counters(),
        crossed_books_end: books.crossed_books() as u64,
        live_orders_end: books.live_orders() as u64,
        bbo_rows,
        elapsed_s,
        packets: None,
        dbn: Some(counts),
        dbn_out_records: None,
        no_messages: None,
        error,
    };
    finish_sample(sample, provenance.as_ref(), &summary, opts)?;
    if let (Some(p), Some(provenance), Some(out)) = (&opts.parquet_out, &provenance, parquet) {
        out.close(provenance.footer(p.schema.name(), &summary.to_json(), &opts.filter))?;
    }
    write_summary_json(opts, &summary)?;
    Ok(ReplayOutcome { summary, books })
}

/// Whether `input` is a DBN file (plain or zstd), by its first bytes.
pub fn is_dbn_input(input: &Path) -> bool {
    dbn_format(input).is_some()
}

/// Refuses, for a DBN `input`, the outputs written from ITCH messages: `--dbn-out` (when
/// `dbn_out`) and a Parquet view other than `bbo` (`parquet`: its path and view). The
/// command line asks this before it looks for a session date, so that the reason given is
/// the real one and not a missing `--date`.
///
/// # Errors
///
/// [`ReplayError::Unsupported`] for `--dbn-out`, [`ParquetOutError::NotFromDbnInput`] for
/// Parquet `mbp-10` (both usage errors).
pub fn refuse_what_needs_itch(
    input: &Path,
    dbn_out: bool,
    parquet: Option<(&Path, ParquetSchema)>,
) -> Result<(), ReplayError> {
    if !is_dbn_input(input) {
        return Ok(());
    }
    refuse_for_dbn(dbn_out, parquet)
}

/// [`refuse_what_needs_itch`] for an input known to be DBN.
fn refuse_for_dbn(
    dbn_out: bool,
    parquet: Option<(&Path, ParquetSchema)>,
) -> Result<(), ReplayError> {
    if dbn_out {
        return Err(ReplayError::Unsupported(
            "--dbn-out reads ITCH inputs: a DBN input is DBN already (its MBP views are not written from MBO yet)",
        ));
    }
    match parquet {
        Some((path, schema)) if schema != ParquetSchema::Bbo => {
            Err(ReplayError::Parquet(ParquetOutError::NotFromDbnInput {
                path: path.to_path_buf(),
            }))
        }
        _ => Ok(()),
    }
}

/// Items a DBN input is read ahead while no `F_LAST` record is among them: the records of
/// the longest event that is applied only once it is whole. Databento's events are a few
/// records; the longest, a book snapshot, has one per resting order of one instrument. An
/// event longer than this is applied as it is read.
const MAX_EVENT_ITEMS: usize = 1 << 20;

/// The items of a DBN input read ahead of the one being applied: as many as the farthest
/// prefetch stage looks (allocated once), and further until the event being read is whole
/// (its `F_LAST` record read); and how the input ended once that was read, which is
/// reported only after every item before it.
///
/// An event the input ends inside is not applied: its MBO records are held back and
/// counted ([`ReadAhead::held_back`]), so every output shows the book as the venue last
/// published it, not one made of half an event (a replace's cancel without its add).
struct ReadAhead {
    items: VecDeque<DbnItem>,
    /// How many items at the front end with an `F_LAST` record (whole events); 0 when no
    /// `F_LAST` record is among them.
    whole: usize,
    /// `Some(Ok(()))` at the input's end, `Some(Err(_))` at a read error, until reported.
    ended: Option<Result<(), CaptureError>>,
    /// MBO records of an event the input ended inside: not applied.
    held_back: u64,
}

impl Default for ReadAhead {
    fn default() -> Self {
        ReadAhead {
            items: VecDeque::with_capacity(PREFETCH_FAR + 1),
            whole: 0,
            ended: None,
            held_back: 0,
        }
    }
}

impl ReadAhead {
    /// The next item, in input order; the input's error once the items before it are out.
    fn next(&mut self, reader: &mut DbnMboReader) -> Result<Option<DbnItem>, CaptureError> {
        while self.ended.is_none()
            && (self.items.len() <= PREFETCH_FAR
                || (self.whole == 0 && self.items.len() < MAX_EVENT_ITEMS))
        {
            match reader.next_item() {
                Ok(Some(item)) => {
                    let last = matches!(&item, DbnItem::Mbo(r) if r.flags & F_LAST != 0);
                    self.items.push_back(item);
                    if last {
                        self.whole = self.items.len();
                    }
                }
                Ok(None) => self.ended = Some(Ok(())),
                Err(e) => self.ended = Some(Err(e)),
            }
        }
        if self.whole == 0 && self.ended.is_some() {
            // The input ended before this event's F_LAST: its records are held back. A symbol
            // mapping among them changes no book and still takes effect.
            while let Some(item) = self.items.pop_front() {
                match item {
                    DbnItem::Mbo(_) => self.held_back += 1,
                    symbol @ DbnItem::Symbol { .. } => return Ok(Some(symbol)),
                }
            }
        }
        match self.items.pop_front() {
            Some(item) => {
                self.whole = self.whole.saturating_sub(1);
                Ok(Some(item))
            }
            None => match self.ended.replace(Ok(())) {
                Some(Err(e)) => Err(e),
                _ => Ok(None),
            },
        }
    }

    /// What the records `PREFETCH_FAR`, `PREFETCH_MID` and `PREFETCH_NEAR` items after the
    /// one [`ReadAhead::next`] gave last will touch.
    fn touches_ahead(&self) -> TouchesAhead {
        let touches = |d: usize| match self.items.get(d - 1) {
            Some(DbnItem::Mbo(record)) => Touches::of_mbo(record),
            _ => Touches::Nothing,
        };
        TouchesAhead {
            far: touches(PREFETCH_FAR),
            mid: touches(PREFETCH_MID),
            near: touches(PREFETCH_NEAR),
        }
    }
}

/// The next MBO record, naming instruments from the symbol mapping records on the way.
fn next_record(
    ahead: &mut ReadAhead,
    reader: &mut DbnMboReader,
    mbo: &mut MboApplier<ThreadedBboOutputs>,
) -> Result<Option<MboRecord>, ticklane_feed::capture::CaptureError> {
    loop {
        match ahead.next(reader)? {
            Some(DbnItem::Mbo(record)) => return Ok(Some(record)),
            Some(DbnItem::Symbol {
                instrument_id,
                symbol,
            }) => mbo.set_symbol(instrument_id, symbol),
            None => return Ok(None),
        }
    }
}
