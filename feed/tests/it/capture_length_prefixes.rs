//! ITCH50 length prefixes checked against the type byte, with bytes laid out by hand from
//! the specification (the length table in `ticklane_feed::itch`'s docs), not by the crate's
//! encoders.

use ticklane_feed::capture::{CaptureErrorKind, CaptureReader, ReadOptions};
use ticklane_testkit::temp_file;

/// A message of type `tag` and `len` bytes (type byte included), its body a running count
/// so that a frame read at the wrong place shows.
fn message(tag: u8, len: usize) -> Vec<u8> {
    let mut m = vec![tag];
    m.extend((1..len).map(|i| i as u8));
    m
}

/// Types and their lengths from the ITCH 5.0 specification.
const SPEC: [(u8, usize); 23] = [
    (b'S', 12),
    (b'R', 39),
    (b'H', 25),
    (b'Y', 20),
    (b'L', 26),
    (b'V', 35),
    (b'W', 12),
    (b'K', 28),
    (b'J', 35),
    (b'h', 21),
    (b'A', 36),
    (b'F', 40),
    (b'E', 31),
    (b'C', 36),
    (b'X', 23),
    (b'D', 19),
    (b'U', 35),
    (b'P', 44),
    (b'Q', 40),
    (b'B', 19),
    (b'I', 50),
    (b'N', 20),
    (b'O', 48),
];

/// Every message type at its spec length, each after its 2-byte big-endian prefix.
fn every_type() -> (Vec<u8>, Vec<u64>) {
    let mut bytes = Vec::new();
    let mut offsets = Vec::new();
    for (tag, len) in SPEC {
        offsets.push(bytes.len() as u64);
        bytes.extend_from_slice(&(len as u16).to_be_bytes());
        bytes.extend_from_slice(&message(tag, len));
    }
    (bytes, offsets)
}

#[test]
fn every_type_at_its_spec_length_reads() {
    let (bytes, offsets) = every_type();
    let file = temp_file(&bytes);
    let mut r = CaptureReader::open(file.path(), ReadOptions::default()).expect("opens");
    for (i, (tag, len)) in SPEC.into_iter().enumerate() {
        let m = r.next_message().expect("valid").expect("more");
        assert_eq!(
            m.bytes,
            message(tag, len).as_slice(),
            "type {}",
            tag as char
        );
        assert_eq!(m.offset, offsets[i]);
    }
    assert!(r.next_message().expect("clean end").is_none());
}

#[test]
fn every_type_with_a_wrong_length_is_located_with_type_expected_and_found() {
    let (bytes, offsets) = every_type();
    for (i, (tag, len)) in SPEC.into_iter().enumerate() {
        for found in [len - 1, len + 1, 0xffff] {
            let mut damaged = bytes.clone();
            let at = offsets[i] as usize;
            damaged[at..at + 2].copy_from_slice(&(found as u16).to_be_bytes());
            let file = temp_file(&damaged);
            let mut r = CaptureReader::open(file.path(), ReadOptions::default()).expect("opens");
            for _ in 0..i {
                r.next_message().expect("valid").expect("before the damage");
            }
            let err = r.next_message().expect_err("wrong length");
            assert_eq!((err.offset, err.index), (offsets[i], i as u64 + 1));
            match err.kind {
                CaptureErrorKind::LengthMismatch {
                    tag: t,
                    expected,
                    found: f,
                } => assert_eq!((t, expected, f), (tag, len, found)),
                other => panic!("type {}: {other}", tag as char),
            }
            let text = err.to_string();
            assert!(
                text.contains(&format!("byte {}, message {}", offsets[i], i + 1)),
                "{text}"
            );
            assert!(!text.contains("RITCH"), "{text}");
        }
    }
}

#[test]
fn a_ffff_prefix_in_the_middle_of_a_long_file_is_reported_there() {
    // 10,000 adds (38 bytes a frame): 0xFFFF at frame 5,000 would otherwise swallow
    // 64 KiB (about 1,725 frames) as one message and read on from the middle of a frame.
    let frame_len = 2 + 36;
    let mut bytes = Vec::new();
    for _ in 0..10_000 {
        bytes.extend_from_slice(&36u16.to_be_bytes());
        bytes.extend_from_slice(&message(b'A', 36));
    }
    let at = 4_999 * frame_len;
    bytes[at..at + 2].copy_from_slice(&[0xff, 0xff]);
    let file = temp_file(&bytes);
    let mut r = CaptureReader::open(file.path(), ReadOptions::default()).expect("opens");
    let mut n = 0u64;
    let err = loop {
        match r.next_message() {
            Ok(Some(_)) => n += 1,
            Ok(None) => panic!("the damage must be reported"),
            Err(e) => break e,
        }
    };
    assert_eq!(n, 4_999);
    assert_eq!((err.offset, err.index), (at as u64, 5_000));
    assert!(
        matches!(
            err.kind,
            CaptureErrorKind::LengthMismatch {
                tag: b'A',
                expected: 36,
                found: 0xffff
            }
        ),
        "{err}"
    );
}

#[test]
fn zeroed_prefixes_get_the_ritch_hint_and_recover_lengths_reads_them() {
    let mut bytes = Vec::new();
    let kinds = [(b'S', 12), (b'A', 36), (b'D', 19), (b'P', 44)];
    for (tag, len) in kinds {
        bytes.extend_from_slice(&[0, 0]);
        bytes.extend_from_slice(&message(tag, len));
    }
    let file = temp_file(&bytes);
    let mut r = CaptureReader::open(file.path(), ReadOptions::default()).expect("opens");
    let err = r.next_message().expect_err("zeroed");
    assert!(
        matches!(err.kind, CaptureErrorKind::ZeroedPrefixes),
        "{err}"
    );
    assert!(err.to_string().contains("--recover-lengths"), "{err}");

    let opts = ReadOptions {
        recover_lengths: true,
    };
    let mut r = CaptureReader::open(file.path(), opts).expect("opens");
    for (tag, len) in kinds {
        let m = r.next_message().expect("valid").expect("more");
        assert_eq!(m.bytes, message(tag, len).as_slice());
    }
    assert!(r.next_message().expect("clean end").is_none());
}

#[test]
fn a_zero_prefix_after_good_frames_has_no_ritch_hint() {
    let mut bytes = Vec::new();
    for _ in 0..3 {
        bytes.extend_from_slice(&12u16.to_be_bytes());
        bytes.extend_from_slice(&message(b'S', 12));
    }
    bytes.extend_from_slice(&[0, 0]);
    bytes.extend_from_slice(&message(b'S', 12));
    let file = temp_file(&bytes);
    let mut r = CaptureReader::open(file.path(), ReadOptions::default()).expect("opens");
    for _ in 0..3 {
        r.next_message().expect("valid").expect("more");
    }
    let err = r.next_message().expect_err("zero");
    assert_eq!((err.offset, err.index), (42, 4));
    assert!(matches!(err.kind, CaptureErrorKind::ZeroLength), "{err}");
    assert!(!err.to_string().contains("--recover-lengths"), "{err}");
}
