//! A read that ends cleanly with no message says why: an empty file, a capture with headers
//! and no packets, a capture of another link type or of other traffic. Captures are laid out
//! by hand from the pcap and pcapng specifications.

use ticklane_feed::capture::{CaptureReader, NoMessages, ReadOptions, UnsupportedLink};
use ticklane_testkit::moldudp64;
use ticklane_testkit::pcap::{ethernet_ipv4, pcap, pcapng_one_link};
use ticklane_testkit::temp_file;

/// Reads `bytes` to the end, returning the messages and the reader.
fn read_all(bytes: &[u8]) -> (usize, CaptureReader, tempfile::NamedTempFile) {
    let file = temp_file(bytes);
    let mut r = CaptureReader::open(file.path(), ReadOptions::default()).expect("opens");
    let mut n = 0;
    while r.next_message().expect("valid").is_some() {
        n += 1;
    }
    (n, r, file)
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
    for bytes in [pcap(1, &[]), pcapng_one_link(1, &[])] {
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
    let (n, r, _file) = read_all(&pcapng_one_link(105, &[wifi.clone(), wifi.clone(), wifi]));
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
    let file = temp_file(&pcap(105, &[vec![0; 14]]));
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
    let heartbeat = ethernet_ipv4(17, &moldudp64::packet(b"SESSION001", 1, &[]));
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
    let packet = ethernet_ipv4(17, &moldudp64::packet(b"SESSION001", 1, &[b"Shello"]));
    let (n, r, _file) = read_all(&pcap(1, &[packet]));
    assert_eq!(n, 1);
    assert_eq!(r.no_messages(), None);
}
