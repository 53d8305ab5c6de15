//! Captures laid out by hand from the pcap and pcapng formats, and the Ethernet, IPv4 and UDP
//! headers around a datagram, so that a capture reader is checked against the bytes the
//! formats define rather than against ticklane's own writer.
//!
//! Everything little-endian (the byte order a capture file's magic number announces);
//! timestamps zero; the network headers carry fixed addresses and no checksums.

#![forbid(unsafe_code)]

/// Link type 1: Ethernet.
pub const ETHERNET: u16 = 1;
/// Link type 105: IEEE 802.11, which ticklane's reader does not unwrap.
pub const WIFI: u16 = 105;
/// The IPv4 protocol number of UDP.
pub const UDP: u8 = 17;

/// A little-endian, microsecond pcap (version 2.4, snap length 65,535) of `linktype`
/// holding `frames`, every timestamp zero.
pub fn pcap(linktype: u32, frames: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&[0; 8]); // thiszone, sigfigs
    out.extend_from_slice(&65_535u32.to_le_bytes());
    out.extend_from_slice(&linktype.to_le_bytes());
    for f in frames {
        out.extend_from_slice(&[0; 8]); // seconds, microseconds
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(f);
    }
    out
}

/// One little-endian pcapng block: type, total length, the body padded to 4 bytes, the
/// total length again.
pub fn pcapng_block(block_type: u32, body: &[u8]) -> Vec<u8> {
    let padded = body.len().div_ceil(4) * 4;
    let total = (12 + padded) as u32;
    let mut out = block_type.to_le_bytes().to_vec();
    out.extend_from_slice(&total.to_le_bytes());
    out.extend_from_slice(body);
    out.resize(8 + padded, 0);
    out.extend_from_slice(&total.to_le_bytes());
    out
}

/// A pcapng section with one interface description per entry of `links` (snap length 0),
/// and an enhanced packet block per `(interface, frame)`, every timestamp zero.
pub fn pcapng(links: &[u16], frames: &[(u32, Vec<u8>)]) -> Vec<u8> {
    let mut shb = 0x1a2b_3c4du32.to_le_bytes().to_vec();
    shb.extend_from_slice(&[1, 0, 0, 0]); // version 1.0
    shb.extend_from_slice(&[0xff; 8]); // section length unknown
    let mut out = pcapng_block(0x0a0d_0d0a, &shb);
    for link in links {
        let mut idb = link.to_le_bytes().to_vec();
        idb.extend_from_slice(&[0, 0, 0, 0, 0, 0]); // reserved, snaplen 0
        out.extend(pcapng_block(1, &idb));
    }
    for (interface, f) in frames {
        let mut epb = interface.to_le_bytes().to_vec();
        epb.extend_from_slice(&[0; 8]); // timestamp 0
        epb.extend_from_slice(&(f.len() as u32).to_le_bytes());
        epb.extend_from_slice(&(f.len() as u32).to_le_bytes());
        epb.extend_from_slice(f);
        out.extend(pcapng_block(6, &epb));
    }
    out
}

/// A pcapng section with one interface of `linktype`, every frame on it.
pub fn pcapng_one_link(linktype: u16, frames: &[Vec<u8>]) -> Vec<u8> {
    let frames: Vec<(u32, Vec<u8>)> = frames.iter().map(|f| (0, f.clone())).collect();
    pcapng(&[linktype], &frames)
}

/// An Ethernet frame (to a multicast MAC) around an IPv4 packet (10.0.0.1 to 233.54.12.1)
/// with protocol `proto` around `payload`, with an 8-byte UDP header (ports 12345, no
/// checksum) first when `proto` is [`UDP`].
pub fn ethernet_ipv4(proto: u8, payload: &[u8]) -> Vec<u8> {
    let mut l4 = Vec::new();
    if proto == UDP {
        l4.extend_from_slice(&[0x30, 0x39, 0x30, 0x39]); // ports
        l4.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        l4.extend_from_slice(&[0, 0]); // no checksum
    }
    l4.extend_from_slice(payload);
    let mut f = vec![0x01, 0x00, 0x5e, 0, 0, 1, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&((20 + l4.len()) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0, 0x40, 0, 64, proto, 0, 0, 10, 0, 0, 1, 233, 54, 12, 1]);
    f.extend(l4);
    f
}

/// An Ethernet/IPv4/UDP frame carrying `datagram`.
pub fn udp_frame(datagram: &[u8]) -> Vec<u8> {
    ethernet_ipv4(UDP, datagram)
}
