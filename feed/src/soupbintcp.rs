//! SoupBinTCP 4.1: frame decoding and encoding, and the sans-I/O client and server session
//! state machines.
//!
//! A SoupBinTCP stream is a sequence of frames: a big-endian `u16` length that covers the
//! type byte and the payload, the type byte, then the payload. TCP splits and joins frames
//! at will, so [`FrameDecoder`] reassembles them over one buffer allocated at start and
//! lends each complete frame out without copying it again.
//!
//! [`SoupClient`] (what the feed handler runs) and [`SoupServerSession`] (what the exchange
//! simulator runs) never touch a socket or a clock: bytes received go in with the time they
//! arrived, bytes to send wait in a fixed outbox the caller drains, and timers fire only
//! when the caller asks [`SoupClient::poll_timers`] with an explicit `now`. Time is a
//! [`Duration`] since any origin the caller chooses (a monotonic clock's start, or 0 in
//! tests); only differences matter.
//!
//! ```
//! use std::time::Duration;
//! use ticklane_feed::moldudp64::Session;
//! use ticklane_feed::soupbintcp::{
//!     ClientConfig, ClientEvent, Credentials, ServerConfig, ServerEvent, SoupClient,
//!     SoupServerSession,
//! };
//!
//! let creds = Credentials::new(b"user", b"secret").unwrap();
//! let t0 = Duration::ZERO;
//! let mut client = SoupClient::new(ClientConfig::new(creds));
//! let mut server = SoupServerSession::new(
//!     ServerConfig::new(creds, Session::new(b"S1").unwrap()),
//!     1, // the next sequence number the server could send
//!     t0,
//! );
//!
//! client.on_connected(t0).unwrap();
//! let login = client.output().to_vec();
//! client.consume_output(login.len());
//! server
//!     .on_bytes(&login, t0, |e| assert!(matches!(e, ServerEvent::LoginAccepted { next_sequence: 1 })))
//!     .unwrap();
//! server.send_sequenced(b"hello", t0).unwrap();
//!
//! let mut got = Vec::new();
//! client
//!     .on_bytes(server.output(), t0, |e| {
//!         if let ClientEvent::Sequenced { seq, payload } = e {
//!             got.push((seq, payload.to_vec()));
//!         }
//!     })
//!     .unwrap();
//! assert_eq!(got, [(1, b"hello".to_vec())]);
//! assert_eq!(client.next_sequence(), 2);
//! ```

use core::fmt;
use std::time::Duration;

use crate::moldudp64::Session;

/// Bytes of the length prefix in front of every frame.
pub const LENGTH_PREFIX: usize = 2;
/// The largest length a frame's prefix can declare (type byte plus payload).
pub const MAX_FRAME_LEN: u16 = u16::MAX;
/// The largest payload a frame can carry: the length covers the type byte too.
pub const MAX_PAYLOAD_LEN: usize = MAX_FRAME_LEN as usize - 1;
/// Bytes of a user name in a login request.
pub const USERNAME_LEN: usize = 6;
/// Bytes of a password in a login request.
pub const PASSWORD_LEN: usize = 10;
/// Bytes of a session name.
pub const SESSION_LEN: usize = 10;
/// Bytes of a sequence number field (ASCII digits, right-justified, space padded).
pub const SEQUENCE_LEN: usize = 20;
/// Bytes of the 4.1 requested heartbeat timeout field (milliseconds, ASCII).
pub const HEARTBEAT_TIMEOUT_LEN: usize = 5;
/// The largest heartbeat timeout the 5-character field can carry, in milliseconds.
pub const MAX_HEARTBEAT_TIMEOUT_MS: u32 = 99_999;
/// Payload of a login request without the 4.1 heartbeat timeout (versions 3.0 and 4.0).
pub const LOGIN_REQUEST_LEN_V4_0: usize = USERNAME_LEN + PASSWORD_LEN + SESSION_LEN + SEQUENCE_LEN;
/// Payload of a 4.1 login request, heartbeat timeout included.
pub const LOGIN_REQUEST_LEN_V4_1: usize = LOGIN_REQUEST_LEN_V4_0 + HEARTBEAT_TIMEOUT_LEN;
/// Payload of a login accepted frame: session and next sequence number.
pub const LOGIN_ACCEPTED_LEN: usize = SESSION_LEN + SEQUENCE_LEN;
/// How long a side may go without sending before it must send a heartbeat (the spec's 1 s).
pub const DEFAULT_HEARTBEAT_INTERVAL: Duration = Duration::from_secs(1);
/// How long a silent peer is given before it is declared gone (the spec's "typically 15 s").
pub const DEFAULT_PEER_TIMEOUT: Duration = Duration::from_secs(15);
/// Default outbox size: a few hundred ITCH messages between two drains.
pub const DEFAULT_OUTBOX_LEN: usize = 64 * 1024;

/// The smallest outbox a session gets, whatever its configuration says: room for a login
/// request or its answer, so a session can always start.
pub const MIN_OUTBOX_LEN: usize = 64;

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

/// Why the byte stream cannot be split into frames. `Copy`, allocation-free.
///
/// Framing errors are sticky: once the length prefix is wrong nothing after it can be
/// trusted, so the decoder keeps answering the same error and the connection must be closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// A length prefix of 0: a frame needs at least its type byte. The peer is not speaking
    /// SoupBinTCP, or the stream lost sync.
    ZeroLength,
    /// A length prefix above the decoder's limit. Raise `max_frame_len` if the peer's
    /// messages really are this long; otherwise the stream lost sync.
    TooLong {
        /// The length the prefix declares.
        len: u16,
        /// The decoder's limit.
        max: u16,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            FrameError::ZeroLength => {
                write!(f, "SoupBinTCP frame length 0: a frame needs its type byte")
            }
            FrameError::TooLong { len, max } => write!(
                f,
                "SoupBinTCP frame length {len} is over the limit of {max} bytes"
            ),
        }
    }
}

impl std::error::Error for FrameError {}

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

/// One frame as it came off the wire: its type byte and payload, borrowed from the decoder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The type byte (see [`packet_type`]).
    pub packet_type: u8,
    /// The bytes after the type byte.
    pub payload: &'a [u8],
}

/// Reassembles frames from a byte stream split or joined arbitrarily, over one buffer
/// allocated at construction; yields each frame borrowed from that buffer.
///
/// Bytes go in with [`FrameDecoder::fill`] (copied) or by reading straight into
/// [`FrameDecoder::spare_mut`] and calling [`FrameDecoder::commit`]; frames come out of
/// [`FrameDecoder::next_frame`]. The buffer holds at least one frame of the largest
/// accepted length, so a valid stream always makes progress.
#[derive(Clone, Debug)]
pub struct FrameDecoder {
    buf: Box<[u8]>,
    /// Invariant: `start <= end <= buf.len()`; `buf[start..end]` holds bytes received and
    /// not yet handed out as frames.
    start: usize,
    end: usize,
    max_frame_len: u16,
    /// Set by the first bad length prefix and never cleared: the stream lost sync.
    error: Option<FrameError>,
}

impl FrameDecoder {
    /// A decoder accepting frames whose length prefix is at most `max_frame_len` (at least
    /// 1), with a buffer of exactly one such frame.
    pub fn new(max_frame_len: u16) -> Self {
        Self::with_buffer_len(max_frame_len, 0)
    }

    /// Like [`FrameDecoder::new`] with a buffer of `buffer_len` bytes, raised to one full
    /// frame if smaller: a larger buffer takes more frames per read.
    pub fn with_buffer_len(max_frame_len: u16, buffer_len: usize) -> Self {
        let max_frame_len = max_frame_len.max(1);
        let one_frame = LENGTH_PREFIX + usize::from(max_frame_len);
        FrameDecoder {
            buf: vec![0u8; buffer_len.max(one_frame)].into_boxed_slice(),
            start: 0,
            end: 0,
            max_frame_len,
            error: None,
        }
    }

    /// The largest length prefix accepted.
    pub fn max_frame_len(&self) -> u16 {
        self.max_frame_len
    }

    /// Bytes received and not yet handed out as frames.
    pub fn buffered(&self) -> usize {
        self.end - self.start
    }

    /// The framing error that stopped the stream, if one did.
    pub fn error(&self) -> Option<FrameError> {
        self.error
    }

    /// Moves the unread bytes to the front so the free tail is as long as it can be. Only
    /// a partial frame is normally left, so this copies a few bytes per read at most.
    fn compact(&mut self) {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
    }

    /// Copies as much of `bytes` as fits and returns how many were taken. Less than all
    /// of them only when the buffer is full of complete frames: take those out with
    /// [`FrameDecoder::next_frame`] and give the rest again.
    pub fn fill(&mut self, bytes: &[u8]) -> usize {
        if self.buf.len() - self.end < bytes.len() {
            self.compact();
        }
        let n = bytes.len().min(self.buf.len() - self.end);
        self.buf[self.end..self.end + n].copy_from_slice(&bytes[..n]);
        self.end += n;
        n
    }

    /// The free part of the buffer, to read a socket straight into; follow with
    /// [`FrameDecoder::commit`]. Empty only when the buffer is full of complete frames.
    pub fn spare_mut(&mut self) -> &mut [u8] {
        self.compact();
        &mut self.buf[self.end..]
    }

    /// Marks `n` bytes written into [`FrameDecoder::spare_mut`] as received; clamped to the
    /// free space so a wrong count cannot corrupt the state.
    pub fn commit(&mut self, n: usize) {
        self.end += n.min(self.buf.len() - self.end);
    }

    /// The next complete frame, `None` when more bytes are needed.
    ///
    /// # Errors
    ///
    /// A [`FrameError`] when a length prefix is 0 or over the limit; from then on every
    /// call returns it.
    pub fn next_frame(&mut self) -> Option<Result<Frame<'_>, FrameError>> {
        let span = self.next_span()?;
        Some(span.map(|span| self.frame(&span)))
    }

    /// Like [`FrameDecoder::next_frame`], but answers with positions rather than a borrow,
    /// so the sessions can update their own state before lending the payload out.
    fn next_span(&mut self) -> Option<Result<FrameSpan, FrameError>> {
        if let Some(error) = self.error {
            return Some(Err(error));
        }
        let unread = &self.buf[self.start..self.end];
        let prefix = unread.get(..LENGTH_PREFIX)?;
        let len = u16::from_be_bytes([prefix[0], prefix[1]]);
        if len == 0 || len > self.max_frame_len {
            let error = if len == 0 {
                FrameError::ZeroLength
            } else {
                FrameError::TooLong {
                    len,
                    max: self.max_frame_len,
                }
            };
            self.error = Some(error);
            return Some(Err(error));
        }
        let total = LENGTH_PREFIX + usize::from(len);
        if unread.len() < total {
            return None;
        }
        let type_at = self.start + LENGTH_PREFIX;
        self.start += total;
        Some(Ok(FrameSpan {
            packet_type: self.buf[type_at],
            payload_start: type_at + 1,
            payload_end: self.start,
        }))
    }

    /// The frame a span returned by [`FrameDecoder::next_span`] names. Valid until the next
    /// `fill`/`spare_mut`, which may move the bytes; the borrow checker enforces it.
    fn frame(&self, span: &FrameSpan) -> Frame<'_> {
        Frame {
            packet_type: span.packet_type,
            payload: &self.buf[span.payload_start..span.payload_end],
        }
    }
}

/// Where a frame lies in the decoder's buffer.
#[derive(Clone, Copy, Debug)]
struct FrameSpan {
    packet_type: u8,
    payload_start: usize,
    payload_end: usize,
}

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

fn pad_alpha<const N: usize>(text: &[u8]) -> Option<[u8; N]> {
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
fn parse_numeric(field: &[u8]) -> Option<u64> {
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
fn write_numeric(field: &mut [u8], mut value: u64) -> bool {
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

fn fixed_len(frame: Frame<'_>, expected: usize) -> Result<(), ParseError> {
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

fn session_field(bytes: &[u8]) -> Session {
    let mut raw = [b' '; SESSION_LEN];
    raw.copy_from_slice(&bytes[..SESSION_LEN]);
    Session(raw)
}

/// Writes the length prefix and type byte of a frame with a `payload_len`-byte payload and
/// returns the payload's part of `out`, or the error if it does not fit.
fn frame_into(
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

/// Bytes waiting to be written to the socket, in a buffer allocated once.
#[derive(Clone, Debug)]
struct Outbox {
    buf: Box<[u8]>,
    /// Invariant: `start <= end <= buf.len()`; `buf[start..end]` is unsent.
    start: usize,
    end: usize,
}

impl Outbox {
    fn new(len: usize) -> Self {
        Outbox {
            buf: vec![0u8; len.max(MIN_OUTBOX_LEN)].into_boxed_slice(),
            start: 0,
            end: 0,
        }
    }

    fn pending(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    fn consume(&mut self, n: usize) {
        self.start += n.min(self.end - self.start);
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Appends one encoded frame; on error nothing is appended.
    fn push(
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
struct Link {
    decoder: FrameDecoder,
    outbox: Outbox,
    last_sent: Duration,
    last_received: Duration,
}

impl Link {
    fn new(max_frame_len: u16, outbox_len: usize, now: Duration) -> Self {
        Link {
            decoder: FrameDecoder::new(max_frame_len),
            outbox: Outbox::new(outbox_len),
            last_sent: now,
            last_received: now,
        }
    }

    fn feed(&mut self, bytes: &[u8], now: Duration) -> usize {
        if !bytes.is_empty() {
            // Any byte proves the peer alive, heartbeat or data, whole frame or not.
            self.last_received = self.last_received.max(now);
        }
        self.decoder.fill(bytes)
    }

    fn commit(&mut self, n: usize, now: Duration) {
        if n > 0 {
            self.last_received = self.last_received.max(now);
        }
        self.decoder.commit(n);
    }

    /// Queues a server frame. Queuing counts as sending for the heartbeat timer: the bytes
    /// reach the socket as soon as the caller drains the outbox, and if the caller cannot
    /// drain it the peer is not reading and a heartbeat would not help.
    fn send_server(
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
    fn send_client(
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
    fn fire_timers(
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
    fn next_deadline(&self, timeout: Duration, interval: Duration, heartbeats: bool) -> Duration {
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
                "SoupBinTCP {:?} frame is not allowed in this session state",
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
        /// (other than 0), messages in between will never come on this session.
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
pub struct ClientStats {
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
    config: ClientConfig,
    link: Link,
    state: ClientState,
    /// The session joined, once the login is accepted.
    session: Option<Session>,
    /// Sequence number of the next sequenced message: the requested one until the login is
    /// accepted, then the accepted one plus one per message.
    next_sequence: u64,
    stats: ClientStats,
}

impl SoupClient {
    /// A client in [`ClientState::Connecting`]; nothing is queued until it is connected.
    pub fn new(config: ClientConfig) -> Self {
        SoupClient {
            link: Link::new(config.max_frame_len, config.outbox_len, Duration::ZERO),
            state: ClientState::Connecting,
            session: None,
            next_sequence: config.next_sequence,
            stats: ClientStats::default(),
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

    fn fail(&mut self, e: ProtocolError) -> ProtocolError {
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
    pub fn stats(&self) -> ClientStats {
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
pub struct ServerStats {
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
    config: ServerConfig,
    link: Link,
    state: ServerState,
    /// The client timeout in force: the configured one, or the one the login asked for.
    client_timeout: Duration,
    /// Sequence number the next produced message will have: a request past it is clamped.
    next_available: u64,
    /// Sequence number of the next message to send.
    next_sequence: u64,
    stats: ServerStats,
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
            stats: ServerStats::default(),
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

    fn fail(&mut self, e: ProtocolError) -> ProtocolError {
        self.state = ServerState::Dead(DeadReason::Protocol(e));
        e
    }

    fn answer_login(
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

    /// Queues end of session: no more sequenced data on this session.
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
    pub fn stats(&self) -> ServerStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SplitMix64;
    use proptest::prelude::*;

    const MS: Duration = Duration::from_millis(1);

    fn creds() -> Credentials {
        Credentials::new(b"user01", b"pw").expect("short")
    }

    fn session(name: &[u8]) -> Session {
        Session::new(name).expect("short")
    }

    fn encode_server(m: &ServerMessage<'_>) -> Vec<u8> {
        let mut out = vec![0u8; m.encoded_len()];
        assert_eq!(m.encode(&mut out), Ok(out.len()));
        out
    }

    fn encode_client(m: &ClientMessage<'_>) -> Vec<u8> {
        let mut out = vec![0u8; m.encoded_len()];
        assert_eq!(m.encode(&mut out), Ok(out.len()));
        out
    }

    fn one_frame(bytes: &[u8]) -> (u8, Vec<u8>) {
        let mut d = FrameDecoder::new(MAX_FRAME_LEN);
        assert_eq!(d.fill(bytes), bytes.len());
        let f = d.next_frame().expect("whole").expect("valid");
        let out = (f.packet_type, f.payload.to_vec());
        assert!(d.next_frame().is_none());
        out
    }

    fn server_round_trip(m: ServerMessage<'_>) {
        let bytes = encode_server(&m);
        let (ty, payload) = one_frame(&bytes);
        let frame = Frame {
            packet_type: ty,
            payload: &payload,
        };
        assert_eq!(ServerMessage::parse(frame), Ok(m));
    }

    fn client_round_trip(m: ClientMessage<'_>) {
        let bytes = encode_client(&m);
        let (ty, payload) = one_frame(&bytes);
        let frame = Frame {
            packet_type: ty,
            payload: &payload,
        };
        assert_eq!(ClientMessage::parse(frame), Ok(m));
    }

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

    #[test]
    fn decoder_errors_are_sticky_and_bounded() {
        let mut d = FrameDecoder::new(8);
        d.fill(&[0, 0, b'H']);
        assert_eq!(d.next_frame(), Some(Err(FrameError::ZeroLength)));
        assert_eq!(d.next_frame(), Some(Err(FrameError::ZeroLength)));
        assert_eq!(d.error(), Some(FrameError::ZeroLength));

        let mut d = FrameDecoder::new(8);
        d.fill(&[0, 9]);
        assert_eq!(
            d.next_frame(),
            Some(Err(FrameError::TooLong { len: 9, max: 8 }))
        );

        // A one-frame buffer takes no more than one frame until it is polled.
        let mut d = FrameDecoder::new(3);
        let two = [0, 3, b'S', 1, 2, 0, 3, b'S', 3, 4];
        assert_eq!(d.fill(&two), 5);
        assert_eq!(d.fill(&two[5..]), 0);
        assert_eq!(d.next_frame().expect("whole").expect("ok").payload, &[1, 2]);
        assert_eq!(d.fill(&two[5..]), 5);
        assert_eq!(d.next_frame().expect("whole").expect("ok").payload, &[3, 4]);
        assert_eq!(d.buffered(), 0);
    }

    #[test]
    fn decoder_reads_straight_into_its_buffer() {
        let bytes = encode_server(&ServerMessage::SequencedData(b"abcdef"));
        let mut d = FrameDecoder::with_buffer_len(16, 64);
        for chunk in bytes.chunks(3) {
            let spare = d.spare_mut();
            spare[..chunk.len()].copy_from_slice(chunk);
            d.commit(chunk.len());
        }
        let f = d.next_frame().expect("whole").expect("ok");
        assert_eq!((f.packet_type, f.payload), (b'S', &b"abcdef"[..]));
    }

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
