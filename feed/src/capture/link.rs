//! From a captured frame to its UDP payload: Ethernet (with stacked VLAN tags), raw IP or
//! Linux cooked capture, then IPv4 and UDP.
//!
//! Nothing here fails: a frame that does not lead to a whole UDP datagram is a [`Skip`]
//! reason, counted by [`UdpFrames`], because captures routinely hold other traffic. Those
//! counts are what lets a replay tell "a capture of something else" (another link type,
//! no UDP, UDP that is not MoldUDP64) from "a capture of an empty session".

use core::fmt;
use core::ops::Range;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use super::error::Fault;
use super::packets::{Frame, FrameSource};
use super::window::Window;

/// Ethernet.
pub(crate) const LINKTYPE_ETHERNET: u32 = 1;
/// Raw IP (version from the first nibble).
pub(crate) const LINKTYPE_RAW: u32 = 101;
/// Linux cooked capture v1 (`tcpdump -i any`).
pub(crate) const LINKTYPE_LINUX_SLL: u32 = 113;
/// Raw IPv4.
pub(crate) const LINKTYPE_IPV4: u32 = 228;

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_VLAN: u16 = 0x8100;
const ETHERTYPE_QINQ: u16 = 0x88a8;
/// Pre-standard QinQ outer tag, still emitted by some switches.
const ETHERTYPE_QINQ_OLD: u16 = 0x9100;
const IPPROTO_UDP: u8 = 17;

/// Why a frame carries no UDP payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Skip {
    /// The link type is not one this module unwraps.
    UnsupportedLink,
    /// Not IPv4 (ARP, IPv6, ...).
    NotIpv4,
    /// IPv4 but not UDP.
    NotUdp,
    /// An IPv4 fragment: reassembly is not attempted (MoldUDP64 packets fit one datagram).
    Fragment,
    /// Headers cut short or inconsistent.
    Malformed,
}

/// A pcap / pcapng link type (LINKTYPE_* value), displayed with its name where known so an
/// error says "105 (IEEE 802.11)" rather than a bare number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkType(pub u32);

impl LinkType {
    /// The common name of the link type, if it is one a capture is likely to hold.
    pub fn name(self) -> Option<&'static str> {
        // Values from the tcpdump.org LINKTYPE registry.
        Some(match self.0 {
            0 => "BSD loopback",
            LINKTYPE_ETHERNET => "Ethernet",
            9 => "PPP",
            LINKTYPE_RAW => "raw IP",
            105 => "IEEE 802.11",
            108 => "OpenBSD loopback",
            LINKTYPE_LINUX_SLL => "Linux cooked",
            127 => "IEEE 802.11 radiotap",
            147..=162 => "user-defined",
            LINKTYPE_IPV4 => "raw IPv4",
            229 => "raw IPv6",
            276 => "Linux cooked v2",
            _ => return None,
        })
    }
}

impl fmt::Display for LinkType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{} ({name})", self.0),
            None => write!(f, "{}", self.0),
        }
    }
}

/// True for the link types [`udp_payload`] unwraps.
pub(crate) fn is_supported(linktype: u32) -> bool {
    matches!(
        linktype,
        LINKTYPE_ETHERNET | LINKTYPE_RAW | LINKTYPE_LINUX_SLL | LINKTYPE_IPV4
    )
}

fn be16(bytes: &[u8], at: usize) -> Option<u16> {
    let raw = bytes.get(at..at.checked_add(2)?)?;
    Some(u16::from_be_bytes([raw[0], raw[1]]))
}

/// The range of `frame` holding the UDP payload.
pub(crate) fn udp_payload(linktype: u32, frame: &[u8]) -> Result<Range<usize>, Skip> {
    let ip_at = match linktype {
        LINKTYPE_ETHERNET => ethernet_payload(frame)?,
        LINKTYPE_RAW | LINKTYPE_IPV4 => 0,
        LINKTYPE_LINUX_SLL => match be16(frame, 14).ok_or(Skip::Malformed)? {
            ETHERTYPE_IPV4 => 16,
            _ => return Err(Skip::NotIpv4),
        },
        _ => return Err(Skip::UnsupportedLink),
    };
    let udp = ipv4_udp(frame.get(ip_at..).ok_or(Skip::Malformed)?)?;
    Ok(ip_at + udp.start..ip_at + udp.end)
}

/// Offset of the IPv4 header after the Ethernet header and any stack of VLAN tags.
fn ethernet_payload(frame: &[u8]) -> Result<usize, Skip> {
    // The ethertype after the two MAC addresses; each VLAN tag pushes the real one 4 bytes on.
    let mut at = 12;
    loop {
        match be16(frame, at).ok_or(Skip::Malformed)? {
            ETHERTYPE_VLAN | ETHERTYPE_QINQ | ETHERTYPE_QINQ_OLD => at += 4,
            ETHERTYPE_IPV4 => return Ok(at + 2),
            _ => return Err(Skip::NotIpv4),
        }
    }
}

/// The range of `ip` (an IPv4 packet) holding the UDP payload.
fn ipv4_udp(ip: &[u8]) -> Result<Range<usize>, Skip> {
    let first = *ip.first().ok_or(Skip::Malformed)?;
    if first >> 4 != 4 {
        return Err(Skip::NotIpv4);
    }
    let ihl = usize::from(first & 0x0f) * 4;
    if ihl < 20 || ip.len() < ihl {
        return Err(Skip::Malformed);
    }
    // The total length, not the frame, bounds the datagram: Ethernet pads short frames and
    // may append a frame check sequence. A frame shorter than the total was snapped.
    let total = usize::from(be16(ip, 2).ok_or(Skip::Malformed)?);
    if total < ihl {
        return Err(Skip::Malformed);
    }
    let end = total.min(ip.len());
    let flags_fragment = be16(ip, 6).ok_or(Skip::Malformed)?;
    // More-fragments set, or a fragment offset: either way not a whole datagram.
    if flags_fragment & 0x3fff != 0 {
        return Err(Skip::Fragment);
    }
    if ip[9] != IPPROTO_UDP {
        return Err(Skip::NotUdp);
    }
    let udp = &ip[ihl..end];
    let udp_len = usize::from(be16(udp, 4).ok_or(Skip::Malformed)?);
    if udp_len < 8 {
        return Err(Skip::Malformed);
    }
    Ok(ihl + 8..ihl + udp_len.min(udp.len()))
}

/// Frames a capture held that carried no whole IPv4/UDP datagram, by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SkippedFrames {
    /// On a link type [`udp_payload`] does not unwrap.
    pub(crate) unsupported_link: u64,
    /// The first such link type seen.
    pub(crate) first_unsupported_link: Option<u32>,
    /// All frames skipped, for every reason together.
    pub(crate) total: u64,
    /// Of `total`, IPv4 fragments.
    pub(crate) fragments: u64,
    /// Of `total`, frames cut short by the snap length.
    pub(crate) snapped: u64,
}

/// The counters behind [`SkippedFrames`], shared between the [`UdpFrames`] inside a packet
/// stream (which owns its frame source) and the reader that reports them. Written only by
/// the stream's thread; atomics only because the reader must stay `Send`.
#[derive(Debug, Default)]
pub(crate) struct SkipTally {
    unsupported_link: AtomicU64,
    /// Link type + 1 of the first unsupported frame; 0 for none.
    first_unsupported_link: AtomicU32,
    total: AtomicU64,
    fragments: AtomicU64,
    snapped: AtomicU64,
}

impl SkipTally {
    fn count(&self, skip: Skip, linktype: u32, snapped: bool) {
        let add = |n: &AtomicU64| n.fetch_add(1, Ordering::Relaxed);
        add(&self.total);
        match skip {
            Skip::UnsupportedLink => {
                add(&self.unsupported_link);
                let tagged = linktype.saturating_add(1);
                let _ = self.first_unsupported_link.compare_exchange(
                    0,
                    tagged,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
            }
            Skip::Fragment => {
                add(&self.fragments);
            }
            Skip::NotIpv4 | Skip::NotUdp | Skip::Malformed => {}
        }
        if snapped {
            add(&self.snapped);
        }
    }

    /// The counts so far.
    pub(crate) fn get(&self) -> SkippedFrames {
        let get = |n: &AtomicU64| n.load(Ordering::Relaxed);
        SkippedFrames {
            unsupported_link: get(&self.unsupported_link),
            first_unsupported_link: self
                .first_unsupported_link
                .load(Ordering::Relaxed)
                .checked_sub(1),
            total: get(&self.total),
            fragments: get(&self.fragments),
            snapped: get(&self.snapped),
        }
    }
}

/// A frame source that hands on only frames carrying a whole IPv4/UDP datagram, and counts
/// the others by reason in a [`SkipTally`].
pub(crate) struct UdpFrames<F> {
    inner: F,
    tally: Arc<SkipTally>,
}

impl<F> UdpFrames<F> {
    /// Wraps `inner`; the returned tally reads the counts while the stream owns the source.
    pub(crate) fn new(inner: F) -> (Self, Arc<SkipTally>) {
        let tally = Arc::new(SkipTally::default());
        let frames = UdpFrames {
            inner,
            tally: Arc::clone(&tally),
        };
        (frames, tally)
    }
}

impl<F: FrameSource> FrameSource for UdpFrames<F> {
    fn next_frame(&mut self, window: &mut Window) -> Result<Option<Frame>, Fault> {
        loop {
            let Some(frame) = self.inner.next_frame(window)? else {
                return Ok(None);
            };
            let bytes = window
                .buf()
                .get(frame.at..frame.at + frame.len)
                .unwrap_or_default();
            match udp_payload(frame.linktype, bytes) {
                Ok(_) => return Ok(Some(frame)),
                Err(skip) => {
                    self.tally.count(skip, frame.linktype, frame.snapped);
                    // Frame sources leave the record for the caller to consume; this one is
                    // done with.
                    window.consume(frame.record_len);
                }
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An Ethernet frame with the given VLAN tags (ethertypes) around an IPv4/UDP datagram.
    pub(crate) fn ethernet_udp(vlans: &[u16], payload: &[u8]) -> Vec<u8> {
        ethernet_ipv4(vlans, &ipv4_udp_datagram(payload, 0))
    }

    /// An Ethernet frame with the given VLAN tags (ethertypes) around an IPv4 packet.
    pub(crate) fn ethernet_ipv4(vlans: &[u16], packet: &[u8]) -> Vec<u8> {
        let mut f = vec![
            0x01, 0x00, 0x5e, 0x36, 0x0c, 0x6f, 0xd4, 0xaf, 0xf7, 0xcb, 0x20, 0xd5,
        ];
        for &tpid in vlans {
            f.extend_from_slice(&tpid.to_be_bytes());
            f.extend_from_slice(&[0x00, 0x8d]);
        }
        f.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        f.extend_from_slice(packet);
        f
    }

    /// An IPv4/UDP datagram; `frag` is the flags/fragment-offset field.
    pub(crate) fn ipv4_udp_datagram(payload: &[u8], frag: u16) -> Vec<u8> {
        let total = (20 + 8 + payload.len()) as u16;
        let mut d = vec![0x45, 0];
        d.extend_from_slice(&total.to_be_bytes());
        d.extend_from_slice(&[0, 0]);
        d.extend_from_slice(&frag.to_be_bytes());
        d.extend_from_slice(&[64, IPPROTO_UDP, 0, 0, 10, 0, 0, 1, 233, 54, 12, 111]);
        d.extend_from_slice(&[0xc1, 0xf5, 0x67, 0x6d]);
        d.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        d.extend_from_slice(&[0, 0]);
        d.extend_from_slice(payload);
        d
    }

    #[test]
    fn unwraps_plain_and_stacked_vlan_frames() {
        for vlans in [
            &[][..],
            &[ETHERTYPE_VLAN],
            &[ETHERTYPE_QINQ, ETHERTYPE_VLAN],
        ] {
            let mut frame = ethernet_udp(vlans, b"hello");
            // Ethernet padding and a trailer must not leak into the payload.
            frame.extend_from_slice(&[0xee; 6]);
            let r = udp_payload(LINKTYPE_ETHERNET, &frame).expect("udp");
            assert_eq!(&frame[r], b"hello");
        }
    }

    #[test]
    fn honours_ip_header_length() {
        let mut d = ipv4_udp_datagram(b"opts", 0);
        // Grow the header to 24 bytes with one 4-byte option (NOPs).
        d[0] = 0x46;
        d.splice(20..20, [1, 1, 1, 1]);
        let total = (d.len() as u16).to_be_bytes();
        d[2..4].copy_from_slice(&total);
        let r = udp_payload(LINKTYPE_IPV4, &d).expect("udp");
        assert_eq!(&d[r], b"opts");
    }

    #[test]
    fn skips_fragments_other_protocols_and_short_frames() {
        let first_fragment = ipv4_udp_datagram(b"x", 0x2000);
        assert_eq!(
            udp_payload(LINKTYPE_RAW, &first_fragment),
            Err(Skip::Fragment)
        );
        let later_fragment = ipv4_udp_datagram(b"x", 0x0010);
        assert_eq!(
            udp_payload(LINKTYPE_RAW, &later_fragment),
            Err(Skip::Fragment)
        );
        let dont_fragment = ipv4_udp_datagram(b"x", 0x4000);
        assert!(udp_payload(LINKTYPE_RAW, &dont_fragment).is_ok());
        let mut tcp = ipv4_udp_datagram(b"x", 0);
        tcp[9] = 6;
        assert_eq!(udp_payload(LINKTYPE_RAW, &tcp), Err(Skip::NotUdp));
        let mut arp = ethernet_udp(&[], b"x");
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        assert_eq!(udp_payload(LINKTYPE_ETHERNET, &arp), Err(Skip::NotIpv4));
        assert_eq!(
            udp_payload(LINKTYPE_ETHERNET, &arp[..13]),
            Err(Skip::Malformed)
        );
        assert_eq!(udp_payload(147, &arp), Err(Skip::UnsupportedLink));
    }

    #[test]
    fn link_types_display_with_their_names() {
        assert_eq!(LinkType(105).to_string(), "105 (IEEE 802.11)");
        assert_eq!(LinkType(1).to_string(), "1 (Ethernet)");
        assert_eq!(LinkType(4711).to_string(), "4711");
    }

    #[test]
    fn tally_counts_each_reason_and_keeps_the_first_unsupported_link() {
        let tally = SkipTally::default();
        assert_eq!(tally.get(), SkippedFrames::default());
        tally.count(Skip::UnsupportedLink, 105, false);
        tally.count(Skip::UnsupportedLink, 127, true);
        tally.count(Skip::Fragment, 1, false);
        tally.count(Skip::NotUdp, 1, false);
        assert_eq!(
            tally.get(),
            SkippedFrames {
                unsupported_link: 2,
                first_unsupported_link: Some(105),
                total: 4,
                fragments: 1,
                snapped: 1,
            }
        );
        // Link type 0 (BSD loopback) is a link type like any other, not "none".
        let tally = SkipTally::default();
        tally.count(Skip::UnsupportedLink, 0, false);
        assert_eq!(tally.get().first_unsupported_link, Some(0));
    }

    #[test]
    fn linux_cooked_capture() {
        let mut f = vec![0u8; 14];
        f.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        f.extend_from_slice(&ipv4_udp_datagram(b"sll", 0));
        let r = udp_payload(LINKTYPE_LINUX_SLL, &f).expect("udp");
        assert_eq!(&f[r], b"sll");
    }
}
