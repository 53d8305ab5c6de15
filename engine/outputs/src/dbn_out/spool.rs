//! Where records wait until the metadata can be written. A DBN file opens with its metadata,
//! and the metadata holds the symbol mappings, which are known only once the stock directory
//! has been read; the records are written as the replay makes them, in one pass over the
//! input, and [`Spool::finish`] puts the metadata in front of them.
//!
//! A plain `.dbn` file is written in place: the records go straight into the output (as
//! `PATH.partial`, renamed to `PATH` when finished, so that a process killed part-way leaves
//! no file by the output's name whose metadata is zeros) after a gap the size the metadata
//! has when the first record comes ([`Spool::reserve_metadata`]).
//! The stock directory is sent before the day's orders, so the final metadata is nearly
//! always that size, and `finish` writes it into the gap: the records are written once.
//! (Spooling them beside the output and copying them after the metadata cost more than the
//! whole replay for MBP-10: 1.25 GB written twice for a 3 M-message day.) When it is not
//! that size (a stock added after the first record), `finish` writes the metadata to a
//! temporary beside the output, copies the records after it, and renames it over the output.
//! A `.dbn.zst` spools the records in a temporary beside the output instead
//! (`PATH.records.tmp`), and an output that is not a regular file (a pipe, `/dev/null`) in
//! one in the system's temporary folder; `finish` writes the metadata and then copies them
//! (a regular file again through `PATH.partial`, a pipe or a device in place). A path that
//! is a symbolic link is followed first ([`super::target`]): the rename lands on the file
//! the link names, never on the link. A compressed file is then two zstd frames, the
//! metadata's and the records' (compressed while the replay ran), which is a valid zstd
//! stream (RFC 8878, section 3: it decodes to the frames' concatenation) that `dbn`'s
//! decoders and Databento's Python `DBNDecoder` read as one.
//!
//! The book thread only copies each record's bytes (DBN's encoding of a record is its bytes,
//! as `dbn`'s own `RecordEncoder` writes them) into a batch buffer; full batches go to a
//! writer thread of the spool's own, which writes them (through zstd when the output ends in
//! `.zst`) and hands the emptied buffers back. So neither the disk nor zstd is paid on the
//! book thread, and with two cores the two halves run side by side.
//!
//! Why a channel of recycled `Vec<u8>` batches and not the crate's SPSC ring (which
//! `csv::bbo_thread` uses for its fixed 64-byte rows): records here are 48 to 368 bytes
//! according to the schema, a byte stream packs them without padding to a slot size, and
//! one channel operation per 256 KiB batch (about 700 MBP-10 records) costs nothing that
//! shows; after the first few batches the buffers circulate and nothing is allocated.

use std::fs::{self, File};
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::{self, JoinHandle};

use dbn::encode::{DbnEncodable, DbnMetadataEncoder, DynWriter};
use dbn::{Compression, Metadata};

use super::record_sink::RecordSink;
use super::target::{beside, OutputTarget};
use super::DbnOutError;

/// Bytes gathered before a batch goes to the writer thread.
const BATCH_BYTES: usize = 1 << 18;
/// Full batches that may wait for the writer before the book thread waits for it.
const BATCHES_IN_FLIGHT: usize = 4;

/// How the input that made the records ended, which decides the name a finished DBN file
/// takes.
///
/// DBN's metadata has no field that could say a file stops short (Parquet's footer carries
/// the replay's summary, error included; DBN's `partial` and `not_found` list symbols that
/// did not resolve, which is another thing). So a replay whose input failed part-way (a
/// truncated or corrupt file: exit 1) finishes its DBN file, metadata and every record
/// made before the failure, and leaves it as `PATH.partial`, where a reader finds it
/// whole but cannot mistake it for the day's file; `PATH` is neither created nor replaced.
/// A pipe or a device has no name to keep: there the exit status says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputEnd {
    /// The input was read to its end: the file takes its name.
    Whole,
    /// The input failed part-way: a regular file keeps the name `PATH.partial`.
    Failed,
}

impl InputEnd {
    /// [`InputEnd::Failed`] if the input `failed`, else [`InputEnd::Whole`].
    pub fn of(failed: bool) -> Self {
        if failed {
            InputEnd::Failed
        } else {
            InputEnd::Whole
        }
    }
}

/// Where the records are written.
enum Records {
    /// Into the output itself, after `gap` bytes left for the metadata (0 until
    /// [`Spool::reserve_metadata`]). The path is removed unless the spool finishes.
    InPlace { output: RemovedUnlessKept, gap: u64 },
    /// Into a temporary beside the output, removed when the spool is done.
    Spooled(RemovedUnlessKept),
}

impl Records {
    /// The file the records are written to, as errors name it.
    fn path(&self) -> &Path {
        match self {
            Records::InPlace { output, .. } => output.path(),
            Records::Spooled(temp) => temp.path(),
        }
    }
}

/// The records written so far: a batch being filled here, the rest with the writer thread.
pub struct Spool {
    out: PathBuf,
    records: Records,
    /// The records not yet handed to the writer (at most [`BATCH_BYTES`] and one record).
    batch: Vec<u8>,
    /// Whether a batch has gone to the writer thread (the gap can no longer be made).
    handed_off: bool,
    /// Full batches, to the writer thread (`None` once it has been told to stop).
    full: Option<SyncSender<Vec<u8>>>,
    /// Emptied batches, back from the writer thread.
    empty: Receiver<Vec<u8>>,
    /// The writer thread: the file it wrote, rewound, when all went well.
    writer: Option<JoinHandle<Result<File, DbnOutError>>>,
    /// The records are zstd (the output ends in `.zst`).
    compressed: bool,
    /// The output is a regular file (or not there yet): it is written beside and renamed.
    regular: bool,
    count: u64,
    /// While set, records are dropped (`--symbols`/`--between` filtered them out).
    muted: bool,
}

/// Where the records of an output written in place (a pipe, a device) wait: the system's
/// temporary folder, since the output's own folder (`/dev` for `/dev/stdout`) is no place
/// for a file; named by the process and a count, so two spools never share one.
fn spool_for_in_place(out: &Path) -> PathBuf {
    static SPOOLS: AtomicU64 = AtomicU64::new(0);
    let n = SPOOLS.fetch_add(1, Ordering::Relaxed);
    let name = out.file_name().unwrap_or_default().to_string_lossy();
    std::env::temp_dir().join(format!(
        "ticklane-{}-{n}-{name}.records.tmp",
        std::process::id()
    ))
}

/// Opens `path` for writing from empty, and for reading back.
fn open_truncated(path: &Path) -> Result<File, DbnOutError> {
    File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(|source| DbnOutError::Io {
            path: path.to_path_buf(),
            source,
        })
}

/// `metadata` as DBN encodes it, uncompressed.
fn encoded(metadata: &Metadata, out: &Path) -> Result<Vec<u8>, DbnOutError> {
    let mut bytes = Vec::new();
    DbnMetadataEncoder::new(&mut bytes)
        .encode(metadata)
        .map_err(|source| DbnOutError::Dbn {
            path: out.to_path_buf(),
            source,
        })?;
    Ok(bytes)
}

impl Spool {
    /// A spool for the output `out`, with its writer thread started.
    ///
    /// # Errors
    ///
    /// If the output (or the temporary beside it) cannot be created or the thread cannot be
    /// started.
    pub fn create(out: &Path) -> Result<Self, DbnOutError> {
        let compressed = out
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("zst"));
        // Only a regular file can have its first bytes written last; a link is followed to
        // it, so that the rename lands on the file and never on the link.
        let (out, regular) = match OutputTarget::of(out) {
            OutputTarget::Beside(file) => (file, true),
            OutputTarget::InPlace(path) => (path, false),
        };
        let (records, file) = if compressed || !regular {
            let temp = match regular {
                true => beside(&out, ".records.tmp"),
                false => spool_for_in_place(&out),
            };
            let file = open_truncated(&temp)?;
            (Records::Spooled(RemovedUnlessKept(Some(temp))), file)
        } else {
            let partial = beside(&out, ".partial");
            let file = open_truncated(&partial)?;
            let output = RemovedUnlessKept(Some(partial));
            (Records::InPlace { output, gap: 0 }, file)
        };
        Self::start(&out, records, file, compressed, regular)
    }

    /// A spool for `out` whose records go to `file`, as `records` says.
    fn start(
        out: &Path,
        records: Records,
        file: File,
        compressed: bool,
        regular: bool,
    ) -> Result<Self, DbnOutError> {
        let (full, full_rx) = mpsc::sync_channel(BATCHES_IN_FLIGHT);
        let (empty_tx, empty) = mpsc::sync_channel(BATCHES_IN_FLIGHT + 2);
        let path = records.path().to_path_buf();
        let writer = thread::Builder::new()
            .name("dbn-writer".into())
            .spawn(move || write_batches(&path, file, compressed, &full_rx, &empty_tx))
            .map_err(|source| DbnOutError::Io {
                path: records.path().to_path_buf(),
                source,
            })?;
        Ok(Spool {
            out: out.to_path_buf(),
            records,
            batch: Vec::with_capacity(BATCH_BYTES + 512),
            handed_off: false,
            full: Some(full),
            empty,
            writer: Some(writer),
            compressed,
            regular,
            count: 0,
            muted: false,
        })
    }

    /// Leaves room for `metadata` (the metadata as it stands before the first record)
    /// before the records of an output written in place, so that [`Spool::finish`] can
    /// write the final metadata there when it is the same size. Nothing once a record has
    /// been pushed, or when the records are spooled.
    ///
    /// # Errors
    ///
    /// If the DBN encoder refuses the metadata.
    pub fn reserve_metadata(&mut self, metadata: &Metadata) -> Result<(), DbnOutError> {
        let Records::InPlace { gap, .. } = &mut self.records else {
            return Ok(());
        };
        if *gap > 0 || self.handed_off || !self.batch.is_empty() {
            return Ok(());
        }
        let len = encoded(metadata, &self.out)?.len();
        // Zeros now; the metadata over them when the spool finishes.
        self.batch.resize(len, 0);
        *gap = len as u64;
        Ok(())
    }

    /// Appends one record.
    ///
    /// # Errors
    ///
    /// If the writer thread stopped (it could not write the file): its error.
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

    /// Appends `records` records already encoded, in order, as `bytes` (the records a book
    /// thread of `replay --threads` made, placed here in message order).
    ///
    /// # Errors
    ///
    /// If the writer thread stopped (it could not write the file): its error.
    #[inline]
    pub fn push_encoded(&mut self, bytes: &[u8], records: u64) -> Result<(), DbnOutError> {
        self.count += records;
        self.batch.extend_from_slice(bytes);
        if self.batch.len() >= BATCH_BYTES {
            self.hand_off()?;
        }
        Ok(())
    }

    /// Sends the batch to the writer thread and takes an emptied one (a new one while the
    /// first few are still on their way).
    #[cold]
    fn hand_off(&mut self) -> Result<(), DbnOutError> {
        self.handed_off = true;
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

    /// Tells the writer no more records come, and waits for it: the file, rewound.
    fn join(&mut self) -> Result<File, DbnOutError> {
        drop(self.full.take());
        let stopped = || DbnOutError::Io {
            path: self.records.path().to_path_buf(),
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

    /// Writes `metadata` and then every record to the output (in place when it fits the
    /// gap left for it), and removes any temporary. Returns the records written. After
    /// [`InputEnd::Failed`] a regular file keeps the name `PATH.partial` ([`InputEnd`]).
    ///
    /// # Errors
    ///
    /// If the output cannot be written or the records written or read back.
    pub fn finish(mut self, metadata: &Metadata, input: InputEnd) -> Result<u64, DbnOutError> {
        let records = self.drain()?;
        let out = self.out.clone();
        let failed = input == InputEnd::Failed;
        let io_at = |path: &Path| {
            let path = path.to_path_buf();
            move |source: io::Error| DbnOutError::Io {
                path: path.clone(),
                source,
            }
        };
        match &mut self.records {
            Records::InPlace { output, gap } => {
                let bytes = encoded(metadata, &out)?;
                if bytes.len() as u64 == *gap {
                    records
                        .write_all_at(&bytes, 0)
                        .map_err(io_at(output.path()))?;
                    if !failed {
                        fs::rename(output.path(), &out).map_err(io_at(&out))?;
                    }
                    output.keep();
                } else {
                    // The directory grew after the first record: the metadata, then the
                    // records copied after it, in a new file that replaces the output (or,
                    // after a failed input, the partial file).
                    let mut temp = RemovedUnlessKept(Some(beside(&out, ".tmp")));
                    let mut file = open_truncated(temp.path())?;
                    file.write_all(&bytes).map_err(io_at(temp.path()))?;
                    let mut records = records;
                    records.seek(SeekFrom::Start(*gap)).map_err(io_at(&out))?;
                    // File to file: the kernel copies (copy_file_range).
                    io::copy(&mut records, &mut file).map_err(io_at(temp.path()))?;
                    let name = match failed {
                        true => output.path().to_path_buf(),
                        false => out.clone(),
                    };
                    fs::rename(temp.path(), &name).map_err(io_at(&name))?;
                    temp.keep();
                    if failed {
                        output.keep();
                    } else {
                        let path = output.path().to_path_buf();
                        output.remove().map_err(io_at(&path))?;
                    }
                }
            }
            Records::Spooled(temp) => {
                // A regular file is written beside and renamed; a pipe or a device directly.
                let mut partial = RemovedUnlessKept(self.regular.then(|| beside(&out, ".partial")));
                let written = match self.regular {
                    true => partial.path().to_path_buf(),
                    false => out.clone(),
                };
                let file = File::create(&written).map_err(io_at(&written))?;
                let compression = if self.compressed {
                    Compression::Zstd
                } else {
                    Compression::None
                };
                let dbn_at = |source: dbn::Error| DbnOutError::Dbn {
                    path: out.clone(),
                    source,
                };
                // The metadata, a zstd frame of its own when compressed; the records follow
                // as they were spooled (already compressed, as the next frame).
                let mut writer =
                    DynWriter::new(BufWriter::new(file), compression).map_err(dbn_at)?;
                DbnMetadataEncoder::new(&mut writer)
                    .encode(metadata)
                    .map_err(dbn_at)?;
                writer.finish().map_err(dbn_at)?;
                let file = writer.get_mut().get_mut();
                let mut records = records;
                // File to file: the kernel copies (copy_file_range).
                io::copy(&mut records, file).map_err(io_at(&written))?;
                file.flush().map_err(io_at(&written))?;
                if self.regular {
                    if !failed {
                        fs::rename(&written, &out).map_err(io_at(&out))?;
                    }
                    partial.keep();
                }
                let path = temp.path().to_path_buf();
                temp.remove().map_err(io_at(&path))?;
            }
        }
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

    fn reserve_metadata(&mut self, metadata: &Metadata) -> Result<(), DbnOutError> {
        Spool::reserve_metadata(self, metadata)
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        // A replay that fails part-way: stop the writer before its file goes.
        if self.writer.is_some() {
            let _ = self.join();
        }
    }
}

/// The writer thread: writes each batch to `file` (through zstd if `compressed`), hands it
/// back emptied, and when the spool hangs up, finishes the file and returns it rewound.
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
    reader.rewind().map_err(io_at)?;
    Ok(reader)
}

/// A path removed when dropped unless [`RemovedUnlessKept::keep`] or
/// [`RemovedUnlessKept::remove`] came first: a replay that fails part-way (an unwritable
/// output, an input error returned early) leaves neither a `PATH.records.tmp` nor a DBN
/// file whose metadata was never written.
struct RemovedUnlessKept(Option<PathBuf>);

impl RemovedUnlessKept {
    fn path(&self) -> &Path {
        self.0.as_deref().unwrap_or(Path::new(""))
    }

    /// The file stays.
    fn keep(&mut self) {
        self.0 = None;
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

impl Drop for RemovedUnlessKept {
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
        let records = Records::Spooled(RemovedUnlessKept(Some(temp.clone())));
        let mut spool = Spool::start(&out, records, full, false, true).expect("start");
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
            .and_then(|()| spool.finish(&metadata(), InputEnd::Whole))
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
        assert_eq!(
            spool.finish(&metadata(), InputEnd::Whole).expect("finish"),
            n as u64
        );
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
        // Compressed: the records wait beside the output.
        let out = dir.path().join("x.dbn.zst");
        let mut spool = Spool::create(&out).expect("create");
        spool.push(&record()).expect("push");
        assert!(dir.path().join("x.dbn.zst.records.tmp").exists());
        assert_eq!(
            spool.finish(&metadata(), InputEnd::Whole).expect("finish"),
            1
        );
        assert!(out.exists());
        assert!(!dir.path().join("x.dbn.zst.records.tmp").exists());
        // Plain: written in place, no temporary at any time.
        let out = dir.path().join("x.dbn");
        let mut spool = Spool::create(&out).expect("create");
        spool.push(&record()).expect("push");
        assert_eq!(
            spool.finish(&metadata(), InputEnd::Whole).expect("finish"),
            1
        );
        let names: Vec<_> = fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(
            names.len(),
            2,
            "the two outputs and nothing else: {names:?}"
        );
    }

    /// A session's metadata mapping `tickers` to locates 1, 2, ...
    fn session(tickers: &[&str], last_ts_event: u64) -> Metadata {
        let symbols = tickers
            .iter()
            .zip(1u16..)
            .map(|(t, locate)| (locate, (*t).to_string()))
            .collect();
        let date = super::super::SessionDate::parse("2019-01-30").expect("a date");
        super::super::session_metadata(
            super::super::ItchDataset::XnasItch,
            dbn::Schema::Mbo,
            date,
            last_ts_event,
            &symbols,
            &Default::default(),
        )
    }

    /// The metadata and the order ids of the MBO records of the DBN file `path`.
    fn read_back(path: &Path) -> (Metadata, Vec<u64>) {
        let mut decoder = dbn::decode::DbnDecoder::from_file(path).expect("open");
        let metadata = dbn::decode::DbnMetadata::metadata(&decoder).clone();
        let mut ids = Vec::new();
        while let Some(r) =
            dbn::decode::DecodeRecord::decode_record::<dbn::MboMsg>(&mut decoder).expect("decode")
        {
            ids.push(r.order_id);
        }
        (metadata, ids)
    }

    fn push_ids(spool: &mut Spool, n: u64) {
        for i in 0..n {
            let mut r = record();
            r.order_id = i;
            spool.push(&r).expect("push");
        }
    }

    /// A process killed while records are written (here: a spool never finished nor
    /// dropped) leaves `PATH.partial`, never a file by the output's name whose metadata is
    /// still zeros; an earlier output by that name stays as it was until `finish` replaces it.
    #[test]
    fn until_finished_the_output_is_only_a_partial_file_beside_it() {
        for name in ["x.dbn", "y.dbn.zst"] {
            // Killed: its writer thread lives on here, so it gets a directory of its own.
            let killed_dir = tempfile::tempdir().expect("tempdir");
            let out = killed_dir.path().join(name);
            fs::write(&out, b"an earlier output").expect("write");
            let mut killed = Spool::create(&out).expect("create");
            killed
                .reserve_metadata(&session(&["AAPL"], 0))
                .expect("reserve");
            push_ids(&mut killed, (2 * BATCH_BYTES / 56) as u64);
            std::mem::forget(killed);
            assert_eq!(fs::read(&out).expect("read"), b"an earlier output");

            let dir = tempfile::tempdir().expect("tempdir");
            let out = dir.path().join(name);
            fs::write(&out, b"an earlier output").expect("write");
            let mut spool = Spool::create(&out).expect("create");
            push_ids(&mut spool, 3);
            spool
                .finish(&session(&["AAPL"], 9), InputEnd::Whole)
                .expect("finish");
            assert_ne!(fs::read(&out).expect("read"), b"an earlier output");
            if name.ends_with(".dbn") {
                assert_eq!(read_back(&out).1, vec![0, 1, 2], "{name}");
            }
            let left: Vec<_> = fs::read_dir(dir.path())
                .expect("list")
                .map(|e| e.expect("entry").file_name())
                .collect();
            assert_eq!(left, vec![std::ffi::OsString::from(name)]);
        }
    }

    #[test]
    fn the_final_metadata_is_written_into_the_gap_left_before_the_records() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("x.dbn");
        let mut spool = Spool::create(&out).expect("create");
        spool
            .reserve_metadata(&session(&["AAPL", "MSFT"], 0))
            .expect("reserve");
        // Across several batches.
        let n = (3 * BATCH_BYTES / std::mem::size_of::<dbn::MboMsg>() + 7) as u64;
        push_ids(&mut spool, n);
        // Same stocks, another end: the same size.
        let last = session(&["AAPL", "MSFT"], 1_548_860_000_000_000_000);
        assert_eq!(spool.finish(&last, InputEnd::Whole).expect("finish"), n);
        let (metadata, ids) = read_back(&out);
        assert_eq!(metadata, last);
        assert_eq!(ids, (0..n).collect::<Vec<_>>(), "every record, in order");
        let size = encoded(&last, &out).expect("encode").len() as u64
            + n * std::mem::size_of::<dbn::MboMsg>() as u64;
        assert_eq!(fs::metadata(&out).expect("stat").len(), size);
    }

    #[test]
    fn metadata_that_outgrew_its_gap_is_written_before_the_records_all_the_same() {
        let dir = tempfile::tempdir().expect("tempdir");
        // A stock after the first record; and no room reserved at all.
        for reserved in [Some(session(&["AAPL"], 0)), None] {
            let out = dir.path().join("x.dbn");
            let mut spool = Spool::create(&out).expect("create");
            if let Some(m) = &reserved {
                spool.reserve_metadata(m).expect("reserve");
            }
            let n = (BATCH_BYTES / std::mem::size_of::<dbn::MboMsg>() + 3) as u64;
            push_ids(&mut spool, n);
            // Reserving after a record does nothing.
            spool
                .reserve_metadata(&session(&["QQQ"], 0))
                .expect("reserve");
            let last = session(&["AAPL", "MSFT", "QQQ"], 5);
            assert_eq!(spool.finish(&last, InputEnd::Whole).expect("finish"), n);
            let (metadata, ids) = read_back(&out);
            assert_eq!(metadata, last, "reserved {reserved:?}");
            assert_eq!(ids, (0..n).collect::<Vec<_>>());
            assert_eq!(fs::read_dir(dir.path()).expect("list").count(), 1);
        }
    }

    /// A replay whose input failed: the file is finished, readable, and named
    /// `PATH.partial`; an earlier `PATH` is left as it was.
    #[test]
    fn after_a_failed_input_the_finished_file_keeps_the_partial_name() {
        // In place with the metadata fitting its room, in place outgrowing it, compressed.
        for (name, reserved) in [
            ("x.dbn", &["AAPL"][..]),
            ("y.dbn", &[]),
            ("z.dbn.zst", &["AAPL"]),
        ] {
            let dir = tempfile::tempdir().expect("tempdir");
            let out = dir.path().join(name);
            fs::write(&out, b"an earlier output").expect("write");
            let mut spool = Spool::create(&out).expect("create");
            spool
                .reserve_metadata(&session(reserved, 0))
                .expect("reserve");
            push_ids(&mut spool, 3);
            let last = session(&["AAPL"], 9);
            spool.finish(&last, InputEnd::Failed).expect("finish");
            assert_eq!(
                fs::read(&out).expect("read"),
                b"an earlier output",
                "{name}"
            );
            let partial = dir.path().join(format!("{name}.partial"));
            if !name.ends_with(".zst") {
                assert_eq!(read_back(&partial), (last, vec![0, 1, 2]), "{name}");
            }
            assert_eq!(fs::read_dir(dir.path()).expect("list").count(), 2, "{name}");
        }
    }

    #[test]
    fn a_spool_with_no_records_writes_the_metadata_alone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("x.dbn");
        let spool = Spool::create(&out).expect("create");
        let last = session(&["AAPL"], 0);
        assert_eq!(spool.finish(&last, InputEnd::Whole).expect("finish"), 0);
        assert_eq!(read_back(&out), (last, Vec::new()));
    }

    #[test]
    fn a_failed_finish_or_a_dropped_spool_removes_the_temporary() {
        let dir = tempfile::tempdir().expect("tempdir");
        // The output is a directory: not a regular file, so its records wait in the system's
        // temporary folder, and the output cannot be created.
        let name = format!("taken-{}", std::process::id());
        let out = dir.path().join(&name);
        fs::create_dir(&out).expect("mkdir");
        let temps = || -> Vec<std::path::PathBuf> {
            fs::read_dir(std::env::temp_dir())
                .expect("list the temporary folder")
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.ends_with(&format!("-{name}.records.tmp")))
                })
                .collect()
        };
        let mut spool = Spool::create(&out).expect("create");
        spool.push(&record()).expect("push");
        assert_eq!(temps().len(), 1, "the records wait in the temporary folder");
        assert!(
            spool.finish(&metadata(), InputEnd::Whole).is_err(),
            "cannot create over a directory"
        );
        assert!(temps().is_empty(), "a failed finish removes the temporary");

        for name in ["dropped.dbn", "dropped.dbn.zst"] {
            let out = dir.path().join(name);
            let mut spool = Spool::create(&out).expect("create");
            spool.push(&record()).expect("push");
            drop(spool);
            assert!(!dir.path().join(format!("{name}.records.tmp")).exists());
            assert!(
                !out.exists(),
                "{name}: no output whose metadata was never written"
            );
        }
    }
}
