//! Gzipped ITCH50 files: a streaming decompressor feeding the ordinary ITCH50 reader.
//!
//! `MultiGzDecoder` because day files are often concatenations of gzip members (parallel
//! compressors such as pigz and bgzip write them); a single-member decoder would stop at the
//! first member's end and report a clean, short file.

use flate2::read::MultiGzDecoder;
use std::fs::File;
use std::io::{self, Read};

use super::read_thread::ReadThread;

/// The decompressed byte stream of `file`, inflated on a thread of its own
/// ([`ReadThread`]).
///
/// # Errors
///
/// If the thread cannot be started.
pub(crate) fn decoder(file: File) -> io::Result<Box<dyn Read + Send>> {
    let inflate = Box::new(MultiGzDecoder::new(file));
    Ok(Box::new(ReadThread::spawn("gunzip", inflate)?))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::write_temp;
    use super::super::{
        CaptureErrorKind, CaptureReader, InputFormat, IoOp, NoMessages, ReadOptions,
    };
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
    fn lengths_are_checked_against_types_as_in_a_plain_file() {
        let (messages, mut bytes) = framed(4);
        // The third frame (a D at 21 + 38 = 59) claims 0xFFFF bytes.
        bytes[59..61].copy_from_slice(&[0xff, 0xff]);
        let file = write_temp(&gzip(&bytes));
        let mut r = CaptureReader::open_with_buffer(file.path(), ReadOptions::default(), 50)
            .expect("opens");
        for m in &messages[..2] {
            assert_eq!(
                r.next_message().expect("valid").expect("more").bytes,
                m.as_slice()
            );
        }
        let err = r.next_message().expect_err("bad length");
        assert_eq!((err.offset, err.index), (59, 3));
        assert!(
            matches!(
                err.kind,
                CaptureErrorKind::LengthMismatch {
                    tag: b'D',
                    expected: 19,
                    found: 0xffff
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn zeroed_prefixes_get_the_ritch_hint_as_in_a_plain_file() {
        let (messages, mut bytes) = framed(3);
        let mut at = 0;
        for m in &messages {
            bytes[at..at + 2].fill(0);
            at += 2 + m.len();
        }
        let file = write_temp(&gzip(&bytes));
        let mut r =
            CaptureReader::open_with_buffer(file.path(), ReadOptions::default(), 8).expect("opens");
        let err = r.next_message().expect_err("zeroed");
        assert!(
            matches!(err.kind, CaptureErrorKind::ZeroedPrefixes),
            "{err}"
        );
    }

    #[test]
    fn a_stream_that_decompresses_to_nothing_is_empty() {
        let file = write_temp(&gzip(&[]));
        let mut r = CaptureReader::open(file.path(), ReadOptions::default()).expect("opens");
        assert_eq!(r.format(), InputFormat::GzipItch50);
        assert!(r.next_message().expect("clean end").is_none());
        assert_eq!(r.no_messages(), Some(NoMessages::EmptyInput));
    }

    #[test]
    fn a_bad_checksum_says_decompress_and_names_the_file() {
        let (messages, bytes) = framed(200);
        let mut gz = gzip(&bytes);
        // The member's trailer: CRC-32, then the length. Every message decompresses; the
        // check at the end fails.
        let crc_at = gz.len() - 8;
        gz[crc_at] ^= 0xff;
        let file = write_temp(&gz);
        let mut r = CaptureReader::open(file.path(), ReadOptions::default()).expect("opens");
        let mut n = 0;
        let err = loop {
            match r.next_message() {
                Ok(Some(_)) => n += 1,
                Ok(None) => panic!("a bad checksum must not end cleanly"),
                Err(e) => break e,
            }
        };
        assert!(n <= messages.len());
        assert!(
            matches!(
                err.kind,
                CaptureErrorKind::Io {
                    op: IoOp::Decompress,
                    ..
                }
            ),
            "{err}"
        );
        let text = err.to_string();
        let path = file.path().display().to_string();
        assert!(text.starts_with(&format!("file {path}: byte ")), "{text}");
        assert!(text.contains(": cannot decompress: "), "{text}");
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
                CaptureErrorKind::Io {
                    op: IoOp::Decompress,
                    ..
                } | CaptureErrorKind::Truncated { .. }
                    | CaptureErrorKind::TruncatedHeader { .. }
            ),
            "{err}"
        );
    }
}
