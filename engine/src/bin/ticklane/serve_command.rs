//! `ticklane run --serve ADDR` (or `[serve] listen`): the subscriber server beside the line.

use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use ticklane_engine::config::{Conflict, RunConfig};
use ticklane_engine::overload::SubscriberHub;
use ticklane_engine::serve::{
    start_server_stopping_on, GuardCounters, GuardedAdmission, ServeConfig, ServeCounts,
    ServeHandle, SnapshotImages,
};
use ticklane_engine::serve_guard::{AdmissionConfig, AdmissionCounts};
use ticklane_engine::snapshot::SnapshotReader;

/// The running server and its admission's counts.
pub struct Served {
    server: ServeHandle,
    admission: Arc<GuardCounters>,
}

/// Starts the server on `listen` behind the reconnect-storm defences
/// ([`GuardedAdmission`] with the `[serve]` keys' settings; the server's login timeout is
/// theirs), with the file's heartbeat, idle timeout and write-queue marks, reading
/// images from the line's snapshot; the fanout goes to the book thread.
/// The server begins its graceful stop as soon as `stop` (the shutdown flag) is set.
pub fn start(
    listen: SocketAddr,
    config: &RunConfig,
    stop: &Arc<AtomicBool>,
    hub: SubscriberHub,
) -> Result<Served> {
    let Some(path) = config.snapshot.path.as_ref() else {
        let conflict = Conflict::ServeWithoutSnapshot;
        return Err(super::live_commands::without_snapshot(config, conflict).into());
    };
    let reader =
        SnapshotReader::open(path).with_context(|| format!("snapshot {}", path.display()))?;
    let keys = &config.serve;
    // Per process, from the OS: servers restarted together must not hand their clients the
    // same retry-afters (a fleet's clients would come back in step), and the per-client
    // tables' slot hash must not be keyed by a constant anyone can read in the source.
    let seed = process_seed();
    let admission = GuardedAdmission::new(AdmissionConfig {
        seed: seed.rotate_left(32),
        ..keys.admission
    });
    let counters = admission.counters();
    let serve_config = ServeConfig {
        // Its drain fits inside the process's own bound, so a client that stops reading is
        // cut before the drain watchdog exits 4 over the (already closed) snapshot.
        drain_timeout: ServeConfig::new(listen)
            .drain_timeout
            .min(config.engine.shutdown_timeout / 2),
        login_timeout: Duration::from_millis(u64::from(admission.config().login_timeout_ms)),
        heartbeat_ms: keys.heartbeat_ms,
        idle_timeout: keys.idle_timeout,
        high_water: keys.high_water_bytes,
        low_water: keys.low_water_bytes,
        busy_retry_after_ms: (
            keys.admission.retry_after.min_ms,
            keys.admission.retry_after.max_ms,
        ),
        seed,
        ..ServeConfig::new(listen)
    };
    let server = start_server_stopping_on(
        serve_config,
        Some(hub),
        Box::new(SnapshotImages::new(reader)),
        Box::new(admission),
        Arc::clone(stop),
    )
    .context("subscriber server (serve.listen or --serve)")?;
    println!("ticklane run: subscribers on {}", server.local_addr());
    Ok(Served {
        server,
        admission: counters,
    })
}

/// A seed this process draws from the OS (std's hasher keys are random per process).
fn process_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
}

/// Stops the server gracefully and returns its counts and its admission's.
pub fn stop(served: Served) -> Result<(ServeCounts, AdmissionCounts)> {
    let counts = served
        .server
        .stop()
        .context("stopping the subscriber server")?;
    Ok((counts, served.admission.load()))
}
