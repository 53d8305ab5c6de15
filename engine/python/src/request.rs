//! The replay requests the package makes: the command's defaults, and its option values
//! parsed as the command parses them (a bad one is a `ValueError` naming the option).
#![forbid(unsafe_code)]

use std::fmt::Display;
use std::path::PathBuf;
use std::str::FromStr;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use ticklane_book::BookConfig;
use ticklane_engine::dbn_out::{DbnSchema, SessionDate};
use ticklane_engine::output_filter::OutputFilter;
use ticklane_engine::parquet_out::ParquetSchema;
use ticklane_engine::replay::ReplayRequest;

/// `ticklane replay INPUT` with no outputs and the command's defaults, quiet.
pub fn replay_request(input: PathBuf) -> ReplayRequest {
    ReplayRequest {
        input,
        bbo_out: None,
        book_out: None,
        depth: 10,
        dbn_out: None,
        schema: DbnSchema::Mbo,
        dataset: None,
        date: None,
        sample: None,
        symbols: String::new(),
        between: String::new(),
        parquet_out: None,
        parquet_schema: ParquetSchema::Bbo,
        summary_json: None,
        recover_lengths: false,
        progress: false,
        threads: 1,
        paced: None,
        books: BookConfig::default(),
        chunks: None,
    }
}

/// `text`, the value of the keyword `name`, parsed as the command parses its flag.
pub fn parsed<T>(name: &str, text: &str) -> PyResult<T>
where
    T: FromStr,
    T::Err: Display,
{
    text.parse()
        .map_err(|e| PyValueError::new_err(format!("{name}={text:?}: {e}")))
}

/// The options every replay takes: the session date, the row filter and the book
/// threads, checked before anything runs.
pub fn with_common(
    mut request: ReplayRequest,
    date: Option<&str>,
    symbols: String,
    between: String,
    threads: usize,
) -> PyResult<ReplayRequest> {
    if !(1..=usize::from(u8::MAX)).contains(&threads) {
        return Err(PyValueError::new_err(format!(
            "threads={threads}: give 1 to 255, as the command's --threads"
        )));
    }
    OutputFilter::parse(&symbols, &between).map_err(|e| PyValueError::new_err(e.to_string()))?;
    request.date = date.map(|d| parsed::<SessionDate>("date", d)).transpose()?;
    request.symbols = symbols;
    request.between = between;
    request.threads = threads;
    Ok(request)
}
