//! One run of the real pipeline (reader thread, queue, book thread, snapshot publisher)
//! from one source, at one offered rate, over one queue.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use ticklane_engine::book::BookConfig;
use ticklane_engine::overload::{OverloadConfig, SheddingPublisher, SnapshotSink};
use ticklane_engine::pipeline::{
    run_pipeline_on, FrameConsumer, FrameProducer, PipelineConfig, StageLatency, WaitStrategy,
};
use ticklane_engine::snapshot::SnapshotWriter;
use ticklane_sim::MessageLog;

use crate::inproc_source::InprocSource;
use crate::queues::QueueUser;
use crate::udp_source::UdpSource;

/// Where the messages come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SourceKind {
    /// From memory on the reader thread: the engine alone.
    Inproc,
    /// From the exchange simulator over loopback UDP: the engine plus the kernel.
    Udp,
}

impl SourceKind {
    /// The short name used in tables, file names and options.
    pub fn name(self) -> &'static str {
        match self {
            SourceKind::Inproc => "inproc",
            SourceKind::Udp => "udp",
        }
    }
}

impl std::str::FromStr for SourceKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "inproc" => Ok(SourceKind::Inproc),
            "udp" => Ok(SourceKind::Udp),
            other => Err(format!("unknown source {other:?} (inproc, udp)")),
        }
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct PipelineRun {
    /// The source.
    pub source: SourceKind,
    /// Offered messages per second; `None` for as fast as possible.
    pub rate: Option<u64>,
    /// The day to play.
    pub log: Arc<MessageLog>,
    /// Queue slots.
    pub slots: usize,
    /// (reader core, book core), if pinned.
    pub cores: Option<(usize, usize)>,
    /// How the stages wait.
    pub wait: WaitStrategy,
    /// The snapshot file the book thread publishes into (removed after the run).
    pub snapshot: PathBuf,
}

/// What one run measured.
pub struct RunResult {
    /// The book thread's histograms: receive → applied, receive → published, intended →
    /// published.
    pub latency: StageLatency,
    /// Messages in the day.
    pub offered: u64,
    /// Messages the book thread applied.
    pub applied: u64,
    /// Messages the source declared lost (UDP gaps not recovered), plus any the book never
    /// saw.
    pub lost: u64,
    /// Pushes that were more than 1 µs late (in-process source only).
    pub late: u64,
    /// Wall time of the pipeline.
    pub elapsed: Duration,
    /// Whether both pins took effect.
    pub pinned: bool,
    /// Anything that went wrong on the reader's side.
    pub problem: Option<String>,
}

impl RunResult {
    /// Messages applied per second of wall time.
    pub fn throughput(&self) -> f64 {
        self.applied as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

impl QueueUser for &PipelineRun {
    type Output = std::io::Result<RunResult>;

    fn run<P: FrameProducer + 'static, C: FrameConsumer + 'static>(
        self,
        producer: P,
        consumer: C,
    ) -> std::io::Result<RunResult> {
        let config = PipelineConfig {
            ring_slots: self.slots,
            wait: self.wait,
            reader_core: self.cores.map(|c| c.0),
            book_core: self.cores.map(|c| c.1),
            books: BookConfig {
                max_orders: 1 << 20,
                max_books: 1024,
                ..BookConfig::default()
            },
        };
        let writer =
            SnapshotWriter::create(&self.snapshot, 1024, 10).map_err(std::io::Error::other)?;
        // The engine's own publisher: overload control over the snapshot.
        let publisher =
            SheddingPublisher::new(SnapshotSink::new(writer), OverloadConfig::default());
        let stop = AtomicBool::new(false);
        let offered = self.log.len() as u64;
        let (source_lost, late, problem, (book, elapsed, pinned)) = match self.source {
            SourceKind::Inproc => {
                let source = InprocSource::new(Arc::clone(&self.log), self.rate, self.wait);
                let r = run_pipeline_on(config, (producer, consumer), source, publisher, &stop)?;
                let kept = (r.book, r.elapsed, r.pinned.0 && r.pinned.1);
                (0, r.source.late, None, kept)
            }
            SourceKind::Udp => {
                let source = UdpSource::open(Arc::clone(&self.log), self.rate, self.wait)?;
                let r = run_pipeline_on(config, (producer, consumer), source, publisher, &stop)?;
                let mut problem = r.source.sim.as_ref().err().cloned();
                if r.source.source.end.is_error() {
                    problem = Some(r.source.source.end.to_string());
                }
                let stats = r.source.source.recovery;
                let lost = stats.messages_lost;
                if lost > 0 && problem.is_none() {
                    // Say which limit gave way: retries running out, or the reorder store
                    // filling (the oldest gap is then declared lost to make room).
                    problem = Some(format!(
                        "{} gaps ({} messages) declared lost; {} gaps, {} requests, {} reorder-store overflows",
                        stats.gaps_lost, lost, stats.gaps, stats.requests_sent, stats.store_overflows
                    ));
                }
                (
                    lost,
                    0,
                    problem,
                    (r.book, r.elapsed, r.pinned.0 && r.pinned.1),
                )
            }
        };
        let _ = ticklane_engine::snapshot::remove_snapshot_files(&self.snapshot);
        Ok(RunResult {
            offered,
            applied: book.messages,
            lost: source_lost.max(offered.saturating_sub(book.messages)),
            late,
            elapsed,
            pinned,
            problem,
            latency: book.latency,
        })
    }
}
