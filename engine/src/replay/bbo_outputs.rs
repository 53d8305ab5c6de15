//! Where a file replay's top-of-book rows go: the CSV (`--bbo-out`) and the Parquet file
//! (`--parquet-schema bbo`), both fed by the one tracker in `book::Applier`, so both hold the
//! same rows.
//!
//! One hand-off for both: the book thread copies each row once into one ring, and one writer
//! thread filters it once and hands it to each output. Two hand-offs would copy every row
//! twice on the book thread and run three threads on a 2-core machine, to overlap two
//! writers that each take less than the book thread does.

use std::io;
use std::path::PathBuf;

use ticklane_feed::itch::Nanos;

use super::run::ReplayError;
use crate::book::{BboRow, BboSink};
use crate::csv::{FilteredBboCsv, BBO_RING_SLOTS};
use crate::output_filter::OutputFilter;
use crate::parquet_out::BboParquet;
use crate::row_chunks::ChunkSink;
use crate::writer_thread::{RowWriter, WriterThread};

/// The top-of-book outputs of one replay, as the writer thread holds them.
pub(super) struct BboOutputs {
    /// The CSV and its path (for errors); it filters nothing itself (the filter is here).
    pub csv: Option<(FilteredBboCsv, PathBuf)>,
    pub parquet: Option<BboParquet>,
    /// The rows in chunks, for a consumer in this process.
    pub chunks: Option<ChunkSink<BboRow>>,
    /// `--symbols`/`--between`: the rows every output keeps.
    pub filter: OutputFilter,
}

impl BboOutputs {
    /// Whether any output wants rows.
    pub fn any(&self) -> bool {
        self.csv.is_some() || self.parquet.is_some() || self.chunks.is_some()
    }

    /// Starts the writer thread.
    ///
    /// # Errors
    ///
    /// If it cannot be started.
    pub fn spawn(self) -> io::Result<ThreadedBboOutputs> {
        WriterThread::spawn("bbo-writer", BBO_RING_SLOTS, self).map(ThreadedBboOutputs)
    }
}

impl RowWriter<BboRow> for BboOutputs {
    /// The Parquet writer, whose footer waits for the replay's summary.
    type Output = Option<BboParquet>;
    type Error = ReplayError;

    #[inline]
    fn write_row(&mut self, row: &BboRow) -> Result<(), ReplayError> {
        if !self.filter.keeps_all()
            && !self
                .filter
                .keeps(row.symbol_trimmed(), Nanos(row.timestamp_ns))
        {
            return Ok(());
        }
        if let Some((csv, path)) = &mut self.csv {
            csv.write_row(row).map_err(|source| ReplayError::Output {
                path: path.clone(),
                source,
            })?;
        }
        if let Some(parquet) = &mut self.parquet {
            parquet.push(row)?;
        }
        if let Some(chunks) = &mut self.chunks {
            chunks.push(*row).map_err(ReplayError::Consumer)?;
        }
        Ok(())
    }

    fn finish(self) -> Result<Option<BboParquet>, ReplayError> {
        if let Some((csv, path)) = self.csv {
            csv.finish()
                .map_err(|source| ReplayError::Output { path, source })?;
        }
        if let Some(chunks) = self.chunks {
            chunks.finish().map_err(ReplayError::Consumer)?;
        }
        Ok(self.parquet)
    }
}

/// The book thread's half: what `Applier` sends rows to.
pub(super) struct ThreadedBboOutputs(WriterThread<BboRow, BboOutputs>);

impl ThreadedBboOutputs {
    /// Waits for the writer to write every row; hands back the Parquet writer (its footer
    /// waits for the summary).
    ///
    /// # Errors
    ///
    /// The first error an output met.
    pub fn finish(self) -> Result<Option<BboParquet>, ReplayError> {
        self.0.finish()
    }
}

impl BboSink for ThreadedBboOutputs {
    #[inline(always)]
    fn write_row(&mut self, row: &BboRow) -> io::Result<()> {
        self.0.push(*row).map_err(io::Error::from)
    }

    /// Finishes both outputs; a Parquet file closed here would lack its provenance, so the
    /// replay takes the sink back with `Applier::into_parts` and calls
    /// [`ThreadedBboOutputs::finish`] instead.
    fn finish(self) -> io::Result<()> {
        self.0.finish().map(drop).map_err(io::Error::other)
    }
}
