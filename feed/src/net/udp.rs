//! A non-blocking UDP socket for a MoldUDP64 feed: unicast or multicast, with a large
//! receive buffer so a burst does not overflow the kernel's queue while the reader works.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use socket2::{Domain, Protocol, Socket, Type};

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
    /// Binds (and joins the group, for multicast) as configured.
    ///
    /// # Errors
    ///
    /// If the socket cannot be created, bound or joined to the group.
    pub fn open(config: &UdpFeedConfig) -> io::Result<Self> {
        let socket = Socket::new(
            Domain::for_address(config.bind),
            Type::DGRAM,
            Some(Protocol::UDP),
        )?;
        // Several listeners of one multicast group on a host must share the port.
        socket.set_reuse_address(true)?;
        // Best effort: the kernel caps it at net.core.rmem_max.
        let _ = socket.set_recv_buffer_size(config.recv_buffer_bytes);
        socket.set_nonblocking(true)?;
        socket.bind(&config.bind.into())?;
        if let Some(group) = config.multicast_group {
            socket.join_multicast_v4(&group, &config.interface)?;
        }
        Ok(UdpFeed {
            socket: mio::net::UdpSocket::from_std(socket.into()),
        })
    }

    /// A non-blocking socket on an ephemeral loopback-or-any port, for sending requests
    /// (retransmission requests) and reading their replies.
    ///
    /// # Errors
    ///
    /// If the socket cannot be bound.
    pub fn ephemeral(local: Ipv4Addr) -> io::Result<Self> {
        let socket = mio::net::UdpSocket::bind(SocketAddr::V4(SocketAddrV4::new(local, 0)))?;
        Ok(UdpFeed { socket })
    }

    /// The bound address.
    ///
    /// # Errors
    ///
    /// As `getsockname`.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// The socket, to register with a `mio::Poll`.
    pub fn source(&mut self) -> &mut mio::net::UdpSocket {
        &mut self.socket
    }

    /// Receives one datagram into `buf`: `Ok(None)` when nothing is waiting.
    ///
    /// # Errors
    ///
    /// Socket errors other than `WouldBlock` (returned as `None`) and `Interrupted`
    /// (retried).
    #[inline]
    pub fn recv<'b>(&self, buf: &'b mut [u8]) -> io::Result<Option<&'b [u8]>> {
        loop {
            match self.socket.recv(buf) {
                Ok(n) => return Ok(Some(&buf[..n])),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Receives one datagram into `buf` with its sender: `Ok(None)` when nothing is waiting.
    ///
    /// # Errors
    ///
    /// As [`UdpFeed::recv`].
    pub fn recv_from<'b>(&self, buf: &'b mut [u8]) -> io::Result<Option<(&'b [u8], SocketAddr)>> {
        loop {
            match self.socket.recv_from(buf) {
                Ok((n, from)) => return Ok(Some((&buf[..n], from))),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Sends one datagram to `to`; `Ok(false)` if the socket's buffer is full right now.
    ///
    /// # Errors
    ///
    /// Socket errors other than `WouldBlock` and `Interrupted`.
    pub fn send_to(&self, bytes: &[u8], to: SocketAddr) -> io::Result<bool> {
        loop {
            match self.socket.send_to(bytes, to) {
                Ok(_) => return Ok(true),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }
}
