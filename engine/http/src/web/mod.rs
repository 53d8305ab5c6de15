//! The browser view: a page that shows the engine's books live, served by the engine
//! process itself on a listener and a thread of its own (never pinned).
//!
//! - `GET /` serves one self-contained HTML page ([`PAGE`], compiled in with
//!   `include_str!`: no CDN, no build step): a top-of-book table of the subscribed books,
//!   a depth ladder for one of them, the engine's health and lag.
//! - `GET /ws` is the page's WebSocket (`tungstenite`): JSON messages, a `book` image per
//!   subscribed book on subscribe and again whenever it changes, and `health` twice a
//!   second (see `messages`).
//!
//! Where the data comes from: one [`Subscription`](ticklane_pipeline::overload::Subscription) on the
//! in-process hub says *which* books changed; the snapshot ([`SnapshotReader`], lock-free)
//! says what they hold now, with their `STALE` and `MAYBE_BAD` flags; health comes from
//! [`Health`]. Bounded everywhere: at most [`WebLimits::max_clients`] connections, and per
//! browser at most one owed update per book (the latest), so a slow browser costs memory
//! in proportion to the books it watches and never slows the book thread or another
//! browser.
//!
//! # Examples
//!
//! ```no_run
//! use std::sync::Arc;
//! use ticklane_pipeline::health::Health;
//! use ticklane_snapshot::SnapshotReader;
//! use ticklane_http::web::{WebLimits, WebServer, WebState};
//!
//! let state = WebState {
//!     health: Arc::new(Health::new()),
//!     snapshot: SnapshotReader::open("/dev/shm/ticklane.snap")?,
//!     hub: None, // the sweep of slot sequences still finds every change, once a second
//! };
//! let server = WebServer::start("127.0.0.1:8080".parse()?, state, WebLimits::default())?;
//! println!("open http://{}/", server.local_addr());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

mod messages;
mod pending;
mod request;
mod server;

pub use messages::{book_json, health_json, parse_request, BrowserRequest, MAX_SUBSCRIBED_SYMBOLS};
pub use pending::PendingBooks;
pub use request::{classify, Request, SOCKET_PATH};
pub use server::{WebCounters, WebLimits, WebServer, PAGE};

use std::sync::Arc;

use ticklane_pipeline::health::Health;
use ticklane_pipeline::overload::SubscriberHub;
use ticklane_snapshot::SnapshotReader;

/// What the browser view reads.
#[derive(Debug)]
pub struct WebState {
    /// The process's health.
    pub health: Arc<Health>,
    /// The engine's snapshot, opened by path: the books' levels and flags.
    pub snapshot: SnapshotReader,
    /// The update stream; the server holds one subscription on it. Without it, changes are
    /// found by the sweep of slot sequences alone (once a second).
    pub hub: Option<SubscriberHub>,
}
