//! Graceful shutdown: SIGTERM and SIGINT set a flag the stages poll; they stop reading,
//! drain the ring, flush the snapshot and return.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// A flag set by SIGTERM or SIGINT. A second signal of either kind ends the process at once
/// (exit status 130), for a stage that does not stop.
///
/// # Errors
///
/// If the handlers cannot be installed.
pub fn install_shutdown() -> std::io::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        // Order matters: the conditional shutdown is checked before the flag is set, so the
        // first signal only sets the flag and the second exits.
        signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&flag))?;
        signal_hook::flag::register(signal, Arc::clone(&flag))?;
    }
    Ok(flag)
}
