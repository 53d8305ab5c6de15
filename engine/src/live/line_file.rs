//! `ticklane run --config FILE` and the live demo as one call each, with the process's
//! signal handling installed: SIGINT/SIGTERM drain the line (and mark health draining at
//! once), a second signal or an outlasted drain ends the process.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use anyhow::Result;

use super::{
    install_draining_shutdown, install_shutdown, run_configured_line, run_demo,
    ConfiguredLineOptions, ConfiguredLineRun, DemoConfig, DemoReport, RunNotice, StreamConsumer,
};
use crate::config::RunConfig;
use crate::health::Health;

/// Runs the line the file at `path` configures (its environment overrides applied) until
/// it ends or a signal drains it, telling `notice` what happens as it goes; `consumer`
/// (the Aeron publisher) runs beside it when given.
///
/// # Errors
///
/// A configuration error (exit 2), or what [`run_configured_line`] returns.
pub fn run_line_file(
    path: &Path,
    options: ConfiguredLineOptions,
    notice: &mut dyn FnMut(RunNotice<'_>),
    consumer: Option<&mut dyn StreamConsumer>,
) -> Result<ConfiguredLineRun> {
    let config = RunConfig::load(path)?.with_environment()?;
    // Health exists before anything runs: draining starts at the first signal, whatever the
    // line is doing then (waiting out its stagger included).
    let health = Arc::new(Health::new());
    let stop = install_draining_shutdown(
        Some(Arc::clone(&health)),
        Some(config.engine.shutdown_timeout),
    )?;
    Ok(run_configured_line(
        &config, options, health, &stop, notice, consumer,
    )?)
}

/// Runs the live demo until it ends or a signal stops it: its report, and whether a signal
/// stopped it. `started` is called once the signal handler is in place (a signal from then
/// on stops the demo rather than the process), before the demo starts.
///
/// # Errors
///
/// The signal handler could not be installed, `started` failed, or the demo failed.
pub fn run_demo_until_signal(
    config: DemoConfig,
    started: &mut dyn FnMut() -> std::io::Result<()>,
) -> Result<(DemoReport, bool)> {
    let stop = install_shutdown()?;
    started()?;
    let report = run_demo(config, &stop)?;
    Ok((report, stop.load(Ordering::Relaxed)))
}
