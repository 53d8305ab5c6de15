//! What a browser asked for, from its request head (sans-I/O): the page, the WebSocket, or
//! something this server refuses.
#![forbid(unsafe_code)]

use crate::http_head::Head;

/// The WebSocket's path.
pub const SOCKET_PATH: &str = "/ws";

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
    /// Anything else: answer with this status and close.
    Refuse(u16),
}

/// Classifies a complete request head (read by [`crate::http_head`], which also refuses
/// heads too large, too slow or malformed).
pub fn classify(head: &Head) -> Request {
    if head.method() != "GET" {
        return Request::Refuse(405);
    }
    // The query (`?symbols=…`) is the page's business, not the server's.
    let path = head.target().split('?').next().unwrap_or("");
    match path {
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
