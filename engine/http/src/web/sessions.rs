//! The browser view's logged-in sessions (sans-I/O): a token the browser holds in its
//! cookie, the account it proves, and when it ends.
//!
//! A token is 32 bytes from the secure random source TLS uses, sent as 64 hex digits. The
//! table finds a cookie's session by comparing its token with every live token in constant
//! time (at most [`MAX_SESSIONS`] of them), so neither a lookup's time nor a map's hashing
//! tells a guesser how close a forged cookie came. A session lasts a fixed time from its login (the
//! `[web] session_minutes` key), and ends earlier on logout or when its account leaves the
//! accounts file.
#![forbid(unsafe_code)]

use std::net::SocketAddr;
use std::time::Instant;

use subtle::ConstantTimeEq;

use ticklane_serve::accounts::Entitlement;
use ticklane_serve::protocol::ACCOUNT_LEN;

/// Most sessions at once; a login past it is refused until one ends.
pub const MAX_SESSIONS: usize = 1024;

/// A session token's bytes.
pub const TOKEN_BYTES: usize = 32;

/// A session token.
pub type Token = [u8; TOKEN_BYTES];

/// One logged-in browser.
#[derive(Clone, Debug)]
pub struct Session {
    /// Its unique number (browsers on its socket name it).
    pub id: u64,
    token: Token,
    /// The account (space padded).
    pub account: [u8; ACCOUNT_LEN],
    /// What the account may see, as of the last accounts file.
    pub entitlement: Entitlement,
    /// Where it logged in from.
    pub peer: SocketAddr,
    /// When it logged in.
    pub since: Instant,
    /// When it ends.
    pub until: Instant,
}

/// The live sessions.
#[derive(Debug, Default)]
pub struct Sessions {
    live: Vec<Session>,
    next_id: u64,
}

impl Sessions {
    /// No sessions.
    pub fn new() -> Self {
        Sessions::default()
    }

    /// The sessions live now.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// How many of `account`'s sessions are live.
    pub fn of_account(&self, account: &[u8; ACCOUNT_LEN]) -> usize {
        self.live.iter().filter(|s| s.account == *account).count()
    }

    /// Whether another session fits.
    pub fn has_room(&self) -> bool {
        self.live.len() < MAX_SESSIONS
    }

    /// Opens a session for `token` (which the caller drew at random); its number. The
    /// caller checked [`Sessions::has_room`].
    pub fn open(
        &mut self,
        token: Token,
        account: [u8; ACCOUNT_LEN],
        entitlement: Entitlement,
        peer: SocketAddr,
        since: Instant,
        until: Instant,
    ) -> u64 {
        self.next_id += 1;
        self.live.push(Session {
            id: self.next_id,
            token,
            account,
            entitlement,
            peer,
            since,
            until,
        });
        self.next_id
    }

    /// The live session a cookie's token names, compared with every token in constant
    /// time; `None` if it names none or has ended by `now`.
    pub fn find(&self, token: &Token, now: Instant) -> Option<&Session> {
        let mut found = None;
        for (i, s) in self.live.iter().enumerate() {
            if bool::from(s.token.ct_eq(token)) {
                found = Some(i);
            }
        }
        found
            .map(|i| &self.live[i])
            .filter(|session| now < session.until)
    }

    /// The session numbered `id`.
    pub fn get(&self, id: u64) -> Option<&Session> {
        self.live.iter().find(|s| s.id == id)
    }

    /// Ends session `id`; what it was.
    pub fn close(&mut self, id: u64) -> Option<Session> {
        let i = self.live.iter().position(|s| s.id == id)?;
        Some(self.live.swap_remove(i))
    }

    /// Ends the sessions whose time is up by `now`, handing each to `ended`.
    pub fn expire(&mut self, now: Instant, mut ended: impl FnMut(Session)) {
        let mut i = 0;
        while i < self.live.len() {
            if now >= self.live[i].until {
                ended(self.live.swap_remove(i));
            } else {
                i += 1;
            }
        }
    }

    /// Every live session, to update (a reloaded accounts file).
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Session> {
        self.live.iter_mut()
    }

    /// Ends the sessions `keep` says no to, handing each to `ended`.
    pub fn retain(
        &mut self,
        mut keep: impl FnMut(&Session) -> bool,
        mut ended: impl FnMut(Session),
    ) {
        let mut i = 0;
        while i < self.live.len() {
            if keep(&self.live[i]) {
                i += 1;
            } else {
                ended(self.live.swap_remove(i));
            }
        }
    }
}

/// A token as the cookie carries it: 64 lowercase hex digits.
pub fn token_hex(token: &Token) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(2 * TOKEN_BYTES);
    for b in token {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// The token 64 hex digits (either case) spell; `None` for anything else.
pub fn parse_token(hex: &[u8]) -> Option<Token> {
    if hex.len() != 2 * TOKEN_BYTES {
        return None;
    }
    let digit = |c: u8| char::from(c).to_digit(16);
    let mut token = [0u8; TOKEN_BYTES];
    for (out, pair) in token.iter_mut().zip(hex.chunks_exact(2)) {
        *out = (digit(pair[0])? * 16 + digit(pair[1])?) as u8;
    }
    Some(token)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use ticklane_serve::accounts::Depth;

    fn entitlement() -> Entitlement {
        Entitlement {
            symbols: Vec::new(),
            depth: Depth::Full,
            max_subscriptions: None,
            max_sessions: 2,
        }
    }

    fn account(name: &str) -> [u8; ACCOUNT_LEN] {
        let mut out = [b' '; ACCOUNT_LEN];
        out[..name.len()].copy_from_slice(name.as_bytes());
        out
    }

    #[test]
    fn a_token_finds_its_session_until_it_ends_and_no_other_token_does() {
        let now = Instant::now();
        let peer = "127.0.0.1:1".parse().unwrap();
        let mut sessions = Sessions::new();
        let token = [7u8; TOKEN_BYTES];
        let id = sessions.open(
            token,
            account("alice"),
            entitlement(),
            peer,
            now,
            now + Duration::from_secs(60),
        );
        assert_eq!(sessions.find(&token, now).map(|s| s.id), Some(id));
        let mut forged = token;
        forged[31] ^= 1;
        assert!(sessions.find(&forged, now).is_none());
        assert!(sessions
            .find(&token, now + Duration::from_secs(60))
            .is_none());
        assert_eq!(sessions.of_account(&account("alice")), 1);
        let mut ended = Vec::new();
        sessions.expire(now + Duration::from_secs(30), |s| ended.push(s.id));
        assert!(ended.is_empty());
        sessions.expire(now + Duration::from_secs(61), |s| ended.push(s.id));
        assert_eq!(ended, [id]);
        assert_eq!(sessions.len(), 0);
    }

    #[test]
    fn tokens_round_trip_through_hex_and_nothing_else_parses() {
        let token: Token = std::array::from_fn(|i| (i * 37) as u8);
        let hex = token_hex(&token);
        assert_eq!(hex.len(), 64);
        assert_eq!(parse_token(hex.as_bytes()), Some(token));
        assert_eq!(parse_token(hex.to_uppercase().as_bytes()), Some(token));
        assert_eq!(parse_token(&hex.as_bytes()[..63]), None);
        let mut bad = hex.into_bytes();
        bad[10] = b'g';
        assert_eq!(parse_token(&bad), None);
        assert_eq!(parse_token(b""), None);
    }
}
