//! A read that ends cleanly with no message says why: an empty file, a capture with headers
//! and no packets, a capture of another link type or of other traffic. Captures are laid out
//! by hand from the pcap and pcapng specifications.

use std::io::Write;

use ticklane_feed::capture::{CaptureReader, NoMessages, ReadOptions, UnsupportedLink};

fn temp(bytes: &[u8]) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().expect("temp file");
    f.write_all(bytes).expect("write");
    f
}

/// Reads `bytes` to the end, returning the messages and the reader.
fn read_all(bytes: &[u8]) -> (usize, CaptureReader, tempfile::NamedTempFile) {
    let file = temp(bytes);
    let mut r = CaptureReader::open(file.path(), ReadOptions::default()).expect("opens");
    let mut n = 0;
    while r.next_message().expect("valid").is_some() {
        n += 1;
    }
    (n, r, file)
}

/// A little-endian, microsecond pcap of `linktype` holding `frames`.
fn pcap(linktype: u32, frames: &[Vec<u8>]) -> Vec<u8> {
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

/// One little-endian pcapng block.
fn block(block_type: u32, body: &[u8]) -> Vec<u8> {
    let padded = body.len().div_ceil(4) * 4;
    let total = (12 + padded) as u32;
    let mut out = block_type.to_le_bytes().to_vec();
    out.extend_from_slice(&total.to_le_bytes());
    out.extend_from_slice(body);
    out.resize(8 + padded, 0);
    out.extend_from_slice(&total.to_le_bytes());
    out
}

/// A pcapng section with one interface of `linktype` and an enhanced packet block per frame.
fn pcapng(linktype: u16, frames: &[Vec<u8>]) -> Vec<u8> {
    let mut shb = 0x1a2b_3c4du32.to_le_bytes().to_vec();
    shb.extend_from_slice(&[1, 0, 0, 0]); // version 1.0
    shb.extend_from_slice(&[0xff; 8]); // section length unknown
    let mut out = block(0x0a0d_0d0a, &shb);
    let mut idb = linktype.to_le_bytes().to_vec();
    idb.extend_from_slice(&[0, 0, 0, 0, 0, 0]); // reserved, snaplen 0
    out.extend(block(1, &idb));
    for f in frames {
        let mut epb = vec![0; 12]; // interface 0, timestamp 0
        epb.extend_from_slice(&(f.len() as u32).to_le_bytes());
        epb.extend_from_slice(&(f.len() as u32).to_le_bytes());
        epb.extend_from_slice(f);
        out.extend(block(6, &epb));
    }
    out
}

/// An Ethernet frame around an IPv4 packet with protocol `proto` around `payload` (with an
/// 8-byte UDP header first when `proto` is 17).
fn ethernet_ipv4(proto: u8, payload: &[u8]) -> Vec<u8> {
    let mut l4 = Vec::new();
    if proto == 17 {
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

/// A MoldUDP64 packet: session, sequence, count, then each message after its u16 length.
fn mold(session: &[u8; 10], seq: u64, messages: &[&[u8]]) -> Vec<u8> {
    let mut p = session.to_vec();
    p.extend_from_slice(&seq.to_be_bytes());
    p.extend_from_slice(&(messages.len() as u16).to_be_bytes());
    for m in messages {
        p.extend_from_slice(&(m.len() as u16).to_be_bytes());
        p.extend_from_slice(m);
    }
    p
}

#[test]
fn an_empty_file_is_empty_input() {
    let (n, r, _file) = read_all(&[]);
    assert_eq!(n, 0);
    let why = r.no_messages().expect("nothing yielded");
    assert_eq!(why, NoMessages::EmptyInput);
    assert!(why.held_no_feed_data());
    assert_eq!(why.to_string(), "no messages: the input is empty");
}

#[test]
fn headers_without_packets_are_no_packets_in_both_formats() {
    for bytes in [pcap(1, &[]), pcapng(1, &[])] {
        let (n, r, _file) = read_all(&bytes);
        assert_eq!(n, 0);
        assert_eq!(r.stats().packets, 0);
        assert_eq!(r.no_messages(), Some(NoMessages::NoPackets));
    }
}

#[test]
fn a_pcapng_of_802_11_frames_names_the_link_type_and_the_frames_skipped() {
    let wifi = vec![
        0x08, 0x02, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0,
    ];
    let (n, r, _file) = read_all(&pcapng(105, &[wifi.clone(), wifi.clone(), wifi]));
    assert_eq!(n, 0);
    let s = r.stats();
    assert_eq!((s.packets, s.mold_packets), (3, 0));
    assert_eq!((s.non_udp_frames, s.non_mold_datagrams), (3, 0));
    assert_eq!(
        (s.unsupported_link_frames, s.unsupported_link_type),
        (3, Some(105))
    );
    let why = r.no_messages().expect("nothing yielded");
    assert_eq!(
        why,
        NoMessages::NoMoldUdp64 {
            packets: 3,
            non_udp_frames: 3,
            non_mold_datagrams: 0,
            unsupported_link: Some(UnsupportedLink {
                linktype: 105,
                frames: 3
            }),
        }
    );
    assert!(why.held_no_feed_data());
    let text = why.to_string();
    assert!(
        text.contains("link type 105 (IEEE 802.11) is not supported"),
        "{text}"
    );
    assert!(text.contains("frames skipped: 3"), "{text}");
}

#[test]
fn a_pcap_of_802_11_fails_at_open_naming_the_link_type() {
    let file = temp(&pcap(105, &[vec![0; 14]]));
    let err = CaptureReader::open(file.path(), ReadOptions::default())
        .err()
        .expect("802.11 is not unwrapped");
    let text = err.to_string();
    assert!(
        text.contains("pcap link type 105 (IEEE 802.11) is not supported"),
        "{text}"
    );
}

#[test]
fn other_traffic_is_counted_by_what_it_was() {
    let tcp = ethernet_ipv4(6, b"not udp at all");
    let dns = ethernet_ipv4(17, b"a short datagram");
    let mut arp = ethernet_ipv4(17, b"");
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    let (n, r, _file) = read_all(&pcap(1, &[tcp, dns, arp]));
    assert_eq!(n, 0);
    let s = r.stats();
    assert_eq!(
        (
            s.packets,
            s.non_udp_frames,
            s.non_mold_datagrams,
            s.non_mold_packets
        ),
        (3, 2, 1, 3)
    );
    assert_eq!(
        r.no_messages(),
        Some(NoMessages::NoMoldUdp64 {
            packets: 3,
            non_udp_frames: 2,
            non_mold_datagrams: 1,
            unsupported_link: None,
        })
    );
}

#[test]
fn a_session_of_heartbeats_held_feed_data_but_no_message() {
    let heartbeat = ethernet_ipv4(17, &mold(b"SESSION001", 1, &[]));
    let (n, r, _file) = read_all(&pcap(1, &[heartbeat.clone(), heartbeat]));
    assert_eq!(n, 0);
    let why = r.no_messages().expect("nothing yielded");
    assert!(
        matches!(
            why,
            NoMessages::NoMessageInMold {
                mold_packets: 2,
                heartbeats: 2,
                ..
            }
        ),
        "{why:?}"
    );
    assert!(!why.held_no_feed_data());
}

#[test]
fn a_capture_with_messages_has_no_reason_to_give() {
    let packet = ethernet_ipv4(17, &mold(b"SESSION001", 1, &[b"Shello"]));
    let (n, r, _file) = read_all(&pcap(1, &[packet]));
    assert_eq!(n, 1);
    assert_eq!(r.no_messages(), None);
}
