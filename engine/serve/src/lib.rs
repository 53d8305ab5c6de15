//! The subscriber server: clients on other hosts log in over TCP, subscribe to symbols, and
//! receive a book image then updates in a versioned binary protocol ([`protocol`]), with a
//! sequence number per client so that a gap shows. [`client`] is the Rust client library
//! that `ticklane subscribe` is built on.
//!
//! # Examples
//!
//! ```no_run
//! use ticklane_pipeline::overload::{SubscriberConfig, SubscriberHub};
//! use ticklane_serve::{start_server, AdmitAll, ServeConfig, SnapshotImages};
//! use ticklane_snapshot::SnapshotReader;
//!
//! let (hub, fanout) = SubscriberHub::new(SubscriberConfig::default());
//! // `fanout` goes to the book thread (`SheddingPublisher::with_subscribers`).
//! let images = SnapshotImages::new(SnapshotReader::open("/dev/shm/ticklane.snap")?);
//! let server = start_server(
//!     ServeConfig::new("127.0.0.1:7000".parse()?),
//!     Some(hub),
//!     Box::new(images),
//!     Box::new(AdmitAll),
//! )?;
//! let counts = server.stop()?; // graceful: stop accepting, come back later, drain
//! # drop(fanout);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

pub mod serve_guard;

pub mod admission;
pub mod client;
mod connection;
mod counters;
mod guarded_admission;
mod idle;
pub mod images;
pub mod protocol;
pub mod reconnect;
mod server;
mod write_queue;

pub use admission::{Admission, AdmitAll, Stage, Verdict};
pub use counters::{ServeCounters, ServeCounts};
pub use guarded_admission::{GuardCounters, GuardedAdmission};
pub use images::{BookImage, ImageSource, SnapshotImages};
pub use server::{start_server, start_server_stopping_on, ServeConfig, ServeHandle};
pub use write_queue::WriteQueue;
