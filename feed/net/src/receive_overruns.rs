//! Receive-buffer overruns counted by the kernel: datagrams that arrived while a socket's
//! receive queue was full, and were dropped before the reader ever saw them.
//!
//! Linux reports them per socket in the last column (`drops`) of `/proc/net/udp` and
//! `/proc/net/udp6`; the row is found by the socket's inode (the inode of
//! `/proc/self/fd/N`, which is unique, unlike a port that `SO_REUSEADDR` lets several
//! sockets share). No `recvmsg` control message is needed (that would take `unsafe`,
//! which this crate does not allow outside its ring and seqlock code). Reading the file
//! is a cold path: the reader does it at most once a second and at the end, into a buffer
//! allocated once, so it allocates nothing after start (the reader thread's zero-allocation
//! test runs across these reads). Where the
//! kernel does not report drops (another OS, no `/proc`), [`ReceiveOverruns::open`] gives
//! `None` and the count is unknown, never taken for 0.

use std::fs::File;
use std::io::{ErrorKind, Read};

/// The `/proc` tables searched, IPv4 first.
const TABLES: [&str; 2] = ["/proc/net/udp", "/proc/net/udp6"];

/// Bytes read from a table at once; a row is about 130 (udp) or 170 (udp6) bytes.
const READ_BUFFER: usize = 16 << 10;

/// Reads one socket's kernel drop counter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReceiveOverruns {
    /// The socket's inode, as `/proc/net/udp` lists it.
    inode: u64,
    /// Where the tables are read, a chunk of whole lines at a time.
    buf: Box<[u8]>,
}

impl ReceiveOverruns {
    /// The counter of `socket`, if this system reports one for it.
    pub fn open(socket: &impl std::os::fd::AsRawFd) -> Option<Self> {
        let inode = socket_inode(socket.as_raw_fd())?;
        let mut overruns = ReceiveOverruns {
            inode,
            buf: vec![0; READ_BUFFER].into_boxed_slice(),
        };
        // Listed now, or the system does not report drops.
        overruns.dropped()?;
        Some(overruns)
    }

    /// Datagrams the kernel dropped on this socket since it was created (whether or not
    /// anyone was reading yet: a reader that starts late overruns too); `None` if the table
    /// cannot be read now (the socket is gone, `/proc` is not mounted).
    pub fn dropped(&mut self) -> Option<u64> {
        let (inode, buf) = (self.inode, &mut self.buf);
        TABLES
            .iter()
            .find_map(|table| scan_table(table, inode, buf))
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

/// The `drops` of the row of table `path` whose inode is `inode`, reading it through `buf`
/// (no allocation); `None` if the table cannot be read or has no such row.
fn scan_table(path: &str, inode: u64, buf: &mut [u8]) -> Option<u64> {
    let mut file = File::open(path).ok()?;
    let (mut filled, mut header) = (0, true);
    loop {
        let n = match file.read(&mut buf[filled..]) {
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return None,
        };
        filled += n;
        let mut start = 0;
        let at_end = n == 0;
        loop {
            let rest = &buf[start..filled];
            let (line, next) = match rest.iter().position(|&b| b == b'\n') {
                Some(nl) => (&rest[..nl], start + nl + 1),
                // The last line may lack its newline.
                None if at_end && !rest.is_empty() => (rest, filled),
                None => break,
            };
            start = next;
            if std::mem::take(&mut header) {
                continue;
            }
            if let Some(drops) = std::str::from_utf8(line)
                .ok()
                .and_then(|l| parse_row(l, inode))
            {
                return Some(drops);
            }
        }
        if at_end {
            return None;
        }
        buf.copy_within(start..filled, 0);
        filled -= start;
        if filled == buf.len() {
            // A line longer than the buffer is no table row.
            return None;
        }
    }
}

/// The `drops` column of the row of `text` (a `/proc/net/udp` or `udp6` table) whose
/// `inode` column is `inode`; `None` if no well-formed row has it.
///
/// A row, after the header line:
/// `sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout
/// inode ref pointer drops`, whitespace separated (13 fields).
pub fn parse_drops(text: &str, inode: u64) -> Option<u64> {
    text.lines().skip(1).find_map(|line| parse_row(line, inode))
}

/// The `drops` of one table row if its inode is `inode`.
fn parse_row(line: &str, inode: u64) -> Option<u64> {
    let mut fields = line.split_whitespace();
    let row_inode: u64 = fields.nth(9)?.parse().ok()?;
    let drops = fields.nth(2)?;
    (row_inode == inode).then(|| drops.parse().ok())?
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

    #[test]
    fn a_table_read_in_chunks_smaller_than_it_finds_the_row() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("udp");
        // Without the final newline, too.
        std::fs::write(&path, TABLE.trim_end()).expect("write");
        let path = path.to_str().expect("utf-8");
        // 200 bytes: less than the header and a row together.
        let mut buf = [0u8; 200];
        assert_eq!(scan_table(path, 987_654, &mut buf), Some(1_234));
        assert_eq!(scan_table(path, 20_817, &mut buf), Some(0));
        assert_eq!(scan_table(path, 5, &mut buf), None);
        let mut tiny = [0u8; 40];
        assert_eq!(scan_table(path, 987_654, &mut tiny), None, "rows too long");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_tiny_receive_buffer_that_nobody_reads_overruns_and_the_kernel_counts_it() {
        use crate::{FeedKeys, UdpFeed, UdpFeedConfig};

        // The smallest buffer the kernel grants (it rounds up to about 2 KiB, doubled).
        let feed = UdpFeed::open(
            &UdpFeedConfig {
                recv_buffer_bytes: 1,
                ..UdpFeedConfig::default()
            },
            &FeedKeys::NONE,
        )
        .expect("bind loopback");
        let Some(mut overruns) = feed.receive_overruns() else {
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
