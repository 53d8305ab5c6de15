//! A non-blocking TCP connection for a SoupBinTCP feed: reads into the session's buffer,
//! writes the session's outbox. Frames are reassembled by the session's decoder.

use std::io::{self, Read, Write};
use std::net::SocketAddr;

use super::error::{NetError, SocketOp};

/// What a read found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpRead {
    /// This many bytes arrived.
    Data(usize),
    /// Nothing more right now: go back to `poll`.
    WouldBlock,
    /// The peer closed the connection.
    Closed,
}

/// A non-blocking TCP stream.
pub struct TcpFeed {
    stream: mio::net::TcpStream,
}

impl TcpFeed {
    /// Starts connecting to `addr`; the connection is up once the stream is writable and
    /// [`TcpFeed::connected`] says so. `key` names the configuration key `addr` came from,
    /// if any, for errors.
    ///
    /// # Errors
    ///
    /// [`NetError`] naming the address (and key) if the socket cannot be created or the
    /// connect fails at once.
    pub fn connect(addr: SocketAddr, key: Option<&'static str>) -> Result<Self, NetError> {
        let failed = |e| NetError::new(SocketOp::Connect { addr }, [key, None], e);
        let stream = mio::net::TcpStream::connect(addr).map_err(failed)?;
        // Small frames must not wait for Nagle's algorithm.
        stream.set_nodelay(true).map_err(failed)?;
        Ok(TcpFeed { stream })
    }

    /// Wraps an accepted stream (the simulator's side).
    pub fn from_stream(stream: mio::net::TcpStream) -> Self {
        let _ = stream.set_nodelay(true);
        TcpFeed { stream }
    }

    /// `Ok(true)` once connected, `Ok(false)` while still connecting.
    ///
    /// # Errors
    ///
    /// The connect error (refused, unreachable).
    pub fn connected(&self) -> io::Result<bool> {
        if let Some(e) = self.stream.take_error()? {
            return Err(e);
        }
        match self.stream.peer_addr() {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The stream, to register with a `mio::Poll`.
    pub fn source(&mut self) -> &mut mio::net::TcpStream {
        &mut self.stream
    }

    /// Reads once into `buf`.
    ///
    /// # Errors
    ///
    /// Socket errors other than `WouldBlock` and `Interrupted` (retried).
    #[inline]
    pub fn read_into(&mut self, buf: &mut [u8]) -> io::Result<TcpRead> {
        if buf.is_empty() {
            return Ok(TcpRead::WouldBlock);
        }
        loop {
            match self.stream.read(buf) {
                Ok(0) => return Ok(TcpRead::Closed),
                Ok(n) => return Ok(TcpRead::Data(n)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(TcpRead::WouldBlock),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Writes as much of `bytes` as the socket takes now; returns how much.
    ///
    /// # Errors
    ///
    /// Socket errors other than `WouldBlock` (0 written) and `Interrupted` (retried).
    pub fn write_some(&mut self, bytes: &[u8]) -> io::Result<usize> {
        loop {
            match self.stream.write(bytes) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(0),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }
}
