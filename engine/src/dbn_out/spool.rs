//! Where records wait until the metadata can be written. A DBN file opens with its metadata,
//! and the metadata holds the symbol mappings, which are known only once the whole stock
//! directory has been read; so records go to a temporary file beside the output while the
//! replay runs, and [`Spool::finish`] writes the metadata and then copies the records after
//! it. One pass over the input.
//!
//! The book thread only copies each record's bytes (DBN's encoding of a record is its bytes,
//! as `dbn`'s own `RecordEncoder` writes them) into a batch buffer; full batches go to a
//! writer thread of the spool's own, which writes them to the temporary, through zstd when
//! the output ends in `.zst`, and hands the emptied buffers back. So neither the disk nor
//! zstd is paid on the book thread, and with two cores the two halves run side by side.
//! A compressed output is then two zstd frames: the metadata's, written at the end, and the
//! records' (compressed while the replay ran), copied after it byte for byte. A zstd file
//! may hold any number of frames (RFC 8878, section 3) and decodes to their concatenation;
//! `dbn`'s decoders and Databento's Python `DBNDecoder` read it as one stream.
//!
//! Why a channel of recycled `Vec<u8>` batches and not the crate's SPSC ring (which
//! `csv::bbo_thread` uses for its fixed 64-byte rows): records here are 48 to 368 bytes
//! according to the schema, a byte stream packs them without padding to a slot size, and
//! one channel operation per 256 KiB batch (about 700 MBP-10 records) costs nothing that
//! shows; after the first few batches the buffers circulate and nothing is allocated.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::{self, JoinHandle};

use dbn::encode::{DbnEncodable, DbnMetadataEncoder, DynWriter};
use dbn::{Compression, Metadata};

use super::record_sink::RecordSink;
use super::DbnOutError;

/// Bytes gathered before a batch goes to the writer thread.
const BATCH_BYTES: usize = 1 << 18;
/// Full batches that may wait for the writer before the book thread waits for it.
const BATCHES_IN_FLIGHT: usize = 4;

/// The records written so far: a batch being filled here, the rest with the writer thread.
pub struct Spool {
    out: PathBuf,
    temp: TempPath,
    /// The records not yet handed to the writer (at most [`BATCH_BYTES`] and one record).
    batch: Vec<u8>,
    /// Full batches, to the writer thread (`None` once it has been told to stop).
    full: Option<SyncSender<Vec<u8>>>,
    /// Emptied batches, back from the writer thread.
    empty: Receiver<Vec<u8>>,
    /// The writer thread: the temporary (rewound for reading back) when all went well.
    writer: Option<JoinHandle<Result<File, DbnOutError>>>,
    /// The temporary holds zstd (the output ends in `.zst`).
    compressed: bool,
    count: u64,
    /// While set, records are dropped (`--symbols`/`--between` filtered them out).
    muted: bool,
}

impl Spool {
    /// A spool for the output `out`, with its writer thread started.
    ///
    /// # Errors
    ///
    /// If the temporary file cannot be created or the thread cannot be started.
    pub fn create(out: &Path) -> Result<Self, DbnOutError> {
        let mut name = out.file_name().unwrap_or_default().to_os_string();
        name.push(".records.tmp");
        let temp = out.with_file_name(name);
        let io_at = |source| DbnOutError::Io {
            path: temp.clone(),
            source,
        };
        // Read as well as write: `finish` reads the records back.
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&temp)
            .map_err(io_at)?;
        Self::start(out, TempPath(Some(temp)), file)
    }

    /// A spool for `out` whose records go to `file`, the temporary at `temp`.
    fn start(out: &Path, temp: TempPath, file: File) -> Result<Self, DbnOutError> {
        let compressed = out.extension().is_some_and(|e| e == "zst");
        let (full, full_rx) = mpsc::sync_channel(BATCHES_IN_FLIGHT);
        let (empty_tx, empty) = mpsc::sync_channel(BATCHES_IN_FLIGHT + 2);
        let path = temp.path().to_path_buf();
        let writer = thread::Builder::new()
            .name("dbn-writer".into())
            .spawn(move || write_batches(&path, file, compressed, &full_rx, &empty_tx))
            .map_err(|source| DbnOutError::Io {
                path: temp.path().to_path_buf(),
                source,
            })?;
        Ok(Spool {
            out: out.to_path_buf(),
            temp,
            batch: Vec::with_capacity(BATCH_BYTES + 512),
            full: Some(full),
            empty,
            writer: Some(writer),
            compressed,
            count: 0,
            muted: false,
        })
    }

    /// Appends one record.
    ///
    /// # Errors
    ///
    /// If the writer thread stopped (it could not write the temporary): its error.
    #[inline]
    pub fn push<R: DbnEncodable>(&mut self, record: &R) -> Result<(), DbnOutError> {
        if self.muted {
            return Ok(());
        }
        self.count += 1;
        self.batch.extend_from_slice(record.as_ref());
        if self.batch.len() >= BATCH_BYTES {
            self.hand_off()?;
        }
        Ok(())
    }

    /// Sends the batch to the writer thread and takes an emptied one (a new one while the
    /// first few are still on their way).
    #[cold]
    fn hand_off(&mut self) -> Result<(), DbnOutError> {
        let next = self
            .empty
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BATCH_BYTES + 512));
        let batch = std::mem::replace(&mut self.batch, next);
        let sent = match &self.full {
            Some(full) => full.send(batch).is_ok(),
            None => false,
        };
        if sent {
            Ok(())
        } else {
            // The writer hung up: only an error makes it do that.
            self.join().map(drop)
        }
    }

    /// Tells the writer no more records come, and waits for it: the temporary, rewound.
    fn join(&mut self) -> Result<File, DbnOutError> {
        drop(self.full.take());
        let stopped = || DbnOutError::Io {
            path: self.temp.path().to_path_buf(),
            source: io::Error::other("the DBN writer thread stopped"),
        };
        match self.writer.take() {
            Some(writer) => writer.join().unwrap_or_else(|_| Err(stopped())),
            None => Err(stopped()),
        }
    }

    /// Hands the last batch to the writer and waits for it to write everything.
    fn drain(&mut self) -> Result<File, DbnOutError> {
        if !self.batch.is_empty() {
            let batch = std::mem::take(&mut self.batch);
            if let Some(full) = &self.full {
                // A failed send means the writer stopped; `join` returns why.
                let _ = full.send(batch);
            }
        }
        self.join()
    }

    /// Drops the records pushed while `muted` (the writers' state still advances).
    pub fn set_muted(&mut self, muted: bool) {
        self.muted = muted;
    }

    /// Records pushed so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Writes `metadata` and then every record to the output, and removes the temporary.
    ///
    /// # Errors
    ///
    /// If the output cannot be written or the temporary written or read back.
    pub fn finish(mut self, metadata: &Metadata) -> Result<u64, DbnOutError> {
        let mut spooled = self.drain()?;
        let out = self.out.clone();
        let io_at = |source: io::Error| DbnOutError::Io {
            path: out.clone(),
            source,
        };
        let dbn_at = |source: dbn::Error| DbnOutError::Dbn {
            path: out.clone(),
            source,
        };
        let file = File::create(&out).map_err(io_at)?;
        let compression = if self.compressed {
            Compression::Zstd
        } else {
            Compression::None
        };
        // The metadata, a zstd frame of its own when compressed; the records follow as they
        // were spooled (already compressed, as the next frame).
        let mut writer = DynWriter::new(BufWriter::new(file), compression).map_err(dbn_at)?;
        DbnMetadataEncoder::new(&mut writer)
            .encode(metadata)
            .map_err(dbn_at)?;
        writer.finish().map_err(dbn_at)?;
        let file = writer.get_mut().get_mut();
        // File to file: the kernel copies (copy_file_range), no pass through user space.
        io::copy(&mut spooled, file).map_err(io_at)?;
        file.flush().map_err(io_at)?;
        let temp = self.temp.path().to_path_buf();
        self.temp
            .remove()
            .map_err(|source| DbnOutError::Io { path: temp, source })?;
        Ok(self.count)
    }
}

impl RecordSink for Spool {
    #[inline]
    fn push<R: DbnEncodable + 'static>(&mut self, record: &R) -> Result<(), DbnOutError> {
        Spool::push(self, record)
    }

    fn set_muted(&mut self, muted: bool) {
        Spool::set_muted(self, muted);
    }

    fn count(&self) -> u64 {
        Spool::count(self)
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        // A replay that fails part-way: stop the writer before the temporary goes.
        if self.writer.is_some() {
            let _ = self.join();
        }
    }
}

/// The writer thread: writes each batch to the temporary (through zstd if `compressed`),
/// hands it back emptied, and when the spool hangs up, finishes the file and returns it
/// rewound.
fn write_batches(
    path: &Path,
    file: File,
    compressed: bool,
    full: &Receiver<Vec<u8>>,
    empty: &SyncSender<Vec<u8>>,
) -> Result<File, DbnOutError> {
    let io_at = |source: io::Error| DbnOutError::Io {
        path: path.to_path_buf(),
        source,
    };
    let dbn_at = |source: dbn::Error| DbnOutError::Dbn {
        path: path.to_path_buf(),
        source,
    };
    let mut reader = file.try_clone().map_err(io_at)?;
    let compression = if compressed {
        Compression::Zstd
    } else {
        Compression::None
    };
    // Batches are large already: no buffer between them and the file unless zstd's.
    let mut writer = DynWriter::new(file, compression).map_err(dbn_at)?;
    while let Ok(mut batch) = full.recv() {
        writer.write_all(&batch).map_err(io_at)?;
        batch.clear();
        // The spool may have enough buffers already, or be gone: then this one is freed.
        let _ = empty.try_send(batch);
    }
    writer.finish().map_err(dbn_at)?;
    drop(writer);
    io::Seek::rewind(&mut reader).map_err(io_at)?;
    Ok(reader)
}

/// The temporary's path, removed when dropped unless [`TempPath::remove`] already did: a
/// replay that fails part-way (an unwritable output, an input error returned early) leaves
/// no `PATH.records.tmp` behind.
struct TempPath(Option<PathBuf>);

impl TempPath {
    fn path(&self) -> &Path {
        self.0.as_deref().unwrap_or(Path::new(""))
    }

    /// Removes the file now, reporting failure (the drop cannot).
    fn remove(&mut self) -> io::Result<()> {
        match &self.0 {
            Some(path) => {
                fs::remove_file(path)?;
                self.0 = None;
                Ok(())
            }
            None => Ok(()),
        }
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        if let Some(path) = self.0.take() {
            // Best effort: the replay is already failing with its own error.
            let _ = fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata() -> Metadata {
        Metadata::builder()
            .dataset("XNAS.ITCH")
            .schema(Some(dbn::Schema::Mbo))
            .start(0)
            .stype_in(Some(dbn::SType::RawSymbol))
            .stype_out(dbn::SType::InstrumentId)
            .build()
    }

    fn record() -> dbn::MboMsg {
        dbn::MboMsg::default()
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_write_error_on_the_writer_thread_comes_back_naming_the_temporary() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("x.dbn");
        let temp = dir.path().join("x.dbn.records.tmp");
        // Every write to /dev/full fails with ENOSPC (the path removed is the temporary's,
        // never the device's).
        let full = File::options()
            .write(true)
            .open("/dev/full")
            .expect("open /dev/full");
        let mut spool = Spool::start(&out, TempPath(Some(temp.clone())), full).expect("start");
        // More than one batch, so the writer thread writes (and fails) before the end.
        let records = 2 * BATCH_BYTES / std::mem::size_of::<dbn::MboMsg>();
        let mut pushed = Ok(());
        for _ in 0..records {
            pushed = spool.push(&record());
            if pushed.is_err() {
                break;
            }
        }
        let error = pushed
            .and_then(|()| spool.finish(&metadata()))
            .expect_err("the device is full");
        match error {
            DbnOutError::Io { path, source } => {
                assert_eq!(path, temp);
                assert_eq!(source.raw_os_error(), Some(28), "ENOSPC: {source}");
            }
            other => panic!("expected an I/O error naming the temporary, got {other:?}"),
        }
        assert!(!out.exists(), "no output after a failed spool");
    }

    #[test]
    fn a_compressed_spool_reads_back_as_the_records_pushed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("x.dbn.zst");
        let mut spool = Spool::create(&out).expect("create");
        // Records that differ, across several batches.
        let n = 3 * BATCH_BYTES / std::mem::size_of::<dbn::MboMsg>() + 7;
        for i in 0..n {
            let mut r = record();
            r.order_id = i as u64;
            spool.push(&r).expect("push");
        }
        assert_eq!(spool.finish(&metadata()).expect("finish"), n as u64);
        let mut decoder = dbn::decode::DbnDecoder::from_zstd_file(&out).expect("open");
        let mut ids = Vec::new();
        while let Some(r) =
            dbn::decode::DecodeRecord::decode_record::<dbn::MboMsg>(&mut decoder).expect("decode")
        {
            ids.push(r.order_id);
        }
        let expected: Vec<u64> = (0..n as u64).collect();
        assert_eq!(
            ids, expected,
            "every record, in order, after the metadata frame"
        );
    }

    #[test]
    fn a_finished_spool_leaves_the_output_and_no_temporary() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("x.dbn");
        let mut spool = Spool::create(&out).expect("create");
        spool.push(&record()).expect("push");
        assert!(dir.path().join("x.dbn.records.tmp").exists());
        assert_eq!(spool.finish(&metadata()).expect("finish"), 1);
        assert!(out.exists());
        assert!(!dir.path().join("x.dbn.records.tmp").exists());
    }

    #[test]
    fn a_failed_finish_or_a_dropped_spool_removes_the_temporary() {
        let dir = tempfile::tempdir().expect("tempdir");
        // The output is a directory: the temporary beside it can be made, the output not.
        let out = dir.path().join("taken");
        fs::create_dir(&out).expect("mkdir");
        let mut spool = Spool::create(&out).expect("create");
        spool.push(&record()).expect("push");
        let temp = dir.path().join("taken.records.tmp");
        assert!(temp.exists());
        assert!(
            spool.finish(&metadata()).is_err(),
            "cannot create over a directory"
        );
        assert!(!temp.exists(), "a failed finish removes the temporary");

        let out = dir.path().join("dropped.dbn");
        let spool = Spool::create(&out).expect("create");
        drop(spool);
        assert!(!dir.path().join("dropped.dbn.records.tmp").exists());
        assert!(!out.exists());
    }
}
