//! The server session: answers a login, streams sequenced data, keeps the peer alive.

use super::*;

/// Settings of a [`SoupServerSession`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    /// The only user name and password accepted.
    pub credentials: Credentials,
    /// The current session; a login naming another one is refused.
    pub session: Session,
    /// Send a heartbeat after this long without sending.
    pub heartbeat_interval: Duration,
    /// Declare the client gone after this long without receiving anything, unless its
    /// 4.1 login asks for another timeout.
    pub client_timeout: Duration,
    /// Longest frame accepted from the client.
    pub max_frame_len: u16,
    /// Bytes of the outbox (at least [`MIN_OUTBOX_LEN`]): how far the server may run ahead
    /// of a slow reader.
    pub outbox_len: usize,
}

impl ServerConfig {
    /// A server for `session` that accepts `credentials`, with the spec's timers.
    pub fn new(credentials: Credentials, session: Session) -> Self {
        ServerConfig {
            credentials,
            session,
            heartbeat_interval: DEFAULT_HEARTBEAT_INTERVAL,
            client_timeout: DEFAULT_PEER_TIMEOUT,
            // Client frames are small: a login is the largest fixed one.
            max_frame_len: 1024,
            outbox_len: DEFAULT_OUTBOX_LEN,
        }
    }
}

/// Where a [`SoupServerSession`] stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerState {
    /// Connected, waiting for the login request.
    AwaitingLogin,
    /// Login accepted: sequenced data may be sent.
    Streaming,
    /// The login was refused; close the connection once the output is written.
    Rejected(RejectReason),
    /// End of session queued; close the connection once the output is written.
    Ended,
    /// The client asked to log out; close the connection.
    LoggedOut,
    /// The client went silent or broke the protocol.
    Dead(DeadReason),
}

/// What the server saw in the bytes it was given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerEvent<'a> {
    /// The login was accepted (the reply is queued): stream from `next_sequence`.
    LoginAccepted {
        /// The first sequence number to send, after clamping the request.
        next_sequence: u64,
    },
    /// The login was refused (the reply is queued); close after writing the output.
    LoginRejected(RejectReason),
    /// An unsequenced message from the client.
    Unsequenced(&'a [u8]),
    /// Debug text from the client.
    Debug(&'a [u8]),
    /// The client logged out; close the connection.
    LogoutRequested,
}

/// Counters kept by [`SoupServerSession`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerCounts {
    /// Frames received, of every type.
    pub frames_received: u64,
    /// Sequenced messages queued.
    pub sequenced_sent: u64,
    /// Server heartbeats queued.
    pub heartbeats_sent: u64,
    /// Client heartbeats received.
    pub heartbeats_received: u64,
}

/// The sans-I/O server side of one SoupBinTCP connection, for the exchange simulator:
/// checks the login, replies, frames sequenced data, heartbeats, and notices a silent
/// client.
///
/// The caller owns the messages. It tells the session how far the stream has been
/// produced ([`SoupServerSession::set_next_available`]); after [`ServerEvent::LoginAccepted`]
/// it sends message [`SoupServerSession::next_sequence`] with
/// [`SoupServerSession::send_sequenced`] (which counts it), and so on, draining
/// [`SoupServerSession::output`] to the socket as it goes.
#[derive(Clone, Debug)]
pub struct SoupServerSession {
    pub(super) config: ServerConfig,
    pub(super) link: Link,
    pub(super) state: ServerState,
    /// The client timeout in force: the configured one, or the one the login asked for.
    pub(super) client_timeout: Duration,
    /// Sequence number the next produced message will have: a request past it is clamped.
    pub(super) next_available: u64,
    /// Sequence number of the next message to send.
    pub(super) next_sequence: u64,
    pub(super) stats: ServerCounts,
}

impl SoupServerSession {
    /// A session for a connection accepted at `now`; `next_available` is the sequence
    /// number of the next message the stream will produce (1 before any).
    pub fn new(config: ServerConfig, next_available: u64, now: Duration) -> Self {
        SoupServerSession {
            link: Link::new(config.max_frame_len, config.outbox_len, now),
            state: ServerState::AwaitingLogin,
            client_timeout: config.client_timeout,
            next_available: next_available.max(1),
            next_sequence: 1,
            stats: ServerCounts::default(),
            config,
        }
    }

    /// Records that the stream has produced messages up to `next_available - 1`.
    pub fn set_next_available(&mut self, next_available: u64) {
        self.next_available = next_available.max(1);
    }

    /// Takes received bytes (as many as fit) and returns how many were taken.
    pub fn feed(&mut self, bytes: &[u8], now: Duration) -> usize {
        self.link.feed(bytes, now)
    }

    /// The next event from the bytes received, `None` when more bytes are needed.
    ///
    /// # Errors
    ///
    /// A [`ProtocolError`] when the client broke the protocol; the session is then
    /// [`ServerState::Dead`] and every later call returns the same error.
    pub fn poll_event(&mut self, now: Duration) -> Option<Result<ServerEvent<'_>, ProtocolError>> {
        // Owned decisions in the loop, the payload lent on the way out: see
        // `SoupClient::poll_event`.
        let (span, event) = loop {
            if let ServerState::Dead(DeadReason::Protocol(e)) = self.state {
                return Some(Err(e));
            }
            let span = match self.link.decoder.next_span()? {
                Ok(span) => span,
                Err(e) => return Some(Err(self.fail(ProtocolError::Frame(e)))),
            };
            self.stats.frames_received += 1;
            let message = match ClientMessage::parse(self.link.decoder.frame(&span)) {
                Ok(m) => m,
                Err(e) => return Some(Err(self.fail(ProtocolError::Parse(e)))),
            };
            let event: ServerEvent<'static> = match (message, self.state) {
                (ClientMessage::Heartbeat, _) => {
                    self.stats.heartbeats_received += 1;
                    continue;
                }
                (ClientMessage::Debug(_), _) => ServerEvent::Debug(&[]),
                (ClientMessage::LoginRequest(login), ServerState::AwaitingLogin) => {
                    match self.answer_login(&login, now) {
                        Ok(event) => event,
                        // The outbox cannot hold even the reply: nothing useful can
                        // follow, so give up on the connection.
                        Err(_) => {
                            return Some(Err(self.fail(ProtocolError::Unexpected {
                                packet_type: packet_type::LOGIN_REQUEST,
                            })))
                        }
                    }
                }
                (ClientMessage::UnsequencedData(_), ServerState::Streaming) => {
                    ServerEvent::Unsequenced(&[])
                }
                (
                    ClientMessage::LogoutRequest,
                    ServerState::AwaitingLogin | ServerState::Streaming,
                ) => {
                    self.state = ServerState::LoggedOut;
                    ServerEvent::LogoutRequested
                }
                // After the session ended or the client logged out the connection is on
                // its way down; what the client still sends changes nothing.
                (_, ServerState::Ended | ServerState::LoggedOut | ServerState::Rejected(_)) => {
                    continue
                }
                (message, _) => {
                    let packet_type = message.packet_type();
                    return Some(Err(self.fail(ProtocolError::Unexpected { packet_type })));
                }
            };
            break (span, event);
        };
        let payload = self.link.decoder.frame(&span).payload;
        Some(Ok(match event {
            ServerEvent::Unsequenced(_) => ServerEvent::Unsequenced(payload),
            ServerEvent::Debug(_) => ServerEvent::Debug(payload),
            other => other,
        }))
    }

    pub(super) fn fail(&mut self, e: ProtocolError) -> ProtocolError {
        self.state = ServerState::Dead(DeadReason::Protocol(e));
        e
    }

    pub(super) fn answer_login(
        &mut self,
        login: &LoginRequest,
        now: Duration,
    ) -> Result<ServerEvent<'static>, EncodeError> {
        let reject = if login.credentials != self.config.credentials {
            Some(RejectReason::NotAuthorized)
        } else if !login.session.is_blank() && login.session != self.config.session {
            Some(RejectReason::SessionNotAvailable)
        } else {
            None
        };
        if let Some(reason) = reject {
            self.link
                .send_server(ServerMessage::LoginRejected(reason), now)?;
            self.state = ServerState::Rejected(reason);
            return Ok(ServerEvent::LoginRejected(reason));
        }
        // 0 asks for what is generated from now on; anything else is clamped to what
        // exists, so a client asking past the end waits for the next message.
        let next_sequence = match login.sequence {
            0 => self.next_available,
            requested => requested.min(self.next_available),
        };
        self.link.send_server(
            ServerMessage::LoginAccepted {
                session: self.config.session,
                sequence: next_sequence,
            },
            now,
        )?;
        if let Some(ms) = login.heartbeat_timeout_ms.filter(|&ms| ms > 0) {
            self.client_timeout = Duration::from_millis(u64::from(ms));
        }
        self.next_sequence = next_sequence;
        self.state = ServerState::Streaming;
        Ok(ServerEvent::LoginAccepted { next_sequence })
    }

    /// Takes all of `bytes` received at `now` and hands every event to `on_event`.
    ///
    /// # Errors
    ///
    /// The first [`ProtocolError`]; the rest of `bytes` is dropped, since the connection
    /// must be closed.
    pub fn on_bytes(
        &mut self,
        mut bytes: &[u8],
        now: Duration,
        mut on_event: impl FnMut(ServerEvent<'_>),
    ) -> Result<(), ProtocolError> {
        loop {
            let taken = self.feed(bytes, now);
            bytes = &bytes[taken..];
            while let Some(event) = self.poll_event(now) {
                on_event(event?);
            }
            if bytes.is_empty() {
                return Ok(());
            }
        }
    }

    /// Queues message [`SoupServerSession::next_sequence`] and counts it sent.
    ///
    /// # Errors
    ///
    /// [`SendError::NotReady`] unless streaming; [`SendError::Encode`] when the outbox is
    /// full (drain it and send the same message again) or the payload too long.
    pub fn send_sequenced(&mut self, payload: &[u8], now: Duration) -> Result<(), SendError> {
        if self.state != ServerState::Streaming {
            return Err(SendError::NotReady);
        }
        self.link
            .send_server(ServerMessage::SequencedData(payload), now)?;
        self.next_sequence += 1;
        self.next_available = self.next_available.max(self.next_sequence);
        self.stats.sequenced_sent += 1;
        Ok(())
    }

    /// Queues debug text.
    ///
    /// # Errors
    ///
    /// [`SendError::Encode`] when the outbox is full or the text too long.
    pub fn send_debug(&mut self, text: &[u8], now: Duration) -> Result<(), SendError> {
        self.link.send_server(ServerMessage::Debug(text), now)?;
        Ok(())
    }

    /// Queues end of session: no more sequenced data in this SoupBinTCP session.
    ///
    /// # Errors
    ///
    /// [`SendError::NotReady`] unless streaming; [`SendError::Encode`] when the outbox is
    /// full.
    pub fn end_session(&mut self, now: Duration) -> Result<(), SendError> {
        if self.state != ServerState::Streaming {
            return Err(SendError::NotReady);
        }
        self.link.send_server(ServerMessage::EndOfSession, now)?;
        self.state = ServerState::Ended;
        Ok(())
    }

    /// Fires the timers due at `now`: queues a heartbeat when streaming and nothing was
    /// sent for the interval, declares the client dead when nothing arrived for the
    /// timeout (also before it logs in). Call until it returns `None`.
    pub fn poll_timers(&mut self, now: Duration) -> Option<TimerEvent> {
        if !matches!(
            self.state,
            ServerState::AwaitingLogin | ServerState::Streaming
        ) {
            return None;
        }
        let event = self.link.fire_timers(
            now,
            self.client_timeout,
            self.config.heartbeat_interval,
            self.state == ServerState::Streaming,
            |link| link.send_server(ServerMessage::Heartbeat, now),
        );
        match event {
            Some(TimerEvent::PeerDead { silent_for }) => {
                self.state = ServerState::Dead(DeadReason::PeerSilent { silent_for });
            }
            Some(TimerEvent::HeartbeatQueued) => self.stats.heartbeats_sent += 1,
            None => {}
        }
        event
    }

    /// When [`SoupServerSession::poll_timers`] next has something to do; `None` when no
    /// timer runs.
    pub fn next_deadline(&self) -> Option<Duration> {
        let (timeout, interval) = (self.client_timeout, self.config.heartbeat_interval);
        match self.state {
            ServerState::AwaitingLogin => Some(self.link.next_deadline(timeout, interval, false)),
            ServerState::Streaming => Some(self.link.next_deadline(timeout, interval, true)),
            _ => None,
        }
    }

    /// Bytes waiting to be written to the socket.
    pub fn output(&self) -> &[u8] {
        self.link.outbox.pending()
    }

    /// Marks the first `n` bytes of [`SoupServerSession::output`] as written.
    pub fn consume_output(&mut self, n: usize) {
        self.link.outbox.consume(n);
    }

    /// Where the session stands.
    pub fn state(&self) -> ServerState {
        self.state
    }

    /// Sequence number of the next sequenced message to send.
    pub fn next_sequence(&self) -> u64 {
        self.next_sequence
    }

    /// The client silence timeout in force (the login may have changed it).
    pub fn client_timeout(&self) -> Duration {
        self.client_timeout
    }

    /// The counters.
    pub fn stats(&self) -> ServerCounts {
        self.stats
    }
}
