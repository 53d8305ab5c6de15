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

fn u16_at(bytes: &[u8], at: usize, big_endian: bool) -> u16 {
    let raw = [bytes[at], bytes[at + 1]];
    if big_endian {
        u16::from_be_bytes(raw)
    } else {
        u16::from_le_bytes(raw)
    }
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
        let op = window.read_op();
        let have = window
            .fill(FILE_HEADER_LEN)
            .map_err(|e| Fault::io(0, op, e))?;
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
        // Every pcap writer in use writes 2.4; another major version lays its headers out
        // differently, and reading on would turn them into frames that never were.
        let major = u16_at(head, 4, kind.big_endian);
        if major != 2 {
            return Err(Fault::new(
                4,
                CaptureErrorKind::UnsupportedVersion {
                    what: "pcap file header",
                    major,
                    minor: u16_at(head, 6, kind.big_endian),
                    supported: "2.x",
                },
            ));
        }
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
        let (offset, op) = (window.pos(), window.read_op());
        let io = |e| Fault::io(offset, op, e);
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

#[cfg(test)]
mod tests {
    use super::super::link::tests::{ethernet_ipv4, ethernet_udp, ipv4_udp_datagram};
    use super::super::packets::tests::mold_packet;
    use super::super::test_support::{data_dir, write_temp};
    use super::super::{CaptureErrorKind, CaptureReader, InputFormat, NoMessages, ReadOptions};
    use crate::itch;
    use crate::moldudp64::GapRange;

    /// One record: seconds, fraction (µs or ns), frame, original length if larger.
    struct Record {
        sec: u32,
        frac: u32,
        frame: Vec<u8>,
        original: Option<u32>,
    }

    fn record(sec: u32, frac: u32, frame: Vec<u8>) -> Record {
        Record {
            sec,
            frac,
            frame,
            original: None,
        }
    }

    fn pcap_file(big_endian: bool, nanos: bool, linktype: u32, records: &[Record]) -> Vec<u8> {
        let put = |out: &mut Vec<u8>, v: u32| {
            if big_endian {
                out.extend_from_slice(&v.to_be_bytes());
            } else {
                out.extend_from_slice(&v.to_le_bytes());
            }
        };
        let mut out = Vec::new();
        put(&mut out, if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 });
        let version: [u8; 4] = if big_endian {
            [0, 2, 0, 4]
        } else {
            [2, 0, 4, 0]
        };
        out.extend_from_slice(&version);
        put(&mut out, 0);
        put(&mut out, 0);
        put(&mut out, 262_144);
        put(&mut out, linktype);
        for r in records {
            put(&mut out, r.sec);
            put(&mut out, r.frac);
            put(&mut out, r.frame.len() as u32);
            put(&mut out, r.original.unwrap_or(r.frame.len() as u32));
            out.extend_from_slice(&r.frame);
        }
        out
    }

    #[test]
    fn reads_mold_packets_in_every_byte_order_and_resolution() {
        for (big_endian, nanos, vlans) in [
            (false, false, &[][..]),
            (false, true, &[0x8100][..]),
            (true, false, &[0x88a8, 0x8100][..]),
            (true, true, &[0x8100][..]),
        ] {
            let p1 = mold_packet(b"SESSION1", 100, &[b"Aone", b"Btwo"]);
            let p2 = mold_packet(b"SESSION1", 102, &[b"Cthree"]);
            let records = [
                record(1_700_000_000, 5, ethernet_udp(vlans, &p1)),
                record(1_700_000_001, 7, ethernet_udp(vlans, &p2)),
            ];
            let bytes = pcap_file(big_endian, nanos, 1, &records);
            let file = write_temp(&bytes);
            let mut r = CaptureReader::open_with_buffer(file.path(), ReadOptions::default(), 64)
                .expect("opens");
            assert_eq!(r.format(), InputFormat::Pcap);
            let unit = if nanos { 1 } else { 1_000 };
            let mut got = Vec::new();
            while let Some(m) = r.next_message().expect("valid") {
                got.push((m.bytes.to_vec(), m.seq, m.index, m.capture_ns));
            }
            let t0 = 1_700_000_000 * 1_000_000_000 + 5 * unit;
            let t1 = 1_700_000_001 * 1_000_000_000 + 7 * unit;
            assert_eq!(
                got,
                [
                    (b"Aone".to_vec(), Some(100), 1, Some(t0)),
                    (b"Btwo".to_vec(), Some(101), 2, Some(t0)),
                    (b"Cthree".to_vec(), Some(102), 3, Some(t1)),
                ],
                "big_endian {big_endian} nanos {nanos} vlans {vlans:?}"
            );
            let stats = r.stats();
            assert_eq!((stats.packets, stats.mold_packets, stats.gaps), (2, 2, 0));
            assert_eq!(stats.bytes_consumed, bytes.len() as u64);
        }
    }

    #[test]
    fn message_offset_points_at_its_block_length() {
        let p = mold_packet(b"S", 1, &[b"xyz"]);
        let bytes = pcap_file(
            false,
            false,
            1,
            &[record(0, 0, ethernet_udp(&[0x8100], &p))],
        );
        let file = write_temp(&bytes);
        let mut r = CaptureReader::open(file.path(), ReadOptions::default()).expect("opens");
        let m = r.next_message().expect("valid").expect("one");
        // File header 24, record header 16, Ethernet 14 + VLAN 4, IPv4 20, UDP 8, Mold 20.
        assert_eq!(m.offset, 24 + 16 + 18 + 20 + 8 + 20);
        let at = m.offset as usize;
        assert_eq!(&bytes[at..at + 5], &[0, 3, b'x', b'y', b'z']);
    }

    #[test]
    fn other_traffic_is_skipped_and_counted() {
        let mold = mold_packet(b"S", 1, &[b"m1"]);
        let mut tcp = ethernet_udp(&[], &mold);
        tcp[14 + 9] = 6;
        let mut arp = ethernet_udp(&[], b"whatever");
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        let records = [
            record(0, 0, ethernet_udp(&[], b"not a mold packet, just text")),
            record(0, 0, tcp),
            record(0, 0, arp),
            record(0, 0, ethernet_ipv4(&[], &ipv4_udp_datagram(&mold, 0x2000))),
            record(0, 0, ethernet_udp(&[], &mold)),
        ];
        let file = write_temp(&pcap_file(false, true, 1, &records));
        let mut r = CaptureReader::open(file.path(), ReadOptions::default()).expect("opens");
        assert_eq!(r.next_message().expect("valid").expect("one").bytes, b"m1");
        assert!(r.next_message().expect("valid").is_none());
        let s = r.stats();
        assert_eq!(
            (
                s.packets,
                s.mold_packets,
                s.non_mold_packets,
                s.ip_fragments
            ),
            (5, 1, 4, 1)
        );
        // TCP, ARP and the fragment carried no UDP datagram; the text was UDP but not Mold.
        assert_eq!((s.non_udp_frames, s.non_mold_datagrams), (3, 1));
        assert_eq!(
            (s.unsupported_link_frames, s.unsupported_link_type),
            (0, None)
        );
        assert_eq!(r.no_messages(), None, "a message was yielded");
    }

    #[test]
    fn a_capture_of_other_traffic_says_it_held_no_mold() {
        let mut tcp = ethernet_udp(&[], &mold_packet(b"S", 1, &[b"m1"]));
        tcp[14 + 9] = 6;
        let records = [
            record(0, 0, tcp),
            record(0, 0, ethernet_udp(&[], b"dns, say")),
        ];
        let file = write_temp(&pcap_file(false, false, 1, &records));
        let mut r = CaptureReader::open(file.path(), ReadOptions::default()).expect("opens");
        assert_eq!(r.no_messages(), None, "not read to its end yet");
        assert!(r.next_message().expect("valid").is_none());
        assert_eq!(
            r.no_messages(),
            Some(NoMessages::NoMoldUdp64 {
                packets: 2,
                non_udp_frames: 1,
                non_mold_datagrams: 1,
                unsupported_link: None,
            })
        );
    }

    #[test]
    fn a_header_without_packets_is_told_apart_from_an_empty_file() {
        let file = write_temp(&pcap_file(false, true, 1, &[]));
        let mut r = CaptureReader::open(file.path(), ReadOptions::default()).expect("opens");
        assert!(r.next_message().expect("valid").is_none());
        assert_eq!(r.no_messages(), Some(NoMessages::NoPackets));
    }

    #[test]
    fn duplicates_are_skipped_and_gaps_recorded() {
        let records = [
            record(
                0,
                0,
                ethernet_udp(&[], &mold_packet(b"S", 10, &[b"a", b"b"])),
            ),
            // A repeat (as from a second feed line) overlapping by one.
            record(
                0,
                0,
                ethernet_udp(&[], &mold_packet(b"S", 11, &[b"b", b"c"])),
            ),
            record(0, 0, ethernet_udp(&[], &mold_packet(b"S", 20, &[b"d"]))),
        ];
        let file = write_temp(&pcap_file(false, false, 1, &records));
        let mut r = CaptureReader::open(file.path(), ReadOptions::default()).expect("opens");
        let mut got = Vec::new();
        while let Some(m) = r.next_message().expect("valid") {
            got.push((m.bytes[0], m.seq, m.index));
        }
        assert_eq!(
            got,
            [
                (b'a', Some(10), 1),
                (b'b', Some(11), 2),
                (b'c', Some(12), 3),
                (b'd', Some(20), 4)
            ]
        );
        let s = r.stats();
        assert_eq!((s.duplicates, s.gaps, s.missing_messages), (1, 1, 7));
        assert_eq!(
            s.gap_ranges,
            [GapRange {
                first: 13,
                last: 19
            }]
        );
    }

    #[test]
    fn a_pcap_version_other_than_2_is_refused_naming_offset_and_version() {
        let p = mold_packet(b"S", 1, &[b"m1"]);
        for big_endian in [false, true] {
            let mut bytes = pcap_file(big_endian, false, 1, &[record(0, 0, ethernet_udp(&[], &p))]);
            // Major version 9, minor 4, at bytes 4..8 in the file's byte order.
            bytes[4..8].copy_from_slice(if big_endian {
                &[0, 9, 0, 4]
            } else {
                &[9, 0, 4, 0]
            });
            let file = write_temp(&bytes);
            let err = match CaptureReader::open(file.path(), ReadOptions::default()) {
                Err(e) => e,
                Ok(mut r) => r.next_message().expect_err("version 9 is refused"),
            };
            assert_eq!(err.offset, 4, "{err}");
            assert!(
                matches!(
                    err.kind,
                    CaptureErrorKind::UnsupportedVersion {
                        major: 9,
                        minor: 4,
                        ..
                    }
                ),
                "{err}"
            );
            let text = err.to_string();
            assert!(text.contains(&file.path().display().to_string()), "{text}");
            assert!(
                text.contains("byte 4") && text.contains("version 9.4"),
                "{text}"
            );
        }
    }

    #[test]
    fn truncated_record_is_an_error_with_its_offset() {
        let p = mold_packet(b"S", 1, &[b"m1"]);
        let frame = ethernet_udp(&[], &p);
        let frame_len = frame.len();
        let mut bytes = pcap_file(
            false,
            false,
            1,
            &[record(0, 0, frame.clone()), record(0, 0, frame)],
        );
        bytes.truncate(bytes.len() - 5);
        let file = write_temp(&bytes);
        let mut r = CaptureReader::open(file.path(), ReadOptions::default()).expect("opens");
        r.next_message().expect("valid").expect("first");
        let err = r.next_message().expect_err("truncated");
        assert_eq!(err.offset, (24 + 16 + frame_len) as u64);
        assert_eq!(err.index, 2);
        assert!(
            matches!(err.kind, CaptureErrorKind::Truncated { len, remain, .. }
                if len == frame_len as u64 && remain == frame_len as u64 - 5),
            "{err}"
        );
    }

    #[test]
    fn snapped_packets_are_counted_not_delivered() {
        let p = mold_packet(b"S", 1, &[b"abcdef"]);
        let mut frame = ethernet_udp(&[], &p);
        let original = frame.len() as u32;
        frame.truncate(frame.len() - 3);
        let rec = Record {
            sec: 0,
            frac: 0,
            frame,
            original: Some(original),
        };
        let file = write_temp(&pcap_file(false, false, 1, &[rec]));
        let mut r = CaptureReader::open(file.path(), ReadOptions::default()).expect("opens");
        assert!(r.next_message().expect("valid").is_none());
        let s = r.stats();
        assert_eq!((s.snapped_packets, s.non_mold_packets), (1, 1));
    }

    #[test]
    fn unsupported_link_type_and_short_header_fail_at_open() {
        let file = write_temp(&pcap_file(false, false, 147, &[]));
        let err = CaptureReader::open(file.path(), ReadOptions::default())
            .err()
            .expect("unsupported");
        assert!(matches!(
            err.kind,
            CaptureErrorKind::UnsupportedLinkType(147)
        ));
        let text = err.to_string();
        assert!(
            text.ends_with("byte 20, message 1: pcap link type 147 (user-defined) is not supported (Ethernet 1, raw IP 101/228, Linux cooked 113)"),
            "{text}"
        );
        let file = write_temp(&pcap_file(false, false, 1, &[])[..10]);
        let err = CaptureReader::open(file.path(), ReadOptions::default())
            .err()
            .expect("short");
        assert!(matches!(
            err.kind,
            CaptureErrorKind::TruncatedHeader {
                need: 24,
                have: 10,
                ..
            }
        ));
    }

    /// What one capture file held.
    struct FileTotals {
        name: String,
        messages: u64,
        mold_packets: u64,
        unsequenced_packets: u64,
        gaps: u64,
    }

    /// Reads every pcap in `dir`, checking that each message decodes.
    fn read_dir(dir: &std::path::Path) -> Vec<FileTotals> {
        let mut paths: Vec<_> = std::fs::read_dir(dir)
            .expect("data dir")
            .map(|e| e.expect("entry").path())
            .collect();
        paths.sort();
        let mut totals = Vec::new();
        for path in &paths {
            let mut r = CaptureReader::open(path, ReadOptions::default()).expect("opens");
            assert_eq!(r.format(), InputFormat::Pcap);
            while let Some(m) = r.next_message().expect("valid capture") {
                if let Err(e) = itch::decode(m.bytes) {
                    panic!("{}: message {}: {e}", path.display(), m.index);
                }
            }
            let s = r.stats();
            assert_eq!(s.non_mold_packets, 0, "{}", path.display());
            totals.push(FileTotals {
                name: path
                    .file_name()
                    .expect("name")
                    .to_string_lossy()
                    .into_owned(),
                messages: s.messages,
                mold_packets: s.mold_packets,
                unsequenced_packets: s.unsequenced_packets,
                gaps: s.gaps,
            });
        }
        totals
    }

    fn sums(files: &[FileTotals]) -> (usize, u64, u64) {
        (
            files.len(),
            files.iter().map(|f| f.mold_packets).sum(),
            files.iter().map(|f| f.messages).sum(),
        )
    }

    #[test]
    fn live_captures_decode_with_one_gap() {
        let Some(dir) = data_dir() else { return };
        let dir = dir.join("pcap/nasdaq-itch50-live");
        let files = read_dir(&dir);
        assert_eq!(sums(&files), (8, 9, 46));
        for f in &files {
            assert_eq!(f.unsequenced_packets, 0, "{}", f.name);
            let expected_gaps = u64::from(f.name == "Multiple.Packets.pcap");
            assert_eq!(f.gaps, expected_gaps, "{}", f.name);
        }

        let mut r = CaptureReader::open(&dir.join("Multiple.Packets.pcap"), ReadOptions::default())
            .expect("opens");
        let mut seqs = Vec::new();
        while let Some(m) = r.next_message().expect("valid") {
            seqs.push(m.seq.expect("sequenced"));
        }
        assert_eq!(seqs.len(), 39);
        assert_eq!(seqs[0], 14_764_496);
        assert_eq!(seqs[1], 19_009_117);
        assert!(seqs[1..].windows(2).all(|w| w[1] == w[0] + 1));
        let s = r.stats();
        assert_eq!(s.mold_packets, 2);
        assert_eq!(
            s.gap_ranges,
            [GapRange {
                first: 14_764_497,
                last: 19_009_116
            }]
        );
        assert_eq!(s.missing_messages, 19_009_116 - 14_764_497 + 1);
    }

    #[test]
    fn sanitized_captures_replay_unsequenced() {
        let Some(dir) = data_dir() else { return };
        let dir = dir.join("pcap/nasdaq-itch50-sanitized");
        let files = read_dir(&dir);
        assert_eq!(sums(&files), (15, 71, 71));
        for f in &files {
            assert_eq!(f.unsequenced_packets, f.messages, "{}", f.name);
            assert_eq!(f.gaps, 0, "{}", f.name);
        }
        let mut r = CaptureReader::open(&dir.join("OrderDelete.pcap"), ReadOptions::default())
            .expect("opens");
        while let Some(m) = r.next_message().expect("valid") {
            assert_eq!(m.seq, None);
        }
    }
}
