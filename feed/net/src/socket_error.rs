//! Receive and send errors of a feed socket, typed and counted by kind. `Copy` and
//! allocation-free: they happen on the reader's hot path, where a dropped error leaves no
//! trace and a formatted one costs an allocation.

use std::fmt;
use std::io;

use super::error::OsError;

/// Why a receive or send failed. "Nothing waiting" (`WouldBlock`) is not one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SocketError {
    /// A signal interrupted the call; calling again is right.
    Interrupted,
    /// The peer refused: on UDP, an ICMP port unreachable reported on the socket
    /// (`ECONNREFUSED`).
    Refused,
    /// A datagram filled the whole buffer and may have been cut (it is dropped). A buffer of
    /// 65,536 bytes holds any UDP datagram over IPv4, so this means the buffer is too small.
    Truncated,
    /// Anything else, with the OS's kind and code.
    Other(OsError),
}

impl SocketError {
    /// The type of `error`, or `None` for `WouldBlock` (not an error: nothing is waiting).
    pub fn of(error: &io::Error) -> Option<Self> {
        Some(match error.kind() {
            io::ErrorKind::WouldBlock => return None,
            io::ErrorKind::Interrupted => SocketError::Interrupted,
            io::ErrorKind::ConnectionRefused => SocketError::Refused,
            _ => SocketError::Other(OsError::of(error)),
        })
    }
}

impl fmt::Display for SocketError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SocketError::Interrupted => write!(f, "interrupted by a signal"),
            SocketError::Refused => write!(f, "refused by the peer (ICMP port unreachable)"),
            SocketError::Truncated => write!(f, "datagram filled the buffer and was dropped"),
            SocketError::Other(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for SocketError {}

/// Socket errors counted by kind, and the last one of no known kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SocketErrorCounts {
    /// Calls interrupted by a signal (and made again).
    pub interrupted: u64,
    /// Refusals reported on the socket (ICMP port unreachable).
    pub refused: u64,
    /// Datagrams dropped because they filled the buffer.
    pub truncated: u64,
    /// Errors of any other kind.
    pub other: u64,
    /// The last error of another kind.
    pub last_other: Option<OsError>,
}

impl SocketErrorCounts {
    /// Counts `error` in its bucket.
    #[inline]
    pub fn count(&mut self, error: SocketError) {
        match error {
            SocketError::Interrupted => self.interrupted += 1,
            SocketError::Refused => self.refused += 1,
            SocketError::Truncated => self.truncated += 1,
            SocketError::Other(e) => {
                self.other += 1;
                self.last_other = Some(e);
            }
        }
    }

    /// All errors counted.
    pub fn total(&self) -> u64 {
        self.interrupted + self.refused + self.truncated + self.other
    }
}

impl fmt::Display for SocketErrorCounts {
    /// `none`, or each bucket: `interrupted 0, refused 2, truncated 0, other 1 (last: …)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.total() == 0 {
            return write!(f, "none");
        }
        write!(
            f,
            "interrupted {}, refused {}, truncated {}, other {}",
            self.interrupted, self.refused, self.truncated, self.other
        )?;
        if let Some(last) = self.last_other {
            write!(f, " (last: {last})")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn would_block_is_not_an_error() {
        assert_eq!(
            SocketError::of(&io::Error::from(io::ErrorKind::WouldBlock)),
            None
        );
    }

    #[test]
    fn each_kind_lands_in_its_bucket() {
        let mut counts = SocketErrorCounts::default();
        for kind in [
            io::ErrorKind::Interrupted,
            io::ErrorKind::ConnectionRefused,
            io::ErrorKind::ConnectionRefused,
            io::ErrorKind::PermissionDenied,
        ] {
            counts.count(SocketError::of(&io::Error::from(kind)).expect("an error"));
        }
        counts.count(SocketError::Truncated);
        assert_eq!(
            (
                counts.interrupted,
                counts.refused,
                counts.truncated,
                counts.other
            ),
            (1, 2, 1, 1)
        );
        assert_eq!(counts.total(), 5);
        assert_eq!(
            counts.last_other.map(OsError::kind),
            Some(io::ErrorKind::PermissionDenied)
        );
        assert_eq!(
            counts.to_string(),
            "interrupted 1, refused 2, truncated 1, other 1 (last: permission denied)"
        );
        assert_eq!(SocketErrorCounts::default().to_string(), "none");
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn an_os_refusal_is_refused() {
        // ECONNREFUSED is 111 on Linux (asm-generic/errno.h).
        let e = io::Error::from_raw_os_error(111);
        assert_eq!(SocketError::of(&e), Some(SocketError::Refused));
    }
}
