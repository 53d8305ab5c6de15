//! What `--parquet-out` was asked for, and why it can fail; built with or without the
//! `parquet` feature, so the CLI and the replay name the option either way.

use std::path::PathBuf;
use std::str::FromStr;

use crate::dbn_out::{DbnOutError, SessionDate};

/// The views `--parquet-schema` accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParquetSchema {
    /// The top-of-book stream: the rows of `--bbo-out`, typed (`bbo`).
    Bbo,
    /// DBN's MBP-10 records, one row each (`mbp-10`).
    Mbp10,
}

/// The names `--parquet-schema` accepts, for messages.
pub const PARQUET_SCHEMA_NAMES: &str = "bbo, mbp-10";

impl FromStr for ParquetSchema {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "bbo" => Ok(ParquetSchema::Bbo),
            "mbp-10" => Ok(ParquetSchema::Mbp10),
            other => Err(format!(
                "unknown parquet schema {other:?}: one of {PARQUET_SCHEMA_NAMES}"
            )),
        }
    }
}

impl ParquetSchema {
    /// The name `--parquet-schema` takes, also written in the footer.
    pub fn name(self) -> &'static str {
        match self {
            ParquetSchema::Bbo => "bbo",
            ParquetSchema::Mbp10 => "mbp-10",
        }
    }
}

/// What `--parquet-out` was asked for.
#[derive(Clone, Debug)]
pub struct ParquetOutOptions {
    /// The output file.
    pub path: PathBuf,
    /// Which view.
    pub schema: ParquetSchema,
    /// The session date: MBP-10's `ts_event` is UTC, as DBN's (unused for `bbo`).
    pub date: Option<SessionDate>,
}

/// Why the Parquet output could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ParquetOutError {
    /// This binary was built without the engine's `parquet` feature.
    #[error("ticklane was built without the `parquet` feature (cargo build --features parquet)")]
    NotBuilt,
    /// A DBN input replays through its own path, which writes no Parquet yet.
    #[error("{}: not with a DBN input (write it from the ITCH file)", path.display())]
    NotFromDbnInput {
        /// The output.
        path: PathBuf,
    },
    /// MBP-10 needs the session date for its UTC timestamps.
    #[error("{}: mbp-10 needs the session date (--date, or a date in the input's name)", path.display())]
    NoDate {
        /// The output.
        path: PathBuf,
    },
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// The Parquet writer refused (cold path: its message is kept as text).
    #[error("{}: parquet: {message}", path.display())]
    Parquet {
        /// The file.
        path: PathBuf,
        /// What the writer said.
        message: String,
    },
    /// The MBP-10 records could not be made.
    #[error(transparent)]
    Dbn(#[from] DbnOutError),
    /// A writer thread panicked (a bug).
    #[error(transparent)]
    WriterPanicked(#[from] crate::writer_thread::WriterThreadPanicked),
}
