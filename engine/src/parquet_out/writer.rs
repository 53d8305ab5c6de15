//! The Parquet file every view writes: zstd, row groups of [`ROW_GROUP_ROWS`], the sort order
//! declared, provenance appended to the footer when the file is closed.
//!
//! Dictionary encoding only for the columns that repeat (symbols, locates, one-letter
//! codes): on a counter, a timestamp or a quantity nearly every value is new, and interning
//! each one into a dictionary that is then abandoned for plain encoding cost more
//! instructions than the rest of the writer together (measured with callgrind: 27% of a
//! `bbo` replay's instructions in the interner); zstd still compresses the plain pages.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::Schema;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::{KeyValue, SortingColumn};
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

use super::{ParquetOutError, ROW_GROUP_ROWS};

/// An open Parquet file.
pub(super) struct ParquetFile {
    path: PathBuf,
    writer: ArrowWriter<File>,
}

/// The writer's errors as ours, naming the file.
pub(super) fn parquet_error(
    path: &Path,
) -> impl Fn(parquet::errors::ParquetError) -> ParquetOutError {
    let path = path.to_path_buf();
    move |e| ParquetOutError::Parquet {
        path: path.clone(),
        message: e.to_string(),
    }
}

impl ParquetFile {
    /// Creates `path` for rows of `schema`, sorted by the columns at `sorted_by` (ascending),
    /// dictionary-encoding only the columns named in `dictionary`.
    pub fn create(
        path: &Path,
        schema: Arc<Schema>,
        sorted_by: &[usize],
        dictionary: &[&str],
    ) -> Result<Self, ParquetOutError> {
        let file = File::create(path).map_err(|source| ParquetOutError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let sorting = sorted_by
            .iter()
            .map(|&i| SortingColumn {
                column_idx: i32::try_from(i).expect("invariant: a handful of columns"),
                descending: false,
                nulls_first: false,
            })
            .collect();
        let mut props = WriterProperties::builder().set_dictionary_enabled(false);
        for &column in dictionary {
            props = props.set_column_dictionary_enabled(ColumnPath::from(column), true);
        }
        let props = props
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .set_sorting_columns(Some(sorting))
            .set_created_by(format!("ticklane {}", env!("CARGO_PKG_VERSION")))
            .build();
        let writer =
            ArrowWriter::try_new(file, schema, Some(props)).map_err(parquet_error(path))?;
        Ok(ParquetFile {
            path: path.to_path_buf(),
            writer,
        })
    }

    /// Appends `batch`.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<(), ParquetOutError> {
        self.writer.write(batch).map_err(parquet_error(&self.path))
    }

    /// Writes the footer with `metadata` (key, value) in its key-value metadata.
    pub fn close(mut self, metadata: Vec<(String, String)>) -> Result<(), ParquetOutError> {
        for (key, value) in metadata {
            self.writer
                .append_key_value_metadata(KeyValue::new(key, value));
        }
        self.writer
            .close()
            .map(drop)
            .map_err(parquet_error(&self.path))
    }

    /// The output.
    pub fn path(&self) -> &Path {
        &self.path
    }
}
