//! The SoupBinTCP messages: each packet type's fields, parsed from and encoded into frames.

use super::*;

/// The type bytes of SoupBinTCP frames.
pub mod packet_type {
    /// Debug text; either side may send it.
    pub const DEBUG: u8 = b'+';
    /// Server: login accepted.
    pub const LOGIN_ACCEPTED: u8 = b'A';
    /// Server: login rejected.
    pub const LOGIN_REJECTED: u8 = b'J';
    /// Server: one sequenced message.
    pub const SEQUENCED_DATA: u8 = b'S';
    /// Server: heartbeat.
    pub const SERVER_HEARTBEAT: u8 = b'H';
    /// Server: end of session.
    pub const END_OF_SESSION: u8 = b'Z';
    /// Client: login request.
    pub const LOGIN_REQUEST: u8 = b'L';
    /// Client: one unsequenced message.
    pub const UNSEQUENCED_DATA: u8 = b'U';
    /// Client: heartbeat.
    pub const CLIENT_HEARTBEAT: u8 = b'R';
    /// Client: logout request.
    pub const LOGOUT_REQUEST: u8 = b'O';
}

/// Which numeric field failed to parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumericField {
    /// The sequence number of a login accepted frame.
    AcceptedSequence,
    /// The requested sequence number of a login request.
    RequestedSequence,
    /// The requested heartbeat timeout of a 4.1 login request.
    HeartbeatTimeout,
}

/// Why a frame is not a valid SoupBinTCP message for the side reading it. `Copy`,
/// allocation-free.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// A type byte this side never receives (for example a server frame sent to a server).
    UnknownType {
        /// The type byte.
        packet_type: u8,
    },
    /// A fixed-size frame of the wrong length.
    WrongLength {
        /// The type byte.
        packet_type: u8,
        /// Payload bytes present.
        len: usize,
        /// Payload bytes the type requires.
        expected: usize,
    },
    /// A numeric field holds something other than space-padded ASCII digits, or a value
    /// over 64 bits.
    BadNumeric {
        /// The field.
        field: NumericField,
    },
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ParseError::UnknownType { packet_type } => write!(
                f,
                "SoupBinTCP frame type {:?} is not one this side receives",
                packet_type as char
            ),
            ParseError::WrongLength {
                packet_type,
                len,
                expected,
            } => write!(
                f,
                "SoupBinTCP {:?} frame has a {len}-byte payload, {expected} expected",
                packet_type as char
            ),
            ParseError::BadNumeric { field } => {
                write!(f, "SoupBinTCP numeric field {field:?} is not a number")
            }
        }
    }
}

impl std::error::Error for ParseError {}

/// Why a frame could not be encoded. `Copy`, allocation-free.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EncodeError {
    /// The output buffer (or a session's outbox) has too little room: drain it, or give one
    /// of at least `need` bytes.
    BufferTooSmall {
        /// Bytes the frame needs.
        need: usize,
        /// Bytes free.
        have: usize,
    },
    /// A payload over [`MAX_PAYLOAD_LEN`] bytes cannot be framed.
    PayloadTooLong {
        /// The payload's length.
        len: usize,
    },
    /// A heartbeat timeout over [`MAX_HEARTBEAT_TIMEOUT_MS`] does not fit its 5 characters.
    HeartbeatTimeoutTooLong {
        /// The timeout asked for, in milliseconds.
        ms: u32,
    },
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            EncodeError::BufferTooSmall { need, have } => write!(
                f,
                "SoupBinTCP frame needs {need} bytes, the buffer has {have} free"
            ),
            EncodeError::PayloadTooLong { len } => write!(
                f,
                "SoupBinTCP payload is at most {MAX_PAYLOAD_LEN} bytes, this one is {len}"
            ),
            EncodeError::HeartbeatTimeoutTooLong { ms } => write!(
                f,
                "SoupBinTCP heartbeat timeout is at most {MAX_HEARTBEAT_TIMEOUT_MS} ms, got {ms}"
            ),
        }
    }
}

impl std::error::Error for EncodeError {}

/// A user name and password, each left-justified and space padded as on the wire.
///
/// `Debug` does not show the password.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Credentials {
    /// The user name, 6 bytes.
    pub username: [u8; USERNAME_LEN],
    /// The password, 10 bytes.
    pub password: [u8; PASSWORD_LEN],
}

pub(super) fn pad_alpha<const N: usize>(text: &[u8]) -> Option<[u8; N]> {
    let mut out = [b' '; N];
    out.get_mut(..text.len())?.copy_from_slice(text);
    Some(out)
}

impl Credentials {
    /// Pads both fields with spaces; `None` if the user name is over 6 bytes or the
    /// password over 10.
    pub fn new(username: &[u8], password: &[u8]) -> Option<Self> {
        Some(Credentials {
            username: pad_alpha(username)?,
            password: pad_alpha(password)?,
        })
    }

    /// `user:password` (at most 6 and 10 characters): the command line's `--login`.
    ///
    /// # Errors
    ///
    /// A message saying which rule the text breaks.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (user, pass) = text
            .split_once(':')
            .ok_or_else(|| format!("`{text}` is not user:password"))?;
        Credentials::new(user.as_bytes(), pass.as_bytes())
            .ok_or_else(|| "the username is at most 6, the password at most 10 characters".into())
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &String::from_utf8_lossy(&self.username))
            .field("password", &"<redacted>")
            .finish()
    }
}

/// Why the server refused a login (the reject code of a `J` frame).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RejectReason {
    /// `A`: the user name and password are not authorised.
    NotAuthorized,
    /// `S`: the requested session is not available.
    SessionNotAvailable,
    /// A code the specification does not define; kept rather than refused, since a
    /// rejection is a rejection whatever its code.
    Other(u8),
}

impl RejectReason {
    /// The code on the wire.
    pub fn code(self) -> u8 {
        match self {
            RejectReason::NotAuthorized => b'A',
            RejectReason::SessionNotAvailable => b'S',
            RejectReason::Other(code) => code,
        }
    }

    /// The reason for a wire code.
    pub fn from_code(code: u8) -> Self {
        match code {
            b'A' => RejectReason::NotAuthorized,
            b'S' => RejectReason::SessionNotAvailable,
            other => RejectReason::Other(other),
        }
    }
}

/// The fields of a login request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoginRequest {
    /// User name and password.
    pub credentials: Credentials,
    /// The session wanted; blank asks for the server's current session.
    pub session: Session,
    /// The first sequence number wanted: 1 for the whole session, 0 for only messages
    /// generated from now on.
    pub sequence: u64,
    /// 4.1's requested heartbeat timeout in milliseconds; `None` leaves the field out, as
    /// versions 3.0 and 4.0 do, and the server keeps its own timeout.
    pub heartbeat_timeout_ms: Option<u32>,
}

/// A message the server sends, parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerMessage<'a> {
    /// `+`: free text for people, ignored by programs.
    Debug(&'a [u8]),
    /// `A`: the login succeeded.
    LoginAccepted {
        /// The session the client is now in.
        session: Session,
        /// The sequence number of the next sequenced message the server will send.
        sequence: u64,
    },
    /// `J`: the login failed.
    LoginRejected(RejectReason),
    /// `S`: one sequenced message; its sequence number is implicit (counted by both sides).
    SequencedData(&'a [u8]),
    /// `H`: the server is alive.
    Heartbeat,
    /// `Z`: the session is over; no more sequenced messages will come.
    EndOfSession,
}

/// A message the client sends, parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientMessage<'a> {
    /// `+`: free text for people, ignored by programs.
    Debug(&'a [u8]),
    /// `L`: log in.
    LoginRequest(LoginRequest),
    /// `U`: one unsequenced message (lost if the connection drops).
    UnsequencedData(&'a [u8]),
    /// `R`: the client is alive.
    Heartbeat,
    /// `O`: the client is leaving.
    LogoutRequest,
}

/// Reads a numeric field: ASCII digits, space padded on either side (right-justified is
/// what the spec asks; tolerating left-justified costs nothing). `None` for blanks,
/// other bytes, or values over 64 bits.
pub(super) fn parse_numeric(field: &[u8]) -> Option<u64> {
    let first = field.iter().position(|&b| b != b' ')?;
    let last = field.iter().rposition(|&b| b != b' ')?;
    field[first..=last].iter().try_fold(0u64, |acc, &b| {
        if b.is_ascii_digit() {
            acc.checked_mul(10)?.checked_add(u64::from(b - b'0'))
        } else {
            None
        }
    })
}

/// Writes `value` right-justified and space padded into `field`; false if it does not fit.
pub(super) fn write_numeric(field: &mut [u8], mut value: u64) -> bool {
    field.fill(b' ');
    let mut at = field.len();
    loop {
        if at == 0 {
            return false;
        }
        at -= 1;
        field[at] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            return true;
        }
    }
}

pub(super) fn fixed_len(frame: Frame<'_>, expected: usize) -> Result<(), ParseError> {
    if frame.payload.len() == expected {
        Ok(())
    } else {
        Err(ParseError::WrongLength {
            packet_type: frame.packet_type,
            len: frame.payload.len(),
            expected,
        })
    }
}

pub(super) fn session_field(bytes: &[u8]) -> Session {
    let mut raw = [b' '; SESSION_LEN];
    raw.copy_from_slice(&bytes[..SESSION_LEN]);
    Session(raw)
}

/// Writes the length prefix and type byte of a frame with a `payload_len`-byte payload and
/// returns the payload's part of `out`, or the error if it does not fit.
pub(super) fn frame_into(
    out: &mut [u8],
    packet_type: u8,
    payload_len: usize,
) -> Result<&mut [u8], EncodeError> {
    if payload_len > MAX_PAYLOAD_LEN {
        return Err(EncodeError::PayloadTooLong { len: payload_len });
    }
    let need = LENGTH_PREFIX + 1 + payload_len;
    let have = out.len();
    let Some(frame) = out.get_mut(..need) else {
        return Err(EncodeError::BufferTooSmall { need, have });
    };
    // Fits: checked against MAX_PAYLOAD_LEN above.
    let len = (payload_len + 1) as u16;
    frame[..2].copy_from_slice(&len.to_be_bytes());
    frame[2] = packet_type;
    Ok(&mut frame[3..])
}

impl<'a> ServerMessage<'a> {
    /// Reads a frame the server sent.
    ///
    /// # Errors
    ///
    /// A [`ParseError`] for a type the server never sends, a fixed-size frame of the wrong
    /// length, or a sequence number that is not a number.
    pub fn parse(frame: Frame<'a>) -> Result<Self, ParseError> {
        use packet_type::*;
        match frame.packet_type {
            DEBUG => Ok(ServerMessage::Debug(frame.payload)),
            LOGIN_ACCEPTED => {
                fixed_len(frame, LOGIN_ACCEPTED_LEN)?;
                let sequence =
                    parse_numeric(&frame.payload[SESSION_LEN..]).ok_or(ParseError::BadNumeric {
                        field: NumericField::AcceptedSequence,
                    })?;
                Ok(ServerMessage::LoginAccepted {
                    session: session_field(frame.payload),
                    sequence,
                })
            }
            LOGIN_REJECTED => {
                fixed_len(frame, 1)?;
                Ok(ServerMessage::LoginRejected(RejectReason::from_code(
                    frame.payload[0],
                )))
            }
            SEQUENCED_DATA => Ok(ServerMessage::SequencedData(frame.payload)),
            SERVER_HEARTBEAT => fixed_len(frame, 0).map(|()| ServerMessage::Heartbeat),
            END_OF_SESSION => fixed_len(frame, 0).map(|()| ServerMessage::EndOfSession),
            packet_type => Err(ParseError::UnknownType { packet_type }),
        }
    }

    /// The type byte.
    pub fn packet_type(&self) -> u8 {
        use packet_type::*;
        match self {
            ServerMessage::Debug(_) => DEBUG,
            ServerMessage::LoginAccepted { .. } => LOGIN_ACCEPTED,
            ServerMessage::LoginRejected(_) => LOGIN_REJECTED,
            ServerMessage::SequencedData(_) => SEQUENCED_DATA,
            ServerMessage::Heartbeat => SERVER_HEARTBEAT,
            ServerMessage::EndOfSession => END_OF_SESSION,
        }
    }

    /// Bytes the encoded frame takes, length prefix included.
    pub fn encoded_len(&self) -> usize {
        let payload = match self {
            ServerMessage::Debug(p) | ServerMessage::SequencedData(p) => p.len(),
            ServerMessage::LoginAccepted { .. } => LOGIN_ACCEPTED_LEN,
            ServerMessage::LoginRejected(_) => 1,
            ServerMessage::Heartbeat | ServerMessage::EndOfSession => 0,
        };
        LENGTH_PREFIX + 1 + payload
    }

    /// Writes the frame at the start of `out` and returns its length.
    ///
    /// # Errors
    ///
    /// [`EncodeError::BufferTooSmall`] when `out` is short, [`EncodeError::PayloadTooLong`]
    /// over [`MAX_PAYLOAD_LEN`]. `out` may be partly written on error.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, EncodeError> {
        let len = self.encoded_len();
        let payload = frame_into(out, self.packet_type(), len - LENGTH_PREFIX - 1)?;
        match *self {
            ServerMessage::Debug(p) | ServerMessage::SequencedData(p) => payload.copy_from_slice(p),
            ServerMessage::LoginAccepted { session, sequence } => {
                payload[..SESSION_LEN].copy_from_slice(session.as_bytes());
                // 20 digits hold every u64.
                write_numeric(&mut payload[SESSION_LEN..], sequence);
            }
            ServerMessage::LoginRejected(reason) => payload[0] = reason.code(),
            ServerMessage::Heartbeat | ServerMessage::EndOfSession => {}
        }
        Ok(len)
    }
}

impl<'a> ClientMessage<'a> {
    /// Reads a frame the client sent. A login request of either the 3.0/4.0 length (46
    /// bytes) or the 4.1 length (51, with the heartbeat timeout) is accepted.
    ///
    /// # Errors
    ///
    /// A [`ParseError`] for a type the client never sends, a fixed-size frame of the wrong
    /// length, or a numeric field that is not a number.
    pub fn parse(frame: Frame<'a>) -> Result<Self, ParseError> {
        use packet_type::*;
        match frame.packet_type {
            DEBUG => Ok(ClientMessage::Debug(frame.payload)),
            LOGIN_REQUEST => {
                let p = frame.payload;
                if p.len() != LOGIN_REQUEST_LEN_V4_0 {
                    fixed_len(frame, LOGIN_REQUEST_LEN_V4_1)?;
                }
                let mut credentials = Credentials {
                    username: [b' '; USERNAME_LEN],
                    password: [b' '; PASSWORD_LEN],
                };
                credentials.username.copy_from_slice(&p[..USERNAME_LEN]);
                credentials
                    .password
                    .copy_from_slice(&p[USERNAME_LEN..USERNAME_LEN + PASSWORD_LEN]);
                let at = USERNAME_LEN + PASSWORD_LEN;
                let session = session_field(&p[at..]);
                let at = at + SESSION_LEN;
                let sequence =
                    parse_numeric(&p[at..at + SEQUENCE_LEN]).ok_or(ParseError::BadNumeric {
                        field: NumericField::RequestedSequence,
                    })?;
                let timeout_field = &p[LOGIN_REQUEST_LEN_V4_0..];
                // A blank 4.1 field means no timeout asked for, as if it were absent.
                let heartbeat_timeout_ms = if timeout_field.iter().all(|&b| b == b' ') {
                    None
                } else {
                    let ms = parse_numeric(timeout_field).ok_or(ParseError::BadNumeric {
                        field: NumericField::HeartbeatTimeout,
                    })?;
                    // Five digits always fit in a u32.
                    Some(ms as u32)
                };
                Ok(ClientMessage::LoginRequest(LoginRequest {
                    credentials,
                    session,
                    sequence,
                    heartbeat_timeout_ms,
                }))
            }
            UNSEQUENCED_DATA => Ok(ClientMessage::UnsequencedData(frame.payload)),
            CLIENT_HEARTBEAT => fixed_len(frame, 0).map(|()| ClientMessage::Heartbeat),
            LOGOUT_REQUEST => fixed_len(frame, 0).map(|()| ClientMessage::LogoutRequest),
            packet_type => Err(ParseError::UnknownType { packet_type }),
        }
    }

    /// The type byte.
    pub fn packet_type(&self) -> u8 {
        use packet_type::*;
        match self {
            ClientMessage::Debug(_) => DEBUG,
            ClientMessage::LoginRequest(_) => LOGIN_REQUEST,
            ClientMessage::UnsequencedData(_) => UNSEQUENCED_DATA,
            ClientMessage::Heartbeat => CLIENT_HEARTBEAT,
            ClientMessage::LogoutRequest => LOGOUT_REQUEST,
        }
    }

    /// Bytes the encoded frame takes, length prefix included.
    pub fn encoded_len(&self) -> usize {
        let payload = match self {
            ClientMessage::Debug(p) | ClientMessage::UnsequencedData(p) => p.len(),
            ClientMessage::LoginRequest(login) => match login.heartbeat_timeout_ms {
                Some(_) => LOGIN_REQUEST_LEN_V4_1,
                None => LOGIN_REQUEST_LEN_V4_0,
            },
            ClientMessage::Heartbeat | ClientMessage::LogoutRequest => 0,
        };
        LENGTH_PREFIX + 1 + payload
    }

    /// Writes the frame at the start of `out` and returns its length.
    ///
    /// # Errors
    ///
    /// [`EncodeError::BufferTooSmall`] when `out` is short, [`EncodeError::PayloadTooLong`]
    /// over [`MAX_PAYLOAD_LEN`], [`EncodeError::HeartbeatTimeoutTooLong`] over 99,999 ms.
    /// `out` may be partly written on error.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, EncodeError> {
        if let ClientMessage::LoginRequest(LoginRequest {
            heartbeat_timeout_ms: Some(ms),
            ..
        }) = *self
        {
            if ms > MAX_HEARTBEAT_TIMEOUT_MS {
                return Err(EncodeError::HeartbeatTimeoutTooLong { ms });
            }
        }
        let len = self.encoded_len();
        let payload = frame_into(out, self.packet_type(), len - LENGTH_PREFIX - 1)?;
        match *self {
            ClientMessage::Debug(p) | ClientMessage::UnsequencedData(p) => {
                payload.copy_from_slice(p)
            }
            ClientMessage::LoginRequest(login) => {
                let (user, rest) = payload.split_at_mut(USERNAME_LEN);
                user.copy_from_slice(&login.credentials.username);
                let (password, rest) = rest.split_at_mut(PASSWORD_LEN);
                password.copy_from_slice(&login.credentials.password);
                let (session, rest) = rest.split_at_mut(SESSION_LEN);
                session.copy_from_slice(login.session.as_bytes());
                let (sequence, rest) = rest.split_at_mut(SEQUENCE_LEN);
                write_numeric(sequence, login.sequence);
                if let Some(ms) = login.heartbeat_timeout_ms {
                    // Checked against 99,999 above, so five digits hold it.
                    write_numeric(rest, u64::from(ms));
                }
            }
            ClientMessage::Heartbeat | ClientMessage::LogoutRequest => {}
        }
        Ok(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::soupbintcp::test_support::*;

    #[test]
    fn login_request_wire_layout() {
        let login = LoginRequest {
            credentials: creds(),
            session: session(b"SESS1"),
            sequence: 42,
            heartbeat_timeout_ms: Some(1500),
        };
        let bytes = encode_client(&ClientMessage::LoginRequest(login));
        let mut want = vec![0, 52, b'L'];
        want.extend_from_slice(b"user01pw        SESS1     ");
        want.extend_from_slice(b"                  42");
        want.extend_from_slice(b" 1500");
        assert_eq!(bytes, want);
        // Without the 4.1 field it is the 3.0/4.0 layout, 46 bytes of payload.
        let old = ClientMessage::LoginRequest(LoginRequest {
            heartbeat_timeout_ms: None,
            ..login
        });
        assert_eq!(encode_client(&old)[..2], [0, 47]);
        client_round_trip(old);
    }

    #[test]
    fn login_accepted_wire_layout() {
        let bytes = encode_server(&ServerMessage::LoginAccepted {
            session: session(b"ABC"),
            sequence: u64::MAX,
        });
        assert_eq!(&bytes[..3], &[0, 31, b'A']);
        assert_eq!(&bytes[3..13], b"ABC       ");
        assert_eq!(&bytes[13..], b"18446744073709551615");
    }

    #[test]
    fn every_fixed_frame_round_trips() {
        server_round_trip(ServerMessage::Debug(b"hello"));
        server_round_trip(ServerMessage::LoginAccepted {
            session: session(b"S"),
            sequence: 0,
        });
        for reason in [
            RejectReason::NotAuthorized,
            RejectReason::SessionNotAvailable,
            RejectReason::Other(b'x'),
        ] {
            server_round_trip(ServerMessage::LoginRejected(reason));
        }
        server_round_trip(ServerMessage::SequencedData(b""));
        server_round_trip(ServerMessage::Heartbeat);
        server_round_trip(ServerMessage::EndOfSession);
        client_round_trip(ClientMessage::Debug(b""));
        client_round_trip(ClientMessage::UnsequencedData(b"order"));
        client_round_trip(ClientMessage::Heartbeat);
        client_round_trip(ClientMessage::LogoutRequest);
        assert_eq!(encode_server(&ServerMessage::Heartbeat), [0, 1, b'H']);
        assert_eq!(encode_client(&ClientMessage::Heartbeat), [0, 1, b'R']);
        assert_eq!(encode_client(&ClientMessage::LogoutRequest), [0, 1, b'O']);
        assert_eq!(encode_server(&ServerMessage::EndOfSession), [0, 1, b'Z']);
    }

    #[test]
    fn encode_errors() {
        let mut small = [0u8; 4];
        assert_eq!(
            ServerMessage::SequencedData(b"ab").encode(&mut small),
            Err(EncodeError::BufferTooSmall { need: 5, have: 4 })
        );
        let big = vec![0u8; MAX_PAYLOAD_LEN + 1];
        let mut out = vec![0u8; big.len() + 3];
        assert_eq!(
            ClientMessage::UnsequencedData(&big).encode(&mut out),
            Err(EncodeError::PayloadTooLong { len: big.len() })
        );
        // The largest payload fits exactly.
        assert_eq!(
            ClientMessage::UnsequencedData(&big[1..]).encode(&mut out),
            Ok(MAX_PAYLOAD_LEN + 3)
        );
        let login = LoginRequest {
            credentials: creds(),
            session: session(b""),
            sequence: 1,
            heartbeat_timeout_ms: Some(100_000),
        };
        assert_eq!(
            ClientMessage::LoginRequest(login).encode(&mut [0u8; 64]),
            Err(EncodeError::HeartbeatTimeoutTooLong { ms: 100_000 })
        );
        assert!(Credentials::new(b"toolong", b"").is_none());
        assert!(Credentials::new(b"", b"01234567890").is_none());
    }

    #[test]
    fn parse_errors() {
        let f = |packet_type, payload| Frame {
            packet_type,
            payload,
        };
        assert_eq!(
            ServerMessage::parse(f(b'L', b"")),
            Err(ParseError::UnknownType { packet_type: b'L' })
        );
        assert_eq!(
            ClientMessage::parse(f(b'S', b"")),
            Err(ParseError::UnknownType { packet_type: b'S' })
        );
        assert_eq!(
            ServerMessage::parse(f(b'H', b"x")),
            Err(ParseError::WrongLength {
                packet_type: b'H',
                len: 1,
                expected: 0
            })
        );
        assert_eq!(
            ClientMessage::parse(f(b'L', &[b' '; 47])),
            Err(ParseError::WrongLength {
                packet_type: b'L',
                len: 47,
                expected: LOGIN_REQUEST_LEN_V4_1
            })
        );
        let mut accepted = [b' '; LOGIN_ACCEPTED_LEN];
        accepted[29] = b'x';
        assert_eq!(
            ServerMessage::parse(f(b'A', &accepted)),
            Err(ParseError::BadNumeric {
                field: NumericField::AcceptedSequence
            })
        );
        // 21 nines overflow 64 bits even though only 20 fit the field: use 20 nines.
        let mut over = [b'9'; LOGIN_ACCEPTED_LEN];
        over[..SESSION_LEN].fill(b' ');
        assert!(matches!(
            ServerMessage::parse(f(b'A', &over)),
            Err(ParseError::BadNumeric { .. })
        ));
        // Left-justified numbers are tolerated.
        let mut left = [b' '; LOGIN_ACCEPTED_LEN];
        left[10..12].copy_from_slice(b"17");
        assert_eq!(
            ServerMessage::parse(f(b'A', &left)),
            Ok(ServerMessage::LoginAccepted {
                session: Session([b' '; 10]),
                sequence: 17
            })
        );
    }
}
