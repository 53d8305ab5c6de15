//! Receive-buffer overruns counted by the kernel: datagrams that arrived while a socket's
//! receive queue was full, and were dropped before the reader ever saw them.
//!
//! Linux reports them per socket in the last column (`drops`) of `/proc/net/udp` and
//! `/proc/net/udp6`; the row is found by the socket's inode (the inode of
//! `/proc/self/fd/N`, which is unique, unlike a port that `SO_REUSEADDR` lets several
//! sockets share). No `recvmsg` control message is needed (that would take `unsafe`,
//! which this crate does not allow outside its ring and seqlock code). Reading the file
//! is a cold path: the reader does it at most once a second and at the end. Where the
//! kernel does not report drops (another OS, no `/proc`), [`ReceiveOverruns::open`] gives
//! `None` and the count is unknown, never taken for 0.

use std::path::Path;

/// The `/proc` tables searched, IPv4 first.
const TABLES: [&str; 2] = ["/proc/net/udp", "/proc/net/udp6"];

/// Reads one socket's kernel drop counter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReceiveOverruns {
    /// The socket's inode, as `/proc/net/udp` lists it.
    inode: u64,
}

impl ReceiveOverruns {
    /// The counter of `socket`, if this system reports one for it.
    pub fn open(socket: &impl std::os::fd::AsRawFd) -> Option<Self> {
        let inode = socket_inode(socket.as_raw_fd())?;
        // Listed now, or the system does not report drops.
        read_drops(inode)?;
        Some(ReceiveOverruns { inode })
    }

    /// Datagrams the kernel dropped on this socket since it was created (whether or not
    /// anyone was reading yet: a reader that starts late overruns too); `None` if the table
    /// cannot be read now (the socket is gone, `/proc` is not mounted).
    pub fn dropped(&self) -> Option<u64> {
        read_drops(self.inode)
    }
}

/// The inode of the socket behind file descriptor `fd` of this process.
#[cfg(target_os = "linux")]
fn socket_inode(fd: std::os::fd::RawFd) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(format!("/proc/self/fd/{fd}"))
        .ok()
        .map(|m| m.ino())
}

#[cfg(not(target_os = "linux"))]
fn socket_inode(_fd: std::os::fd::RawFd) -> Option<u64> {
    None
}

/// The `drops` of the socket with `inode`, from whichever table lists it.
fn read_drops(inode: u64) -> Option<u64> {
    TABLES
        .iter()
        .filter_map(|table| std::fs::read_to_string(Path::new(table)).ok())
        .find_map(|text| parse_drops(&text, inode))
}

/// The `drops` column of the row of `text` (a `/proc/net/udp` or `udp6` table) whose
/// `inode` column is `inode`; `None` if no well-formed row has it.
///
/// A row, after the header line:
/// `sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout
/// inode ref pointer drops`, whitespace separated (13 fields).
pub fn parse_drops(text: &str, inode: u64) -> Option<u64> {
    text.lines().skip(1).find_map(|line| {
        let fields: [&str; 13] = {
            let mut it = line.split_whitespace();
            let mut out = [""; 13];
            for slot in &mut out {
                *slot = it.next()?;
            }
            out
        };
        let row_inode: u64 = fields[9].parse().ok()?;
        (row_inode == inode).then(|| fields[12].parse().ok())?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three rows as Linux 6.x prints them (`/proc/net/udp` on a test machine), the middle
    /// one with 1,234 drops.
    const TABLE: &str = "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  113: 00000000:0044 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 18642 2 ffff8b6a43a0d000 0
  340: 0100007F:9C41 00000000:0000 07 00000000:00034000 00:00000000 00000000  1000        0 987654 2 ffff8b6a4d6f9c00 1234
  712: 3500007F:0035 00000000:0000 07 00000000:00000000 00:00000000 00000000   101        0 20817 2 ffff8b6a41f1a400 0
";

    #[test]
    fn the_drops_of_the_row_with_the_inode() {
        assert_eq!(parse_drops(TABLE, 987_654), Some(1_234));
        assert_eq!(parse_drops(TABLE, 18_642), Some(0));
        assert_eq!(parse_drops(TABLE, 5), None, "no such socket");
    }

    #[test]
    fn udp6_rows_and_short_or_garbled_rows() {
        let udp6 = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  260: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 07 00000000:00000000 00:00000000 00000000  1000        0 4242 2 ffff8b6a4d6fa000 7
";
        assert_eq!(parse_drops(udp6, 4_242), Some(7));
        let broken = "header\n 1: 0100007F:9C41 00000000:0000 07\n 2: a b c d e f g h i 99 k l not-a-number\n";
        assert_eq!(parse_drops(broken, 99), None);
        assert_eq!(parse_drops("", 99), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_tiny_receive_buffer_that_nobody_reads_overruns_and_the_kernel_counts_it() {
        use crate::net::{FeedKeys, UdpFeed, UdpFeedConfig};

        // The smallest buffer the kernel grants (it rounds up to about 2 KiB, doubled).
        let feed = UdpFeed::open(
            &UdpFeedConfig {
                recv_buffer_bytes: 1,
                ..UdpFeedConfig::default()
            },
            &FeedKeys::NONE,
        )
        .expect("bind loopback");
        let Some(overruns) = feed.receive_overruns() else {
            panic!("Linux reports drops in /proc/net/udp");
        };
        assert_eq!(overruns.dropped(), Some(0));
        let to = feed.local_addr().expect("local address");
        let sender = std::net::UdpSocket::bind("127.0.0.1:0").expect("sender");
        const SENT: u64 = 500;
        for _ in 0..SENT {
            sender.send_to(&[9u8; 1_000], to).expect("send");
        }
        let mut buf = [0u8; 2_048];
        let mut received = 0u64;
        while let Ok(Some(_)) = feed.recv(&mut buf) {
            received += 1;
        }
        let dropped = overruns.dropped().expect("still listed");
        assert!(dropped > 0, "received {received} of {SENT}, none dropped");
        // On loopback nothing else loses a datagram: each was read or overran the buffer.
        assert_eq!(received + dropped, SENT);
    }
}
