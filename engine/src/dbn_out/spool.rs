//! Where records wait until the metadata can be written. A DBN file opens with its metadata,
//! and the metadata holds the symbol mappings, which are known only once the whole stock
//! directory has been read; so records go to a temporary file beside the output while the
//! replay runs, and [`Spool::finish`] writes the metadata and then copies the records after
//! it (through zstd when the output ends in `.zst`). One pass over the input.

use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use dbn::encode::{
    DbnEncodable, DbnMetadataEncoder, DbnRecordEncoder as RecordEncoder, DynWriter, EncodeRecord,
};
use dbn::{Compression, Metadata};

use super::record_sink::RecordSink;
use super::DbnOutError;

/// The records written so far, in a temporary file next to the output.
pub struct Spool {
    out: PathBuf,
    temp: TempPath,
    records: RecordEncoder<BufWriter<File>>,
    count: u64,
    /// While set, records are dropped (`--symbols`/`--between` filtered them out).
    muted: bool,
}

impl Spool {
    /// A spool for the output `out`.
    ///
    /// # Errors
    ///
    /// If the temporary file cannot be created.
    pub fn create(out: &Path) -> Result<Self, DbnOutError> {
        let mut name = out.file_name().unwrap_or_default().to_os_string();
        name.push(".records.tmp");
        let temp = out.with_file_name(name);
        // Read as well as write: `finish` reads the records back through a clone.
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&temp)
            .map_err(|source| DbnOutError::Io {
                path: temp.clone(),
                source,
            })?;
        Ok(Spool {
            out: out.to_path_buf(),
            temp: TempPath(Some(temp)),
            records: RecordEncoder::new(BufWriter::with_capacity(1 << 16, file)),
            count: 0,
            muted: false,
        })
    }

    /// Appends one record.
    ///
    /// # Errors
    ///
    /// If the temporary file cannot be written.
    #[inline]
    pub fn push<R: DbnEncodable>(&mut self, record: &R) -> Result<(), DbnOutError> {
        if self.muted {
            return Ok(());
        }
        self.count += 1;
        self.records
            .encode_record(record)
            .map_err(|source| DbnOutError::Dbn {
                path: self.temp.path().to_path_buf(),
                source,
            })
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
    /// If the output cannot be written or the temporary read back.
    pub fn finish(self, metadata: &Metadata) -> Result<u64, DbnOutError> {
        let Spool {
            out,
            temp,
            records,
            count,
            muted: _,
        } = self;
        let mut temp = temp;
        let io_at = |path: &Path| {
            let path = path.to_path_buf();
            move |source: io::Error| DbnOutError::Io { path, source }
        };
        let dbn_at = |path: &Path| {
            let path = path.to_path_buf();
            move |source: dbn::Error| DbnOutError::Dbn { path, source }
        };
        let mut spooled = records
            .get_ref()
            .get_ref()
            .try_clone()
            .map_err(io_at(temp.path()))?;
        {
            let mut records = records;
            records.get_mut().flush().map_err(io_at(temp.path()))?;
        }
        let file = File::create(&out).map_err(io_at(&out))?;
        io::Seek::rewind(&mut spooled).map_err(io_at(temp.path()))?;
        if out.extension().is_some_and(|e| e == "zst") {
            let mut writer =
                DynWriter::new(BufWriter::with_capacity(1 << 16, file), Compression::Zstd)
                    .map_err(dbn_at(&out))?;
            DbnMetadataEncoder::new(&mut writer)
                .encode(metadata)
                .map_err(dbn_at(&out))?;
            io::copy(&mut BufReader::new(spooled), &mut writer).map_err(io_at(&out))?;
            writer.finish().map_err(dbn_at(&out))?;
        } else {
            let mut writer = BufWriter::new(file);
            DbnMetadataEncoder::new(&mut writer)
                .encode(metadata)
                .map_err(dbn_at(&out))?;
            let mut file = writer.into_inner().map_err(|e| DbnOutError::Io {
                path: out.clone(),
                source: e.into_error(),
            })?;
            // File to file: the kernel copies (copy_file_range), no pass through user space.
            io::copy(&mut spooled, &mut file).map_err(io_at(&out))?;
        }
        temp.remove().map_err(io_at(temp.path()))?;
        Ok(count)
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
