//! The live pipeline: a reader thread pushes received messages into a bounded SPSC ring
//! whose slots are the tick arena; a book thread pops them, applies them to the books and
//! publishes what changed. Each stage is one thread, optionally pinned to a core.
//!
//! Live feeds, capture playback and tests differ only in the [`FrameSource`] that runs on
//! the reader thread and the [`Publisher`] the book thread calls. A MoldUDP64 line may start
//! from a GLIMPSE 5.0 snapshot before its main loop (`glimpse_start.rs`).
//!
//! Beside the pipeline itself this crate holds what its stages share: the stages'
//! [`clock`], three-valued [`health`], each dependency's shared handle ([`dependency`]), and
//! the [`overload`] policy the book stage publishes through. It depends on the ring, the
//! books and the snapshot, and must never depend on the file outputs, the servers or the
//! configuration file.
#![forbid(unsafe_code)]

pub mod clock;
pub mod dependency;
pub mod health;
pub mod overload;
pub mod server_thread;

mod arbitration;
mod book_stage;
mod capture_source;
mod contract_violations;
mod frame;
mod glimpse_start;
mod health_watch;
mod join_notice;
mod latency;
mod latency_gauges;
mod line_counters;
mod line_guard;
mod mold_source;
mod overrun_watch;
mod queue;
mod session_tail;
mod soup_source;
mod source_end;
mod wait;

pub use arbitration::{Arbitration, ArbitrationReport, Line, LineArbitration};
pub use book_stage::{BookStage, BookStageReport};
pub use capture_source::{CaptureSource, CaptureSourceReport, Pace, STAMP_EVERY};
pub use contract_violations::{
    mold_error_offset, ContractViolations, ViolationAt, ViolationCounts, ViolationKind,
    LOG_INTERVAL_NS,
};
pub use frame::{Frame, FrameKind, MAX_MESSAGE};
pub use glimpse_start::{GlimpseConfig, GlimpseReport, SnapshotFailure, DEFAULT_MAX_RECOVERY_GAP};
pub use health_watch::HealthWatch;
pub use latency::{
    human_ns, new_histogram, LatencyGroup, Percentiles, StageLatency, LATENCY_GROUP,
};
pub use latency_gauges::{LatencyGauges, LatencyNow, LatencyPublisher, PUBLISH_EVERY_NS};
pub use line_counters::{LineCounters, LineCountersWriter, LineCounts, COPY_EVERY_NS};
pub use line_guard::{
    retransmission_counts, GuardHandles, LineCalls, LineGuard, DEFAULT_LINE_BREAKER,
};
pub use mold_source::{MoldFeedConfig, MoldSource, MoldSourceReport};
pub use overrun_watch::KernelOverruns;
pub use queue::{FrameConsumer, FrameProducer};
pub use soup_source::{
    ConnectionDrops, DroppedConnection, SoupFeedConfig, SoupSource, SoupSourceReport, DROPS_KEPT,
};
pub use source_end::{Chain, DropCounts, DropKind, DropReason, PollStep, SourceEnd, SourceError};
pub use wait::{WaitStrategy, Waiter};

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::clock::Clock;
use ticklane_book::publish::Publisher;
use ticklane_book::BookConfig;
use ticklane_ring::ring::Ring;

/// What runs on the reader thread: it fills frames until its input ends or `stop` is set,
/// then pushes an end frame (or simply drops the producer).
pub trait FrameSource: Send {
    /// What the source reports when it ends.
    type Report: Send;
    /// Runs the source to its end, pushing into `frames` (ticklane's ring in the engine; any
    /// [`FrameProducer`] in the latency harness).
    fn run<Q: FrameProducer>(self, frames: Q, clock: Clock, stop: &AtomicBool) -> Self::Report;
}

/// Threads, cores and sizes of a pipeline.
#[derive(Clone, Copy, Debug)]
pub struct PipelineConfig {
    /// Ring slots (rounded up to a power of two); each is a 128-byte frame.
    pub ring_slots: usize,
    /// How each stage waits.
    pub wait: WaitStrategy,
    /// Core for the reader thread, if pinned.
    pub reader_core: Option<usize>,
    /// Core for the book thread, if pinned.
    pub book_core: Option<usize>,
    /// Book capacities.
    pub books: BookConfig,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        PipelineConfig {
            ring_slots: 1 << 16,
            wait: WaitStrategy::default(),
            reader_core: None,
            book_core: None,
            books: BookConfig::default(),
        }
    }
}

/// What a pipeline run did.
pub struct PipelineReport<R> {
    /// The reader's report.
    pub source: R,
    /// The book thread's report (books, counts, latency).
    pub book: BookStageReport,
    /// Wall time from start to both threads done.
    pub elapsed: Duration,
    /// Whether each requested pin took effect: `(reader, book)`.
    pub pinned: (bool, bool),
}

/// Pins the current thread to `core`, if asked; returns whether it is pinned (never, for a
/// core outside this process's affinity mask).
pub fn pin(core: Option<usize>) -> bool {
    // Only a core in this process's affinity mask: the pinning call indexes a fixed-size
    // CPU set with the id, and panics past its end.
    let allowed =
        |id| core_affinity::get_core_ids().is_some_and(|ids| ids.iter().any(|c| c.id == id));
    core.is_some_and(|id| {
        allowed(id) && core_affinity::set_for_current(core_affinity::CoreId { id })
    })
}

/// Runs `source` into the books until the feed ends or `stop` is set, over ticklane's ring
/// of `config.ring_slots` frames.
///
/// # Errors
///
/// If the book tables cannot be allocated or a thread cannot be started.
pub fn run_pipeline<S: FrameSource, P: Publisher + Send>(
    config: PipelineConfig,
    source: S,
    publisher: P,
    stop: &AtomicBool,
) -> std::io::Result<PipelineReport<S::Report>> {
    let queue = Ring::<Frame>::new(config.ring_slots);
    run_pipeline_on(config, queue, source, publisher, stop)
}

/// [`run_pipeline`], with the book thread publishing its receive-to-applied latency
/// percentiles into `latency` while it runs (at most every [`PUBLISH_EVERY_NS`]) and at the
/// end: what `/metrics` reads.
///
/// # Errors
///
/// If the book tables cannot be allocated or a thread cannot be started.
pub fn run_pipeline_with_latency<S: FrameSource, P: Publisher + Send>(
    config: PipelineConfig,
    source: S,
    publisher: P,
    stop: &AtomicBool,
    latency: Arc<LatencyGauges>,
) -> std::io::Result<PipelineReport<S::Report>> {
    let queue = Ring::<Frame>::new(config.ring_slots);
    run_stages(config, queue, source, publisher, stop, Some(latency))
}

/// [`run_pipeline`] over a queue the caller made (`config.ring_slots` is not used): the
/// latency harness runs the same pipeline over other SPSC queues this way.
///
/// # Errors
///
/// If the book tables cannot be allocated or a thread cannot be started.
pub fn run_pipeline_on<Q, C, S, P>(
    config: PipelineConfig,
    (producer, consumer): (Q, C),
    source: S,
    publisher: P,
    stop: &AtomicBool,
) -> std::io::Result<PipelineReport<S::Report>>
where
    Q: FrameProducer,
    C: FrameConsumer,
    S: FrameSource,
    P: Publisher + Send,
{
    run_stages(config, (producer, consumer), source, publisher, stop, None)
}

/// The reader and book threads over `producer` and `consumer`, the book thread publishing
/// its latency into `latency` if given.
fn run_stages<Q, C, S, P>(
    config: PipelineConfig,
    (producer, consumer): (Q, C),
    source: S,
    publisher: P,
    stop: &AtomicBool,
    latency: Option<Arc<LatencyGauges>>,
) -> std::io::Result<PipelineReport<S::Report>>
where
    Q: FrameProducer,
    C: FrameConsumer,
    S: FrameSource,
    P: Publisher + Send,
{
    let clock = Clock::start();
    let started = Instant::now();
    let stage =
        BookStage::new(config.books, publisher, clock, config.wait)?.with_latency_gauges(latency);
    std::thread::scope(|scope| {
        let book = std::thread::Builder::new()
            .name("book".into())
            .spawn_scoped(scope, move || {
                let pinned = pin(config.book_core);
                (stage.run(consumer, stop), pinned)
            })?;
        let reader = std::thread::Builder::new()
            .name("reader".into())
            .spawn_scoped(scope, move || {
                let pinned = pin(config.reader_core);
                (source.run(producer, clock, stop), pinned)
            })?;
        let (source, reader_pinned) = reader
            .join()
            .map_err(|_| std::io::Error::other("the reader thread panicked"))?;
        let (book, book_pinned) = book
            .join()
            .map_err(|_| std::io::Error::other("the book thread panicked"))?;
        Ok(PipelineReport {
            source,
            book,
            elapsed: started.elapsed(),
            pinned: (reader_pinned, book_pinned),
        })
    })
}
