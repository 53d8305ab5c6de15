//! The DBN of `--sample-out x.dbn[.zst]`: one MBP-10 record per stock per boundary, written
//! through `dbn_out`'s spool (metadata first, with the symbol mappings, then the records).
//!
//! Each record: `ts_event` = `ts_recv` = the boundary (the session's New York midnight plus
//! the boundary's time of day), action `N` and side `N` (a sample is no book event), price
//! `UNDEF_PRICE`, size 0, `depth` 0, `sequence` = the messages applied before the boundary,
//! `F_LAST` on every record (each stands alone), the levels as `--schema mbp-10` writes them,
//! levels past `--sample-depth` empty.

use std::collections::BTreeMap;

use dbn::{rtype, Mbp10Msg, RecordHeader, Schema, UNDEF_PRICE};
use ticklane_itch::Nanos;

use super::{SampleError, SampleOptions, StockDepth, DBN_LEVELS};
use crate::dbn_out::mbp::EMPTY;
use crate::dbn_out::{
    price_1e9, session_metadata, DbnOutError, InputEnd, ItchDataset, Spool, PUBLISHER_ID,
};
use crate::output_filter::OutputFilter;

/// Databento's "no action / no side" letter.
const NONE: std::ffi::c_char = b'N' as std::ffi::c_char;

/// A level's price (1e-9 dollars), size (saturated to 32 bits) and count, as MBP-10 holds
/// them.
fn fields(level: &ticklane_book::LevelView) -> (i64, u32, u32) {
    let size = u32::try_from(level.qty).unwrap_or(u32::MAX);
    (price_1e9(level.price), size, level.orders)
}

/// Writes sampled MBP-10 records.
pub struct DbnRows {
    spool: Spool,
    date: crate::dbn_out::SessionDate,
    midnight_ns: u64,
    depth: usize,
    /// Locate → ticker of every stock written, for the metadata's mappings.
    symbols: BTreeMap<u16, String>,
    last_ts_event: u64,
}

impl DbnRows {
    /// A writer for `opts` (which names a DBN path).
    ///
    /// # Errors
    ///
    /// Without a date, with more than ten levels, or if the spool cannot be created.
    pub fn create(opts: &SampleOptions) -> Result<Self, SampleError> {
        if opts.depth > DBN_LEVELS {
            return Err(SampleError::DbnDepth { depth: opts.depth });
        }
        let date = opts.date.ok_or_else(|| SampleError::NoDate {
            path: opts.path.clone(),
        })?;
        Ok(DbnRows {
            spool: Spool::create(&opts.path)?,
            date,
            midnight_ns: date.midnight_utc_ns(),
            depth: opts.depth,
            symbols: BTreeMap::new(),
            last_ts_event: 0,
        })
    }

    /// Writes `depth`'s record at `boundary`, `applied` messages into the input.
    ///
    /// # Errors
    ///
    /// If the spool cannot be written, or `applied` is past DBN's 32-bit sequence.
    pub fn row(
        &mut self,
        boundary: Nanos,
        applied: u64,
        depth: &StockDepth<'_>,
    ) -> Result<(), SampleError> {
        let sequence =
            u32::try_from(applied).map_err(|_| DbnOutError::SequenceOverflow { index: applied })?;
        // Levels past the book's, or past `--sample-depth`, empty, as `--schema mbp-10`
        // writes them.
        let mut levels = [EMPTY; DBN_LEVELS];
        for (pair, l) in levels.iter_mut().zip(depth.bids).take(self.depth) {
            (pair.bid_px, pair.bid_sz, pair.bid_ct) = fields(l);
        }
        for (pair, l) in levels.iter_mut().zip(depth.asks).take(self.depth) {
            (pair.ask_px, pair.ask_sz, pair.ask_ct) = fields(l);
        }
        let locate = depth.locate;
        self.symbols
            .entry(locate.0)
            .or_insert_with(|| String::from_utf8_lossy(depth.symbol).into_owned());
        let ts_event = self.midnight_ns + boundary.0;
        self.last_ts_event = ts_event;
        let mut flags = dbn::FlagSet::empty();
        flags.set_last();
        self.spool.push(&Mbp10Msg {
            hd: RecordHeader::new::<Mbp10Msg>(
                rtype::MBP_10,
                PUBLISHER_ID,
                u32::from(locate.0),
                ts_event,
            ),
            price: UNDEF_PRICE,
            size: 0,
            action: NONE,
            side: NONE,
            flags,
            depth: 0,
            ts_recv: ts_event,
            ts_in_delta: 0,
            sequence,
            levels,
        })?;
        Ok(())
    }

    /// Writes the file: metadata (dataset, schema MBP-10, the locate → ticker mappings of
    /// the stocks written), then the records.
    ///
    /// # Errors
    ///
    /// If the output cannot be written.
    pub fn finish(self) -> Result<u64, SampleError> {
        let metadata = session_metadata(
            ItchDataset::XnasItch,
            Schema::Mbp10,
            self.date,
            self.last_ts_event,
            &self.symbols,
            &OutputFilter::default(),
        );
        Ok(self.spool.finish(&metadata, InputEnd::Whole)?)
    }
}
