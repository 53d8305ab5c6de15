//! A browser's connection as the server reads and writes it: plain TCP, or TLS driven by
//! the server's loop ([`ServerSession`]). Both are non-blocking `Read + Write`, so the head
//! reader and tungstenite run over either unchanged: a TLS stream with no plaintext ready
//! says `WouldBlock`, exactly as an empty socket does.
#![forbid(unsafe_code)]

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::Arc;

use ticklane_serve::tls::rustls::ServerConfig;
use ticklane_serve::tls::ServerSession;

/// One connection, plain or TLS.
#[derive(Debug)]
pub(super) enum WebStream {
    /// HTTP and `ws://`.
    Plain(TcpStream),
    /// HTTPS and `wss://`.
    Tls(Box<TlsStream>),
}

/// A TLS session and its socket.
#[derive(Debug)]
pub(super) struct TlsStream {
    session: ServerSession,
    socket: TcpStream,
    /// The session failed (a bad handshake or record): the connection is over.
    failed: bool,
}

/// Where a TLS connection's handshake stands, for the counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Handshake {
    /// Plain TCP: there is none.
    None,
    /// Completed.
    Established,
    /// Not completed yet (or never: the peer left or timed out).
    Pending,
    /// Failed: the peer's bytes were not a TLS handshake rustls accepts.
    Failed,
}

impl WebStream {
    /// `socket` as TLS under `config`, or plain without one.
    ///
    /// # Errors
    ///
    /// If rustls refuses the configuration.
    pub(super) fn new(socket: TcpStream, tls: Option<&Arc<ServerConfig>>) -> io::Result<Self> {
        Ok(match tls {
            None => WebStream::Plain(socket),
            Some(config) => WebStream::Tls(Box::new(TlsStream {
                session: ServerSession::new(config).map_err(io::Error::other)?,
                socket,
                failed: false,
            })),
        })
    }

    /// Where the handshake stands.
    pub(super) fn handshake(&self) -> Handshake {
        match self {
            WebStream::Plain(_) => Handshake::None,
            WebStream::Tls(t) if t.session.is_established() => Handshake::Established,
            WebStream::Tls(t) if t.failed => Handshake::Failed,
            WebStream::Tls(_) => Handshake::Pending,
        }
    }

    /// Whether the connection is TLS.
    pub(super) fn is_tls(&self) -> bool {
        matches!(self, WebStream::Tls(_))
    }

    /// Ends the connection: a TLS `close_notify` (as much as the socket takes now), then
    /// the TCP shutdown.
    pub(super) fn shutdown(&mut self, how: Shutdown) {
        let socket = match self {
            WebStream::Plain(socket) => socket,
            WebStream::Tls(t) => {
                t.session.close();
                let _ = t.session.send(&mut t.socket);
                &mut t.socket
            }
        };
        let _ = socket.shutdown(how);
    }
}

impl Read for WebStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let t = match self {
            WebStream::Plain(socket) => return socket.read(buf),
            WebStream::Tls(t) => t,
        };
        let read = t.session.read(&mut t.socket, buf);
        // What the records just read call for (the handshake's answers, an alert) goes out
        // now; what the socket does not take goes with the next read or write.
        let _ = t.session.send(&mut t.socket);
        match read {
            Ok(r) if r.bytes > 0 => Ok(r.bytes),
            Ok(r) if r.closed => Ok(0),
            Ok(_) => Err(io::ErrorKind::WouldBlock.into()),
            Err(e) => {
                t.failed = true;
                Err(e)
            }
        }
    }
}

impl Write for WebStream {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        match self {
            WebStream::Plain(socket) => socket.write(bytes),
            WebStream::Tls(t) => t.session.writer(&mut t.socket).write(bytes),
        }
    }

    /// Plain: nothing to do. TLS: sends what the session holds; `WouldBlock` if the socket
    /// did not take it all, so that a flushed stream means, as for plain TCP, that the
    /// kernel has every byte.
    fn flush(&mut self) -> io::Result<()> {
        match self {
            WebStream::Plain(socket) => socket.flush(),
            WebStream::Tls(t) => {
                t.session.send(&mut t.socket)?;
                if t.session.wants_send() {
                    Err(io::ErrorKind::WouldBlock.into())
                } else {
                    Ok(())
                }
            }
        }
    }
}
