//! MoldUDP64 packets out of captured frames, run through the same [`MoldSession`] as a live
//! feed, and walked message by message without copying.

use super::error::Fault;
use super::link::{self, Skip};
use super::window::Window;
use super::{CaptureStats, Located};
use crate::moldudp64::{Decision, MoldSession, Packet, PacketOutcome, HEADER_LEN};

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

/// Where the walk through the current packet stands.
#[derive(Clone, Copy)]
struct Cursor {
    /// Index in the window of the next message block's length field.
    pos: usize,
    /// Index of the next message in the packet.
    i: u16,
    outcome: PacketOutcome,
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

/// Messages to deliver out of a capture of MoldUDP64 packets.
pub(crate) struct PacketStream<F> {
    window: Window,
    frames: F,
    session: MoldSession,
    cursor: Option<Cursor>,
    /// Bytes of the current record, consumed before the next is read so that the packet's
    /// bytes stay where the cursor points.
    pending: usize,
    counts: FrameCounts,
}

impl<F: FrameSource> PacketStream<F> {
    pub(crate) fn new(window: Window, frames: F) -> Self {
        PacketStream {
            window,
            frames,
            session: MoldSession::new(),
            cursor: None,
            pending: 0,
            counts: FrameCounts::default(),
        }
    }

    pub(crate) fn window(&self) -> &Window {
        &self.window
    }

    /// The next message to deliver, `None` at a clean end of input.
    pub(crate) fn next(&mut self) -> Result<Option<Located>, Fault> {
        loop {
            if let Some(found) = self.next_in_packet() {
                return Ok(Some(found));
            }
            self.window.consume(self.pending);
            self.pending = 0;
            let Some(frame) = self.frames.next_frame(&mut self.window)? else {
                return Ok(None);
            };
            self.pending = frame.record_len;
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
            let outcome = self.session.on_packet(&packet);
            self.cursor = Some(Cursor {
                pos: frame.at + payload.start + HEADER_LEN,
                i: 0,
                outcome,
                capture_ns: frame.capture_ns,
            });
        }
    }

    /// The next message of the current packet that is to be delivered.
    fn next_in_packet(&mut self) -> Option<Located> {
        // Taken out so that any early return leaves no stale cursor behind.
        let mut cursor = self.cursor.take()?;
        let buf = self.window.buf();
        while cursor.i < cursor.outcome.count {
            // `Packet::parse` validated every block length, so these reads are in bounds.
            let len_field = buf.get(cursor.pos..cursor.pos + 2)?;
            let len = usize::from(u16::from_be_bytes([len_field[0], len_field[1]]));
            let at = cursor.pos;
            let decision = cursor.outcome.decide(cursor.i);
            cursor.i += 1;
            cursor.pos += 2 + len;
            if let Decision::Deliver { seq } = decision {
                let capture_ns = cursor.capture_ns;
                self.cursor = Some(cursor);
                return Some(Located {
                    start: at + 2,
                    len,
                    offset: self.window.offset_of(at),
                    seq,
                    capture_ns,
                });
            }
        }
        None
    }

    /// Adds the packet and session counters to `stats`.
    pub(crate) fn add_stats<'a>(&'a self, stats: &mut CaptureStats<'a>) {
        let s = self.session.stats();
        stats.packets = self.counts.packets;
        stats.mold_packets = self.counts.mold_packets;
        stats.non_mold_packets = self.counts.non_mold_packets;
        stats.ip_fragments = self.counts.ip_fragments;
        stats.snapped_packets = self.counts.snapped_packets;
        stats.heartbeats = s.heartbeats;
        stats.end_of_session = s.end_of_session;
        stats.unsequenced_packets = s.unsequenced_packets;
        stats.duplicates = s.duplicates;
        stats.gaps = s.gaps;
        stats.missing_messages = s.missing_messages;
        stats.gap_ranges = self.session.gap_ranges();
        stats.session_changes = s.session_changes;
        stats.bytes_consumed = self.window.pos() + self.pending as u64;
    }
}

#[cfg(test)]
pub(crate) mod tests {
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
}
