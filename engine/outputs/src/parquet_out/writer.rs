//! The Parquet file every view writes: zstd (level 1), row groups of [`ROW_GROUP_ROWS`], the
//! sort order declared, provenance appended to the footer when the file is closed.
//!
//! Dictionary encoding only for the columns that repeat (symbols, locates, one-letter
//! codes, and MBP-10's level prices): on a counter, a timestamp or a quantity nearly every
//! value is new, and interning each one into a dictionary that is then abandoned for plain
//! encoding cost more instructions than the rest of the writer together (measured with
//! callgrind: 27% of a `bbo` replay's instructions in the interner); zstd still compresses
//! the plain pages.
//!
//! Data pages are bounded by their size (1 MiB, the `parquet` crate's default), not by the
//! crate's default of 20,000 rows: fewer, larger zstd frames and page headers (callgrind,
//! MBP-10 on a 60k-message day, all threads: 870.2 M -> 848.1 M instructions, file 2% smaller).
//! A page is compressed when it fills, so more of the last row group's work is done at
//! `close`.
//!
//! The columns are encoded and compressed on [`column_encoders`](super::column_encoders)
//! threads, one per core (at most eight), not on the thread that writes the batches.
//!
//! A regular file is written as `PATH.partial` and renamed to `PATH` when its footer is
//! written: a replay that fails part-way (an input error is not that: its outputs are
//! finished) removes the partial file, a process killed part-way leaves only
//! `PATH.partial`, and neither leaves a file by the output's name that no reader can open
//! (it had no footer) nor spoils an earlier `PATH`. A `PATH` that is a symbolic link is
//! followed first, so the rename lands on the file it names (`dbn_out`'s `target` module).

use parquet::errors::ParquetError;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::Schema;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::metadata::{KeyValue, SortingColumn};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::ColumnPath;

use super::column_encoders::{encoder_count, ColumnEncoders, ColumnSource};
use super::{ParquetOutError, ROW_GROUP_ROWS};
use crate::dbn_out::{beside, OutputTarget};

/// How particular columns are written; every other column is plain, zstd, with page
/// statistics.
#[derive(Debug, Default)]
pub(super) struct ColumnChoices {
    /// Dictionary-encoded: values that repeat.
    pub dictionary: Vec<String>,
    /// `DELTA_BINARY_PACKED`: integers that grow by small steps (timestamps, sequence
    /// numbers), which it stores in a few bits each before zstd sees them. Read by
    /// pyarrow, polars, duckdb and Spark.
    pub delta: Vec<String>,
    /// No statistics: columns nobody filters by, where computing min and max costs more
    /// than it could save a reader.
    pub no_statistics: Vec<String>,
}

impl ColumnChoices {
    /// Dictionary encoding for `names`, nothing else special.
    pub fn dictionary(names: &[&str]) -> Self {
        ColumnChoices {
            dictionary: names.iter().map(|&n| n.to_owned()).collect(),
            ..ColumnChoices::default()
        }
    }
}

/// An open Parquet file.
pub(super) struct ParquetFile {
    path: PathBuf,
    /// Where the bytes go until the footer is written, for a regular file: renamed to
    /// `path` then, removed if the file is dropped unfinished.
    partial: Option<PathBuf>,
    file: SerializedFileWriter<File>,
    encoders: ColumnEncoders,
}

/// The writer's errors as ours, naming the file; a failed write of the file itself stays an
/// I/O error (a closed pipe under `--parquet-out /dev/stdout | head` is told as such).
pub(super) fn parquet_error(
    path: &Path,
) -> impl Fn(parquet::errors::ParquetError) -> ParquetOutError {
    let path = path.to_path_buf();
    move |e| match e {
        ParquetError::External(inner) => match inner.downcast::<std::io::Error>() {
            Ok(io) => ParquetOutError::Io {
                path: path.clone(),
                source: *io,
            },
            Err(other) => ParquetOutError::Parquet {
                path: path.clone(),
                message: ParquetError::External(other).to_string(),
            },
        },
        e => ParquetOutError::Parquet {
            path: path.clone(),
            message: e.to_string(),
        },
    }
}

impl ParquetFile {
    /// Creates `path` for rows of `schema`, sorted by the columns at `sorted_by` (ascending),
    /// with the named columns written as `columns` says.
    pub fn create(
        path: &Path,
        schema: Arc<Schema>,
        sorted_by: &[usize],
        columns: &ColumnChoices,
    ) -> Result<Self, ParquetOutError> {
        Self::create_with(
            path,
            schema,
            properties(sorted_by, columns),
            encoder_count(),
        )
    }

    /// [`ParquetFile::create`] with these writer properties and encoder threads.
    pub fn create_with(
        path: &Path,
        schema: Arc<Schema>,
        props: WriterProperties,
        threads: usize,
    ) -> Result<Self, ParquetOutError> {
        // As `--dbn-out` does: a link is followed to the file it names, which is written
        // beside and renamed; `/dev/stdout` on a pipe, a FIFO or a device is written as it is.
        let (path, partial) = match OutputTarget::of(path) {
            OutputTarget::Beside(file) => {
                let partial = beside(&file, ".partial");
                (file, Some(partial))
            }
            OutputTarget::InPlace(path) => (path, None),
        };
        let path = path.as_path();
        let file = File::create(partial.as_deref().unwrap_or(path)).map_err(|source| {
            ParquetOutError::Io {
                path: path.to_path_buf(),
                source,
            }
        })?;
        let rows_per_group = props.max_row_group_row_count().unwrap_or(ROW_GROUP_ROWS);
        // `ArrowWriter` sets the file up (the Arrow schema in the footer, as pyarrow and
        // polars read it), then hands over its file writer and column writer factory.
        let (file, factory) = ArrowWriter::try_new(file, schema.clone(), Some(props))
            .and_then(ArrowWriter::into_serialized_writer)
            .map_err(parquet_error(path))?;
        let encoders = ColumnEncoders::start(schema, factory, rows_per_group, threads)
            .map_err(parquet_error(path))?;
        Ok(ParquetFile {
            path: path.to_path_buf(),
            partial,
            file,
            encoders,
        })
    }

    /// Appends `batch`.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<(), ParquetOutError> {
        self.write_rows(Arc::new(batch.clone()))
    }

    /// Appends `batch`, whose columns the encoder threads build.
    pub fn write_rows(&mut self, batch: Arc<dyn ColumnSource>) -> Result<(), ParquetOutError> {
        self.encoders
            .write(batch, &mut self.file)
            .map_err(parquet_error(&self.path))
    }

    /// Writes the footer with `metadata` (key, value) in its key-value metadata.
    pub fn close(mut self, metadata: Vec<(String, String)>) -> Result<(), ParquetOutError> {
        self.encoders
            .flush(&mut self.file)
            .map_err(parquet_error(&self.path))?;
        for (key, value) in metadata {
            self.file
                .append_key_value_metadata(KeyValue::new(key, value));
        }
        self.file.finish().map_err(parquet_error(&self.path))?;
        match self.partial.take() {
            Some(partial) => {
                std::fs::rename(&partial, &self.path).map_err(|source| ParquetOutError::Io {
                    path: self.path.clone(),
                    source,
                })
            }
            None => Ok(()),
        }
    }

    /// The output.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ParquetFile {
    fn drop(&mut self) {
        // Unfinished (the replay failed): no reader could open it.
        if let Some(partial) = self.partial.take() {
            let _ = std::fs::remove_file(partial);
        }
    }
}

/// The writer properties of every file: zstd, the row group and page bounds, the sort
/// order, and the column choices.
pub(super) fn properties(sorted_by: &[usize], columns: &ColumnChoices) -> WriterProperties {
    let sorting = sorted_by
        .iter()
        .map(|&i| SortingColumn {
            column_idx: i32::try_from(i).expect("invariant: a handful of columns"),
            descending: false,
            nulls_first: false,
        })
        .collect();
    let mut props = WriterProperties::builder().set_dictionary_enabled(false);
    for column in &columns.dictionary {
        props = props.set_column_dictionary_enabled(ColumnPath::from(column.as_str()), true);
    }
    for column in &columns.delta {
        props = props.set_column_encoding(
            ColumnPath::from(column.as_str()),
            Encoding::DELTA_BINARY_PACKED,
        );
    }
    for column in &columns.no_statistics {
        props = props.set_column_statistics_enabled(
            ColumnPath::from(column.as_str()),
            EnabledStatistics::None,
        );
    }
    props
        // Level 1 (`ZstdLevel::default()`); level 3 cost 10% more instructions for a
        // file 2% smaller (MBP-10, 60k-message day).
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        // Pages end at the 1 MiB size limit, not every 20,000 rows (see above).
        .set_data_page_row_count_limit(ROW_GROUP_ROWS)
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_sorting_columns(Some(sorting))
        .set_created_by(format!("ticklane {}", env!("CARGO_PKG_VERSION")))
        .build()
}
