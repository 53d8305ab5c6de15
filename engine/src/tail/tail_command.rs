//! The `tail` command as one call: a configured line or a capture, printed to any writer.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};

use super::{tail_capture, tail_config, SymbolFilter, TailReport};
use crate::config::{FeedConfig, RunConfig, NO_REQUEST_SERVER};
use crate::exit_status::ExitStatus;
use crate::pipeline::{Pace, PipelineConfig};

/// What `tail` runs.
#[derive(Clone, Debug)]
pub enum TailInput {
    /// A feed line's run configuration (the file), as for `run`.
    Config(PathBuf),
    /// A captured file, played at a pace.
    Capture {
        /// The file.
        path: PathBuf,
        /// `max`, `recorded`, or `<N>x`.
        pace: Pace,
    },
}

/// Runs `tail` on `input`, printing the update stream of the symbols `filter` admits to
/// `out`; a line without a request server is said to `note` before it starts.
///
/// # Errors
///
/// A configuration error (before anything runs), or an input, allocation or output error.
pub fn run_tail(
    input: &TailInput,
    filter: &SymbolFilter,
    out: impl Write + Send,
    note: &mut dyn FnMut(String),
) -> Result<TailReport> {
    match input {
        TailInput::Config(path) => {
            let config = RunConfig::load(path)?;
            // Converted here first, so a bad value reaches the edge as a ConfigError (exit
            // 2) rather than inside the io::Error that tail_config returns.
            config.pipeline()?;
            if matches!(config.feed_config()?, FeedConfig::Mold(c) if c.request_server.is_none()) {
                note(format!("{}: {NO_REQUEST_SERVER}", path.display()));
            }
            Ok(tail_config(&config, filter, out)?)
        }
        TailInput::Capture { path, pace } => {
            tail_capture(path, *pace, PipelineConfig::default(), filter, out)
                .with_context(|| format!("{}", path.display()))
        }
    }
}

impl TailReport {
    /// 1 when a capture stopped early, else 3 when messages were declared lost, else 0.
    pub fn exit_status(&self) -> ExitStatus {
        if self.input_error.is_some() {
            ExitStatus::Failure
        } else {
            ExitStatus::of_loss(self.declared_lost)
        }
    }
}
