//! A non-blocking UDP socket for a MoldUDP64 feed: unicast or multicast, with a large
//! receive buffer so a burst does not overflow the kernel's queue while the reader works.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use socket2::{Domain, Protocol, Socket, Type};

use super::error::{FeedKeys, NetError, SocketOp};
use super::receive_overruns::ReceiveOverruns;
use super::socket_error::SocketError;

/// Where and how to listen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdpFeedConfig {
    /// Address to bind (`0.0.0.0:PORT` or `127.0.0.1:PORT` for unicast; the group's port,
    /// on `0.0.0.0`, for multicast). Port 0 picks a free port.
    pub bind: SocketAddr,
    /// Multicast group to join, if the feed is multicast.
    pub multicast_group: Option<Ipv4Addr>,
    /// Interface to join the group on (`127.0.0.1` for tests on loopback).
    pub interface: Ipv4Addr,
    /// Kernel receive buffer to ask for, in bytes (the kernel may grant less).
    pub recv_buffer_bytes: usize,
}

impl Default for UdpFeedConfig {
    fn default() -> Self {
        UdpFeedConfig {
            bind: SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)),
            multicast_group: None,
            interface: Ipv4Addr::LOCALHOST,
            recv_buffer_bytes: 8 << 20,
        }
    }
}

/// A bound, non-blocking UDP socket.
pub struct UdpFeed {
    socket: mio::net::UdpSocket,
}

impl UdpFeed {
    /// Binds (and joins the group, for multicast) as configured; `keys` name the
    /// configuration keys the addresses came from ([`FeedKeys::NONE`] if none), for errors.
    ///
    /// # Errors
    ///
    /// [`NetError`] naming the operation (create, set option, bind, join), the address or
    /// interface and its key, if the socket cannot be created, bound or joined to the group.
    pub fn open(config: &UdpFeedConfig, keys: &FeedKeys) -> Result<Self, NetError> {
        let addr = config.bind;
        let bind_key = [keys.bind, None];
        let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))
            .map_err(|e| NetError::new(SocketOp::CreateUdp { addr }, bind_key, e))?;
        let option =
            |option| move |e| NetError::new(SocketOp::SetOption { option, addr }, bind_key, e);
        // Several listeners of one multicast group on a host must share the port, and each
        // gets every datagram. A unicast port must not be shared: Linux would hand each
        // datagram to one socket only (the newest), so a second process on the same address
        // would silently take the feed from the first. Without SO_REUSEADDR its bind fails
        // with "address in use" instead.
        if is_multicast(config) {
            socket
                .set_reuse_address(true)
                .map_err(option("SO_REUSEADDR"))?;
        }
        // Best effort: the kernel caps it at net.core.rmem_max.
        let _ = socket.set_recv_buffer_size(config.recv_buffer_bytes);
        socket.set_nonblocking(true).map_err(option("O_NONBLOCK"))?;
        socket
            .bind(&addr.into())
            .map_err(|e| NetError::new(SocketOp::Bind { addr }, bind_key, e))?;
        if let Some(group) = config.multicast_group {
            let interface = config.interface;
            socket.join_multicast_v4(&group, &interface).map_err(|e| {
                NetError::new(
                    SocketOp::JoinMulticast { group, interface },
                    [keys.multicast_group, keys.interface],
                    e,
                )
            })?;
        }
        Ok(UdpFeed {
            socket: mio::net::UdpSocket::from_std(socket.into()),
        })
    }

    /// A non-blocking socket on an ephemeral port of `local`, for sending requests
    /// (retransmission requests) and reading their replies, with the data socket's large
    /// receive buffer: a try asks for up to 64 ranges at once, and their replies come as
    /// one burst. `key` names the configuration key `local` came from, if any.
    ///
    /// # Errors
    ///
    /// [`NetError`] naming the address (and key) if the socket cannot be bound.
    pub fn ephemeral(local: Ipv4Addr, key: Option<&'static str>) -> Result<Self, NetError> {
        let addr = SocketAddr::V4(SocketAddrV4::new(local, 0));
        let bind_key = [key, None];
        let socket = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))
            .map_err(|e| NetError::new(SocketOp::CreateUdp { addr }, bind_key, e))?;
        // Best effort: the kernel caps it at net.core.rmem_max.
        let _ = socket.set_recv_buffer_size(UdpFeedConfig::default().recv_buffer_bytes);
        socket.set_nonblocking(true).map_err(|e| {
            NetError::new(
                SocketOp::SetOption {
                    option: "O_NONBLOCK",
                    addr,
                },
                bind_key,
                e,
            )
        })?;
        socket
            .bind(&addr.into())
            .map_err(|e| NetError::new(SocketOp::Bind { addr }, bind_key, e))?;
        Ok(UdpFeed {
            socket: mio::net::UdpSocket::from_std(socket.into()),
        })
    }

    /// The bound address.
    ///
    /// # Errors
    ///
    /// As `getsockname`.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// The kernel's count of datagrams this socket's full receive buffer dropped, if the
    /// system reports it (Linux: `/proc/net/udp`); a cold-path reader, see
    /// [`ReceiveOverruns`].
    pub fn receive_overruns(&self) -> Option<ReceiveOverruns> {
        ReceiveOverruns::open(&self.socket)
    }

    /// The socket, to register with a `mio::Poll`.
    pub fn source(&mut self) -> &mut mio::net::UdpSocket {
        &mut self.socket
    }

    /// Receives one datagram into `buf`: `Ok(None)` when nothing is waiting.
    ///
    /// # Errors
    ///
    /// A [`SocketError`] for the caller to count: `Interrupted` (call again), `Refused`,
    /// `Truncated` (the datagram filled `buf`, so it may have been cut: it is dropped; give a
    /// buffer larger than any datagram), or another OS error.
    #[inline]
    pub fn recv<'b>(&self, buf: &'b mut [u8]) -> Result<Option<&'b [u8]>, SocketError> {
        match self.socket.recv(buf) {
            Ok(n) if n >= buf.len() => Err(SocketError::Truncated),
            Ok(n) => Ok(Some(&buf[..n])),
            Err(e) => SocketError::of(&e).map_or(Ok(None), Err),
        }
    }

    /// Receives one datagram into `buf` with its sender: `Ok(None)` when nothing is waiting.
    ///
    /// # Errors
    ///
    /// As [`UdpFeed::recv`].
    pub fn recv_from<'b>(
        &self,
        buf: &'b mut [u8],
    ) -> Result<Option<(&'b [u8], SocketAddr)>, SocketError> {
        match self.socket.recv_from(buf) {
            Ok((n, _)) if n >= buf.len() => Err(SocketError::Truncated),
            Ok((n, from)) => Ok(Some((&buf[..n], from))),
            Err(e) => SocketError::of(&e).map_or(Ok(None), Err),
        }
    }

    /// Sends one datagram to `to`; `Ok(false)` if the socket's buffer is full right now.
    /// An interrupted send is made again.
    ///
    /// # Errors
    ///
    /// A [`SocketError`] for the caller to count.
    pub fn send_to(&self, bytes: &[u8], to: SocketAddr) -> Result<bool, SocketError> {
        loop {
            match self.socket.send_to(bytes, to) {
                Ok(_) => return Ok(true),
                Err(e) => match SocketError::of(&e) {
                    None => return Ok(false),
                    Some(SocketError::Interrupted) => continue,
                    Some(other) => return Err(other),
                },
            }
        }
    }
}

/// Whether `config` listens to a multicast group (joined, or the bind address itself).
fn is_multicast(config: &UdpFeedConfig) -> bool {
    config.multicast_group.is_some() || config.bind.ip().is_multicast()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loopback() -> UdpFeedConfig {
        UdpFeedConfig::default()
    }

    #[test]
    fn a_datagram_that_fills_the_buffer_is_truncated_and_the_next_one_arrives() {
        let feed = UdpFeed::open(&loopback(), &FeedKeys::NONE).expect("bind loopback");
        let to = feed.local_addr().expect("local address");
        let sender = std::net::UdpSocket::bind("127.0.0.1:0").expect("sender");
        sender.send_to(&[7u8; 200], to).expect("send long");
        sender.send_to(&[8u8; 10], to).expect("send short");
        let mut buf = [0u8; 100];
        let mut seen = Vec::new();
        // Bounded: two datagrams were sent on loopback; poll for them at most 10,000 times.
        for _ in 0..10_000 {
            match feed.recv(&mut buf) {
                Ok(None) => std::thread::yield_now(),
                Ok(Some(d)) => seen.push(Ok(d.to_vec())),
                Err(e) => seen.push(Err(e)),
            }
            if seen.len() == 2 {
                break;
            }
        }
        assert_eq!(seen, vec![Err(SocketError::Truncated), Ok(vec![8u8; 10])]);
    }

    #[test]
    fn a_unicast_address_in_use_is_refused_not_shared() {
        let first = UdpFeed::open(&loopback(), &FeedKeys::NONE).expect("bind loopback");
        let taken = UdpFeedConfig {
            bind: first.local_addr().expect("local address"),
            ..loopback()
        };
        let keys = FeedKeys {
            bind: Some("feed.bind"),
            ..FeedKeys::NONE
        };
        let Err(e) = UdpFeed::open(&taken, &keys) else {
            panic!("a second socket bound {} too", taken.bind);
        };
        assert_eq!(e.op(), SocketOp::Bind { addr: taken.bind });
        assert_eq!(e.io_error().kind(), io::ErrorKind::AddrInUse);
        assert_eq!(e.keys().collect::<Vec<_>>(), ["feed.bind"]);
    }

    #[test]
    fn only_multicast_listeners_share_a_port() {
        let unicast = |ip: [u8; 4]| UdpFeedConfig {
            bind: SocketAddr::from((ip, 9)),
            ..loopback()
        };
        assert!(!is_multicast(&unicast([127, 0, 0, 1])));
        assert!(!is_multicast(&unicast([0, 0, 0, 0])));
        assert!(is_multicast(&unicast([239, 255, 0, 1])));
        assert!(is_multicast(&UdpFeedConfig {
            multicast_group: Some(Ipv4Addr::new(239, 255, 0, 1)),
            ..unicast([0, 0, 0, 0])
        }));
    }

    #[test]
    fn nothing_waiting_is_none_not_an_error() {
        let feed = UdpFeed::open(&loopback(), &FeedKeys::NONE).expect("bind loopback");
        let mut buf = [0u8; 64];
        assert_eq!(feed.recv(&mut buf), Ok(None));
    }
}
