//! Logging clients in: the version and account checks, the storm defences' say, and, when
//! the server has accounts, the secret's verification off the loop, the failed-login delay,
//! the account's session limit and what it is entitled to; the accounts file's reloads.
//!
//! A failed verification (unknown account or wrong secret) is answered `J` reason `A` at
//! the login's arrival plus `serve.login_failure_delay_ms` (or when the verdict comes, if
//! later): the answer's timing does not tell which failed, and a guesser gets one try a
//! delay per connection, with the accept and login rates of the storm defences over that.
//! Requests a client sends after its login, before the answer, wait unread until the
//! verdict, then are served in order.
#![forbid(unsafe_code)]

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::Server;
use crate::accounts::verifier::{AccountsSource, Login, Reload, Verifier};
use crate::accounts::{AccountTable, Depth, Entitlement};
use crate::admission::Verdict;
use crate::audit::{AuditEvent, AuditRecord, Via};
use crate::connection::{Connection, Phase};
use crate::protocol::{
    account_is_valid, Reason, Secret, ServerMessage, ACCOUNT_LEN, PROTOCOL_VERSION,
    PROTOCOL_VERSION_1,
};

/// The accounts a server requires.
#[derive(Clone, Debug)]
pub struct AccountsConfig {
    /// The accounts file, loaded.
    pub table: Arc<AccountTable>,
    /// Where it came from, and how its changes are picked up.
    pub source: AccountsSource,
    /// A failed login is answered this long after it arrived.
    pub failure_delay: Duration,
}

/// The server's side of the accounts.
pub(super) struct Logins {
    pub(super) table: Arc<AccountTable>,
    verifier: Verifier,
    failure_delay_ns: u64,
    reloads: Vec<Reload>,
}

impl Logins {
    pub(super) fn start(config: AccountsConfig) -> std::io::Result<Logins> {
        Ok(Logins {
            verifier: Verifier::start(Arc::clone(&config.table), config.source)?,
            table: config.table,
            failure_delay_ns: config.failure_delay.as_nanos() as u64,
            reloads: Vec::with_capacity(4),
        })
    }
}

impl Server {
    /// Records `event` in the audit trail, if there is one.
    pub(super) fn audit(
        &self,
        event: AuditEvent,
        account: [u8; ACCOUNT_LEN],
        peer: Option<std::net::SocketAddr>,
    ) {
        if let Some(audit) = &self.audit {
            audit.record(AuditRecord {
                at: SystemTime::now(),
                via: Via::Serve,
                event,
                account,
                peer,
            });
        }
    }

    /// Refuses the login on `slot` with `reason` (`J`, then the close), counted and
    /// audited.
    fn refuse_login(&mut self, slot: usize, reason: Reason, retry_after_ms: u32, now: u64) {
        let grace = self.grace_deadline(now);
        let Some(conn) = self.clients[slot].as_mut() else {
            return;
        };
        let (account, peer) = (conn.named, conn.peer);
        conn.close_with(
            &ServerMessage::LoginRejected {
                reason,
                retry_after_ms,
            },
            now,
            grace,
        );
        self.counters.add_rejected(1);
        self.audit(AuditEvent::LoginRefused(reason), account, Some(peer));
    }

    pub(super) fn login(
        &mut self,
        slot: usize,
        version: u16,
        account: [u8; ACCOUNT_LEN],
        secret: &Secret,
        arrived: u64,
    ) {
        let Some(conn) = self.clients[slot].as_mut() else {
            return;
        };
        conn.named = account;
        conn.login_ns = arrived;
        let peer = conn.peer;
        if version != PROTOCOL_VERSION && version != PROTOCOL_VERSION_1 {
            self.refuse_login(slot, Reason::BadVersion, 0, arrived);
            return;
        }
        if self.logins.is_some() && version == PROTOCOL_VERSION_1 {
            // Accounts need a secret, which version 1 cannot carry; retry-after 0, which a
            // version-1 client reads as "do not retry".
            self.counters.add_logins_wrong_version(1);
            self.refuse_login(slot, Reason::BadVersion, 0, arrived);
            return;
        }
        if !account_is_valid(&account) {
            // Not an account the protocol defines: refused for good, before admission
            // keys anything on it.
            self.refuse_login(slot, Reason::ProtocolError, 0, arrived);
            return;
        }
        if let Verdict::Reject { retry_after_ms } = self.admission.on_login(peer, &account, arrived)
        {
            self.refuse_login(slot, Reason::Busy, retry_after_ms, arrived);
            return;
        }
        let Some(logins) = self.logins.as_ref() else {
            self.accept_login(slot, version, None, arrived);
            return;
        };
        let conn = self.clients[slot].as_mut().expect("invariant: still here");
        let queued = logins.verifier.submit(Login {
            ticket: conn.ticket,
            account,
            secret: *secret,
        });
        if queued {
            conn.phase = Phase::Verifying;
        } else {
            self.counters.add_logins_verifier_busy(1);
            let retry_after_ms = self.jitter(self.config.busy_retry_after_ms);
            self.refuse_login(slot, Reason::Busy, retry_after_ms, arrived);
        }
    }

    /// Logs the client in: `A`, then its requests are served.
    fn accept_login(
        &mut self,
        slot: usize,
        version: u16,
        entitlement: Option<&Entitlement>,
        now: u64,
    ) {
        let heartbeat_ms = self.config.heartbeat_ms;
        let max_symbols = self.config.max_symbols;
        let Some(conn) = self.clients[slot].as_mut() else {
            return;
        };
        conn.phase = Phase::Streaming;
        if let Some(entitlement) = entitlement {
            conn.account = Some(conn.named);
            hold_to(conn, entitlement, max_symbols);
        }
        conn.push_control(
            &ServerMessage::LoginAccepted {
                version,
                heartbeat_ms,
            },
            now,
        );
        let (account, peer) = (conn.named, conn.peer);
        self.counters.add_accepted(1);
        self.audit(AuditEvent::LoginAccepted, account, Some(peer));
    }

    /// Applies the verifier's verdicts: a genuine login within its account's session limit
    /// is accepted (and what it sent after the login is served), a failed one is answered
    /// at its delay.
    pub(super) fn take_verdicts(&mut self, now: u64) {
        loop {
            let Some(verdict) = self.logins.as_ref().and_then(|l| l.verifier.verdict()) else {
                return;
            };
            let Some(slot) = self.clients.iter().position(|c| {
                c.as_ref()
                    .is_some_and(|c| c.ticket == verdict.ticket && c.phase == Phase::Verifying)
            }) else {
                continue; // the connection went meanwhile
            };
            let logins = self
                .logins
                .as_ref()
                .expect("invariant: verdicts come from it");
            let conn = self.clients[slot].as_mut().expect("invariant: found");
            let account = conn.named;
            // The account may have gone from the file since the verifier looked.
            let table = Arc::clone(&logins.table);
            let entitlement = table
                .get(&account)
                .filter(|_| verdict.genuine)
                .map(|a| &a.entitlement);
            let Some(entitlement) = entitlement else {
                conn.refuse_at_ns = Some(conn.login_ns + logins.failure_delay_ns);
                continue;
            };
            let sessions = self
                .clients
                .iter()
                .flatten()
                .filter(|c| c.account == Some(account) && c.phase == Phase::Streaming)
                .count();
            if sessions >= entitlement.max_sessions {
                self.counters.add_logins_session_limit(1);
                let retry_after_ms = self.jitter(self.config.busy_retry_after_ms);
                self.refuse_login(slot, Reason::SessionLimit, retry_after_ms, now);
                continue;
            }
            self.accept_login(slot, PROTOCOL_VERSION, Some(entitlement), now);
            // What the client sent after its login waited for this.
            self.serve_readable(slot, now);
        }
    }

    /// Answers the failed logins whose delay is over.
    pub(super) fn refuse_due(&mut self, slot: usize, now: u64) {
        let due = self.clients[slot]
            .as_ref()
            .and_then(|c| c.refuse_at_ns)
            .is_some_and(|at| now >= at);
        if due {
            if let Some(conn) = self.clients[slot].as_mut() {
                conn.refuse_at_ns = None;
            }
            self.counters.add_logins_not_authorised(1);
            self.refuse_login(slot, Reason::NotAuthorised, 0, now);
        }
    }

    /// Puts a reloaded accounts file in effect: an account gone is cut (`C` reason `W`),
    /// a subscription no longer entitled is taken away (`E` reason `W`, request id 0), and
    /// the depth and limits apply from now.
    pub(super) fn apply_reloads(&mut self, now: u64) {
        let Some(logins) = self.logins.as_mut() else {
            return;
        };
        logins.verifier.reloads(&mut logins.reloads);
        if logins.reloads.is_empty() {
            return;
        }
        let reloads = std::mem::take(&mut logins.reloads);
        for reload in &reloads {
            match reload {
                Reload::Loaded(table) => {
                    self.counters.add_accounts_reloaded(1);
                    self.audit(
                        AuditEvent::AccountsReloaded(table.accounts().len()),
                        [b' '; ACCOUNT_LEN],
                        None,
                    );
                    if let Some(logins) = self.logins.as_mut() {
                        logins.table = Arc::clone(table);
                    }
                    for slot in 0..self.clients.len() {
                        self.recheck(slot, table, now);
                    }
                }
                Reload::Failed(why) => {
                    self.counters.add_accounts_reload_failed(1);
                    eprintln!("ticklane: the accounts file was not reloaded: {why}");
                    self.audit(AuditEvent::AccountsReloadFailed, [b' '; ACCOUNT_LEN], None);
                }
            }
        }
        if let Some(logins) = self.logins.as_mut() {
            logins.reloads = reloads;
            logins.reloads.clear();
        }
    }

    /// Holds `slot`'s session to `table`'s entitlements.
    fn recheck(&mut self, slot: usize, table: &AccountTable, now: u64) {
        let grace = self.grace_deadline(now);
        let max_symbols = self.config.max_symbols;
        let Some(conn) = self.clients[slot].as_mut() else {
            return;
        };
        let Some(name) = conn.account.filter(|_| conn.phase == Phase::Streaming) else {
            return;
        };
        let Some(account) = table.get(&name) else {
            conn.cut(Reason::Withdrawn, now, grace);
            return;
        };
        let entitlement = &account.entitlement;
        hold_to(conn, entitlement, max_symbols);
        let peer = conn.peer;
        let mut kept = 0;
        let mut i = 0;
        while i < conn.subs.len() {
            let sub = conn.subs[i];
            if entitlement.allows(&sub.symbol) && kept < conn.max_subscriptions {
                kept += 1;
                i += 1;
                continue;
            }
            conn.subs.remove(i);
            if sub.counted {
                let n = &mut self.interest[usize::from(sub.locate)];
                *n = n.saturating_sub(1);
            }
            conn.push_sequenced(now, |seq| ServerMessage::NotEntitled {
                seq,
                request_id: 0,
                symbol: sub.symbol,
                reason: Reason::Withdrawn,
            });
            self.counters.add_entitlement_withdrawn(1);
            if let Some(audit) = &self.audit {
                audit.record(AuditRecord {
                    at: SystemTime::now(),
                    via: Via::Serve,
                    event: AuditEvent::EntitlementWithdrawn { symbol: sub.symbol },
                    account: name,
                    peer: Some(peer),
                });
            }
        }
    }

    /// Whether the client on `slot` may subscribe to `symbol` now; if not, it is told
    /// (`E`), counted and audited. Always when the server has no accounts.
    pub(super) fn entitled(
        &mut self,
        slot: usize,
        request_id: u32,
        symbol: [u8; 8],
        now: u64,
    ) -> bool {
        let Some(logins) = self.logins.as_ref() else {
            return true;
        };
        let Some(conn) = self.clients[slot].as_mut() else {
            return false;
        };
        let Some(name) = conn.account else {
            return false;
        };
        let allowed = logins
            .table
            .get(&name)
            .is_some_and(|a| a.entitlement.allows(&symbol));
        let reason = if !allowed {
            Reason::NotEntitled
        } else if conn.sub_index(&symbol).is_none() && conn.subs.len() >= conn.max_subscriptions {
            Reason::TooManySymbols
        } else {
            return true;
        };
        conn.push_sequenced(now, |seq| ServerMessage::NotEntitled {
            seq,
            request_id,
            symbol,
            reason,
        });
        let peer = conn.peer;
        self.counters.add_entitlement_refused(1);
        self.audit(
            AuditEvent::EntitlementRefused { symbol, reason },
            name,
            Some(peer),
        );
        false
    }

    /// Whether the client on `slot` may see `symbol` in the symbol list.
    pub(super) fn lists(
        logins: Option<&Logins>,
        account: Option<[u8; ACCOUNT_LEN]>,
        symbol: &[u8; 8],
    ) -> bool {
        match (logins, account) {
            (None, _) => true,
            (Some(logins), Some(name)) => logins
                .table
                .get(&name)
                .is_some_and(|a| a.entitlement.allows(symbol)),
            (Some(_), None) => false,
        }
    }
}

/// The depth and subscription limit of `entitlement` on `conn` (the server's own limit
/// still bounds the account's).
fn hold_to(conn: &mut Connection, entitlement: &Entitlement, max_symbols: usize) {
    conn.top_only = entitlement.depth == Depth::Top;
    conn.max_subscriptions = entitlement
        .max_subscriptions
        .map_or(max_symbols, |n| n.min(max_symbols));
}
