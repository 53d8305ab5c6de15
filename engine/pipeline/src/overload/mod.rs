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
//! - [`OverloadCounts`] counts every shed, conflation, expiry and cut.
//!
//! # Detection: sojourn time, never occupancy
//!
//! Every ring frame carries its enqueue time (`recv_ns`); the book thread sees each frame's
//! sojourn as `now - recv_ns` when it applies it. The detector declares the queue *standing*
//! when every sojourn over a whole interval stayed above the target; one short wait inside
//! the interval resets it, so a burst that clears within an interval never trips it. It
//! stands down when the ring is found empty, or when every wait over an interval was short
//! again. Subscriber queues run the same detector on the consumer side. A full queue says
//! only that a burst arrived; a queue whose every item waited says the engine is behind.
//!
//! # Service
//!
//! In normal service each change is published at its message's turn, in order. While the
//! input queue stands, a change only marks its instrument in a preallocated dirty set (an
//! intrusive doubly linked list over a locate-indexed array: O(1), no allocation); at each
//! batch end the dirty instruments are published newest first, each once, with its latest
//! state, within a publication budget of one interval. Instruments still waiting are marked
//! `BEHIND` in their snapshot slot with `behind_since_ns`, and the header's `behind_ns` says
//! how far behind the engine is. When the queue drains, everything pending is published and
//! service returns to normal. A state update whose message waited longer than the deadline
//! is not published at its turn even in normal service: it is deferred, counted (`expired`
//! when served past the deadline) and replaced by the latest state. Trades and
//! trading-state changes are never deferred, conflated or dropped.
//!
//! # Consumers
//!
//! [`SubscriberHub::subscribe`] gives an in-process [`Subscription`] with its own bounded
//! queue (4,096 events, 1,024 of them reserved for trades and trading-state changes). A slow
//! consumer never slows the book thread or another consumer: while its queue stands (by its
//! own sojourn detector) or is nearly full, its quote and level events are conflated into a
//! pending per-instrument refresh (top 5 levels a side), sent newest first when the queue
//! drains; a quote or level event older than the deadline when the consumer reaches it is
//! dropped and a refresh is asked for in its place. A trade or trading-state change that does
//! not fit cuts the consumer loose: the reason is logged (`ticklane: subscriber N cut loose:
//! queue full, trade at feed sequence S undeliverable`), counted, and returned to the
//! consumer after what was queued before; it may subscribe again. `ticklane tail --config
//! FILE [--symbols A,B]` runs the engine with a printing consumer attached.
//!
//! Counters ([`OverloadCounts`], and [`OverloadCounters`] atomics for `/metrics`):
//! `published`, `shed`, `conflated`, `expired`, `overload_episodes`, `overload_ns`,
//! `max_sojourn_ns`, `events_delivered`, `events_conflated`, `events_expired`,
//! `consumers_cut`.
//!
//! # Defaults, and why
//!
//! Measured on a 2-core development machine by `cargo run --release -p ticklane-bench --bin
//! overload`: applying a message costs 57–85 ns and publishing a snapshot slot 45–120 ns
//! (97% of messages change a book), so a full 256-frame batch of both takes 32–47 µs.
//!
//! - **Target 50 µs**: above one full batch, so a frame that waited longer waited behind
//!   more than the batch it came in.
//! - **Interval 500 µs**: ten targets, CoDel's own ratio; long enough for a burst of several
//!   full batches to clear without tripping the detector, short enough that the staleness
//!   built up before detection stays under the 1 ms goal.
//! - **Deadline 1 ms**: the staleness goal itself.
//! - **Publication budget** per batch while the queue stands: one interval. A tighter budget
//!   (25 µs) starved the instruments that changed least recently (p99 staleness 10 ms at
//!   twice the capacity).
//!
//! The `overload` benchmark (its method and figures are in `bench/README.md`) drives the
//! book stage at 1×, 2× and 4× its capacity against a plain FIFO publisher, in virtual time
//! and on two real threads.
//!
//! # Examples
//!
//! ```
//! use std::sync::atomic::AtomicBool;
//! use ticklane_pipeline::overload::{OverloadConfig, SheddingPublisher, SnapshotSink};
//! use ticklane_pipeline::{run_pipeline, CaptureSource, Pace, PipelineConfig};
//! use ticklane_snapshot::SnapshotWriter;
//! use ticklane_feed::capture::{CaptureReader, ReadOptions};
//! use ticklane_sim::{write_itch50, GenConfig};
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
pub use counters::{OverloadCounters, OverloadCounts};
pub use dirty_set::{DirtyEntry, DirtySet};
pub use events::{Event, EventBody, EventDeriver, Refresh, REFRESH_DEPTH};
pub use jittered_period::JitteredPeriod;
pub use shedding_publisher::{Change, OverloadConfig, ServicePolicy, SheddingPublisher, StateSink};
pub use snapshot_sink::SnapshotSink;
pub use subscribers::{
    CutReason, EventFanout, FanoutCounts, RecvError, SubscriberConfig, SubscriberHub, Subscription,
};
