//! The admin interface's bearer token: a secret that never prints (its `Debug` and
//! `Display` say `AdminToken(<redacted>)`), compared in constant time.
//!
//! Where it comes from: `TICKLANE_ADMIN_TOKEN` in the environment wins over `admin.token` in
//! the configuration file, so that a deployment can keep the secret out of a file checked
//! into version control, and rotate it without editing the file. Both are held to the same
//! rule (`RunConfig::with_environment` applies the variable: a value the file's key would
//! refuse is a configuration error naming the variable). With neither, admin calls are
//! refused (the server answers 503: the interface is not configured).

use core::fmt;

use subtle::ConstantTimeEq;

/// The environment variable that holds the token (it wins over `admin.token`).
pub const TOKEN_ENV: &str = "TICKLANE_ADMIN_TOKEN";

/// A bearer token for the admin calls.
///
/// # Examples
///
/// ```
/// use ticklane_http::admin_token::AdminToken;
///
/// let token = AdminToken::new("s3cret").expect("not empty");
/// assert!(token.matches(b"s3cret"));
/// assert!(!token.matches(b"s3cre"));
/// assert_eq!(format!("{token:?}"), "AdminToken(<redacted>)");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct AdminToken(String);

impl AdminToken {
    /// A token; `None` for an empty one (an empty secret would admit an empty header).
    pub fn new(secret: impl Into<String>) -> Option<Self> {
        let secret = secret.into();
        (!secret.is_empty()).then_some(AdminToken(secret))
    }

    /// Whether `offered` is this token, in time that depends on the lengths only, never on
    /// where the first differing byte is.
    pub fn matches(&self, offered: &[u8]) -> bool {
        self.0.as_bytes().ct_eq(offered).into()
    }
}

impl fmt::Debug for AdminToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AdminToken(<redacted>)")
    }
}

impl fmt::Display for AdminToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_bytes_match() {
        let t = AdminToken::new("abc123").expect("not empty");
        assert!(t.matches(b"abc123"));
        for wrong in [
            &b""[..],
            b"abc12",
            b"abc1234",
            b"ABC123",
            b"abc124",
            b"xbc123",
        ] {
            assert!(!t.matches(wrong), "{wrong:?}");
        }
    }

    #[test]
    fn an_empty_token_is_no_token() {
        assert_eq!(AdminToken::new(""), None);
    }

    #[test]
    fn the_secret_never_prints() {
        let t = AdminToken::new("hunter2").expect("not empty");
        let shown = format!("{t:?} {t} {:?}", Some(&t));
        assert!(!shown.contains("hunter2"), "{shown}");
    }
}
