//! `ticklane book --snapshot PATH (STOCK | --csv)`.

use std::io::{BufWriter, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::csv::export_snapshot_book_csv;
use crate::snapshot::{wall_clock_ns, SnapshotReader};
use crate::views::{book_csv_warning, write_book_view, ExitStatus};

/// What `book` shows.
#[derive(Clone, Debug)]
pub struct BookRequest {
    /// The snapshot file the engine writes.
    pub snapshot: PathBuf,
    /// The stock to show (its symbol); `None` with `csv`.
    pub stock: Option<String>,
    /// Every book as CSV, in exactly the `replay --book-out` format.
    pub csv: bool,
    /// Levels per side (default: all the snapshot keeps).
    pub depth: Option<usize>,
}

/// Prints one book's view, or every readable book as CSV, to `out`; what is not right (a
/// depth above the snapshot's, a stock not in it, a torn slot, a stale or flagged file) to
/// `err`. A torn slot or an unknown stock fails the command (exit 1).
///
/// # Errors
///
/// The snapshot cannot be opened or read, or a stream fails.
pub fn print_book(
    request: &BookRequest,
    out: impl Write,
    err: &mut impl Write,
) -> Result<ExitStatus> {
    let reader = SnapshotReader::open(&request.snapshot)?;
    let depth = match request.depth {
        Some(asked) if asked > reader.depth() => {
            writeln!(
                err,
                "ticklane: the snapshot keeps {} levels per side; showing {}",
                reader.depth(),
                reader.depth()
            )?;
            reader.depth()
        }
        Some(asked) => asked,
        None => reader.depth(),
    };
    if request.csv {
        // Every readable book is written; a torn slot is named and fails the command.
        let mut export = export_snapshot_book_csv(&reader, depth, BufWriter::new(out))?;
        export.sink.flush().context("writing to stdout")?;
        for slot in &export.unreadable {
            writeln!(err, "ticklane: {slot}")?;
        }
        if let Some(warning) = book_csv_warning(&reader.header(), &export.flagged, wall_clock_ns())
        {
            writeln!(
                err,
                "ticklane: warning: {}: {warning}",
                request.snapshot.display()
            )?;
        }
        return Ok(if export.unreadable.is_empty() {
            ExitStatus::Success
        } else {
            ExitStatus::Failure
        });
    }
    let stock = request.stock.as_deref().unwrap_or_default();
    let Some(slot) = reader.find(stock.as_bytes()) else {
        writeln!(
            err,
            "ticklane: {stock} is not in {} ({} instruments)",
            request.snapshot.display(),
            reader.slots().len()
        )?;
        return Ok(ExitStatus::Failure);
    };
    let state = reader
        .read(slot)
        .with_context(|| format!("reading {stock}"))?;
    let mut out = BufWriter::new(out);
    write_book_view(&mut out, &reader.header(), &state, depth, wall_clock_ns())?;
    out.flush()?;
    Ok(ExitStatus::Success)
}
