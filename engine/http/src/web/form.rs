//! What a login request carries (sans-I/O): the form's fields
//! (`application/x-www-form-urlencoded`), the session cookie, and whether a socket's
//! `Origin` is the page's own.
#![forbid(unsafe_code)]

use crate::http_head::Head;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "ticklane_session";

/// Most bytes of a login form's body.
pub const MAX_FORM: usize = 1024;

/// The login form's fields.
#[derive(Clone, PartialEq, Eq)]
pub struct LoginForm {
    /// `account`, decoded.
    pub account: Vec<u8>,
    /// `password`, decoded.
    pub password: Vec<u8>,
}

impl std::fmt::Debug for LoginForm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoginForm")
            .field("account", &String::from_utf8_lossy(&self.account))
            .field("password", &"<redacted>")
            .finish()
    }
}

/// The `account` and `password` fields of a urlencoded body (other fields are ignored);
/// `None` if either is missing or badly encoded.
pub fn parse_login_form(body: &[u8]) -> Option<LoginForm> {
    let mut account = None;
    let mut password = None;
    for pair in body.split(|&b| b == b'&') {
        let (name, value) = match pair.iter().position(|&b| b == b'=') {
            Some(i) => (&pair[..i], &pair[i + 1..]),
            None => (pair, &b""[..]),
        };
        match name {
            b"account" => account = Some(url_decode(value)?),
            b"password" => password = Some(url_decode(value)?),
            _ => {}
        }
    }
    Some(LoginForm {
        account: account?,
        password: password?,
    })
}

/// `+` as a space and `%XX` as its byte; `None` for a `%` not followed by two hex digits.
fn url_decode(text: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = text.get(i + 1..i + 3)?;
                let digit = |c: u8| char::from(c).to_digit(16);
                out.push((digit(hex[0])? * 16 + digit(hex[1])?) as u8);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    Some(out)
}

/// The value of the session cookie in the head's `Cookie` header, if any.
pub fn session_cookie(head: &Head) -> Option<&[u8]> {
    let cookies = head.header("cookie")?;
    cookies.split(|&b| b == b';').find_map(|pair| {
        let pair = pair.trim_ascii();
        let value = pair.strip_prefix(SESSION_COOKIE.as_bytes())?;
        value.strip_prefix(b"=")
    })
}

/// The body length a head announces: `Ok(None)` without `Content-Length`.
///
/// # Errors
///
/// A `Content-Length` that is not a number (answer 400).
pub fn content_length(head: &Head) -> Result<Option<usize>, ()> {
    match head.header("content-length") {
        None => Ok(None),
        Some(v) => std::str::from_utf8(v)
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .map(Some)
            .ok_or(()),
    }
}

/// Whether a request may come from the page itself: no `Origin` header (not a browser's
/// cross-origin request), or an `Origin` whose host and port are the `Host` the request was
/// sent to. A page of another site cannot open the view's socket in its visitor's name.
pub fn same_origin(head: &Head) -> bool {
    let Some(origin) = head.header("origin") else {
        return true;
    };
    let Some(host) = head.header("host") else {
        return false;
    };
    let origin_host = origin
        .strip_prefix(b"https://")
        .or_else(|| origin.strip_prefix(b"http://"));
    origin_host.is_some_and(|h| h.eq_ignore_ascii_case(host))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(bytes: &[u8]) -> Head {
        crate::http_head::parse(bytes)
            .expect("well formed")
            .expect("complete")
    }

    #[test]
    fn a_form_decodes_and_a_bad_one_is_none() {
        let form = parse_login_form(b"account=alice&password=p%40ss+word%21&x=1").unwrap();
        assert_eq!(form.account, b"alice");
        assert_eq!(form.password, b"p@ss word!");
        assert!(!format!("{form:?}").contains("p@ss"));
        assert_eq!(parse_login_form(b"account=alice"), None);
        assert_eq!(parse_login_form(b"account=alice&password=%4"), None);
        assert_eq!(parse_login_form(b"account=alice&password=%zz"), None);
        let empty = parse_login_form(b"account=&password=").unwrap();
        assert!(empty.account.is_empty() && empty.password.is_empty());
    }

    #[test]
    fn the_session_cookie_is_found_among_others() {
        let h = head(b"GET / HTTP/1.1\r\nCookie: a=1; ticklane_session=abc; b=2\r\n\r\n");
        assert_eq!(session_cookie(&h), Some(&b"abc"[..]));
        let h = head(b"GET / HTTP/1.1\r\nCookie: ticklane_sessionx=abc\r\n\r\n");
        assert_eq!(session_cookie(&h), None);
        assert_eq!(session_cookie(&head(b"GET / HTTP/1.1\r\n\r\n")), None);
    }

    #[test]
    fn only_the_pages_own_origin_is_the_same() {
        let ws = |origin: &str| {
            head(format!("GET /ws HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n{origin}\r\n").as_bytes())
        };
        assert!(same_origin(&ws("")));
        assert!(same_origin(&ws("Origin: https://127.0.0.1:8080\r\n")));
        assert!(same_origin(&ws("Origin: http://127.0.0.1:8080\r\n")));
        assert!(!same_origin(&ws("Origin: https://evil.example\r\n")));
        assert!(!same_origin(&ws("Origin: https://127.0.0.1:8081\r\n")));
        assert!(!same_origin(&ws("Origin: null\r\n")));
    }

    #[test]
    fn content_length_is_a_number_or_refused() {
        let h = head(b"POST /login HTTP/1.1\r\nContent-Length: 27\r\n\r\n");
        assert_eq!(content_length(&h), Ok(Some(27)));
        let h = head(b"POST /login HTTP/1.1\r\nContent-Length: x\r\n\r\n");
        assert_eq!(content_length(&h), Err(()));
        assert_eq!(content_length(&head(b"POST / HTTP/1.1\r\n\r\n")), Ok(None));
    }
}
