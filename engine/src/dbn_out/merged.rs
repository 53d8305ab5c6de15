//! The DBN file of `replay --threads`: the records the book threads made
//! ([`super::RecordBatch`]), placed by the merge thread in message order, with the metadata
//! a one-thread replay would write. The file is byte for byte the one-thread [`super::DbnOut`]'s:
//! the same [`Spool`], the metadata's room asked for at the same message (the first that can
//! make records, with the tickers named before it) and the same final metadata.

use std::collections::BTreeMap;

use ticklane_feed::itch::Locate;

use super::{session_metadata, DbnOutError, DbnOutOptions, Spool};

/// The merge thread's DBN writer.
pub struct MergedDbnOut {
    opts: DbnOutOptions,
    spool: Spool,
    /// Locate → ticker, in message order (the last `R` for a locate wins).
    symbols: BTreeMap<u16, String>,
    record_len: usize,
}

impl MergedDbnOut {
    /// A writer for `opts`; the output is written by [`MergedDbnOut::finish`].
    ///
    /// # Errors
    ///
    /// If the output cannot be created.
    pub fn create(opts: DbnOutOptions) -> Result<Self, DbnOutError> {
        Ok(MergedDbnOut {
            spool: Spool::create(&opts.path)?,
            record_len: opts.schema.record_len(),
            opts,
            symbols: BTreeMap::new(),
        })
    }

    /// The bytes of one record of the schema.
    pub fn record_len(&self) -> usize {
        self.record_len
    }

    /// The stock directory named `ticker` for `locate`.
    pub fn symbol(&mut self, locate: Locate, ticker: &str) {
        self.symbols.insert(locate.0, ticker.to_owned());
    }

    /// The first message that can make records: leaves the metadata's room, as it stands.
    ///
    /// # Errors
    ///
    /// If the DBN encoder refuses the metadata.
    pub fn reserve_metadata(&mut self) -> Result<(), DbnOutError> {
        let metadata = session_metadata(self.opts.schema.dbn(), self.opts.date, 0, &self.symbols);
        self.spool.reserve_metadata(&metadata)
    }

    /// Appends one message's records, encoded (a whole number of records).
    ///
    /// # Errors
    ///
    /// If the spool's writer thread stopped: its error.
    #[inline]
    pub fn records(&mut self, bytes: &[u8]) -> Result<(), DbnOutError> {
        let records = (bytes.len() / self.record_len) as u64;
        self.spool.push_encoded(bytes, records)
    }

    /// Writes the file: the metadata (ending just after `last_ts_event`, the stamp of the
    /// last message the schema writers saw, as one thread's), then the records. Returns the
    /// records written.
    ///
    /// # Errors
    ///
    /// If the output cannot be written.
    pub fn finish(self, last_ts_event: u64) -> Result<u64, DbnOutError> {
        let metadata = session_metadata(
            self.opts.schema.dbn(),
            self.opts.date,
            last_ts_event,
            &self.symbols,
        );
        self.spool.finish(&metadata)
    }
}
