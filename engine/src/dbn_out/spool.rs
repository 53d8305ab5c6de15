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

use super::DbnOutError;

/// The records written so far, in a temporary file next to the output.
pub struct Spool {
    out: PathBuf,
    temp: PathBuf,
    records: RecordEncoder<BufWriter<File>>,
    count: u64,
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
            temp,
            records: RecordEncoder::new(BufWriter::with_capacity(1 << 16, file)),
            count: 0,
        })
    }

    /// Appends one record.
    ///
    /// # Errors
    ///
    /// If the temporary file cannot be written.
    #[inline]
    pub fn push<R: DbnEncodable>(&mut self, record: &R) -> Result<(), DbnOutError> {
        self.count += 1;
        self.records
            .encode_record(record)
            .map_err(|source| DbnOutError::Dbn {
                path: self.temp.clone(),
                source,
            })
    }

    /// Records pushed so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The records pushed, to be read back from the start (by a writer of another format),
    /// and the temporary's path, which the caller removes when done.
    ///
    /// # Errors
    ///
    /// If the temporary cannot be flushed or rewound.
    pub fn into_records(self) -> Result<(PathBuf, File), DbnOutError> {
        let Spool {
            temp, mut records, ..
        } = self;
        let io_at = |source| DbnOutError::Io {
            path: temp.clone(),
            source,
        };
        let mut file = records.get_ref().get_ref().try_clone().map_err(io_at)?;
        records.get_mut().flush().map_err(io_at)?;
        drop(records);
        io::Seek::rewind(&mut file).map_err(io_at)?;
        Ok((temp, file))
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
        } = self;
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
            .map_err(io_at(&temp))?;
        {
            let mut records = records;
            records.get_mut().flush().map_err(io_at(&temp))?;
        }
        let compression = if out.extension().is_some_and(|e| e == "zst") {
            Compression::Zstd
        } else {
            Compression::None
        };
        let file = File::create(&out).map_err(io_at(&out))?;
        let mut writer = DynWriter::new(BufWriter::with_capacity(1 << 16, file), compression)
            .map_err(dbn_at(&out))?;
        DbnMetadataEncoder::new(&mut writer)
            .encode(metadata)
            .map_err(dbn_at(&out))?;
        io::Seek::rewind(&mut spooled).map_err(io_at(&temp))?;
        io::copy(&mut BufReader::new(spooled), &mut writer).map_err(io_at(&out))?;
        writer.finish().map_err(dbn_at(&out))?;
        drop(writer);
        fs::remove_file(&temp).map_err(io_at(&temp))?;
        Ok(count)
    }
}
