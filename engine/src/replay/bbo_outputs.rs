//! Where a file replay's top-of-book rows go: the CSV (on its writer thread) and the Parquet
//! file (`--parquet-schema bbo`), both fed by the one tracker in `book::Applier`, so both
//! hold the same rows.

use std::io;

use crate::book::{BboRow, BboSink};
use crate::csv::ThreadedBboSink;
use crate::parquet_out::BboParquet;

/// The top-of-book outputs of one replay.
pub(super) struct BboOutputs {
    pub csv: Option<ThreadedBboSink>,
    pub parquet: Option<BboParquet>,
}

impl BboOutputs {
    /// Whether any output wants rows.
    pub fn any(&self) -> bool {
        self.csv.is_some() || self.parquet.is_some()
    }

    /// Finishes the CSV and hands back the Parquet writer, whose footer waits for the
    /// summary.
    ///
    /// # Errors
    ///
    /// Whatever the CSV writer returns.
    pub fn finish_csv(self) -> io::Result<Option<BboParquet>> {
        if let Some(csv) = self.csv {
            csv.finish()?;
        }
        Ok(self.parquet)
    }
}

impl BboSink for BboOutputs {
    #[inline]
    fn write_row(&mut self, row: &BboRow) -> io::Result<()> {
        if let Some(csv) = &mut self.csv {
            csv.write_row(row)?;
        }
        if let Some(parquet) = &mut self.parquet {
            parquet.push(row).map_err(io::Error::other)?;
        }
        Ok(())
    }

    /// Finishes the CSV only: a Parquet file closed here would lack its provenance, so the
    /// replay takes the sinks apart with `Applier::into_parts` and closes it itself.
    fn finish(self) -> io::Result<()> {
        self.finish_csv().map(drop)
    }
}
