//! Without the `parquet` feature: the same names, each saying [`ParquetOutError::NotBuilt`],
//! so the replay and the CLI read the same either way.

use std::path::Path;

use super::ParquetOutError;
use crate::book::BboRow;
use crate::dbn_out::SpooledRecords;

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
    pub fn footer(&self, _schema: &str, _summary_json: &str) -> Vec<(String, String)> {
        match *self {}
    }
}

/// # Errors
///
/// Always [`ParquetOutError::NotBuilt`].
pub fn write_mbp10(
    _records: SpooledRecords,
    _path: &Path,
    _metadata: Vec<(String, String)>,
) -> Result<u64, ParquetOutError> {
    Err(ParquetOutError::NotBuilt)
}
