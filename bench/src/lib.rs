//! Benchmarks: criterion suites in `benches/`, the latency harness in `src/bin/latency.rs`.
//!
//! The harness's parts live here, one concept per module: the queues it compares
//! ([`queues`]), the machine's floor ([`floor`]), the ring hop alone ([`hop`]), the two
//! reader stages it drives the pipeline with ([`inproc_source`], [`udp_source`]), one
//! pipeline run ([`pipeline_run`]), and its outputs ([`hgrm`], [`svg_plot`]); and the
//! warmed books the criterion suites start from ([`warm_books`]); and the layered-retry
//! chain model ([`storm_model`]); and the reconnect storm against
//! the subscriber server's admission policy, simulated ([`reconnect_storm`]), and over real
//! sockets: many non-blocking clients per thread ([`storm_clients`]) and the per-second
//! table they fill ([`storm_seconds`]).

#![forbid(unsafe_code)]

pub mod floor;
pub mod hgrm;
pub mod hop;
pub mod inproc_source;
pub mod pipeline_run;
pub mod queues;
pub mod reconnect_storm;
pub mod storm_clients;
pub mod storm_model;
pub mod storm_seconds;
pub mod svg_plot;
pub mod udp_source;
pub mod warm_books;

/// Pins the current thread to `core`, if one is given; returns whether it is pinned.
pub use ticklane_engine::pipeline::pin;
