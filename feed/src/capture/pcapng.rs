//! pcapng: a sequence of blocks (type, total length, body, total length again).
//!
//! Read: the section header (SHB, which fixes the byte order of its section), interface
//! descriptions (IDB: link type, snap length, and the `if_tsresol` / `if_tsoffset` options
//! that give timestamps their unit and epoch), enhanced (EPB) and simple (SPB) packet
//! blocks. Every other block is skipped by its length.

use super::error::{CaptureErrorKind, Fault};
use super::packets::{Frame, FrameSource};
use super::window::Window;
use super::MAX_RECORD_LEN;

const SHB: u32 = 0x0a0d_0d0a;
const IDB: u32 = 1;
const SPB: u32 = 3;
const EPB: u32 = 6;
/// Byte-order magic as written by a little-endian writer.
const BOM_LE: [u8; 4] = [0x4d, 0x3c, 0x2b, 0x1a];
const BOM_BE: [u8; 4] = [0x1a, 0x2b, 0x3c, 0x4d];
const OPT_END: u16 = 0;
const OPT_IF_TSRESOL: u16 = 9;
const OPT_IF_TSOFFSET: u16 = 14;

/// The unit of an interface's timestamps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TsUnit {
    /// 10^-n seconds (the default: n = 6, microseconds).
    Decimal(u8),
    /// 2^-n seconds.
    Binary(u8),
}

impl TsUnit {
    /// From the `if_tsresol` byte: the top bit picks base 2 over base 10.
    fn from_option(value: u8) -> Self {
        if value & 0x80 == 0 {
            TsUnit::Decimal(value)
        } else {
            TsUnit::Binary(value & 0x7f)
        }
    }

    /// `ts` units in nanoseconds, saturating.
    fn to_ns(self, ts: u64) -> u64 {
        let ts = u128::from(ts);
        let ns = match self {
            TsUnit::Decimal(n) if n <= 9 => ts * 10u128.pow(u32::from(9 - n)),
            TsUnit::Decimal(n) => 10u128
                .checked_pow(u32::from(n - 9))
                .map_or(0, |div| ts / div),
            TsUnit::Binary(n) => (ts * 1_000_000_000) >> n,
        };
        u64::try_from(ns).unwrap_or(u64::MAX)
    }
}

#[derive(Clone, Copy, Debug)]
struct Interface {
    linktype: u32,
    snaplen: u32,
    unit: TsUnit,
    /// Seconds added to every timestamp (`if_tsoffset`).
    offset_s: i64,
}

/// Reads pcapng blocks, yielding packet frames.
pub(crate) struct PcapNgFrames {
    big_endian: bool,
    in_section: bool,
    /// Interfaces of the current section, in id order. Grows only per IDB (cold).
    interfaces: Vec<Interface>,
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

fn corrupt(offset: u64, what: &'static str) -> Fault {
    Fault::new(offset, CaptureErrorKind::PcapNg(what))
}

impl PcapNgFrames {
    pub(crate) fn new() -> Self {
        PcapNgFrames {
            big_endian: false,
            in_section: false,
            interfaces: Vec::new(),
        }
    }

    /// Reads an IDB's fields and options.
    fn interface(&self, block: &[u8], offset: u64) -> Result<Interface, Fault> {
        let big = self.big_endian;
        if block.len() < 20 {
            return Err(corrupt(
                offset,
                "interface description block shorter than 20 bytes",
            ));
        }
        let mut iface = Interface {
            linktype: u32::from(u16_at(block, 8, big)),
            snaplen: u32_at(block, 12, big),
            unit: TsUnit::Decimal(6),
            offset_s: 0,
        };
        let end = block.len() - 4;
        let mut at = 16;
        while at + 4 <= end {
            let code = u16_at(block, at, big);
            let len = usize::from(u16_at(block, at + 2, big));
            if code == OPT_END {
                break;
            }
            let Some(value) = block
                .get(at + 4..at + 4 + len)
                .filter(|_| at + 4 + len <= end)
            else {
                return Err(corrupt(offset, "interface option runs past its block"));
            };
            match (code, value.len()) {
                (OPT_IF_TSRESOL, 1) => iface.unit = TsUnit::from_option(value[0]),
                (OPT_IF_TSOFFSET, 8) => {
                    let raw = u32_at(value, 0, big);
                    let raw2 = u32_at(value, 4, big);
                    let (hi, lo) = if big { (raw, raw2) } else { (raw2, raw) };
                    iface.offset_s = ((u64::from(hi) << 32) | u64::from(lo)) as i64;
                }
                _ => {}
            }
            // Option values are padded to 32 bits.
            at += 4 + len.div_ceil(4) * 4;
        }
        Ok(iface)
    }

    fn capture_ns(iface: &Interface, ts: u64) -> u64 {
        let ns = iface.unit.to_ns(ts);
        let shift = iface.offset_s.saturating_mul(1_000_000_000);
        ns.saturating_add_signed(shift)
    }
}

impl FrameSource for PcapNgFrames {
    fn next_frame(&mut self, window: &mut Window) -> Result<Option<Frame>, Fault> {
        loop {
            let (offset, op) = (window.pos(), window.read_op());
            let io = |e| Fault::io(offset, op, e);
            let have = window.fill(12).map_err(io)?;
            if have == 0 {
                return Ok(None);
            }
            if have < 12 {
                return Err(Fault::new(
                    offset,
                    CaptureErrorKind::TruncatedHeader {
                        what: "pcapng block header",
                        need: 12,
                        have,
                    },
                ));
            }
            let head = window.available();
            // The SHB's type reads the same in both byte orders; its byte-order magic then
            // fixes the order for the whole section.
            if u32_at(head, 0, false) == SHB {
                self.big_endian = match head.get(8..12) {
                    Some(b) if b == BOM_LE => false,
                    Some(b) if b == BOM_BE => true,
                    _ => {
                        return Err(corrupt(
                            offset,
                            "section header's byte-order magic is not 0x1A2B3C4D",
                        ))
                    }
                };
                self.in_section = true;
                self.interfaces.clear();
            } else if !self.in_section {
                return Err(corrupt(
                    offset,
                    "the file does not start with a section header",
                ));
            }
            let big = self.big_endian;
            let block_type = u32_at(head, 0, big);
            let total = u32_at(head, 4, big);
            if total < 12 || total & 3 != 0 {
                return Err(Fault::new(
                    offset,
                    CaptureErrorKind::BadBlockLength { len: total },
                ));
            }
            let total_len = total as usize;
            if total_len > MAX_RECORD_LEN {
                return Err(Fault::new(
                    offset,
                    CaptureErrorKind::TooLarge {
                        what: "pcapng block",
                        len: u64::from(total),
                        max: MAX_RECORD_LEN,
                    },
                ));
            }
            let have = window.fill(total_len).map_err(io)?;
            if have < total_len {
                return Err(Fault::new(
                    offset,
                    CaptureErrorKind::Truncated {
                        what: "pcapng block length",
                        len: u64::from(total),
                        remain: have as u64,
                    },
                ));
            }
            let block = &window.available()[..total_len];
            if u32_at(block, total_len - 4, big) != total {
                return Err(corrupt(
                    offset,
                    "a block's trailing length differs from its leading length",
                ));
            }
            if block_type == SHB {
                // pcapng 1.x is the only version defined; a 2.x section would be laid out
                // differently, and reading it as 1.x would make up packets.
                if total_len < 16 {
                    return Err(corrupt(offset, "section header too short for its version"));
                }
                let major = u16_at(block, 12, big);
                if major != 1 {
                    return Err(Fault::new(
                        offset + 12,
                        CaptureErrorKind::UnsupportedVersion {
                            what: "pcapng section header",
                            major,
                            minor: u16_at(block, 14, big),
                            supported: "1.x",
                        },
                    ));
                }
            }
            let start = window.start();
            match block_type {
                IDB => {
                    let iface = self.interface(block, offset)?;
                    self.interfaces.push(iface);
                }
                EPB => {
                    if total_len < 32 {
                        return Err(corrupt(
                            offset,
                            "enhanced packet block shorter than 32 bytes",
                        ));
                    }
                    let id = u32_at(block, 8, big);
                    let ts = (u64::from(u32_at(block, 12, big)) << 32)
                        | u64::from(u32_at(block, 16, big));
                    let captured = u32_at(block, 20, big);
                    let original = u32_at(block, 24, big);
                    let len = captured as usize;
                    if 28 + len > total_len - 4 {
                        return Err(corrupt(
                            offset,
                            "enhanced packet block's captured length runs past the block",
                        ));
                    }
                    let Some(iface) = self.interfaces.get(id as usize) else {
                        return Err(Fault::new(
                            offset,
                            CaptureErrorKind::UnknownInterface {
                                id,
                                count: self.interfaces.len(),
                            },
                        ));
                    };
                    return Ok(Some(Frame {
                        at: start + 28,
                        len,
                        record_len: total_len,
                        linktype: iface.linktype,
                        capture_ns: Some(Self::capture_ns(iface, ts)),
                        snapped: captured < original,
                    }));
                }
                SPB => {
                    if total_len < 16 {
                        return Err(corrupt(offset, "simple packet block shorter than 16 bytes"));
                    }
                    let Some(iface) = self.interfaces.first() else {
                        return Err(Fault::new(
                            offset,
                            CaptureErrorKind::UnknownInterface { id: 0, count: 0 },
                        ));
                    };
                    let original = u32_at(block, 8, big);
                    // The captured length is implicit: the original length, cut by the
                    // snap length and by the room in the block.
                    let mut len = (original as usize).min(total_len - 16);
                    if iface.snaplen != 0 {
                        len = len.min(iface.snaplen as usize);
                    }
                    return Ok(Some(Frame {
                        at: start + 12,
                        len,
                        record_len: total_len,
                        linktype: iface.linktype,
                        capture_ns: None,
                        snapped: len < original as usize,
                    }));
                }
                // SHB handled above; name resolution, statistics, custom and obsolete blocks
                // carry nothing to replay.
                _ => {}
            }
            window.consume(total_len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::link::tests::ethernet_udp;
    use super::super::packets::tests::mold_packet;
    use super::super::test_support::write_temp;
    use super::super::{
        CaptureErrorKind, CaptureReader, InputFormat, NoMessages, ReadOptions, UnsupportedLink,
    };
    use super::*;

    /// Writes pcapng blocks in one byte order.
    struct Writer {
        big: bool,
        out: Vec<u8>,
    }

    impl Writer {
        fn new() -> Self {
            Writer {
                big: false,
                out: Vec::new(),
            }
        }

        fn u16(&self, v: u16) -> [u8; 2] {
            if self.big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        }

        fn u32(&self, v: u32) -> [u8; 4] {
            if self.big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        }

        fn block(&mut self, block_type: u32, body: &[u8]) -> usize {
            let at = self.out.len();
            let padded = body.len().div_ceil(4) * 4;
            let total = (12 + padded) as u32;
            let (t, n) = (self.u32(block_type), self.u32(total));
            self.out.extend_from_slice(&t);
            self.out.extend_from_slice(&n);
            self.out.extend_from_slice(body);
            self.out.resize(self.out.len() + padded - body.len(), 0);
            self.out.extend_from_slice(&n);
            at
        }

        fn shb(&mut self, big: bool) {
            self.big = big;
            let mut body = self.u32(0x1a2b_3c4d).to_vec();
            body.extend_from_slice(&self.u16(1));
            body.extend_from_slice(&self.u16(0));
            body.extend_from_slice(&[0xff; 8]);
            self.block(SHB, &body);
        }

        /// An IDB with optional `if_tsresol` and `if_tsoffset`.
        fn idb(&mut self, linktype: u16, tsresol: Option<u8>, tsoffset: Option<i64>) {
            let mut body = self.u16(linktype).to_vec();
            body.extend_from_slice(&[0, 0]);
            body.extend_from_slice(&self.u32(0));
            if let Some(r) = tsresol {
                body.extend_from_slice(&self.u16(OPT_IF_TSRESOL));
                body.extend_from_slice(&self.u16(1));
                body.extend_from_slice(&[r, 0, 0, 0]);
            }
            if let Some(off) = tsoffset {
                body.extend_from_slice(&self.u16(OPT_IF_TSOFFSET));
                body.extend_from_slice(&self.u16(8));
                if self.big {
                    body.extend_from_slice(&off.to_be_bytes());
                } else {
                    body.extend_from_slice(&off.to_le_bytes());
                }
            }
            body.extend_from_slice(&[0, 0, 0, 0]);
            self.block(IDB, &body);
        }

        fn epb(&mut self, iface: u32, ts: u64, data: &[u8]) -> usize {
            let mut body = self.u32(iface).to_vec();
            body.extend_from_slice(&self.u32((ts >> 32) as u32));
            body.extend_from_slice(&self.u32(ts as u32));
            body.extend_from_slice(&self.u32(data.len() as u32));
            body.extend_from_slice(&self.u32(data.len() as u32));
            body.extend_from_slice(data);
            self.block(EPB, &body)
        }

        fn spb(&mut self, data: &[u8]) {
            let mut body = self.u32(data.len() as u32).to_vec();
            body.extend_from_slice(data);
            self.block(SPB, &body);
        }
    }

    /// A message as seen by the tests: bytes, sequence number, capture time.
    type Seen = (Vec<u8>, Option<u64>, Option<u64>);

    fn read_all(bytes: &[u8]) -> (Vec<Seen>, CaptureReader) {
        let file = write_temp(bytes);
        let mut r = CaptureReader::open_with_buffer(file.path(), ReadOptions::default(), 64)
            .expect("opens");
        assert_eq!(r.format(), InputFormat::PcapNg);
        let mut got = Vec::new();
        while let Some(m) = r.next_message().expect("valid") {
            got.push((m.bytes.to_vec(), m.seq, m.capture_ns));
        }
        (got, r)
    }

    #[test]
    fn reads_enhanced_packets_and_skips_other_blocks() {
        let mut w = Writer::new();
        w.shb(false);
        w.idb(1, Some(9), None);
        w.block(4, &[1, 2, 3, 4, 5]); // name resolution: skipped
        let p1 = mold_packet(b"S", 7, &[b"one", b"two"]);
        w.epb(0, 1_700_000_000_123_456_789, &ethernet_udp(&[0x8100], &p1));
        w.block(5, &[0; 16]); // interface statistics: skipped
        let p2 = mold_packet(b"S", 9, &[b"three"]);
        w.epb(0, 1_700_000_001_000_000_000, &ethernet_udp(&[], &p2));
        let (got, r) = read_all(&w.out);
        assert_eq!(
            got,
            [
                (b"one".to_vec(), Some(7), Some(1_700_000_000_123_456_789)),
                (b"two".to_vec(), Some(8), Some(1_700_000_000_123_456_789)),
                (b"three".to_vec(), Some(9), Some(1_700_000_001_000_000_000)),
            ]
        );
        let s = r.stats();
        assert_eq!((s.packets, s.mold_packets, s.gaps), (2, 2, 0));
        assert_eq!(s.bytes_consumed, w.out.len() as u64);
    }

    #[test]
    fn each_section_has_its_own_byte_order_interfaces_and_resolution() {
        let mut w = Writer::new();
        w.shb(true);
        // Default resolution: microseconds.
        w.idb(1, None, None);
        w.epb(
            0,
            1_500_000,
            &ethernet_udp(&[], &mold_packet(b"S", 1, &[b"a"])),
        );
        w.shb(false);
        // 2^-10 seconds, ten seconds of offset; a raw-IPv4 interface.
        w.idb(228, Some(0x80 | 10), Some(10));
        let datagram = &ethernet_udp(&[], &mold_packet(b"S", 2, &[b"b"]))[14..];
        w.epb(0, 1024 * 5 + 512, datagram);
        w.spb(datagram);
        let (got, r) = read_all(&w.out);
        assert_eq!(
            got,
            [
                (b"a".to_vec(), Some(1), Some(1_500_000_000)),
                (b"b".to_vec(), Some(2), Some(15_500_000_000)),
            ]
        );
        // The simple packet block repeats sequence 2: a duplicate, skipped.
        assert_eq!(r.stats().duplicates, 1);
        assert_eq!(r.stats().packets, 3);
    }

    #[test]
    fn frames_on_an_unsupported_link_are_counted_and_reported() {
        // An 802.11 interface beside an Ethernet one: its frames are skipped, the Ethernet
        // frames still deliver, and the count says what was skipped.
        let mut w = Writer::new();
        w.shb(false);
        w.idb(105, None, None);
        w.idb(1, None, None);
        let wifi = vec![0x88; 60];
        w.epb(0, 0, &wifi);
        w.epb(1, 0, &ethernet_udp(&[], &mold_packet(b"S", 1, &[b"m"])));
        w.epb(0, 0, &wifi);
        let (got, r) = read_all(&w.out);
        assert_eq!(got, [(b"m".to_vec(), Some(1), Some(0))]);
        let s = r.stats();
        assert_eq!(
            (
                s.packets,
                s.mold_packets,
                s.non_mold_packets,
                s.non_udp_frames
            ),
            (3, 1, 2, 2)
        );
        assert_eq!(
            (s.unsupported_link_frames, s.unsupported_link_type),
            (2, Some(105))
        );
        assert_eq!(
            UnsupportedLink::of(&s).map(|l| l.to_string()).as_deref(),
            Some(
                "link type 105 (IEEE 802.11) is not supported (Ethernet 1, raw IP 101/228, \
                 Linux cooked 113); frames skipped: 2"
            )
        );
        assert_eq!(r.no_messages(), None);

        // Only the 802.11 interface: no MoldUDP64 at all, and the reason.
        let mut w = Writer::new();
        w.shb(false);
        w.idb(105, None, None);
        w.epb(0, 0, &wifi);
        w.spb(&wifi);
        let (got, r) = read_all(&w.out);
        assert!(got.is_empty());
        let none = r.no_messages().expect("read to its end, nothing yielded");
        assert_eq!(
            none,
            NoMessages::NoMoldUdp64 {
                packets: 2,
                non_udp_frames: 2,
                non_mold_datagrams: 0,
                unsupported_link: Some(UnsupportedLink {
                    linktype: 105,
                    frames: 2
                }),
            }
        );
        assert!(none.held_no_feed_data());
    }

    #[test]
    fn a_section_without_packets_has_no_packets() {
        let mut w = Writer::new();
        w.shb(false);
        w.idb(1, None, None);
        let (got, r) = read_all(&w.out);
        assert!(got.is_empty());
        assert_eq!(r.no_messages(), Some(NoMessages::NoPackets));
    }

    #[test]
    fn timestamp_units() {
        assert_eq!(TsUnit::Decimal(6).to_ns(3), 3_000);
        assert_eq!(TsUnit::Decimal(9).to_ns(3), 3);
        assert_eq!(TsUnit::Decimal(12).to_ns(3_000), 3);
        assert_eq!(TsUnit::Decimal(127).to_ns(u64::MAX), 0);
        assert_eq!(TsUnit::Binary(1).to_ns(3), 1_500_000_000);
        assert_eq!(TsUnit::Decimal(0).to_ns(u64::MAX), u64::MAX);
        assert_eq!(TsUnit::from_option(0x8a), TsUnit::Binary(10));
    }

    #[test]
    fn truncated_block_is_an_error_with_its_offset() {
        let mut w = Writer::new();
        w.shb(false);
        w.idb(1, None, None);
        let packet = ethernet_udp(&[], &mold_packet(b"S", 1, &[b"m"]));
        w.epb(0, 0, &packet);
        let second = w.epb(0, 0, &packet);
        let total = w.out.len() - second;
        w.out.truncate(w.out.len() - 8);
        let file = write_temp(&w.out);
        let mut r = CaptureReader::open(file.path(), ReadOptions::default()).expect("opens");
        r.next_message().expect("valid").expect("first");
        let err = r.next_message().expect_err("truncated");
        assert_eq!((err.offset, err.index), (second as u64, 2));
        assert!(
            matches!(err.kind, CaptureErrorKind::Truncated { len, remain, .. }
                if len == total as u64 && remain == total as u64 - 8),
            "{err}"
        );
    }

    #[test]
    fn a_section_header_version_other_than_1_is_refused_naming_offset_and_version() {
        for big in [false, true] {
            let mut w = Writer::new();
            w.shb(big);
            w.idb(1, None, None);
            w.epb(0, 0, &ethernet_udp(&[], &mold_packet(b"S", 1, &[b"m"])));
            // A second section, major version 2.
            let second = w.out.len();
            w.shb(big);
            let major = w.u16(2);
            w.out[second + 12..second + 14].copy_from_slice(&major);
            let file = write_temp(&w.out);
            let mut r = CaptureReader::open(file.path(), ReadOptions::default()).expect("opens");
            r.next_message()
                .expect("valid")
                .expect("the first section's packet");
            let err = r.next_message().expect_err("version 2 is refused");
            assert_eq!(err.offset, second as u64 + 12, "{err}");
            assert!(
                matches!(
                    err.kind,
                    CaptureErrorKind::UnsupportedVersion {
                        major: 2,
                        minor: 0,
                        ..
                    }
                ),
                "{err}"
            );
            let text = err.to_string();
            assert!(text.contains(&file.path().display().to_string()), "{text}");
            assert!(text.contains("version 2.0"), "{text}");
        }
    }

    #[test]
    fn structural_errors() {
        // A packet block naming an interface that was never described.
        let mut w = Writer::new();
        w.shb(false);
        w.idb(1, None, None);
        let at = w.epb(3, 0, b"x");
        let file = write_temp(&w.out);
        let mut r = CaptureReader::open(file.path(), ReadOptions::default()).expect("opens");
        let err = r.next_message().expect_err("unknown interface");
        assert_eq!(err.offset, at as u64);
        assert!(matches!(
            err.kind,
            CaptureErrorKind::UnknownInterface { id: 3, count: 1 }
        ));

        // A block length that is not a multiple of 4.
        let mut w = Writer::new();
        w.shb(false);
        let at = w.out.len();
        w.out
            .extend_from_slice(&[6, 0, 0, 0, 13, 0, 0, 0, 0, 0, 0, 0, 0]);
        let file = write_temp(&w.out);
        let mut r = CaptureReader::open(file.path(), ReadOptions::default()).expect("opens");
        let err = r.next_message().expect_err("bad length");
        assert_eq!(err.offset, at as u64);
        assert!(matches!(
            err.kind,
            CaptureErrorKind::BadBlockLength { len: 13 }
        ));

        // Trailing length disagreeing with the leading one.
        let mut w = Writer::new();
        w.shb(false);
        let len = w.out.len();
        w.out[len - 1] = 0x7f;
        let file = write_temp(&w.out);
        let mut r = CaptureReader::open(file.path(), ReadOptions::default()).expect("opens");
        let err = r.next_message().expect_err("mismatch");
        assert!(matches!(err.kind, CaptureErrorKind::PcapNg(_)), "{err}");
    }
}
