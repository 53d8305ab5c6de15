//! Shutdown that stops taking work first. A signal-handling thread waits
//! for SIGTERM or SIGINT. On the first it marks health draining (so `/health` answers 503 at
//! once, before anything else happens), then sets the flag the stages poll: the reader stops
//! reading, the book thread drains the ring, the snapshot is flushed and marked `CLOSED`, and
//! the command returns. If that takes longer than the bound (`[engine] shutdown_timeout_s`),
//! the process exits with [`DRAIN_TIMED_OUT`] and says why; a second signal exits at once
//! with [`SECOND_SIGNAL`].
//!
//! The thread uses `signal_hook::iterator::Signals`: the handler itself only writes to a
//! pipe, and everything else (health, the flag, the watchdog) runs on an ordinary thread.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::health::Health;
use crate::snapshot::wall_clock_ns;

pub use crate::exit_status::DRAIN_TIMED_OUT;
/// The exit status on a second signal (128 + SIGINT, as shells report an interrupt).
pub const SECOND_SIGNAL: i32 = 130;
/// A signal this soon after the first is the same one delivered twice, not a second:
/// GNU `timeout` (and supervisors that signal a process and then its group) send it to the
/// process and to its process group in the same instant.
pub const ECHO_WINDOW_NS: u64 = 250_000_000;

/// What to do on a signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignalAction {
    /// The first: draining has begun (health says so, the stop flag is set).
    Drain,
    /// A later one: exit now with [`SECOND_SIGNAL`].
    ExitNow,
    /// The first one again, within 250 ms of it: nothing to do.
    Echo,
}

/// The state the signal thread acts on; separate from the thread so it can be tested
/// without sending signals.
#[derive(Debug)]
pub struct DrainControl {
    stop: Arc<AtomicBool>,
    health: Option<Arc<Health>>,
    signals: AtomicU32,
    /// Wall-clock time of the first signal.
    first_ns: AtomicU64,
}

impl DrainControl {
    /// Sets `stop` and marks `health` (if any) draining on the first signal.
    pub fn new(stop: Arc<AtomicBool>, health: Option<Arc<Health>>) -> Self {
        DrainControl {
            stop,
            health,
            signals: AtomicU32::new(0),
            first_ns: AtomicU64::new(0),
        }
    }

    /// A signal arrived at `wall_ns`. Health turns draining before the stop flag is set, so
    /// that no reader of health sees the engine stop taking work while it still says it
    /// serves.
    pub fn on_signal(&self, wall_ns: u64) -> SignalAction {
        if self.signals.fetch_add(1, Ordering::AcqRel) > 0 {
            let first = self.first_ns.load(Ordering::Acquire);
            if wall_ns.saturating_sub(first) < ECHO_WINDOW_NS {
                return SignalAction::Echo;
            }
            return SignalAction::ExitNow;
        }
        self.first_ns.store(wall_ns, Ordering::Release);
        if let Some(h) = &self.health {
            h.begin_draining(wall_ns);
        }
        self.stop.store(true, Ordering::Release);
        SignalAction::Drain
    }
}

/// A stop flag set by SIGTERM or SIGINT; a second signal of either kind ends the process at
/// once (exit status 130), for a stage that does not stop. No health, no drain bound: for the
/// simulator, `record` and the demo.
///
/// # Errors
///
/// If the handlers cannot be installed or the thread cannot start.
pub fn install_shutdown() -> std::io::Result<Arc<AtomicBool>> {
    install_draining_shutdown(None, None)
}

/// As [`install_shutdown`], and on the first signal marks `health` draining at once, and if
/// the drain outlasts `bound`, exits with [`DRAIN_TIMED_OUT`], saying so on stderr.
///
/// # Errors
///
/// If the handlers cannot be installed or the thread cannot start.
pub fn install_draining_shutdown(
    health: Option<Arc<Health>>,
    bound: Option<Duration>,
) -> std::io::Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    let control = DrainControl::new(Arc::clone(&stop), health);
    let mut signals = Signals::new([SIGTERM, SIGINT])?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                match control.on_signal(wall_clock_ns()) {
                    SignalAction::Drain => {
                        if let Some(bound) = bound {
                            start_watchdog(bound, signal);
                        }
                    }
                    SignalAction::ExitNow => {
                        eprintln!("ticklane: second signal ({signal}): exiting at once");
                        std::process::exit(SECOND_SIGNAL);
                    }
                    SignalAction::Echo => {}
                }
            }
        })?;
    Ok(stop)
}

/// Exits with [`DRAIN_TIMED_OUT`] if the process is still running `bound` from now.
fn start_watchdog(bound: Duration, signal: i32) {
    let spawned = std::thread::Builder::new()
        .name("drain-bound".into())
        .spawn(move || {
            // A deadline, not a wait for a condition: if the process is still here when it
            // passes, the drain is late by definition.
            std::thread::sleep(bound);
            // Said as it is: the books may have drained and the snapshot been closed before
            // something after them (a server's own drain) outlasted the bound.
            let snapshot = if crate::snapshot::marked_closed_in_this_process() {
                "the snapshot was closed before (its books drained and flushed)"
            } else {
                "the snapshot is not marked CLOSED"
            };
            eprintln!(
                "ticklane: draining after signal {signal} took longer than {:.1} s \
                 (engine.shutdown_timeout_s); exiting {DRAIN_TIMED_OUT}; {snapshot}",
                bound.as_secs_f64()
            );
            std::process::exit(DRAIN_TIMED_OUT);
        });
    if spawned.is_err() {
        eprintln!("ticklane: cannot start the drain watchdog; the drain is unbounded");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::HealthState;

    #[test]
    fn the_first_signal_drains_health_first_and_the_second_exits() {
        let stop = Arc::new(AtomicBool::new(false));
        let health = Arc::new(Health::new());
        let control = DrainControl::new(Arc::clone(&stop), Some(Arc::clone(&health)));
        assert_eq!(health.report().http_status(), 200);
        assert_eq!(control.on_signal(1_234), SignalAction::Drain);
        assert!(stop.load(Ordering::Acquire));
        let report = health.report();
        assert_eq!(report.draining_since_ns, Some(1_234));
        assert_eq!(report.state, HealthState::Healthy);
        assert_eq!(report.http_status(), 503, "draining answers 503 at once");
        let later = 1_234 + ECHO_WINDOW_NS;
        assert_eq!(control.on_signal(later), SignalAction::ExitNow);
        assert_eq!(control.on_signal(later + 1), SignalAction::ExitNow);
        assert_eq!(health.report().draining_since_ns, Some(1_234));
    }

    #[test]
    fn the_first_signal_delivered_twice_at_once_is_one_signal() {
        // `timeout` signals the process and its group: two deliveries microseconds apart.
        let stop = Arc::new(AtomicBool::new(false));
        let control = DrainControl::new(Arc::clone(&stop), None);
        assert_eq!(control.on_signal(1_000), SignalAction::Drain);
        assert_eq!(control.on_signal(1_000 + 40_000), SignalAction::Echo);
        assert_eq!(
            control.on_signal(1_000 + ECHO_WINDOW_NS - 1),
            SignalAction::Echo
        );
        assert_eq!(
            control.on_signal(1_000 + ECHO_WINDOW_NS),
            SignalAction::ExitNow
        );
    }

    #[test]
    fn without_health_a_signal_still_stops() {
        let stop = Arc::new(AtomicBool::new(false));
        let control = DrainControl::new(Arc::clone(&stop), None);
        assert_eq!(control.on_signal(1), SignalAction::Drain);
        assert!(stop.load(Ordering::Acquire));
    }
}
