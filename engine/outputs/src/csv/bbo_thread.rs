//! The top-of-book stream written by a thread of its own.
//!
//! Formatting text is derived work: the book thread only copies each changed top of book
//! (one cache line) into the `writer_thread` hand-off, and the writer thread filters,
//! formats and writes it. The book thread never waits on the disk, and with two cores the
//! two halves run side by side.

use std::io::{self, Write};

use super::bbo_csv::BboCsvWriter;
use crate::output_filter::OutputFilter;
use crate::writer_thread::{RowWriter, WriterThread};
use ticklane_book::{BboRow, BboSink};

/// Ring slots (64 bytes each: 4 MiB).
pub const BBO_RING_SLOTS: usize = 1 << 16;

/// What the writer thread does with each row for `--bbo-out`: keeps the rows `filter` keeps
/// (`--symbols`, `--between`) and writes them as CSV. The sink is boxed: the writer hands it
/// whole buffers, so one indirect call per buffer costs nothing that shows.
pub struct FilteredBboCsv {
    csv: BboCsvWriter<Box<dyn Write + Send>>,
    filter: OutputFilter,
}

impl FilteredBboCsv {
    /// Writes the header to `sink` now; the rows `filter` keeps follow.
    ///
    /// # Errors
    ///
    /// Whatever `sink` returns for the header.
    pub fn new<W: Write + Send + 'static>(sink: W, filter: OutputFilter) -> io::Result<Self> {
        let sink: Box<dyn Write + Send> = Box::new(sink);
        Ok(FilteredBboCsv {
            csv: BboCsvWriter::new(sink)?,
            filter,
        })
    }
}

impl RowWriter<BboRow> for FilteredBboCsv {
    type Output = ();
    type Error = io::Error;

    #[inline]
    fn write_row(&mut self, row: &BboRow) -> io::Result<()> {
        if self.filter.keeps_all()
            || self
                .filter
                .keeps(row.symbol_trimmed(), ticklane_itch::Nanos(row.timestamp_ns))
        {
            self.csv.write_row(row)?;
        }
        Ok(())
    }

    fn finish(self) -> io::Result<()> {
        self.csv.finish()
    }
}

/// The book thread's half of `--bbo-out`: rows go to the writer thread in batches.
pub struct ThreadedBboSink(WriterThread<BboRow, FilteredBboCsv>);

impl ThreadedBboSink {
    /// Starts the writer thread, which writes the header and then every row to `sink` as CSV.
    ///
    /// # Errors
    ///
    /// If the thread cannot be started or the header written.
    pub fn spawn<W: Write + Send + 'static>(sink: W) -> io::Result<Self> {
        Self::spawn_filtered(sink, OutputFilter::default())
    }

    /// [`ThreadedBboSink::spawn`] writing only the rows `filter` keeps (`--symbols`,
    /// `--between`): the writer thread filters, so the book thread pays nothing for it.
    ///
    /// # Errors
    ///
    /// If the thread cannot be started or the header written.
    pub fn spawn_filtered<W: Write + Send + 'static>(
        sink: W,
        filter: OutputFilter,
    ) -> io::Result<Self> {
        let csv = FilteredBboCsv::new(sink, filter)?;
        WriterThread::spawn("bbo-writer", BBO_RING_SLOTS, csv).map(ThreadedBboSink)
    }
}

impl BboSink for ThreadedBboSink {
    #[inline]
    fn write_row(&mut self, row: &BboRow) -> io::Result<()> {
        self.0.push(*row).map_err(io::Error::from)
    }

    fn finish(self) -> io::Result<()> {
        self.0.finish()
    }
}
