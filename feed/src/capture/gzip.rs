//! Gzipped ITCH50 files: a streaming decompressor feeding the ordinary ITCH50 reader.
//!
//! `MultiGzDecoder` because day files are often concatenations of gzip members (parallel
//! compressors such as pigz and bgzip write them); a single-member decoder would stop at the
//! first member's end and report a clean, short file.

use flate2::read::MultiGzDecoder;
use std::fs::File;
use std::io::Read;

/// The decompressed byte stream of `file`.
pub(crate) fn decoder(file: File) -> Box<dyn Read + Send> {
    Box::new(MultiGzDecoder::new(file))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::write_temp;
    use super::super::{CaptureErrorKind, CaptureReader, InputFormat, ReadOptions};
    use flate2::write::GzEncoder;
    use flate2::Compression;
    use std::io::Write;

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut enc = GzEncoder::new(Vec::new(), Compression::fast());
        enc.write_all(bytes).expect("in memory");
        enc.finish().expect("in memory")
    }

    fn framed(n: u64) -> (Vec<Vec<u8>>, Vec<u8>) {
        let messages = super::super::itch50::tests::sample_messages(n);
        let bytes = super::super::itch50::tests::framed(&messages);
        (messages, bytes)
    }

    #[test]
    fn round_trips_with_messages_split_across_chunks() {
        let (messages, bytes) = framed(500);
        // Two members, split mid-message, as a parallel compressor may write them.
        let mut gz = gzip(&bytes[..1001]);
        gz.extend_from_slice(&gzip(&bytes[1001..]));
        let file = write_temp(&gz);
        // A 50-byte buffer: most 38- and 21-byte frames straddle a refill.
        let mut r = CaptureReader::open_with_buffer(file.path(), ReadOptions::default(), 50)
            .expect("opens");
        assert_eq!(r.format(), InputFormat::GzipItch50);
        let buffer = r.inner.window().buf().as_ptr();
        let mut offset = 0;
        for m in &messages {
            let got = r.next_message().expect("valid").expect("more");
            assert_eq!(got.bytes, m.as_slice());
            assert_eq!(got.offset, offset);
            offset += 2 + m.len() as u64;
        }
        assert!(r.next_message().expect("clean end").is_none());
        assert_eq!(
            r.inner.window().buf().as_ptr(),
            buffer,
            "buffer reallocated"
        );
        let stats = r.stats();
        assert_eq!(stats.messages, 500);
        assert_eq!(stats.bytes_consumed, bytes.len() as u64);
        assert_eq!(stats.bytes_total, None);
    }

    #[test]
    fn truncated_gzip_is_an_error_after_the_messages_before_it() {
        let (_, bytes) = framed(200);
        let gz = gzip(&bytes);
        let file = write_temp(&gz[..gz.len() / 2]);
        let mut r = CaptureReader::open(file.path(), ReadOptions::default()).expect("opens");
        let mut n = 0;
        let err = loop {
            match r.next_message() {
                Ok(Some(_)) => n += 1,
                Ok(None) => panic!("a cut gzip stream must not end cleanly"),
                Err(e) => break e,
            }
        };
        assert_eq!(err.index, n + 1);
        // Either the decompressor notices first, or the ITCH framing does.
        assert!(
            matches!(
                err.kind,
                CaptureErrorKind::Io(_)
                    | CaptureErrorKind::Truncated { .. }
                    | CaptureErrorKind::TruncatedHeader { .. }
            ),
            "{err}"
        );
    }
}
