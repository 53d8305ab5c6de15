//! The engine's HTTP interface, on loopback by default, on its own thread that is never
//! pinned (the pipeline pins only the reader and book threads it spawns; this one is spawned
//! by the unpinned main thread):
//!
//! - `GET /health`: the three-valued health with its reasons, as JSON; 503 only when
//!   Unhealthy or draining.
//! - `GET /metrics`: the Prometheus text exposition, built with `prometheus-client`.
//! - `POST /feeds/{name}/isolate` and `/close`: manual breaker commands, posted to every
//!   dependency of that feed; they need `Authorization: Bearer TOKEN`.
//!
//! The routing ([`route`]) is sans-I/O: a request's method, path and `Authorization` header
//! in, a [`Response`] out; [`AdminServer`] only moves bytes.

mod health_json;
mod http_server;
mod metrics;
mod routes;

pub use health_json::health_json;
pub use http_server::{AdminServer, ServerLimits};
pub use metrics::{metrics_registry, render_metrics, METRICS_CONTENT_TYPE};
pub use routes::{route, Response};

use std::sync::Arc;

use crate::admin_token::AdminToken;
use ticklane_pipeline::dependency::Dependency;
use ticklane_pipeline::health::Health;
use ticklane_pipeline::overload::SharedCounters;
use ticklane_pipeline::{LatencyGauges, LineCounters};

/// What the server reads: the process's health and, per feed, its shared handles.
#[derive(Debug)]
pub struct AdminState {
    /// The process's health.
    pub health: Arc<Health>,
    /// Every feed the process runs.
    pub feeds: Vec<FeedHandles>,
    /// The admin calls' token (`None`: admin calls are refused with 503).
    pub token: Option<AdminToken>,
}

/// One feed's shared handles, as the server sees them.
#[derive(Debug, Clone)]
pub struct FeedHandles {
    /// `feed.name`: the URL's `{name}` and the metrics' `feed` label.
    pub name: String,
    /// The line's reader counters.
    pub line: Arc<LineCounters>,
    /// The dependencies the feed calls (its line, its retransmission server).
    pub dependencies: Vec<Arc<Dependency>>,
    /// The publisher's overload counters (absent when nothing is published).
    pub overload: Option<Arc<SharedCounters>>,
    /// The book thread's receive-to-applied latency percentiles (absent: none exported).
    pub latency: Option<Arc<LatencyGauges>>,
}

impl AdminState {
    /// The feed named `name`.
    pub fn feed(&self, name: &str) -> Option<&FeedHandles> {
        self.feeds.iter().find(|f| f.name == name)
    }
}
