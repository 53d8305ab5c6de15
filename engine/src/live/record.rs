//! `ticklane record`: every MoldUDP64 packet a line receives, written to pcap with
//! nanosecond timestamps, until end of session, a signal or a time limit.

use std::fs::File;
use std::io::BufWriter;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token};
use ticklane_feed::capture::PcapWriter;
use ticklane_feed::moldudp64::{Packet, PacketKind};
use ticklane_feed::net::UdpFeed;

use crate::pipeline::MoldFeedConfig;
use crate::snapshot::wall_clock_ns;

/// What a recording wrote.
#[derive(Debug, Default)]
pub struct RecordReport {
    /// Datagrams written.
    pub packets: u64,
    /// Why the recording ended.
    pub end: String,
}

/// Records the MoldUDP64 line `feed` to the pcap file `out`.
///
/// # Errors
///
/// If the socket or the file cannot be opened or written.
pub fn record_udp(
    feed: &MoldFeedConfig,
    out: &Path,
    stop: &AtomicBool,
) -> std::io::Result<RecordReport> {
    let mut socket = UdpFeed::open(&feed.udp)?;
    let local = match socket.local_addr()? {
        SocketAddr::V4(a) => a,
        SocketAddr::V6(_) => SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0),
    };
    let dst = SocketAddrV4::new(
        feed.udp.multicast_group.unwrap_or(*local.ip()),
        local.port(),
    );
    let mut writer = PcapWriter::new(BufWriter::new(File::create(out)?))?;
    let mut poll = Poll::new()?;
    poll.registry()
        .register(socket.source(), Token(0), Interest::READABLE)?;
    let mut events = Events::with_capacity(16);
    let mut buf = vec![0u8; 65_536];
    let started = Instant::now();
    let mut last_heard = Instant::now();
    let mut report = RecordReport::default();
    report.end = loop {
        if stop.load(Ordering::Relaxed) {
            break "stopped".into();
        }
        if feed.max_duration.is_some_and(|max| started.elapsed() > max) {
            break "time limit reached".into();
        }
        if last_heard.elapsed() > feed.silence_timeout {
            break format!("feed silent for {:?}", feed.silence_timeout);
        }
        poll.poll(&mut events, Some(Duration::from_millis(10)))
            .or_else(|e| {
                if e.kind() == std::io::ErrorKind::Interrupted {
                    Ok(())
                } else {
                    Err(e)
                }
            })?;
        let mut ended = false;
        while let Some(datagram) = socket.recv_from(&mut buf)? {
            let (bytes, from) = datagram;
            last_heard = Instant::now();
            let src = match from {
                SocketAddr::V4(a) => a,
                SocketAddr::V6(_) => SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0),
            };
            writer.write_udp(wall_clock_ns(), src, dst, bytes)?;
            report.packets += 1;
            ended |= Packet::parse(bytes).is_ok_and(|p| p.kind() == PacketKind::EndOfSession);
        }
        if ended {
            break "end of session".into();
        }
    };
    writer.finish()?;
    Ok(report)
}
