//! `ticklane run --config FILE`: the TOML file that names the feed, the cores, the wait
//! strategy, the capacities and the snapshot. `engine/ticklane.example.toml` documents
//! every key and its allowed range.
//!
//! Every value is checked when the file is loaded: a value of the wrong type, negative, zero
//! where zero means nothing, NaN, infinite or out of range is refused with a
//! [`ConfigError`] that names the file, the key's full dotted path, the value, the allowed
//! range and the key's line and column. Nothing is clamped or replaced by a default behind
//! the user's back: a key is either absent (its documented default applies) or valid.
//!
//! # Examples
//!
//! ```
//! use std::path::Path;
//! use ticklane_engine::config::{ConfigError, RunConfig};
//!
//! let text = "[feed]\nkind = \"moldudp64\"\nbind = \"127.0.0.1:26477\"\nsilence_timeout_s = -1\n";
//! let err = RunConfig::parse(text, Path::new("line.toml")).unwrap_err();
//! assert_eq!(err.key(), Some("feed.silence_timeout_s"));
//! assert_eq!(
//!     err.to_string(),
//!     "line.toml:4:21: feed.silence_timeout_s = -1 is refused; \
//!      allowed: a finite number of seconds in 1 ..= 3600"
//! );
//! ```

mod aeron_keys;
mod allowed;
mod error;
mod instance;
mod limits;
mod raw;
mod resilience_keys;
mod serve_keys;
mod validate;

pub use aeron_keys::AeronSection;
pub use allowed::Allowed;
pub use error::{ConfigError, Conflict, Location, Place};
pub use instance::{Instance, NAME_INDICES};
pub use serve_keys::{ServeSection, TlsFiles};
pub use validate::available_cores;

/// What a MoldUDP64 line with no retransmission server says at start (on stderr) and in its
/// summary: no gap can be recovered.
pub const NO_REQUEST_SERVER: &str = "no retransmission server (feed.request_server is not set): \
     gaps cannot be recovered; each is declared lost after a 1 ms wait for reordered packets";

use std::ffi::OsStr;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use ticklane_feed::moldudp64::{RecoveryConfig, Session};
use ticklane_feed::net::UdpFeedConfig;
use ticklane_feed::resilience::BackoffConfig;
use ticklane_feed::soupbintcp::{ClientConfig, Credentials};

use crate::admin_token::{AdminToken, TOKEN_ENV};
use crate::book::BookConfig;
use crate::pipeline::{
    GlimpseConfig, MoldFeedConfig, PipelineConfig, SoupFeedConfig, WaitStrategy,
    DEFAULT_LINE_BREAKER, DEFAULT_MAX_RECOVERY_GAP,
};
use raw::{RawAdmin, RawEngine, RawFeed, RawFile, RawSnapshot, RawWeb};
use validate::Checker;

/// Default seconds of silence before a MoldUDP64 feed is declared dead.
const DEFAULT_SILENCE_TIMEOUT: Duration = Duration::from_secs(5);
/// Default wait for a retransmission before asking again.
const DEFAULT_RETRANSMIT_TIMEOUT_MS: u64 = 100;
/// Default arbitration wait of a line with an A and a B socket: A/B copies of a packet
/// arrive within tens to a few hundred microseconds of each other (two paths from the same
/// publisher), and the reader may take one socket's batch before the other's; 1 ms covers
/// both, and adds only 1 ms to the recovery of a packet lost on both lines.
const DEFAULT_ARBITRATION_WAIT_US: u64 = 1_000;
/// Default wait of a gap on a line with one socket, for a packet reordered on the way
/// (two packets swapped arrive microseconds apart): without it every swap would send a
/// retransmission request for a packet already on its way. It adds 0.2 ms to the recovery
/// of a packet really lost.
const DEFAULT_REORDER_WAIT_US: u64 = 200;
/// Default seconds of SoupBinTCP server silence before it is declared gone.
const DEFAULT_SERVER_TIMEOUT: Duration = Duration::from_secs(15);
/// Default reconnects of a SoupBinTCP line.
const DEFAULT_MAX_RECONNECTS: u32 = 5;
/// How long a SoupBinTCP connect may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The ceiling of the first SoupBinTCP reconnect's wait (each after doubles it).
const RECONNECT_BASE: Duration = Duration::from_millis(100);
/// The ceiling of any SoupBinTCP reconnect's wait.
const RECONNECT_CAP: Duration = Duration::from_secs(30);

/// A checked configuration file.
///
/// [`RunConfig::load`] checks every value; the sections' fields stay public for callers to
/// read. [`RunConfig::pipeline`] and [`RunConfig::feed_config`] check again what they convert,
/// so a value changed in code after loading is refused the same way (without a line).
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Threads, cores, capacities.
    pub engine: EngineSection,
    /// The snapshot file.
    pub snapshot: SnapshotSection,
    /// The feed line.
    pub feed: FeedConfig,
    /// `feed.name`: the feed's name in the admin URLs and the metrics' labels (default
    /// [`DEFAULT_FEED_NAME`]).
    pub feed_name: String,
    /// `[admin]`: the HTTP server.
    pub admin: AdminSection,
    /// `[serve]`: the subscriber server.
    pub serve: ServeSection,
    /// `[web]`: the browser view.
    pub web: WebSection,
    /// `[aeron]`: book updates on Aeron.
    pub aeron: AeronSection,
    /// The file it was read from, for errors.
    file: PathBuf,
}

/// `[engine]`, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineSection {
    /// How the stages wait (default spin-yield).
    pub wait: WaitStrategy,
    /// Core of the reader thread (unpinned if absent); a core this process may run on.
    pub reader_core: Option<usize>,
    /// Core of the book thread (unpinned if absent); a core this process may run on.
    pub book_core: Option<usize>,
    /// Ring slots between reader and book thread: a power of two in 1,024 ..= 4 Mi.
    pub ring_slots: usize,
    /// Most live orders: 1 ..= 2^32 - 2.
    pub max_orders: usize,
    /// Most stocks with a book: 1 ..= 65,536.
    pub max_books: usize,
    /// Most price levels per side of a book: 1 ..= 2^20, and the level table
    /// (`max_books * 2 * levels_per_side * 16` bytes) at most 16 GiB.
    pub levels_per_side: usize,
    /// Which of the engines started together this is (default index 0).
    pub instance: Instance,
    /// The staggered start's wait per instance index (0: no stagger; 0 ..= 60,000 ms).
    pub stagger_step: Duration,
    /// The most the staggered start waits before its jitter (0 ..= 600,000 ms; default 30 s).
    pub stagger_cap: Duration,
    /// How long SIGTERM's drain may take before the process exits anyway (0.1 ..= 600 s;
    /// default 10 s).
    pub shutdown_timeout: Duration,
}

impl Default for EngineSection {
    fn default() -> Self {
        let books = BookConfig::default();
        EngineSection {
            wait: WaitStrategy::default(),
            reader_core: None,
            book_core: None,
            ring_slots: PipelineConfig::default().ring_slots,
            max_orders: books.max_orders,
            max_books: books.max_books,
            levels_per_side: books.levels_per_side,
            instance: Instance::default(),
            stagger_step: Duration::ZERO,
            stagger_cap: DEFAULT_STAGGER_CAP,
            shutdown_timeout: DEFAULT_SHUTDOWN_TIMEOUT,
        }
    }
}

/// `engine.stagger_cap_ms` when absent.
pub const DEFAULT_STAGGER_CAP: Duration = Duration::from_secs(30);
/// `engine.shutdown_timeout_s` when absent.
pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);

/// `[snapshot]`, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotSection {
    /// Path of the memory-mapped snapshot file (`/dev/shm/...` keeps it in memory); none when
    /// absent.
    pub path: Option<PathBuf>,
    /// Levels per side in each slot: 1 ..= 1,024 (default 10).
    pub depth: usize,
    /// Instrument slots: 1 ..= 65,536 (default 16,384).
    pub capacity: usize,
}

impl Default for SnapshotSection {
    fn default() -> Self {
        SnapshotSection {
            path: None,
            depth: crate::snapshot::DEFAULT_DEPTH,
            capacity: 16_384,
        }
    }
}

/// The feed's name when `feed.name` is absent.
pub const DEFAULT_FEED_NAME: &str = "feed";

/// `[admin]`, checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AdminSection {
    /// Where the HTTP server listens (health, metrics, admin calls); no server when absent.
    pub listen: Option<SocketAddr>,
    /// The bearer token the admin calls need: the file's, or `TICKLANE_ADMIN_TOKEN`'s once
    /// [`RunConfig::with_environment`] applied it (both held to the same rule); admin calls
    /// are refused when neither is set. Its `Debug` is redacted.
    pub token: Option<AdminToken>,
}

/// `[web]`, checked. Its logins use the process's accounts (`serve.accounts`, with
/// `serve.login_failure_delay_ms`, its reloads and `serve.audit_log`): one file says who
/// may see what, whichever server they come through.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebSection {
    /// Where the browser view listens (its page and its WebSocket); no view when absent.
    /// It reads the snapshot, so it needs `snapshot.path`.
    pub listen: Option<SocketAddr>,
    /// `web.tls_cert` and `web.tls_key`: serve HTTPS and `wss://` only (checked at load).
    pub tls: Option<TlsFiles>,
    /// `web.session_minutes`: how long a browser's login lasts (default 12 hours).
    pub session_length: Duration,
}

impl Default for WebSection {
    fn default() -> Self {
        WebSection {
            listen: None,
            tls: None,
            session_length: crate::web::DEFAULT_SESSION_LENGTH,
        }
    }
}

/// A feed line ready to open.
#[derive(Clone, Debug)]
// Made once per process and never moved on a hot path: boxing the larger variant would buy
// nothing and cost every user a `Box`.
#[allow(clippy::large_enum_variant)]
pub enum FeedConfig {
    /// MoldUDP64.
    Mold(MoldFeedConfig),
    /// SoupBinTCP.
    Soup(SoupFeedConfig),
}

impl RunConfig {
    /// Reads and checks a configuration file.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming the file and, for a refused value, the key, the value, the
    /// allowed range, and the line and column.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Read {
            path: path.to_path_buf(),
            error,
        })?;
        Self::parse(&text, path)
    }

    /// Checks the contents `text` of a configuration file; `path` names it in errors.
    ///
    /// # Errors
    ///
    /// As [`RunConfig::load`], except that the file is not read.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let raw: RawFile = toml::from_str(text).map_err(|error| ConfigError::Syntax {
            path: path.to_path_buf(),
            at: error.span().map(|s| Location::of_offset(text, s.start)),
            error: Box::new(error),
        })?;
        let check = Checker::new(path, text);
        let engine = match &raw.engine {
            Some(section) => engine_section(&check, section.get_ref())?,
            None => EngineSection::default(),
        };
        let snapshot = match &raw.snapshot {
            Some(section) => snapshot_section(&check, section.get_ref())?,
            None => SnapshotSection::default(),
        };
        let feed = match &raw.feed {
            Some(section) => feed_section(&check, section.get_ref(), section.span())?,
            None => return Err(check.missing("feed.kind", None, limits::KIND)),
        };
        let feed_name = match &raw.feed {
            Some(section) => check.name(
                "feed.name",
                &section.get_ref().name,
                &limits::FEED_NAME,
                DEFAULT_FEED_NAME,
            )?,
            None => DEFAULT_FEED_NAME.to_owned(),
        };
        let admin = match &raw.admin {
            Some(section) => admin_section(&check, section.get_ref())?,
            None => AdminSection::default(),
        };
        let serve = match &raw.serve {
            Some(section) => serve_keys::serve_section(&check, section.get_ref())?,
            None => ServeSection::default(),
        };
        let web = match &raw.web {
            Some(section) => web_section(&check, section.get_ref())?,
            None => WebSection::default(),
        };
        if web.listen.is_some() && snapshot.path.is_none() {
            let span = raw.web.as_ref().map(toml::Spanned::span);
            return Err(check.conflict(Conflict::WebWithoutSnapshot, span));
        }
        if serve.listen.is_some() && snapshot.path.is_none() {
            let span = raw.serve.as_ref().map(toml::Spanned::span);
            return Err(check.conflict(Conflict::ServeWithoutSnapshot, span));
        }
        let aeron = match &raw.aeron {
            Some(section) => aeron_keys::aeron_section(&check, section.get_ref())?,
            None => AeronSection::default(),
        };
        if aeron.channel.is_some() && snapshot.path.is_none() {
            let span = raw.aeron.as_ref().map(toml::Spanned::span);
            return Err(check.conflict(Conflict::AeronWithoutSnapshot, span));
        }
        Ok(RunConfig {
            engine,
            snapshot,
            feed,
            feed_name,
            admin,
            serve,
            web,
            aeron,
            file: path.to_path_buf(),
        })
    }

    /// This configuration with the environment applied: `TICKLANE_ADMIN_TOKEN`, when set and
    /// not empty, replaces `admin.token`, held to the same rule (an empty variable counts as
    /// unset). Call it once, before anything starts, where the environment is meant to count
    /// (`ticklane run`).
    ///
    /// # Errors
    ///
    /// [`ConfigError::Environment`] naming the variable (never its value) if `admin.token`
    /// would refuse it, or if it is not UTF-8.
    pub fn with_environment(self) -> Result<Self, ConfigError> {
        self.with_admin_token_env(std::env::var_os(TOKEN_ENV).as_deref())
    }

    /// [`RunConfig::with_environment`], with the variable's value given.
    fn with_admin_token_env(mut self, value: Option<&OsStr>) -> Result<Self, ConfigError> {
        let Some(value) = value.filter(|v| !v.is_empty()) else {
            return Ok(self);
        };
        let rule = limits::ADMIN_TOKEN;
        let token = value
            .to_str()
            .filter(|t| rule.admits_text(t))
            .and_then(AdminToken::new)
            .ok_or(ConfigError::Environment {
                variable: TOKEN_ENV,
                key: "admin.token",
                allowed: rule,
            })?;
        self.admin.token = Some(token);
        Ok(self)
    }

    /// The file this configuration was read from.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The pipeline's threads, cores and capacities.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] for an `engine` value changed after loading to one its key does not
    /// allow (a loaded configuration always converts).
    pub fn pipeline(&self) -> Result<PipelineConfig, ConfigError> {
        let e = &self.engine;
        let check = Checker::after_load(&self.file);
        check.recheck_integer("engine.ring_slots", e.ring_slots, &limits::RING_SLOTS)?;
        check.recheck_integer("engine.max_orders", e.max_orders, &limits::MAX_ORDERS)?;
        check.recheck_integer("engine.max_books", e.max_books, &limits::MAX_BOOKS)?;
        check.recheck_integer(
            "engine.levels_per_side",
            e.levels_per_side,
            &limits::LEVELS_PER_SIDE,
        )?;
        validate::level_table(e.max_books, e.levels_per_side)
            .and_then(|()| validate::core_pair(e.wait, e.reader_core, e.book_core))
            .map_err(|conflict| check.conflict(conflict, None))?;
        Ok(PipelineConfig {
            ring_slots: e.ring_slots,
            wait: e.wait,
            reader_core: e.reader_core,
            book_core: e.book_core,
            books: BookConfig {
                max_orders: e.max_orders,
                max_books: e.max_books,
                levels_per_side: e.levels_per_side,
            },
        })
    }

    /// The feed line.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] for a timeout changed after loading to one its key does not allow (a
    /// loaded configuration always converts).
    pub fn feed_config(&self) -> Result<FeedConfig, ConfigError> {
        let check = Checker::after_load(&self.file);
        let max_duration = match &self.feed {
            FeedConfig::Mold(m) => {
                check.recheck_seconds(
                    "feed.silence_timeout_s",
                    m.silence_timeout,
                    &limits::SILENCE_TIMEOUT_S,
                )?;
                let ms = usize::try_from(m.recovery.retransmit_timeout.as_millis())
                    .unwrap_or(usize::MAX);
                check.recheck_integer(
                    "feed.retransmit_timeout_ms",
                    ms,
                    &limits::RETRANSMIT_TIMEOUT_MS,
                )?;
                m.max_duration
            }
            FeedConfig::Soup(s) => {
                check.recheck_seconds(
                    "feed.server_timeout_s",
                    s.client.server_timeout,
                    &limits::SILENCE_TIMEOUT_S,
                )?;
                s.max_duration
            }
        };
        if let Some(d) = max_duration {
            check.recheck_seconds("feed.max_duration_s", d, &limits::MAX_DURATION_S)?;
        }
        Ok(self.feed.clone())
    }
}

/// `[engine]`: each capacity in range, cores that exist, and the pairs that must agree.
fn engine_section(check: &Checker<'_>, raw: &RawEngine) -> Result<EngineSection, ConfigError> {
    let defaults = EngineSection::default();
    let wait = check.wait(&raw.wait)?;
    let cores = if raw.reader_core.is_some() || raw.book_core.is_some() {
        validate::available_cores()
    } else {
        Vec::new()
    };
    let reader_core = check.core("engine.reader_core", &raw.reader_core, &cores)?;
    let book_core = check.core("engine.book_core", &raw.book_core, &cores)?;
    let ring_slots = check.usize(
        "engine.ring_slots",
        &raw.ring_slots,
        &limits::RING_SLOTS,
        defaults.ring_slots,
    )?;
    let max_orders = check.usize(
        "engine.max_orders",
        &raw.max_orders,
        &limits::MAX_ORDERS,
        defaults.max_orders,
    )?;
    let max_books = check.usize(
        "engine.max_books",
        &raw.max_books,
        &limits::MAX_BOOKS,
        defaults.max_books,
    )?;
    let levels_per_side = check.usize(
        "engine.levels_per_side",
        &raw.levels_per_side,
        &limits::LEVELS_PER_SIDE,
        defaults.levels_per_side,
    )?;
    let second_span =
        |a: &raw::RawValue, b: &raw::RawValue| b.as_ref().or(a.as_ref()).map(toml::Spanned::span);
    validate::level_table(max_books, levels_per_side).map_err(|conflict| {
        check.conflict(conflict, second_span(&raw.max_books, &raw.levels_per_side))
    })?;
    validate::core_pair(wait, reader_core, book_core).map_err(|conflict| {
        check.conflict(conflict, second_span(&raw.reader_core, &raw.book_core))
    })?;
    let instance = check.instance(&raw.instance)?;
    let ms = |key, raw, rule, default: Duration| {
        check
            .integer(key, raw, rule, default.as_millis() as u64)
            .map(Duration::from_millis)
    };
    let stagger_step = ms(
        "engine.stagger_step_ms",
        &raw.stagger_step_ms,
        &limits::STAGGER_STEP_MS,
        defaults.stagger_step,
    )?;
    let stagger_cap = ms(
        "engine.stagger_cap_ms",
        &raw.stagger_cap_ms,
        &limits::STAGGER_CAP_MS,
        defaults.stagger_cap,
    )?;
    let shutdown_timeout = check
        .seconds(
            "engine.shutdown_timeout_s",
            &raw.shutdown_timeout_s,
            &limits::SHUTDOWN_TIMEOUT_S,
        )?
        .unwrap_or(defaults.shutdown_timeout);
    Ok(EngineSection {
        wait,
        reader_core,
        book_core,
        ring_slots,
        max_orders,
        max_books,
        levels_per_side,
        instance,
        stagger_step,
        stagger_cap,
        shutdown_timeout,
    })
}

/// `[snapshot]`: within what the snapshot layout can hold.
fn snapshot_section(
    check: &Checker<'_>,
    raw: &RawSnapshot,
) -> Result<SnapshotSection, ConfigError> {
    let defaults = SnapshotSection::default();
    Ok(SnapshotSection {
        path: check.path("snapshot.path", &raw.path)?,
        depth: check.usize(
            "snapshot.depth",
            &raw.depth,
            &limits::SNAPSHOT_DEPTH,
            defaults.depth,
        )?,
        capacity: check.usize(
            "snapshot.capacity",
            &raw.capacity,
            &limits::SNAPSHOT_CAPACITY,
            defaults.capacity,
        )?,
    })
}

/// `[web]`: an address to bind, HTTPS's files (checked now), the session length.
fn web_section(check: &Checker<'_>, raw: &RawWeb) -> Result<WebSection, ConfigError> {
    let minutes = check.integer(
        "web.session_minutes",
        &raw.session_minutes,
        &limits::WEB_SESSION_MINUTES,
        crate::web::DEFAULT_SESSION_LENGTH.as_secs() / 60,
    )?;
    Ok(WebSection {
        listen: check.socket_addr("web.listen", &raw.listen, false)?,
        tls: serve_keys::section_tls_files(
            check,
            ("web.tls_cert", &raw.tls_cert),
            ("web.tls_key", &raw.tls_key),
        )?,
        session_length: Duration::from_secs(60 * minutes),
    })
}

/// `[admin]`: an address to bind, and a token that never prints.
fn admin_section(check: &Checker<'_>, raw: &RawAdmin) -> Result<AdminSection, ConfigError> {
    let listen = check.socket_addr("admin.listen", &raw.listen, false)?;
    let token = check
        .secret("admin.token", &raw.token, &limits::ADMIN_TOKEN)?
        .map(|t| AdminToken::new(t).expect("invariant: the token rule refuses empty tokens"));
    Ok(AdminSection { listen, token })
}

/// `feed.glimpse_server`, `feed.glimpse_username`, `feed.glimpse_password`: the GLIMPSE 5.0
/// snapshot a MoldUDP64 line starts from (`feed.start_sequence = "snapshot"`, the default
/// with a server), and rebuilds from after a gap of more than `feed.max_recovery_gap`
/// messages or one the retransmission server did not fill. The login follows
/// `feed.username`'s and `feed.password`'s rules; the password is a secret (a refused one
/// is said `"<redacted>"`).
fn glimpse(
    check: &Checker<'_>,
    raw: &RawFeed,
    span: &std::ops::Range<usize>,
) -> Result<Option<GlimpseConfig>, ConfigError> {
    let snapshot_start = raw
        .start_sequence
        .as_ref()
        .map(|v| matches!(v.get_ref(), toml::Value::String(s) if s == "snapshot"));
    let server = check.socket_addr("feed.glimpse_server", &raw.glimpse_server, true)?;
    let Some(server) = server else {
        if snapshot_start == Some(true) {
            let at = raw.start_sequence.as_ref().map(toml::Spanned::span);
            return Err(check.missing(
                "feed.glimpse_server",
                at,
                Allowed::SocketAddr { connectable: true },
            ));
        }
        let login = raw
            .glimpse_username
            .as_ref()
            .or(raw.glimpse_password.as_ref())
            .or(raw.max_recovery_gap.as_ref());
        if let Some(value) = login {
            return Err(check.missing(
                "feed.glimpse_server",
                Some(value.span()),
                Allowed::SocketAddr { connectable: true },
            ));
        }
        return Ok(None);
    };
    if snapshot_start == Some(false) {
        let at = raw.start_sequence.as_ref().map(toml::Spanned::span);
        return Err(check.conflict(Conflict::GlimpseWithoutSnapshotStart, at));
    }
    let username = check
        .ascii(
            "feed.glimpse_username",
            &raw.glimpse_username,
            &limits::USERNAME,
        )?
        .ok_or_else(|| {
            check.missing(
                "feed.glimpse_username",
                Some(span.clone()),
                limits::USERNAME,
            )
        })?;
    let password = check
        .secret(
            "feed.glimpse_password",
            &raw.glimpse_password,
            &limits::PASSWORD,
        )?
        .unwrap_or_default();
    let credentials = Credentials::new(username.as_bytes(), password.as_bytes())
        .expect("invariant: the username and password rules fit the SoupBinTCP fields");
    let max_recovery_gap = check.integer(
        "feed.max_recovery_gap",
        &raw.max_recovery_gap,
        &limits::MAX_RECOVERY_GAP,
        DEFAULT_MAX_RECOVERY_GAP,
    )?;
    Ok(Some(GlimpseConfig {
        max_recovery_gap,
        ..GlimpseConfig::new(server, credentials)
    }))
}

/// `[feed]`: its kind, then only that kind's keys, each checked.
fn feed_section(
    check: &Checker<'_>,
    raw: &RawFeed,
    span: std::ops::Range<usize>,
) -> Result<FeedConfig, ConfigError> {
    #[derive(Clone, Copy)]
    enum Kind {
        Mold,
        Soup,
    }
    if raw.kind.is_none() {
        return Err(check.missing("feed.kind", Some(span), limits::KIND));
    }
    let kind = check.choice(
        "feed.kind",
        &raw.kind,
        &limits::KIND,
        Kind::Mold,
        |s| match s {
            "moldudp64" => Some(Kind::Mold),
            "soupbintcp" => Some(Kind::Soup),
            _ => None,
        },
    )?;
    let (name, other, foreign) = match kind {
        Kind::Mold => ("moldudp64", "soupbintcp", &raw.soup_only()[..]),
        Kind::Soup => ("soupbintcp", "moldudp64", &raw.mold_only()[..]),
    };
    if let Some((key, Some(value))) = foreign.iter().find(|(_, v)| v.is_some()) {
        return Err(ConfigError::OtherKindKey {
            place: check.place(Some(value.span())),
            key,
            kind: name,
            belongs_to: other,
        });
    }
    let max_duration = check.seconds(
        "feed.max_duration_s",
        &raw.max_duration_s,
        &limits::MAX_DURATION_S,
    )?;
    match kind {
        Kind::Mold => {
            let bind = check
                .socket_addr("feed.bind", &raw.bind, false)?
                .ok_or_else(|| {
                    check.missing(
                        "feed.bind",
                        Some(span.clone()),
                        Allowed::SocketAddr { connectable: false },
                    )
                })?;
            let multicast_group = check.ipv4("feed.multicast_group", &raw.multicast_group, true)?;
            let interface = check
                .ipv4("feed.interface", &raw.interface, false)?
                .unwrap_or(Ipv4Addr::LOCALHOST);
            let request_server =
                check.socket_addr("feed.request_server", &raw.request_server, true)?;
            let b_bind = check.socket_addr("feed.b_bind", &raw.b_bind, false)?;
            let b_group = check.ipv4("feed.b_multicast_group", &raw.b_multicast_group, true)?;
            let b_interface = check.ipv4("feed.b_interface", &raw.b_interface, false)?;
            let line_b = match b_bind {
                Some(bind) => Some(UdpFeedConfig {
                    bind,
                    multicast_group: b_group,
                    interface: b_interface.unwrap_or(interface),
                    ..UdpFeedConfig::default()
                }),
                None => {
                    if let Some(value) = raw.b_multicast_group.as_ref().or(raw.b_interface.as_ref())
                    {
                        return Err(check.missing(
                            "feed.b_bind",
                            Some(value.span()),
                            Allowed::SocketAddr { connectable: false },
                        ));
                    }
                    None
                }
            };
            let arbitration_wait_us = check.integer(
                "feed.arbitration_wait_us",
                &raw.arbitration_wait_us,
                &limits::ARBITRATION_WAIT_US,
                if line_b.is_some() {
                    DEFAULT_ARBITRATION_WAIT_US
                } else {
                    DEFAULT_REORDER_WAIT_US
                },
            )?;
            let silence_timeout = check
                .seconds(
                    "feed.silence_timeout_s",
                    &raw.silence_timeout_s,
                    &limits::SILENCE_TIMEOUT_S,
                )?
                .unwrap_or(DEFAULT_SILENCE_TIMEOUT);
            let retransmit_ms = check.integer(
                "feed.retransmit_timeout_ms",
                &raw.retransmit_timeout_ms,
                &limits::RETRANSMIT_TIMEOUT_MS,
                DEFAULT_RETRANSMIT_TIMEOUT_MS,
            )?;
            let retransmit_timeout = Duration::from_millis(retransmit_ms);
            let line_breaker = resilience_keys::breaker(check, raw, DEFAULT_LINE_BREAKER)?;
            let server_breaker =
                resilience_keys::with_slow_below(raw, line_breaker, retransmit_timeout);
            resilience_keys::check_slow_below(
                check,
                raw,
                &server_breaker,
                retransmit_timeout,
                "feed.retransmit_timeout_ms",
            )?;
            let recovery = resilience_keys::recovery(
                check,
                raw,
                RecoveryConfig {
                    retransmit_timeout,
                    arbitration_wait: Duration::from_micros(arbitration_wait_us),
                    breaker: Some(server_breaker),
                    ..RecoveryConfig::default()
                },
            )?;
            let glimpse = glimpse(check, raw, &span)?;
            Ok(FeedConfig::Mold(MoldFeedConfig {
                udp: UdpFeedConfig {
                    bind,
                    multicast_group,
                    interface,
                    ..UdpFeedConfig::default()
                },
                line_b,
                request_server,
                recovery,
                silence_timeout,
                max_duration,
                line_breaker,
                glimpse,
            }))
        }
        Kind::Soup => {
            let server = check
                .socket_addr("feed.server", &raw.server, true)?
                .ok_or_else(|| {
                    check.missing(
                        "feed.server",
                        Some(span.clone()),
                        Allowed::SocketAddr { connectable: true },
                    )
                })?;
            let username = check
                .ascii("feed.username", &raw.username, &limits::USERNAME)?
                .ok_or_else(|| {
                    check.missing("feed.username", Some(span.clone()), limits::USERNAME)
                })?;
            let password = check
                .ascii("feed.password", &raw.password, &limits::PASSWORD)?
                .ok_or_else(|| {
                    check.missing("feed.password", Some(span.clone()), limits::PASSWORD)
                })?;
            let session = check.ascii("feed.session", &raw.session, &limits::SESSION)?;
            let credentials = Credentials::new(username.as_bytes(), password.as_bytes())
                .expect("invariant: the username and password rules fit the SoupBinTCP fields");
            let mut client = ClientConfig::new(credentials);
            if let Some(name) = session {
                client.session = Session::new(name.as_bytes())
                    .expect("invariant: the session rule fits the session field");
            }
            client.next_sequence = check.integer(
                "feed.next_sequence",
                &raw.next_sequence,
                &limits::NEXT_SEQUENCE,
                1,
            )?;
            client.server_timeout = check
                .seconds(
                    "feed.server_timeout_s",
                    &raw.server_timeout_s,
                    &limits::SILENCE_TIMEOUT_S,
                )?
                .unwrap_or(DEFAULT_SERVER_TIMEOUT);
            let max_reconnects = check.integer(
                "feed.max_reconnects",
                &raw.max_reconnects,
                &limits::MAX_RECONNECTS,
                u64::from(DEFAULT_MAX_RECONNECTS),
            )?;
            let ms =
                |key: &'static str, value: &raw::RawValue, allowed: &Allowed, default: Duration| {
                    check
                        .integer(key, value, allowed, default.as_millis() as u64)
                        .map(Duration::from_millis)
                };
            let connect_timeout = ms(
                "feed.connect_timeout_ms",
                &raw.connect_timeout_ms,
                &limits::CONNECT_TIMEOUT_MS,
                CONNECT_TIMEOUT,
            )?;
            let reconnect = BackoffConfig {
                base: ms(
                    "feed.reconnect_base_ms",
                    &raw.reconnect_base_ms,
                    &limits::RECONNECT_BASE_MS,
                    RECONNECT_BASE,
                )?,
                cap: ms(
                    "feed.reconnect_cap_ms",
                    &raw.reconnect_cap_ms,
                    &limits::RECONNECT_CAP_MS,
                    RECONNECT_CAP,
                )?,
            };
            let breaker = resilience_keys::with_slow_below(
                raw,
                resilience_keys::breaker(check, raw, DEFAULT_LINE_BREAKER)?,
                connect_timeout,
            );
            resilience_keys::check_slow_below(
                check,
                raw,
                &breaker,
                connect_timeout,
                "feed.connect_timeout_ms",
            )?;
            Ok(FeedConfig::Soup(SoupFeedConfig {
                breaker,
                server,
                client,
                connect_timeout,
                reconnect,
                reconnect_seed: None,
                max_reconnects: u32::try_from(max_reconnects)
                    .expect("invariant: the max_reconnects rule fits u32"),
                max_duration,
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_config_parses() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("ticklane.example.toml");
        let config = RunConfig::load(&path).expect("the committed example is valid");
        assert!(matches!(config.feed_config(), Ok(FeedConfig::Mold(_))));
        assert_eq!(
            config.pipeline().map(|p| p.wait).ok(),
            Some(WaitStrategy::SpinYield)
        );
        // Its `[serve]` keys are written out at their defaults.
        assert_eq!(config.serve, ServeSection::default());
    }

    #[test]
    fn the_examples_soupbintcp_line_parses() {
        // The example's commented-out SoupBinTCP `[feed]`, in place of its MoldUDP64 one.
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("ticklane.example.toml");
        let text = std::fs::read_to_string(&path).expect("example");
        let (head, soup) = text
            .split_once("# A SoupBinTCP line instead:\n")
            .expect("the example shows a SoupBinTCP line");
        let head = &head[..=head.find("\n[feed]\n").expect("a [feed] section")];
        let soup: String = soup
            .lines()
            .map(|line| format!("{}\n", line.trim_start_matches("# ")))
            .collect();
        let config = RunConfig::parse(&format!("{head}{soup}"), &path).expect("valid");
        let Ok(FeedConfig::Soup(feed)) = config.feed_config() else {
            panic!("not a SoupBinTCP line: {config:?}");
        };
        assert_eq!(feed.client.server_timeout, Duration::from_secs(15));
        assert_eq!(feed.max_reconnects, 5);
        assert_eq!(feed.connect_timeout, Duration::from_secs(5));
        assert_eq!(
            feed.reconnect,
            BackoffConfig {
                base: Duration::from_millis(100),
                cap: Duration::from_secs(30),
            }
        );
    }

    /// A SoupBinTCP `[feed]` with `extra` lines, parsed.
    fn soup_feed(extra: &str) -> Result<FeedConfig, ConfigError> {
        let text = format!(
            "[feed]\nkind = \"soupbintcp\"\nserver = \"127.0.0.1:26400\"\n\
             username = \"u\"\npassword = \"p\"\n{extra}"
        );
        RunConfig::parse(&text, Path::new("t.toml"))?.feed_config()
    }

    #[test]
    fn reconnect_keys_set_the_timeout_and_backoff_within_their_ranges() {
        let Ok(FeedConfig::Soup(feed)) =
            soup_feed("connect_timeout_ms = 250\nreconnect_base_ms = 7\nreconnect_cap_ms = 900\n")
        else {
            panic!("valid");
        };
        assert_eq!(feed.connect_timeout, Duration::from_millis(250));
        assert_eq!(
            feed.reconnect,
            BackoffConfig {
                base: Duration::from_millis(7),
                cap: Duration::from_millis(900),
            }
        );
        for bad in [
            "connect_timeout_ms = 0",
            "connect_timeout_ms = 600001",
            "reconnect_base_ms = 0",
            "reconnect_base_ms = 60001",
            "reconnect_cap_ms = 0",
            "reconnect_cap_ms = 600001",
        ] {
            let err = soup_feed(bad).expect_err(bad).to_string();
            let key = bad.split(' ').next().expect("a key");
            assert!(err.contains(&format!("feed.{key}")), "{bad}: {err}");
        }
    }

    /// A MoldUDP64 `[feed]` with `extra` lines after it, parsed.
    fn mold_with(extra: &str) -> Result<RunConfig, ConfigError> {
        let text = format!("[feed]\nkind = \"moldudp64\"\nbind = \"127.0.0.1:1\"\n{extra}");
        RunConfig::parse(&text, Path::new("t.toml"))
    }

    #[test]
    fn the_serve_listen_key_is_checked() {
        assert_eq!(mold_with("").expect("valid").serve, ServeSection::default());
        let c = mold_with("[snapshot]\npath = \"/tmp/s\"\n[serve]\nlisten = \"127.0.0.1:7000\"\n")
            .expect("valid");
        assert_eq!(
            c.serve.listen,
            Some("127.0.0.1:7000".parse().expect("addr"))
        );
        for (bad, key) in [
            ("[serve]\nlisten = \"localhost\"", "serve.listen"),
            ("[serve]\nlisten = 7000", "serve.listen"),
            ("[serve]\nbogus = 1", "bogus"),
        ] {
            let err = mold_with(bad).expect_err(bad).to_string();
            assert!(err.contains(key), "{bad}: {err}");
        }
        // The server's initial images come from the snapshot.
        let err = mold_with("[serve]\nlisten = \"127.0.0.1:7000\"\n").expect_err("no snapshot");
        assert_eq!(err.key(), Some("serve.listen"));
        assert!(err.to_string().contains("snapshot.path"), "{err}");
    }

    #[test]
    fn admin_and_feed_name_keys_are_checked() {
        let c = mold_with("").expect("valid");
        assert_eq!(c.feed_name, "feed");
        assert_eq!(c.admin, AdminSection::default());
        let c = mold_with("name = \"nasdaq-a\"\n[admin]\nlisten = \"127.0.0.1:9100\"\ntoken = \"0123456789abcdef\"\n")
            .expect("valid");
        assert_eq!(c.feed_name, "nasdaq-a");
        assert_eq!(
            c.admin.listen,
            Some("127.0.0.1:9100".parse().expect("addr"))
        );
        assert_eq!(c.admin.token, AdminToken::new("0123456789abcdef"));
        for (bad, key) in [
            ("name = \"\"", "feed.name"),
            ("name = \"a/b\"", "feed.name"),
            ("name = 3", "feed.name"),
            ("[admin]\nlisten = \"localhost\"", "admin.listen"),
            ("[admin]\nlisten = 9100", "admin.listen"),
            ("[admin]\ntoken = 5", "admin.token"),
            ("[admin]\nbogus = 1", "bogus"),
        ] {
            let err = mold_with(bad).expect_err(bad).to_string();
            assert!(err.contains(key), "{bad}: {err}");
        }
    }

    /// A MoldUDP64 `[feed]` with `extra` lines, parsed.
    fn mold_feed(extra: &str) -> Result<MoldFeedConfig, ConfigError> {
        let text = format!("[feed]\nkind = \"moldudp64\"\nbind = \"127.0.0.1:1\"\n{extra}");
        match RunConfig::parse(&text, Path::new("t.toml"))?.feed_config()? {
            FeedConfig::Mold(m) => Ok(m),
            FeedConfig::Soup(_) => panic!("a MoldUDP64 line"),
        }
    }

    #[test]
    fn web_listen_is_checked_and_needs_the_snapshot() {
        let c = mold_with("[snapshot]\npath = \"/tmp/s\"\n[web]\nlisten = \"127.0.0.1:8080\"\n")
            .expect("valid");
        assert_eq!(c.web.listen, Some("127.0.0.1:8080".parse().expect("addr")));
        assert_eq!(mold_with("").expect("valid").web, WebSection::default());
        for (bad, key) in [
            (
                "[snapshot]\npath = \"/tmp/s\"\n[web]\nlisten = \"localhost\"",
                "web.listen",
            ),
            (
                "[snapshot]\npath = \"/tmp/s\"\n[web]\nlisten = 8080",
                "web.listen",
            ),
            ("[snapshot]\npath = \"/tmp/s\"\n[web]\nport = 1", "port"),
        ] {
            let err = mold_with(bad).expect_err(bad).to_string();
            assert!(err.contains(key), "{bad}: {err}");
        }
        let err = mold_with("[web]\nlisten = \"127.0.0.1:8080\"\n").expect_err("no snapshot");
        assert_eq!(err.key(), Some("web.listen"));
        assert!(err.to_string().contains("snapshot.path"), "{err}");
    }

    #[test]
    fn a_refused_token_is_not_printed() {
        let err = mold_with("[admin]\ntoken = \"short-secret\"\n").expect_err("too short");
        assert_eq!(err.key(), Some("admin.token"));
        let shown = format!("{err} {err:?}");
        assert!(!shown.contains("short-secret"), "{shown}");
        let c = mold_with("[admin]\ntoken = \"a-long-enough-secret\"\n").expect("valid");
        assert!(!format!("{c:?}").contains("a-long-enough-secret"));
    }

    #[test]
    fn the_token_variable_is_held_to_the_token_rule_and_never_printed() {
        let file = mold_with("[admin]\ntoken = \"file-token-0123456789\"\n").expect("valid");
        for bad in [
            "xyzzy",
            "short-secret",
            "sixteen-chars-\u{e9}",
            "tab\tinside-a-long-token",
        ] {
            let err = file
                .clone()
                .with_admin_token_env(Some(OsStr::new(bad)))
                .expect_err(bad);
            assert_eq!(err.key(), Some("TICKLANE_ADMIN_TOKEN"), "{bad}");
            let shown = format!("{err} {err:?}");
            assert!(!shown.contains(bad), "{shown}");
            assert!(shown.contains("admin.token"), "{shown}");
        }
        let long = "y".repeat(257);
        assert!(file
            .clone()
            .with_admin_token_env(Some(OsStr::new(&long)))
            .is_err());
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let not_utf8 = OsStr::from_bytes(b"\xff-not-utf8-but-long-enough");
            assert!(file.clone().with_admin_token_env(Some(not_utf8)).is_err());
        }
        let env = file
            .clone()
            .with_admin_token_env(Some(OsStr::new("env-token-9876543210")))
            .expect("a valid token");
        assert_eq!(env.admin.token, AdminToken::new("env-token-9876543210"));
        for unset in [None, Some(OsStr::new(""))] {
            let kept = file.clone().with_admin_token_env(unset).expect("unset");
            assert_eq!(kept.admin.token, AdminToken::new("file-token-0123456789"));
        }
    }

    #[test]
    fn line_b_keys_open_a_second_socket_and_an_arbitration_wait() {
        let mold = |extra: &str| {
            let text = format!(
                "[feed]\nkind = \"moldudp64\"\nbind = \"127.0.0.1:26400\"\n\
                 interface = \"127.0.0.2\"\n{extra}"
            );
            RunConfig::parse(&text, Path::new("ab.toml")).and_then(|c| c.feed_config())
        };
        let Ok(FeedConfig::Mold(one)) = mold("") else {
            panic!("valid");
        };
        assert!(one.line_b.is_none());
        assert_eq!(one.recovery.arbitration_wait, Duration::from_micros(200));
        let Ok(FeedConfig::Mold(ab)) =
            mold("b_bind = \"0.0.0.0:26401\"\nb_multicast_group = \"239.1.1.2\"\n")
        else {
            panic!("valid");
        };
        let b = ab.line_b.expect("line B");
        assert_eq!(b.bind, "0.0.0.0:26401".parse().expect("address"));
        assert_eq!(b.multicast_group, Some(Ipv4Addr::new(239, 1, 1, 2)));
        assert_eq!(b.interface, Ipv4Addr::new(127, 0, 0, 2), "A's interface");
        assert_eq!(ab.recovery.arbitration_wait, Duration::from_millis(1));
        let Ok(FeedConfig::Mold(ab)) = mold(
            "b_bind = \"127.0.0.1:26401\"\nb_interface = \"127.0.0.3\"\narbitration_wait_us = 0\n",
        ) else {
            panic!("valid");
        };
        assert_eq!(
            ab.line_b.map(|b| b.interface),
            Some(Ipv4Addr::new(127, 0, 0, 3))
        );
        assert_eq!(ab.recovery.arbitration_wait, Duration::ZERO);
        for (bad, key) in [
            ("b_bind = \"nowhere\"", "feed.b_bind"),
            (
                "b_bind = \"127.0.0.1:1\"\nb_multicast_group = \"10.0.0.1\"",
                "feed.b_multicast_group",
            ),
            (
                "b_bind = \"127.0.0.1:1\"\nb_interface = 7",
                "feed.b_interface",
            ),
            ("b_multicast_group = \"239.1.1.2\"", "feed.b_bind"),
            ("arbitration_wait_us = 100001", "feed.arbitration_wait_us"),
            ("arbitration_wait_us = -1", "feed.arbitration_wait_us"),
        ] {
            let err = mold(bad).expect_err(bad);
            assert_eq!(err.key(), Some(key), "{bad}: {err}");
        }
    }

    #[test]
    fn recovery_and_breaker_keys_set_their_values_and_defaults() {
        let m = mold_feed("").expect("defaults");
        // The documented defaults (`engine/ticklane.example.toml`).
        assert_eq!(m.recovery.start_sequence, Some(1));
        assert_eq!(m.recovery.gap_deadline, Duration::from_secs(5));
        assert_eq!(m.recovery.retry_budget.ratio_percent, 20);
        assert_eq!(m.recovery.retry_budget.window, Duration::from_secs(1));
        assert_eq!((m.recovery.limit.min, m.recovery.limit.max), (1, 64));
        assert_eq!(m.recovery.store_packets, 16_384);
        assert_eq!(m.line_breaker.window, Duration::from_secs(30));
        assert_eq!((m.line_breaker.min_calls, m.line_breaker.probes), (5, 1));
        let server = m.recovery.breaker.expect("a retransmission breaker");
        assert_eq!(
            server.slow_threshold,
            Duration::from_millis(50),
            "half of 100 ms"
        );
        let m = mold_feed(
            "start_sequence = \"join\"\ngap_deadline_ms = 700\nretry_budget_percent = 0\n\
             retry_budget_window_ms = 2500\nlimit_min = 2\nlimit_max = 3\n\
             breaker_window_ms = 4000\nbreaker_min_calls = 9\nbreaker_failure_percent = 30\n\
             breaker_slow_percent = 40\nbreaker_slow_ms = 60\nbreaker_open_ms = 800\n\
             breaker_probes = 4\nreorder_store_packets = 100000\n",
        )
        .expect("valid");
        let r = m.recovery;
        assert_eq!(r.store_packets, 100_000);
        assert_eq!(r.start_sequence, None);
        assert_eq!(r.gap_deadline, Duration::from_millis(700));
        assert_eq!(
            (r.retry_budget.ratio_percent, r.retry_budget.window),
            (0, Duration::from_millis(2500))
        );
        assert_eq!((r.limit.min, r.limit.max, r.limit.initial), (2, 3, 3));
        let b = m.line_breaker;
        assert_eq!(
            (b.window, b.min_calls, b.failure_percent, b.slow_percent),
            (Duration::from_secs(4), 9, 30, 40)
        );
        assert_eq!(
            (b.slow_threshold, b.open_interval, b.probes),
            (Duration::from_millis(60), Duration::from_millis(800), 4)
        );
        assert_eq!(r.breaker, Some(b), "a slow threshold set by hand is kept");
    }

    #[test]
    fn a_glimpse_server_makes_the_line_start_from_a_snapshot() {
        let m = mold_feed("glimpse_server = \"127.0.0.1:26479\"\nglimpse_username = \"gl\"\n")
            .expect("valid");
        let g = m.glimpse.expect("a snapshot start");
        assert_eq!(g.server, "127.0.0.1:26479".parse().expect("addr"));
        assert_eq!(g.credentials, Credentials::parse("gl:").expect("login"));
        assert_eq!(g.max_recovery_gap, DEFAULT_MAX_RECOVERY_GAP);
        let m = mold_feed(
            "glimpse_server = \"127.0.0.1:1\"\nglimpse_username = \"gl\"\nmax_recovery_gap = 500",
        )
        .expect("valid");
        assert_eq!(m.glimpse.map(|g| g.max_recovery_gap), Some(500));
        let m = mold_feed(
            "start_sequence = \"snapshot\"\nglimpse_server = \"127.0.0.1:26479\"\n\
             glimpse_username = \"gl\"\nglimpse_password = \"pw\"\n",
        )
        .expect("valid");
        assert_eq!(
            m.glimpse.map(|g| g.credentials),
            Some(Credentials::parse("gl:pw").expect("login"))
        );
        assert!(mold_feed("").expect("valid").glimpse.is_none());
        for (bad, key) in [
            ("start_sequence = \"snapshot\"", "feed.glimpse_server"),
            ("glimpse_username = \"gl\"", "feed.glimpse_server"),
            ("max_recovery_gap = 500", "feed.glimpse_server"),
            (
                "glimpse_server = \"127.0.0.1:1\"\nglimpse_username = \"gl\"\nmax_recovery_gap = 0",
                "feed.max_recovery_gap",
            ),
            (
                "glimpse_server = \"127.0.0.1:26479\"",
                "feed.glimpse_username",
            ),
            (
                "glimpse_server = \"0.0.0.0:1\"\nglimpse_username = \"gl\"",
                "feed.glimpse_server",
            ),
            (
                "glimpse_server = \"127.0.0.1:1\"\nglimpse_username = \"seven77\"",
                "feed.glimpse_username",
            ),
        ] {
            let err = mold_feed(bad).expect_err(bad);
            assert_eq!(err.key(), Some(key), "{bad}: {err}");
        }
        let conflict = mold_feed(
            "start_sequence = 1\nglimpse_server = \"127.0.0.1:1\"\nglimpse_username = \"gl\"",
        )
        .expect_err("a snapshot server with a start from 1");
        assert!(
            conflict.to_string().contains("feed.start_sequence is not"),
            "{conflict}"
        );
        let secret = mold_feed(
            "glimpse_server = \"127.0.0.1:1\"\nglimpse_username = \"gl\"\n\
             glimpse_password = \"much-too-long-secret\"",
        )
        .expect_err("a password over 10 characters");
        assert_eq!(secret.key(), Some("feed.glimpse_password"));
        assert!(!secret.to_string().contains("much-too-long"), "{secret}");
        assert!(
            soup_feed("glimpse_server = \"127.0.0.1:1\"").is_err(),
            "MoldUDP64 only"
        );
    }

    #[test]
    fn recovery_and_breaker_keys_refuse_bad_values_by_name() {
        for bad in [
            "start_sequence = 2",
            "start_sequence = \"now\"",
            "gap_deadline_ms = 0",
            "reorder_store_packets = 63",
            "reorder_store_packets = 1048577",
            "retry_budget_percent = 1001",
            "retry_budget_window_ms = 5",
            "limit_min = 0",
            "limit_max = 4097",
            "breaker_window_ms = 1",
            "breaker_min_calls = 0",
            "breaker_failure_percent = 0",
            "breaker_slow_percent = 101",
            "breaker_slow_ms = 0",
            "breaker_open_ms = 0",
            "breaker_probes = 0",
        ] {
            let err = mold_feed(bad).expect_err(bad).to_string();
            let key = bad.split(' ').next().expect("a key");
            assert!(err.contains(&format!("feed.{key}")), "{bad}: {err}");
        }
        let err = mold_feed("limit_min = 5\nlimit_max = 4").expect_err("min > max");
        let text = err.to_string();
        assert_eq!(err.key(), Some("feed.limit_min"));
        assert!(text.contains("feed.limit_max"), "{text}");
        let err = mold_feed("breaker_slow_ms = 100").expect_err("not below 100 ms");
        assert_eq!(err.key(), Some("feed.breaker_slow_ms"));
        assert!(
            err.to_string().contains("feed.retransmit_timeout_ms"),
            "{err}"
        );
        let err = soup_feed("breaker_slow_ms = 300\nconnect_timeout_ms = 300")
            .expect_err("not below the connect timeout");
        assert!(err.to_string().contains("feed.connect_timeout_ms"), "{err}");
        assert!(soup_feed("start_sequence = 1").is_err(), "MoldUDP64 only");
        let Ok(FeedConfig::Soup(s)) = soup_feed("connect_timeout_ms = 250") else {
            panic!("valid");
        };
        assert_eq!(s.breaker.slow_threshold, Duration::from_millis(125));
    }

    #[test]
    fn unknown_keys_name_the_file_and_key() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("bad.toml");
        std::fs::write(
            &path,
            "[feed]\nkind = \"moldudp64\"\nbind = \"127.0.0.1:1\"\nbogus = 1\n",
        )
        .expect("write");
        let e = RunConfig::load(&path).expect_err("unknown key");
        assert_eq!(e.location().map(|l| l.line), Some(4));
        let e = e.to_string();
        assert!(e.contains("bad.toml") && e.contains("bogus"), "{e}");
    }

    #[test]
    fn a_value_changed_after_loading_is_refused_on_conversion() {
        let text = "[feed]\nkind = \"moldudp64\"\nbind = \"127.0.0.1:1\"\n";
        let mut config = RunConfig::parse(text, Path::new("x.toml")).expect("valid");
        config.engine.ring_slots = 3;
        let e = config.pipeline().expect_err("3 slots");
        assert_eq!(e.key(), Some("engine.ring_slots"));
        assert_eq!(e.location(), None);
        if let FeedConfig::Mold(m) = &mut config.feed {
            m.silence_timeout = Duration::ZERO;
        }
        let e = config.feed_config().expect_err("zero timeout");
        assert_eq!(e.key(), Some("feed.silence_timeout_s"));
    }
}
