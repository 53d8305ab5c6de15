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
pub use bbo::BboParquet;
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
