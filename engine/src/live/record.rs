//! `ticklane record`: every MoldUDP64 packet a line receives, written to pcap with
//! nanosecond timestamps, until end of session, a signal or a time limit.

use std::fs::File;
use std::io::BufWriter;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token};
use ticklane_feed::capture::PcapWriter;
use ticklane_feed::moldudp64::{Packet, PacketKind};
use ticklane_feed::net::{NetError, SocketError, SocketErrorCounts, UdpFeed};

use super::line::FEED_KEYS;
use crate::pipeline::{MoldFeedConfig, PollStep, SourceEnd};
use crate::snapshot::wall_clock_ns;

/// What a recording wrote.
#[derive(Debug, Default)]
pub struct RecordReport {
    /// Datagrams written.
    pub packets: u64,
    /// Receive errors, by kind (nothing waiting is not one).
    pub recv_errors: SocketErrorCounts,
    /// Why the recording ended: end of session, stopped, time limit, or silence.
    pub end: SourceEnd,
    /// The sequence of the first sequenced packet recorded: where the recording joined the
    /// line (past 1, what came before is not in the file).
    pub joined_at: Option<u64>,
    /// Gaps in the recorded sequence numbers (packets the line lost, or, with
    /// `feed.start_sequence = 1`, a late join) that no later packet filled: a recording
    /// does not ask for them again. A packet that came late (reordered) fills its part.
    pub gaps: u64,
    /// Messages missing from the file in those gaps.
    pub missing: u64,
}

/// Holes the watch keeps, to fill with late packets; past this many, a new hole is still
/// counted but no longer filled (a hostile stream cannot grow it without bound).
const HOLES_KEPT: usize = 65_536;

/// The sequence numbers a recording saw: where it joined and what it is missing.
#[derive(Debug)]
struct SequenceWatch {
    /// The next sequence expected; `None` before the first packet of a `join` line.
    next: Option<u64>,
    /// The sequences behind `next` that no packet brought yet, `[first, end)`, ascending.
    holes: Vec<(u64, u64)>,
}

impl SequenceWatch {
    fn new(next: Option<u64>) -> Self {
        SequenceWatch {
            next,
            holes: Vec::new(),
        }
    }

    fn see(&mut self, packet: &Packet<'_>, report: &mut RecordReport) {
        if packet.session().is_blank() && packet.sequence() == 0 {
            return; // unsequenced (sanitized)
        }
        let (first, end) = (packet.sequence(), packet.next_sequence());
        report.joined_at.get_or_insert(first);
        let next = *self.next.get_or_insert(first);
        if first > next {
            report.gaps += 1;
            report.missing += first - next;
            if self.holes.len() < HOLES_KEPT {
                self.holes.push((next, first));
            }
        } else if first < next {
            self.fill(first, end.min(next), report);
        }
        self.next = Some(next.max(end));
    }

    /// A late packet brought `[first, end)`: the holes it covers shrink, split or go.
    fn fill(&mut self, first: u64, end: u64, report: &mut RecordReport) {
        let mut i = 0;
        while i < self.holes.len() {
            let (a, b) = self.holes[i];
            let (from, to) = (a.max(first), b.min(end));
            if from >= to {
                i += 1;
                continue;
            }
            report.missing -= to - from;
            match (a < from, to < b) {
                (false, false) => {
                    self.holes.remove(i);
                    report.gaps -= 1;
                    continue;
                }
                (true, false) => self.holes[i] = (a, from),
                (false, true) => self.holes[i] = (to, b),
                (true, true) => {
                    self.holes[i] = (a, from);
                    self.holes.insert(i + 1, (to, b));
                    report.gaps += 1;
                    i += 1;
                }
            }
            i += 1;
        }
    }
}

/// Why a recording failed.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The line's socket could not be opened.
    #[error(transparent)]
    Socket(#[from] NetError),
    /// The bound socket's address could not be read (`getsockname`).
    #[error("cannot read the address the feed socket is bound to")]
    LocalAddr(#[source] std::io::Error),
    /// The event loop failed.
    #[error("{step}")]
    Poll {
        /// Which step.
        step: PollStep,
        /// The OS error.
        #[source]
        error: std::io::Error,
    },
    /// The pcap file could not be created or written.
    #[error("cannot write the capture {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        error: std::io::Error,
    },
}

/// Records the MoldUDP64 line `feed`, a configuration file's `[feed]` (its socket errors name
/// that file's keys), to the pcap file `out`.
///
/// # Errors
///
/// [`RecordError`]: the socket cannot be opened (naming the address and key), the event loop
/// fails, or the file cannot be created or written (naming the file).
pub fn record_udp(
    feed: &MoldFeedConfig,
    out: &Path,
    stop: &AtomicBool,
) -> Result<RecordReport, RecordError> {
    let write_failed = |error| RecordError::Write {
        path: out.to_path_buf(),
        error,
    };
    let poll_failed = |step| move |error| RecordError::Poll { step, error };
    let mut socket = UdpFeed::open(&feed.udp, &FEED_KEYS)?;
    let local = match socket.local_addr().map_err(RecordError::LocalAddr)? {
        SocketAddr::V4(a) => a,
        SocketAddr::V6(_) => SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0),
    };
    let dst = SocketAddrV4::new(
        feed.udp.multicast_group.unwrap_or(*local.ip()),
        local.port(),
    );
    let file = File::create(out).map_err(write_failed)?;
    let mut writer = PcapWriter::new(BufWriter::new(file)).map_err(write_failed)?;
    let mut poll = Poll::new().map_err(poll_failed(PollStep::Create))?;
    poll.registry()
        .register(socket.source(), Token(0), Interest::READABLE)
        .map_err(poll_failed(PollStep::Register))?;
    let mut events = Events::with_capacity(16);
    let mut buf = vec![0u8; 65_536];
    let started = Instant::now();
    let mut last_heard = Instant::now();
    let mut report = RecordReport::default();
    let mut watch = SequenceWatch::new(feed.recovery.start_sequence);
    report.end = loop {
        if stop.load(Ordering::Relaxed) {
            break SourceEnd::Stopped;
        }
        if let Some(max) = feed.max_duration.filter(|max| started.elapsed() > *max) {
            break SourceEnd::TimeLimit(max);
        }
        if last_heard.elapsed() > feed.silence_timeout {
            break SourceEnd::Silent(feed.silence_timeout);
        }
        if let Err(e) = poll.poll(&mut events, Some(Duration::from_millis(10))) {
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(poll_failed(PollStep::Wait)(e));
            }
        }
        let mut ended = false;
        loop {
            let (bytes, from) = match socket.recv_from(&mut buf) {
                Ok(Some(datagram)) => datagram,
                Ok(None) => break,
                Err(e) => {
                    report.recv_errors.count(e);
                    match e {
                        SocketError::Other(_) => break,
                        _ => continue,
                    }
                }
            };
            last_heard = Instant::now();
            let src = match from {
                SocketAddr::V4(a) => a,
                SocketAddr::V6(_) => SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0),
            };
            writer
                .write_udp(wall_clock_ns(), src, dst, bytes)
                .map_err(write_failed)?;
            report.packets += 1;
            if let Ok(packet) = Packet::parse(bytes) {
                watch.see(&packet, &mut report);
                ended |= packet.kind() == PacketKind::EndOfSession;
            }
        }
        if ended {
            break SourceEnd::EndOfSession;
        }
    };
    writer.finish().map_err(write_failed)?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklane_feed::moldudp64::{PacketWriter, Session};

    /// A data packet of `count` one-byte messages from `first`.
    fn packet(buf: &mut [u8], first: u64, count: u64) -> usize {
        let session = Session::new(b"REC").expect("fits");
        let mut w = PacketWriter::new(buf, session, first).expect("room");
        for _ in 0..count {
            w.push(b"m").expect("room");
        }
        w.finish()
    }

    #[test]
    fn a_recording_that_joins_at_30_says_so_and_counts_the_gap_from_1_when_asked() {
        for (start, gaps, missing) in [(Some(1), 2, 29 + 5), (None, 1, 5)] {
            let mut watch = SequenceWatch::new(start);
            let mut report = RecordReport::default();
            // Joins at 30 (3 messages), then 33 ..= 37 never come: 38 is next.
            for (first, count) in [(30, 3), (38, 2)] {
                let mut buf = [0u8; 64];
                let n = packet(&mut buf, first, count);
                watch.see(&Packet::parse(&buf[..n]).expect("valid"), &mut report);
            }
            assert_eq!(report.joined_at, Some(30));
            assert_eq!((report.gaps, report.missing), (gaps, missing), "{start:?}");
        }
    }

    #[test]
    fn a_late_packet_fills_its_part_of_a_gap_and_only_what_never_came_is_missing() {
        let mut watch = SequenceWatch::new(Some(1));
        let mut report = RecordReport::default();
        // 1..=2, then 10..=11: the gap 3..=9. Then 5..=6 late (the gap splits in two), then
        // 3..=4 late (the first part goes); 7..=9 never come.
        for (first, count) in [(1, 2), (10, 2), (5, 2), (3, 2)] {
            let mut buf = [0u8; 64];
            let n = packet(&mut buf, first, count);
            watch.see(&Packet::parse(&buf[..n]).expect("valid"), &mut report);
            if first == 5 {
                assert_eq!((report.gaps, report.missing), (2, 5), "split");
            }
        }
        assert_eq!((report.gaps, report.missing), (1, 3));
        assert_eq!(watch.holes, [(7, 10)]);
    }
}
