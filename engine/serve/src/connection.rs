//! One subscriber's connection as the server holds it: its socket (and its TLS session,
//! when the server speaks TLS), what it sent that is not yet a whole frame, its write
//! queue, its subscriptions, and its sequence number.
#![forbid(unsafe_code)]

use std::io::{self, Read};
use std::net::SocketAddr;
use ticklane_tls::ServerSession;

use mio::net::TcpStream;

use super::protocol::{encode_server, Reason, ServerMessage, ACCOUNT_LEN};
use super::write_queue::WriteQueue;

/// Bytes kept free in every queue for the frames that end a connection (come back later,
/// cut loose), so that those always find room.
pub(crate) const CONTROL_RESERVE: usize = 32;
/// What a connection reads at a time: requests are small, and a login at most 150 bytes.
const READ_BYTES: usize = 1 << 12;

/// One subscription of a connection.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sub {
    pub(crate) symbol: [u8; 8],
    pub(crate) locate: u16,
    /// Whether the server's per-locate interest count includes it (under `locate`).
    pub(crate) counted: bool,
    /// Updates at or below this feed sequence are in the image already sent.
    pub(crate) image_feed_seq: u64,
    /// 0 when nothing is owed; otherwise the order in which its state was conflated (the
    /// largest is the newest), so that images owed go out newest first.
    pub(crate) pending: u64,
    /// The request the next image answers; 0 for a refresh.
    pub(crate) answer: u32,
    /// When the image owed was first held back because its source was behind (ns); 0 when
    /// it was not.
    pub(crate) owed_since_ns: u64,
}

/// Where a connection stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Connected; the first frame must be a login.
    AwaitingLogin,
    /// The login's secret is with the verifier; what the client sent after the login
    /// waits in the read buffer until the verdict.
    Verifying,
    /// Logged in: requests are served and updates flow.
    Streaming,
    /// Going: nothing more is queued, and what the client sends is read and dropped; what is
    /// queued is flushed, then the write side is shut (the client reads the reason, then the
    /// end), and the socket closes when the client closes its side or at the deadline (ns on
    /// the server's clock). Closing with the client's bytes unread would send a reset, and a
    /// reset makes the client's kernel drop what it had not read yet: the reason with it.
    Closing { deadline_ns: u64 },
}

pub(crate) struct Connection {
    pub(crate) stream: TcpStream,
    /// The TLS session over `stream`; `None` on a plain server.
    pub(crate) tls: Option<Box<ServerSession>>,
    pub(crate) peer: SocketAddr,
    pub(crate) read_buf: Box<[u8]>,
    pub(crate) read_len: usize,
    pub(crate) queue: WriteQueue,
    pub(crate) limit: usize,
    pub(crate) phase: Phase,
    /// The sequence number the next sequenced message carries.
    pub(crate) next_seq: u64,
    pub(crate) subs: Vec<Sub>,
    /// Above the high mark (until back at the low mark): state updates are conflated.
    pub(crate) conflating: bool,
    /// The socket reported end of stream or an error: drop it as soon as possible.
    pub(crate) dead: bool,
    /// When the server last queued anything (ns), for heartbeats.
    pub(crate) last_queued_ns: u64,
    /// When the connection was accepted (ns), for the login timeout.
    pub(crate) accepted_ns: u64,
    /// When the last whole frame from the client arrived (ns), for the idle timeout.
    pub(crate) last_heard_ns: u64,
    /// Closing, everything sent: the write side is shut.
    pub(crate) write_shut: bool,
    /// This connection's number, unique over the server's life (a verdict for a slot's
    /// earlier connection is not this one's).
    pub(crate) ticket: u64,
    /// The account logged in (verified, when the server has accounts).
    pub(crate) account: Option<[u8; ACCOUNT_LEN]>,
    /// The account the login named, while it is verified.
    pub(crate) named: [u8; ACCOUNT_LEN],
    /// When the login arrived (ns), for the failed-login delay and the session's length.
    pub(crate) login_ns: u64,
    /// A failed verification is answered at this time (ns): the same delay after the
    /// login whatever failed.
    pub(crate) refuse_at_ns: Option<u64>,
    /// The account sees the best level of each side only.
    pub(crate) top_only: bool,
    /// The account's limit on subscriptions (the server's when it has none).
    pub(crate) max_subscriptions: usize,
    /// Why the server ended the connection, when it did (`None`: the client left).
    pub(crate) ended: Option<Reason>,
}

impl Connection {
    pub(crate) fn new(
        stream: TcpStream,
        tls: Option<Box<ServerSession>>,
        peer: SocketAddr,
        limit: usize,
        max_symbols: usize,
        now_ns: u64,
        ticket: u64,
    ) -> Self {
        Connection {
            stream,
            tls,
            peer,
            read_buf: vec![0; READ_BYTES].into_boxed_slice(),
            read_len: 0,
            queue: WriteQueue::new(limit),
            limit,
            phase: Phase::AwaitingLogin,
            next_seq: 1,
            subs: Vec::with_capacity(max_symbols),
            conflating: false,
            dead: false,
            last_queued_ns: now_ns,
            accepted_ns: now_ns,
            last_heard_ns: now_ns,
            write_shut: false,
            ticket,
            account: None,
            named: [b' '; ACCOUNT_LEN],
            login_ns: now_ns,
            refuse_at_ns: None,
            top_only: false,
            max_subscriptions: max_symbols,
            ended: None,
        }
    }

    /// Whether `len` more bytes of data fit, leaving the control reserve free.
    pub(crate) fn fits(&self, len: usize) -> bool {
        self.queue.len() + len + CONTROL_RESERVE <= self.limit
    }

    /// Reads what the socket has into the read buffer, until it would block or the buffer
    /// is full (over TLS: the plaintext). `true` when this read completed a TLS handshake.
    ///
    /// # Errors
    ///
    /// A socket error, or a TLS error (a failed handshake, a bad record).
    pub(crate) fn fill(&mut self) -> io::Result<bool> {
        if let Some(tls) = self.tls.as_mut() {
            let read = tls.read(&mut self.stream, &mut self.read_buf[self.read_len..])?;
            self.read_len += read.bytes;
            self.dead |= read.closed;
            return Ok(read.established);
        }
        while self.read_len < self.read_buf.len() {
            match self.stream.read(&mut self.read_buf[self.read_len..]) {
                Ok(0) => {
                    self.dead = true;
                    return Ok(false);
                }
                Ok(n) => self.read_len += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(false)
    }

    /// Whether a TLS handshake is still under way.
    pub(crate) fn handshaking(&self) -> bool {
        self.tls.as_ref().is_some_and(|t| t.is_handshaking())
    }

    /// Sends what is queued until the socket would block (over TLS, through the session,
    /// which also sends what its handshake left); the plaintext bytes taken.
    ///
    /// # Errors
    ///
    /// A socket error but `WouldBlock` and `Interrupted`.
    pub(crate) fn flush(&mut self) -> io::Result<usize> {
        match self.tls.as_mut() {
            Some(tls) => {
                let n = self.queue.flush_to(&mut tls.writer(&mut self.stream))?;
                tls.send(&mut self.stream)?;
                Ok(n)
            }
            None => self.queue.flush_to(&mut self.stream),
        }
    }

    /// Reads and drops what the client sent (a closing connection serves nothing more),
    /// until it would block; the end of the stream marks the connection dead.
    pub(crate) fn discard_input(&mut self) {
        if let Some(tls) = self.tls.as_mut() {
            loop {
                match tls.read(&mut self.stream, &mut self.read_buf) {
                    Ok(read) if read.closed => {
                        self.dead = true;
                        return;
                    }
                    Ok(read) if read.bytes == self.read_buf.len() => {}
                    Ok(_) => return,
                    Err(_) => {
                        self.dead = true;
                        return;
                    }
                }
            }
        }
        loop {
            match self.stream.read(&mut self.read_buf) {
                Ok(0) => {
                    self.dead = true;
                    return;
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => {
                    self.dead = true;
                    return;
                }
            }
        }
    }

    /// Closing with everything sent: shuts the write side once, so the client reads the end
    /// of the stream after the reason, and reads what it still sends.
    pub(crate) fn finish_sending(&mut self) {
        if !self.write_shut {
            self.write_shut = true;
            if let Some(tls) = self.tls.as_mut() {
                // The orderly end of the TLS stream, so the client reads it as an end and
                // not as a truncation.
                tls.close();
                if tls.send(&mut self.stream).is_err() {
                    self.dead = true;
                }
            }
            if self.stream.shutdown(std::net::Shutdown::Write).is_err() {
                self.dead = true;
            }
        }
        self.discard_input();
    }

    /// Drops the first `used` bytes of the read buffer.
    pub(crate) fn consume(&mut self, used: usize) {
        self.read_buf.copy_within(used..self.read_len, 0);
        self.read_len -= used;
    }

    /// Queues a control frame (it always fits: the reserve is kept for it).
    pub(crate) fn push_control(&mut self, message: &ServerMessage<'_>, now_ns: u64) {
        let mut frame = [0u8; CONTROL_RESERVE];
        let mut out = Slice(&mut frame, 0);
        encode_server(message, &mut out);
        let len = out.1;
        let _ = self.queue.push(&frame[..len]);
        self.last_queued_ns = now_ns;
    }

    /// Queues a sequenced control frame (an answer with no state behind it: unknown
    /// symbol, not entitled), numbered with the next sequence.
    pub(crate) fn push_sequenced(
        &mut self,
        now_ns: u64,
        message: impl FnOnce(u64) -> ServerMessage<'static>,
    ) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.push_control(&message(seq), now_ns);
    }

    /// Ends the connection: the frame saying why is queued after what is queued already
    /// (never dropped: a frame half sent must be finished, or the stream is garbage), and
    /// the socket closes once it is sent or at `deadline_ns`.
    pub(crate) fn close_with(
        &mut self,
        message: &ServerMessage<'_>,
        now_ns: u64,
        deadline_ns: u64,
    ) {
        if matches!(self.phase, Phase::Closing { .. }) {
            return;
        }
        self.ended = match *message {
            ServerMessage::CutLoose { reason }
            | ServerMessage::ComeBackLater { reason, .. }
            | ServerMessage::LoginRejected { reason, .. } => Some(reason),
            _ => None,
        };
        self.push_control(message, now_ns);
        self.phase = Phase::Closing { deadline_ns };
    }

    /// Cuts the client loose for `reason`.
    pub(crate) fn cut(&mut self, reason: Reason, now_ns: u64, deadline_ns: u64) {
        self.close_with(&ServerMessage::CutLoose { reason }, now_ns, deadline_ns);
    }

    /// The subscription to `symbol`, if any.
    pub(crate) fn sub_index(&self, symbol: &[u8; 8]) -> Option<usize> {
        self.subs.iter().position(|s| &s.symbol == symbol)
    }
}

/// A fixed buffer as a frame sink (control frames are small).
struct Slice<'a>(&'a mut [u8], usize);

impl super::protocol::FrameOut for Slice<'_> {
    fn put(&mut self, bytes: &[u8]) {
        self.0[self.1..self.1 + bytes.len()].copy_from_slice(bytes);
        self.1 += bytes.len();
    }
}
