//! Without the `parquet` feature: the same names, each saying [`ParquetOutError::NotBuilt`],
//! so the replay and the CLI read the same either way.

use std::path::Path;

use super::ParquetOutError;
use ticklane_book::BboRow;
use ticklane_itch::Nanos;

use crate::dbn_out::{DbnOutError, RecordSink};
use crate::output_filter::OutputFilter;
use crate::sample::{SampleError, SampleOptions, SampleRows, StockDepth};

/// Never made: the feature is off.
pub enum BboParquet {}

impl BboParquet {
    /// # Errors
    ///
    /// Always [`ParquetOutError::NotBuilt`].
    pub fn create(_path: &Path) -> Result<Self, ParquetOutError> {
        Err(ParquetOutError::NotBuilt)
    }

    /// Unreachable: there is no value.
    ///
    /// # Errors
    ///
    /// None.
    pub fn push(&mut self, _row: &BboRow) -> Result<(), ParquetOutError> {
        match *self {}
    }

    /// Unreachable: there is no value.
    ///
    /// # Errors
    ///
    /// None.
    pub fn close(self, _metadata: Vec<(String, String)>) -> Result<(), ParquetOutError> {
        match self {}
    }
}

/// Never made: the feature is off.
#[derive(Clone, Debug)]
pub enum Provenance {}

impl Provenance {
    /// # Errors
    ///
    /// Always [`ParquetOutError::NotBuilt`].
    pub fn of_input(_input: &Path) -> Result<Self, ParquetOutError> {
        Err(ParquetOutError::NotBuilt)
    }

    /// Unreachable: there is no value.
    pub fn footer(
        &self,
        _schema: &str,
        _summary_json: &str,
        _filter: &OutputFilter,
    ) -> Vec<(String, String)> {
        match *self {}
    }
}

/// Never made: the feature is off. A struct only `create` could build (and it never does),
/// not an empty enum: the replay passes it through `DbnOut`, and a value of an uninhabited
/// type there makes the code after it unreachable to the compiler.
pub struct Mbp10Parquet(());

impl Mbp10Parquet {
    /// # Errors
    ///
    /// Always [`ParquetOutError::NotBuilt`].
    pub fn create(_path: &Path) -> Result<Self, ParquetOutError> {
        Err(ParquetOutError::NotBuilt)
    }

    /// Never called (no value is ever made).
    ///
    /// # Errors
    ///
    /// Always [`ParquetOutError::NotBuilt`].
    pub fn close(self, _metadata: Vec<(String, String)>) -> Result<u64, ParquetOutError> {
        Err(ParquetOutError::NotBuilt)
    }
}

impl RecordSink for Mbp10Parquet {
    fn push<R: dbn::encode::DbnEncodable + 'static>(
        &mut self,
        _record: &R,
    ) -> Result<(), DbnOutError> {
        Err(DbnOutError::Io {
            path: std::path::PathBuf::new(),
            source: std::io::Error::other(ParquetOutError::NotBuilt.to_string()),
        })
    }

    fn set_muted(&mut self, _muted: bool) {}

    fn count(&self) -> u64 {
        0
    }
}

/// Never made: the feature is off.
pub enum SampledParquet {}

impl SampledParquet {
    /// # Errors
    ///
    /// Always: the feature is off.
    pub fn create(opts: &SampleOptions) -> Result<Self, SampleError> {
        Err(SampleError::Parquet {
            path: opts.path.clone(),
            message: ParquetOutError::NotBuilt.to_string(),
        })
    }
}

impl SampleRows for SampledParquet {
    fn row(
        &mut self,
        _boundary: Nanos,
        _applied: u64,
        _depth: &StockDepth<'_>,
    ) -> Result<(), SampleError> {
        match *self {}
    }

    fn finish(self: Box<Self>, _metadata: Vec<(String, String)>) -> Result<(), SampleError> {
        match *self {}
    }
}
