//! The boundary clock: which boundaries a message's timestamp passes, and the rows each one
//! writes.

use std::io::BufWriter;

use ticklane_feed::itch::Nanos;

use super::csv_rows::CsvRows;
use super::dbn_rows::DbnRows;
use super::{SampleError, SampleOptions, SampleRows};
use crate::book::Books;
use crate::output_filter::OutputFilter;

/// Where the rows go.
enum Rows {
    Csv(CsvRows<BufWriter<std::fs::File>>),
    Dbn(Box<DbnRows>),
    Handed(Box<dyn SampleRows>),
}

/// Writes the sampled depth of one replay. Call [`Sampler::before`] with the books just
/// before each message is applied, then [`Sampler::finish`].
pub struct Sampler {
    interval: u64,
    filter: OutputFilter,
    /// The next boundary to write; `None` before the first message.
    next: Option<u64>,
    rows: Rows,
    /// Rows and boundaries written so far.
    written: u64,
    boundaries: u64,
    /// The first write error; once set, nothing more is written and `finish` returns it.
    error: Option<SampleError>,
}

impl Sampler {
    /// A sampler writing to `opts.path`, keeping the rows `filter` keeps.
    ///
    /// # Errors
    ///
    /// If the output cannot be created, or a DBN output lacks its date or asks for more than
    /// ten levels.
    pub fn create(opts: &SampleOptions, filter: OutputFilter) -> Result<Self, SampleError> {
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
        Ok(Self::writing(opts, filter, rows))
    }

    /// A sampler writing through `rows` (a writer of a format this module cannot name,
    /// Parquet's), keeping the rows `filter` keeps.
    pub fn with_rows(
        opts: &SampleOptions,
        filter: OutputFilter,
        rows: Box<dyn SampleRows>,
    ) -> Self {
        Self::writing(opts, filter, Rows::Handed(rows))
    }

    fn writing(opts: &SampleOptions, filter: OutputFilter, rows: Rows) -> Self {
        Sampler {
            interval: opts.interval.nanos(),
            filter,
            next: None,
            rows,
            written: 0,
            boundaries: 0,
            error: None,
        }
    }

    /// Notes that message number `index` (1-based), stamped `at`, is about to be applied to
    /// `books`: writes every boundary up to `at` first.
    #[inline]
    pub fn before(&mut self, index: u64, books: &Books, at: Nanos) {
        match self.next {
            Some(next) if at.0 < next => {}
            // Before the first message no stock has a book: the first boundary that can hold
            // a row is the first one after it.
            None => self.next = Some(self.boundary_after(at.0)),
            Some(_) => self.write_through(index, books, at.0),
        }
    }

    /// The first boundary strictly after `t`.
    fn boundary_after(&self, t: u64) -> u64 {
        (t / self.interval)
            .saturating_add(1)
            .saturating_mul(self.interval)
    }

    /// Writes boundaries `next ..= at`, each with the books as they are (nothing has changed
    /// between them: forward fill).
    #[cold]
    fn write_through(&mut self, index: u64, books: &Books, at: u64) {
        let Some(mut boundary) = self.next else {
            return;
        };
        let window = self.filter.between();
        let locates = books.locates();
        while boundary <= at && self.error.is_none() {
            match window {
                Some(w) if boundary < w.start.0 => {
                    // Jump to the first boundary in the window: nothing before it is written.
                    boundary = boundary.max(w.start.0.div_ceil(self.interval) * self.interval);
                    continue;
                }
                Some(w) if boundary >= w.end.0 => break,
                _ => {}
            }
            if locates.is_empty() {
                break;
            }
            self.boundaries += 1;
            for &locate in &locates {
                if !self.filter.keeps_symbol(books.symbol(locate)) {
                    continue;
                }
                let written = match &mut self.rows {
                    Rows::Csv(csv) => csv.row(Nanos(boundary), locate, books),
                    Rows::Dbn(dbn) => dbn.row(Nanos(boundary), index - 1, locate, books),
                    Rows::Handed(rows) => rows.row(Nanos(boundary), index - 1, locate, books),
                };
                match written {
                    Ok(()) => self.written += 1,
                    Err(e) => {
                        self.error = Some(e);
                        break;
                    }
                }
            }
            boundary += self.interval;
        }
        self.next = Some(self.boundary_after(at).max(boundary));
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.written
    }

    /// Boundaries that wrote rows (before the symbol filter) so far.
    pub fn boundaries(&self) -> u64 {
        self.boundaries
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

    /// [`Sampler::finish`], with `metadata` (key, value) for a format that keeps it (a
    /// Parquet footer's provenance); CSV and DBN ignore it.
    ///
    /// # Errors
    ///
    /// As [`Sampler::finish`].
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

    /// True if the output keeps metadata ([`Sampler::finish_with`] uses it).
    pub fn keeps_metadata(&self) -> bool {
        matches!(self.rows, Rows::Handed(_))
    }
}
