//! The subscriber server: clients on other hosts log in over TCP, subscribe to symbols, and
//! receive a book image then updates in a versioned binary protocol ([`protocol`]), with a
//! sequence number per client so that a gap shows. [`client`] is the Rust client library
//! that `ticklane subscribe` is built on.
//!
//! # The server
//!
//! `ticklane run --config FILE --serve 127.0.0.1:7000` (or `[serve] listen`; it needs
//! `snapshot.path`) starts it; `ticklane subscribe --server 127.0.0.1:7000 --symbols
//! AAPL,MSFT` follows symbols and prints every message:
//!
//! ```text
//! connected
//! AAPL #1 image: state T feed seq 81234, 10 bids, 10 asks
//!   bid 185.1200 x 300 (2)
//!   ...
//! AAPL #2 ask 185.1300 x 500 (3)
//! AAPL #3 quote 185.1200 x 300 (2) / 185.1300 x 500 (3)
//! AAPL #4 trade 100 @ 185.1300
//! disconnected: come back in 3412 ms: server restarting; reconnecting in 3412 ms (as the server asked)
//! ```
//!
//! A mio loop on its own, unpinned thread reads the update stream through one
//! [`Subscription`](ticklane_pipeline::overload::Subscription) of the in-process hub and fans it out by
//! symbol. A subscription's first image comes from the snapshot ([`SnapshotImages`]: a
//! lock-free copy of the slot, off the book thread, with its `STALE` and `MAYBE_BAD` flags),
//! so it carries at most `snapshot.depth` levels a side; updates at or below the image's feed
//! sequence are skipped, since the image holds them. The work of one request (an image, the
//! symbol list) is done in a `bumpalo` arena reset after it: `engine/tests/zero_alloc/serve_zero_alloc.rs`
//! counts no allocation over 5,000 subscribe/unsubscribe cycles after warm-up.
//!
//! **Slow clients.** Each client has a write queue (1 MiB) with a high (512 KiB) and a low
//! (64 KiB) mark (`serve.high_water_bytes`, `serve.low_water_bytes`). Above the high mark its
//! quotes and levels are conflated: nothing is sent for the instrument, and once the queue is
//! back at the low mark the client gets the latest image of each instrument it missed,
//! newest first (a refresh: an image with request id 0). Trades and trading-state changes are
//! never conflated; one that does not fit cuts the client loose (`C`, reason `S`) after what
//! was already queued. When all queues together pass 256 MiB, the client with the heaviest
//! queue is shed first. Nobody else waits.
//!
//! **Silent clients.** The client library sends a heartbeat whenever it has sent nothing for
//! a heartbeat interval, so a healthy client that subscribes to nothing is never cut; a
//! logged-in connection the server hears nothing from for `serve.idle_timeout_ms` (a peer
//! that hung, a half-open socket) gets `C` with reason `I` and is closed.
//!
//! **Graceful restart.** On stop (the first SIGTERM or SIGINT to `run`, alongside the line's
//! drain, or [`ServeHandle::stop`]) the server stops accepting, sends every client `R` (come
//! back later) with a retry-after drawn uniformly from 2–5 s, drains their queues for at most
//! 2 s, and exits; the run summary then prints a `subscribers:` line (accepted, rejected, cut
//! loose, cut idle, shed, updates conflated, requests and those dropped, bytes sent).
//!
//! **Admission.** [`Admission`] is the one place the storm defences plug in: the server asks
//! it at accept, at login, before each request (subscribe, then the symbol list) and at
//! close, and a rejection reaches the client at once as `J` or `R` with its delay.
//! `ticklane run --serve` admits through [`GuardedAdmission`], the [`crate::serve_guard`]
//! policy, set by the `[serve]` keys; [`AdmitAll`] admits everything (for tests that want no
//! defences).
//!
//! # The client
//!
//! [`client`]'s `Session` is one connection (log in, subscribe, `recv`, which reports a
//! sequence gap); `run_subscriber` keeps one going. It reconnects with exponential backoff
//! and full jitter ([`reconnect`]) with a floor of 50 ms under every wait, so an immediate
//! reconnect loop cannot happen; the attempt count starts over only after a session that
//! stayed up for 5 s. A server's retry-after is honoured exactly; one longer than the
//! backoff cap (30 s) is reported as maintenance and the client stops rather than sleep on
//! it. Every reconnect subscribes again and so begins with fresh images. A symbol the server
//! does not know yet (`N`: a client started before the stock directory) is reported once and
//! asked for again every second until its image comes. `ticklane subscribe` waits out a
//! backoff in 20 ms slices, so Ctrl-C or SIGTERM ends it at once with 130; a closed stdout
//! ends it with 141, and a retry-after past `--backoff-cap-ms` (maintenance) with 1.
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

pub mod accounts;
pub mod admission;
pub mod audit;
pub mod client;
pub mod client_books;
mod client_stream;
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
pub use server::{
    start_secure_server, start_server, start_server_stopping_on, AccountsConfig, ServeConfig,
    ServeHandle, ServeSecurity,
};
pub use ticklane_tls as tls;
pub use write_queue::WriteQueue;
