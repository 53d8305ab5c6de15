//! `ticklane run --serve ADDR` (or `[serve] listen`): the subscriber server beside the line.

use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{Context, Result};
use ticklane_engine::config::RunConfig;
use ticklane_engine::overload::SubscriberHub;
use ticklane_engine::serve::{
    start_server_stopping_on, AdmitAll, ServeConfig, ServeCounts, ServeHandle, SnapshotImages,
};
use ticklane_engine::snapshot::SnapshotReader;

/// Starts the server on `listen`, reading images from the line's snapshot; the fanout goes
/// to the book thread.
/// The server begins its graceful stop as soon as `stop` (the shutdown flag) is set.
pub fn start(
    listen: SocketAddr,
    config: &RunConfig,
    stop: &Arc<AtomicBool>,
    hub: SubscriberHub,
) -> Result<ServeHandle> {
    let path = config
        .snapshot
        .path
        .as_ref()
        .context("the subscriber server (serve.listen or --serve) needs snapshot.path: the initial book images come from it")?;
    let reader =
        SnapshotReader::open(path).with_context(|| format!("snapshot {}", path.display()))?;
    let server = start_server_stopping_on(
        ServeConfig::new(listen),
        Some(hub),
        Box::new(SnapshotImages::new(reader)),
        Box::new(AdmitAll),
        Arc::clone(stop),
    )
    .with_context(|| format!("subscriber server on {listen} (serve.listen or --serve)"))?;
    println!("ticklane run: subscribers on {}", server.local_addr());
    Ok(server)
}

/// Stops the server gracefully and returns its counts.
pub fn stop(server: ServeHandle) -> Result<ServeCounts> {
    server.stop().context("stopping the subscriber server")
}
