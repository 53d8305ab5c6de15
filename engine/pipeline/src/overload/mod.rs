//! Overload control: when the feed outruns the engine, or a consumer outruns nobody, the
//! engine neither grows without bound nor serves a backlog of stale prices in order.
//!
//! - [`SojournDetector`] declares a queue standing by how long its items waited (CoDel's
//!   rule), never by how many there are.
//! - [`SheddingPublisher`] is the book thread's publisher: every ITCH message is applied,
//!   always; publishing instrument state is derived work, served in order normally and
//!   newest first with conflation ([`DirtySet`]) while the input queue stands, with
//!   deadlines, and the snapshot says how far behind each instrument and the engine are.
//! - [`SubscriberHub`] hands out [`Subscription`]s to the update stream ([`Event`]); each
//!   consumer has its own bounded queue; trades and trading-state changes are never
//!   conflated and never dropped silently.
//! - [`OverloadCounters`] counts every shed, conflation, expiry and cut.
//!
//! # Examples
//!
//! ```
//! use std::sync::atomic::AtomicBool;
//! use ticklane_pipeline::overload::{OverloadConfig, SheddingPublisher, SnapshotSink};
//! use ticklane_pipeline::{run_pipeline, CaptureSource, Pace, PipelineConfig};
//! use ticklane_snapshot::SnapshotWriter;
//! use ticklane_feed::capture::{CaptureReader, ReadOptions};
//! use ticklane_feed::sim::{write_itch50, GenConfig};
//!
//! let dir = tempfile::tempdir()?;
//! let day = dir.path().join("day.itch50");
//! let config = GenConfig { messages: 20_000, seed: 1, stocks: 4, hard_cases: false, crossing: false };
//! write_itch50(config, &mut std::fs::File::create(&day)?)?;
//!
//! let writer = SnapshotWriter::create(dir.path().join("books.snap"), 64, 5)?;
//! let publisher = SheddingPublisher::new(SnapshotSink::new(writer), OverloadConfig::default());
//! let counters = publisher.shared_counters();
//! let pipeline = PipelineConfig { ring_slots: 1024, ..PipelineConfig::default() };
//! let source = CaptureSource::new(
//!     CaptureReader::open(&day, ReadOptions::default())?,
//!     Pace::Max,
//!     pipeline.wait,
//! );
//! let report = run_pipeline(pipeline, source, publisher, &AtomicBool::new(false))?;
//! assert_eq!(report.book.messages, 20_000);
//! assert!(counters.load().published > 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

mod codel;
mod counters;
mod dirty_set;
mod events;
mod jittered_period;
mod shedding_publisher;
mod snapshot_sink;
mod subscribers;

pub use codel::{CodelConfig, SojournDetector, Transition};
pub use counters::{OverloadCounters, SharedCounters};
pub use dirty_set::{DirtyEntry, DirtySet};
pub use events::{Event, EventBody, EventDeriver, Refresh, REFRESH_DEPTH};
pub use jittered_period::JitteredPeriod;
pub use shedding_publisher::{Change, OverloadConfig, ServicePolicy, SheddingPublisher, StateSink};
pub use snapshot_sink::SnapshotSink;
pub use subscribers::{
    CutReason, EventFanout, FanoutCounters, RecvError, SubscriberConfig, SubscriberHub,
    Subscription,
};
