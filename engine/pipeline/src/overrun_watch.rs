//! Watches the kernel's count of datagrams dropped on the data socket because its receive
//! buffer was full: the reader did not keep up. The gaps such drops leave are recovered or
//! declared by the recovery machine like any other; this says why they happened.
//!
//! A cold path: `/proc/net/udp` is read at most once per [`CHECK_EVERY`] and once at the end.

use std::time::Duration;

use ticklane_feed::net::{ReceiveOverruns, UdpFeed};

/// How often the kernel counter is read while the line runs.
pub const CHECK_EVERY: Duration = Duration::from_secs(1);

/// What the kernel said about receive-buffer overruns on the data socket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelOverruns {
    /// Datagrams the kernel dropped because the receive buffer was full, since the line's
    /// socket was opened (before the reader ran too).
    pub dropped: u64,
    /// Checks (about one a second, and the last at the end) at which the count had grown:
    /// how many seconds the reader fell behind.
    pub grew: u64,
    /// When it first grew, on the pipeline clock (ns since the pipeline started); 0 if never.
    pub first_grew_ns: u64,
}

/// Reads the counter on its schedule and keeps what it saw.
#[derive(Debug)]
pub(crate) struct OverrunWatch {
    counter: Option<ReceiveOverruns>,
    next_check_ns: u64,
    seen: KernelOverruns,
}

impl OverrunWatch {
    /// Watches `socket`, if the system reports its drops.
    pub(crate) fn new(socket: &UdpFeed, now_ns: u64) -> Self {
        OverrunWatch {
            counter: socket.receive_overruns(),
            next_check_ns: now_ns + CHECK_EVERY.as_nanos() as u64,
            seen: KernelOverruns::default(),
        }
    }

    /// Reads the counter if a check is due at `now_ns`.
    #[inline]
    pub(crate) fn poll(&mut self, now_ns: u64) {
        if now_ns >= self.next_check_ns {
            self.next_check_ns = now_ns + CHECK_EVERY.as_nanos() as u64;
            self.check(now_ns);
        }
    }

    #[cold]
    fn check(&mut self, now_ns: u64) {
        let Some(dropped) = self.counter.as_mut().and_then(ReceiveOverruns::dropped) else {
            return;
        };
        if dropped > self.seen.dropped {
            if self.seen.grew == 0 {
                self.seen.first_grew_ns = now_ns;
            }
            self.seen.grew += 1;
            self.seen.dropped = dropped;
        }
    }

    /// The last reading, taken now; `None` where the kernel reports no count.
    pub(crate) fn finish(mut self, now_ns: u64) -> Option<KernelOverruns> {
        self.check(now_ns);
        self.counter.map(|_| self.seen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklane_feed::net::{FeedKeys, UdpFeedConfig};

    #[cfg(target_os = "linux")]
    #[test]
    fn drops_are_seen_at_the_end_and_when_they_grew() {
        let feed = UdpFeed::open(
            &UdpFeedConfig {
                recv_buffer_bytes: 1,
                ..UdpFeedConfig::default()
            },
            &FeedKeys::NONE,
        )
        .expect("bind loopback");
        let mut watch = OverrunWatch::new(&feed, 0);
        watch.poll(1);
        let sender = std::net::UdpSocket::bind("127.0.0.1:0").expect("sender");
        let to = feed.local_addr().expect("address");
        for _ in 0..300 {
            sender.send_to(&[1u8; 1_000], to).expect("send");
        }
        // Not due yet: nothing read.
        watch.poll(5);
        assert_eq!(watch.seen, KernelOverruns::default());
        let at = CHECK_EVERY.as_nanos() as u64;
        watch.poll(at);
        let seen = watch.finish(at + 1).expect("Linux reports drops");
        assert!(seen.dropped > 0, "{seen:?}");
        assert_eq!((seen.grew, seen.first_grew_ns), (1, at));
    }
}
