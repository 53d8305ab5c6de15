//! The servers' share of `/metrics`: the subscriber server's and the browser view's TLS
//! handshakes, logins, entitlement refusals, sessions, and the audit trail's records,
//! read from their live counters at each scrape.
//!
//! Labels are bounded enumerations: `server` (`serve`, `web`), `result` and `reason`.
//! Never an account or a symbol: a label per account would make a series per account on
//! counters the login path bumps; the audit trail is where each account's sessions are.
//!
//! The servers start after the admin server (which says Starting meanwhile), so each
//! registers its counters here when it is up ([`ServerCounters`]); a server that is not
//! running has no series.

use std::fmt;
use std::sync::{Arc, OnceLock};

use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::gauge::ConstGauge;

use super::metrics::{family, Labels, TextCounter};
use crate::web_counters::{WebCounters, WebCounts};
use ticklane_serve::audit::AuditLog;
use ticklane_serve::{ServeCounters, ServeCounts};

/// One series a stage started beside the line reports (the Aeron publisher), read at each
/// scrape: a name under the `ticklane_` prefix, its help, and its value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StageSeries {
    /// The name, without the `ticklane_` prefix (a counter's ends in `_total`, a time's in
    /// `_seconds`).
    pub name: &'static str,
    /// The help line.
    pub help: &'static str,
    /// The value now.
    pub value: StageValue,
}

/// What a [`StageSeries`] holds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StageValue {
    /// A count that only grows.
    Counter(u64),
    /// A level now.
    Gauge(i64),
    /// A time now, in seconds.
    Seconds(f64),
}

/// A stage whose series `/metrics` shows while it runs.
pub trait StageMetrics: Send + Sync + fmt::Debug {
    /// Its series now.
    fn series(&self) -> Vec<StageSeries>;
}

/// The servers' counters, registered as each server starts.
#[derive(Debug, Default)]
pub struct ServerCounters {
    /// The subscriber server's.
    pub serve: OnceLock<Arc<ServeCounters>>,
    /// The browser view's.
    pub web: OnceLock<Arc<WebCounters>>,
    /// The audit trail both write to.
    pub audit: OnceLock<Arc<AuditLog>>,
    /// A stage beside the line that reports its own series (the Aeron publisher).
    pub stage: OnceLock<Arc<dyn StageMetrics>>,
}

/// One series: its labels and its value.
type Sample = (Labels, u64);

fn labels(server: &str, pairs: &[(&'static str, &str)]) -> Labels {
    let mut out: Labels = vec![("server", server.to_owned())];
    out.extend(pairs.iter().map(|&(k, v)| (k, v.to_owned())));
    out
}

fn counters(samples: Vec<Sample>) -> Vec<(Labels, TextCounter)> {
    samples
        .into_iter()
        .map(|(l, v)| (l, TextCounter(v)))
        .collect()
}

/// The handshakes, logins, refusals and sessions of each server that runs.
pub(super) fn encode_servers(
    encoder: &mut DescriptorEncoder,
    servers: &ServerCounters,
) -> fmt::Result {
    let serve = servers.serve.get().map(|c| c.load());
    let web = servers.web.get().map(|c| c.load());
    let mut handshakes = Vec::new();
    let mut logins = Vec::new();
    let mut refusals = Vec::new();
    let mut withdrawn = Vec::new();
    let mut reloads = Vec::new();
    let mut sessions = Vec::new();
    if let Some(c) = &serve {
        serve_samples(
            c,
            [
                &mut handshakes,
                &mut logins,
                &mut refusals,
                &mut withdrawn,
                &mut reloads,
            ],
        );
        sessions.push((labels("serve", &[]), ConstGauge::new(c.clients as i64)));
    }
    if let Some(c) = &web {
        web_samples(
            c,
            [&mut handshakes, &mut logins, &mut refusals, &mut withdrawn],
        );
        sessions.push((labels("web", &[]), ConstGauge::new(c.sessions as i64)));
    }
    family(
        encoder,
        "tls_handshakes_total",
        "TLS handshakes by server and result (established, failed, timed_out).",
        None,
        counters(handshakes),
    )?;
    family(
        encoder,
        "logins_total",
        "Logins by server and result (accepted, not_authorised, wrong_version, \
         session_limit, busy).",
        None,
        counters(logins),
    )?;
    family(
        encoder,
        "entitlement_refusals_total",
        "Symbols asked for that the account may not see, or past its limit.",
        None,
        counters(refusals),
    )?;
    family(
        encoder,
        "entitlement_withdrawals_total",
        "Subscriptions taken away by a change of the accounts file.",
        None,
        counters(withdrawn),
    )?;
    family(
        encoder,
        "accounts_reloads_total",
        "Loads of a changed accounts file by result (loaded, failed).",
        None,
        counters(reloads),
    )?;
    family(
        encoder,
        "sessions",
        "Sessions now: logged-in subscribers, logged-in browsers.",
        None,
        sessions,
    )?;
    if let Some(c) = &web {
        encode_web(encoder, c)?;
    }
    if let Some(stage) = servers.stage.get() {
        for s in stage.series() {
            match s.value {
                StageValue::Counter(v) => {
                    family(
                        encoder,
                        s.name,
                        s.help,
                        None,
                        vec![(Vec::new(), TextCounter(v))],
                    )?;
                }
                StageValue::Gauge(v) => {
                    let value = ConstGauge::new(v);
                    family(encoder, s.name, s.help, None, vec![(Vec::new(), value)])?;
                }
                StageValue::Seconds(v) => {
                    let value = ConstGauge::new(v);
                    family(encoder, s.name, s.help, None, vec![(Vec::new(), value)])?;
                }
            }
        }
    }
    if let Some(audit) = servers.audit.get() {
        family(
            encoder,
            "audit_records_written_total",
            "Audit trail lines written.",
            None,
            vec![(Vec::new(), TextCounter(audit.written()))],
        )?;
        family(
            encoder,
            "audit_records_dropped_total",
            "Audit trail lines dropped because the writer's queue was full.",
            None,
            vec![(Vec::new(), TextCounter(audit.dropped()))],
        )?;
    }
    Ok(())
}

fn serve_samples(
    c: &ServeCounts,
    [handshakes, logins, refusals, withdrawn, reloads]: [&mut Vec<Sample>; 5],
) {
    let s = |pairs: &[(&'static str, &str)]| labels("serve", pairs);
    handshakes.extend([
        (s(&[("result", "established")]), c.tls_established),
        (s(&[("result", "failed")]), c.tls_failed),
        (s(&[("result", "timed_out")]), c.tls_timed_out),
    ]);
    logins.extend([
        (s(&[("result", "accepted")]), c.accepted),
        (s(&[("result", "not_authorised")]), c.logins_not_authorised),
        (s(&[("result", "wrong_version")]), c.logins_wrong_version),
        (s(&[("result", "session_limit")]), c.logins_session_limit),
        (s(&[("result", "busy")]), c.logins_verifier_busy),
    ]);
    refusals.push((s(&[]), c.entitlement_refused));
    withdrawn.push((s(&[]), c.entitlement_withdrawn));
    reloads.extend([
        (s(&[("result", "loaded")]), c.accounts_reloaded),
        (s(&[("result", "failed")]), c.accounts_reload_failed),
    ]);
}

fn web_samples(c: &WebCounts, [handshakes, logins, refusals, withdrawn]: [&mut Vec<Sample>; 4]) {
    let w = |pairs: &[(&'static str, &str)]| labels("web", pairs);
    handshakes.extend([
        (w(&[("result", "established")]), c.tls_established),
        (w(&[("result", "failed")]), c.tls_failed),
        (w(&[("result", "timed_out")]), c.tls_timed_out),
    ]);
    logins.extend([
        (w(&[("result", "accepted")]), c.logins_accepted),
        (w(&[("result", "not_authorised")]), c.logins_not_authorised),
        (w(&[("result", "session_limit")]), c.logins_session_limit),
        (w(&[("result", "busy")]), c.logins_busy),
    ]);
    refusals.push((w(&[]), c.entitlement_refused));
    withdrawn.push((w(&[]), c.entitlement_withdrawn));
}

/// The browser view's own: requests refused for want of a session, sessions ended.
fn encode_web(encoder: &mut DescriptorEncoder, c: &WebCounts) -> fmt::Result {
    let reason = |r: &str, v: u64| (vec![("reason", r.to_owned())], TextCounter(v));
    family(
        encoder,
        "web_requests_refused_total",
        "Browser view requests refused, by reason (no_session, unknown_session, \
         cross_origin, over_limit).",
        None,
        vec![
            reason("no_session", c.no_session),
            reason("unknown_session", c.unknown_session),
            reason("cross_origin", c.cross_origin),
            reason("over_limit", c.refused),
        ],
    )?;
    family(
        encoder,
        "web_sessions_ended_total",
        "Browser sessions ended, by reason (logout, expired, withdrawn).",
        None,
        vec![
            reason("logout", c.logouts),
            reason("expired", c.sessions_expired),
            reason("withdrawn", c.sessions_withdrawn),
        ],
    )?;
    family(
        encoder,
        "web_books_sent_total",
        "Book messages the browser view sent.",
        None,
        vec![(Vec::new(), TextCounter(c.books_sent))],
    )
}
