//! mio adapters: the only place sockets live. They move bytes and nothing else; the
//! protocol decisions stay in the sans-I/O session machines (`moldudp64`, `soupbintcp`).
//!
//! The drain pattern, as mio's own examples: on a readable event, read until `WouldBlock`,
//! then go back to `poll`; `Interrupted` is retried.

mod tcp;
mod udp;

pub use tcp::{TcpFeed, TcpRead};
pub use udp::{UdpFeed, UdpFeedConfig};
