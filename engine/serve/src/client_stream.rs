//! The client's connection to the server: plain TCP, or TLS over it with the server's
//! certificate verified before the login is sent.
#![forbid(unsafe_code)]

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use ticklane_tls::rustls::pki_types::ServerName;
use ticklane_tls::rustls::{self, ClientConnection, StreamOwned};

/// TLS settings of a client: whom it trusts and the name the server's certificate must
/// carry.
#[derive(Clone, Debug)]
pub struct ClientTls {
    /// The trust anchors and protocol versions ([`ticklane_tls::client_config`]).
    pub config: Arc<rustls::ClientConfig>,
    /// The name (DNS name or IP address) the certificate must be issued for.
    pub server_name: ServerName<'static>,
}

impl PartialEq for ClientTls {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.config, &other.config) && self.server_name == other.server_name
    }
}

impl Eq for ClientTls {}

/// The server refused to prove who it is, or the client refused the proof: a failed TLS
/// handshake. Not retried: another attempt meets the same certificate.
#[derive(Debug)]
pub struct TlsFailure(pub String);

impl fmt::Display for TlsFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A connected stream, plain or TLS.
#[derive(Debug)]
pub(crate) enum ClientStream {
    Plain(TcpStream),
    Tls(Box<StreamOwned<ClientConnection, TcpStream>>),
}

/// Why [`ClientStream::connect`] failed.
pub(crate) enum ConnectError {
    /// The socket failed (refused, reset, timed out): worth another attempt.
    Io(io::Error),
    /// The handshake failed on a TLS matter (an unknown CA, a name mismatch, an expired
    /// certificate, no common protocol version).
    Tls(TlsFailure),
}

impl ClientStream {
    /// Connects to `addr` within `timeout`, and completes the TLS handshake if `tls` is
    /// given (each read of it bounded by `timeout` too).
    pub(crate) fn connect(
        addr: SocketAddr,
        tls: Option<&ClientTls>,
        timeout: Duration,
    ) -> Result<Self, ConnectError> {
        let stream = TcpStream::connect_timeout(&addr, timeout).map_err(ConnectError::Io)?;
        stream.set_nodelay(true).map_err(ConnectError::Io)?;
        stream
            .set_read_timeout(Some(timeout))
            .map_err(ConnectError::Io)?;
        stream
            .set_write_timeout(Some(timeout))
            .map_err(ConnectError::Io)?;
        let Some(tls) = tls else {
            return Ok(ClientStream::Plain(stream));
        };
        let conn = ClientConnection::new(Arc::clone(&tls.config), tls.server_name.clone())
            .map_err(|e| ConnectError::Tls(TlsFailure(e.to_string())))?;
        let mut owned = StreamOwned::new(conn, stream);
        while owned.conn.is_handshaking() {
            if let Err(e) = owned.conn.complete_io(&mut owned.sock) {
                return Err(classify(e));
            }
        }
        Ok(ClientStream::Tls(Box::new(owned)))
    }

    /// Sets the read timeout of the socket underneath.
    pub(crate) fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        match self {
            ClientStream::Plain(s) => s.set_read_timeout(timeout),
            ClientStream::Tls(s) => s.sock.set_read_timeout(timeout),
        }
    }
}

/// A TLS error inside an I/O error is a TLS failure; anything else is the socket's.
fn classify(e: io::Error) -> ConnectError {
    match e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    {
        Some(tls) => ConnectError::Tls(TlsFailure(tls.to_string())),
        None => ConnectError::Io(e),
    }
}

impl Read for ClientStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            ClientStream::Plain(s) => s.read(buf),
            ClientStream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for ClientStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            ClientStream::Plain(s) => s.write(buf),
            ClientStream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            ClientStream::Plain(s) => s.flush(),
            ClientStream::Tls(s) => s.flush(),
        }
    }
}
