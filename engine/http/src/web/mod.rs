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
//! # Using it
//!
//! `ticklane run --config FILE --web 127.0.0.1:8080` (or `[web] listen` in the file, which
//! needs `snapshot.path`) prints `ticklane run: browser view on http://127.0.0.1:8080/`
//! (`https://…` and "log in with an account" when TLS and accounts are configured).
//! `?symbols=AAAA,AAAB` watches some books only, `?ladder=AAAA` opens on that book's depth.
//! Against the simulator:
//!
//! ```text
//! ticklane gen /tmp/day.itch50 --messages 2000000
//! ticklane run --config line.toml --web 127.0.0.1:8080      # a MoldUDP64 line with snapshot.path
//! ticklane sim /tmp/day.itch50 --udp 127.0.0.1:26477 --rate 20000
//! ```
//!
//! - a **top-of-book table**, one row per subscribed book: best bid size and price, best ask
//!   price and size, the last trade (price × shares), trades so far, the trading state and
//!   the book's age (server time minus its last publication); `STALE`, `MAYBE_BAD` and
//!   `CROSSED` badges from the slot's flags. Click a row to show its depth.
//! - a **depth ladder** for one book: every level the snapshot holds, asks above bids, with
//!   quantity bars, order counts and the book's flags in its title.
//! - a **health bar**: the state (coloured), the raised conditions, draining, the line's
//!   state, how far publication is behind the feed (the header's `behind_ns`), the
//!   heartbeat's age, messages declared lost, and whether the engine exited cleanly. When the
//!   socket closes the page says so and reconnects after a jittered 1–3 s.
//!
//! Prices are ITCH integers on the wire and are shown with four decimals computed from the
//! integer, never through floating point.
//!
//! # How it works
//!
//! The browser sends `{"subscribe": ["AAAA", …]}` (an empty list: every book). *Which* books
//! changed comes from the hub subscription, plus a once-a-second sweep of the slots' seqlock
//! sequences that catches flag changes no event carries (a line going `STALE`); *what* they
//! hold is read from the snapshot when the browser can take it. Request heads are read as
//! the admin server reads them (`http_head`: 8 KiB, 2 s), messages from the browser are at
//! most 16 KiB, and more than [`WebLimits::max_clients`] connections get 503. If the view's
//! own subscription is cut loose (its queue filled), it subscribes again and refreshes every
//! book from the snapshot.
//!
//! # HTTPS, logins and entitlements
//!
//! With `[web] tls_cert` and `tls_key` the view speaks only HTTPS (TLS 1.2 or 1.3, the
//! certificate checked at start as the subscriber server's is) and its socket is `wss://`:
//! the handshake is driven by the view's own loop (`stream`), bounded by the request
//! deadline, and counted by result. With `[serve] accounts` the view serves nothing but a
//! login page to a browser without a session (the table of what each request gets is in
//! `http_conns`):
//!
//! - the login form (`POST /login`) is checked by the same verifier as the subscriber
//!   server's logins, from the same accounts file: a success answers 303 to the page with a
//!   session cookie (`HttpOnly; SameSite=Strict; Path=/; Max-Age`, and `Secure` under TLS)
//!   holding a random 32-byte token; a failure (unknown account, wrong password, or a
//!   malformed form) is answered the failure delay after the form arrived, one 403 for all;
//! - a session lasts `[web] session_minutes` from its login (default 12 hours), ends on
//!   `POST /logout`, and ends at once when its account leaves the accounts file; the page's
//!   sockets are closed with code 4001 and the page, asking `GET /session`, goes back to the
//!   login page;
//! - `/ws` is served only to a live session and only from the page's own origin (a socket
//!   opened by another site's page, which the browser would send the cookie with, is 403);
//! - the books a socket asks for are filtered by the account's entitlement: a symbol it may
//!   not see, more books than `max_subscriptions`, or "every book" under such a limit is
//!   answered `{"type":"refused","symbols":[…],"reason":"…","max_subscriptions":N}`; an
//!   account entitled to the top of book gets a one-level ladder; a reload that withdraws a
//!   symbol takes it away at once with a `refused` message whose reason is `withdrawn`.
//!
//! Every login, refusal, entitlement refusal, logout and session end goes to the audit
//! trail the subscriber server writes (`"via":"web"`), and to [`WebCounters`] (in the run
//! summary and `/metrics`).
//!
//! The browser view and the binary subscriber server (`ticklane-serve`) sit side by side in
//! the engine process, each with its own listener, thread and hub subscription, so neither
//! can slow the other or the book thread. The binary protocol is for programs (sequence
//! numbers, gap detection, login, the storm defences); this view is for people, over JSON.
//!
//! `engine/cli/tests/it/browser_view.rs` checks it in a real browser: `ticklane run --web` fed by
//! `ticklane sim` is held at a known point (the simulator stalls after 100,000 messages), the
//! page is opened over HTTPS in headless Chromium, logged in through its form, and its table
//! and ladder are read over the DevTools protocol until they show the prices the snapshot
//! holds. Without Chromium it prints
//! `SKIPPED` loudly; under `CI` it fails. `bench/browser_check.sh` runs the same check on
//! demand.
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

mod form;
mod http_conns;
mod logins;
mod messages;
mod pending;
mod request;
mod server;
mod sessions;
mod stream;

pub use crate::web_counters::{WebCounters, WebCounts};
pub use form::{parse_login_form, LoginForm, MAX_FORM, SESSION_COOKIE};
pub use messages::{
    book_json, health_json, parse_request, refused_json, BrowserRequest, MAX_SUBSCRIBED_SYMBOLS,
};
pub use pending::PendingBooks;
pub use request::{classify, Request, LOGIN_PATH, LOGOUT_PATH, SESSION_PATH, SOCKET_PATH};
pub use server::{WebLimits, WebSecurity, WebServer, DEFAULT_SESSION_LENGTH, LOGIN_PAGE, PAGE};
pub use sessions::MAX_SESSIONS;

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
