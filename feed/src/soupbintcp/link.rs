//! What both ends of a connection share: the outbox and the heartbeat and silence timers.

use super::*;

/// Bytes waiting to be written to the socket, in a buffer allocated once.
#[derive(Clone, Debug)]
pub(super) struct Outbox {
    pub(super) buf: Box<[u8]>,
    /// Invariant: `start <= end <= buf.len()`; `buf[start..end]` is unsent.
    pub(super) start: usize,
    pub(super) end: usize,
}

impl Outbox {
    pub(super) fn new(len: usize) -> Self {
        Outbox {
            buf: vec![0u8; len.max(MIN_OUTBOX_LEN)].into_boxed_slice(),
            start: 0,
            end: 0,
        }
    }

    pub(super) fn pending(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    pub(super) fn consume(&mut self, n: usize) {
        self.start += n.min(self.end - self.start);
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Appends one encoded frame; on error nothing is appended.
    pub(super) fn push(
        &mut self,
        encode: impl FnOnce(&mut [u8]) -> Result<usize, EncodeError>,
        need: usize,
    ) -> Result<(), EncodeError> {
        if self.buf.len() - self.end < need && self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let have = self.buf.len() - self.end;
        if have < need {
            return Err(EncodeError::BufferTooSmall { need, have });
        }
        let n = encode(&mut self.buf[self.end..])?;
        self.end += n;
        Ok(())
    }
}

/// What both sides share: the decoder, the outbox, and when each last sent and heard.
#[derive(Clone, Debug)]
pub(super) struct Link {
    pub(super) decoder: FrameDecoder,
    pub(super) outbox: Outbox,
    pub(super) last_sent: Duration,
    pub(super) last_received: Duration,
}

impl Link {
    pub(super) fn new(max_frame_len: u16, outbox_len: usize, now: Duration) -> Self {
        Link {
            decoder: FrameDecoder::new(max_frame_len),
            outbox: Outbox::new(outbox_len),
            last_sent: now,
            last_received: now,
        }
    }

    pub(super) fn feed(&mut self, bytes: &[u8], now: Duration) -> usize {
        if !bytes.is_empty() {
            // Any byte proves the peer alive, heartbeat or data, whole frame or not.
            self.last_received = self.last_received.max(now);
        }
        self.decoder.fill(bytes)
    }

    pub(super) fn commit(&mut self, n: usize, now: Duration) {
        if n > 0 {
            self.last_received = self.last_received.max(now);
        }
        self.decoder.commit(n);
    }

    /// Queues a server frame. Queuing counts as sending for the heartbeat timer: the bytes
    /// reach the socket as soon as the caller drains the outbox, and if the caller cannot
    /// drain it the peer is not reading and a heartbeat would not help.
    pub(super) fn send_server(
        &mut self,
        message: ServerMessage<'_>,
        now: Duration,
    ) -> Result<(), EncodeError> {
        self.outbox
            .push(|out| message.encode(out), message.encoded_len())?;
        self.last_sent = self.last_sent.max(now);
        Ok(())
    }

    /// Queues a client frame; see [`Link::send_server`].
    pub(super) fn send_client(
        &mut self,
        message: ClientMessage<'_>,
        now: Duration,
    ) -> Result<(), EncodeError> {
        self.outbox
            .push(|out| message.encode(out), message.encoded_len())?;
        self.last_sent = self.last_sent.max(now);
        Ok(())
    }

    /// The timers both sides keep: the peer is declared gone after `timeout` of silence,
    /// and, while `heartbeats` is on, `send_heartbeat` queues one after `interval` without
    /// sending. A heartbeat that does not fit the outbox is not retried at every poll:
    /// bytes are already waiting to go, so the peer hears from us once it reads.
    pub(super) fn fire_timers(
        &mut self,
        now: Duration,
        timeout: Duration,
        interval: Duration,
        heartbeats: bool,
        send_heartbeat: impl FnOnce(&mut Link) -> Result<(), EncodeError>,
    ) -> Option<TimerEvent> {
        let silent_for = now.saturating_sub(self.last_received);
        if silent_for >= timeout {
            return Some(TimerEvent::PeerDead { silent_for });
        }
        if heartbeats && now.saturating_sub(self.last_sent) >= interval {
            if send_heartbeat(self).is_err() {
                self.last_sent = now;
                return None;
            }
            return Some(TimerEvent::HeartbeatQueued);
        }
        None
    }

    /// When [`Link::fire_timers`] next has something to do.
    pub(super) fn next_deadline(
        &self,
        timeout: Duration,
        interval: Duration,
        heartbeats: bool,
    ) -> Duration {
        let dead = self.last_received.saturating_add(timeout);
        if heartbeats {
            dead.min(self.last_sent.saturating_add(interval))
        } else {
            dead
        }
    }
}

/// Why a session stopped. `Copy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeadReason {
    /// Nothing arrived from the peer for at least the configured timeout.
    PeerSilent {
        /// How long the peer had been silent when it was declared gone.
        silent_for: Duration,
    },
    /// The peer broke the protocol; the connection must be closed.
    Protocol(ProtocolError),
}

/// A protocol violation by the peer. `Copy`, allocation-free.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProtocolError {
    /// The byte stream could not be framed.
    Frame(FrameError),
    /// A frame is not a valid message.
    Parse(ParseError),
    /// A valid message that the session's state does not allow (sequenced data before
    /// login, a second login).
    Unexpected {
        /// The frame's type byte.
        packet_type: u8,
    },
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtocolError::Frame(e) => e.fmt(f),
            ProtocolError::Parse(e) => e.fmt(f),
            ProtocolError::Unexpected { packet_type } => write!(
                f,
                "SoupBinTCP {:?} frame is not allowed in the session's current state",
                *packet_type as char
            ),
        }
    }
}

impl std::error::Error for ProtocolError {}

/// Why a message could not be queued. `Copy`, allocation-free.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendError {
    /// The session is not in a state that sends this message (for example sequenced data
    /// before the client logged in, or anything after the session ended).
    NotReady,
    /// The frame could not be queued: most often the outbox is full, and draining it (the
    /// peer reading) makes room.
    Encode(EncodeError),
}

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendError::NotReady => write!(f, "SoupBinTCP session is not ready to send this"),
            SendError::Encode(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for SendError {}

impl From<EncodeError> for SendError {
    fn from(e: EncodeError) -> Self {
        SendError::Encode(e)
    }
}

/// What a timer did when polled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerEvent {
    /// A heartbeat was queued in the outbox: nothing had been sent for the interval.
    HeartbeatQueued,
    /// The peer was declared gone: nothing arrived for the timeout. The session is over.
    PeerDead {
        /// How long the peer had been silent.
        silent_for: Duration,
    },
}
