//! Parquet output (`replay --parquet-out`): the top-of-book stream or the MBP-10 view as a
//! columnar file (zstd, one row group per million rows), with where it came from in the
//! footer's key-value metadata ([`provenance`]).
//!
//! Rows are written in the order the replay makes them, which is input order: `msg_index`
//! (DBN's `sequence`) ascending, and the ITCH timestamp non-decreasing as Nasdaq writes its
//! files. Nothing is sorted in memory; the footer declares the order (`sorting_columns`).
//!
//! The writers use Apache's `parquet` and `arrow` crates and are built with the engine's
//! `parquet` feature (on by default); without it [`ParquetOutError::NotBuilt`] says so.
//! The feature adds some 33 crates to the build, chiefly `parquet`,
//! `arrow-{schema,buffer,data,array,select,cmp,ipc}`, `chrono`, `num-bigint` and
//! `flatbuffers`; `cargo build --no-default-features -p ticklane` leaves them out,
//! and `--parquet-out` then refuses, saying so.
//!
//! # `replay --parquet-out PATH [--parquet-schema bbo|mbp-10]`
//!
//! Its own option (not `--schema`), so one replay can write DBN and Parquet side by side:
//!
//! ```text
//! ticklane replay 01302019.NASDAQ_ITCH50 --parquet-out day.bbo.parquet -q
//! ticklane replay 01302019.NASDAQ_ITCH50 --parquet-out day.mbp10.parquet --parquet-schema mbp-10 -q
//! ```
//!
//! - `bbo` (the default, no date needed): exactly the `--bbo-out` rows in the same order,
//!   one typed column per CSV field (`bbo`). Both files take their rows from the one
//!   top-of-book tracker, so they cannot disagree: the book thread copies each row (one
//!   cache line) into the ring that already feeds the CSV writer's thread, which filters the
//!   row once and hands it to the CSV, the Parquet file or both (one hand-off for both
//!   outputs, so the book thread copies a row once).
//! - `mbp-10` (takes `--date` or the date in the file name, as `--dbn-out` does): one row
//!   per record `--dbn-out --schema mbp-10` would write (`mbp10`).
//! - `--sample-out PATH.parquet` writes the sampled depth the same way (`sample`).
//! - `--symbols` and `--between` choose its rows as they do every other output's, and the
//!   footer's `ticklane.filter` says which. Not with `--pace`. With `replay --threads N` the
//!   file is one thread's: the same column chunks byte for byte, and the same footer but for
//!   the summary's timings. From a DBN input `bbo` works (the same rows as the ITCH replay's,
//!   in ITCH time) and `mbp-10` is refused (exit 2: its records are made from ITCH messages).
//!
//! In pandas (with `pyarrow` installed):
//!
//! ```text
//! import pandas as pd, pyarrow.parquet as pq, json
//! bbo = pd.read_parquet("day.bbo.parquet")           # the --bbo-out rows, typed
//! meta = pq.read_metadata("day.bbo.parquet").metadata; print(json.loads(meta[b"ticklane.summary"])["messages"])
//! ```
//!
//! # Provenance, in the footer's key-value metadata (all values text)
//!
//! | key | value |
//! |---|---|
//! | `ticklane.input_name` | the input's file name (last path component) |
//! | `ticklane.input_bytes` | its size in bytes |
//! | `ticklane.input_crc32` | CRC-32 (IEEE, zlib's) of its bytes as stored (a `.gz` is checksummed compressed), 8 hex digits |
//! | `ticklane.version` | the ticklane version that wrote the file |
//! | `ticklane.schema` | `bbo`, `mbp-10`, or `sample` (`--sample-out PATH.parquet`) |
//! | `ticklane.summary` | the replay's summary, the same JSON object `--summary-json` writes |
//! | `ticklane.filter` | the rows kept, as JSON: `{"between_ns": null or [start, end], "symbols": null or ["AAPL", ...]}` (`--between` in ITCH ns since midnight, end excluded; `--symbols` sorted); both null when every row was written |
//!
//! # Encoding
//!
//! zstd level 1 (level 3 cost 9% more instructions for a file 2% smaller), data pages
//! bounded by 1 MiB, dictionaries only for the columns that repeat, `DELTA_BINARY_PACKED`
//! for MBP-10's `ts_event` and `sequence`, page statistics on every column but MBP-10's 40
//! size and count columns; each choice was measured with callgrind and is argued beside its
//! code (`writer`, `mbp10`). All of it is standard Parquet that pyarrow, pandas, polars,
//! duckdb and Spark read. The columns are encoded and compressed on one thread per core (at
//! most eight, `column_encoders`), and the file is byte for byte what `ArrowWriter` writes on
//! one thread (tested on 1, 2, 3, 5 and 9 threads).

#[cfg(feature = "parquet")]
mod bbo;
#[cfg(feature = "parquet")]
mod column_encoders;
#[cfg(feature = "parquet")]
mod mbp10;
#[cfg(not(feature = "parquet"))]
mod not_built;
mod options;
#[cfg(feature = "parquet")]
pub mod provenance;
#[cfg(feature = "parquet")]
mod sample;
#[cfg(feature = "parquet")]
mod writer;

#[cfg(feature = "parquet")]
pub use bbo::{bbo_schema, BboColumns, BboParquet};
#[cfg(feature = "parquet")]
pub use mbp10::Mbp10Parquet;
#[cfg(not(feature = "parquet"))]
pub use not_built::{BboParquet, Mbp10Parquet, Provenance, SampledParquet};
pub use options::{ParquetOutError, ParquetOutOptions, ParquetSchema, PARQUET_SCHEMA_NAMES};
#[cfg(feature = "parquet")]
pub use provenance::Provenance;
#[cfg(feature = "parquet")]
pub use sample::SampledParquet;

/// Rows per row group: about a million rows (a few to a few tens of MiB compressed) keeps
/// the footer small and lets a reader skip by statistics.
pub const ROW_GROUP_ROWS: usize = 1 << 20;
