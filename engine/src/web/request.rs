//! What a browser asked for, from the bytes of its request head (sans-I/O): the page, the
//! WebSocket, or something this server refuses.
#![forbid(unsafe_code)]

/// The WebSocket's path.
pub const SOCKET_PATH: &str = "/ws";

/// A request head, classified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// The head is not complete yet: read more.
    Partial,
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

/// Classifies the bytes read so far.
pub fn classify(head: &[u8]) -> Request {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut request = httparse::Request::new(&mut headers);
    match request.parse(head) {
        Ok(httparse::Status::Partial) => return Request::Partial,
        Ok(httparse::Status::Complete(_)) => {}
        Err(httparse::Error::TooManyHeaders) => return Request::Refuse(431),
        Err(_) => return Request::Refuse(400),
    }
    if request.method != Some("GET") {
        return Request::Refuse(405);
    }
    let header = |name: &str| {
        request
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value)
    };
    // The query (`?symbols=…`) is the page's business, not the server's.
    let path = request.path.unwrap_or("").split('?').next().unwrap_or("");
    match path {
        "/" | "/index.html" => Request::Page,
        SOCKET_PATH => {
            let upgrade = header("upgrade").is_some_and(|v| v.eq_ignore_ascii_case(b"websocket"));
            match (upgrade, header("sec-websocket-key")) {
                (true, Some(key)) if !key.is_empty() => Request::Socket { key: key.to_vec() },
                _ => Request::Refuse(400),
            }
        }
        _ => Request::Refuse(404),
    }
}

/// The reason phrase of the statuses this server answers with.
pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_the_socket_and_the_rest() {
        assert_eq!(
            classify(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
            Request::Page
        );
        assert_eq!(
            classify(b"GET /?symbols=AAPL HTTP/1.1\r\n\r\n"),
            Request::Page
        );
        assert_eq!(classify(b"GET / HTTP/1.1\r\nHost: x\r\n"), Request::Partial);
        // The key of RFC 6455's example handshake.
        let upgrade =
            b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: WebSocket\r\nConnection: Upgrade\r\n\
Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
        assert_eq!(
            classify(upgrade),
            Request::Socket {
                key: b"dGhlIHNhbXBsZSBub25jZQ==".to_vec()
            }
        );
        assert_eq!(classify(b"GET /ws HTTP/1.1\r\n\r\n"), Request::Refuse(400));
        assert_eq!(
            classify(b"GET /etc/passwd HTTP/1.1\r\n\r\n"),
            Request::Refuse(404)
        );
        assert_eq!(classify(b"POST / HTTP/1.1\r\n\r\n"), Request::Refuse(405));
        assert_eq!(classify(b"\x00\x01\r\n\r\n"), Request::Refuse(400));
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
