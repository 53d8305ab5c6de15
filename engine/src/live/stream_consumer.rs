//! A consumer of the line's update stream that the command starts beside the servers: the
//! Aeron publisher, which lives in its own crate behind the command's `aeron` feature, so
//! that the engine builds without Aeron's C toolchain.

use std::io;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use crate::admin::StageMetrics;
use crate::config::RunConfig;
use crate::dependency::Dependency;
use crate::health::Health;
use crate::overload::SubscriberHub;

/// What a consumer reports to: its series for `/metrics`, its own dependency handle (made
/// before the admin server starts, so that `/metrics` and the admin's commands have it),
/// and the process's health.
#[derive(Clone, Copy, Debug)]
pub struct ConsumerHandles<'a> {
    /// Where its series go, once it has them.
    pub metrics: &'a OnceLock<Arc<dyn StageMetrics>>,
    /// Its dependency, named `{feed}.{suffix}` by [`StreamConsumer::dependency`].
    pub dependency: Option<&'a Arc<Dependency>>,
    /// The process's health.
    pub health: &'a Arc<Health>,
}

/// Started once the line's sockets are open (with the subscriber server), told when the
/// line has ended; what it reports is its own.
pub trait StreamConsumer {
    /// Whether it runs for this configuration (the Aeron publisher: when a channel is set).
    fn wanted(&self, config: &RunConfig) -> bool;

    /// The suffix of its dependency's name (`{feed}.{suffix}`), if it is one: something
    /// it calls whose breaker and counts `/metrics` shows beside the line's.
    fn dependency(&self) -> Option<&'static str> {
        None
    }

    /// Starts taking the update stream from `hub`, reading books from the snapshot at
    /// `snapshot`, as `config` says, reporting to `handles`.
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
        handles: ConsumerHandles<'_>,
    ) -> io::Result<()>;

    /// The line has ended and its update stream is closed: finish what is pending.
    fn line_ended(&mut self);
}
