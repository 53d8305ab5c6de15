//! `ticklane.subscribe`: a subscriber server's updates in Python, from the Rust client that
//! `ticklane subscribe` runs (`run_subscriber`: the login, the subscriptions, the images
//! after each, the sequence gaps, the reconnects with jittered backoff and the server's
//! retry-after), on a client thread of its own. The updates wait in a bounded queue: a
//! Python loop that falls behind holds the client back, the connection's buffers fill, and
//! the server treats it as the slow subscriber it is (it conflates, and in the end cuts it
//! loose; the client reconnects and the images start it over), as for any client.
#![forbid(unsafe_code)]

use std::net::{SocketAddr, ToSocketAddrs};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use pyo3::exceptions::{PyConnectionError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use ticklane_engine::output_filter::OutputFilter;
use ticklane_engine::serve::client::{
    pause_unless_stopped, run_subscriber, ClientConfig, ClientError, ClientTls,
};
use ticklane_engine::serve::protocol::Secret;
use ticklane_engine::serve::tls::{client_config, server_name};
use ticklane_feed::resilience::BackoffConfig;

use super::engine_thread::WAIT;
use super::subscriber_update::Update;

pyo3::create_exception!(
    ticklane,
    SubscribeError,
    PyConnectionError,
    "The subscription ended for good: the server refused the login for good, asked to be \
     left alone for longer than the backoff's cap (maintenance), the TLS handshake failed, \
     or `max_attempts` connection attempts in a row failed."
);

/// Updates the client thread may hold before it waits for Python.
const QUEUED_UPDATES: usize = 65_536;

/// The client thread's end: `Ok` when it was stopped.
type ClientEnd = Result<(), ClientError>;

struct Following {
    updates: Option<Receiver<Update>>,
    client: Option<JoinHandle<ClientEnd>>,
}

/// A subscription to a subscriber server, iterated for its updates; made by
/// :func:`ticklane.subscribe`.
#[pyclass(module = "ticklane", name = "Subscription", frozen)]
pub struct Subscription {
    server: SocketAddr,
    symbols: Vec<String>,
    stop: Arc<AtomicBool>,
    following: Mutex<Following>,
}

impl Subscription {
    /// Stops the client thread (within a read timeout or a backoff slice) and lets go of
    /// its queue, so that a client waiting to hand an update over wakes and ends.
    fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        let mut following = self
            .following
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        following.updates = None;
        following.client = None;
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[pymethods]
impl Subscription {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next update, waiting for it with the GIL released; the end (``StopIteration``)
    /// once closed; :class:`SubscribeError` when the client gave up.
    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let mut following = self
            .following
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        loop {
            let Some(updates) = following.updates.as_mut() else {
                return Ok(None);
            };
            match py.detach(move || updates.recv_timeout(WAIT)) {
                Ok(update) => return update.into_dict(py).map(Some),
                Err(RecvTimeoutError::Timeout) => {
                    if let Err(interrupted) = py.check_signals() {
                        drop(following);
                        self.stop();
                        return Err(interrupted);
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    following.updates = None;
                    let end = following
                        .client
                        .take()
                        .map(|client| py.detach(|| client.join()));
                    return match end {
                        Some(Ok(Err(e))) => Err(SubscribeError::new_err(e.to_string())),
                        Some(Err(_)) => Err(PyRuntimeError::new_err("the client thread panicked")),
                        Some(Ok(Ok(()))) | None => Ok(None),
                    };
                }
            }
        }
    }

    /// Stops following: the connection is closed and iteration ends.
    fn close(&self) {
        self.stop();
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, _exc: &Bound<'_, pyo3::types::PyTuple>) {
        self.stop();
    }

    /// The server followed.
    #[getter]
    fn server(&self) -> String {
        self.server.to_string()
    }

    /// The symbols followed.
    #[getter]
    fn symbols(&self) -> Vec<String> {
        self.symbols.clone()
    }

    fn __repr__(&self) -> String {
        format!(
            "ticklane.Subscription({}, {})",
            self.server,
            self.symbols.join(",")
        )
    }
}

/// `server` (`IP:PORT`, or `HOST:PORT` resolved once) as an address.
fn address(server: &str) -> PyResult<SocketAddr> {
    let refused = |why: String| PyValueError::new_err(format!("server {server:?}: {why}"));
    let addr = server
        .to_socket_addrs()
        .map_err(|e| refused(e.to_string()))?
        .next()
        .ok_or_else(|| refused("names no address".into()))?;
    if addr.port() == 0 {
        return Err(refused("port 0 is no server".into()));
    }
    Ok(addr)
}

fn tls(server: SocketAddr, ca: Option<PathBuf>, name: Option<String>) -> PyResult<ClientTls> {
    let name = name.unwrap_or_else(|| server.ip().to_string());
    let server_name =
        server_name(&name).map_err(|why| PyValueError::new_err(format!("server_name {why}")))?;
    let config = client_config(ca.as_deref()).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(ClientTls {
        config,
        server_name,
    })
}

/// Follows ``symbols`` on the subscriber server at ``server`` (``IP:PORT``, the address of
/// ``ticklane run --serve``), as ``ticklane subscribe`` does, and returns a
/// :class:`Subscription`: iterate it for the updates, each a dict with a ``type``:
///
/// - ``image``: a book's whole state, after each subscribe and whenever the server conflated
///   (``seq``, ``symbol``, ``locate``, ``stale``, ``maybe_bad``, ``at_depth`` (the book may
///   hold more levels than sent), ``trading_state``, ``feed_seq``, ``bids`` and ``asks``:
///   best first, each ``(price, qty, orders)``);
/// - ``level``: one level changed (``seq``, ``symbol``, ``side`` ``B``/``S``, ``level`` as
///   ``(price, qty, orders)``; qty 0: the level is gone); ``quote``: the top of book
///   (``bid``, ``ask``); ``trade`` (``price``, ``shares``); ``trading_state`` (``state``,
///   ``reason``);
/// - ``connected`` (``failed_attempts`` in a row before it), ``gap`` (``expected``, ``got``:
///   sequenced messages lost; the images after a reconnect set the books right),
///   ``reconnecting`` (``why``, ``delay_ms``, ``server_asked``), ``unknown_symbol`` (asked
///   again every second), ``not_entitled`` (``symbol``, ``reason``).
///
/// Prices are integers in 1/10,000 dollars. The client runs on a thread of its own:
/// reconnects wait an exponential backoff with full jitter (``backoff_base_ms`` doubling up
/// to ``backoff_cap_ms``), or the server's retry-after; it gives up after ``max_attempts``
/// failed attempts in a row (default: never) or when the server asks for longer than the
/// cap, raising :class:`SubscribeError`. ``account`` and ``password`` log in to a server
/// with accounts (without a password the login carries no secret, which only a server
/// without accounts takes); ``tls=True`` (or ``ca``, the PEM file to verify the server by,
/// or ``server_name``, the name its certificate must carry) connects over TLS. Waiting for
/// an update releases the GIL; Ctrl-C raises ``KeyboardInterrupt`` and closes the
/// subscription, as :meth:`Subscription.close` and leaving a ``with`` block do.
#[pyfunction]
#[pyo3(signature = (
    server, symbols, *, account="ticklane", password=None, tls=false, ca=None,
    server_name=None, max_attempts=None, backoff_base_ms=100, backoff_cap_ms=30_000
))]
#[allow(clippy::too_many_arguments)]
pub fn subscribe(
    server: &str,
    symbols: Vec<String>,
    account: &str,
    password: Option<String>,
    tls: bool,
    ca: Option<PathBuf>,
    server_name: Option<String>,
    max_attempts: Option<u32>,
    backoff_base_ms: u64,
    backoff_cap_ms: u64,
) -> PyResult<Subscription> {
    let server = address(server)?;
    if symbols.is_empty() || symbols.iter().any(String::is_empty) {
        return Err(PyValueError::new_err(
            "symbols must name at least one symbol, each 1 to 8 characters",
        ));
    }
    OutputFilter::parse(&symbols.join(","), "")
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    if backoff_base_ms == 0 || backoff_cap_ms < backoff_base_ms {
        return Err(PyValueError::new_err(
            "backoff_base_ms must be at least 1 and backoff_cap_ms at least backoff_base_ms",
        ));
    }
    if max_attempts == Some(0) {
        return Err(PyValueError::new_err("max_attempts must be at least 1"));
    }
    let secret = match password {
        None => Secret::NONE,
        Some(p) if p.is_empty() => return Err(PyValueError::new_err("the password is empty")),
        Some(p) => Secret::new(p.as_bytes())
            .ok_or_else(|| PyValueError::new_err("the password is too long"))?,
    };
    let tls = if tls || ca.is_some() || server_name.is_some() {
        Some(self::tls(server, ca, server_name)?)
    } else {
        None
    };
    let config = ClientConfig {
        account: account.to_owned(),
        tls,
        secret,
        backoff: BackoffConfig {
            base: Duration::from_millis(backoff_base_ms),
            cap: Duration::from_millis(backoff_cap_ms),
        },
        max_attempts,
        seed: u64::from(std::process::id()),
        ..ClientConfig::new(server, symbols.clone())
    };
    let stop = Arc::new(AtomicBool::new(false));
    let (to, updates) = sync_channel(QUEUED_UPDATES);
    let stopped = Arc::clone(&stop);
    let client = std::thread::Builder::new()
        .name("ticklane-subscribe".into())
        .spawn(move || {
            run_subscriber(
                &config,
                &stopped,
                &mut |delay| {
                    pause_unless_stopped(delay, &stopped);
                },
                &mut |event| {
                    let Some(update) = Update::of(&event) else {
                        return ControlFlow::Continue(());
                    };
                    match to.send(update) {
                        Ok(()) => ControlFlow::Continue(()),
                        // A closed queue: Python let go of the subscription.
                        Err(_) => ControlFlow::Break(()),
                    }
                },
            )
        })
        .map_err(|e| PyRuntimeError::new_err(format!("starting the client thread: {e}")))?;
    Ok(Subscription {
        server,
        symbols,
        stop,
        following: Mutex::new(Following {
            updates: Some(updates),
            client: Some(client),
        }),
    })
}
