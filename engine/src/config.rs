//! `ticklane run --config FILE`: the TOML file that names the feed, the cores, the wait
//! strategy, the capacities and the snapshot. `engine/ticklane.example.toml` documents
//! every key.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use ticklane_feed::moldudp64::{RecoveryConfig, Session};
use ticklane_feed::net::UdpFeedConfig;
use ticklane_feed::soupbintcp::{ClientConfig, Credentials};

use crate::book::BookConfig;
use crate::pipeline::{MoldFeedConfig, PipelineConfig, SoupFeedConfig, WaitStrategy};

/// Why a configuration could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// The file is not valid TOML for this schema.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message (it names the line and the key).
        message: String,
    },
    /// A value is out of range or inconsistent.
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// The whole file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// Threads, cores, capacities.
    #[serde(default)]
    pub engine: EngineSection,
    /// The snapshot file.
    #[serde(default)]
    pub snapshot: SnapshotSection,
    /// The feed line.
    pub feed: FeedSection,
}

/// `[engine]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EngineSection {
    /// `busy-spin`, `spin-yield` (default) or `park`.
    pub wait: String,
    /// Core of the reader thread (unpinned if absent).
    pub reader_core: Option<usize>,
    /// Core of the book thread (unpinned if absent).
    pub book_core: Option<usize>,
    /// Ring slots between reader and book thread.
    pub ring_slots: usize,
    /// Most live orders.
    pub max_orders: usize,
    /// Most stocks with a book.
    pub max_books: usize,
    /// Most price levels per side of a book.
    pub levels_per_side: usize,
}

impl Default for EngineSection {
    fn default() -> Self {
        let books = BookConfig::default();
        EngineSection {
            wait: "spin-yield".into(),
            reader_core: None,
            book_core: None,
            ring_slots: PipelineConfig::default().ring_slots,
            max_orders: books.max_orders,
            max_books: books.max_books,
            levels_per_side: books.levels_per_side,
        }
    }
}

/// `[snapshot]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SnapshotSection {
    /// Path of the memory-mapped snapshot file (`/dev/shm/...` keeps it in memory).
    pub path: Option<PathBuf>,
    /// Levels per side in each slot.
    pub depth: usize,
    /// Instrument slots.
    pub capacity: usize,
}

impl Default for SnapshotSection {
    fn default() -> Self {
        SnapshotSection {
            path: None,
            depth: 10,
            capacity: 16_384,
        }
    }
}

/// `[feed]`: one line, MoldUDP64 or SoupBinTCP.
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum FeedSection {
    /// MoldUDP64 over UDP, with a retransmission server.
    Moldudp64 {
        /// Address to bind for the data (the group's port on `0.0.0.0` for multicast).
        bind: SocketAddr,
        /// Multicast group to join, if any.
        multicast_group: Option<Ipv4Addr>,
        /// Interface for the group (default 127.0.0.1).
        interface: Option<Ipv4Addr>,
        /// Retransmission request server.
        request_server: Option<SocketAddr>,
        /// Seconds of silence before the feed is declared dead (default 5).
        silence_timeout_s: Option<f64>,
        /// Milliseconds to wait for a retransmission before asking again (default 100).
        retransmit_timeout_ms: Option<u64>,
        /// Stop after this many seconds (default: run to end of session).
        max_duration_s: Option<f64>,
    },
    /// SoupBinTCP 4.1 over TCP.
    Soupbintcp {
        /// The server.
        server: SocketAddr,
        /// Login username (at most 6 characters).
        username: String,
        /// Login password (at most 10 characters).
        password: String,
        /// Session to join (blank: the current one).
        session: Option<String>,
        /// First sequence wanted (1: from the start; 0: from now).
        next_sequence: Option<u64>,
        /// Seconds of server silence before it is declared gone (default 15).
        server_timeout_s: Option<f64>,
        /// Reconnects (each resuming at the next sequence) before giving up (default 5).
        max_reconnects: Option<u32>,
        /// Stop after this many seconds (default: run to end of session).
        max_duration_s: Option<f64>,
    },
}

/// A feed line ready to open.
#[derive(Clone, Debug)]
pub enum FeedConfig {
    /// MoldUDP64.
    Mold(MoldFeedConfig),
    /// SoupBinTCP.
    Soup(SoupFeedConfig),
}

fn seconds(s: Option<f64>, default: f64) -> Duration {
    Duration::from_secs_f64(s.filter(|v| v.is_finite() && *v > 0.0).unwrap_or(default))
}

impl RunConfig {
    /// Reads and checks a configuration file.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming the file and, for parse errors, the line and key.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let config: RunConfig = toml::from_str(&text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        config.pipeline().map_err(|message| ConfigError::Invalid {
            path: path.to_path_buf(),
            message,
        })?;
        config
            .feed_config()
            .map_err(|message| ConfigError::Invalid {
                path: path.to_path_buf(),
                message,
            })?;
        Ok(config)
    }

    /// The pipeline's threads, cores and capacities.
    ///
    /// # Errors
    ///
    /// A message for an unknown wait strategy or a zero capacity.
    pub fn pipeline(&self) -> Result<PipelineConfig, String> {
        let e = &self.engine;
        if e.ring_slots == 0 || e.max_orders == 0 || e.max_books == 0 || e.levels_per_side == 0 {
            return Err("[engine] capacities must be at least 1".into());
        }
        Ok(PipelineConfig {
            ring_slots: e.ring_slots,
            wait: e.wait.parse::<WaitStrategy>()?,
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
    /// A message for credentials or a session name that do not fit their fields.
    pub fn feed_config(&self) -> Result<FeedConfig, String> {
        match &self.feed {
            FeedSection::Moldudp64 {
                bind,
                multicast_group,
                interface,
                request_server,
                silence_timeout_s,
                retransmit_timeout_ms,
                max_duration_s,
            } => Ok(FeedConfig::Mold(MoldFeedConfig {
                udp: UdpFeedConfig {
                    bind: *bind,
                    multicast_group: *multicast_group,
                    interface: interface.unwrap_or(Ipv4Addr::LOCALHOST),
                    ..UdpFeedConfig::default()
                },
                request_server: *request_server,
                recovery: RecoveryConfig {
                    retransmit_timeout: Duration::from_millis(
                        retransmit_timeout_ms.unwrap_or(100).max(1),
                    ),
                    ..RecoveryConfig::default()
                },
                silence_timeout: seconds(*silence_timeout_s, 5.0),
                max_duration: max_duration_s.map(|s| seconds(Some(s), s)),
            })),
            FeedSection::Soupbintcp {
                server,
                username,
                password,
                session,
                next_sequence,
                server_timeout_s,
                max_reconnects,
                max_duration_s,
            } => {
                let credentials = Credentials::new(username.as_bytes(), password.as_bytes())
                    .ok_or("[feed] username is at most 6 and password at most 10 characters")?;
                let mut client = ClientConfig::new(credentials);
                if let Some(name) = session {
                    client.session = Session::new(name.as_bytes())
                        .ok_or("[feed] session is at most 10 characters")?;
                }
                client.next_sequence = next_sequence.unwrap_or(1);
                client.server_timeout = seconds(*server_timeout_s, 15.0);
                Ok(FeedConfig::Soup(SoupFeedConfig {
                    server: *server,
                    client,
                    connect_timeout: Duration::from_secs(5),
                    max_reconnects: max_reconnects.unwrap_or(5),
                    max_duration: max_duration_s.map(|s| seconds(Some(s), s)),
                }))
            }
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
            config.pipeline().map(|p| p.wait),
            Ok(WaitStrategy::SpinYield)
        );
    }

    #[test]
    fn errors_name_the_file_and_key() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("bad.toml");
        std::fs::write(
            &path,
            "[feed]\nkind = \"moldudp64\"\nbind = \"127.0.0.1:1\"\nbogus = 1\n",
        )
        .expect("write");
        let e = RunConfig::load(&path).expect_err("unknown key").to_string();
        assert!(e.contains("bad.toml") && e.contains("bogus"), "{e}");
        std::fs::write(
            &path,
            "[engine]\nwait = \"nap\"\n[feed]\nkind = \"moldudp64\"\nbind = \"127.0.0.1:1\"\n",
        )
        .expect("write");
        let e = RunConfig::load(&path).expect_err("bad wait").to_string();
        assert!(e.contains("nap"), "{e}");
    }
}
