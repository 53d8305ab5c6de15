//! The client session: login, sequenced data, heartbeats, and why it stopped.

use super::*;

/// Settings of a [`SoupClient`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientConfig {
    /// User name and password.
    pub credentials: Credentials,
    /// Session to join; blank joins the server's current session.
    pub session: Session,
    /// First sequence number wanted: 1 replays the session from the start, 0 asks only for
    /// messages generated from now on, `n` resumes after a reconnect.
    pub next_sequence: u64,
    /// 4.1's requested heartbeat timeout (ms) sent in the login; `None` leaves it out.
    pub heartbeat_timeout_ms: Option<u32>,
    /// Send a heartbeat after this long without sending.
    pub heartbeat_interval: Duration,
    /// Declare the server gone after this long without receiving anything.
    pub server_timeout: Duration,
    /// Longest frame accepted; longer is a protocol error.
    pub max_frame_len: u16,
    /// Bytes of the outbox (at least [`MIN_OUTBOX_LEN`]).
    pub outbox_len: usize,
}

impl ClientConfig {
    /// Joins the current session from its first message with the spec's timers.
    pub fn new(credentials: Credentials) -> Self {
        ClientConfig {
            credentials,
            session: Session([b' '; SESSION_LEN]),
            next_sequence: 1,
            heartbeat_timeout_ms: None,
            heartbeat_interval: DEFAULT_HEARTBEAT_INTERVAL,
            server_timeout: DEFAULT_PEER_TIMEOUT,
            max_frame_len: MAX_FRAME_LEN,
            outbox_len: DEFAULT_OUTBOX_LEN,
        }
    }
}

/// Where a [`SoupClient`] stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientState {
    /// Made, waiting for the caller's TCP connection ([`SoupClient::on_connected`]).
    Connecting,
    /// Login request queued, no answer yet.
    LoginSent,
    /// Login accepted: sequenced data flows.
    LoggedIn,
    /// The server ended the session (`Z`).
    Ended,
    /// The server refused the login (`J`).
    Rejected(RejectReason),
    /// The client queued a logout request; the server will close the connection.
    LoggedOut,
    /// The server went silent or broke the protocol.
    Dead(DeadReason),
}

/// What the client saw in the bytes it was given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientEvent<'a> {
    /// The login was accepted.
    LoggedIn {
        /// The session joined (the server's current one when the request was blank).
        session: Session,
        /// Sequence number of the next sequenced message. Above the number requested
        /// (other than 0), messages in between will never come in this SoupBinTCP session.
        next_sequence: u64,
    },
    /// The login was refused; the connection is finished.
    Rejected(RejectReason),
    /// One sequenced message, with the sequence number both sides counted.
    Sequenced {
        /// Its sequence number.
        seq: u64,
        /// Its bytes, borrowed from the decoder until the next poll.
        payload: &'a [u8],
    },
    /// Debug text from the server.
    Debug(&'a [u8]),
    /// The server ended the session; `next_sequence` is one past the last message.
    EndOfSession {
        /// One past the last sequence number delivered.
        next_sequence: u64,
    },
}

/// Counters kept by [`SoupClient`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientCounts {
    /// Frames received, of every type.
    pub frames_received: u64,
    /// Sequenced messages delivered.
    pub sequenced: u64,
    /// Server heartbeats received.
    pub heartbeats_received: u64,
    /// Client heartbeats queued.
    pub heartbeats_sent: u64,
}

/// The sans-I/O SoupBinTCP client: logs in, counts sequence numbers, keeps the connection
/// alive and notices a dead server.
///
/// Drive it with:
/// - [`SoupClient::on_connected`] once TCP connects (queues the login request);
/// - received bytes: [`SoupClient::on_bytes`], or [`SoupClient::feed`] then
///   [`SoupClient::poll_event`] until `None`;
/// - [`SoupClient::poll_timers`] at [`SoupClient::next_deadline`] (and whenever it likes),
///   until it returns `None`;
/// - [`SoupClient::output`] written to the socket, then [`SoupClient::consume_output`].
///
/// After a disconnect, a new client made from [`SoupClient::resume_config`] logs back in to
/// the same session at the next sequence number, so no message is lost or repeated.
#[derive(Clone, Debug)]
pub struct SoupClient {
    pub(super) config: ClientConfig,
    pub(super) link: Link,
    pub(super) state: ClientState,
    /// The session joined, once the login is accepted.
    pub(super) session: Option<Session>,
    /// Sequence number of the next sequenced message: the requested one until the login is
    /// accepted, then the accepted one plus one per message.
    pub(super) next_sequence: u64,
    pub(super) stats: ClientCounts,
}

impl SoupClient {
    /// A client in [`ClientState::Connecting`]; nothing is queued until it is connected.
    pub fn new(config: ClientConfig) -> Self {
        SoupClient {
            link: Link::new(config.max_frame_len, config.outbox_len, Duration::ZERO),
            state: ClientState::Connecting,
            session: None,
            next_sequence: config.next_sequence,
            stats: ClientCounts::default(),
            config,
        }
    }

    /// The TCP connection is up at `now`: queues the login request and starts the server
    /// silence timer (a server that never answers the login is dead too).
    ///
    /// # Errors
    ///
    /// [`SendError::NotReady`] unless the client is still connecting;
    /// [`SendError::Encode`] when the outbox is too small for a login or the requested
    /// heartbeat timeout does not fit its field.
    pub fn on_connected(&mut self, now: Duration) -> Result<(), SendError> {
        if self.state != ClientState::Connecting {
            return Err(SendError::NotReady);
        }
        let login = LoginRequest {
            credentials: self.config.credentials,
            session: self.config.session,
            sequence: self.config.next_sequence,
            heartbeat_timeout_ms: self.config.heartbeat_timeout_ms,
        };
        self.link.last_received = now;
        self.link
            .send_client(ClientMessage::LoginRequest(login), now)?;
        self.state = ClientState::LoginSent;
        Ok(())
    }

    /// Takes received bytes (as many as fit; less only when complete frames wait to be
    /// polled) and returns how many were taken. Receiving anything resets the silence timer.
    pub fn feed(&mut self, bytes: &[u8], now: Duration) -> usize {
        self.link.feed(bytes, now)
    }

    /// The decoder's free space, to read the socket into directly; follow with
    /// [`SoupClient::commit_read`].
    pub fn read_buf(&mut self) -> &mut [u8] {
        self.link.decoder.spare_mut()
    }

    /// Marks `n` bytes read into [`SoupClient::read_buf`] at `now` as received.
    pub fn commit_read(&mut self, n: usize, now: Duration) {
        self.link.commit(n, now);
    }

    /// The next event from the bytes received, `None` when more bytes are needed.
    ///
    /// # Errors
    ///
    /// A [`ProtocolError`] when the server broke the protocol; the client is then
    /// [`ClientState::Dead`] and every later call returns the same error.
    pub fn poll_event(&mut self) -> Option<Result<ClientEvent<'_>, ProtocolError>> {
        // The loop decides with owned values and lends the payload only on the way out:
        // a borrow returned from inside the loop would hold the decoder for every turn.
        let (span, event) = loop {
            if let ClientState::Dead(DeadReason::Protocol(e)) = self.state {
                return Some(Err(e));
            }
            let span = match self.link.decoder.next_span()? {
                Ok(span) => span,
                Err(e) => return Some(Err(self.fail(ProtocolError::Frame(e)))),
            };
            self.stats.frames_received += 1;
            let message = match ServerMessage::parse(self.link.decoder.frame(&span)) {
                Ok(m) => m,
                Err(e) => return Some(Err(self.fail(ProtocolError::Parse(e)))),
            };
            // Payload-carrying events get an empty payload here, filled in below.
            let event: ClientEvent<'static> = match (message, self.state) {
                (ServerMessage::Heartbeat, _) => {
                    self.stats.heartbeats_received += 1;
                    continue;
                }
                (ServerMessage::Debug(_), _) => ClientEvent::Debug(&[]),
                (ServerMessage::LoginAccepted { session, sequence }, ClientState::LoginSent) => {
                    self.state = ClientState::LoggedIn;
                    self.session = Some(session);
                    self.next_sequence = sequence;
                    ClientEvent::LoggedIn {
                        session,
                        next_sequence: sequence,
                    }
                }
                (ServerMessage::LoginRejected(reason), ClientState::LoginSent) => {
                    self.state = ClientState::Rejected(reason);
                    ClientEvent::Rejected(reason)
                }
                // Data that the server sent before it read our logout is still real data.
                (
                    ServerMessage::SequencedData(_),
                    ClientState::LoggedIn | ClientState::LoggedOut,
                ) => {
                    let seq = self.next_sequence;
                    self.next_sequence = seq.saturating_add(1);
                    self.stats.sequenced += 1;
                    ClientEvent::Sequenced { seq, payload: &[] }
                }
                (ServerMessage::EndOfSession, ClientState::LoggedIn | ClientState::LoggedOut) => {
                    self.state = ClientState::Ended;
                    ClientEvent::EndOfSession {
                        next_sequence: self.next_sequence,
                    }
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
            ClientEvent::Sequenced { seq, .. } => ClientEvent::Sequenced { seq, payload },
            ClientEvent::Debug(_) => ClientEvent::Debug(payload),
            other => other,
        }))
    }

    pub(super) fn fail(&mut self, e: ProtocolError) -> ProtocolError {
        self.state = ClientState::Dead(DeadReason::Protocol(e));
        e
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
        mut on_event: impl FnMut(ClientEvent<'_>),
    ) -> Result<(), ProtocolError> {
        loop {
            let taken = self.feed(bytes, now);
            bytes = &bytes[taken..];
            while let Some(event) = self.poll_event() {
                on_event(event?);
            }
            if bytes.is_empty() {
                return Ok(());
            }
        }
    }

    /// Fires the timers due at `now`: queues a heartbeat when logged in and nothing was
    /// sent for the interval, declares the server dead when nothing arrived for the
    /// timeout. Call until it returns `None`.
    pub fn poll_timers(&mut self, now: Duration) -> Option<TimerEvent> {
        if !matches!(
            self.state,
            ClientState::LoginSent | ClientState::LoggedIn | ClientState::LoggedOut
        ) {
            return None;
        }
        let event = self.link.fire_timers(
            now,
            self.config.server_timeout,
            self.config.heartbeat_interval,
            self.state == ClientState::LoggedIn,
            |link| link.send_client(ClientMessage::Heartbeat, now),
        );
        match event {
            Some(TimerEvent::PeerDead { silent_for }) => {
                self.state = ClientState::Dead(DeadReason::PeerSilent { silent_for });
            }
            Some(TimerEvent::HeartbeatQueued) => self.stats.heartbeats_sent += 1,
            None => {}
        }
        event
    }

    /// When [`SoupClient::poll_timers`] next has something to do; `None` when no timer runs.
    pub fn next_deadline(&self) -> Option<Duration> {
        let (timeout, interval) = (self.config.server_timeout, self.config.heartbeat_interval);
        match self.state {
            ClientState::LoginSent | ClientState::LoggedOut => {
                Some(self.link.next_deadline(timeout, interval, false))
            }
            ClientState::LoggedIn => Some(self.link.next_deadline(timeout, interval, true)),
            _ => None,
        }
    }

    /// Queues an unsequenced message for the server.
    ///
    /// # Errors
    ///
    /// [`SendError::NotReady`] unless logged in; [`SendError::Encode`] when the outbox is
    /// full or the payload too long.
    pub fn send_unsequenced(&mut self, payload: &[u8], now: Duration) -> Result<(), SendError> {
        if self.state != ClientState::LoggedIn {
            return Err(SendError::NotReady);
        }
        self.link
            .send_client(ClientMessage::UnsequencedData(payload), now)?;
        Ok(())
    }

    /// Queues a logout request; the server then closes the connection.
    ///
    /// # Errors
    ///
    /// [`SendError::NotReady`] unless a login was sent or accepted; [`SendError::Encode`]
    /// when the outbox is full.
    pub fn logout(&mut self, now: Duration) -> Result<(), SendError> {
        if !matches!(self.state, ClientState::LoginSent | ClientState::LoggedIn) {
            return Err(SendError::NotReady);
        }
        self.link.send_client(ClientMessage::LogoutRequest, now)?;
        self.state = ClientState::LoggedOut;
        Ok(())
    }

    /// Bytes waiting to be written to the socket.
    pub fn output(&self) -> &[u8] {
        self.link.outbox.pending()
    }

    /// Marks the first `n` bytes of [`SoupClient::output`] as written.
    pub fn consume_output(&mut self, n: usize) {
        self.link.outbox.consume(n);
    }

    /// Where the client stands.
    pub fn state(&self) -> ClientState {
        self.state
    }

    /// The session joined, once the login is accepted.
    pub fn session(&self) -> Option<Session> {
        self.session
    }

    /// Sequence number of the next sequenced message.
    pub fn next_sequence(&self) -> u64 {
        self.next_sequence
    }

    /// The counters.
    pub fn stats(&self) -> ClientCounts {
        self.stats
    }

    /// The configuration to reconnect with: same settings, the session joined (if any),
    /// and the next sequence number, so the new connection resumes where this one stopped.
    pub fn resume_config(&self) -> ClientConfig {
        ClientConfig {
            session: self.session.unwrap_or(self.config.session),
            next_sequence: self.next_sequence,
            ..self.config
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;
    use crate::soupbintcp::test_support::*;
    use proptest::prelude::*;

    /// Moves up to `max` bytes of `from`'s output into `to`, as a TCP segment would.
    fn client_to_server(
        client: &mut SoupClient,
        server: &mut SoupServerSession,
        max: usize,
        now: Duration,
        events: &mut Vec<String>,
    ) {
        let n = client.output().len().min(max);
        let taken = server.feed(&client.output()[..n], now);
        client.consume_output(taken);
        while let Some(e) = server.poll_event(now) {
            events.push(format!("{:?}", e.expect("valid client")));
        }
    }

    fn server_to_client(
        server: &mut SoupServerSession,
        client: &mut SoupClient,
        max: usize,
        now: Duration,
        got: &mut Vec<(u64, Vec<u8>)>,
    ) {
        let n = server.output().len().min(max);
        let taken = client.feed(&server.output()[..n], now);
        server.consume_output(taken);
        while let Some(e) = client.poll_event() {
            if let ClientEvent::Sequenced { seq, payload } = e.expect("valid server") {
                got.push((seq, payload.to_vec()));
            }
        }
    }

    fn messages(n: usize, rng: &mut SplitMix64) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| {
                let len = rng.below(60) as usize;
                (0..len).map(|j| (i * 31 + j) as u8).collect()
            })
            .collect()
    }

    /// Runs a whole session through a channel that splits and joins bytes at random
    /// and a clock that moves in random steps; returns what the client received and
    /// every message the server had.
    fn run_back_to_back(seed: u64, count: usize, first: u64) -> BackToBack {
        let mut rng = SplitMix64::new(seed);
        let all = messages(count, &mut rng);
        let mut now = Duration::ZERO;
        let mut cfg = ClientConfig::new(creds());
        cfg.next_sequence = first;
        cfg.max_frame_len = 128;
        let mut client = SoupClient::new(cfg);
        let mut scfg = ServerConfig::new(creds(), session(b"SESS"));
        // A small outbox makes the server wait for the reader, as a real socket would.
        scfg.outbox_len = 256;
        let mut server = SoupServerSession::new(scfg, count as u64 + 1, now);
        client.on_connected(now).expect("connecting");
        let mut got = Vec::new();
        let mut events = Vec::new();
        for _ in 0..200_000 {
            if client.state() == ClientState::Ended {
                break;
            }
            if server.state() == ServerState::Streaming {
                for _ in 0..rng.below(8) {
                    let next = server.next_sequence();
                    let Some(m) = all.get((next - 1) as usize) else {
                        let _ = server.end_session(now);
                        break;
                    };
                    if server.send_sequenced(m, now).is_err() {
                        break;
                    }
                }
            }
            let max = 1 + rng.below(90) as usize;
            client_to_server(&mut client, &mut server, max, now, &mut events);
            let max = 1 + rng.below(90) as usize;
            server_to_client(&mut server, &mut client, max, now, &mut got);
            now += MS * rng.below(300) as u32;
            while client.poll_timers(now).is_some() {}
            while server.poll_timers(now).is_some() {}
            assert!(!matches!(client.state(), ClientState::Dead(_)));
            assert!(!matches!(server.state(), ServerState::Dead(_)));
        }
        assert_eq!(client.state(), ClientState::Ended, "{events:?}");
        BackToBack { got, all }
    }

    struct BackToBack {
        got: Vec<(u64, Vec<u8>)>,
        all: Vec<Vec<u8>>,
    }

    #[test]
    fn whole_session_arrives_in_order() {
        let BackToBack { got, all } = run_back_to_back(1, 500, 1);
        assert_eq!(got.len(), all.len());
        for (i, (seq, payload)) in got.iter().enumerate() {
            assert_eq!(*seq, i as u64 + 1);
            assert_eq!(payload, &all[i]);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, rng_seed: proptest::test_runner::RngSeed::Fixed(11), ..ProptestConfig::default() })]

        #[test]
        fn back_to_back_exactly_once_in_order(seed in any::<u64>(), count in 0usize..300, first in 1u64..40) {
            let BackToBack { got, all } = run_back_to_back(seed, count, first);
            let first = first.min(count as u64 + 1);
            let want: Vec<(u64, Vec<u8>)> = all
                .iter()
                .enumerate()
                .skip((first - 1) as usize)
                .map(|(i, m)| (i as u64 + 1, m.clone()))
                .collect();
            prop_assert_eq!(got, want);
        }

        #[test]
        fn frames_survive_any_split(
            payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..50), 1..20),
            cuts in proptest::collection::vec(1usize..40, 1..50),
        ) {
            let mut stream = Vec::new();
            for p in &payloads {
                stream.extend_from_slice(&encode_server(&ServerMessage::SequencedData(p)));
            }
            let mut d = FrameDecoder::new(64);
            let mut got = Vec::new();
            let mut rest = &stream[..];
            let mut cut = cuts.iter().cycle();
            while !rest.is_empty() {
                let n = (*cut.next().expect("cycle")).min(rest.len());
                let taken = d.fill(&rest[..n]);
                rest = &rest[taken..];
                while let Some(f) = d.next_frame() {
                    got.push(f.expect("valid").payload.to_vec());
                }
            }
            prop_assert_eq!(got, payloads);
        }

        #[test]
        fn login_request_round_trips(
            user in proptest::collection::vec(0x21u8..0x7f, 0..=6),
            sequence in any::<u64>(),
            timeout in proptest::option::of(0u32..=MAX_HEARTBEAT_TIMEOUT_MS),
        ) {
            let login = LoginRequest {
                credentials: Credentials::new(&user, b"secret").expect("short"),
                session: session(b"S"),
                sequence,
                heartbeat_timeout_ms: timeout,
            };
            client_round_trip(ClientMessage::LoginRequest(login));
        }

        #[test]
        fn data_frames_round_trip(payload in proptest::collection::vec(any::<u8>(), 0..300)) {
            server_round_trip(ServerMessage::SequencedData(&payload));
            server_round_trip(ServerMessage::Debug(&payload));
            client_round_trip(ClientMessage::UnsequencedData(&payload));
            client_round_trip(ClientMessage::Debug(&payload));
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let mut client = SoupClient::new(ClientConfig::new(creds()));
            client.on_connected(Duration::ZERO).expect("connecting");
            let _ = client.on_bytes(&bytes, Duration::ZERO, |_| {});
            let mut server = SoupServerSession::new(ServerConfig::new(creds(), session(b"S")), 1, Duration::ZERO);
            let _ = server.on_bytes(&bytes, Duration::ZERO, |_| {});
        }
    }

    /// A connected pair after the login exchange, with the server's stream at `available`.
    fn logged_in_pair(
        cfg: ClientConfig,
        available: u64,
        now: Duration,
    ) -> (SoupClient, SoupServerSession, Vec<String>) {
        let mut client = SoupClient::new(cfg);
        let mut server =
            SoupServerSession::new(ServerConfig::new(creds(), session(b"SESS")), available, now);
        client.on_connected(now).expect("connecting");
        let mut events = Vec::new();
        client_to_server(&mut client, &mut server, usize::MAX, now, &mut events);
        let mut got = Vec::new();
        server_to_client(&mut server, &mut client, usize::MAX, now, &mut got);
        (client, server, events)
    }

    #[test]
    fn wrong_password_is_rejected_not_authorised() {
        let mut cfg = ClientConfig::new(Credentials::new(b"user01", b"wrong").expect("short"));
        cfg.session = session(b"SESS");
        let (client, server, events) = logged_in_pair(cfg, 1, Duration::ZERO);
        assert_eq!(events, ["LoginRejected(NotAuthorized)"]);
        assert_eq!(
            server.state(),
            ServerState::Rejected(RejectReason::NotAuthorized)
        );
        assert_eq!(
            client.state(),
            ClientState::Rejected(RejectReason::NotAuthorized)
        );
        // No timers run on a finished connection.
        assert_eq!(client.next_deadline(), None);
        assert_eq!(server.next_deadline(), None);
    }

    #[test]
    fn unknown_session_is_rejected_session_not_available() {
        let mut cfg = ClientConfig::new(creds());
        cfg.session = session(b"OTHER");
        let (client, _, events) = logged_in_pair(cfg, 1, Duration::ZERO);
        assert_eq!(events, ["LoginRejected(SessionNotAvailable)"]);
        assert_eq!(
            client.state(),
            ClientState::Rejected(RejectReason::SessionNotAvailable)
        );
    }

    #[test]
    fn data_before_login_is_a_protocol_error() {
        let mut client = SoupClient::new(ClientConfig::new(creds()));
        client.on_connected(Duration::ZERO).expect("connecting");
        let s = encode_server(&ServerMessage::SequencedData(b"x"));
        let err = client.on_bytes(&s, Duration::ZERO, |_| {}).unwrap_err();
        assert_eq!(err, ProtocolError::Unexpected { packet_type: b'S' });
        assert_eq!(client.state(), ClientState::Dead(DeadReason::Protocol(err)));
        // Sticky: the connection is finished.
        assert_eq!(client.poll_event(), Some(Err(err)));

        let mut server =
            SoupServerSession::new(ServerConfig::new(creds(), session(b"S")), 1, Duration::ZERO);
        let u = encode_client(&ClientMessage::UnsequencedData(b"x"));
        assert_eq!(
            server.on_bytes(&u, Duration::ZERO, |_| {}),
            Err(ProtocolError::Unexpected { packet_type: b'U' })
        );
    }

    #[test]
    fn heartbeats_keep_both_sides_alive() {
        let t0 = Duration::ZERO;
        let (mut client, mut server, _) = logged_in_pair(ClientConfig::new(creds()), 1, t0);
        assert_eq!(client.state(), ClientState::LoggedIn);
        // The login exchange was sending: nothing is due before 1 s.
        assert_eq!(client.next_deadline(), Some(t0 + 1000 * MS));
        assert_eq!(server.next_deadline(), Some(t0 + 1000 * MS));
        assert_eq!(client.poll_timers(t0 + 999 * MS), None);
        assert_eq!(
            client.poll_timers(t0 + 1000 * MS),
            Some(TimerEvent::HeartbeatQueued)
        );
        assert_eq!(client.poll_timers(t0 + 1000 * MS), None);
        assert_eq!(client.output(), [0, 1, b'R']);
        assert_eq!(
            server.poll_timers(t0 + 1000 * MS),
            Some(TimerEvent::HeartbeatQueued)
        );
        assert_eq!(server.output(), [0, 1, b'H']);
        // Exchanging heartbeats for a minute keeps both alive.
        let mut now = t0;
        let mut events = Vec::new();
        let mut got = Vec::new();
        for _ in 0..60 {
            now += 1000 * MS;
            while client.poll_timers(now).is_some() {}
            while server.poll_timers(now).is_some() {}
            client_to_server(&mut client, &mut server, usize::MAX, now, &mut events);
            server_to_client(&mut server, &mut client, usize::MAX, now, &mut got);
        }
        assert_eq!(client.state(), ClientState::LoggedIn);
        assert_eq!(server.state(), ServerState::Streaming);
        assert!(client.stats().heartbeats_received >= 59);
        assert!(server.stats().heartbeats_received >= 59);
        assert!(events.is_empty() && got.is_empty());
    }

    #[test]
    fn silent_server_is_declared_dead() {
        let t0 = Duration::from_secs(100);
        let mut cfg = ClientConfig::new(creds());
        cfg.server_timeout = Duration::from_secs(15);
        let (mut client, _server, _) = logged_in_pair(cfg, 1, t0);
        let mut now;
        let mut heartbeats = 0;
        // Stepping to each deadline: heartbeats every second, then death at 15 s.
        loop {
            now = client.next_deadline().expect("timers run");
            match client.poll_timers(now) {
                Some(TimerEvent::HeartbeatQueued) => heartbeats += 1,
                Some(TimerEvent::PeerDead { silent_for }) => {
                    assert_eq!(silent_for, Duration::from_secs(15));
                    break;
                }
                None => panic!("a deadline with nothing due"),
            }
            client.consume_output(client.output().len());
        }
        assert_eq!(now, t0 + Duration::from_secs(15));
        assert_eq!(heartbeats, 14);
        assert_eq!(
            client.state(),
            ClientState::Dead(DeadReason::PeerSilent {
                silent_for: Duration::from_secs(15)
            })
        );
        assert_eq!(client.next_deadline(), None);
    }

    #[test]
    fn server_gives_a_silent_client_its_requested_timeout() {
        let t0 = Duration::ZERO;
        let mut cfg = ClientConfig::new(creds());
        cfg.heartbeat_timeout_ms = Some(2500);
        let (_client, mut server, events) = logged_in_pair(cfg, 1, t0);
        assert_eq!(events, ["LoginAccepted { next_sequence: 1 }"]);
        assert_eq!(server.client_timeout(), 2500 * MS);
        assert_eq!(
            server.poll_timers(t0 + 1000 * MS),
            Some(TimerEvent::HeartbeatQueued)
        );
        assert_eq!(
            server.poll_timers(t0 + 2000 * MS),
            Some(TimerEvent::HeartbeatQueued)
        );
        assert_eq!(
            server.poll_timers(t0 + 2500 * MS),
            Some(TimerEvent::PeerDead {
                silent_for: 2500 * MS
            })
        );
        // A client that never logs in is dropped after the configured timeout.
        let mut lonely = SoupServerSession::new(ServerConfig::new(creds(), session(b"S")), 1, t0);
        assert_eq!(lonely.next_deadline(), Some(t0 + DEFAULT_PEER_TIMEOUT));
        assert_eq!(lonely.poll_timers(t0 + 14_999 * MS), None);
        assert!(matches!(
            lonely.poll_timers(t0 + DEFAULT_PEER_TIMEOUT),
            Some(TimerEvent::PeerDead { .. })
        ));
    }

    #[test]
    fn resume_after_reconnect_loses_and_repeats_nothing() {
        let all: Vec<Vec<u8>> = (1..=10u8).map(|i| vec![i]).collect();
        let now = Duration::ZERO;
        let (mut client, mut server, _) = logged_in_pair(ClientConfig::new(creds()), 11, now);
        for m in &all[..5] {
            server.send_sequenced(m, now).expect("room");
        }
        let mut got = Vec::new();
        server_to_client(&mut server, &mut client, usize::MAX, now, &mut got);
        // The connection drops here; the next one resumes at 6 in the same session.
        let resume = client.resume_config();
        assert_eq!(resume.next_sequence, 6);
        assert_eq!(resume.session, session(b"SESS"));
        let (mut client, mut server, events) = logged_in_pair(resume, 11, now);
        assert_eq!(events, ["LoginAccepted { next_sequence: 6 }"]);
        while let Some(m) = all.get((server.next_sequence() - 1) as usize) {
            server.send_sequenced(m, now).expect("room");
        }
        server.end_session(now).expect("streaming");
        server_to_client(&mut server, &mut client, usize::MAX, now, &mut got);
        let want: Vec<(u64, Vec<u8>)> =
            (1..=10).map(|i| (i, all[i as usize - 1].clone())).collect();
        assert_eq!(got, want);
        assert_eq!(client.state(), ClientState::Ended);
        assert_eq!(client.next_sequence(), 11);
    }

    #[test]
    fn requested_sequence_is_clamped_and_zero_means_next() {
        for (requested, expected) in [(0, 8), (1, 1), (5, 5), (8, 8), (1000, 8)] {
            let mut cfg = ClientConfig::new(creds());
            cfg.next_sequence = requested;
            let (client, server, _) = logged_in_pair(cfg, 8, Duration::ZERO);
            assert_eq!(server.next_sequence(), expected, "requested {requested}");
            assert_eq!(client.next_sequence(), expected, "requested {requested}");
        }
    }

    #[test]
    fn logout_reaches_the_server() {
        let now = Duration::ZERO;
        let (mut client, mut server, _) = logged_in_pair(ClientConfig::new(creds()), 1, now);
        client.send_unsequenced(b"hi", now).expect("logged in");
        client.logout(now).expect("logged in");
        assert_eq!(client.state(), ClientState::LoggedOut);
        assert_eq!(client.send_unsequenced(b"x", now), Err(SendError::NotReady));
        let mut events = Vec::new();
        client_to_server(&mut client, &mut server, usize::MAX, now, &mut events);
        assert_eq!(events, ["Unsequenced([104, 105])", "LogoutRequested"]);
        assert_eq!(server.state(), ServerState::LoggedOut);
        assert_eq!(server.send_sequenced(b"x", now), Err(SendError::NotReady));
    }

    #[test]
    fn full_outbox_pushes_back_without_losing_a_message() {
        let now = Duration::ZERO;
        let (mut client, mut server, _) = logged_in_pair(ClientConfig::new(creds()), 1, now);
        server.consume_output(server.output().len());
        let mut sent = 0u64;
        while server.send_sequenced(&[7u8; 100], now).is_ok() {
            sent += 1;
        }
        assert_eq!(server.next_sequence(), sent + 1);
        assert!(matches!(
            server.send_sequenced(&[7u8; 100], now),
            Err(SendError::Encode(EncodeError::BufferTooSmall {
                need: 103,
                ..
            }))
        ));
        let mut got = Vec::new();
        server_to_client(&mut server, &mut client, usize::MAX, now, &mut got);
        assert_eq!(got.len() as u64, sent);
        server.send_sequenced(&[7u8; 100], now).expect("drained");
    }
}
