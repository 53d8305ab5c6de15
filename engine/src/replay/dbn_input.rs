//! `ticklane replay FILE.dbn[.zst]`: Databento MBO records through the same books and the
//! same outputs as an ITCH replay (the mapping is in [`crate::book::MboApplier`]).

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::time::Instant;

use ticklane_feed::capture::{detect, DbnItem, DbnMboReader, InputFormat};

use super::fault::ReplayFault;
use super::run::{
    output, write_output_file, write_summary_json, ReplayError, ReplayOptions, ReplayOutcome,
};
use super::summary::{DbnCounts, ReplaySummary};
use crate::book::{MboApplier, TypeCounts};
use crate::csv::{write_book_csv, ThreadedBboSink};

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
/// As [`super::replay_file`].
pub(super) fn replay_dbn(
    opts: &ReplayOptions,
    format: InputFormat,
) -> Result<ReplayOutcome, ReplayError> {
    let started = Instant::now();
    let mut reader = DbnMboReader::open(&opts.input)?;
    let bbo_error = |source| ReplayError::Output {
        path: opts.bbo_out.clone().unwrap_or_default(),
        source,
    };
    let bbo = match &opts.bbo_out {
        Some(path) => Some(ThreadedBboSink::spawn(output(path)?).map_err(bbo_error)?),
        None => None,
    };
    let mut mbo = MboApplier::new(opts.books, bbo).map_err(ReplayError::Books)?;
    for &(instrument_id, symbol) in reader.symbols() {
        mbo.set_symbol(instrument_id, symbol);
    }
    let mut error = None;
    loop {
        match reader.next_item() {
            Ok(Some(DbnItem::Mbo(record))) => {
                mbo.step(&record).map_err(bbo_error)?;
            }
            Ok(Some(DbnItem::Symbol {
                instrument_id,
                symbol,
            })) => mbo.set_symbol(instrument_id, symbol),
            Ok(None) => break,
            Err(e) => {
                error = Some(ReplayFault::Input(e));
                break;
            }
        }
    }
    let counts = DbnCounts {
        reader: reader.stats(),
        mbo: mbo.counts(),
    };
    let bbo_rows = mbo.bbo_rows();
    let books = mbo.finish().map_err(bbo_error)?;
    let elapsed_s = started.elapsed().as_secs_f64();
    write_output_file(opts.book_out.as_ref(), |out| {
        write_book_csv(&books, opts.depth, out)
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
    write_summary_json(opts, &summary)?;
    Ok(ReplayOutcome { summary, books })
}
