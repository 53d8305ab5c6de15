//! Where a Parquet file came from, for its footer: the input's name, size and CRC-32, the
//! ticklane version, the view, and the replay's summary (its book counters) as JSON.
//!
//! The checksum is CRC-32 (IEEE, as zlib and `crc32fast` compute it, printed as 8 hex
//! digits) of the input's bytes as stored on disk (a `.gz` input is checksummed compressed,
//! so `python -c 'import zlib; ...'` or `crc32` on the file reproduces it). The input is read
//! once more for it, in 1 MiB blocks before the replay starts: the capture reader does not
//! expose its bytes, and the second read is served by the page cache. `crc32fast` was already
//! built for `flate2`, and runs at several GB/s with SSE 4.2/PCLMUL.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::ParquetOutError;
use crate::output_filter::OutputFilter;

/// Footer keys (all values are text).
pub mod keys {
    /// The input's file name (its last path component).
    pub const INPUT_NAME: &str = "ticklane.input_name";
    /// The input's size in bytes, decimal.
    pub const INPUT_BYTES: &str = "ticklane.input_bytes";
    /// CRC-32 (IEEE) of the input's bytes, 8 lower-case hex digits.
    pub const INPUT_CRC32: &str = "ticklane.input_crc32";
    /// The ticklane version that wrote the file.
    pub const VERSION: &str = "ticklane.version";
    /// The view: `bbo` or `mbp-10`.
    pub const SCHEMA: &str = "ticklane.schema";
    /// The replay's summary (the `--summary-json` object, book counters included).
    pub const SUMMARY: &str = "ticklane.summary";
    /// Which rows were written (`--symbols`, `--between`), as JSON: `{"symbols": null or
    /// ["AAPL", ...], "between_ns": null or [start, end]}` (ITCH ns since midnight, the end
    /// excluded). Both null: every row.
    pub const FILTER: &str = "ticklane.filter";
}

/// What is known about the input before the replay.
#[derive(Clone, Debug)]
pub struct Provenance {
    name: String,
    bytes: u64,
    crc32: u32,
}

impl Provenance {
    /// Reads `input` once, for its size and CRC-32.
    ///
    /// # Errors
    ///
    /// If the input cannot be read.
    pub fn of_input(input: &Path) -> Result<Self, ParquetOutError> {
        let io = |source| ParquetOutError::Io {
            path: PathBuf::from(input),
            source,
        };
        let mut file = File::open(input).map_err(io)?;
        let mut hasher = crc32fast::Hasher::new();
        let mut block = vec![0u8; 1 << 20];
        let mut bytes = 0u64;
        loop {
            let n = match file.read(&mut block) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(io(e)),
            };
            hasher.update(&block[..n]);
            bytes += n as u64;
        }
        Ok(Provenance {
            name: input
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            bytes,
            crc32: hasher.finalize(),
        })
    }

    /// The footer's key-value pairs, with `schema`, the summary JSON and the rows `filter`
    /// kept.
    pub fn footer(
        &self,
        schema: &str,
        summary_json: &str,
        filter: &OutputFilter,
    ) -> Vec<(String, String)> {
        vec![
            (keys::INPUT_NAME.into(), self.name.clone()),
            (keys::INPUT_BYTES.into(), self.bytes.to_string()),
            (keys::INPUT_CRC32.into(), format!("{:08x}", self.crc32)),
            (keys::VERSION.into(), env!("CARGO_PKG_VERSION").into()),
            (keys::SCHEMA.into(), schema.into()),
            (keys::SUMMARY.into(), summary_json.into()),
            (keys::FILTER.into(), filter_json(filter)),
        ]
    }
}

/// [`keys::FILTER`]'s value.
fn filter_json(filter: &OutputFilter) -> String {
    let symbols = if filter.has_symbols() {
        serde_json::Value::from(filter.symbols())
    } else {
        serde_json::Value::Null
    };
    let between = match filter.between() {
        Some(w) => serde_json::Value::from(vec![w.start.0, w.end.0]),
        None => serde_json::Value::Null,
    };
    serde_json::json!({ "symbols": symbols, "between_ns": between }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_of_a_known_input() {
        // The CRC-32 check value of "123456789" (the catalogue's `check` for CRC-32/ISO-HDLC).
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("digits.bin");
        std::fs::write(&path, b"123456789").expect("write");
        let p = Provenance::of_input(&path).expect("reads");
        let footer = p.footer("bbo", "{}", &OutputFilter::default());
        let get = |k: &str| {
            footer
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get(keys::INPUT_CRC32), Some("cbf43926"));
        assert_eq!(get(keys::INPUT_BYTES), Some("9"));
        assert_eq!(get(keys::INPUT_NAME), Some("digits.bin"));
        assert_eq!(get(keys::SCHEMA), Some("bbo"));
        assert_eq!(
            get(keys::FILTER),
            Some(r#"{"between_ns":null,"symbols":null}"#)
        );
    }

    #[test]
    fn the_filter_is_in_the_footer() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("x.bin");
        std::fs::write(&path, b"x").expect("write");
        let p = Provenance::of_input(&path).expect("reads");
        let filter = OutputFilter::parse("MSFT,AAPL", "09:30-16:00").expect("valid");
        let footer = p.footer("bbo", "{}", &filter);
        let value = footer
            .iter()
            .find(|(k, _)| k == keys::FILTER)
            .map(|(_, v)| v.as_str());
        // 09:30 and 16:00 in ns since midnight, worked out by hand: 34,200 s and 57,600 s.
        assert_eq!(
            value,
            Some(r#"{"between_ns":[34200000000000,57600000000000],"symbols":["AAPL","MSFT"]}"#)
        );
    }
}
