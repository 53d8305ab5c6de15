//! MoldUDP64 packets out of captured frames, run through the same sequencer as a live feed
//! ([`MoldRecovery`], with retransmission off), and handed out message by message.
//!
//! A message delivered straight out of the packet just read is lent from the window, with
//! no copy; only a message that waited in the reorder store behind a gap (a capture of
//! reordered packets) is copied, once, into a buffer that is reused for every packet.

use std::time::Duration;

use super::error::Fault;
use super::link::{self, Skip};
use super::window::Window;
use super::{CaptureCounts, Located};
use crate::moldudp64::{
    Delivered, GapRange, LossReason, MoldRecovery, Origin, Packet, RecoveryConfig, RecoverySink,
    RetransmitRequest, MAX_MESSAGES,
};
/// One captured frame, still in the window.
pub(crate) struct Frame {
    /// Index in the window's buffer of the frame's first byte.
    pub(crate) at: usize,
    /// Captured bytes.
    pub(crate) len: usize,
    /// Bytes of the whole record or block, consumed once the frame is done.
    pub(crate) record_len: usize,
    /// Link type of the interface that captured it.
    pub(crate) linktype: u32,
    /// Capture time, nanoseconds since the Unix epoch.
    pub(crate) capture_ns: Option<u64>,
    /// Fewer bytes captured than were on the wire.
    pub(crate) snapped: bool,
}

/// A capture container: pcap records or pcapng blocks.
pub(crate) trait FrameSource {
    /// The next frame, `None` at a clean end of input. The frame's record is left in the
    /// window (unconsumed) so its bytes stay in place; the caller consumes `record_len`.
    fn next_frame(&mut self, window: &mut Window) -> Result<Option<Frame>, Fault>;
}

/// Lost ranges a capture's statistics hold before their list first grows (it keeps them
/// all: the list grows once per declared gap, never per message).
pub(crate) const GAP_RANGES_RESERVED: usize = 1024;

/// Packets the reorder store holds while a gap waits for reordered packets.
const REORDER_PACKETS: usize = 1024;

/// Longest packet the reorder store holds: a jumbo frame's UDP payload. A longer one that
/// must wait declares the gap in front of it lost.
const REORDER_PACKET_LEN: usize = 9000 - 28;

/// The sequencer's settings for replay: no retransmission server to ask.
fn replay_config() -> RecoveryConfig {
    RecoveryConfig {
        store_packets: REORDER_PACKETS,
        max_packet_len: REORDER_PACKET_LEN,
        max_per_request: MAX_MESSAGES,
        start_sequence: None,
        retransmission: false,
        ..RecoveryConfig::default()
    }
}

/// Where a delivered message's bytes are.
#[derive(Clone, Copy, Debug)]
enum Place {
    /// In the window, at this index: the message came out of the packet just read.
    Window(usize),
    /// In the copy buffer, at this index: the message waited in the reorder store.
    Copied(usize),
}

/// A message the sequencer delivered, waiting to be handed out.
#[derive(Clone, Copy, Debug)]
struct Pending {
    place: Place,
    len: usize,
    /// Byte offset in the input of its length field.
    offset: u64,
    seq: Option<u64>,
    capture_ns: Option<u64>,
}

/// Counters of frames that never reach the session.
#[derive(Clone, Copy, Default)]
struct FrameCounts {
    packets: u64,
    mold_packets: u64,
    non_mold_packets: u64,
    ip_fragments: u64,
    snapped_packets: u64,
}

/// What the sequencer delivers and declares while one packet is fed: queued, in order.
struct Delivery {
    pending: Vec<Pending>,
    /// The next entry of `pending` to hand out.
    head: usize,
    copies: Vec<u8>,
    /// Index in the window of the packet being fed (its header's first byte).
    packet_at: usize,
    /// Every lost range, in the order declared.
    lost: Vec<GapRange>,
}

impl Delivery {
    /// Forgets what was handed out, keeping the buffers' capacity.
    fn clear(&mut self) {
        self.pending.clear();
        self.copies.clear();
        self.head = 0;
    }
}

impl RecoverySink for Delivery {
    fn message(&mut self, m: Delivered<'_>) {
        let place = if m.from_store {
            let at = self.copies.len();
            self.copies.extend_from_slice(m.bytes);
            Place::Copied(at)
        } else {
            Place::Window(self.packet_at + m.offset + 2)
        };
        self.pending.push(Pending {
            place,
            len: m.bytes.len(),
            offset: m.origin.offset + m.offset as u64,
            seq: m.seq,
            capture_ns: m.origin.time_ns,
        });
    }

    fn lost(&mut self, gap: GapRange, _: LossReason) {
        self.lost.push(gap);
    }

    /// Never called: replay runs with retransmission off, so nothing is asked for.
    fn request(&mut self, _: RetransmitRequest) {}
}

/// Messages to deliver out of a capture of MoldUDP64 packets.
pub(crate) struct PacketStream<F> {
    window: Window,
    frames: F,
    sequencer: MoldRecovery,
    delivery: Delivery,
    /// Set once the frames ran out (or failed) and the sequencer was told so.
    ended: bool,
    /// The input's fault, held back until the packets the sequencer stored behind a gap
    /// have been delivered: they were read whole before it.
    fault: Option<Fault>,
    /// Where the message handed out last lies: the copy buffer or the window.
    last_copied: bool,
    /// Bytes of the current record, consumed before the next is read so that the packet's
    /// bytes stay where the pending messages point.
    pending_record: usize,
    counts: FrameCounts,
}

impl<F: FrameSource> PacketStream<F> {
    pub(crate) fn new(window: Window, frames: F) -> Self {
        PacketStream {
            window,
            frames,
            sequencer: MoldRecovery::new(replay_config()),
            delivery: Delivery {
                pending: Vec::with_capacity(usize::from(MAX_MESSAGES)),
                head: 0,
                copies: Vec::with_capacity(REORDER_PACKET_LEN),
                packet_at: 0,
                lost: Vec::with_capacity(GAP_RANGES_RESERVED),
            },
            ended: false,
            fault: None,
            last_copied: false,
            pending_record: 0,
            counts: FrameCounts::default(),
        }
    }

    pub(crate) fn window(&self) -> &Window {
        &self.window
    }

    /// The buffer that holds the message [`PacketStream::next`] located last.
    pub(crate) fn message_buf(&self) -> &[u8] {
        if self.last_copied {
            &self.delivery.copies
        } else {
            self.window.buf()
        }
    }

    /// The next message to deliver, `None` at a clean end of input.
    pub(crate) fn next(&mut self) -> Result<Option<Located>, Fault> {
        loop {
            if let Some(&p) = self.delivery.pending.get(self.delivery.head) {
                self.delivery.head += 1;
                let (start, copied) = match p.place {
                    Place::Window(at) => (at, false),
                    Place::Copied(at) => (at, true),
                };
                self.last_copied = copied;
                return Ok(Some(Located {
                    start,
                    len: p.len,
                    offset: p.offset,
                    seq: p.seq,
                    capture_ns: p.capture_ns,
                }));
            }
            self.delivery.clear();
            if self.ended {
                return self.fault.take().map_or(Ok(None), Err);
            }
            self.window.consume(self.pending_record);
            self.pending_record = 0;
            let frame = match self.frames.next_frame(&mut self.window) {
                Ok(Some(frame)) => frame,
                // The input ends here, cleanly or not: packets waiting behind a gap are
                // delivered and the gap declared, as at a clean end, and only then the fault
                // is reported. Without this a truncated capture lost every packet after its
                // last unfilled gap, and the gap went uncounted.
                ended => {
                    self.ended = true;
                    self.fault = ended.err();
                    self.sequencer.end_of_input(&mut self.delivery);
                    continue;
                }
            };
            self.pending_record = frame.record_len;
            self.counts.packets += 1;
            self.counts.snapped_packets += u64::from(frame.snapped);
            let bytes = self
                .window
                .buf()
                .get(frame.at..frame.at + frame.len)
                .unwrap_or_default();
            let payload = match link::udp_payload(frame.linktype, bytes) {
                Ok(range) => range,
                Err(skip) => {
                    self.counts.non_mold_packets += 1;
                    self.counts.ip_fragments += u64::from(skip == Skip::Fragment);
                    continue;
                }
            };
            let packet = match Packet::parse(bytes.get(payload.clone()).unwrap_or_default()) {
                Ok(p) if p.session().is_plausible() => p,
                _ => {
                    self.counts.non_mold_packets += 1;
                    continue;
                }
            };
            self.counts.mold_packets += 1;
            let packet_at = frame.at + payload.start;
            self.delivery.packet_at = packet_at;
            let origin = Origin {
                offset: self.window.offset_of(packet_at),
                time_ns: frame.capture_ns,
            };
            // Capture time is the sequencer's clock; with retransmission off no timer
            // reads it.
            let now = Duration::from_nanos(frame.capture_ns.unwrap_or(0));
            self.sequencer
                .on_packet_from(&packet, origin, now, &mut self.delivery);
        }
    }

    /// Adds the packet and session counters to `stats`.
    /// Messages declared lost so far: cheaper than [`PacketStream::add_stats`], for a caller
    /// that checks after every message.
    pub(crate) fn messages_lost(&self) -> u64 {
        self.sequencer.stats().messages_lost
    }

    pub(crate) fn add_stats<'a>(&'a self, stats: &mut CaptureCounts<'a>) {
        let s = self.sequencer.stats();
        stats.packets = self.counts.packets;
        stats.mold_packets = self.counts.mold_packets;
        stats.non_mold_packets = self.counts.non_mold_packets;
        stats.ip_fragments = self.counts.ip_fragments;
        stats.snapped_packets = self.counts.snapped_packets;
        stats.heartbeats = s.heartbeats;
        stats.end_of_session = s.end_of_session;
        stats.unsequenced_packets = s.unsequenced_packets;
        stats.duplicates = s.duplicates;
        stats.reordered = s.recovered;
        stats.gaps = s.gaps_lost;
        stats.missing_messages = s.messages_lost;
        stats.gap_ranges = &self.delivery.lost;
        stats.session_changes = s.session_changes;
        stats.bytes_consumed = self.window.pos() + self.pending_record as u64;
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::PcapWriter;
    use crate::moldudp64::{PacketWriter, Session};

    /// A MoldUDP64 packet of `messages` starting at `seq` in session `name`.
    pub(crate) fn mold_packet(name: &[u8], seq: u64, messages: &[&[u8]]) -> Vec<u8> {
        let mut buf = vec![0u8; 4096];
        let session = if name.is_empty() {
            Session([0; 10])
        } else {
            Session::new(name).expect("short name")
        };
        let mut w = PacketWriter::new(&mut buf, session, seq).expect("fits");
        for m in messages {
            w.push(m).expect("fits");
        }
        let len = w.finish();
        buf.truncate(len);
        buf
    }

    // ---- Replay through the live sequencer ----

    use super::super::test_support::write_temp;
    use super::super::{CaptureReader, ReadOptions};
    use crate::moldudp64::GapRange;
    use std::net::SocketAddrV4;

    /// A pcap of `packets`, one UDP datagram each, in the order given.
    fn pcap_of(packets: &[Vec<u8>]) -> tempfile::NamedTempFile {
        let mut w = PcapWriter::new(Vec::new()).expect("in memory");
        let src: SocketAddrV4 = "10.0.0.1:5000".parse().expect("address");
        let dst: SocketAddrV4 = "233.54.12.111:26477".parse().expect("address");
        for (i, p) in (0u64..).zip(packets) {
            w.write_udp(1_000 + i, src, dst, p).expect("in memory");
        }
        write_temp(&w.finish().expect("in memory"))
    }

    /// Messages replayed: bytes and sequence number.
    type Replayed = Vec<(Vec<u8>, Option<u64>)>;

    /// Every message of the capture, and the reader's counters.
    fn replay(packets: &[Vec<u8>]) -> (Replayed, Stats) {
        let file = pcap_of(packets);
        let mut r = CaptureReader::open(file.path(), ReadOptions::default()).expect("opens");
        let mut got = Vec::new();
        while let Some(m) = r.next_message().expect("valid") {
            got.push((m.bytes.to_vec(), m.seq));
        }
        let s = r.stats();
        let stats = Stats {
            duplicates: s.duplicates,
            reordered: s.reordered,
            gaps: s.gaps,
            missing: s.missing_messages,
            ranges: s.gap_ranges.to_vec(),
            unsequenced: s.unsequenced_packets,
        };
        (got, stats)
    }

    #[derive(Debug, PartialEq, Eq)]
    struct Stats {
        duplicates: u64,
        reordered: u64,
        gaps: u64,
        missing: u64,
        ranges: Vec<GapRange>,
        unsequenced: u64,
    }

    fn m(bytes: &[u8], seq: Option<u64>) -> (Vec<u8>, Option<u64>) {
        (bytes.to_vec(), seq)
    }

    #[test]
    fn reordered_capture_replays_in_sequence_order() {
        let (got, stats) = replay(&[
            mold_packet(b"S", 1, &[b"a", b"b"]),
            mold_packet(b"S", 5, &[b"e"]),
            mold_packet(b"S", 3, &[b"c", b"d"]),
            mold_packet(b"S", 6, &[b"f"]),
        ]);
        assert_eq!(
            got,
            [
                m(b"a", Some(1)),
                m(b"b", Some(2)),
                m(b"c", Some(3)),
                m(b"d", Some(4)),
                m(b"e", Some(5)),
                m(b"f", Some(6)),
            ]
        );
        assert_eq!((stats.gaps, stats.missing, stats.reordered), (0, 0, 2));
    }

    #[test]
    fn duplicates_are_skipped_and_the_rest_of_their_packet_delivered() {
        let (got, stats) = replay(&[
            mold_packet(b"S", 1, &[b"a", b"b"]),
            mold_packet(b"S", 1, &[b"a", b"b"]),
            mold_packet(b"S", 2, &[b"b", b"c"]),
        ]);
        assert_eq!(got, [m(b"a", Some(1)), m(b"b", Some(2)), m(b"c", Some(3))]);
        assert_eq!((stats.duplicates, stats.gaps), (3, 0));
    }

    #[test]
    fn a_gap_never_filled_is_declared_at_end_of_input_with_its_range() {
        let (got, stats) = replay(&[
            mold_packet(b"S", 10, &[b"a"]),
            mold_packet(b"S", 14, &[b"e", b"f"]),
            mold_packet(b"S", 12, &[b"c"]),
        ]);
        // 12 came late and fills part of the gap; 11 and 13 never came.
        assert_eq!(
            got,
            [
                m(b"a", Some(10)),
                m(b"c", Some(12)),
                m(b"e", Some(14)),
                m(b"f", Some(15)),
            ]
        );
        assert_eq!(
            stats.ranges,
            [
                GapRange {
                    first: 11,
                    last: 11
                },
                GapRange {
                    first: 13,
                    last: 13
                }
            ]
        );
        assert_eq!((stats.gaps, stats.missing, stats.reordered), (2, 2, 1));
    }

    #[test]
    fn a_gap_is_declared_when_the_reorder_store_would_overflow() {
        // Packet 2 never comes; the store fills with the packets after it, and the one
        // that no longer fits gives the gap up: delivery goes on before the end of input.
        let mut packets = vec![mold_packet(b"S", 1, &[b"x"])];
        let later = u64::try_from(super::REORDER_PACKETS).expect("fits") + 1;
        // Five more after the one that overflows, so the end of input is still ahead.
        packets.extend((0..later + 5).map(|i| mold_packet(b"S", 3 + i, &[b"y"])));
        let file = pcap_of(&packets);
        let mut r = CaptureReader::open(file.path(), ReadOptions::default()).expect("opens");
        let first = r.next_message().expect("valid").map(|m| m.seq);
        assert_eq!(first, Some(Some(1)));
        let second = r.next_message().expect("valid").map(|m| m.seq);
        assert_eq!(second, Some(Some(3)));
        let s = r.stats();
        // Declared on overflow, not at the end: read up to the packet that did not fit.
        assert_eq!(s.packets, 1 + later);
        assert_eq!(s.gap_ranges, [GapRange { first: 2, last: 2 }]);
        let mut n = 2;
        while r.next_message().expect("valid").is_some() {
            n += 1;
        }
        assert_eq!(n, packets.len());
    }

    #[test]
    fn a_truncated_capture_delivers_the_packets_behind_a_gap_and_declares_it_before_its_error() {
        // Packet 2 never comes, so 3 and 4 wait in the reorder store; then the file ends in
        // the middle of a record.
        let file = pcap_of(&[
            mold_packet(b"S", 1, &[b"a"]),
            mold_packet(b"S", 3, &[b"c"]),
            mold_packet(b"S", 4, &[b"d", b"e"]),
        ]);
        let whole = std::fs::read(file.path()).expect("reads");
        let cut = write_temp(&whole[..whole.len() - 3]);
        let mut r = CaptureReader::open(cut.path(), ReadOptions::default()).expect("opens");
        let mut got = Vec::new();
        let fault = loop {
            match r.next_message() {
                Ok(Some(m)) => got.push((m.bytes.to_vec(), m.seq)),
                Ok(None) => panic!("a truncated capture ends with its error"),
                Err(e) => break e.to_string(),
            }
        };
        // 4's packet is the cut one; 3 was read whole and waited behind the gap.
        assert_eq!(got, [m(b"a", Some(1)), m(b"c", Some(3))]);
        assert!(fault.contains("truncated"), "{fault}");
        let s = r.stats();
        assert_eq!(s.gap_ranges, [GapRange { first: 2, last: 2 }]);
        assert_eq!((s.gaps, s.missing_messages), (1, 1));
        assert!(r.next_message().expect("ended").is_none());
    }

    #[test]
    fn blank_session_with_sequence_zero_replays_unsequenced_in_file_order() {
        let (got, stats) = replay(&[
            mold_packet(b"", 0, &[b"a", b"b"]),
            mold_packet(b"", 0, &[b"c"]),
            mold_packet(b"", 0, &[b"a"]),
        ]);
        // Nothing is a gap, a duplicate or out of order: file order, no numbers.
        assert_eq!(
            got,
            [m(b"a", None), m(b"b", None), m(b"c", None), m(b"a", None)]
        );
        assert_eq!((stats.unsequenced, stats.gaps, stats.duplicates), (3, 0, 0));
    }

    #[test]
    fn blank_packets_leave_a_sequenced_session_alone() {
        let (got, stats) = replay(&[
            mold_packet(b"S", 1, &[b"a"]),
            mold_packet(b"", 0, &[b"z"]),
            mold_packet(b"S", 2, &[b"b"]),
        ]);
        assert_eq!(got, [m(b"a", Some(1)), m(b"z", None), m(b"b", Some(2))]);
        assert_eq!((stats.unsequenced, stats.gaps), (1, 0));
    }
}
