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

mod client;
mod codec;
mod framing;
mod link;
mod server;

pub use client::*;
pub use codec::*;
pub use framing::*;
pub use link::*;
pub use server::*;

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

/// Messages laid out for the tests of every file in this module.
#[cfg(test)]
pub(crate) mod test_support {
    use super::*;

    pub(crate) const MS: Duration = Duration::from_millis(1);

    pub(crate) fn creds() -> Credentials {
        Credentials::new(b"user01", b"pw").expect("short")
    }

    pub(crate) fn session(name: &[u8]) -> Session {
        Session::new(name).expect("short")
    }

    pub(crate) fn encode_server(m: &ServerMessage<'_>) -> Vec<u8> {
        let mut out = vec![0u8; m.encoded_len()];
        assert_eq!(m.encode(&mut out), Ok(out.len()));
        out
    }

    pub(crate) fn encode_client(m: &ClientMessage<'_>) -> Vec<u8> {
        let mut out = vec![0u8; m.encoded_len()];
        assert_eq!(m.encode(&mut out), Ok(out.len()));
        out
    }

    pub(crate) fn one_frame(bytes: &[u8]) -> (u8, Vec<u8>) {
        let mut d = FrameDecoder::new(MAX_FRAME_LEN);
        assert_eq!(d.fill(bytes), bytes.len());
        let f = d.next_frame().expect("whole").expect("valid");
        let out = (f.packet_type, f.payload.to_vec());
        assert!(d.next_frame().is_none());
        out
    }

    pub(crate) fn server_round_trip(m: ServerMessage<'_>) {
        let bytes = encode_server(&m);
        let (ty, payload) = one_frame(&bytes);
        let frame = Frame {
            packet_type: ty,
            payload: &payload,
        };
        assert_eq!(ServerMessage::parse(frame), Ok(m));
    }

    pub(crate) fn client_round_trip(m: ClientMessage<'_>) {
        let bytes = encode_client(&m);
        let (ty, payload) = one_frame(&bytes);
        let frame = Frame {
            packet_type: ty,
            payload: &payload,
        };
        assert_eq!(ClientMessage::parse(frame), Ok(m));
    }
}
