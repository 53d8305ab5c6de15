//! The engine's HTTP interface, on loopback by default, on its own thread that is never
//! pinned (the pipeline pins only the reader and book threads it spawns; this one is spawned
//! by the unpinned main thread):
//!
//! - `GET /health`: the three-valued health with its reasons, as JSON; 503 only when
//!   Unhealthy or draining.
//! - `GET /metrics`: the Prometheus text exposition, built with `prometheus-client`.
//! - `POST /feeds/{name}/isolate` and `/close`: manual breaker commands, posted to every
//!   dependency of that feed; they need `Authorization: Bearer TOKEN`.
//!
//! The routing ([`route`]) is sans-I/O: a request's method, path and `Authorization` header
//! in, a [`Response`] out; [`AdminServer`] only moves bytes.
//!
//! `ticklane run --config FILE` serves it when the file has `[admin] listen = "ADDR"` or the
//! command line says `--admin ADDR` (which wins). Keep it on loopback: nothing outside the
//! host should reach it. Bounded: one connection served at a time (the rest wait in the
//! kernel's backlog), at most 8 KiB of request head, 500 ms per read, 2 s per request,
//! `Connection: close` after each answer. It says where it listens before the ready line:
//!
//! ```text
//! $ ticklane run --config line.toml
//! ticklane run: admin on http://127.0.0.1:26680 (/health, /metrics; admin calls need the token)
//! ticklane run: ready (line.toml; MoldUDP64 bound on 127.0.0.1:26601; Ctrl-C stops, drains and flushes)
//! ```
//!
//! # `GET /health`
//!
//! The state (`Starting`, `Healthy`, `Degraded`, `Unhealthy`), whether the process is
//! draining, and each raised condition with what it means, since when (wall clock, ns since
//! the Unix epoch) and how often it was raised; 200, or 503 only when Unhealthy or draining
//! (a Degraded engine still serves its last books, flagged). Which condition is which is
//! argued in [`ticklane_pipeline::health`].
//!
//! ```text
//! $ curl -i http://127.0.0.1:26680/health
//! HTTP/1.1 200 OK
//! Content-Type: application/json
//! Content-Length: 49
//! Connection: close
//!
//! {"state":"Healthy","draining":false,"reasons":[]}
//! ```
//!
//! A reason reads `{"condition":"line_stale","meaning":"the line is silent, disconnected or
//! reconnecting: books are flagged STALE","since_ns":1796035500072000000,"raised":1}`.
//!
//! # `GET /metrics`
//!
//! The Prometheus text format (0.0.4), checked by `promtool check metrics` in CI:
//!
//! | metric | type | what |
//! |---|---|---|
//! | `ticklane_health_state` | gauge | 0 Healthy, 1 Starting, 2 Degraded, 3 Unhealthy |
//! | `ticklane_draining` | gauge | 1 after SIGTERM |
//! | `ticklane_messages_total`, `ticklane_packets_total` | counter | messages pushed to the book thread; MoldUDP64 packets (heartbeats too) |
//! | `ticklane_gaps_detected_total`, `ticklane_gap_messages_recovered_total`, `ticklane_gaps_lost_total`, `ticklane_messages_lost_total`, `ticklane_duplicate_messages_total` | counter | gaps, the messages recovered into them, ranges and messages declared lost, duplicates |
//! | `ticklane_retransmission_requests_total`, `_first_requests_total`, `_retries_total`, `_continuations_total`, `_retries_refused_total`, `_timeouts_total`, `_limit_changes_total` | counter | retransmission requests (`ticklane_retransmission_` prefix): sent, first tries, retries, continuations (the rest of a gap whose last try a server answered in part: no retry budget, no backoff), retries the budget refused, unanswered, changes of the adaptive limit |
//! | `ticklane_retry_budget_left`, `ticklane_retransmission_limit`, `ticklane_retransmission_reply_timeout_seconds` | gauge | retries the budget still allows; the adaptive limit on requests in flight; the reply timeout from measured replies |
//! | `ticklane_reorder_store_packets`, `ticklane_reorder_store_capacity_packets`, `ticklane_reorder_store_packets_deferred_total` | gauge, gauge, counter | packets held behind a gap; what the store can hold (`feed.reorder_store_packets`); packets a full store let go, to be asked for again (never a loss) |
//! | `ticklane_reconnects_total` | counter | SoupBinTCP reconnects |
//! | `ticklane_snapshot_publications_total`, `ticklane_snapshot_publications_missed_total` | counter | states published into the snapshot; publications lost because it was full |
//! | `ticklane_publications_shed_total`, `_conflated_total`, `_expired_total`, `ticklane_overload_episodes_total`, `ticklane_overload_seconds_total`, `ticklane_subscriber_events_{delivered,conflated,expired}_total`, `ticklane_subscribers_cut_total` | counter | overload control ([`ticklane_pipeline::overload`]) |
//! | `ticklane_max_sojourn_seconds` | gauge | the longest wait of a message in the book thread's queue |
//! | `ticklane_book_latency_seconds{stat="p50"\|"p99"\|"p99.9"\|"max"}`, `ticklane_book_latency_samples_total` | gauge, counter | receive to applied by the book thread, over the run so far (the histogram the run summary prints), and the messages it covers; absent until the book thread applied something |
//! | `ticklane_dependency_breaker_state` | gauge | per dependency: 0 closed, 1 open, 2 half-open, 3 isolated |
//! | `ticklane_dependency_{breaker_transitions,calls,distinct_calls,successes,faults,refused}_total` | counter | per dependency: breaker changes; calls (first tries and retries); distinct request identities (for a retransmission server: distinct gap ranges); answered; infrastructure faults; refused by the breaker |
//! | `ticklane_dependency_call_multiplier`, `ticklane_dependency_success_ratio` | gauge | calls per distinct identity; successes per call (absent until there is a call) |
//! | `ticklane_tls_handshakes_total{server,result}` | counter | per server (`serve`, `web`): TLS handshakes `established`, `failed`, `timed_out` |
//! | `ticklane_logins_total{server,result}` | counter | logins `accepted`, `not_authorised` (unknown account or wrong secret: one count), `wrong_version` (serve: a version-1 login to a server with accounts), `session_limit`, `busy` (the verifier's queue was full) |
//! | `ticklane_entitlement_refusals_total{server}`, `ticklane_entitlement_withdrawals_total{server}`, `ticklane_accounts_reloads_total{server,result}` | counter | symbols refused (not entitled, past the limit); taken away by a reload; reloads `loaded` or `failed` |
//! | `ticklane_sessions{server}` | gauge | logged-in subscribers; logged-in browser sessions |
//! | `ticklane_web_requests_refused_total{reason}`, `ticklane_web_sessions_ended_total{reason}`, `ticklane_web_books_sent_total` | counter | browser view: refused for `no_session`, `unknown_session` (forged, expired, logged out), `cross_origin`, `over_limit`; sessions ended by `logout`, `expired`, `withdrawn`; book messages sent |
//! | `ticklane_audit_records_written_total`, `ticklane_audit_records_dropped_total` | counter | audit trail lines written; dropped because its queue was full |
//! | `ticklane_aeron_*` | counter, gauge | with `[aeron]`: the publication's records, conflation, back pressure, subscribers, refresh cycles and the media driver's NAKs and retransmits, from the stage's own hook (the series and their help are in the command's `aeron_publish.rs`); the publication's breaker is the dependency `{feed}.aeron` |
//!
//! The servers' families appear once each server runs, from their own live counters
//! (`server_metrics`); no account is ever a label (the audit trail names accounts).
//!
//! The reader threads copy their counters into a shared block at most once a millisecond,
//! never per message; the publisher once per batch; the book thread reads its latency
//! percentiles off its histogram at most every 100 ms and once at the end. They cover the
//! run so far, not a recent window: the last scrape agrees with the run summary, and no
//! second histogram is kept; the price is that a long run's p99 moves slowly
//! (`ticklane_max_sojourn_seconds` is the quicker tail signal). The label is `stat`, not
//! `quantile`: `promtool check metrics` refuses a `quantile` label outside a summary.
//!
//! **Telling a retry storm from real demand.** Per dependency, read three series together:
//! in a retry storm the same requests are asked again and again, so the call multiplier
//! rises well above 1, the success ratio falls, and distinct identities stay flat. Real
//! demand (more gaps because more packets are lost) raises distinct identities together
//! with the calls; the multiplier stays near 1. In PromQL:
//! `rate(ticklane_dependency_calls_total[1m]) / rate(ticklane_dependency_distinct_calls_total[1m])`.
//!
//! `bench/prometheus_scrape.sh [ADDR]` starts a real Prometheus server that scrapes a running
//! engine every second and reads `ticklane_messages_total` back through its query API.
//!
//! # `POST /feeds/{name}/isolate` and `/close`
//!
//! A manual command to the circuit breaker of every dependency of the feed `{name}` (its
//! line, its retransmission server, and an Aeron publication of its books; the thread that owns each breaker takes it, once per
//! poll loop). An isolated MoldUDP64 line ignores its packets (counted) and flags its books
//! `STALE` until closed, what it missed then being a gap like any other; an isolated
//! SoupBinTCP line disconnects and does not reconnect until closed; an isolated
//! retransmission server is not asked. They need `Authorization: Bearer TOKEN`:
//!
//! | request | status |
//! |---|---|
//! | no token configured (neither `admin.token` nor `TICKLANE_ADMIN_TOKEN`) | 503: admin calls are off |
//! | no `Authorization` header | 401 (with `WWW-Authenticate: Bearer`) |
//! | a header that is not `Bearer` and the token | 403 |
//! | the right token, unknown feed | 404 (checked after the token, so names are not told to strangers) |
//! | the right token, known feed | 200, and the command is posted |
//!
//! ```text
//! $ curl -s -X POST -H "Authorization: Bearer $TOKEN" http://127.0.0.1:26680/feeds/nasdaq/isolate
//! {"command":"isolate","dependencies":["nasdaq","nasdaq.retransmission"],"feed":"nasdaq"}
//! ```
//!
//! Token rules: `TICKLANE_ADMIN_TOKEN` in the environment wins over `admin.token` in the
//! file, so that the secret can stay out of files that are checked in and be rotated without
//! editing them. A token, from either, is 16 to 256 printable ASCII characters (a variable
//! that breaks the rule stops `run` with exit 2 naming `TICKLANE_ADMIN_TOKEN`; an empty one
//! counts as unset). It is compared in constant time (`subtle`) and never printed: its
//! `Debug` and `Display` say `<redacted>`, a refused value is shown as `"<redacted>"` in the
//! configuration error, and each admin call is logged to stderr with its peer, path and
//! status only (`ticklane admin: 127.0.0.1:46986 POST /feeds/nasdaq/isolate -> 200`).

mod health_json;
mod http_server;
mod metrics;
mod routes;
mod server_metrics;

pub use health_json::health_json;
pub use http_server::{AdminServer, ServerLimits};
pub use metrics::{metrics_registry, render_metrics, METRICS_CONTENT_TYPE};
pub use routes::{route, Response};
pub use server_metrics::{ServerCounters, StageMetrics, StageSeries, StageValue};

use std::sync::Arc;

use crate::admin_token::AdminToken;
use ticklane_pipeline::dependency::Dependency;
use ticklane_pipeline::health::Health;
use ticklane_pipeline::overload::OverloadCounters;
use ticklane_pipeline::{LatencyGauges, LineCounters};

/// What the server reads: the process's health and, per feed, its shared handles.
#[derive(Debug)]
pub struct AdminState {
    /// The process's health.
    pub health: Arc<Health>,
    /// Every feed the process runs.
    pub feeds: Vec<FeedHandles>,
    /// The admin calls' token (`None`: admin calls are refused with 503).
    pub token: Option<AdminToken>,
    /// The subscriber server's and the browser view's counters, each set once it starts.
    pub servers: Arc<ServerCounters>,
}

/// One feed's shared handles, as the server sees them.
#[derive(Debug, Clone)]
pub struct FeedHandles {
    /// `feed.name`: the URL's `{name}` and the metrics' `feed` label.
    pub name: String,
    /// The line's reader counters.
    pub line: Arc<LineCounters>,
    /// The dependencies the feed calls (its line, its retransmission server).
    pub dependencies: Vec<Arc<Dependency>>,
    /// The publisher's overload counters (absent when nothing is published).
    pub overload: Option<Arc<OverloadCounters>>,
    /// The book thread's receive-to-applied latency percentiles (absent: none exported).
    pub latency: Option<Arc<LatencyGauges>>,
}

impl AdminState {
    /// The feed named `name`.
    pub fn feed(&self, name: &str) -> Option<&FeedHandles> {
        self.feeds.iter().find(|f| f.name == name)
    }
}
