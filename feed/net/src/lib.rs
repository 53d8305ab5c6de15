//! The feed handler's mio adapters: the only place its sockets live. They move bytes and
//! nothing else; the protocol decisions stay in `ticklane-feed`'s sans-I/O session machines
//! (`moldudp64`, `soupbintcp`), and this crate depends on no other ticklane crate.
//!
//! The drain pattern, as mio's own examples: on a readable event, read until `WouldBlock`,
//! then go back to `poll`; `Interrupted` is retried.
//!
//! Errors name what they are about: opening a socket fails with a [`NetError`] that names the
//! operation, the address and the configuration key; receive and send errors are
//! [`SocketError`]s, `Copy`, for the caller to count in [`SocketErrorCounts`].

#![deny(unsafe_code)]

mod error;
mod receive_overruns;
mod socket_error;
mod tcp;
mod udp;

pub use error::{FeedKeys, NetError, OsError, SocketOp};
pub use receive_overruns::{parse_drops, ReceiveOverruns};
pub use socket_error::{SocketError, SocketErrorCounts};
pub use tcp::{TcpFeed, TcpRead};
pub use udp::{UdpFeed, UdpFeedConfig};
