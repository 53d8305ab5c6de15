//! Socket errors that say what they were about: the operation, the address or interface,
//! and, when the value came from a configuration file, its key. The OS error is the
//! [`source`](std::error::Error::source), never repeated in the text, so a chain printer
//! (`anyhow`'s `{:#}`) prints each cause once.

use std::fmt;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};

/// The configuration keys a line's addresses came from, so its socket errors can name them.
/// [`FeedKeys::NONE`] for a line built in code: its errors name the addresses only.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FeedKeys {
    /// The key of the UDP bind address.
    pub bind: Option<&'static str>,
    /// The key of the multicast group.
    pub multicast_group: Option<&'static str>,
    /// The key of the interface the group is joined on (and requests are sent from).
    pub interface: Option<&'static str>,
    /// The key of the TCP server address.
    pub server: Option<&'static str>,
}

impl FeedKeys {
    /// No keys: the addresses were not read from a file.
    pub const NONE: FeedKeys = FeedKeys {
        bind: None,
        multicast_group: None,
        interface: None,
        server: None,
    };
}

/// An OS error reduced to what it is: its kind and, when the OS gave one, its code. `Copy`
/// and allocation-free, so reports and hot-path counters can hold one; it displays as
/// [`io::Error`] does (`Connection refused (os error 111)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OsError {
    kind: io::ErrorKind,
    code: Option<i32>,
}

impl OsError {
    /// The kind and code of `error`.
    pub fn of(error: &io::Error) -> Self {
        OsError {
            kind: error.kind(),
            code: error.raw_os_error(),
        }
    }

    /// The error's kind.
    pub fn kind(self) -> io::ErrorKind {
        self.kind
    }

    /// The OS's error code, if the error came from the OS.
    pub fn code(self) -> Option<i32> {
        self.code
    }
}

impl From<&io::Error> for OsError {
    fn from(error: &io::Error) -> Self {
        OsError::of(error)
    }
}

impl fmt::Display for OsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.code {
            Some(code) => io::Error::from_raw_os_error(code).fmt(f),
            None => self.kind.fmt(f),
        }
    }
}

impl std::error::Error for OsError {}

/// What a socket was being asked to do, with the address it was about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SocketOp {
    /// Creating the UDP socket that is to be bound to `addr`.
    CreateUdp {
        /// The address it was for.
        addr: SocketAddr,
    },
    /// Setting a socket option on the UDP socket for `addr`.
    SetOption {
        /// The option (`SO_REUSEADDR`, `O_NONBLOCK`).
        option: &'static str,
        /// The address the socket is for.
        addr: SocketAddr,
    },
    /// Binding a UDP socket.
    Bind {
        /// The address.
        addr: SocketAddr,
    },
    /// Joining a multicast group.
    JoinMulticast {
        /// The group.
        group: Ipv4Addr,
        /// The local interface address it was joined on.
        interface: Ipv4Addr,
    },
    /// Connecting a TCP socket.
    Connect {
        /// The server.
        addr: SocketAddr,
    },
}

impl fmt::Display for SocketOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SocketOp::CreateUdp { addr } => write!(f, "cannot create a UDP socket for {addr}"),
            SocketOp::SetOption { option, addr } => {
                write!(f, "cannot set {option} on the UDP socket for {addr}")
            }
            SocketOp::Bind { addr } => write!(f, "cannot bind a UDP socket to {addr}"),
            SocketOp::JoinMulticast { group, interface } => write!(
                f,
                "cannot join multicast group {group} on the interface with address {interface}"
            ),
            SocketOp::Connect { addr } => write!(f, "cannot connect to {addr}"),
        }
    }
}

/// The configuration keys an error is about (none, one or two).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct KeyNames([Option<&'static str>; 2]);

impl fmt::Display for KeyNames {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            [None, None] => Ok(()),
            [Some(k), None] | [None, Some(k)] => write!(f, " (config key {k})"),
            [Some(a), Some(b)] => write!(f, " (config keys {a}, {b})"),
        }
    }
}

/// A socket operation that failed: what, on which address, from which configuration key;
/// the OS error is its `source()`.
#[derive(Debug, thiserror::Error)]
#[error("{op}{keys}")]
pub struct NetError {
    op: SocketOp,
    keys: KeyNames,
    #[source]
    error: io::Error,
}

impl NetError {
    /// `op` failed with `error`; `keys` name where its values came from.
    pub fn new(op: SocketOp, keys: [Option<&'static str>; 2], error: io::Error) -> Self {
        NetError {
            op,
            keys: KeyNames(keys),
            error,
        }
    }

    /// What was being done.
    pub fn op(&self) -> SocketOp {
        self.op
    }

    /// The configuration keys the failing values came from (empty for a line built in code).
    pub fn keys(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.keys.0.iter().flatten().copied()
    }

    /// The OS error.
    pub fn io_error(&self) -> &io::Error {
        &self.error
    }
}

/// For callers that speak `io::Result`: the `io::Error` keeps the kind, displays the
/// [`NetError`] and has the OS error as its `source()`, so nothing is lost or repeated; the
/// [`NetError`] is there to `downcast` from `get_ref()`.
impl From<NetError> for io::Error {
    fn from(e: NetError) -> Self {
        io::Error::new(e.error.kind(), e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn the_text_names_the_op_address_and_keys_and_leaves_the_os_error_to_the_source() {
        let e = NetError::new(
            SocketOp::JoinMulticast {
                group: Ipv4Addr::new(239, 1, 2, 3),
                interface: Ipv4Addr::new(10, 9, 8, 7),
            },
            [Some("feed.multicast_group"), Some("feed.interface")],
            io::Error::from_raw_os_error(19),
        );
        assert_eq!(
            e.to_string(),
            "cannot join multicast group 239.1.2.3 on the interface with address 10.9.8.7 \
             (config keys feed.multicast_group, feed.interface)"
        );
        let source = e.source().expect("the OS error is the source").to_string();
        assert!(source.contains("os error 19"), "{source}");
        assert!(!e.to_string().contains("os error"));
    }

    #[test]
    fn as_io_error_it_keeps_kind_text_and_source() {
        let e = NetError::new(
            SocketOp::Connect {
                addr: "127.0.0.1:9".parse().expect("address"),
            },
            [None, None],
            io::Error::from(io::ErrorKind::ConnectionRefused),
        );
        let text = e.to_string();
        let io: io::Error = e.into();
        assert_eq!(io.kind(), io::ErrorKind::ConnectionRefused);
        assert_eq!(io.to_string(), text);
        assert_eq!(text, "cannot connect to 127.0.0.1:9");
        assert!(io.source().is_some());
        assert!(io
            .get_ref()
            .is_some_and(|inner| inner.downcast_ref::<NetError>().is_some()));
    }

    #[test]
    fn an_os_error_displays_as_io_error_does() {
        let io = io::Error::from_raw_os_error(111);
        assert_eq!(OsError::of(&io).to_string(), io.to_string());
        let plain = io::Error::from(io::ErrorKind::TimedOut);
        assert_eq!(OsError::of(&plain).to_string(), "timed out");
    }
}
