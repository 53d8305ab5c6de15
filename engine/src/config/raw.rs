//! The file's shape as TOML gives it, before any value is checked.
//!
//! Every key is read as any TOML value with its byte span, so the checks, not serde, decide
//! what a value means: a string where a number goes, a negative count or a NaN duration is
//! then refused with the key's full name, the rule and the key's own line. (An internally
//! tagged serde enum for `[feed]` buffers its table and loses the spans, which is why value
//! errors used to point at the `[feed]` line.) Unknown keys are still refused by serde, with
//! the parser's line and column.

use serde::Deserialize;
use toml::{Spanned, Value};

/// One key: absent, or a value with its span in the file.
pub type RawValue = Option<Spanned<Value>>;

/// The whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFile {
    /// `[engine]`.
    pub engine: Option<Spanned<RawEngine>>,
    /// `[snapshot]`.
    pub snapshot: Option<Spanned<RawSnapshot>>,
    /// `[feed]`.
    pub feed: Option<Spanned<RawFeed>>,
    /// `[admin]`.
    pub admin: Option<Spanned<RawAdmin>>,
    /// `[serve]`.
    pub serve: Option<Spanned<RawServe>>,
    /// `[web]`.
    pub web: Option<Spanned<RawWeb>>,
    /// `[aeron]`.
    pub aeron: Option<Spanned<RawAeron>>,
}

/// `[aeron]`: book updates on Aeron.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAeron {
    pub channel: RawValue,
    pub stream_id: RawValue,
    pub dir: RawValue,
    pub embedded_driver: RawValue,
    pub refresh_cycle_ms: RawValue,
    pub heartbeat_ms: RawValue,
    pub linger_ms: RawValue,
}

/// `[web]`: the browser view's HTTP and WebSocket server.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawWeb {
    /// `web.listen`.
    pub listen: RawValue,
    /// `web.tls_cert`, `web.tls_key`: HTTPS.
    pub tls_cert: RawValue,
    pub tls_key: RawValue,
    /// `web.session_minutes`: how long a browser's login lasts.
    pub session_minutes: RawValue,
}

/// `[serve]`: the subscriber server.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawServe {
    pub listen: RawValue,
    // The storm defences (`serve_guard::AdmissionConfig`).
    pub accept_per_second: RawValue,
    pub accept_burst: RawValue,
    pub max_connections: RawValue,
    pub handshake_per_second: RawValue,
    pub handshake_burst: RawValue,
    pub handshake_max_in_flight: RawValue,
    pub login_per_second: RawValue,
    pub login_burst: RawValue,
    pub login_max_in_flight: RawValue,
    pub subscribe_per_second: RawValue,
    pub subscribe_burst: RawValue,
    pub subscribe_max_in_flight: RawValue,
    pub symbol_list_per_second: RawValue,
    pub symbol_list_burst: RawValue,
    pub symbol_list_max_in_flight: RawValue,
    pub ip_max_connections: RawValue,
    pub ip_max_attempts: RawValue,
    pub account_max_sessions: RawValue,
    pub account_max_attempts: RawValue,
    pub attempt_window_ms: RawValue,
    pub retry_after_min_ms: RawValue,
    pub retry_after_max_ms: RawValue,
    pub login_timeout_ms: RawValue,
    // The server's connections.
    pub heartbeat_ms: RawValue,
    pub idle_timeout_ms: RawValue,
    pub high_water_bytes: RawValue,
    pub low_water_bytes: RawValue,
    // TLS.
    pub tls_cert: RawValue,
    pub tls_key: RawValue,
    pub tls_handshake_timeout_ms: RawValue,
    // Accounts and the audit trail.
    pub accounts: RawValue,
    pub login_failure_delay_ms: RawValue,
    pub accounts_reload_interval_ms: RawValue,
    pub audit_log: RawValue,
}

/// `[admin]`: the HTTP server for health, metrics and admin calls.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAdmin {
    pub listen: RawValue,
    pub token: RawValue,
}

/// `[engine]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawEngine {
    pub wait: RawValue,
    pub reader_core: RawValue,
    pub book_core: RawValue,
    pub ring_slots: RawValue,
    pub max_orders: RawValue,
    pub max_books: RawValue,
    pub levels_per_side: RawValue,
    pub instance: RawValue,
    pub stagger_step_ms: RawValue,
    pub stagger_cap_ms: RawValue,
    pub shutdown_timeout_s: RawValue,
}

/// `[snapshot]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSnapshot {
    pub path: RawValue,
    pub depth: RawValue,
    pub capacity: RawValue,
}

/// `[feed]`: the keys of both kinds; which belong is checked against `kind`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFeed {
    pub kind: RawValue,
    // Both kinds.
    pub name: RawValue,
    pub max_duration_s: RawValue,
    // MoldUDP64.
    pub bind: RawValue,
    pub multicast_group: RawValue,
    pub interface: RawValue,
    pub request_server: RawValue,
    pub silence_timeout_s: RawValue,
    pub retransmit_timeout_ms: RawValue,
    pub b_bind: RawValue,
    pub b_multicast_group: RawValue,
    pub b_interface: RawValue,
    pub arbitration_wait_us: RawValue,
    pub retry_budget_percent: RawValue,
    pub retry_budget_window_ms: RawValue,
    pub limit_min: RawValue,
    pub limit_max: RawValue,
    pub gap_deadline_ms: RawValue,
    pub start_sequence: RawValue,
    pub reorder_store_packets: RawValue,
    pub glimpse_server: RawValue,
    pub glimpse_username: RawValue,
    pub glimpse_password: RawValue,
    pub max_recovery_gap: RawValue,
    // Both kinds: the line's circuit breaker.
    pub breaker_window_ms: RawValue,
    pub breaker_min_calls: RawValue,
    pub breaker_failure_percent: RawValue,
    pub breaker_slow_percent: RawValue,
    pub breaker_slow_ms: RawValue,
    pub breaker_open_ms: RawValue,
    pub breaker_probes: RawValue,
    // SoupBinTCP.
    pub server: RawValue,
    pub username: RawValue,
    pub password: RawValue,
    pub session: RawValue,
    pub next_sequence: RawValue,
    pub server_timeout_s: RawValue,
    pub max_reconnects: RawValue,
    pub connect_timeout_ms: RawValue,
    pub reconnect_base_ms: RawValue,
    pub reconnect_cap_ms: RawValue,
}

impl RawFeed {
    /// The keys only a MoldUDP64 line has, by full name.
    pub fn mold_only(&self) -> [(&'static str, &RawValue); 21] {
        [
            ("feed.bind", &self.bind),
            ("feed.multicast_group", &self.multicast_group),
            ("feed.interface", &self.interface),
            ("feed.request_server", &self.request_server),
            ("feed.silence_timeout_s", &self.silence_timeout_s),
            ("feed.retransmit_timeout_ms", &self.retransmit_timeout_ms),
            ("feed.b_bind", &self.b_bind),
            ("feed.b_multicast_group", &self.b_multicast_group),
            ("feed.b_interface", &self.b_interface),
            ("feed.arbitration_wait_us", &self.arbitration_wait_us),
            ("feed.retry_budget_percent", &self.retry_budget_percent),
            ("feed.retry_budget_window_ms", &self.retry_budget_window_ms),
            ("feed.limit_min", &self.limit_min),
            ("feed.limit_max", &self.limit_max),
            ("feed.gap_deadline_ms", &self.gap_deadline_ms),
            ("feed.start_sequence", &self.start_sequence),
            ("feed.reorder_store_packets", &self.reorder_store_packets),
            ("feed.glimpse_server", &self.glimpse_server),
            ("feed.glimpse_username", &self.glimpse_username),
            ("feed.glimpse_password", &self.glimpse_password),
            ("feed.max_recovery_gap", &self.max_recovery_gap),
        ]
    }

    /// The keys only a SoupBinTCP line has, by full name.
    pub fn soup_only(&self) -> [(&'static str, &RawValue); 10] {
        [
            ("feed.server", &self.server),
            ("feed.username", &self.username),
            ("feed.password", &self.password),
            ("feed.session", &self.session),
            ("feed.next_sequence", &self.next_sequence),
            ("feed.server_timeout_s", &self.server_timeout_s),
            ("feed.max_reconnects", &self.max_reconnects),
            ("feed.connect_timeout_ms", &self.connect_timeout_ms),
            ("feed.reconnect_base_ms", &self.reconnect_base_ms),
            ("feed.reconnect_cap_ms", &self.reconnect_cap_ms),
        ]
    }
}
