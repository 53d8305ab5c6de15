//! `ticklane subscribe`: follow symbols on a subscriber server and print every update,
//! until a signal, maintenance, or the attempts run out.

use std::io::{self, Write};
use std::ops::ControlFlow;

use anyhow::Result;

use crate::live::install_shutdown;
use crate::serve::client::{pause_unless_stopped, run_subscriber, ClientConfig, ClientError};
use crate::views::{write_subscriber_event, ExitStatus};

/// Runs the client `config` describes, printing each update to `out` as it comes (flushed
/// each time), maintenance to `err`. A signal ends it (exit 130), at once even during a
/// backoff; so does a closed `out` (141), as for the other commands.
///
/// # Errors
///
/// The signal handler cannot be installed, `out` fails otherwise, or the client gives up.
pub fn print_subscriber_updates(
    config: &ClientConfig,
    out: impl Write,
    err: &mut impl Write,
) -> Result<ExitStatus> {
    let stop = install_shutdown()?;
    let mut out = io::BufWriter::new(out);
    let mut failed = None;
    let result = run_subscriber(
        config,
        &stop,
        // A signal during a backoff ends the pause at once, not when the backoff ends.
        &mut |delay| {
            pause_unless_stopped(delay, &stop);
        },
        &mut |event| {
            let written = write_subscriber_event(&mut out, &event).and_then(|()| out.flush());
            match written {
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => {
                    failed = Some(e);
                    ControlFlow::Break(())
                }
            }
        },
    );
    let flushed = out.flush();
    // `… | head` closed stdout: end as the other commands do (141), not as a failure.
    match failed.map_or(flushed, Err) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(ExitStatus::ClosedStdout),
        Err(e) => return Err(e.into()),
        Ok(()) => {}
    }
    match result {
        Ok(()) => Ok(ExitStatus::Interrupted),
        Err(e @ ClientError::Maintenance { .. }) => {
            writeln!(err, "ticklane subscribe: {e}")?;
            Ok(ExitStatus::Failure)
        }
        Err(e) => Err(e.into()),
    }
}
