//! Why a configuration file was refused: one typed error, formatted once where it is shown.
//!
//! Every variant names the file; every refused value names its key by its full dotted path
//! (`feed.silence_timeout_s`), the value as written, what the key accepts, and the line and
//! column where the file says it. Each is a usage error: the binary exits with status 2.

use core::fmt;
use std::io;
use std::path::PathBuf;

use super::allowed::Allowed;

/// A place in the file: 1-based line and column (in characters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Location {
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1, in characters.
    pub column: usize,
}

impl Location {
    /// The line and column of byte `offset` in `text` (the end of `text` if past it).
    pub fn of_offset(text: &str, offset: usize) -> Location {
        let mut end = offset.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let before = &text[..end];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        Location {
            line: before.matches('\n').count() + 1,
            column: before[line_start..].chars().count() + 1,
        }
    }
}

/// Where an error points: the file, and the line and column when the file says it there.
/// A value changed after loading has no line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    /// The configuration file.
    pub path: PathBuf,
    /// Where in it, when known.
    pub at: Option<Location>,
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.at {
            Some(Location { line, column }) => {
                write!(f, "{}:{line}:{column}", self.path.display())
            }
            None => write!(f, "{}", self.path.display()),
        }
    }
}

/// Two keys whose values are each in range but cannot be used together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conflict {
    /// `engine.max_books * 2 * engine.levels_per_side` price levels, reserved at start-up,
    /// exceed the level table's limit.
    LevelTable {
        /// `engine.max_books`.
        max_books: u64,
        /// `engine.levels_per_side`.
        levels_per_side: u64,
        /// Bytes the table would take.
        bytes: u64,
        /// Most bytes allowed.
        max_bytes: u64,
    },
    /// `engine.reader_core` and `engine.book_core` name the same core while both threads
    /// busy-spin: each would starve the other.
    SameBusyCore {
        /// The core.
        core: usize,
    },
    /// `feed.breaker_slow_ms` is not below the timeout of the calls the breaker guards: no
    /// call would ever be slow, it would time out first.
    SlowNotBelowTimeout {
        /// `feed.breaker_slow_ms`.
        slow_ms: u64,
        /// The timeout's key.
        timeout_key: &'static str,
        /// Its value.
        timeout_ms: u64,
    },
    /// `feed.limit_min` is above `feed.limit_max`.
    LimitBounds {
        /// `feed.limit_min`.
        min: u32,
        /// `feed.limit_max`.
        max: u32,
    },
    /// `web.listen` (or `--web`) without `snapshot.path`: the browser view reads the
    /// snapshot.
    WebWithoutSnapshot,
    /// `serve.listen` (or `--serve`) without `snapshot.path`: the subscriber server's
    /// initial book images come from the snapshot.
    ServeWithoutSnapshot,
    /// `aeron.channel` (or `--aeron`) without `snapshot.path`: the publisher reads the books
    /// from the snapshot.
    AeronWithoutSnapshot,
    /// `aeron.dir` and `aeron.embedded_driver = true` together.
    AeronDriverTwice,
    /// `aeron.embedded_driver = false` without `aeron.dir`: no driver to publish through.
    AeronNoDriver,
    /// `serve.retry_after_min_ms` is not below `serve.retry_after_max_ms`: one fixed
    /// retry-after sends every refused client back in the same second.
    RetryAfterNotARange {
        /// `serve.retry_after_min_ms`.
        min_ms: u32,
        /// `serve.retry_after_max_ms`.
        max_ms: u32,
    },
    /// `serve.idle_timeout_ms` is under three `serve.heartbeat_ms`: a healthy client that
    /// heartbeats on time could be cut.
    IdleUnderHeartbeats {
        /// `serve.idle_timeout_ms`.
        idle_ms: u64,
        /// `serve.heartbeat_ms`.
        heartbeat_ms: u32,
    },
    /// `feed.glimpse_server` with a `feed.start_sequence` other than `"snapshot"`: the
    /// snapshot server is what a line starts from.
    GlimpseWithoutSnapshotStart,
    /// One of `serve.tls_cert` and `serve.tls_key` without the other.
    TlsHalf {
        /// The key that is set.
        set: &'static str,
        /// The key that is missing.
        missing: &'static str,
    },
    /// `serve.low_water_bytes` is not below `serve.high_water_bytes`.
    WaterMarks {
        /// `serve.low_water_bytes`.
        low: u64,
        /// `serve.high_water_bytes`.
        high: u64,
    },
}

impl Conflict {
    /// The keys involved, as dotted paths.
    pub fn keys(&self) -> [&'static str; 2] {
        match self {
            Conflict::LevelTable { .. } => ["engine.max_books", "engine.levels_per_side"],
            Conflict::SameBusyCore { .. } => ["engine.reader_core", "engine.book_core"],
            Conflict::SlowNotBelowTimeout { timeout_key, .. } => {
                ["feed.breaker_slow_ms", timeout_key]
            }
            Conflict::LimitBounds { .. } => ["feed.limit_min", "feed.limit_max"],
            Conflict::WebWithoutSnapshot => ["web.listen", "snapshot.path"],
            Conflict::ServeWithoutSnapshot => ["serve.listen", "snapshot.path"],
            Conflict::AeronWithoutSnapshot => ["aeron.channel", "snapshot.path"],
            Conflict::AeronDriverTwice => ["aeron.dir", "aeron.embedded_driver"],
            Conflict::AeronNoDriver => ["aeron.embedded_driver", "aeron.dir"],
            Conflict::RetryAfterNotARange { .. } => {
                ["serve.retry_after_min_ms", "serve.retry_after_max_ms"]
            }
            Conflict::IdleUnderHeartbeats { .. } => ["serve.idle_timeout_ms", "serve.heartbeat_ms"],
            Conflict::WaterMarks { .. } => ["serve.low_water_bytes", "serve.high_water_bytes"],
            Conflict::TlsHalf { set, missing } => [set, missing],
            Conflict::GlimpseWithoutSnapshotStart => ["feed.glimpse_server", "feed.start_sequence"],
        }
    }
}

impl fmt::Display for Conflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Conflict::LevelTable {
                max_books,
                levels_per_side,
                bytes,
                max_bytes,
            } => write!(
                f,
                "engine.max_books = {max_books} with engine.levels_per_side = {levels_per_side} \
                 needs {bytes} bytes of price levels, allocated at start-up; allowed: \
                 max_books * 2 * levels_per_side * 16 bytes in 1 ..= {max_bytes} (16 GiB): \
                 lower one of them"
            ),
            Conflict::SameBusyCore { core } => write!(
                f,
                "engine.reader_core and engine.book_core are both {core} with \
                 engine.wait = \"busy-spin\": two spinning threads on one core starve each other; \
                 allowed: different cores, or wait = \"spin-yield\" or \"park\""
            ),
            Conflict::SlowNotBelowTimeout {
                slow_ms,
                timeout_key,
                timeout_ms,
            } => write!(
                f,
                "feed.breaker_slow_ms = {slow_ms} is not below {timeout_key} = {timeout_ms} ms: \
                 a call that slow times out first, so none would ever count as slow; allowed: \
                 feed.breaker_slow_ms < {timeout_ms}"
            ),
            Conflict::LimitBounds { min, max } => write!(
                f,
                "feed.limit_min = {min} is above feed.limit_max = {max}; allowed: \
                 limit_min <= limit_max"
            ),
            Conflict::GlimpseWithoutSnapshotStart => write!(
                f,
                "feed.glimpse_server is set but feed.start_sequence is not \"snapshot\": the \
                 GLIMPSE server is what a line starts from; leave feed.start_sequence out (it \
                 is then \"snapshot\"), or leave feed.glimpse_server out"
            ),
            Conflict::WebWithoutSnapshot => write!(
                f,
                "web.listen (or --web) is set but snapshot.path is not: the browser view \
                 reads its books from the snapshot; set snapshot.path"
            ),
            Conflict::ServeWithoutSnapshot => write!(
                f,
                "serve.listen (or --serve) is set but snapshot.path is not: the subscriber \
                 server's initial book images come from the snapshot; set snapshot.path"
            ),
            Conflict::AeronWithoutSnapshot => write!(
                f,
                "aeron.channel (or --aeron) is set but snapshot.path is not: the Aeron \
                 publisher reads its books from the snapshot; set snapshot.path"
            ),
            Conflict::AeronDriverTwice => write!(
                f,
                "aeron.dir names a running media driver and aeron.embedded_driver = true \
                 asks for one in the process: keep one"
            ),
            Conflict::AeronNoDriver => write!(
                f,
                "aeron.embedded_driver = false but aeron.dir is not set: name the running \
                 media driver's directory, or leave aeron.embedded_driver out"
            ),
            Conflict::RetryAfterNotARange { min_ms, max_ms } => write!(
                f,
                "serve.retry_after_min_ms = {min_ms} is not below serve.retry_after_max_ms = \
                 {max_ms}: one fixed retry-after sends every refused client back in the same \
                 second, to be refused again; allowed: retry_after_min_ms < retry_after_max_ms"
            ),
            Conflict::IdleUnderHeartbeats {
                idle_ms,
                heartbeat_ms,
            } => write!(
                f,
                "serve.idle_timeout_ms = {idle_ms} is under three serve.heartbeat_ms = \
                 {heartbeat_ms}: a client that heartbeats on time could be cut; allowed: \
                 idle_timeout_ms >= 3 * heartbeat_ms"
            ),
            Conflict::TlsHalf { set, missing } => write!(
                f,
                "{set} is set without {missing}: TLS needs the certificate and its key; \
                 allowed: both, or neither (plain TCP)"
            ),
            Conflict::WaterMarks { low, high } => write!(
                f,
                "serve.low_water_bytes = {low} is not below serve.high_water_bytes = {high}; \
                 allowed: low_water_bytes < high_water_bytes"
            ),
        }
    }
}

/// Why a configuration could not be used. Every variant is a usage error (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    ///
    /// The OS error is part of the message and deliberately not the error's `source()`, so
    /// an error chain printed at the edge shows it once.
    #[error("cannot read the configuration file {}: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        error: io::Error,
    },
    /// The file is not TOML, or has a key this schema does not know, or a section that is
    /// not a table. The parser's message names the line, the column and the key.
    #[error("{}: {error}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// Where the parser stopped (its message says it too).
        at: Option<Location>,
        /// The parser's error (boxed: it is large, and this path is cold); part of the
        /// message, not the `source()`, as for [`ConfigError::Read`].
        error: Box<toml::de::Error>,
    },
    /// A key that has no default is absent.
    #[error("{place}: missing key {key}; expected {allowed}")]
    Missing {
        /// The file, and the section that lacks it.
        place: Place,
        /// Full dotted path of the key.
        key: &'static str,
        /// What it accepts.
        allowed: Allowed,
    },
    /// A value of the wrong type or out of range.
    #[error("{place}: {key} = {value} is refused; allowed: {allowed}")]
    Value {
        /// The file, and where the value is written.
        place: Place,
        /// Full dotted path of the key.
        key: &'static str,
        /// The value as the file gives it (TOML syntax).
        value: toml::Value,
        /// What the key accepts.
        allowed: Allowed,
    },
    /// A key of the other feed kind (`server` in a MoldUDP64 line, say).
    #[error(
        "{place}: {key} is a key of kind = \"{belongs_to}\" feeds, but this feed is \
         kind = \"{kind}\"; allowed: the keys of a {kind} feed"
    )]
    OtherKindKey {
        /// The file, and where the key is written.
        place: Place,
        /// Full dotted path of the key.
        key: &'static str,
        /// The feed's kind.
        kind: &'static str,
        /// The kind the key belongs to.
        belongs_to: &'static str,
    },
    /// An environment variable that stands in for a key (`TICKLANE_ADMIN_TOKEN` for
    /// `admin.token`) holds a value that key would refuse. The value is a secret: never shown.
    #[error(
        "the environment variable {variable} (it replaces {key}) = \"<redacted>\" is refused; \
         allowed: {allowed}"
    )]
    Environment {
        /// The variable.
        variable: &'static str,
        /// The key it replaces, whose rule it is held to.
        key: &'static str,
        /// What the key accepts.
        allowed: Allowed,
    },
    /// A certificate or key file named by a key cannot serve: unreadable, not matching,
    /// expired. The error names the file.
    #[error("{place}: {key}: {error}")]
    Tls {
        /// The configuration file, and where the key is written.
        place: Place,
        /// Full dotted path of the key.
        key: &'static str,
        /// What is wrong with the file it names (boxed: it is large, and this path is
        /// cold).
        error: Box<ticklane_serve::tls::TlsConfigError>,
    },
    /// The accounts file `serve.accounts` names cannot be used: unreadable, or an account
    /// not valid (the error names the file and its line).
    #[error("{place}: serve.accounts: {error}")]
    Accounts {
        /// The configuration file, and where the key is written.
        place: Place,
        /// What is wrong with the accounts file (boxed: cold and large).
        error: Box<ticklane_serve::accounts::AccountsError>,
    },
    /// Two values each in range that cannot be used together.
    #[error("{place}: {conflict}")]
    Conflict {
        /// The file, and where the second of the keys is written.
        place: Place,
        /// What clashes.
        conflict: Conflict,
    },
}

impl ConfigError {
    /// The full dotted path of the key at fault (the first, for a conflict; for an
    /// environment variable, the variable's name); `None` when the file could not be read or
    /// parsed.
    pub fn key(&self) -> Option<&'static str> {
        match self {
            ConfigError::Read { .. } | ConfigError::Syntax { .. } => None,
            ConfigError::Environment { variable, .. } => Some(variable),
            ConfigError::Missing { key, .. }
            | ConfigError::Value { key, .. }
            | ConfigError::OtherKindKey { key, .. }
            | ConfigError::Tls { key, .. } => Some(key),
            ConfigError::Accounts { .. } => Some("serve.accounts"),
            ConfigError::Conflict { conflict, .. } => Some(conflict.keys()[0]),
        }
    }

    /// Line and column in the file, where the error has one.
    pub fn location(&self) -> Option<Location> {
        match self {
            ConfigError::Read { .. } | ConfigError::Environment { .. } => None,
            ConfigError::Syntax { at, .. } => *at,
            ConfigError::Missing { place, .. }
            | ConfigError::Value { place, .. }
            | ConfigError::OtherKindKey { place, .. }
            | ConfigError::Tls { place, .. }
            | ConfigError::Accounts { place, .. }
            | ConfigError::Conflict { place, .. } => place.at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_become_lines_and_columns() {
        let text = "a = 1\n\n[feed]\nbind = \"é x\"\n";
        assert_eq!(
            Location::of_offset(text, 0),
            Location { line: 1, column: 1 }
        );
        let bind = text.find("bind").expect("present");
        assert_eq!(
            Location::of_offset(text, bind + 7),
            Location { line: 4, column: 8 }
        );
        let x = text.find('x').expect("present");
        assert_eq!(
            Location::of_offset(text, x),
            Location {
                line: 4,
                column: 11
            }
        );
    }
}
