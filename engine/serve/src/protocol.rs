//! The subscriber protocol, version 2: frames, the messages each side sends, and their
//! encoding. Sans-I/O: bytes in, messages out; the server, the client and the tests all go
//! through these functions.
//!
//! # Frames
//!
//! TCP. A frame is a big-endian `u16` length (covering the type byte and the payload), a type
//! byte, and the payload. Every integer is big-endian; symbols are 8 bytes and accounts 16,
//! printable ASCII, space padded; prices are `u32` in ITCH's 1/10,000 dollars. A *level* is
//! 16 bytes: price `u32`, shares `u64`, orders `u32`. The first client frame must be a login;
//! a frame the server cannot decode cuts the client loose (`P`), and a login whose account is
//! blank or not printable ASCII is rejected (`J`, reason `P`, retry-after 0).
//!
//! # Client to server
//!
//! | type | message | payload |
//! |---|---|---|
//! | `L` | login | version `u16` (2), account 16, secret length `u8` (1 to [`MAX_SECRET`]), the secret (UTF-8 or any bytes) |
//! | `S` | subscribe | request id `u32`, budget ms `u32`, symbol 8 |
//! | `U` | unsubscribe | symbol 8 |
//! | `Y` | symbol list | request id `u32`, budget ms `u32` |
//! | `H` | heartbeat | none (after a heartbeat interval without sending) |
//! | `O` | logout | none |
//!
//! A request that waits for an answer carries its remaining budget in milliseconds, never a
//! clock time: clocks on two hosts disagree, a duration does not. The server notes when the
//! request arrived; if the budget is 0 or has run out when the server is about to start on
//! it, the request is dropped, answered with `X`, and counted (`requests dropped: budget ran
//! out` in the run summary).
//!
//! # Server to client
//!
//! The sequenced messages (`I`, `Q`, `V`, `T`, `G`, `Z`, `N`) carry the client's own sequence
//! number: 1 after login, one more per sequenced message, so a missing number is a lost
//! message. Conflation never skips a number: it sends nothing for the instrument, then an
//! image.
//!
//! | type | message | payload |
//! |---|---|---|
//! | `A` | login accepted | version `u16` (the client's own), heartbeat ms `u32` |
//! | `J` | login rejected | reason `u8`, retry-after ms `u32` (0: do not retry) |
//! | `I` | book image | seq `u64`, request id `u32` (0: a refresh after conflation), symbol 8, locate `u16`, flags `u8` (1 STALE, 2 MAYBE_BAD, 4 AT_DEPTH: a side fills `snapshot.depth`), trading state `u8` (`H` `P` `Q` `T`, 0 none), feed seq `u64`, bid count `u16`, ask count `u16`, then the levels: bids best first, then asks best first |
//! | `Q` | top of book | seq `u64`, symbol 8, bid level, ask level (all zero when a side is empty) |
//! | `V` | level | seq `u64`, symbol 8, side `B`/`S`, level (shares 0: the level is gone) |
//! | `T` | trade | seq `u64`, symbol 8, price `u32`, shares `u32` |
//! | `G` | trading state | seq `u64`, symbol 8, state `u8`, reason 4 |
//! | `Z` | symbol list | seq `u64`, request id `u32`, last `u8` (1 on the final frame), count `u16`, count symbols of 8 (at most [`SYMBOLS_PER_FRAME`] a frame) |
//! | `N` | unknown symbol | seq `u64`, request id `u32`, symbol 8 |
//! | `E` | not entitled | seq `u64`, request id `u32` (0: withdrawn, not asked), symbol 8, reason `u8` (`E` not entitled to the symbol, `M` the account's subscription limit, `W` withdrawn by a change of the accounts file); the subscription is not kept |
//! | `X` | request expired | request id `u32` |
//! | `R` | come back later | reason `u8`, retry-after ms `u32`; the server closes after it |
//! | `C` | cut loose | reason `u8`; the server closes after it |
//! | `H` | heartbeat | none (after a heartbeat interval without sending) |
//!
//! An image comes from the snapshot, so it carries at most `snapshot.depth` levels a side;
//! flag 4 (AT_DEPTH) says a side filled that depth and the book may hold more. Level updates
//! (`V`) after the image are not limited to that depth.
//!
//! # Reasons
//!
//! `V` protocol version not supported, `B` busy (admission), `R` restarting, `S` slow
//! consumer, `O` shed under overload, `P` protocol error, `M` too many subscriptions (256 a
//! connection), `T` no login within the login timeout (`serve.login_timeout_ms`), `I` idle:
//! nothing heard (no request, no heartbeat) within the idle timeout (`serve.idle_timeout_ms`).
//! `I` and flag 4 came within version 1 without changing any frame's layout: a peer that
//! does not know them reads `I` as an unknown reason (still a cut, then the close) and
//! ignores the bit. Version 2 adds `A` not authorised (an unknown account or a wrong
//! secret: one reason for both, so that a refusal does not tell which accounts exist), `L`
//! the account's concurrent sessions are all in use, `E` not entitled and `W` entitlement
//! withdrawn (in the `E` frame, or cutting a session whose account was removed).
//!
//! # Versions
//!
//! Version 2 is version 1 plus the login's secret, the `E` frame and the reasons above. A
//! server with no accounts file serves both: a version-1 login (no secret) is served as it
//! always was, and such a server sends no version-2 frame. A server with accounts requires
//! a secret: a version-1 login is answered `J` with reason `V` (protocol version not
//! supported) and retry-after 0, which a version-1 client already reads as "do not
//! retry". The client library logs in with version 1 when it has no secret, so it works
//! with servers of either version.
//!
//! # Closing
//!
//! After `R` or `C` the server reads and drops whatever the client still sends, sends
//! everything queued, then shuts its write side (the client reads the frame, then the end of
//! the stream); it closes when the client closes or at the closing grace (1 s; a stopping
//! server's drain bound). Closing with the client's bytes unread would reset the connection,
//! and a reset makes the client's kernel drop the frame it had not read yet.
//!
//! For example, a subscribe to AAPL with request id 7 and a 250 ms budget is
//! `00 11 53 00 00 00 07 00 00 00 fa 41 41 50 4c 20 20 20 20`.
//!
//! ```
//! use ticklane_serve::protocol::{decode_client, encode_client, ClientMessage};
//!
//! let mut bytes = Vec::new();
//! encode_client(&ClientMessage::Heartbeat, &mut bytes);
//! assert_eq!(bytes, [0, 1, b'H']);
//! assert_eq!(decode_client(&bytes), Ok(Some((ClientMessage::Heartbeat, 3))));
//! ```
#![forbid(unsafe_code)]

use std::fmt;

use ticklane_feed::itch::Price;

use ticklane_book::{LevelView, Side, TopOfBook};

/// The protocol version this build speaks; a login naming another (but 1, see the module
/// doc) is rejected.
pub const PROTOCOL_VERSION: u16 = 2;
/// The version without secrets, still served by a server without accounts.
pub const PROTOCOL_VERSION_1: u16 = 1;
/// The longest secret a login carries, in bytes.
pub const MAX_SECRET: usize = 128;
/// Bytes of the frame header: the length and the type byte.
pub const FRAME_HEADER: usize = 3;
/// The largest frame, header included.
pub const MAX_FRAME: usize = 2 + u16::MAX as usize;
/// Bytes of one level in a book image: price `u32`, shares `u64`, orders `u32`.
pub const LEVEL_BYTES: usize = 16;
/// Bytes of a book image before its levels.
pub const IMAGE_HEADER_BYTES: usize = 36;
/// Symbols one symbol-list frame carries at most; a longer list takes several frames.
pub const SYMBOLS_PER_FRAME: usize = 4096;
/// Levels per side one image carries at most (the snapshot's depth is never above 1024).
pub const MAX_IMAGE_LEVELS: usize = 1024;

/// Bytes of a login's account field.
pub const ACCOUNT_LEN: usize = 16;

/// Whether a login's account field is one this protocol defines: printable ASCII (space to
/// `~`), space padded, not blank. Anything else (a byte over 127, a control byte) is a
/// client that does not speak the protocol, refused at login rather than keyed on.
pub fn account_is_valid(account: &[u8; ACCOUNT_LEN]) -> bool {
    account.iter().all(|b| (b' '..=b'~').contains(b)) && account.iter().any(|&b| b != b' ')
}

/// The login's account field for `name`: 1 to 16 printable ASCII characters, space padded.
///
/// # Errors
///
/// What is wrong with `name`: empty, longer than 16 bytes, a byte that is not printable
/// ASCII, or a space at its end (which the padding would swallow).
pub fn account_field(name: &str) -> Result<[u8; ACCOUNT_LEN], &'static str> {
    let bytes = name.as_bytes();
    if bytes.is_empty() {
        return Err("an account is 1 to 16 characters; this one is empty");
    }
    if bytes.len() > ACCOUNT_LEN {
        return Err("an account is at most 16 characters (the login's field is 16 bytes)");
    }
    if !bytes.iter().all(|b| (b' '..=b'~').contains(b)) {
        return Err("an account is printable ASCII (space to `~`)");
    }
    if bytes.first() == Some(&b' ') || bytes.last() == Some(&b' ') {
        return Err("an account neither starts nor ends with a space");
    }
    let mut field = [b' '; ACCOUNT_LEN];
    field[..bytes.len()].copy_from_slice(bytes);
    Ok(field)
}

/// Image flag: the instrument's feed is down; the book is the last known state.
pub const IMAGE_STALE: u8 = 1 << 0;
/// Image flag: messages were lost; the book may be wrong until rebuilt.
pub const IMAGE_MAYBE_BAD: u8 = 1 << 1;
/// Image flag: a side carries as many levels as the image's source holds (the snapshot's
/// `snapshot.depth`), so the book may have more beyond them. Added within version 1: a peer
/// built before it ignores the bit.
pub const IMAGE_AT_DEPTH: u8 = 1 << 2;

/// Why a login was rejected or a client was told to go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Reason {
    /// The login named a protocol version this server does not speak.
    BadVersion = b'V',
    /// Admission refused the connection or login (rate or per-client limits).
    Busy = b'B',
    /// The server is stopping (graceful restart).
    Restarting = b'R',
    /// The client's write queue overflowed with events that could not be conflated.
    SlowConsumer = b'S',
    /// Shed under overload: the client's queue was the heaviest.
    Shed = b'O',
    /// The client broke the protocol (a bad frame, a request before login).
    ProtocolError = b'P',
    /// Too many subscriptions on one connection.
    TooManySymbols = b'M',
    /// The client did not log in within the login timeout.
    Silent = b'T',
    /// A logged-in client sent nothing (no request, no heartbeat) for the idle timeout.
    /// Added within version 1: a peer built before it decodes it as [`Reason::Other`].
    Idle = b'I',
    /// Version 2: the account is unknown or the secret wrong (one reason for both).
    NotAuthorised = b'A',
    /// Version 2: the account's concurrent sessions are all in use.
    SessionLimit = b'L',
    /// Version 2: the account may not see this symbol.
    NotEntitled = b'E',
    /// Version 2: the account's entitlement was withdrawn (the accounts file changed).
    Withdrawn = b'W',
    /// A reason this build does not know (decoded from a newer peer).
    Other = b'?',
}

impl Reason {
    /// The reason a wire byte names; unknown bytes are [`Reason::Other`].
    pub fn from_wire(byte: u8) -> Reason {
        match byte {
            b'V' => Reason::BadVersion,
            b'B' => Reason::Busy,
            b'R' => Reason::Restarting,
            b'S' => Reason::SlowConsumer,
            b'O' => Reason::Shed,
            b'P' => Reason::ProtocolError,
            b'M' => Reason::TooManySymbols,
            b'T' => Reason::Silent,
            b'I' => Reason::Idle,
            b'A' => Reason::NotAuthorised,
            b'L' => Reason::SessionLimit,
            b'E' => Reason::NotEntitled,
            b'W' => Reason::Withdrawn,
            _ => Reason::Other,
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Reason::BadVersion => "protocol version not supported",
            Reason::Busy => "server busy (admission)",
            Reason::Restarting => "server restarting",
            Reason::SlowConsumer => "slow consumer: write queue overflowed",
            Reason::Shed => "shed under overload (heaviest consumer)",
            Reason::ProtocolError => "protocol error",
            Reason::TooManySymbols => "too many subscriptions",
            Reason::Silent => "no login within the login timeout",
            Reason::Idle => "idle: nothing heard within the server's idle timeout",
            Reason::NotAuthorised => "not authorised: unknown account or wrong secret",
            Reason::SessionLimit => "the account's concurrent sessions are all in use",
            Reason::NotEntitled => "not entitled",
            Reason::Withdrawn => "entitlement withdrawn",
            Reason::Other => "unknown reason",
        })
    }
}

/// A login's secret: up to [`MAX_SECRET`] bytes, held inline (a login allocates
/// nothing). Its `Debug` never shows the bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Secret {
    len: u8,
    bytes: [u8; MAX_SECRET],
}

impl Secret {
    /// No secret (a version-1 login).
    pub const NONE: Secret = Secret {
        len: 0,
        bytes: [0; MAX_SECRET],
    };

    /// `bytes` as a secret; `None` if longer than [`MAX_SECRET`].
    pub fn new(bytes: &[u8]) -> Option<Secret> {
        let mut secret = Secret::NONE;
        secret.bytes.get_mut(..bytes.len())?.copy_from_slice(bytes);
        secret.len = bytes.len() as u8;
        Some(secret)
    }

    /// The secret's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret(<redacted>, {} bytes)", self.len)
    }
}

/// What a client sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientMessage {
    /// `L`: version `u16`, account 16 bytes (space padded); in version 2, the secret's
    /// length `u8` and the secret. The first message.
    Login {
        /// The protocol version the client speaks.
        version: u16,
        /// The account, space padded.
        account: [u8; 16],
        /// The secret ([`Secret::NONE`] in version 1).
        secret: Secret,
    },
    /// `S`: request id `u32`, budget ms `u32`, symbol 8. Answered by a book image (or
    /// unknown-symbol, or expired), then updates.
    Subscribe {
        /// Echoed in the answer.
        request_id: u32,
        /// Milliseconds the client will still wait for the answer when it sends this.
        budget_ms: u32,
        /// The symbol, space padded.
        symbol: [u8; 8],
    },
    /// `U`: symbol 8. No answer; updates stop.
    Unsubscribe {
        /// The symbol, space padded.
        symbol: [u8; 8],
    },
    /// `Y`: request id `u32`, budget ms `u32`. Answered by symbol-list frames (or expired).
    SymbolList {
        /// Echoed in the answer.
        request_id: u32,
        /// Milliseconds the client will still wait for the answer when it sends this.
        budget_ms: u32,
    },
    /// `H`: no payload. Sent after a second without sending anything else.
    Heartbeat,
    /// `O`: no payload. The server closes the connection.
    Logout,
}

/// A book image's fixed fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageHeader {
    /// The client's sequence number of this message.
    pub seq: u64,
    /// The subscribe request it answers, 0 for a refresh after conflation.
    pub request_id: u32,
    /// The symbol, space padded.
    pub symbol: [u8; 8],
    /// ITCH stock locate.
    pub locate: u16,
    /// [`IMAGE_STALE`], [`IMAGE_MAYBE_BAD`], [`IMAGE_AT_DEPTH`].
    pub flags: u8,
    /// `H`, `P`, `Q`, `T`; 0 if none seen.
    pub trading_state: u8,
    /// Feed sequence number of the last message applied to the book.
    pub feed_seq: u64,
    /// Bid levels that follow, best first.
    pub bid_levels: u16,
    /// Ask levels that follow the bids, best first.
    pub ask_levels: u16,
}

/// What a server sends. The updates and images carry the client's sequence number: it
/// starts at 1 after login and grows by one per sequenced message, so a gap shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerMessage<'a> {
    /// `A`: version `u16`, heartbeat ms `u32`.
    LoginAccepted {
        /// The version the server speaks.
        version: u16,
        /// How long the server waits for a client's frame before it gives up.
        heartbeat_ms: u32,
    },
    /// `J`: reason `u8`, retry-after ms `u32` (0: do not retry).
    LoginRejected {
        /// Why.
        reason: Reason,
        /// Come back after this long.
        retry_after_ms: u32,
    },
    /// `I`: [`ImageHeader`] (36 bytes) then the levels, 16 bytes each, bids then asks.
    BookImage {
        /// The fixed fields.
        header: ImageHeader,
        /// `bid_levels + ask_levels` levels, as laid on the wire.
        levels: &'a [u8],
    },
    /// `Q`: seq `u64`, symbol 8, bid level, ask level (16 bytes each; zero when empty).
    Quote {
        /// Sequence number.
        seq: u64,
        /// The symbol.
        symbol: [u8; 8],
        /// The new top of book.
        top: TopOfBook,
    },
    /// `V`: seq `u64`, symbol 8, side `B`/`S`, level (16 bytes; shares 0 when it is gone).
    Level {
        /// Sequence number.
        seq: u64,
        /// The symbol.
        symbol: [u8; 8],
        /// The side.
        side: Side,
        /// The level as it now stands.
        level: LevelView,
    },
    /// `T`: seq `u64`, symbol 8, price `u32`, shares `u32`.
    Trade {
        /// Sequence number.
        seq: u64,
        /// The symbol.
        symbol: [u8; 8],
        /// Price.
        price: Price,
        /// Shares.
        shares: u32,
    },
    /// `G`: seq `u64`, symbol 8, state `u8`, reason 4.
    TradingState {
        /// Sequence number.
        seq: u64,
        /// The symbol.
        symbol: [u8; 8],
        /// `H`, `P`, `Q`, `T`.
        state: u8,
        /// Reason code, space padded.
        reason: [u8; 4],
    },
    /// `Z`: seq `u64`, request id `u32`, last `u8` (1 on the final frame), count `u16`,
    /// then `count` symbols of 8 bytes.
    SymbolList {
        /// Sequence number.
        seq: u64,
        /// The request answered.
        request_id: u32,
        /// Whether this frame ends the list.
        last: bool,
        /// The symbols, 8 bytes each.
        symbols: &'a [u8],
    },
    /// `N`: seq `u64`, request id `u32`, symbol 8: no such instrument (yet).
    UnknownSymbol {
        /// Sequence number.
        seq: u64,
        /// The request answered.
        request_id: u32,
        /// The symbol asked for.
        symbol: [u8; 8],
    },
    /// `E` (version 2): seq `u64`, request id `u32`, symbol 8, reason `u8`: the account may
    /// not follow the symbol; the subscription is not kept (or no longer is).
    NotEntitled {
        /// Sequence number.
        seq: u64,
        /// The request answered; 0 when an entitlement was withdrawn unasked.
        request_id: u32,
        /// The symbol.
        symbol: [u8; 8],
        /// [`Reason::NotEntitled`], [`Reason::TooManySymbols`] (the account's limit) or
        /// [`Reason::Withdrawn`].
        reason: Reason,
    },
    /// `X`: request id `u32`: the request's budget ran out before the server started on it.
    RequestExpired {
        /// The request dropped.
        request_id: u32,
    },
    /// `R`: reason `u8`, retry-after ms `u32`: the server is going; come back later.
    ComeBackLater {
        /// Why.
        reason: Reason,
        /// Come back after this long.
        retry_after_ms: u32,
    },
    /// `C`: reason `u8`: the server cut this client loose and closes the connection.
    CutLoose {
        /// Why.
        reason: Reason,
    },
    /// `H`: no payload.
    Heartbeat,
}

impl ServerMessage<'_> {
    /// The client sequence number the message carries, if it is sequenced.
    pub fn seq(&self) -> Option<u64> {
        match *self {
            ServerMessage::BookImage { header, .. } => Some(header.seq),
            ServerMessage::Quote { seq, .. }
            | ServerMessage::Level { seq, .. }
            | ServerMessage::Trade { seq, .. }
            | ServerMessage::TradingState { seq, .. }
            | ServerMessage::SymbolList { seq, .. }
            | ServerMessage::UnknownSymbol { seq, .. }
            | ServerMessage::NotEntitled { seq, .. } => Some(seq),
            _ => None,
        }
    }
}

/// Why bytes did not decode. `Copy`; never allocates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The length field was 0: a frame has at least its type byte. The connection is
    /// broken; close it.
    EmptyFrame,
    /// No message has this type byte (on this side). Close the connection.
    UnknownType(u8),
    /// The payload's length does not fit the type. Close the connection.
    BadLength {
        /// The type byte.
        kind: u8,
        /// The payload length the frame had.
        len: usize,
    },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DecodeError::EmptyFrame => f.write_str("frame of length 0"),
            DecodeError::UnknownType(t) => write!(f, "unknown message type {t:#04x}"),
            DecodeError::BadLength { kind, len } => {
                write!(f, "message type {kind:#04x} with a {len}-byte payload")
            }
        }
    }
}

impl std::error::Error for DecodeError {}

/// Where encoded bytes go: a `Vec<u8>`, or a `bumpalo` vector for per-request scratch.
pub trait FrameOut {
    /// Appends `bytes`.
    fn put(&mut self, bytes: &[u8]);
}

impl FrameOut for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

impl FrameOut for bumpalo::collections::Vec<'_, u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

fn frame_start(out: &mut impl FrameOut, kind: u8, payload: usize) {
    let len = u16::try_from(payload + 1).expect("invariant: payloads fit a u16 frame");
    out.put(&len.to_be_bytes());
    out.put(&[kind]);
}

fn put_level(out: &mut impl FrameOut, level: LevelView) {
    out.put(&level.price.0.to_be_bytes());
    out.put(&level.qty.to_be_bytes());
    out.put(&level.orders.to_be_bytes());
}

/// Encodes `message` as one frame onto `out`.
pub fn encode_client(message: &ClientMessage, out: &mut impl FrameOut) {
    match *message {
        ClientMessage::Login {
            version,
            account,
            secret,
        } => {
            let with_secret = version != PROTOCOL_VERSION_1;
            let secret = secret.as_bytes();
            frame_start(
                out,
                b'L',
                18 + usize::from(with_secret) * (1 + secret.len()),
            );
            out.put(&version.to_be_bytes());
            out.put(&account);
            if with_secret {
                out.put(&[secret.len() as u8]);
                out.put(secret);
            }
        }
        ClientMessage::Subscribe {
            request_id,
            budget_ms,
            symbol,
        } => {
            frame_start(out, b'S', 16);
            out.put(&request_id.to_be_bytes());
            out.put(&budget_ms.to_be_bytes());
            out.put(&symbol);
        }
        ClientMessage::Unsubscribe { symbol } => {
            frame_start(out, b'U', 8);
            out.put(&symbol);
        }
        ClientMessage::SymbolList {
            request_id,
            budget_ms,
        } => {
            frame_start(out, b'Y', 8);
            out.put(&request_id.to_be_bytes());
            out.put(&budget_ms.to_be_bytes());
        }
        ClientMessage::Heartbeat => frame_start(out, b'H', 0),
        ClientMessage::Logout => frame_start(out, b'O', 0),
    }
}

/// Encodes a book image from its header and levels; the level counts in `header` are
/// replaced by the counts of `bids` and `asks` (each at most [`MAX_IMAGE_LEVELS`]; more are
/// left out).
pub fn encode_image<'l>(
    header: ImageHeader,
    bids: impl IntoIterator<Item = &'l LevelView>,
    asks: impl IntoIterator<Item = &'l LevelView>,
    bid_count: usize,
    ask_count: usize,
    out: &mut impl FrameOut,
) {
    let bid_count = bid_count.min(MAX_IMAGE_LEVELS);
    let ask_count = ask_count.min(MAX_IMAGE_LEVELS);
    frame_start(
        out,
        b'I',
        IMAGE_HEADER_BYTES + (bid_count + ask_count) * LEVEL_BYTES,
    );
    let header = ImageHeader {
        bid_levels: bid_count as u16,
        ask_levels: ask_count as u16,
        ..header
    };
    put_image_header(out, &header);
    for level in bids.into_iter().take(bid_count) {
        put_level(out, *level);
    }
    for level in asks.into_iter().take(ask_count) {
        put_level(out, *level);
    }
}

fn put_image_header(out: &mut impl FrameOut, h: &ImageHeader) {
    out.put(&h.seq.to_be_bytes());
    out.put(&h.request_id.to_be_bytes());
    out.put(&h.symbol);
    out.put(&h.locate.to_be_bytes());
    out.put(&[h.flags, h.trading_state]);
    out.put(&h.feed_seq.to_be_bytes());
    out.put(&h.bid_levels.to_be_bytes());
    out.put(&h.ask_levels.to_be_bytes());
}

/// Encodes `message` as one frame onto `out`.
///
/// # Panics
///
/// If a book image's or symbol list's byte slice is not as long as its counts say, or
/// longer than a frame holds (a caller's bug: decoded messages always fit).
pub fn encode_server(message: &ServerMessage<'_>, out: &mut impl FrameOut) {
    match *message {
        ServerMessage::LoginAccepted {
            version,
            heartbeat_ms,
        } => {
            frame_start(out, b'A', 6);
            out.put(&version.to_be_bytes());
            out.put(&heartbeat_ms.to_be_bytes());
        }
        ServerMessage::LoginRejected {
            reason,
            retry_after_ms,
        } => {
            frame_start(out, b'J', 5);
            out.put(&[reason as u8]);
            out.put(&retry_after_ms.to_be_bytes());
        }
        ServerMessage::BookImage { header, levels } => {
            assert_eq!(
                levels.len(),
                (usize::from(header.bid_levels) + usize::from(header.ask_levels)) * LEVEL_BYTES,
                "image levels do not match their counts"
            );
            frame_start(out, b'I', IMAGE_HEADER_BYTES + levels.len());
            put_image_header(out, &header);
            out.put(levels);
        }
        ServerMessage::Quote { seq, symbol, top } => {
            frame_start(out, b'Q', 48);
            out.put(&seq.to_be_bytes());
            out.put(&symbol);
            put_level(out, top.bid);
            put_level(out, top.ask);
        }
        ServerMessage::Level {
            seq,
            symbol,
            side,
            level,
        } => {
            frame_start(out, b'V', 33);
            out.put(&seq.to_be_bytes());
            out.put(&symbol);
            out.put(&[match side {
                Side::Bid => b'B',
                Side::Ask => b'S',
            }]);
            put_level(out, level);
        }
        ServerMessage::Trade {
            seq,
            symbol,
            price,
            shares,
        } => {
            frame_start(out, b'T', 24);
            out.put(&seq.to_be_bytes());
            out.put(&symbol);
            out.put(&price.0.to_be_bytes());
            out.put(&shares.to_be_bytes());
        }
        ServerMessage::TradingState {
            seq,
            symbol,
            state,
            reason,
        } => {
            frame_start(out, b'G', 21);
            out.put(&seq.to_be_bytes());
            out.put(&symbol);
            out.put(&[state]);
            out.put(&reason);
        }
        ServerMessage::SymbolList {
            seq,
            request_id,
            last,
            symbols,
        } => {
            assert!(
                symbols.len() % 8 == 0 && symbols.len() / 8 <= SYMBOLS_PER_FRAME,
                "a symbol list frame holds whole symbols, at most SYMBOLS_PER_FRAME"
            );
            frame_start(out, b'Z', 15 + symbols.len());
            out.put(&seq.to_be_bytes());
            out.put(&request_id.to_be_bytes());
            out.put(&[u8::from(last)]);
            out.put(&((symbols.len() / 8) as u16).to_be_bytes());
            out.put(symbols);
        }
        ServerMessage::NotEntitled {
            seq,
            request_id,
            symbol,
            reason,
        } => {
            frame_start(out, b'E', 21);
            out.put(&seq.to_be_bytes());
            out.put(&request_id.to_be_bytes());
            out.put(&symbol);
            out.put(&[reason as u8]);
        }
        ServerMessage::UnknownSymbol {
            seq,
            request_id,
            symbol,
        } => {
            frame_start(out, b'N', 20);
            out.put(&seq.to_be_bytes());
            out.put(&request_id.to_be_bytes());
            out.put(&symbol);
        }
        ServerMessage::RequestExpired { request_id } => {
            frame_start(out, b'X', 4);
            out.put(&request_id.to_be_bytes());
        }
        ServerMessage::ComeBackLater {
            reason,
            retry_after_ms,
        } => {
            frame_start(out, b'R', 5);
            out.put(&[reason as u8]);
            out.put(&retry_after_ms.to_be_bytes());
        }
        ServerMessage::CutLoose { reason } => {
            frame_start(out, b'C', 1);
            out.put(&[reason as u8]);
        }
        ServerMessage::Heartbeat => frame_start(out, b'H', 0),
    }
}

/// One whole frame found in a byte stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The type byte.
    pub kind: u8,
    /// The payload after the type byte.
    pub payload: &'a [u8],
    /// Bytes the frame takes, header included.
    pub len: usize,
}

/// The next frame in `bytes`; `None` if `bytes` does not hold a whole frame yet.
///
/// # Errors
///
/// [`DecodeError::EmptyFrame`] for a length of 0.
pub fn split_frame(bytes: &[u8]) -> Result<Option<Frame<'_>>, DecodeError> {
    let Some(len) = bytes.get(..2) else {
        return Ok(None);
    };
    let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
    if len == 0 {
        return Err(DecodeError::EmptyFrame);
    }
    let Some(frame) = bytes.get(2..2 + len) else {
        return Ok(None);
    };
    Ok(Some(Frame {
        kind: frame[0],
        payload: &frame[1..],
        len: 2 + len,
    }))
}

/// Big-endian field reads from a payload whose length was checked once.
struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let (head, rest) = self.0.split_at(N);
        self.0 = rest;
        head.try_into()
            .expect("invariant: split_at(N) gives N bytes")
    }
    fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }
    fn u16(&mut self) -> u16 {
        u16::from_be_bytes(self.take())
    }
    fn u32(&mut self) -> u32 {
        u32::from_be_bytes(self.take())
    }
    fn u64(&mut self) -> u64 {
        u64::from_be_bytes(self.take())
    }
    fn level(&mut self) -> LevelView {
        LevelView {
            price: Price(self.u32()),
            qty: self.u64(),
            orders: self.u32(),
        }
    }
    fn rest(self) -> &'a [u8] {
        self.0
    }
}

fn expect_len(kind: u8, payload: &[u8], len: usize) -> Result<Fields<'_>, DecodeError> {
    if payload.len() == len {
        Ok(Fields(payload))
    } else {
        Err(DecodeError::BadLength {
            kind,
            len: payload.len(),
        })
    }
}

/// A login: version and account (18 bytes: version 1, or any version a server answers
/// with `V`), or those, the secret's length and the secret.
fn decode_login(payload: &[u8]) -> Result<ClientMessage, DecodeError> {
    let bad = || DecodeError::BadLength {
        kind: b'L',
        len: payload.len(),
    };
    let Some(head) = payload.get(..18) else {
        return Err(bad());
    };
    let mut f = Fields(head);
    let version = f.u16();
    let account = f.take();
    let secret = match payload.get(18..) {
        Some([]) => Secret::NONE,
        Some([len, rest @ ..])
            if version != PROTOCOL_VERSION_1 && rest.len() == usize::from(*len) =>
        {
            Secret::new(rest).ok_or_else(bad)?
        }
        _ => return Err(bad()),
    };
    Ok(ClientMessage::Login {
        version,
        account,
        secret,
    })
}

/// The first client message in `bytes` and the bytes it took; `None` until a whole frame
/// is there.
///
/// # Errors
///
/// A [`DecodeError`] when the frame is not a client message of this version.
pub fn decode_client(bytes: &[u8]) -> Result<Option<(ClientMessage, usize)>, DecodeError> {
    let Some(Frame {
        kind,
        payload,
        len: used,
    }) = split_frame(bytes)?
    else {
        return Ok(None);
    };
    let message = match kind {
        b'L' => decode_login(payload)?,
        b'S' => {
            let mut f = expect_len(kind, payload, 16)?;
            ClientMessage::Subscribe {
                request_id: f.u32(),
                budget_ms: f.u32(),
                symbol: f.take(),
            }
        }
        b'U' => ClientMessage::Unsubscribe {
            symbol: expect_len(kind, payload, 8)?.take(),
        },
        b'Y' => {
            let mut f = expect_len(kind, payload, 8)?;
            ClientMessage::SymbolList {
                request_id: f.u32(),
                budget_ms: f.u32(),
            }
        }
        b'H' => {
            expect_len(kind, payload, 0)?;
            ClientMessage::Heartbeat
        }
        b'O' => {
            expect_len(kind, payload, 0)?;
            ClientMessage::Logout
        }
        other => return Err(DecodeError::UnknownType(other)),
    };
    Ok(Some((message, used)))
}

/// The first server message in `bytes` and the bytes it took; `None` until a whole frame
/// is there.
///
/// # Errors
///
/// A [`DecodeError`] when the frame is not a server message of this version.
pub fn decode_server(bytes: &[u8]) -> Result<Option<(ServerMessage<'_>, usize)>, DecodeError> {
    let Some(Frame {
        kind,
        payload,
        len: used,
    }) = split_frame(bytes)?
    else {
        return Ok(None);
    };
    let bad = || DecodeError::BadLength {
        kind,
        len: payload.len(),
    };
    let message = match kind {
        b'A' => {
            let mut f = expect_len(kind, payload, 6)?;
            ServerMessage::LoginAccepted {
                version: f.u16(),
                heartbeat_ms: f.u32(),
            }
        }
        b'J' => {
            let mut f = expect_len(kind, payload, 5)?;
            ServerMessage::LoginRejected {
                reason: Reason::from_wire(f.u8()),
                retry_after_ms: f.u32(),
            }
        }
        b'I' => {
            if payload.len() < IMAGE_HEADER_BYTES {
                return Err(bad());
            }
            let mut f = Fields(payload);
            let header = ImageHeader {
                seq: f.u64(),
                request_id: f.u32(),
                symbol: f.take(),
                locate: f.u16(),
                flags: f.u8(),
                trading_state: f.u8(),
                feed_seq: f.u64(),
                bid_levels: f.u16(),
                ask_levels: f.u16(),
            };
            let levels = f.rest();
            let want =
                (usize::from(header.bid_levels) + usize::from(header.ask_levels)) * LEVEL_BYTES;
            if levels.len() != want {
                return Err(bad());
            }
            ServerMessage::BookImage { header, levels }
        }
        b'Q' => {
            let mut f = expect_len(kind, payload, 48)?;
            ServerMessage::Quote {
                seq: f.u64(),
                symbol: f.take(),
                top: TopOfBook {
                    bid: f.level(),
                    ask: f.level(),
                },
            }
        }
        b'V' => {
            let mut f = expect_len(kind, payload, 33)?;
            let seq = f.u64();
            let symbol = f.take();
            let side = Side::from_wire(f.u8()).ok_or_else(bad)?;
            ServerMessage::Level {
                seq,
                symbol,
                side,
                level: f.level(),
            }
        }
        b'T' => {
            let mut f = expect_len(kind, payload, 24)?;
            ServerMessage::Trade {
                seq: f.u64(),
                symbol: f.take(),
                price: Price(f.u32()),
                shares: f.u32(),
            }
        }
        b'G' => {
            let mut f = expect_len(kind, payload, 21)?;
            ServerMessage::TradingState {
                seq: f.u64(),
                symbol: f.take(),
                state: f.u8(),
                reason: f.take(),
            }
        }
        b'Z' => {
            if payload.len() < 15 {
                return Err(bad());
            }
            let mut f = Fields(payload);
            let seq = f.u64();
            let request_id = f.u32();
            let last = match f.u8() {
                0 => false,
                1 => true,
                _ => return Err(bad()),
            };
            let count = usize::from(f.u16());
            let symbols = f.rest();
            if symbols.len() != count * 8 || count > SYMBOLS_PER_FRAME {
                return Err(bad());
            }
            ServerMessage::SymbolList {
                seq,
                request_id,
                last,
                symbols,
            }
        }
        b'E' => {
            let mut f = expect_len(kind, payload, 21)?;
            ServerMessage::NotEntitled {
                seq: f.u64(),
                request_id: f.u32(),
                symbol: f.take(),
                reason: Reason::from_wire(f.take::<1>()[0]),
            }
        }
        b'N' => {
            let mut f = expect_len(kind, payload, 20)?;
            ServerMessage::UnknownSymbol {
                seq: f.u64(),
                request_id: f.u32(),
                symbol: f.take(),
            }
        }
        b'X' => ServerMessage::RequestExpired {
            request_id: expect_len(kind, payload, 4)?.u32(),
        },
        b'R' => {
            let mut f = expect_len(kind, payload, 5)?;
            ServerMessage::ComeBackLater {
                reason: Reason::from_wire(f.u8()),
                retry_after_ms: f.u32(),
            }
        }
        b'C' => ServerMessage::CutLoose {
            reason: Reason::from_wire(expect_len(kind, payload, 1)?.u8()),
        },
        b'H' => {
            expect_len(kind, payload, 0)?;
            ServerMessage::Heartbeat
        }
        other => return Err(DecodeError::UnknownType(other)),
    };
    Ok(Some((message, used)))
}

/// The levels of a decoded book image, 16 bytes each: bids (best first) then asks.
pub fn image_levels(levels: &[u8]) -> impl Iterator<Item = LevelView> + '_ {
    levels
        .chunks_exact(LEVEL_BYTES)
        .map(|chunk| Fields(chunk).level())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_account_is_1_to_16_printable_ascii_characters() {
        assert_eq!(account_field("ticklane"), Ok(*b"ticklane        "));
        assert_eq!(account_field("a b"), Ok(*b"a b             "));
        assert_eq!(account_field("sixteen-chars-ok"), Ok(*b"sixteen-chars-ok"));
        for bad in [
            "",
            "seventeen-chars-x",
            "caf\u{e9}",
            "tab\there",
            " lead",
            "trail ",
        ] {
            assert!(account_field(bad).is_err(), "{bad:?}");
        }
        assert!(account_is_valid(b"ticklane        "));
        assert!(!account_is_valid(&[b' '; 16]), "blank");
        let mut latin1 = *b"caf             ";
        latin1[3] = 0xe9;
        assert!(!account_is_valid(&latin1));
        assert!(!account_is_valid(&[0; 16]), "control bytes");
    }

    fn level() -> impl Strategy<Value = LevelView> {
        (any::<u32>(), any::<u64>(), any::<u32>()).prop_map(|(p, qty, orders)| LevelView {
            price: Price(p),
            qty,
            orders,
        })
    }

    fn reason() -> impl Strategy<Value = Reason> {
        prop_oneof![
            Just(Reason::BadVersion),
            Just(Reason::Busy),
            Just(Reason::Restarting),
            Just(Reason::SlowConsumer),
            Just(Reason::Shed),
            Just(Reason::ProtocolError),
            Just(Reason::TooManySymbols),
            Just(Reason::Silent),
            Just(Reason::Idle),
            Just(Reason::NotAuthorised),
            Just(Reason::SessionLimit),
            Just(Reason::NotEntitled),
            Just(Reason::Withdrawn),
            Just(Reason::Other),
        ]
    }

    fn client_message() -> impl Strategy<Value = ClientMessage> {
        prop_oneof![
            (any::<[u8; 16]>()).prop_map(|account| ClientMessage::Login {
                version: PROTOCOL_VERSION_1,
                account,
                secret: Secret::NONE,
            }),
            (
                any::<u16>().prop_filter("not 1", |v| *v != PROTOCOL_VERSION_1),
                any::<[u8; 16]>(),
                proptest::collection::vec(any::<u8>(), 0..=MAX_SECRET)
            )
                .prop_map(|(version, account, secret)| ClientMessage::Login {
                    version,
                    account,
                    secret: Secret::new(&secret).expect("fits"),
                }),
            (any::<u32>(), any::<u32>(), any::<[u8; 8]>()).prop_map(|(r, b, s)| {
                ClientMessage::Subscribe {
                    request_id: r,
                    budget_ms: b,
                    symbol: s,
                }
            }),
            any::<[u8; 8]>().prop_map(|symbol| ClientMessage::Unsubscribe { symbol }),
            (any::<u32>(), any::<u32>()).prop_map(|(request_id, budget_ms)| {
                ClientMessage::SymbolList {
                    request_id,
                    budget_ms,
                }
            }),
            Just(ClientMessage::Heartbeat),
            Just(ClientMessage::Logout),
        ]
    }

    /// Server messages own their variable parts here; the test borrows them to encode.
    #[derive(Clone, Debug)]
    enum Owned {
        Fixed(ServerMessage<'static>),
        Image(ImageHeader, Vec<LevelView>, Vec<LevelView>),
        Symbols(u64, u32, bool, Vec<u8>),
    }

    fn server_message() -> impl Strategy<Value = Owned> {
        let fixed = prop_oneof![
            (any::<u16>(), any::<u32>()).prop_map(|(version, heartbeat_ms)| {
                ServerMessage::LoginAccepted {
                    version,
                    heartbeat_ms,
                }
            }),
            (reason(), any::<u32>()).prop_map(|(reason, retry_after_ms)| {
                ServerMessage::LoginRejected {
                    reason,
                    retry_after_ms,
                }
            }),
            (any::<u64>(), any::<[u8; 8]>(), level(), level()).prop_map(|(seq, symbol, b, a)| {
                ServerMessage::Quote {
                    seq,
                    symbol,
                    top: TopOfBook { bid: b, ask: a },
                }
            }),
            (any::<u64>(), any::<[u8; 8]>(), any::<bool>(), level()).prop_map(
                |(seq, symbol, bid, level)| ServerMessage::Level {
                    seq,
                    symbol,
                    side: if bid { Side::Bid } else { Side::Ask },
                    level,
                }
            ),
            (any::<u64>(), any::<[u8; 8]>(), any::<u32>(), any::<u32>()).prop_map(
                |(seq, symbol, p, shares)| ServerMessage::Trade {
                    seq,
                    symbol,
                    price: Price(p),
                    shares,
                }
            ),
            (
                any::<u64>(),
                any::<[u8; 8]>(),
                any::<u8>(),
                any::<[u8; 4]>()
            )
                .prop_map(|(seq, symbol, state, reason)| ServerMessage::TradingState {
                    seq,
                    symbol,
                    state,
                    reason,
                }),
            (any::<u64>(), any::<u32>(), any::<[u8; 8]>(), reason()).prop_map(
                |(seq, request_id, symbol, reason)| ServerMessage::NotEntitled {
                    seq,
                    request_id,
                    symbol,
                    reason,
                }
            ),
            (any::<u64>(), any::<u32>(), any::<[u8; 8]>()).prop_map(|(seq, request_id, symbol)| {
                ServerMessage::UnknownSymbol {
                    seq,
                    request_id,
                    symbol,
                }
            }),
            any::<u32>().prop_map(|request_id| ServerMessage::RequestExpired { request_id }),
            (reason(), any::<u32>()).prop_map(|(reason, retry_after_ms)| {
                ServerMessage::ComeBackLater {
                    reason,
                    retry_after_ms,
                }
            }),
            reason().prop_map(|reason| ServerMessage::CutLoose { reason }),
            Just(ServerMessage::Heartbeat),
        ];
        let image = (
            any::<(u64, u32, [u8; 8], u16, u8, u8, u64)>(),
            proptest::collection::vec(level(), 0..12),
            proptest::collection::vec(level(), 0..12),
        )
            .prop_map(
                |((seq, request_id, symbol, locate, flags, ts, feed_seq), b, a)| {
                    let header = ImageHeader {
                        seq,
                        request_id,
                        symbol,
                        locate,
                        flags,
                        trading_state: ts,
                        feed_seq,
                        bid_levels: b.len() as u16,
                        ask_levels: a.len() as u16,
                    };
                    Owned::Image(header, b, a)
                },
            );
        let symbols = (
            any::<u64>(),
            any::<u32>(),
            any::<bool>(),
            proptest::collection::vec(any::<[u8; 8]>(), 0..20),
        )
            .prop_map(|(seq, r, last, s)| Owned::Symbols(seq, r, last, s.concat()));
        prop_oneof![fixed.prop_map(Owned::Fixed), image, symbols]
    }

    proptest! {
        #[test]
        fn client_messages_round_trip(messages in proptest::collection::vec(client_message(), 1..8)) {
            let mut bytes = Vec::new();
            for m in &messages {
                encode_client(m, &mut bytes);
            }
            let mut at = 0;
            for m in &messages {
                let (decoded, used) = decode_client(&bytes[at..]).unwrap().unwrap();
                prop_assert_eq!(&decoded, m);
                at += used;
            }
            prop_assert_eq!(at, bytes.len());
            // Every strict prefix of the last frame is incomplete, never an error.
            prop_assert_eq!(decode_client(&bytes[at..]), Ok(None));
        }

        #[test]
        fn server_messages_round_trip(owned in server_message()) {
            let mut bytes = Vec::new();
            match &owned {
                Owned::Fixed(m) => encode_server(m, &mut bytes),
                Owned::Image(h, b, a) => encode_image(*h, b, a, b.len(), a.len(), &mut bytes),
                Owned::Symbols(seq, r, last, s) => encode_server(
                    &ServerMessage::SymbolList { seq: *seq, request_id: *r, last: *last, symbols: s },
                    &mut bytes,
                ),
            }
            for cut in 0..bytes.len() {
                prop_assert_eq!(decode_server(&bytes[..cut]), Ok(None));
            }
            let (decoded, used) = decode_server(&bytes).unwrap().unwrap();
            prop_assert_eq!(used, bytes.len());
            match (&owned, decoded) {
                (Owned::Fixed(m), d) => prop_assert_eq!(*m, d),
                (Owned::Image(h, b, a), ServerMessage::BookImage { header, levels }) => {
                    prop_assert_eq!(*h, header);
                    let got: Vec<_> = image_levels(levels).collect();
                    prop_assert_eq!(got, [b.as_slice(), a.as_slice()].concat());
                    // Re-encoding the decoded form gives the same bytes.
                    let mut again = Vec::new();
                    encode_server(&ServerMessage::BookImage { header, levels }, &mut again);
                    prop_assert_eq!(again, bytes);
                }
                (Owned::Symbols(seq, r, last, s), ServerMessage::SymbolList { seq: q, request_id, last: l, symbols }) => {
                    prop_assert_eq!((*seq, *r, *last, s.as_slice()), (q, request_id, l, symbols));
                }
                (o, d) => prop_assert!(false, "{o:?} decoded as {d:?}"),
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let mut at = 0;
            while let Ok(Some((_, used))) = decode_client(&bytes[at..]) {
                at += used;
            }
            let mut at = 0;
            while let Ok(Some((_, used))) = decode_server(&bytes[at..]) {
                at += used;
            }
        }
    }

    /// Hand-laid bytes from the field tables in this module's documentation.
    #[test]
    fn subscribe_and_trade_bytes_match_the_readme() {
        let mut bytes = Vec::new();
        encode_client(
            &ClientMessage::Subscribe {
                request_id: 7,
                budget_ms: 250,
                symbol: *b"AAPL    ",
            },
            &mut bytes,
        );
        assert_eq!(
            bytes,
            [
                0, 17, b'S', 0, 0, 0, 7, 0, 0, 0, 250, b'A', b'A', b'P', b'L', b' ', b' ', b' ',
                b' '
            ]
        );
        let trade = [
            0, 25, b'T', 0, 0, 0, 0, 0, 0, 0, 3, b'M', b'S', b'F', b'T', b' ', b' ', b' ', b' ', 0,
            0, 0x27, 0x10, 0, 0, 0, 100,
        ];
        assert_eq!(
            decode_server(&trade),
            Ok(Some((
                ServerMessage::Trade {
                    seq: 3,
                    symbol: *b"MSFT    ",
                    price: Price(10_000),
                    shares: 100
                },
                trade.len()
            )))
        );
    }

    #[test]
    fn bad_frames_are_errors() {
        assert_eq!(decode_client(&[0, 0]), Err(DecodeError::EmptyFrame));
        assert_eq!(
            decode_client(&[0, 1, b'q']),
            Err(DecodeError::UnknownType(b'q'))
        );
        assert_eq!(
            decode_client(&[0, 2, b'H', 0]),
            Err(DecodeError::BadLength { kind: b'H', len: 1 })
        );
        // An image whose counts promise more levels than it holds.
        let mut image = vec![0, 1 + 36, b'I'];
        image.extend_from_slice(&[0; 32]);
        image.extend_from_slice(&[0, 1, 0, 0]);
        assert_eq!(
            decode_server(&image),
            Err(DecodeError::BadLength {
                kind: b'I',
                len: 36
            })
        );
    }
}
