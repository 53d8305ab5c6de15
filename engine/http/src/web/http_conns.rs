//! Connections before they are WebSockets: the TLS handshake (if any), the request head, a
//! login form's body, the wait for its verdict, and the answer, all within one deadline
//! from the accept ([`WebLimits::request_deadline`]) but the verdict's wait, which the
//! verifier's queue bounds.
//!
//! What each request gets, with accounts (without them every request is served as if its
//! session held, and `/login` is 404):
//!
//! | request | with a live session | without |
//! |---|---|---|
//! | `GET /` | the books' page | the login page (200) |
//! | `GET /ws` | the socket (from the page's own origin; another origin: 403) | 403 |
//! | `GET /session` | 204 | 403 |
//! | `POST /login` | (either) the form is checked: 303 to `/` with the cookie, or 403 with the login page after the failure delay, or 503 when the verifier is busy |
//! | `POST /logout` | the session ends; 303 to `/`, the cookie cleared | 303 to `/` |
#![forbid(unsafe_code)]

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::time::Instant;

use super::form::{content_length, same_origin, session_cookie, MAX_FORM, SESSION_COOKIE};
use super::request::{classify, Request};
use super::server::{Server, WebLimits, LOGIN_PAGE};
use super::sessions::parse_token;
use super::stream::{Handshake, WebStream};
use crate::http_head::{reason, Head, HeadError, HeadLimits, HeadReader, Progress};
use crate::web_counters::Counter;
use ticklane_serve::protocol::ACCOUNT_LEN;

/// A connection reading its request, or answering it.
pub(super) struct HttpConn {
    stream: WebStream,
    peer: SocketAddr,
    head: HeadReader,
    /// Accept plus the request deadline.
    deadline: Instant,
    pub(super) state: HttpState,
    /// Over the connection limit: its request is read (so that closing it does not reset
    /// the answer away), then answered 503 whatever it asked.
    refused: bool,
    /// Its handshake's end has been counted.
    tls_counted: bool,
}

/// Where a connection's request stands.
pub(super) enum HttpState {
    /// Reading the head.
    Head,
    /// Reading a login form's body: `want` bytes in all.
    Body {
        /// The query of the request's target (kept for the redirect after the login).
        query: String,
        want: usize,
        got: Vec<u8>,
    },
    /// A login with the verifier.
    Verifying {
        ticket: u64,
        account: [u8; ACCOUNT_LEN],
        query: String,
        /// When its form was complete.
        arrived: Instant,
    },
    /// An answer held back until `at` (a failed login's delay).
    Held { answer: Vec<u8>, at: Instant },
    /// The answer being written, and how much of it went out.
    Answer(Vec<u8>, usize),
}

/// A head that asked for the WebSocket.
pub(super) struct Upgrade {
    /// `Sec-WebSocket-Key`.
    pub(super) key: Vec<u8>,
    /// Bytes read past the head.
    pub(super) rest: Vec<u8>,
    /// The session the cookie names (with accounts).
    pub(super) session: Option<u64>,
}

enum HttpStep {
    Keep,
    Done,
    Upgrade(Upgrade),
}

impl HttpConn {
    pub(super) fn new(
        stream: WebStream,
        peer: SocketAddr,
        limits: &WebLimits,
        refused: bool,
        now: Instant,
    ) -> Self {
        let head_limits = HeadLimits {
            max_bytes: limits.max_request,
            deadline: limits.request_deadline,
        };
        HttpConn {
            stream,
            peer,
            head: HeadReader::new(head_limits, now),
            deadline: now + limits.request_deadline,
            state: HttpState::Head,
            refused,
            tls_counted: false,
        }
    }

    pub(super) fn peer(&self) -> SocketAddr {
        self.peer
    }

    pub(super) fn into_parts(self) -> (WebStream, SocketAddr) {
        (self.stream, self.peer)
    }

    /// Answers with `answer` now.
    pub(super) fn answer(&mut self, answer: Vec<u8>) {
        self.state = HttpState::Answer(answer, 0);
    }

    /// Answers with `answer` at `at`.
    pub(super) fn answer_at(&mut self, answer: Vec<u8>, at: Instant) {
        self.state = HttpState::Held { answer, at };
    }

    /// Whether the TLS handshake (if any) is complete.
    fn is_secure_or_plain(&self) -> bool {
        matches!(
            self.stream.handshake(),
            Handshake::None | Handshake::Established
        )
    }
}

impl Server {
    /// Reads heads and forms and writes answers; a head that asks for the socket becomes
    /// a browser.
    pub(super) fn serve_http(&mut self) {
        let mut i = 0;
        while i < self.http.len() {
            let now = Instant::now();
            let step = self.step_http(i, now);
            self.count_handshake(i, now, !matches!(step, HttpStep::Keep));
            match step {
                HttpStep::Keep => i += 1,
                HttpStep::Done => {
                    let mut conn = self.http.swap_remove(i);
                    conn.stream.shutdown(Shutdown::Write);
                }
                HttpStep::Upgrade(upgrade) => {
                    let conn = self.http.swap_remove(i);
                    self.upgrade(conn, &upgrade);
                }
            }
        }
    }

    /// Counts connection `i`'s TLS handshake once it ends: completed, failed, or (when the
    /// connection is `closing` without one) timed out or abandoned.
    fn count_handshake(&mut self, i: usize, now: Instant, closing: bool) {
        let conn = &mut self.http[i];
        if conn.tls_counted || !conn.stream.is_tls() {
            return;
        }
        let counter = match conn.stream.handshake() {
            Handshake::Established => Counter::tls_established,
            Handshake::Failed => Counter::tls_failed,
            Handshake::Pending if closing && now >= conn.deadline => Counter::tls_timed_out,
            Handshake::Pending if closing => Counter::tls_failed,
            Handshake::Pending | Handshake::None => return,
        };
        conn.tls_counted = true;
        self.counters.bump(counter);
    }

    fn step_http(&mut self, i: usize, now: Instant) -> HttpStep {
        let conn = &mut self.http[i];
        match &mut conn.state {
            HttpState::Answer(answer, sent) => {
                if *sent < answer.len() {
                    match write_some(&mut conn.stream, &answer[*sent..]) {
                        Ok(n) => *sent += n,
                        Err(_) => return HttpStep::Done,
                    }
                }
                if *sent < answer.len() {
                    return HttpStep::Keep;
                }
                // All taken: done once the socket has it (TLS may still hold ciphertext).
                return match conn.stream.flush() {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => HttpStep::Keep,
                    _ => HttpStep::Done,
                };
            }
            HttpState::Held { answer, at } => {
                if now >= *at {
                    conn.state = HttpState::Answer(std::mem::take(answer), 0);
                }
                return HttpStep::Keep;
            }
            // The verdict moves it on (`logins`).
            HttpState::Verifying { .. } => return HttpStep::Keep,
            HttpState::Body { query, want, got } => {
                if now >= conn.deadline {
                    conn.answer(plain(408));
                    return HttpStep::Keep;
                }
                let mut chunk = [0u8; MAX_FORM];
                loop {
                    let room = *want - got.len();
                    if room == 0 {
                        break;
                    }
                    match conn.stream.read(&mut chunk[..room.min(MAX_FORM)]) {
                        Ok(0) => return HttpStep::Done,
                        Ok(n) => got.extend_from_slice(&chunk[..n]),
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => return HttpStep::Keep,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(_) => return HttpStep::Done,
                    }
                }
                let (query, body) = (std::mem::take(query), std::mem::take(got));
                self.login_form(i, query, &body, now);
                return HttpStep::Keep;
            }
            HttpState::Head => {}
        }
        let head = match conn.head.read_from(&mut conn.stream, now) {
            Progress::Pending => return HttpStep::Keep,
            Progress::Gone => return HttpStep::Done,
            // A handshake that never completed: nothing can be said to the peer.
            Progress::Refused(_) if !conn.is_secure_or_plain() => return HttpStep::Done,
            Progress::Refused(e) => Err(e),
            Progress::Complete(head) => Ok(head),
        };
        let answer = match head {
            // Too slow or too large: said so even to a connection over the limit.
            Err(e @ (HeadError::TimedOut | HeadError::TooLarge)) => {
                http_answer(e.status(), "text/plain", format!("{e}\n").as_bytes())
            }
            _ if conn.refused => http_answer(503, "text/plain", b"too many browsers\n"),
            Err(e) => plain(e.status()),
            Ok(head) => return self.answer_head(i, &head, now),
        };
        self.http[i].answer(answer);
        HttpStep::Keep
    }

    /// What a complete head gets.
    fn answer_head(&mut self, i: usize, head: &Head, now: Instant) -> HttpStep {
        let request = classify(head);
        let session = self.session_of(head, now);
        let answer = match request {
            Request::Page => {
                self.counters.bump(Counter::pages);
                if session.is_ok() {
                    http_answer(200, "text/html; charset=utf-8", self.guard.page.as_bytes())
                } else {
                    login_page(200, "")
                }
            }
            Request::Socket { key } => {
                if self.guard.logins.is_some() && !same_origin(head) {
                    self.counters.bump(Counter::cross_origin);
                    plain(403)
                } else {
                    match session {
                        Ok(session) => {
                            return HttpStep::Upgrade(Upgrade {
                                key,
                                rest: head.rest().to_vec(),
                                session,
                            })
                        }
                        Err(counter) => {
                            self.counters.bump(counter);
                            plain(403)
                        }
                    }
                }
            }
            Request::Session => match session {
                Ok(_) => http_answer(204, "text/plain", b""),
                Err(counter) => {
                    self.counters.bump(counter);
                    plain(403)
                }
            },
            Request::Login if self.guard.logins.is_none() => plain(404),
            Request::Login => match content_length(head) {
                Err(()) => plain(400),
                Ok(None) => plain(411),
                Ok(Some(n)) if n > MAX_FORM => plain(413),
                Ok(Some(want)) => {
                    let query = query_of(head.target()).to_owned();
                    let mut got = head.rest().to_vec();
                    got.truncate(want);
                    self.http[i].state = HttpState::Body { query, want, got };
                    // Read now: the whole form usually came with the head.
                    return self.step_http(i, now);
                }
            },
            Request::Logout => {
                if let Ok(Some(id)) = session {
                    self.logout(id);
                }
                see_other("/", Some(&cleared_cookie()))
            }
            Request::Refuse(status) => plain(status),
        };
        self.http[i].answer(answer);
        HttpStep::Keep
    }

    /// The session a head's cookie names: `Ok(None)` without accounts (everything is
    /// open), `Ok(Some(id))` for a live session, or the counter of why there is none.
    fn session_of(&self, head: &Head, now: Instant) -> Result<Option<u64>, Counter> {
        let Some(logins) = &self.guard.logins else {
            return Ok(None);
        };
        let cookie = session_cookie(head).ok_or(Counter::no_session)?;
        let token = parse_token(cookie).ok_or(Counter::unknown_session)?;
        let session = logins
            .sessions
            .find(&token, now)
            .ok_or(Counter::unknown_session)?;
        Ok(Some(session.id))
    }

    /// The cookie that carries a new session's token.
    pub(super) fn session_cookie(&self, token_hex: &str) -> String {
        let secure = if self.guard.tls.is_some() {
            "; Secure"
        } else {
            ""
        };
        format!(
            "{SESSION_COOKIE}={token_hex}; Max-Age={}; Path=/; HttpOnly; SameSite=Strict{secure}",
            self.guard.session_length.as_secs()
        )
    }
}

/// The query of a request target, `?` included (`""` without one).
fn query_of(target: &str) -> &str {
    target.find('?').map_or("", |i| &target[i..])
}

/// The cookie that ends a session in the browser.
fn cleared_cookie() -> String {
    format!("{SESSION_COOKIE}=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict")
}

/// The login page with `message` (HTML, or empty) above the form.
pub(super) fn login_page(status: u16, message: &str) -> Vec<u8> {
    let message = if message.is_empty() {
        String::new()
    } else {
        format!("<p class=\"message\" id=\"message\">{message}</p>")
    };
    let page = LOGIN_PAGE.replace("<!--message-->", &message);
    http_answer(status, "text/html; charset=utf-8", page.as_bytes())
}

/// A `303 See Other` to `location` (a path this server chose, or the login's own query),
/// setting `cookie` if given.
pub(super) fn see_other(location: &str, cookie: Option<&str>) -> Vec<u8> {
    let cookie = cookie.map_or(String::new(), |c| format!("Set-Cookie: {c}\r\n"));
    format!(
        "HTTP/1.1 303 See Other\r\nLocation: {location}\r\n{cookie}Content-Length: 0\r\n\
         Cache-Control: no-store\r\nConnection: close\r\n\r\n"
    )
    .into_bytes()
}

/// A plain-text answer of `status` and its reason phrase.
pub(super) fn plain(status: u16) -> Vec<u8> {
    http_answer(
        status,
        "text/plain",
        format!("{}\n", reason(status)).as_bytes(),
    )
}

/// Writes what the non-blocking stream takes now.
pub(super) fn write_some(stream: &mut impl Write, bytes: &[u8]) -> io::Result<usize> {
    let mut sent = 0;
    while sent < bytes.len() {
        match stream.write(&bytes[sent..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => sent += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(sent)
}

/// A whole HTTP/1.1 answer that closes the connection.
pub(super) fn http_answer(status: u16, content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nConnection: close\r\n\r\n",
        reason(status),
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}
