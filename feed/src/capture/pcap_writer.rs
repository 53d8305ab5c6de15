//! Writes UDP datagrams as a classic pcap file with nanosecond timestamps, the way a
//! capture of the wire would show them: Ethernet, IPv4 and UDP headers around each payload,
//! so tshark and ticklane's own reader both read it.

use std::io::{self, Write};
use std::net::SocketAddrV4;

/// Nanosecond-resolution pcap magic, written little-endian.
const MAGIC_NANOS: u32 = 0xa1b2_3c4d;
/// LINKTYPE_ETHERNET.
const LINKTYPE_ETHERNET: u32 = 1;
/// Ethernet (14) + IPv4 (20) + UDP (8).
const HEADERS: usize = 42;
/// Largest UDP payload an IPv4 datagram carries.
pub const MAX_UDP_PAYLOAD: usize = 65_507;

/// A pcap file being written.
pub struct PcapWriter<W: Write> {
    out: W,
    /// The frame being written: headers, then the payload (allocated once).
    frame: Vec<u8>,
    /// IPv4 identification, incremented per datagram.
    ip_id: u16,
    /// Records written.
    records: u64,
}

/// The IPv4 header checksum (RFC 791): one's complement of the one's complement sum.
fn ipv4_checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = header
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header.
    ///
    /// # Errors
    ///
    /// Whatever `out` returns.
    pub fn new(mut out: W) -> io::Result<Self> {
        let mut header = [0u8; 24];
        header[0..4].copy_from_slice(&MAGIC_NANOS.to_le_bytes());
        header[4..6].copy_from_slice(&2u16.to_le_bytes()); // version 2.4
        header[6..8].copy_from_slice(&4u16.to_le_bytes());
        header[16..20].copy_from_slice(&65_535u32.to_le_bytes()); // snaplen
        header[20..24].copy_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        out.write_all(&header)?;
        Ok(PcapWriter {
            out,
            frame: Vec::with_capacity(HEADERS + MAX_UDP_PAYLOAD),
            ip_id: 0,
            records: 0,
        })
    }

    /// Writes one datagram from `src` to `dst`, received at `unix_ns` (nanoseconds since the
    /// Unix epoch).
    ///
    /// # Errors
    ///
    /// `InvalidInput` for a payload larger than a UDP datagram; otherwise whatever `out`
    /// returns.
    pub fn write_udp(
        &mut self,
        unix_ns: u64,
        src: SocketAddrV4,
        dst: SocketAddrV4,
        payload: &[u8],
    ) -> io::Result<()> {
        if payload.len() > MAX_UDP_PAYLOAD {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "payload larger than a UDP datagram",
            ));
        }
        let f = &mut self.frame;
        f.clear();
        // Ethernet: a multicast destination MAC for a multicast group (01:00:5e + 23 bits),
        // locally administered addresses otherwise.
        let ip = dst.ip().octets();
        if dst.ip().is_multicast() {
            f.extend_from_slice(&[0x01, 0x00, 0x5e, ip[1] & 0x7f, ip[2], ip[3]]);
        } else {
            f.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x02]);
        }
        f.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x01, 0x08, 0x00]);
        // IPv4.
        let total = (20 + 8 + payload.len()) as u16;
        let ip_start = f.len();
        f.extend_from_slice(&[0x45, 0]);
        f.extend_from_slice(&total.to_be_bytes());
        f.extend_from_slice(&self.ip_id.to_be_bytes());
        f.extend_from_slice(&[0x40, 0, 64, 17, 0, 0]); // don't fragment, TTL 64, UDP, checksum 0
        f.extend_from_slice(&src.ip().octets());
        f.extend_from_slice(&ip);
        let checksum = ipv4_checksum(&f[ip_start..ip_start + 20]);
        f[ip_start + 10..ip_start + 12].copy_from_slice(&checksum.to_be_bytes());
        // UDP (checksum 0: not computed, which IPv4 allows).
        f.extend_from_slice(&src.port().to_be_bytes());
        f.extend_from_slice(&dst.port().to_be_bytes());
        f.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        f.extend_from_slice(&[0, 0]);
        f.extend_from_slice(payload);
        self.ip_id = self.ip_id.wrapping_add(1);

        let mut record = [0u8; 16];
        record[0..4].copy_from_slice(&((unix_ns / 1_000_000_000) as u32).to_le_bytes());
        record[4..8].copy_from_slice(&((unix_ns % 1_000_000_000) as u32).to_le_bytes());
        record[8..12].copy_from_slice(&(f.len() as u32).to_le_bytes());
        record[12..16].copy_from_slice(&(f.len() as u32).to_le_bytes());
        self.out.write_all(&record)?;
        self.out.write_all(f)?;
        self.records += 1;
        Ok(())
    }

    /// Datagrams written.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Flushes and returns the sink.
    ///
    /// # Errors
    ///
    /// Whatever `out` returns.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::{CaptureReader, InputFormat, ReadOptions};
    use crate::itch::{owned, Nanos, OrderRef};
    use crate::moldudp64::{PacketWriter, Session};
    use std::net::Ipv4Addr;

    #[test]
    fn written_captures_read_back_with_their_messages() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("out.pcap");
        let mut w = PcapWriter::new(std::fs::File::create(&path).expect("create")).expect("header");
        let session = Session::new(b"TEST").expect("fits");
        for p in 0..3u64 {
            let mut buf = [0u8; 1400];
            let mut packet = PacketWriter::new(&mut buf, session, 1 + 2 * p).expect("room");
            for k in 0..2 {
                let m = owned::Message::OrderDelete(owned::OrderDelete {
                    timestamp: Nanos(p * 10 + k),
                    order_ref: OrderRef(p * 2 + k),
                    ..Default::default()
                });
                let mut mbuf = [0u8; 64];
                let len = m.encode(&mut mbuf);
                packet.push(&mbuf[..len]).expect("fits");
            }
            let len = packet.finish();
            let src = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 5000);
            let dst = SocketAddrV4::new(Ipv4Addr::new(239, 1, 2, 3), 26477);
            w.write_udp(1_700_000_000_123_456_789 + p, src, dst, &buf[..len])
                .expect("write");
        }
        assert_eq!(w.records(), 3);
        w.finish().expect("flush");
        let mut r = CaptureReader::open(&path, ReadOptions::default()).expect("open");
        assert_eq!(r.format(), InputFormat::Pcap);
        let mut seqs = Vec::new();
        while let Some(m) = r.next_message().expect("valid") {
            seqs.push(m.seq);
            assert_eq!(
                m.capture_ns.map(|t| t % 1_000_000_000 / 1_000_000),
                Some(123)
            );
        }
        assert_eq!(seqs, (1..=6).map(Some).collect::<Vec<_>>());
        assert_eq!(r.stats().gaps, 0);
    }

    #[test]
    fn ipv4_checksum_of_a_known_header() {
        // The example header from RFC 1071 discussions: checksum field zeroed.
        let h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(ipv4_checksum(&h), 0xb861);
    }
}
