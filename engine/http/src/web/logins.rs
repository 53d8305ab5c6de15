//! Logging browsers in and out, as the subscriber server logs its clients in: the
//! password verified off the loop (the verifier's thread, from the same accounts file),
//! a failed login answered the failure delay after its form arrived whatever failed, the
//! account's session limit, the accounts file's reloads (a session whose account left it
//! ends; one whose symbols were withdrawn loses them at once, told why), and each
//! session's end at its length. Every login, refusal and logout is audited
//! (`"via":"web"`).
//!
//! A session is one login (one cookie): the tabs of one browser share it, and its
//! account's `max_sessions` counts the browser view's sessions alone (the subscriber
//! server counts its own).
#![forbid(unsafe_code)]

use std::time::Instant;

use super::form::parse_login_form;
use super::http_conns::{login_page, plain, see_other, HttpState};
use super::server::Server;
use super::sessions::{token_hex, Token};
use crate::web_counters::Counter;
use ticklane_serve::accounts::verifier::{Login, Reload};
use ticklane_serve::audit::AuditEvent;
use ticklane_serve::protocol::{account_is_valid, Reason, Secret, ACCOUNT_LEN};

impl Server {
    /// A login form has arrived on connection `i`: hand it to the verifier, or refuse it.
    pub(super) fn login_form(&mut self, i: usize, query: String, body: &[u8], now: Instant) {
        let Some(logins) = &mut self.guard.logins else {
            self.http[i].answer(plain(404));
            return;
        };
        let form = parse_login_form(body);
        let account = form.as_ref().and_then(|f| padded_account(&f.account));
        let secret = form.as_ref().and_then(|f| Secret::new(&f.password));
        let (Some(account), Some(secret)) = (account, secret) else {
            // Not a form this server can check: refused as a wrong password is, after the
            // same delay.
            let at = now + logins.failure_delay;
            self.refuse_login(i, [b' '; ACCOUNT_LEN], Reason::NotAuthorised, Some(at));
            return;
        };
        logins.next_ticket += 1;
        let ticket = logins.next_ticket;
        if !logins.verifier.submit(Login {
            ticket,
            account,
            secret,
        }) {
            self.refuse_login(i, account, Reason::Busy, None);
            return;
        }
        self.http[i].state = HttpState::Verifying {
            ticket,
            account,
            query,
            arrived: now,
        };
    }

    /// Refuses the login on connection `i` for `reason`: counted, audited, and answered
    /// with the login page and its message (at `at`, or now).
    fn refuse_login(
        &mut self,
        i: usize,
        account: [u8; ACCOUNT_LEN],
        reason: Reason,
        at: Option<Instant>,
    ) {
        let (counter, status, message) = match reason {
            Reason::SessionLimit => (
                Counter::logins_session_limit,
                403,
                "This account's sessions are all in use: log out elsewhere first.",
            ),
            Reason::Busy => (
                Counter::logins_busy,
                503,
                "The server is busy: try again in a moment.",
            ),
            _ => (
                Counter::logins_not_authorised,
                403,
                "Login failed: unknown account or wrong password.",
            ),
        };
        self.counters.bump(counter);
        let peer = self.http[i].peer();
        self.audit(AuditEvent::LoginRefused(reason), account, Some(peer));
        let answer = login_page(status, message);
        match at {
            Some(at) => self.http[i].answer_at(answer, at),
            None => self.http[i].answer(answer),
        }
    }

    /// Each turn: the verifier's verdicts, the accounts file's reloads, the sessions that
    /// reached their length.
    pub(super) fn serve_logins(&mut self, now: Instant) {
        let Some(logins) = &mut self.guard.logins else {
            return;
        };
        let mut verdicts = Vec::new();
        while let Some(verdict) = logins.verifier.verdict() {
            verdicts.push(verdict);
        }
        let mut reloads = Vec::new();
        logins.verifier.reloads(&mut reloads);
        for verdict in verdicts {
            self.verdict(verdict.ticket, verdict.genuine, now);
        }
        for reload in reloads {
            self.reload(reload);
        }
        let mut expired = Vec::new();
        if let Some(logins) = &mut self.guard.logins {
            logins.sessions.expire(now, |s| expired.push(s));
        }
        for session in expired {
            self.counters.bump(Counter::sessions_expired);
            let event = AuditEvent::SessionExpired {
                session: now - session.since,
            };
            self.audit(event, session.account, Some(session.peer));
            self.end_browsers_of(session.id, "session expired");
        }
        if let Some(logins) = &self.guard.logins {
            self.counters.set(Counter::sessions, logins.sessions.len());
        }
    }

    /// The verifier's word on the login with `ticket` (a connection since closed is
    /// forgotten).
    fn verdict(&mut self, ticket: u64, genuine: bool, now: Instant) {
        let Some(i) = self
            .http
            .iter()
            .position(|c| matches!(c.state, HttpState::Verifying { ticket: t, .. } if t == ticket))
        else {
            return;
        };
        let HttpState::Verifying {
            account,
            query,
            arrived,
            ..
        } = std::mem::replace(&mut self.http[i].state, HttpState::Head)
        else {
            return;
        };
        let Some(logins) = &mut self.guard.logins else {
            return;
        };
        let entitlement = logins
            .table
            .get(&account)
            .filter(|_| genuine)
            .map(|a| a.entitlement.clone());
        let Some(entitlement) = entitlement else {
            let at = arrived + logins.failure_delay;
            self.refuse_login(i, account, Reason::NotAuthorised, Some(at));
            return;
        };
        if logins.sessions.of_account(&account) >= entitlement.max_sessions {
            self.refuse_login(i, account, Reason::SessionLimit, None);
            return;
        }
        let mut token: Token = [0; super::sessions::TOKEN_BYTES];
        if !logins.sessions.has_room() || ticklane_serve::tls::random_bytes(&mut token).is_err() {
            self.refuse_login(i, account, Reason::Busy, None);
            return;
        }
        let peer = self.http[i].peer();
        let until = now + self.guard.session_length;
        logins
            .sessions
            .open(token, account, entitlement, peer, now, until);
        self.counters.bump(Counter::logins_accepted);
        self.audit(AuditEvent::LoginAccepted, account, Some(peer));
        let cookie = self.session_cookie(&token_hex(&token));
        let location = format!("/{query}");
        self.http[i].answer(see_other(&location, Some(&cookie)));
    }

    /// A change of the accounts file: the new table is in effect from now.
    fn reload(&mut self, reload: Reload) {
        let table = match reload {
            Reload::Failed(why) => {
                eprintln!("ticklane web: the accounts file changed but cannot be used: {why}");
                self.audit(AuditEvent::AccountsReloadFailed, [b' '; ACCOUNT_LEN], None);
                return;
            }
            Reload::Loaded(table) => table,
        };
        self.audit(
            AuditEvent::AccountsReloaded(table.accounts().len()),
            [b' '; ACCOUNT_LEN],
            None,
        );
        let Some(logins) = &mut self.guard.logins else {
            return;
        };
        logins.table = std::sync::Arc::clone(&table);
        let mut gone = Vec::new();
        logins
            .sessions
            .retain(|s| table.get(&s.account).is_some(), |s| gone.push(s));
        for session in logins.sessions.iter_mut() {
            if let Some(account) = table.get(&session.account) {
                session.entitlement = account.entitlement.clone();
            }
        }
        let now = Instant::now();
        for session in gone {
            self.counters.bump(Counter::sessions_withdrawn);
            let event = AuditEvent::Logout {
                reason: Some(Reason::Withdrawn),
                session: now - session.since,
            };
            self.audit(event, session.account, Some(session.peer));
            self.end_browsers_of(session.id, "account withdrawn");
        }
        for i in 0..self.browsers.len() {
            let entitlement = self.browsers[i].session.and_then(|id| {
                let logins = self.guard.logins.as_ref()?;
                Some(logins.sessions.get(id)?.entitlement.clone())
            });
            if let Some(entitlement) = entitlement {
                self.reentitle(i, entitlement);
            }
        }
    }

    /// Ends session `id` at the browser's asking: audited, its sockets closed.
    pub(super) fn logout(&mut self, id: u64) {
        let Some(session) = self
            .guard
            .logins
            .as_mut()
            .and_then(|logins| logins.sessions.close(id))
        else {
            return;
        };
        self.counters.bump(Counter::logouts);
        let event = AuditEvent::Logout {
            reason: None,
            session: session.since.elapsed(),
        };
        self.audit(event, session.account, Some(session.peer));
        self.end_browsers_of(id, "logged out");
    }
}

/// An account name as the accounts file keys it (space padded), if it is one.
fn padded_account(name: &[u8]) -> Option<[u8; ACCOUNT_LEN]> {
    if name.is_empty() || name.len() > ACCOUNT_LEN {
        return None;
    }
    let mut out = [b' '; ACCOUNT_LEN];
    out[..name.len()].copy_from_slice(name);
    account_is_valid(&out).then_some(out)
}
