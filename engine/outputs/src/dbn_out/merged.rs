//! The DBN file of `replay --threads`: the records the book threads made
//! ([`super::RecordBatch`]), placed by the merge in message order, with the metadata
//! a one-thread replay would write. The file is byte for byte the one-thread
//! [`super::DbnOut`]'s: the same [`Spool`], the metadata's room asked for at the same
//! message (the first that can make records, with the tickers named before it) and the
//! same final metadata.

use std::collections::BTreeMap;

use super::record_batch::MessageRecords;
use super::{session_metadata, DbnOutError, DbnOutOptions, InputEnd, Spool};
use crate::output_filter::OutputFilter;

/// The merge's DBN writer.
pub struct MergedDbnOut {
    opts: DbnOutOptions,
    spool: Spool,
    /// Locate → ticker, in message order (the last `R` for a locate wins).
    symbols: BTreeMap<u16, String>,
    record_len: usize,
    /// `--symbols`/`--between`, which the book threads applied: the metadata says so.
    filter: OutputFilter,
}

impl MergedDbnOut {
    /// A writer for `opts`; the output is written by [`MergedDbnOut::finish`].
    ///
    /// # Errors
    ///
    /// If the output cannot be created.
    pub fn create(opts: DbnOutOptions, filter: OutputFilter) -> Result<Self, DbnOutError> {
        Ok(MergedDbnOut {
            spool: Spool::create(&opts.path)?,
            record_len: opts.schema.record_len(),
            opts,
            symbols: BTreeMap::new(),
            filter,
        })
    }

    /// Places one message's part of a book thread's batch: its ticker, the metadata's room,
    /// its records.
    ///
    /// # Errors
    ///
    /// If the DBN encoder refuses the metadata, or the spool's writer thread stopped.
    #[inline]
    pub fn place(&mut self, message: MessageRecords<'_, u8>) -> Result<(), DbnOutError> {
        if let Some((locate, ticker)) = message.symbol {
            self.symbols.insert(locate.0, ticker.to_owned());
        }
        if message.reserve {
            let metadata = session_metadata(
                self.opts.dataset,
                self.opts.schema.dbn(),
                self.opts.date,
                0,
                &self.symbols,
                &self.filter,
            );
            self.spool.reserve_metadata(&metadata)?;
        }
        if !message.records.is_empty() {
            let records = (message.records.len() / self.record_len) as u64;
            self.spool.push_encoded(message.records, records)?;
        }
        Ok(())
    }

    /// Writes the file: the metadata (ending just after `last_ts_event`, the stamp of the
    /// last message the schema writers saw, as one thread's), then the records, under the
    /// name `input` says. Returns the records written.
    ///
    /// # Errors
    ///
    /// If the output cannot be written.
    pub fn finish(self, last_ts_event: u64, input: InputEnd) -> Result<u64, DbnOutError> {
        let metadata = session_metadata(
            self.opts.dataset,
            self.opts.schema.dbn(),
            self.opts.date,
            last_ts_event,
            &self.symbols,
            &self.filter,
        );
        self.spool.finish(&metadata, input)
    }
}
