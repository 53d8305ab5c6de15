//! One server-side TLS connection over a non-blocking socket, driven by the server's loop.
//!
//! The loop calls [`ServerSession::read`] when the socket is readable (ciphertext in,
//! plaintext out into the caller's buffer) and writes through a [`SessionWriter`] (plaintext
//! in, ciphertext out to the socket) every turn; [`ServerSession::send`] pushes what the
//! handshake or an alert left to send. Nothing here blocks: a socket that would block ends
//! the call, and the work goes on at the next one.
//!
//! Plaintext handed to the writer is bounded by [`SEND_BUFFER_BYTES`]: past it the writer
//! says `WouldBlock`, exactly as a full socket does, so a server's own write queue (its high
//! and low marks, its conflation) keeps working unchanged over TLS.

use std::io::{self, Read, Write};
use std::sync::Arc;

use rustls::{ServerConfig, ServerConnection};

/// Bytes rustls may hold for a connection before its writer refuses more: ciphertext not
/// yet taken by the socket, and plaintext written during the handshake.
pub const SEND_BUFFER_BYTES: usize = 64 << 10;

/// One server-side TLS connection. `Send`, not `Sync`.
#[derive(Debug)]
pub struct ServerSession {
    conn: ServerConnection,
    /// Set once the handshake has completed (it stays set).
    established: bool,
}

/// What one [`ServerSession::read`] produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PlainRead {
    /// Plaintext bytes copied into the buffer.
    pub bytes: usize,
    /// The peer closed (a `close_notify`, or the end of the TCP stream).
    pub closed: bool,
    /// This call completed the handshake.
    pub established: bool,
}

impl ServerSession {
    /// A session that awaits the client's hello.
    ///
    /// # Errors
    ///
    /// If rustls refuses the configuration.
    pub fn new(config: &Arc<ServerConfig>) -> Result<Self, rustls::Error> {
        let mut conn = ServerConnection::new(Arc::clone(config))?;
        conn.set_buffer_limit(Some(SEND_BUFFER_BYTES));
        Ok(ServerSession {
            conn,
            established: false,
        })
    }

    /// Whether the handshake is still under way.
    pub fn is_handshaking(&self) -> bool {
        self.conn.is_handshaking()
    }

    /// Whether the handshake has completed.
    pub fn is_established(&self) -> bool {
        self.established
    }

    /// The negotiated protocol version's name (`TLSv1_3`), once established.
    pub fn protocol(&self) -> Option<rustls::ProtocolVersion> {
        self.conn.protocol_version()
    }

    /// Reads ciphertext from `socket` until it would block or `buf` is full, and copies the
    /// plaintext into `buf`. Plaintext that does not fit stays inside for the next call,
    /// which hands it out before it reads the socket again.
    ///
    /// # Errors
    ///
    /// A socket error, or a TLS error (a failed handshake, a bad record): the connection
    /// is over. The alert rustls queued for the peer goes out with the next
    /// [`ServerSession::send`].
    pub fn read(&mut self, socket: &mut impl Read, buf: &mut [u8]) -> io::Result<PlainRead> {
        let mut out = PlainRead::default();
        loop {
            match self.conn.reader().read(&mut buf[out.bytes..]) {
                Ok(0) if out.bytes < buf.len() => {
                    out.closed = true;
                    return Ok(out);
                }
                Ok(n) => out.bytes += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            if out.bytes == buf.len() {
                return Ok(out);
            }
            match self.conn.read_tls(socket) {
                Ok(0) => {
                    out.closed = true;
                    return Ok(out);
                }
                Ok(_) => {
                    self.conn.process_new_packets().map_err(io::Error::other)?;
                    if !self.established && !self.conn.is_handshaking() {
                        self.established = true;
                        out.established = true;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    // One more look: the last records may have left plaintext.
                    if let Ok(n) = self.conn.reader().read(&mut buf[out.bytes..]) {
                        out.bytes += n;
                    }
                    return Ok(out);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Sends queued ciphertext (handshake messages, records, alerts) until the socket
    /// would block or nothing is left; the bytes sent.
    ///
    /// # Errors
    ///
    /// A socket error but `WouldBlock` and `Interrupted`.
    pub fn send(&mut self, socket: &mut impl Write) -> io::Result<usize> {
        let mut sent = 0;
        while self.conn.wants_write() {
            match self.conn.write_tls(socket) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(sent)
    }

    /// Whether ciphertext waits for the socket.
    pub fn wants_send(&self) -> bool {
        self.conn.wants_write()
    }

    /// Queues a `close_notify` (the orderly end of the TLS stream); send it with
    /// [`ServerSession::send`].
    pub fn close(&mut self) {
        self.conn.send_close_notify();
    }

    /// A writer of plaintext to the peer over `socket`.
    pub fn writer<'a, S: Write>(&'a mut self, socket: &'a mut S) -> SessionWriter<'a, S> {
        SessionWriter {
            session: self,
            socket,
        }
    }
}

/// Plaintext in, ciphertext out to the socket; `WouldBlock` when either is full. Made by
/// [`ServerSession::writer`].
#[derive(Debug)]
pub struct SessionWriter<'a, S> {
    session: &'a mut ServerSession,
    socket: &'a mut S,
}

impl<S: Write> Write for SessionWriter<'_, S> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.session.send(self.socket)?;
        let taken = self.session.conn.writer().write(bytes)?;
        self.session.send(self.socket)?;
        if taken == 0 && !bytes.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        Ok(taken)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.session.send(self.socket).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{client_config, server_config, server_name};
    use rustls::ClientConnection;
    use std::collections::VecDeque;

    /// One direction of a socket pair in memory: reads say `WouldBlock` when empty, writes
    /// take at most `room` bytes at a time.
    #[derive(Default)]
    struct Pipe {
        bytes: VecDeque<u8>,
    }

    struct End<'a> {
        from: &'a mut Pipe,
        to: &'a mut Pipe,
        room: usize,
    }

    impl Read for End<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.from.bytes.is_empty() {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let n = buf.len().min(self.from.bytes.len());
            for (b, x) in buf.iter_mut().zip(self.from.bytes.drain(..n)) {
                *b = x;
            }
            Ok(n)
        }
    }

    impl Write for End<'_> {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.room == 0 {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let n = buf.len().min(self.room);
            self.room -= n;
            self.to.bytes.extend(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn configs() -> (Arc<ServerConfig>, Arc<rustls::ClientConfig>) {
        let dir = tempfile::tempdir().expect("dir");
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = rcgen::CertificateParams::new(vec!["localhost".into()])
            .expect("names")
            .self_signed(&key)
            .expect("cert");
        let c = dir.path().join("c.pem");
        let k = dir.path().join("k.pem");
        std::fs::write(&c, cert.pem()).expect("write");
        std::fs::write(&k, key.serialize_pem()).expect("write");
        (
            server_config(&c, &k).expect("server"),
            client_config(Some(&c)).expect("client"),
        )
    }

    #[test]
    fn a_handshake_then_plaintext_both_ways_through_a_socket_that_takes_little_at_a_time() {
        let (server_cfg, client_cfg) = configs();
        let mut server = ServerSession::new(&server_cfg).expect("session");
        let mut client = ClientConnection::new(client_cfg, server_name("localhost").expect("name"))
            .expect("client");
        let (mut c2s, mut s2c) = (Pipe::default(), Pipe::default());
        let payload: Vec<u8> = (0..200_000u32).map(|i| i as u8).collect();
        let mut queued = &payload[..];
        let mut got_by_client = Vec::new();
        let mut got_by_server = Vec::new();
        client.writer().write_all(b"login").expect("client writes");
        let mut established = false;
        for _ in 0..10_000 {
            // Client side: a blocking-style peer over the same pipes.
            while client.wants_write() {
                let mut v = Vec::new();
                client.write_tls(&mut v).expect("client out");
                c2s.bytes.extend(v);
            }
            let mut buf = [0u8; 4096];
            let mut server_end = End {
                from: &mut c2s,
                to: &mut s2c,
                room: 1500,
            };
            let r = server
                .read(&mut server_end, &mut buf)
                .expect("server reads");
            established |= r.established;
            got_by_server.extend_from_slice(&buf[..r.bytes]);
            if server.is_established() && !queued.is_empty() {
                match server.writer(&mut server_end).write(queued) {
                    Ok(n) => queued = &queued[n..],
                    Err(e) => assert_eq!(e.kind(), io::ErrorKind::WouldBlock),
                }
            }
            server.send(&mut server_end).expect("server sends");
            let incoming: Vec<u8> = s2c.bytes.drain(..).collect();
            if !incoming.is_empty() {
                client
                    .read_tls(&mut incoming.as_slice())
                    .expect("client in");
                client.process_new_packets().expect("client records");
            }
            let mut plain = [0u8; 65536];
            while let Ok(n) = client.reader().read(&mut plain) {
                if n == 0 {
                    break;
                }
                got_by_client.extend_from_slice(&plain[..n]);
            }
            if queued.is_empty() && got_by_client.len() == payload.len() {
                break;
            }
        }
        assert!(established, "the handshake completed");
        assert_eq!(got_by_server, b"login");
        assert_eq!(got_by_client.len(), payload.len());
        assert!(got_by_client == payload, "every byte, in order");
    }

    #[test]
    fn garbage_instead_of_a_hello_is_an_error_not_a_panic() {
        let (server_cfg, _) = configs();
        let mut server = ServerSession::new(&server_cfg).expect("session");
        let mut from = Pipe::default();
        from.bytes.extend(b"\x00\x05Lhello, plain protocol");
        let mut to = Pipe::default();
        let mut end = End {
            from: &mut from,
            to: &mut to,
            room: 1 << 20,
        };
        let mut buf = [0u8; 64];
        assert!(server.read(&mut end, &mut buf).is_err());
        server.send(&mut end).expect("the alert goes out");
        assert!(!to.bytes.is_empty(), "an alert tells the peer");
    }
}
