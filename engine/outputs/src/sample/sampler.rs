//! The one-thread sampler: the boundary clock over every message, and at each boundary
//! passed, every stock's row through the [`SampleWriter`].

use std::io::BufWriter;

use ticklane_itch::Nanos;

use super::boundary_clock::{Boundaries, BoundaryClock};
use super::csv_rows::CsvRows;
use super::dbn_rows::DbnRows;
use super::stock_depth::{DepthReader, StockDepth};
use super::{SampleError, SampleOptions, SampleRows};
use crate::output_filter::OutputFilter;
use ticklane_book::Books;

/// Where the rows go.
enum Rows {
    Csv(CsvRows<BufWriter<std::fs::File>>),
    Dbn(Box<DbnRows>),
    Handed(Box<dyn SampleRows>),
}

/// The output of one replay's sampled depth, in any of its formats: takes rows in the
/// order they are to be written (boundary, then locate). The one-thread [`Sampler`] feeds
/// it from the books; the merge thread of `replay --threads` from captured depths.
pub struct SampleWriter {
    rows: Rows,
    /// Rows written so far.
    written: u64,
    /// The first write error; once set, nothing more is written and `finish` returns it.
    error: Option<SampleError>,
}

impl SampleWriter {
    /// A writer to `opts.path`: CSV, or DBN MBP-10 when the name says so.
    ///
    /// # Errors
    ///
    /// If the output cannot be created, or a DBN output lacks its date or asks for more than
    /// ten levels; a Parquet output is refused (it is handed down: [`SampleWriter::with_rows`]).
    pub fn create(opts: &SampleOptions) -> Result<Self, SampleError> {
        if opts.is_parquet() {
            return Err(SampleError::ParquetNotHandedDown {
                path: opts.path.clone(),
            });
        }
        let rows = if opts.is_dbn() {
            Rows::Dbn(Box::new(DbnRows::create(opts)?))
        } else {
            let file = std::fs::File::create(&opts.path).map_err(|source| SampleError::Io {
                path: opts.path.clone(),
                source,
            })?;
            Rows::Csv(CsvRows::new(
                BufWriter::new(file),
                opts.depth,
                opts.path.clone(),
            )?)
        };
        Ok(Self::writing(rows))
    }

    /// A writer through `rows` (a writer of a format this module cannot name, Parquet's).
    pub fn with_rows(rows: Box<dyn SampleRows>) -> Self {
        Self::writing(Rows::Handed(rows))
    }

    fn writing(rows: Rows) -> Self {
        SampleWriter {
            rows,
            written: 0,
            error: None,
        }
    }

    /// Writes `depth`'s row at `boundary`, `applied` messages into the input; after an
    /// error, nothing (`finish` returns it).
    #[inline]
    pub fn row(&mut self, boundary: Nanos, applied: u64, depth: &StockDepth<'_>) {
        if self.error.is_some() {
            return;
        }
        let written = match &mut self.rows {
            Rows::Csv(csv) => csv.row(boundary, depth),
            Rows::Dbn(dbn) => dbn.row(boundary, applied, depth),
            Rows::Handed(rows) => rows.row(boundary, applied, depth),
        };
        match written {
            Ok(()) => self.written += 1,
            Err(e) => self.error = Some(e),
        }
    }

    /// True once a row could not be written.
    pub fn failed(&self) -> bool {
        self.error.is_some()
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.written
    }

    /// Finishes the output, with `metadata` (key, value) for a format that keeps it (a
    /// Parquet footer's provenance); CSV and DBN ignore it. Returns the rows written.
    ///
    /// # Errors
    ///
    /// The first write error, or one from closing the output.
    pub fn finish_with(self, metadata: Vec<(String, String)>) -> Result<u64, SampleError> {
        if let Some(error) = self.error {
            return Err(error);
        }
        match self.rows {
            Rows::Csv(csv) => drop(csv.finish()?),
            Rows::Dbn(dbn) => drop(dbn.finish()?),
            Rows::Handed(rows) => rows.finish(metadata)?,
        }
        Ok(self.written)
    }

    /// True if the output keeps metadata ([`SampleWriter::finish_with`] uses it).
    pub fn keeps_metadata(&self) -> bool {
        matches!(self.rows, Rows::Handed(_))
    }
}

/// Writes the sampled depth of one replay. Call [`Sampler::before`] with the books just
/// before each message is applied, then [`Sampler::finish`].
pub struct Sampler {
    clock: BoundaryClock,
    filter: OutputFilter,
    depth: usize,
    reader: DepthReader,
    writer: SampleWriter,
}

impl Sampler {
    /// A sampler writing to `opts.path`, keeping the rows `filter` keeps.
    ///
    /// # Errors
    ///
    /// As [`SampleWriter::create`].
    pub fn create(opts: &SampleOptions, filter: OutputFilter) -> Result<Self, SampleError> {
        Ok(Self::with_writer(opts, filter, SampleWriter::create(opts)?))
    }

    /// A sampler writing through `rows` (a writer of a format this module cannot name,
    /// Parquet's), keeping the rows `filter` keeps.
    pub fn with_rows(
        opts: &SampleOptions,
        filter: OutputFilter,
        rows: Box<dyn SampleRows>,
    ) -> Self {
        Self::with_writer(opts, filter, SampleWriter::with_rows(rows))
    }

    /// A sampler writing through `writer`, keeping the rows `filter` keeps.
    pub fn with_writer(opts: &SampleOptions, filter: OutputFilter, writer: SampleWriter) -> Self {
        Sampler {
            clock: BoundaryClock::new(opts.interval.nanos(), filter.between()),
            filter,
            depth: opts.depth,
            reader: DepthReader::default(),
            writer,
        }
    }

    /// Notes that message number `index` (1-based), stamped `at`, is about to be applied to
    /// `books`: writes every boundary up to `at` first.
    #[inline]
    pub fn before(&mut self, index: u64, books: &Books, at: Nanos) {
        if let Some(boundaries) = self.clock.passes(at.0) {
            self.write(boundaries, index - 1, books);
        }
    }

    /// Writes `boundaries`, each with the books as they are (nothing has changed between
    /// them: forward fill).
    #[cold]
    fn write(&mut self, boundaries: Boundaries, applied: u64, books: &Books) {
        let locates = books.locates();
        if locates.is_empty() {
            return;
        }
        for boundary in boundaries.iter() {
            if self.writer.failed() {
                return;
            }
            for &locate in &locates {
                if !self.filter.keeps_symbol(books.symbol(locate)) {
                    continue;
                }
                let depth = self.reader.read(books, locate, self.depth);
                self.writer.row(Nanos(boundary), applied, &depth);
            }
        }
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.writer.rows()
    }

    /// Finishes the output: no boundary after the last message's time is written.
    /// Returns the rows written.
    ///
    /// # Errors
    ///
    /// The first write error, or one from closing the output.
    pub fn finish(self) -> Result<u64, SampleError> {
        self.finish_with(Vec::new())
    }

    /// [`Sampler::finish`], with `metadata` for a format that keeps it.
    ///
    /// # Errors
    ///
    /// As [`Sampler::finish`].
    pub fn finish_with(self, metadata: Vec<(String, String)>) -> Result<u64, SampleError> {
        self.writer.finish_with(metadata)
    }

    /// True if the output keeps metadata ([`Sampler::finish_with`] uses it).
    pub fn keeps_metadata(&self) -> bool {
        self.writer.keeps_metadata()
    }

    /// The writer, with every row so far written to it (to finish it later).
    pub fn into_writer(self) -> SampleWriter {
        self.writer
    }
}
