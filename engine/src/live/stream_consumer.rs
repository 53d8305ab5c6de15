//! A consumer of the line's update stream that the command starts beside the servers: the
//! Aeron publisher, which lives in its own crate behind the command's `aeron` feature, so
//! that the engine builds without Aeron's C toolchain.

use std::io;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use crate::admin::StageMetrics;
use crate::config::RunConfig;
use crate::overload::SubscriberHub;

/// Started once the line's sockets are open (with the subscriber server), told when the
/// line has ended; what it reports is its own.
pub trait StreamConsumer {
    /// Whether it runs for this configuration (the Aeron publisher: when a channel is set).
    fn wanted(&self, config: &RunConfig) -> bool;

    /// Starts taking the update stream from `hub`, reading books from the snapshot at
    /// `snapshot`, as `config` says; its series for `/metrics` go into `metrics`.
    ///
    /// # Errors
    ///
    /// If it cannot start (the run then stops with this error); one of kind
    /// [`io::ErrorKind::Unsupported`] says this build leaves it out (a usage error, exit 2).
    fn start(
        &mut self,
        config: &RunConfig,
        hub: SubscriberHub,
        snapshot: &Path,
        metrics: &OnceLock<Arc<dyn StageMetrics>>,
    ) -> io::Result<()>;

    /// The line has ended and its update stream is closed: finish what is pending.
    fn line_ended(&mut self);
}
