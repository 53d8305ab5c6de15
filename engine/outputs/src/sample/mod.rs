//! Depth sampled at fixed intervals (`replay --sample 1s --sample-out PATH`): at each
//! multiple of the interval since midnight (ITCH time), every stock with a book gets one row
//! of its top `N` levels a side, as the books stood just before the first message at or past
//! that boundary, stamped with the boundary. A stock that did not change still gets its row
//! (forward fill), from the first boundary after its book was created.
//!
//! The boundary is written when the first message at or past it arrives, so no boundary
//! after the last message's time is written: the state after the last message is
//! `--book-out`'s. CSV by default ([`csv_rows`]); Databento MBP-10 records when the path
//! ends in `.dbn` or `.dbn.zst` ([`dbn_rows`]), through `dbn_out`'s spool and session date;
//! Parquet when it ends in `.parquet`, through a [`SampleRows`] handed down by the replay
//! (`parquet_out` sits above this module).
//!
//! Cost: per boundary, per stock (`--between` and `--symbols` bound it); nothing per message
//! but one compare of its timestamp with the next boundary. At `1s` over 09:30–16:00 that is
//! 23,400 boundaries times the stocks with a book: with 8,000 stocks, 187 million rows.
//!
//! # `--sample INTERVAL --sample-out PATH [--sample-depth N]`
//!
//! `INTERVAL` is a whole number and a unit (`ns`, `us`, `ms`, `s`, `m`, `h`: `100ms`, `1s`,
//! `5m`); `N` defaults to 10.
//!
//! ```text
//! ticklane gen day.itch50 --messages 100000 --stocks 4
//! ticklane replay day.itch50 --sample 10ms --sample-out depth.csv --sample-depth 5 -q
//! ticklane replay day.itch50 --sample 10ms --sample-out depth.dbn --date 2019-01-30 --symbols AAAA -q
//! ticklane replay day.itch50 --sample 10ms --sample-out depth.parquet --sample-depth 5 -q
//! ```
//!
//! - **CSV**: `timestamp_ns,locate,stock,bid_px_1,bid_qty_1,bid_orders_1,…,bid_orders_N,
//!   ask_px_1,ask_qty_1,ask_orders_1,…,ask_orders_N`. `timestamp_ns` is the boundary
//!   (nanoseconds since midnight), level 1 the best, prices in ITCH's 1/10,000 dollars, an
//!   empty level `0,0,0` (as in `--bbo-out`); rows in boundary order, then by locate.
//! - **DBN** (`.dbn`, `.dbn.zst`): MBP-10 records through the `--dbn-out` writer, with its
//!   metadata and date rule (`--date`, else the file name): `ts_event` = `ts_recv` = the
//!   boundary (New York midnight plus the boundary), action `N`, side `N`, price
//!   `UNDEF_PRICE`, size 0, `depth` 0, `sequence` = the messages applied before the boundary
//!   (from a DBN input, the `sequence` of the first record at or past it, less one),
//!   `F_LAST` on each record, levels past `--sample-depth` (at most 10) empty.
//! - **Parquet** (`.parquet`): the CSV's rows, one typed column per field, none null:
//!   `timestamp_ns` uint64, `locate` uint16, `stock` string, then per side and level
//!   `{bid,ask}_px_i` uint32, `{bid,ask}_qty_i` uint64, `{bid,ask}_orders_i` uint32 (an empty
//!   level 0, 0, 0). The footer carries the provenance (`ticklane.schema` = `sample`, see
//!   `parquet_out`) and declares the order (`timestamp_ns, locate`).
//!
//! Not with `--pace`. With `replay --threads N` the rows are byte for byte one thread's
//! (Parquet: but for the footer's timings): the reader runs the boundary clock (it needs
//! only the timestamps) and sends every book thread the epoch's sample points; each book
//! thread takes its own stocks' depths just before its first message at or past a point (or
//! at the end of its batch: its books cannot change in between), and the merge thread writes
//! every thread's stocks in locate order, boundary by boundary. A DBN input samples in the
//! same ITCH time (`replay::dbn_session`), through the metadata's `end` (exclusive), as an
//! ITCH replay samples through its last message.

mod boundary_clock;
pub mod csv_rows;
pub mod dbn_rows;
mod interval;
mod sampler;
mod stock_depth;

use std::path::PathBuf;

pub use boundary_clock::{Boundaries, BoundaryClock};
pub use interval::SampleInterval;
pub use sampler::{SampleWriter, Sampler};
pub use stock_depth::{CapturedDepths, CapturedStock, DepthReader, StockDepth};
use ticklane_itch::Nanos;

use crate::dbn_out::{DbnOutError, SessionDate};

/// A writer of sampled rows handed down from above (Parquet's, which this module cannot
/// name): one row per stock per boundary, as [`csv_rows`] writes them.
pub trait SampleRows: Send {
    /// Writes `depth`'s row at `boundary`, `applied` messages into the input.
    ///
    /// # Errors
    ///
    /// If it cannot be written.
    fn row(
        &mut self,
        boundary: Nanos,
        applied: u64,
        depth: &StockDepth<'_>,
    ) -> Result<(), SampleError>;

    /// Writes out the rest, with `metadata` (key, value) where the format keeps it.
    ///
    /// # Errors
    ///
    /// If it cannot be written.
    fn finish(self: Box<Self>, metadata: Vec<(String, String)>) -> Result<(), SampleError>;
}

/// Levels a side that DBN's MBP-10 record holds.
pub const DBN_LEVELS: usize = 10;

/// What `--sample`, `--sample-out` and `--sample-depth` asked for.
#[derive(Clone, Debug)]
pub struct SampleOptions {
    /// The output: DBN MBP-10 when it ends in `.dbn` or `.dbn.zst`, else CSV.
    pub path: PathBuf,
    /// The interval between boundaries.
    pub interval: SampleInterval,
    /// Levels per side (at most 10 in DBN, whose MBP-10 records hold ten).
    pub depth: usize,
    /// The session date, needed for DBN's UTC `ts_event` (`--date` or the file name).
    pub date: Option<SessionDate>,
}

impl SampleOptions {
    /// True if the output is DBN (the name ends in `.dbn` or `.dbn.zst`).
    pub fn is_dbn(&self) -> bool {
        is_dbn_path(&self.path)
    }

    /// True if the output is Parquet (the name ends in `.parquet`).
    pub fn is_parquet(&self) -> bool {
        self.path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_ascii_lowercase()
            .ends_with(".parquet")
    }
}

/// True if `path` names a DBN file (`.dbn` or `.dbn.zst`).
pub fn is_dbn_path(path: &std::path::Path) -> bool {
    // Any case: `DAY.DBN` is a DBN file to whoever names it so.
    let name = path
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .to_ascii_lowercase();
    name.ends_with(".dbn") || name.ends_with(".dbn.zst")
}

/// Why the sampled depth could not be written.
#[derive(Debug, thiserror::Error)]
pub enum SampleError {
    /// The CSV output could not be written.
    #[error("--sample-out {}: {source}", path.display())]
    Io {
        /// The output.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// The DBN output could not be written.
    #[error("--sample-out {0}")]
    Dbn(#[from] DbnOutError),
    /// DBN's MBP-10 holds ten levels a side.
    #[error("--sample-depth {depth}: a DBN --sample-out holds at most {DBN_LEVELS} levels a side (MBP-10)")]
    DbnDepth {
        /// The depth asked for.
        depth: usize,
    },
    /// A Parquet output is written by `parquet_out`, handed down with
    /// [`Sampler::with_rows`]; [`Sampler::create`] does not write it.
    #[error("--sample-out {}: a Parquet sample needs the Parquet writer (Sampler::with_rows)", path.display())]
    ParquetNotHandedDown {
        /// The output.
        path: PathBuf,
    },
    /// The Parquet output could not be written (cold path: the writer's message as text).
    #[error("--sample-out {}: {message}", path.display())]
    Parquet {
        /// The output.
        path: PathBuf,
        /// What the writer said.
        message: String,
    },
    /// DBN needs the session date for its UTC timestamps.
    #[error("--sample-out {}: DBN needs the session date: give --date YYYY-MM-DD", path.display())]
    NoDate {
        /// The output.
        path: PathBuf,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn the_format_follows_the_name_in_any_case() {
        for dbn in ["d.dbn", "d.dbn.zst", "D.DBN", "d.Dbn.ZST"] {
            assert!(is_dbn_path(Path::new(dbn)), "{dbn}");
        }
        for other in ["d.csv", "d.dbn.csv", "dbn", "d.zst"] {
            assert!(!is_dbn_path(Path::new(other)), "{other}");
        }
    }
}
