//! What a browser asked for, from its request head (sans-I/O): the page, the WebSocket, a
//! login or logout, whether its session holds, or something this server refuses. Whether
//! the browser's session lets it have what it asked for is the server's business.
#![forbid(unsafe_code)]

use crate::http_head::Head;

/// The WebSocket's path.
pub const SOCKET_PATH: &str = "/ws";

/// Where the login form posts.
pub const LOGIN_PATH: &str = "/login";

/// Where the page's logout button posts.
pub const LOGOUT_PATH: &str = "/logout";

/// What the page asks, when its socket closes, to learn whether its session still holds.
pub const SESSION_PATH: &str = "/session";

/// A request head, classified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// `GET /` (or `/index.html`): the page.
    Page,
    /// `GET /ws` with `Upgrade: websocket`: the key to answer the handshake with.
    Socket {
        /// `Sec-WebSocket-Key`, as sent.
        key: Vec<u8>,
    },
    /// `POST /login`: the login form's body follows the head.
    Login,
    /// `POST /logout`.
    Logout,
    /// `GET /session`: 204 while the browser's session holds, 403 once it does not.
    Session,
    /// Anything else: answer with this status and close.
    Refuse(u16),
}

/// Classifies a complete request head (read by [`crate::http_head`], which also refuses
/// heads too large, too slow or malformed).
pub fn classify(head: &Head) -> Request {
    // The query (`?symbols=…`) is the page's business, not the server's.
    let path = head.target().split('?').next().unwrap_or("");
    if head.method() == "POST" {
        return match path {
            LOGIN_PATH => Request::Login,
            LOGOUT_PATH => Request::Logout,
            _ => Request::Refuse(405),
        };
    }
    if head.method() != "GET" {
        return Request::Refuse(405);
    }
    match path {
        SESSION_PATH => Request::Session,
        "/" | "/index.html" => Request::Page,
        SOCKET_PATH => {
            let upgrade = head
                .header("upgrade")
                .is_some_and(|v| v.eq_ignore_ascii_case(b"websocket"));
            match (upgrade, head.header("sec-websocket-key")) {
                (true, Some(key)) if !key.is_empty() => Request::Socket { key: key.to_vec() },
                _ => Request::Refuse(400),
            }
        }
        _ => Request::Refuse(404),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classify_bytes(bytes: &[u8]) -> Request {
        let head = crate::http_head::parse(bytes)
            .expect("a well-formed head")
            .expect("a complete head");
        classify(&head)
    }

    #[test]
    fn the_page_the_socket_and_the_rest() {
        assert_eq!(
            classify_bytes(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
            Request::Page
        );
        assert_eq!(
            classify_bytes(b"GET /?symbols=AAPL HTTP/1.1\r\n\r\n"),
            Request::Page
        );
        // The key of RFC 6455's example handshake.
        let upgrade =
            b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: WebSocket\r\nConnection: Upgrade\r\n\
Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
        assert_eq!(
            classify_bytes(upgrade),
            Request::Socket {
                key: b"dGhlIHNhbXBsZSBub25jZQ==".to_vec()
            }
        );
        assert_eq!(
            classify_bytes(b"GET /ws HTTP/1.1\r\n\r\n"),
            Request::Refuse(400)
        );
        assert_eq!(
            classify_bytes(b"GET /etc/passwd HTTP/1.1\r\n\r\n"),
            Request::Refuse(404)
        );
        assert_eq!(
            classify_bytes(b"POST / HTTP/1.1\r\n\r\n"),
            Request::Refuse(405)
        );
        assert_eq!(
            classify_bytes(b"POST /login HTTP/1.1\r\n\r\n"),
            Request::Login
        );
        assert_eq!(
            classify_bytes(b"POST /logout HTTP/1.1\r\n\r\n"),
            Request::Logout
        );
        assert_eq!(
            classify_bytes(b"GET /session HTTP/1.1\r\n\r\n"),
            Request::Session
        );
        assert_eq!(
            classify_bytes(b"PUT /login HTTP/1.1\r\n\r\n"),
            Request::Refuse(405)
        );
    }

    #[test]
    fn the_handshake_answer_is_rfc_6455s() {
        // RFC 6455 section 1.3: this key's accept value.
        assert_eq!(
            tungstenite::handshake::derive_accept_key(b"dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }
}
