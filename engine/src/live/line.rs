//! One feed line, MoldUDP64 or SoupBinTCP, through the pipeline.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use ticklane_feed::net::{FeedKeys, NetError};

use super::line_handles::LineHandles;
use crate::clock::Clock;
use crate::config::FeedConfig;
use crate::health::Health;
use crate::overload::{
    EventFanout, OverloadConfig, OverloadCounts, SheddingPublisher, SnapshotSink,
};
use crate::pipeline::{
    run_pipeline_with_latency, ContractViolations, FrameProducer, FrameSource, GuardHandles,
    HealthWatch, LineCounters, MoldSource, MoldSourceReport, PipelineConfig, PipelineReport,
    SoupSource, SoupSourceReport, SourceEnd, ViolationCounts,
};
use crate::publish::NoPublisher;
use crate::snapshot::SnapshotWriter;

/// The keys of a configuration file's `[feed]` addresses (as `config` names them), so that the
/// socket errors of a line read from a file say which key to fix.
pub const FEED_KEYS: FeedKeys = FeedKeys {
    bind: Some("feed.bind"),
    multicast_group: Some("feed.multicast_group"),
    interface: Some("feed.interface"),
    server: Some("feed.server"),
};

/// The reader stage of either kind of line.
// Made once per line and moved into its reader thread once: boxing the larger variant would
// buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum LineSource {
    /// MoldUDP64 over UDP.
    Mold(MoldSource),
    /// SoupBinTCP over TCP.
    Soup(SoupSource),
}

/// What the line's reader did.
#[derive(Debug)]
pub enum LineSourceReport {
    /// MoldUDP64 (boxed: its recovery counters make it several times the SoupBinTCP report).
    Mold(Box<MoldSourceReport>),
    /// SoupBinTCP.
    Soup(SoupSourceReport),
}

impl LineSourceReport {
    /// Why the reader ended.
    pub fn end(&self) -> &SourceEnd {
        match self {
            LineSourceReport::Mold(r) => &r.end,
            LineSourceReport::Soup(r) => &r.end,
        }
    }

    /// Messages the reader pushed into the ring.
    pub fn messages(&self) -> u64 {
        match self {
            LineSourceReport::Mold(r) => r.messages,
            LineSourceReport::Soup(r) => r.messages,
        }
    }
}

impl LineSource {
    /// Opens the line's sockets (MoldUDP64 binds now, so its port is known; SoupBinTCP
    /// connects when it runs). `feed` is a configuration file's `[feed]`: socket errors name
    /// its keys ([`FEED_KEYS`]).
    ///
    /// # Errors
    ///
    /// [`NetError`] naming the operation, the address and the configuration key.
    pub fn open(feed: &FeedConfig, pipeline: &PipelineConfig) -> Result<Self, NetError> {
        Ok(match feed {
            FeedConfig::Mold(c) => LineSource::Mold(MoldSource::open_keyed(
                c.clone(),
                pipeline.wait,
                &FEED_KEYS,
            )?),
            FeedConfig::Soup(c) => LineSource::Soup(
                SoupSource::new(c.clone(), pipeline.wait).with_server_key(FEED_KEYS.server),
            ),
        })
    }

    /// Counts the reader's contract violations (malformed packets or frames) in `violations`.
    pub fn watch_violations(&mut self, violations: Arc<ContractViolations>) {
        match self {
            LineSource::Mold(s) => s.watch_violations(violations),
            LineSource::Soup(s) => s.watch_violations(violations),
        }
    }
}

impl LineSource {
    /// Has the reader copy its stats into `counters` (about once a millisecond).
    pub fn attach_counters(&mut self, counters: Arc<LineCounters>) {
        match self {
            LineSource::Mold(s) => s.set_counters(counters),
            LineSource::Soup(s) => s.set_counters(counters),
        }
    }

    /// Has the reader report to `handles` (those it holds; the reader keeps any it was given
    /// where `handles` has none): manual isolate/close, its breakers' mirrors, the storm
    /// counters, health.
    pub fn attach_guard(&mut self, handles: GuardHandles) {
        match self {
            LineSource::Mold(s) => s.add_handles(handles),
            LineSource::Soup(s) => s.add_handles(handles),
        }
    }
}

impl FrameSource for LineSource {
    type Report = LineSourceReport;

    fn run<Q: FrameProducer>(self, frames: Q, clock: Clock, stop: &AtomicBool) -> LineSourceReport {
        match self {
            LineSource::Mold(s) => LineSourceReport::Mold(Box::new(s.run(frames, clock, stop))),
            LineSource::Soup(s) => LineSourceReport::Soup(s.run(frames, clock, stop)),
        }
    }
}

/// What a line's pipeline did.
pub type LineReport = PipelineReport<LineSourceReport>;

/// A finished line: the pipeline's report, and what overload control did (when there was a
/// snapshot to publish into).
pub struct LineRun {
    /// Reader and book thread reports.
    pub report: LineReport,
    /// Published, shed, conflated, expired, time in overload, maximum sojourn.
    pub overload: Option<OverloadCounts>,
    /// Input that broke the protocol, by kind (never retried; health Degraded).
    pub violations: ViolationCounts,
}

/// Runs a line into `snapshot` (if any) until its session ends, `stop` is set, or its time
/// limit passes; then closes the snapshot. Publication goes through overload control:
/// in order while the book thread keeps up, newest first with conflation while its input
/// queue stands (see `overload`). [`run_line_watched`] without health.
///
/// # Errors
///
/// If the books cannot be allocated or the threads cannot start.
pub fn run_line(
    source: LineSource,
    pipeline: PipelineConfig,
    snapshot: Option<SnapshotWriter>,
    overload: OverloadConfig,
    stop: &AtomicBool,
) -> std::io::Result<LineRun> {
    run_line_watched(source, pipeline, snapshot, overload, stop, None)
}

/// [`run_line`], raising and clearing `health`'s conditions as the line goes: `Starting`
/// until its first message, `LineStale` while it is down, `MessagesLost`, `LineEnded`,
/// `ContractViolation`, `PublicationsMissed` (see `pipeline::HealthWatch`).
///
/// # Errors
///
/// As [`run_line`].
pub fn run_line_watched(
    source: LineSource,
    pipeline: PipelineConfig,
    snapshot: Option<SnapshotWriter>,
    overload: OverloadConfig,
    stop: &AtomicBool,
    health: Option<Arc<Health>>,
) -> std::io::Result<LineRun> {
    let handles = LineHandles {
        name: String::new(),
        counters: Arc::new(LineCounters::new()),
        overload: Arc::default(),
        latency: Arc::default(),
        dependencies: Vec::new(),
    };
    run_observed_line(source, pipeline, snapshot, overload, stop, &handles, health)
}

/// [`run_line_watched`], with the reader's counters and the publisher's overload counters
/// kept in `handles` while it runs, for the admin server to read.
///
/// # Errors
///
/// As [`run_line`].
pub fn run_observed_line(
    source: LineSource,
    pipeline: PipelineConfig,
    snapshot: Option<SnapshotWriter>,
    overload: OverloadConfig,
    stop: &AtomicBool,
    handles: &LineHandles,
    health: Option<Arc<Health>>,
) -> std::io::Result<LineRun> {
    run_served_line(
        source, pipeline, snapshot, overload, stop, handles, health, None,
    )
}

/// [`run_observed_line`], with the update stream fanned out to `subscribers` (the hub the
/// subscriber server reads) when given; the stream needs the snapshot, so without one
/// `subscribers` is dropped (its subscriptions end at once).
///
/// # Errors
///
/// As [`run_line`].
#[allow(clippy::too_many_arguments)]
pub fn run_served_line(
    mut source: LineSource,
    pipeline: PipelineConfig,
    snapshot: Option<SnapshotWriter>,
    overload: OverloadConfig,
    stop: &AtomicBool,
    handles: &LineHandles,
    health: Option<Arc<Health>>,
    subscribers: Option<EventFanout>,
) -> std::io::Result<LineRun> {
    // A silent UDP line has no reconnect to try: Unhealthy (see `crate::health`).
    let silence_unhealthy = matches!(source, LineSource::Mold(_));
    source.attach_counters(Arc::clone(&handles.counters));
    source.attach_guard(handles.guard(health.clone()));
    let violations = Arc::new(ContractViolations::new(health.clone()));
    source.watch_violations(Arc::clone(&violations));
    match snapshot {
        Some(writer) => {
            let publisher = SheddingPublisher::new(SnapshotSink::new(writer), overload)
                .with_shared_counters(Arc::clone(&handles.overload));
            let publisher = match subscribers {
                Some(fanout) => publisher.with_subscribers(fanout),
                None => publisher,
            };
            let counters = publisher.shared_counters();
            let watched = HealthWatch::new(publisher, health, Arc::clone(&violations))
                .with_overload(Arc::clone(&counters))
                .silence_unhealthy(silence_unhealthy);
            let report = run_pipeline_with_latency(
                pipeline,
                source,
                watched,
                stop,
                Arc::clone(&handles.latency),
            )?;
            Ok(LineRun {
                report,
                overload: Some(counters.load()),
                violations: violations.counts(),
            })
        }
        None => {
            let watched = HealthWatch::new(NoPublisher, health, Arc::clone(&violations))
                .silence_unhealthy(silence_unhealthy);
            let report = run_pipeline_with_latency(
                pipeline,
                source,
                watched,
                stop,
                Arc::clone(&handles.latency),
            )?;
            Ok(LineRun {
                report,
                overload: None,
                violations: violations.counts(),
            })
        }
    }
}
