//! The `[aeron]` keys: the channel and stream the book updates are published on, which media
//! driver carries them, and the publisher's pacing. The publisher itself is in the
//! `ticklane-aeron` crate (built with the command's `aeron` feature); these keys are read
//! and checked in every build, so a file is refused or taken the same way whatever was
//! built.

use std::path::PathBuf;
use std::time::Duration;

use super::allowed::Allowed;
use super::error::{ConfigError, Conflict};
use super::raw::RawAeron;
use super::validate::Checker;

/// `aeron.stream_id` when absent.
pub const DEFAULT_STREAM_ID: i32 = 1001;
/// `aeron.refresh_cycle_ms` when absent: every book is sent again every 5 s.
pub const DEFAULT_REFRESH_CYCLE: Duration = Duration::from_secs(5);
/// `aeron.heartbeat_ms` when absent.
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(1);
/// `aeron.linger_ms` when absent: how long the end of the stream may wait on back
/// pressure, and how long an embedded driver stays up after it for subscribers to catch up.
pub const DEFAULT_LINGER: Duration = Duration::from_secs(2);

/// `aeron.channel`: an Aeron URI (`aeron:udp?endpoint=HOST:PORT`, `aeron:ipc`, ...); the
/// media driver checks the rest.
pub const CHANNEL: Allowed = Allowed::Ascii {
    min_len: 6,
    max_len: 1024,
};
/// `aeron.stream_id`: Aeron's stream ids are signed 32-bit; 0 and negatives are left to
/// Aeron's own uses.
pub const STREAM_ID: Allowed = Allowed::Integer {
    min: 1,
    max: i32::MAX as u64,
};
/// `aeron.refresh_cycle_ms`.
pub const REFRESH_CYCLE_MS: Allowed = Allowed::Integer {
    min: 100,
    max: 3_600_000,
};
/// `aeron.heartbeat_ms`.
pub const HEARTBEAT_MS: Allowed = Allowed::Integer {
    min: 10,
    max: 60_000,
};
/// `aeron.linger_ms`.
pub const LINGER_MS: Allowed = Allowed::Integer {
    min: 0,
    max: 600_000,
};
/// `aeron.embedded_driver`.
pub const BOOLEAN: Allowed = Allowed::OneOf(&["true", "false"]);

/// `[aeron]`, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AeronSection {
    /// The channel book updates are published on; none when absent (`run --aeron CHANNEL`
    /// also sets it). Needs `snapshot.path`: the publisher reads the books from it.
    pub channel: Option<String>,
    /// The stream id on the channel.
    pub stream_id: i32,
    /// The directory of a running media driver; `None`: one embedded in the process.
    pub dir: Option<PathBuf>,
    /// Every book is sent again once per cycle.
    pub refresh_cycle: Duration,
    /// A heartbeat after this long without a record.
    pub heartbeat: Duration,
    /// The end of the stream's bound on back pressure, and an embedded driver's stay after it.
    pub linger: Duration,
}

impl Default for AeronSection {
    fn default() -> Self {
        AeronSection {
            channel: None,
            stream_id: DEFAULT_STREAM_ID,
            dir: None,
            refresh_cycle: DEFAULT_REFRESH_CYCLE,
            heartbeat: DEFAULT_HEARTBEAT,
            linger: DEFAULT_LINGER,
        }
    }
}

/// `[aeron]`: each key by its rule; `dir` and `embedded_driver = true` together are refused
/// (the updates would go through one driver or the other, not both).
pub fn aeron_section(check: &Checker<'_>, raw: &RawAeron) -> Result<AeronSection, ConfigError> {
    let defaults = AeronSection::default();
    let channel = check.ascii("aeron.channel", &raw.channel, &CHANNEL)?;
    let dir = check.path("aeron.dir", &raw.dir)?;
    let embedded = check.boolean(
        "aeron.embedded_driver",
        &raw.embedded_driver,
        &BOOLEAN,
        dir.is_none(),
    )?;
    if embedded && dir.is_some() {
        let span = raw.embedded_driver.as_ref().map(toml::Spanned::span);
        return Err(check.conflict(Conflict::AeronDriverTwice, span));
    }
    if !embedded && dir.is_none() {
        let span = raw.embedded_driver.as_ref().map(toml::Spanned::span);
        return Err(check.conflict(Conflict::AeronNoDriver, span));
    }
    Ok(AeronSection {
        channel,
        stream_id: i32::try_from(check.integer(
            "aeron.stream_id",
            &raw.stream_id,
            &STREAM_ID,
            DEFAULT_STREAM_ID as u64,
        )?)
        .unwrap_or(DEFAULT_STREAM_ID),
        dir,
        refresh_cycle: check.millis(
            "aeron.refresh_cycle_ms",
            &raw.refresh_cycle_ms,
            &REFRESH_CYCLE_MS,
            defaults.refresh_cycle,
        )?,
        heartbeat: check.millis(
            "aeron.heartbeat_ms",
            &raw.heartbeat_ms,
            &HEARTBEAT_MS,
            defaults.heartbeat,
        )?,
        linger: check.millis(
            "aeron.linger_ms",
            &raw.linger_ms,
            &LINGER_MS,
            defaults.linger,
        )?,
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::RunConfig;

    const FEED: &str = "[feed]\nkind = \"moldudp64\"\nbind = \"127.0.0.1:26477\"\n";

    fn parse(text: &str) -> Result<RunConfig, ConfigError> {
        RunConfig::parse(&format!("{FEED}{text}"), Path::new("line.toml"))
    }

    #[test]
    fn the_keys_are_read_with_their_defaults() {
        let c = parse("[snapshot]\npath = \"/tmp/s\"\n[aeron]\nchannel = \"aeron:ipc\"\n")
            .expect("valid");
        assert_eq!(
            c.aeron,
            AeronSection {
                channel: Some("aeron:ipc".into()),
                ..AeronSection::default()
            }
        );
        let c = parse(
            "[snapshot]\npath = \"/tmp/s\"\n[aeron]\nchannel = \"aeron:ipc\"\nstream_id = 9\n\
             dir = \"/dev/shm/md\"\nrefresh_cycle_ms = 250\nheartbeat_ms = 50\nlinger_ms = 0\n",
        )
        .expect("valid");
        assert_eq!(c.aeron.stream_id, 9);
        assert_eq!(c.aeron.dir.as_deref(), Some(Path::new("/dev/shm/md")));
        assert_eq!(c.aeron.refresh_cycle, Duration::from_millis(250));
        assert_eq!(c.aeron.heartbeat, Duration::from_millis(50));
        assert_eq!(c.aeron.linger, Duration::ZERO);
        assert_eq!(parse("").expect("valid").aeron, AeronSection::default());
    }

    #[test]
    fn refused_values_and_conflicts_name_their_keys() {
        for (text, key) in [
            ("[aeron]\nchannel = \"aeron:ipc\"\n", "snapshot.path"),
            ("[aeron]\nstream_id = 0\n", "aeron.stream_id"),
            ("[aeron]\nrefresh_cycle_ms = 10\n", "aeron.refresh_cycle_ms"),
            (
                "[aeron]\nembedded_driver = \"yes\"\n",
                "aeron.embedded_driver",
            ),
            (
                "[aeron]\ndir = \"/x\"\nembedded_driver = true\n",
                "aeron.embedded_driver",
            ),
            ("[aeron]\nembedded_driver = false\n", "aeron.dir"),
            ("[aeron]\nchannel = \"ipc\"\n", "aeron.channel"),
        ] {
            let e = parse(text).expect_err(text).to_string();
            assert!(e.contains(key), "{text}: {e}");
        }
    }
}
