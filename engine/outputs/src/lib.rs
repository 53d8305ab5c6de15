//! The files a replay writes from the books: the CSVs of the contracts (top-of-book stream,
//! depth, a snapshot's depth), DBN in Databento's book and trade schemas, depth sampled at
//! interval boundaries, Parquet (behind the `parquet` feature), top-of-book rows in chunks
//! for a consumer in the same process, the row filter (`--symbols`, `--between`) they
//! share, and the hand-off of rows to a writer thread.
//! Each format is documented in its own module.
//!
//! Outputs see a book change and the rows it makes, never a pipeline or a socket: this
//! crate depends on the books, the ring (for the writer thread's hand-off) and the snapshot
//! reader, and must never depend on the pipeline, the servers or the configuration.
#![forbid(unsafe_code)]

pub mod csv;
pub mod dbn_out;
pub mod output_filter;
pub mod parquet_out;
pub mod row_chunks;
pub mod sample;
pub mod table_rows;
pub mod table_tap;
pub mod writer_thread;
