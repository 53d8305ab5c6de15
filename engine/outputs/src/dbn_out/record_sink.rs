//! Where the schema writers put the records they make: the [`Spool`](super::Spool) of a DBN
//! file, or a writer of another format that takes the records as they are made (Parquet's
//! MBP-10 view), so no format needs the records written out and read back.

use dbn::encode::DbnEncodable;
use dbn::Metadata;
use ticklane_itch::Locate;

use super::DbnOutError;

/// Takes records as the schema writers make them, in order.
pub trait RecordSink {
    /// Appends one record (dropped while muted).
    ///
    /// # Errors
    ///
    /// If it cannot be written.
    fn push<R: DbnEncodable + 'static>(&mut self, record: &R) -> Result<(), DbnOutError>;

    /// Drops the records pushed while `muted` (`--symbols`/`--between` filtered them out;
    /// the writers' state still advances).
    fn set_muted(&mut self, muted: bool);

    /// Records kept so far.
    fn count(&self) -> u64;

    /// The stock directory named `ticker` (trimmed) for `locate`; later records of that
    /// instrument are its. A DBN file carries the mapping in its metadata instead, so the
    /// default ignores it.
    fn symbol(&mut self, _locate: Locate, _ticker: &[u8]) {}

    /// The metadata as it stands before the first record (called once, before it): a DBN
    /// file written in place leaves that much room before the records, for the final
    /// metadata. Other sinks ignore it.
    ///
    /// # Errors
    ///
    /// If the metadata cannot be encoded.
    fn reserve_metadata(&mut self, _metadata: &Metadata) -> Result<(), DbnOutError> {
        Ok(())
    }
}
