//! Classic pcap: a 24-byte file header, then records of a 16-byte header and the frame.
//!
//! The magic number says both the byte order of every header field and the timestamp
//! resolution (microseconds for `a1b2c3d4`, nanoseconds for `a1b23c4d`).

use super::error::{CaptureErrorKind, Fault};
use super::link;
use super::packets::{Frame, FrameSource};
use super::window::Window;
use super::MAX_RECORD_LEN;

const FILE_HEADER_LEN: usize = 24;
const RECORD_HEADER_LEN: usize = 16;

/// Byte order and timestamp resolution, from the magic read as little-endian.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MagicKind {
    big_endian: bool,
    nanos: bool,
}

/// What `magic` (the first 4 bytes, read little-endian) says, if it is a pcap magic.
pub(crate) fn magic_kind(magic: u32) -> Option<MagicKind> {
    let (big_endian, nanos) = match magic {
        0xa1b2_c3d4 => (false, false),
        0xa1b2_3c4d => (false, true),
        0xd4c3_b2a1 => (true, false),
        0x4d3c_b2a1 => (true, true),
        _ => return None,
    };
    Some(MagicKind { big_endian, nanos })
}

fn u32_at(bytes: &[u8], at: usize, big_endian: bool) -> u32 {
    let raw = [bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]];
    if big_endian {
        u32::from_be_bytes(raw)
    } else {
        u32::from_le_bytes(raw)
    }
}

/// Reads pcap records.
pub(crate) struct PcapFrames {
    kind: MagicKind,
    linktype: u32,
}

impl PcapFrames {
    /// Reads and consumes the file header.
    pub(crate) fn open(window: &mut Window) -> Result<Self, Fault> {
        let have = window
            .fill(FILE_HEADER_LEN)
            .map_err(|e| Fault::new(0, e.into()))?;
        if have < FILE_HEADER_LEN {
            return Err(Fault::new(
                0,
                CaptureErrorKind::TruncatedHeader {
                    what: "pcap file header",
                    need: FILE_HEADER_LEN,
                    have,
                },
            ));
        }
        let head = window.available();
        let magic = u32_at(head, 0, false);
        let Some(kind) = magic_kind(magic) else {
            return Err(Fault::new(0, CaptureErrorKind::BadMagic { magic }));
        };
        // The upper bits of the field carry FCS information, not the link type.
        let linktype = u32_at(head, 20, kind.big_endian) & 0xffff;
        if !link::is_supported(linktype) {
            return Err(Fault::new(
                20,
                CaptureErrorKind::UnsupportedLinkType(linktype),
            ));
        }
        window.consume(FILE_HEADER_LEN);
        Ok(PcapFrames { kind, linktype })
    }
}

impl FrameSource for PcapFrames {
    fn next_frame(&mut self, window: &mut Window) -> Result<Option<Frame>, Fault> {
        let offset = window.pos();
        let io = |e: std::io::Error| Fault::new(offset, e.into());
        let have = window.fill(RECORD_HEADER_LEN).map_err(io)?;
        if have == 0 {
            return Ok(None);
        }
        if have < RECORD_HEADER_LEN {
            return Err(Fault::new(
                offset,
                CaptureErrorKind::TruncatedHeader {
                    what: "pcap record header",
                    need: RECORD_HEADER_LEN,
                    have,
                },
            ));
        }
        let head = window.available();
        let big = self.kind.big_endian;
        let ts_sec = u64::from(u32_at(head, 0, big));
        let ts_frac = u64::from(u32_at(head, 4, big));
        let captured = u32_at(head, 8, big);
        let original = u32_at(head, 12, big);
        let len = captured as usize;
        if len > MAX_RECORD_LEN {
            return Err(Fault::new(
                offset,
                CaptureErrorKind::TooLarge {
                    what: "pcap record",
                    len: u64::from(captured),
                    max: MAX_RECORD_LEN,
                },
            ));
        }
        let have = window.fill(RECORD_HEADER_LEN + len).map_err(io)?;
        if have < RECORD_HEADER_LEN + len {
            return Err(Fault::new(
                offset,
                CaptureErrorKind::Truncated {
                    what: "pcap record header",
                    len: len as u64,
                    remain: (have - RECORD_HEADER_LEN) as u64,
                },
            ));
        }
        let frac_ns = if self.kind.nanos {
            ts_frac
        } else {
            ts_frac * 1_000
        };
        Ok(Some(Frame {
            at: window.start() + RECORD_HEADER_LEN,
            len,
            record_len: RECORD_HEADER_LEN + len,
            linktype: self.linktype,
            capture_ns: Some(ts_sec * 1_000_000_000 + frac_ns),
            snapped: captured < original,
        }))
    }
}
