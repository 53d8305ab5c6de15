//! Databento DBN files of market-by-order (MBO) records, plain or zstd-compressed, read
//! with Databento's own decoder (the `dbn` crate).
//!
//! [`DbnMboReader`] yields each MBO record as a plain [`MboRecord`] (prices still in DBN's
//! 1e-9 units: turning records into book operations is the engine's job), and each symbol
//! mapping record as a [`DbnItem::Symbol`]. The stock directory starts from the metadata's
//! symbol mappings ([`DbnMboReader::symbols`]).
//!
//! The decoder ends a stream quietly when the last record is cut short, and treats a zstd
//! stream that ends early as an ordinary end of input; this reader counts every
//! decompressed byte and every record length so that both are reported as errors naming
//! the byte offset and record index, never taken for a clean end.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

use dbn::decode::{DbnMetadata, DecodeRecordRef, DynReader};
use dbn::{rtype, MboMsg, Record, VersionUpgradePolicy};

use super::error::{CaptureError, CaptureErrorKind, IoOp};
use super::read_thread::ReadThread;
use super::{detect, InputFormat};
use crate::itch::Stock;

/// Bytes of DBN's prelude: `DBN`, the version byte, and the metadata length (u32 LE).
const PRELUDE_LEN: u64 = 8;

pub use ticklane_itch::MboRecord;

/// What a DBN file yields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DbnItem {
    /// An MBO record.
    Mbo(MboRecord),
    /// A symbol mapping record: from here on the instrument has this symbol.
    Symbol {
        /// The instrument.
        instrument_id: u32,
        /// Its symbol, space padded (see [`DbnRecordCounts::long_symbols`]).
        symbol: Stock,
    },
}

/// Counters of a DBN read so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DbnRecordCounts {
    /// Records read, of any type.
    pub records: u64,
    /// MBO records yielded.
    pub mbo_records: u64,
    /// Symbol mapping records read.
    pub symbol_mappings: u64,
    /// Records of any other type (status, error, system messages): skipped.
    pub other_records: u64,
    /// Symbols longer than the 8 bytes of an ITCH stock field: cut to 8 bytes.
    pub long_symbols: u64,
    /// Decompressed bytes read past.
    pub bytes_consumed: u64,
}

/// Counts the decompressed bytes read and remembers the prelude and the first read error,
/// which the decoder would otherwise take for the end of input.
struct Counting<R> {
    inner: R,
    count: u64,
    prelude: [u8; PRELUDE_LEN as usize],
    failure: Option<io::Error>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.inner.read(buf) {
            Ok(n) => {
                for (i, &b) in buf[..n].iter().enumerate() {
                    let at = self.count + i as u64;
                    if at >= PRELUDE_LEN {
                        break;
                    }
                    self.prelude[at as usize] = b;
                }
                self.count += n as u64;
                Ok(n)
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Err(e),
            Err(e) => {
                self.failure = Some(io::Error::new(e.kind(), e.to_string()));
                Err(e)
            }
        }
    }
}

/// The decompressed stream: the file through `dbn`'s own reader, which inflates zstd; a
/// zstd file's is read on a thread of its own ([`ReadThread`]), so inflating and applying
/// overlap.
type Decoder = dbn::decode::DbnDecoder<Counting<Box<dyn Read + Send>>>;

/// Reads the MBO records of a DBN file (DBN versions 1 to 3, plain or zstd).
///
/// Not `Sync`; one allocation per symbol mapping record, none per MBO record.
pub struct DbnMboReader {
    path: PathBuf,
    decoder: Decoder,
    symbols: Vec<(u32, Stock)>,
    /// The metadata's `start` and `end` (ns since the Unix epoch; `end` exclusive).
    start: u64,
    end: Option<u64>,
    /// Decompressed offset of the next record.
    next_offset: u64,
    stats: DbnRecordCounts,
    done: bool,
    /// Where the MBO records after the last `F_LAST` one begin, and how many there are: an
    /// input that ends with some is cut inside an event.
    open_event: Option<OpenEvent>,
}

/// The MBO records read since the last one flagged `F_LAST`.
#[derive(Clone, Copy, Debug)]
struct OpenEvent {
    /// Decompressed offset of the first of them.
    offset: u64,
    /// Its 1-based index among the records.
    index: u64,
    /// How many there are.
    records: u64,
}

impl DbnMboReader {
    /// Opens `path`, decompressing if it is zstd, and reads the DBN metadata.
    ///
    /// # Errors
    ///
    /// A [`CaptureError`] naming the path if the file cannot be opened or its metadata
    /// cannot be decoded, or if the metadata names a schema other than MBO.
    pub fn open(path: &Path) -> Result<Self, CaptureError> {
        let fail = |offset, kind| CaptureError {
            path: path.to_path_buf(),
            offset,
            index: 1,
            kind,
        };
        let file = File::open(path).map_err(|error| {
            fail(
                0,
                CaptureErrorKind::Io {
                    op: IoOp::Open,
                    error,
                },
            )
        })?;
        let mut head = [0u8; 4];
        let compressed = File::open(path)
            .and_then(|mut f| f.read_exact(&mut head))
            .is_ok_and(|()| detect(&head) == InputFormat::ZstdDbn);
        let reader: DynReader<'static, BufReader<File>> = DynReader::new_inferred(file)
            .map_err(|e| fail(0, CaptureErrorKind::Dbn(e.to_string())))?;
        let reader: Box<dyn Read + Send> = if compressed {
            let thread = ReadThread::spawn("unzstd", Box::new(reader)).map_err(|error| {
                fail(
                    0,
                    CaptureErrorKind::Io {
                        op: IoOp::Decompress,
                        error,
                    },
                )
            })?;
            Box::new(thread)
        } else {
            Box::new(reader)
        };
        let counting = Counting {
            inner: reader,
            count: 0,
            prelude: [0; PRELUDE_LEN as usize],
            failure: None,
        };
        let decoder = Decoder::with_upgrade_policy(counting, VersionUpgradePolicy::AsIs)
            .map_err(|e| fail(0, CaptureErrorKind::Dbn(format!("metadata: {e}"))))?;
        let metadata = decoder.metadata();
        if let Some(schema) = metadata.schema {
            if schema != dbn::Schema::Mbo {
                return Err(fail(0, CaptureErrorKind::DbnSchema(schema.to_string())));
            }
        }
        let mut stats = DbnRecordCounts::default();
        let mut symbols = Vec::new();
        for mapping in &metadata.mappings {
            // With `stype_out` instrument id, each interval's symbol is the id; the first
            // interval is the one in force at the start of the file.
            let id = mapping
                .intervals
                .iter()
                .find_map(|interval| interval.symbol.parse::<u32>().ok());
            if let Some(id) = id {
                symbols.push((id, stock(&mapping.raw_symbol, &mut stats)));
            }
        }
        let (start, end) = (metadata.start, metadata.end.map(std::num::NonZeroU64::get));
        let prelude = decoder.get_ref().prelude;
        let metadata_len = u32::from_le_bytes([prelude[4], prelude[5], prelude[6], prelude[7]]);
        Ok(DbnMboReader {
            path: path.to_path_buf(),
            decoder,
            symbols,
            start,
            end,
            next_offset: PRELUDE_LEN + u64::from(metadata_len),
            stats,
            done: false,
            open_event: None,
        })
    }

    /// The path being read.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Instrument ids and symbols from the metadata's symbol mappings.
    pub fn symbols(&self) -> &[(u32, Stock)] {
        &self.symbols
    }

    /// The metadata's `start`: the first instant the file covers, ns since the Unix epoch
    /// (for Databento's daily files, 00:00 UTC of the day asked for).
    pub fn start(&self) -> u64 {
        self.start
    }

    /// The metadata's `end`, exclusive, ns since the Unix epoch, if the file says.
    pub fn end(&self) -> Option<u64> {
        self.end
    }

    /// Counters so far.
    pub fn stats(&self) -> DbnRecordCounts {
        self.stats
    }

    /// The next MBO or symbol mapping record, or `None` at the end of the input.
    ///
    /// # Errors
    ///
    /// A [`CaptureError`] naming the decompressed byte offset of the record that failed and
    /// its 1-based index among the records: a record the decoder rejects, a record cut short
    /// at the end of the file, an end between two records of one event (the error names the
    /// first record after the last `F_LAST` one), or a read or decompression failure. Every record before it
    /// was yielded; later calls return `Ok(None)`.
    pub fn next_item(&mut self) -> Result<Option<DbnItem>, CaptureError> {
        loop {
            if self.done {
                return Ok(None);
            }
            let offset = self.next_offset;
            let index = self.stats.records + 1;
            let record = match self.decoder.decode_record_ref() {
                Ok(Some(record)) => record,
                Ok(None) => {
                    self.done = true;
                    let counting = self.decoder.get_mut();
                    if let Some(error) = counting.failure.take() {
                        return Err(self.error(
                            offset,
                            index,
                            CaptureErrorKind::Io {
                                op: IoOp::Decompress,
                                error,
                            },
                        ));
                    }
                    let read = counting.count;
                    self.stats.bytes_consumed = read;
                    if read != offset {
                        let remain = read.saturating_sub(offset);
                        return Err(self.error(
                            offset,
                            index,
                            CaptureErrorKind::DbnTruncated { remain },
                        ));
                    }
                    // A cut exactly between two records of one event decodes cleanly.
                    if let Some(open) = self.open_event {
                        return Err(self.error(
                            open.offset,
                            open.index,
                            CaptureErrorKind::DbnEndsInsideEvent {
                                records: open.records,
                            },
                        ));
                    }
                    return Ok(None);
                }
                Err(e) => {
                    self.done = true;
                    return Err(self.error(offset, index, CaptureErrorKind::Dbn(e.to_string())));
                }
            };
            self.stats.records += 1;
            self.next_offset += record.record_size() as u64;
            self.stats.bytes_consumed = self.next_offset;
            let header = record.header();
            match header.rtype {
                rtype::MBO => {
                    let Some(mbo) = record.get::<MboMsg>() else {
                        // The decoder checked the length; a short MBO record is corrupt.
                        self.done = true;
                        return Err(self.error(
                            offset,
                            index,
                            CaptureErrorKind::Dbn("MBO record shorter than 56 bytes".into()),
                        ));
                    };
                    self.stats.mbo_records += 1;
                    self.open_event = if mbo.flags.is_last() {
                        None
                    } else {
                        let open = self.open_event.unwrap_or(OpenEvent {
                            offset,
                            index,
                            records: 0,
                        });
                        Some(OpenEvent {
                            records: open.records + 1,
                            ..open
                        })
                    };
                    return Ok(Some(DbnItem::Mbo(MboRecord {
                        instrument_id: mbo.hd.instrument_id,
                        order_id: mbo.order_id,
                        price: mbo.price,
                        size: mbo.size,
                        action: mbo.action as u8,
                        side: mbo.side as u8,
                        flags: mbo.flags.raw(),
                        ts_event: mbo.hd.ts_event,
                        sequence: mbo.sequence,
                    })));
                }
                rtype::SYMBOL_MAPPING => {
                    self.stats.symbol_mappings += 1;
                    let instrument_id = header.instrument_id;
                    let mut map = dbn::PitSymbolMap::new();
                    map.on_record(record).map_err(|e| CaptureError {
                        path: self.path.clone(),
                        offset,
                        index,
                        kind: CaptureErrorKind::Dbn(e.to_string()),
                    })?;
                    if let Some(text) = map.get(instrument_id) {
                        let symbol = stock(text, &mut self.stats);
                        return Ok(Some(DbnItem::Symbol {
                            instrument_id,
                            symbol,
                        }));
                    }
                }
                _ => self.stats.other_records += 1,
            }
        }
    }

    fn error(&self, offset: u64, index: u64, kind: CaptureErrorKind) -> CaptureError {
        CaptureError {
            path: self.path.clone(),
            offset,
            index,
            kind,
        }
    }
}

/// `text` as an ITCH stock field, cut to 8 bytes (counted) when longer.
fn stock(text: &str, stats: &mut DbnRecordCounts) -> Stock {
    let bytes = text.as_bytes();
    if bytes.len() > 8 {
        stats.long_symbols += 1;
    }
    Stock::new(&bytes[..bytes.len().min(8)]).expect("invariant: at most 8 bytes")
}
