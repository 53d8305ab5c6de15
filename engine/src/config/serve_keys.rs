//! The `[serve]` keys: where the subscriber server listens, its reconnect-storm defences
//! (the accept rate, the per-IP and per-account limits, each stage's limits, the jittered
//! retry-after, the login timeout) and its connections' heartbeat, idle timeout and write
//! queue marks. Each is checked with its rule, as every other key; the pairs that must
//! agree (a retry-after range, three heartbeats inside the idle timeout, the low mark below
//! the high one) are checked after.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use std::sync::Arc;

use crate::serve::accounts::AccountTable;
use crate::serve::tls::{rustls, server_config, TlsConfigError};
use crate::serve_guard::{AdmissionConfig, PeerLimits, RetryAfter, StageLimit};

use super::error::{ConfigError, Conflict};
use super::limits;
use super::raw::{RawServe, RawValue};
use super::validate::Checker;

/// `serve.heartbeat_ms` when absent: the server's built-in 1 s (`ServeConfig::new`).
pub const DEFAULT_HEARTBEAT_MS: u32 = 1_000;
/// `serve.idle_timeout_ms` when absent: 10 s, ten heartbeats.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// `serve.high_water_bytes` when absent: the server's built-in 512 KiB.
pub const DEFAULT_HIGH_WATER_BYTES: usize = 512 << 10;
/// `serve.low_water_bytes` when absent: the server's built-in 64 KiB.
pub const DEFAULT_LOW_WATER_BYTES: usize = 64 << 10;
/// `serve.tls_handshake_timeout_ms` when absent: the server's built-in 5 s.
pub const DEFAULT_TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// `serve.login_failure_delay_ms` when absent: a failed login is answered 1 s after it
/// arrived.
pub const DEFAULT_LOGIN_FAILURE_DELAY: Duration = Duration::from_secs(1);
/// Heartbeat intervals the idle timeout spans at least: a client sends a heartbeat after
/// one interval without sending, and may notice that only an interval late.
pub const IDLE_HEARTBEATS: u32 = 3;

/// `[serve]`, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServeSection {
    /// Where the subscriber server listens; no server when absent.
    pub listen: Option<SocketAddr>,
    /// The storm defences (`serve::GuardedAdmission`), login timeout included.
    pub admission: AdmissionConfig,
    /// The server sends a heartbeat after this long without sending (ms).
    pub heartbeat_ms: u32,
    /// A logged-in client heard nothing from this long is cut loose (reason `I`).
    pub idle_timeout: Duration,
    /// Above this many queued bytes a client's state updates are conflated.
    pub high_water_bytes: usize,
    /// Back at this many, updates stream again.
    pub low_water_bytes: usize,
    /// `serve.tls_cert` and `serve.tls_key`: speak TLS with this certificate (checked at
    /// load: readable, matching, within its dates); plain TCP when absent.
    pub tls: Option<TlsFiles>,
    /// A TLS handshake not done this long after the accept is dropped.
    pub tls_handshake_timeout: Duration,
    /// `serve.accounts`: logins need an account of this file and its password (checked at
    /// load); any account name logs in when absent.
    pub accounts: Option<PathBuf>,
    /// A failed login is answered this long after it arrived.
    pub login_failure_delay: Duration,
    /// Check the accounts file for a change this often (`None`: on `SIGHUP` only).
    pub accounts_reload_interval: Option<Duration>,
    /// `serve.audit_log`: append the audit trail to this file.
    pub audit_log: Option<PathBuf>,
}

/// A certificate chain and its private key, PEM files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// `serve.tls_cert`: the server's certificate first, then its chain.
    pub cert: PathBuf,
    /// `serve.tls_key`: the certificate's private key.
    pub key: PathBuf,
}

impl Default for ServeSection {
    /// No server; the built-in defences ([`AdmissionConfig::default`]) and the server's
    /// built-in heartbeat and marks.
    fn default() -> Self {
        ServeSection {
            listen: None,
            admission: AdmissionConfig::default(),
            heartbeat_ms: DEFAULT_HEARTBEAT_MS,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            high_water_bytes: DEFAULT_HIGH_WATER_BYTES,
            low_water_bytes: DEFAULT_LOW_WATER_BYTES,
            tls: None,
            tls_handshake_timeout: DEFAULT_TLS_HANDSHAKE_TIMEOUT,
            accounts: None,
            login_failure_delay: DEFAULT_LOGIN_FAILURE_DELAY,
            accounts_reload_interval: None,
            audit_log: None,
        }
    }
}

/// `[serve]` over the defaults.
///
/// # Errors
///
/// [`ConfigError::Value`] naming the key for a value outside its rule;
/// [`ConfigError::Conflict`] for a retry-after range that is one value or reversed, an idle
/// timeout under three heartbeats, or a low mark not below the high one.
pub fn serve_section(check: &Checker<'_>, raw: &RawServe) -> Result<ServeSection, ConfigError> {
    let d = ServeSection::default();
    let n =
        |key, value: &RawValue, rule, default: u32| check.integer_u32(key, value, rule, default);
    let rate = &limits::SERVE_RATE;
    let count = &limits::SERVE_COUNT;
    let stage = |keys: [&'static str; 3], values: [&RawValue; 3], default: StageLimit| {
        Ok::<_, ConfigError>(StageLimit {
            per_second: n(keys[0], values[0], rate, default.per_second)?,
            burst: n(keys[1], values[1], rate, default.burst)?,
            max_in_flight: n(keys[2], values[2], count, default.max_in_flight)?,
        })
    };
    let a = d.admission;
    let connect = stage(
        [
            "serve.accept_per_second",
            "serve.accept_burst",
            "serve.max_connections",
        ],
        [
            &raw.accept_per_second,
            &raw.accept_burst,
            &raw.max_connections,
        ],
        a.connect,
    )?;
    let handshake = stage(
        [
            "serve.handshake_per_second",
            "serve.handshake_burst",
            "serve.handshake_max_in_flight",
        ],
        [
            &raw.handshake_per_second,
            &raw.handshake_burst,
            &raw.handshake_max_in_flight,
        ],
        a.handshake,
    )?;
    let login = stage(
        [
            "serve.login_per_second",
            "serve.login_burst",
            "serve.login_max_in_flight",
        ],
        [
            &raw.login_per_second,
            &raw.login_burst,
            &raw.login_max_in_flight,
        ],
        a.login,
    )?;
    let subscribe = stage(
        [
            "serve.subscribe_per_second",
            "serve.subscribe_burst",
            "serve.subscribe_max_in_flight",
        ],
        [
            &raw.subscribe_per_second,
            &raw.subscribe_burst,
            &raw.subscribe_max_in_flight,
        ],
        a.subscribe,
    )?;
    let symbol_list = stage(
        [
            "serve.symbol_list_per_second",
            "serve.symbol_list_burst",
            "serve.symbol_list_max_in_flight",
        ],
        [
            &raw.symbol_list_per_second,
            &raw.symbol_list_burst,
            &raw.symbol_list_max_in_flight,
        ],
        a.symbol_list,
    )?;
    let window_ns = check
        .millis(
            "serve.attempt_window_ms",
            &raw.attempt_window_ms,
            &limits::SERVE_ATTEMPT_WINDOW_MS,
            Duration::from_nanos(a.per_ip.window_ns),
        )?
        .as_nanos() as u64;
    let per_ip = PeerLimits {
        max_open: n(
            "serve.ip_max_connections",
            &raw.ip_max_connections,
            count,
            a.per_ip.max_open,
        )?,
        max_attempts: n(
            "serve.ip_max_attempts",
            &raw.ip_max_attempts,
            count,
            a.per_ip.max_attempts,
        )?,
        window_ns,
    };
    let per_account = PeerLimits {
        max_open: n(
            "serve.account_max_sessions",
            &raw.account_max_sessions,
            count,
            a.per_account.max_open,
        )?,
        max_attempts: n(
            "serve.account_max_attempts",
            &raw.account_max_attempts,
            count,
            a.per_account.max_attempts,
        )?,
        window_ns,
    };
    let retry_ms = &limits::SERVE_RETRY_AFTER_MS;
    let retry_after = RetryAfter {
        min_ms: n(
            "serve.retry_after_min_ms",
            &raw.retry_after_min_ms,
            retry_ms,
            a.retry_after.min_ms,
        )?,
        max_ms: n(
            "serve.retry_after_max_ms",
            &raw.retry_after_max_ms,
            retry_ms,
            a.retry_after.max_ms,
        )?,
    };
    if retry_after.min_ms >= retry_after.max_ms {
        let span = raw
            .retry_after_max_ms
            .as_ref()
            .or(raw.retry_after_min_ms.as_ref());
        return Err(check.conflict(
            Conflict::RetryAfterNotARange {
                min_ms: retry_after.min_ms,
                max_ms: retry_after.max_ms,
            },
            span.map(|v| v.span()),
        ));
    }
    let login_timeout_ms = n(
        "serve.login_timeout_ms",
        &raw.login_timeout_ms,
        &limits::SERVE_LOGIN_TIMEOUT_MS,
        a.login_timeout_ms,
    )?;
    let heartbeat_ms = n(
        "serve.heartbeat_ms",
        &raw.heartbeat_ms,
        &limits::SERVE_HEARTBEAT_MS,
        d.heartbeat_ms,
    )?;
    let idle_timeout = check.millis(
        "serve.idle_timeout_ms",
        &raw.idle_timeout_ms,
        &limits::SERVE_IDLE_TIMEOUT_MS,
        d.idle_timeout,
    )?;
    if idle_timeout.as_millis() < u128::from(IDLE_HEARTBEATS * heartbeat_ms) {
        let span = raw.idle_timeout_ms.as_ref().or(raw.heartbeat_ms.as_ref());
        return Err(check.conflict(
            Conflict::IdleUnderHeartbeats {
                idle_ms: idle_timeout.as_millis() as u64,
                heartbeat_ms,
            },
            span.map(|v| v.span()),
        ));
    }
    let water = &limits::SERVE_WATER_BYTES;
    let high_water_bytes = check.usize(
        "serve.high_water_bytes",
        &raw.high_water_bytes,
        water,
        d.high_water_bytes,
    )?;
    let low_water_bytes = check.usize(
        "serve.low_water_bytes",
        &raw.low_water_bytes,
        water,
        d.low_water_bytes,
    )?;
    if low_water_bytes >= high_water_bytes {
        let span = raw
            .low_water_bytes
            .as_ref()
            .or(raw.high_water_bytes.as_ref());
        return Err(check.conflict(
            Conflict::WaterMarks {
                low: low_water_bytes as u64,
                high: high_water_bytes as u64,
            },
            span.map(|v| v.span()),
        ));
    }
    let tls = tls_files(check, raw)?;
    let tls_handshake_timeout = check.millis(
        "serve.tls_handshake_timeout_ms",
        &raw.tls_handshake_timeout_ms,
        &limits::SERVE_TLS_HANDSHAKE_TIMEOUT_MS,
        d.tls_handshake_timeout,
    )?;
    let accounts = check.path("serve.accounts", &raw.accounts)?;
    if let Some(path) = &accounts {
        AccountTable::load(path).map_err(|error| ConfigError::Accounts {
            place: check.place(raw.accounts.as_ref().map(|v| v.span())),
            error: Box::new(error),
        })?;
    }
    let login_failure_delay = check.millis(
        "serve.login_failure_delay_ms",
        &raw.login_failure_delay_ms,
        &limits::SERVE_LOGIN_FAILURE_DELAY_MS,
        d.login_failure_delay,
    )?;
    let accounts_reload_interval = match raw.accounts_reload_interval_ms {
        None => None,
        Some(_) => Some(check.millis(
            "serve.accounts_reload_interval_ms",
            &raw.accounts_reload_interval_ms,
            &limits::SERVE_ACCOUNTS_RELOAD_INTERVAL_MS,
            Duration::ZERO,
        )?),
    };
    Ok(ServeSection {
        tls,
        tls_handshake_timeout,
        accounts,
        login_failure_delay,
        accounts_reload_interval,
        audit_log: check.path("serve.audit_log", &raw.audit_log)?,
        listen: check.socket_addr("serve.listen", &raw.listen, false)?,
        admission: AdmissionConfig {
            connect,
            handshake,
            login,
            subscribe,
            symbol_list,
            per_ip,
            per_account,
            retry_after,
            login_timeout_ms,
            ..a
        },
        heartbeat_ms,
        idle_timeout,
        high_water_bytes,
        low_water_bytes,
    })
}

/// `serve.tls_cert` and `serve.tls_key`: both or neither; the files are read and checked
/// now, so that a certificate that cannot serve is a configuration error at start.
fn tls_files(check: &Checker<'_>, raw: &RawServe) -> Result<Option<TlsFiles>, ConfigError> {
    section_tls_files(
        check,
        ("serve.tls_cert", &raw.tls_cert),
        ("serve.tls_key", &raw.tls_key),
    )
}

/// A section's `tls_cert` and `tls_key` (each key's name and value): both or neither; the
/// files are read and checked now.
pub(super) fn section_tls_files(
    check: &Checker<'_>,
    (cert_key, cert_raw): (&'static str, &RawValue),
    (key_key, key_raw): (&'static str, &RawValue),
) -> Result<Option<TlsFiles>, ConfigError> {
    let cert = check.path(cert_key, cert_raw)?;
    let key = check.path(key_key, key_raw)?;
    let (cert, key) = match (cert, key) {
        (None, None) => return Ok(None),
        (Some(cert), Some(key)) => (cert, key),
        (Some(_), None) => {
            let conflict = Conflict::TlsHalf {
                set: cert_key,
                missing: key_key,
            };
            return Err(check.conflict(conflict, cert_raw.as_ref().map(|v| v.span())));
        }
        (None, Some(_)) => {
            let conflict = Conflict::TlsHalf {
                set: key_key,
                missing: cert_key,
            };
            return Err(check.conflict(conflict, key_raw.as_ref().map(|v| v.span())));
        }
    };
    let files = TlsFiles { cert, key };
    files.load().map_err(|error| {
        let key = match &error {
            TlsConfigError::KeyMismatch { .. } | TlsConfigError::Rejected { .. } => key_key,
            TlsConfigError::Unreadable { path, .. } if *path == files.key => key_key,
            _ => cert_key,
        };
        let span = if key == key_key { key_raw } else { cert_raw };
        ConfigError::Tls {
            place: check.place(span.as_ref().map(|v| v.span())),
            key,
            error: Box::new(error),
        }
    })?;
    Ok(Some(files))
}

impl TlsFiles {
    /// The server's TLS configuration from these files.
    ///
    /// # Errors
    ///
    /// A [`TlsConfigError`] naming the file at fault.
    pub fn load(&self) -> Result<Arc<rustls::ServerConfig>, TlsConfigError> {
        server_config(&self.cert, &self.key)
    }
}
