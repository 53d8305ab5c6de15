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
            let offset = window.pos();
            let io = |e: std::io::Error| Fault::new(offset, e.into());
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
