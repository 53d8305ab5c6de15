//! One HTTP/1.1 request head, read under a size limit and a deadline and parsed with
//! `httparse` (hyper's parser). Both of the engine's HTTP servers read their requests here:
//! the admin server with a blocking socket and read timeouts ([`read_blocking`]), the
//! browser view a non-blocking socket a turn at a time ([`HeadReader::read_from`]).
//!
//! What is a limit and what it answers: a head that needs more than
//! [`HeadLimits::max_bytes`] is [`HeadError::TooLarge`] (431), more than 32 headers
//! [`HeadError::TooManyHeaders`] (431), bytes that are not a request head
//! [`HeadError::Malformed`] (400), a head not complete by [`HeadLimits::deadline`] after the
//! reader started [`HeadError::TimedOut`] (408). Bodies are never read. [`reason`] gives
//! both servers the reason phrase of their answers' status lines.
//!
//! # Examples
//!
//! ```
//! use std::time::{Duration, Instant};
//! use ticklane_http::http_head::{HeadLimits, HeadReader, Progress};
//!
//! let limits = HeadLimits { max_bytes: 1024, deadline: Duration::from_secs(2) };
//! let mut reader = HeadReader::new(limits, Instant::now());
//! let mut bytes: &[u8] = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
//! let Progress::Complete(head) = reader.read_from(&mut bytes, Instant::now()) else {
//!     panic!("a whole head");
//! };
//! assert_eq!((head.method(), head.target()), ("GET", "/health"));
//! assert_eq!(head.header("host"), Some(&b"x"[..]));
//! ```
#![forbid(unsafe_code)]

use std::io::{self, Read};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// The most headers a request may carry.
pub const MAX_HEADERS: usize = 32;

/// How much a request head may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeadLimits {
    /// Most bytes of request line and headers.
    pub max_bytes: usize,
    /// Longest time from the reader's start to a complete head.
    pub deadline: Duration,
}

/// Why a head was refused; each maps to the status to answer with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HeadError {
    /// The head needs more than [`HeadLimits::max_bytes`]: answer 431.
    #[error("request head too large")]
    TooLarge,
    /// More than [`MAX_HEADERS`] headers: answer 431.
    #[error("too many headers")]
    TooManyHeaders,
    /// Not an HTTP/1.x request head: answer 400.
    #[error("bad request")]
    Malformed,
    /// Not complete within [`HeadLimits::deadline`]: answer 408.
    #[error("request timeout")]
    TimedOut,
}

impl HeadError {
    /// The HTTP status that answers this refusal.
    pub fn status(self) -> u16 {
        match self {
            HeadError::TooLarge | HeadError::TooManyHeaders => 431,
            HeadError::Malformed => 400,
            HeadError::TimedOut => 408,
        }
    }
}

/// The reason phrase of each status the engine's HTTP servers answer with (`""` for others).
pub fn reason(status: u16) -> &'static str {
    match status {
        101 => "Switching Protocols",
        200 => "OK",
        204 => "No Content",
        303 => "See Other",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "",
    }
}

/// A complete request head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Head {
    method: String,
    target: String,
    /// Names as sent; looked up without regard to case.
    headers: Vec<(String, Vec<u8>)>,
    /// Bytes read past the head's end: the start of what follows it on the connection (a
    /// WebSocket's first frame, say), which belongs to whoever reads the connection next.
    rest: Vec<u8>,
}

impl Head {
    /// The method (`GET`, `POST`, …).
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The request target as sent, query included (`/metrics?x=1`).
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The first header called `name` (any case), as sent.
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }

    /// The bytes read past the head's end.
    pub fn rest(&self) -> &[u8] {
        &self.rest
    }
}

/// Parses `bytes` as the start of a request: `Ok(None)` while the head is incomplete.
///
/// # Errors
///
/// [`HeadError::TooManyHeaders`] or [`HeadError::Malformed`]; size and time are the
/// reader's business.
pub fn parse(bytes: &[u8]) -> Result<Option<Head>, HeadError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    let end = match request.parse(bytes) {
        Ok(httparse::Status::Partial) => return Ok(None),
        Ok(httparse::Status::Complete(end)) => end,
        Err(httparse::Error::TooManyHeaders) => return Err(HeadError::TooManyHeaders),
        Err(_) => return Err(HeadError::Malformed),
    };
    Ok(Some(Head {
        method: request.method.unwrap_or("").to_owned(),
        target: request.path.unwrap_or("").to_owned(),
        headers: request
            .headers
            .iter()
            .map(|h| (h.name.to_owned(), h.value.to_vec()))
            .collect(),
        rest: bytes[end..].to_vec(),
    }))
}

/// Where a head stands after a read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Progress {
    /// Not complete, and the stream has nothing more now (`WouldBlock`): read again later.
    Pending,
    /// Complete.
    Complete(Head),
    /// Refused: answer [`HeadError::status`] and close.
    Refused(HeadError),
    /// The peer closed or the connection failed: close without an answer.
    Gone,
}

/// A request head being read: the bytes so far, the limit, the deadline.
#[derive(Debug)]
pub struct HeadReader {
    /// Never longer than `max_bytes`.
    buf: Vec<u8>,
    max_bytes: usize,
    deadline: Instant,
}

impl HeadReader {
    /// A reader whose deadline runs from `now`.
    pub fn new(limits: HeadLimits, now: Instant) -> Self {
        HeadReader {
            buf: Vec::new(),
            max_bytes: limits.max_bytes,
            deadline: now + limits.deadline,
        }
    }

    /// Time left before the deadline, as of `now`.
    pub fn time_left(&self, now: Instant) -> Duration {
        self.deadline.saturating_duration_since(now)
    }

    /// Reads what `stream` has until the head is complete, a limit is hit, or the stream
    /// would block. Never reads more than `max_bytes` in all, so the bytes after a
    /// complete head that were not read stay in the stream.
    pub fn read_from(&mut self, stream: &mut impl Read, now: Instant) -> Progress {
        if self.time_left(now).is_zero() {
            return Progress::Refused(HeadError::TimedOut);
        }
        let mut chunk = [0u8; 4096];
        loop {
            let room = self.max_bytes - self.buf.len();
            if room == 0 {
                // Full and still incomplete (a complete head returned below).
                return Progress::Refused(HeadError::TooLarge);
            }
            let want = room.min(chunk.len());
            match stream.read(&mut chunk[..want]) {
                Ok(0) => return Progress::Gone,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Progress::Pending,
                Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                    return Progress::Refused(HeadError::TimedOut)
                }
                Err(_) => return Progress::Gone,
            }
            match parse(&self.buf) {
                Ok(Some(head)) => return Progress::Complete(head),
                Ok(None) => {}
                Err(e) => return Progress::Refused(e),
            }
        }
    }
}

/// Reads one head from a blocking `stream`: each read waits at most `read_timeout` (and
/// never past the deadline), and a read that times out is [`HeadError::TimedOut`]. Leaves
/// the stream's read timeout set.
pub fn read_blocking(
    stream: &mut TcpStream,
    limits: HeadLimits,
    read_timeout: Duration,
) -> Progress {
    let mut reader = HeadReader::new(limits, Instant::now());
    let mut timed = Timed {
        stream,
        deadline: reader.deadline,
        read_timeout,
    };
    match reader.read_from(&mut timed, Instant::now()) {
        // A blocking read that returns WouldBlock timed out (Linux says EAGAIN).
        Progress::Pending => Progress::Refused(HeadError::TimedOut),
        other => other,
    }
}

/// A blocking stream whose every read waits no longer than the time left.
struct Timed<'s> {
    stream: &'s mut TcpStream,
    deadline: Instant,
    read_timeout: Duration,
}

impl Read for Timed<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        if self
            .stream
            .set_read_timeout(Some(left.min(self.read_timeout)))
            .is_err()
        {
            // The socket is gone: as a failed read.
            return Err(io::ErrorKind::NotConnected.into());
        }
        self.stream.read(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: HeadLimits = HeadLimits {
        max_bytes: 64,
        deadline: Duration::from_secs(2),
    };

    /// A stream that hands out its chunks one read at a time, then would block.
    struct Chunks(Vec<&'static [u8]>);

    impl Read for Chunks {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.0.is_empty() {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let chunk = self.0[0];
            let n = chunk.len().min(buf.len());
            buf[..n].copy_from_slice(&chunk[..n]);
            if n == chunk.len() {
                self.0.remove(0);
            } else {
                self.0[0] = &chunk[n..];
            }
            Ok(n)
        }
    }

    #[test]
    fn a_head_in_pieces_completes_and_keeps_what_follows_it() {
        let now = Instant::now();
        let mut reader = HeadReader::new(LIMITS, now);
        let mut stream = Chunks(vec![b"GET /ws HT", b"TP/1.1\r\nUpgrade: websocket\r\n"]);
        assert_eq!(reader.read_from(&mut stream, now), Progress::Pending);
        let mut stream = Chunks(vec![b"\r\n\x81\x00"]);
        let Progress::Complete(head) = reader.read_from(&mut stream, now) else {
            panic!("complete");
        };
        assert_eq!((head.method(), head.target()), ("GET", "/ws"));
        assert_eq!(head.header("UPGRADE"), Some(&b"websocket"[..]));
        assert_eq!(head.header("host"), None);
        assert_eq!(head.rest(), b"\x81\x00");
    }

    #[test]
    fn each_limit_refuses_with_its_status() {
        let now = Instant::now();
        // Exactly 64 bytes of complete head fits; one more header byte does not.
        let head = |value_len: usize| {
            format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(value_len)).into_bytes()
        };
        let fits = head(64 - 23);
        assert_eq!(fits.len(), 64);
        let mut reader = HeadReader::new(LIMITS, now);
        assert!(matches!(
            reader.read_from(&mut fits.as_slice(), now),
            Progress::Complete(_)
        ));
        let mut reader = HeadReader::new(LIMITS, now);
        assert_eq!(
            reader.read_from(&mut head(64 - 22).as_slice(), now),
            Progress::Refused(HeadError::TooLarge)
        );
        let mut reader = HeadReader::new(LIMITS, now);
        assert_eq!(
            reader.read_from(&mut Chunks(vec![b"\x00\x01garbage\r\n\r\n"]), now),
            Progress::Refused(HeadError::Malformed)
        );
        let many = "GET / HTTP/1.1\r\n".to_owned() + &"a: b\r\n".repeat(MAX_HEADERS + 1) + "\r\n";
        assert_eq!(parse(many.as_bytes()), Err(HeadError::TooManyHeaders));
        // The deadline, by the clock handed in: no waiting.
        let mut reader = HeadReader::new(LIMITS, now);
        assert_eq!(
            reader.read_from(&mut Chunks(vec![b"GET / HT"]), now),
            Progress::Pending
        );
        assert_eq!(
            reader.read_from(&mut Chunks(vec![]), now + LIMITS.deadline),
            Progress::Refused(HeadError::TimedOut)
        );
        assert_eq!(
            [431, 431, 400, 408],
            [
                HeadError::TooLarge,
                HeadError::TooManyHeaders,
                HeadError::Malformed,
                HeadError::TimedOut
            ]
            .map(HeadError::status)
        );
    }

    #[test]
    fn a_peer_that_closes_is_gone() {
        let now = Instant::now();
        let mut reader = HeadReader::new(LIMITS, now);
        let mut closed: &[u8] = b"GET / HTTP/1.1\r\n";
        assert_eq!(reader.read_from(&mut closed, now), Progress::Gone);
    }
}
