//! `ticklane record` as one call: a configuration file's MoldUDP64 line recorded to pcap
//! until end of session or a signal.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::{install_shutdown, record_udp, RecordReport};
use crate::config::{FeedConfig, RunConfig};
use crate::pipeline::MoldFeedConfig;

/// What `record` was asked that it cannot do: said before anything is opened (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum RecordRefused {
    /// The pcap file's folder does not exist.
    #[error("--out {}: the folder {} does not exist", out.display(), folder.display())]
    NoFolder {
        /// The file asked for.
        out: PathBuf,
        /// Its folder.
        folder: PathBuf,
    },
    /// The configuration's line is not MoldUDP64.
    #[error("{}: record takes a MoldUDP64 line (kind = \"moldudp64\")", config.display())]
    NotMoldUdp64 {
        /// The configuration file.
        config: PathBuf,
    },
}

/// Records the line the file at `config` configures to the pcap file `out`, telling
/// `started` the line once its configuration is read, until end of session or a signal.
///
/// # Errors
///
/// [`RecordRefused`], a configuration error, or a [`super::RecordError`].
pub fn record_line_file(
    config: &Path,
    out: &Path,
    started: &mut dyn FnMut(&MoldFeedConfig),
) -> Result<RecordReport> {
    if let Some(folder) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        if !folder.is_dir() {
            return Err(RecordRefused::NoFolder {
                out: out.to_path_buf(),
                folder: folder.to_path_buf(),
            }
            .into());
        }
    }
    let stop = install_shutdown()?;
    let FeedConfig::Mold(feed) = RunConfig::load(config)?.feed_config()? else {
        return Err(RecordRefused::NotMoldUdp64 {
            config: config.to_path_buf(),
        }
        .into());
    };
    started(&feed);
    Ok(record_udp(&feed, out, &stop)?)
}
