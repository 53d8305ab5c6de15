//! One way to run a server thread: the admin server, the browser view and the subscriber
//! server all bind a TCP listener, serve it from a mio poll loop on a thread of their own,
//! and stop on a flag. [`ServerThread`] is that shape once: it binds before the thread
//! starts (a bad address fails at start-up, and port 0 resolves), registers the listener
//! under [`LISTENER`] and a waker under [`WAKE`], and on stop sets the flag with `Release`
//! (the loop reads it with `Acquire`, so whatever was written before the stop is seen
//! after it), wakes the poll so the loop sees the flag at once rather than at its next
//! tick, and joins the thread. Dropping the handle does the same.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use mio::net::TcpListener;
use mio::{Interest, Poll, Token, Waker};

/// The token the listener is registered under.
pub const LISTENER: Token = Token(0);
/// The token of the waker a stop wakes the poll with; a loop ignores its events, and
/// checks its stop flag after every poll.
pub const WAKE: Token = Token(usize::MAX);

/// A server's thread, serving one listener until stopped.
///
/// `ServerThread` is `Send` (it may be stopped from any thread) but holds the thread's
/// result `R` only until [`ServerThread::stop`] takes it.
#[derive(Debug)]
pub struct ServerThread<R> {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    waker: Arc<Waker>,
    thread: Option<JoinHandle<R>>,
}

impl<R: Send + 'static> ServerThread<R> {
    /// Binds `listen`, then runs `serve(poll, listener, stop)` on a thread named `name`
    /// until it returns. `serve` must return once `stop` reads true (checked with
    /// `Acquire` after each poll; events under [`WAKE`] only wake it). `stop` may be shared
    /// with others (the process's shutdown flag), so that the server starts stopping as
    /// soon as it is set.
    ///
    /// # Errors
    ///
    /// If the address cannot be bound (the error names it, and keeps the OS error's kind),
    /// or the poll, the waker or the thread cannot be made.
    pub fn start(
        name: &str,
        listen: SocketAddr,
        stop: Arc<AtomicBool>,
        serve: impl FnOnce(Poll, TcpListener, &AtomicBool) -> R + Send + 'static,
    ) -> io::Result<Self> {
        let mut listener = TcpListener::bind(listen)
            .map_err(|e| io::Error::new(e.kind(), format!("{listen}: {e}")))?;
        let addr = listener.local_addr()?;
        let poll = Poll::new()?;
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKE)?);
        let thread = {
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name(name.to_owned())
                .spawn(move || serve(poll, listener, &stop))?
        };
        Ok(ServerThread {
            addr,
            stop,
            waker,
            thread: Some(thread),
        })
    }
}

impl<R> ServerThread<R> {
    /// The address it listens on (the port the kernel chose, for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops the server and waits for its thread: what `serve` returned, or `None` if it
    /// panicked (the panic was already reported on stderr).
    pub fn stop(mut self) -> Option<R> {
        self.stop_and_join()
    }

    fn stop_and_join(&mut self) -> Option<R> {
        self.stop.store(true, Ordering::Release);
        // A failed wake still stops the loop, at its next poll timeout.
        let _ = self.waker.wake();
        self.thread.take().and_then(|t| t.join().ok())
    }
}

impl<R> Drop for ServerThread<R> {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mio::Events;
    use std::time::{Duration, Instant};

    /// A loop that polls with no timeout: only the waker can end its wait, so a stop that
    /// did not wake it would hang the test (bounded by the join below). It says on `ready`
    /// when it has checked the flag and goes to poll.
    fn serve_until_stopped(
        mut poll: Poll,
        stop: &AtomicBool,
        ready: Option<std::sync::mpsc::Sender<()>>,
    ) -> u32 {
        let mut events = Events::with_capacity(4);
        let mut wakes = 0;
        while !stop.load(Ordering::Acquire) {
            if let Some(ready) = &ready {
                let _ = ready.send(());
            }
            if poll.poll(&mut events, None).is_ok() {
                wakes += events.iter().filter(|e| e.token() == WAKE).count() as u32;
            }
        }
        wakes
    }

    #[test]
    fn stop_wakes_a_loop_blocked_in_poll_and_returns_what_it_returned() {
        let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
        let (ready, in_poll) = std::sync::mpsc::channel();
        let server =
            ServerThread::start("test-server", loopback, Arc::default(), move |p, _, s| {
                serve_until_stopped(p, s, Some(ready))
            })
            .expect("start");
        assert_ne!(server.local_addr().port(), 0, "port 0 resolved at start");
        in_poll
            .recv_timeout(Duration::from_secs(10))
            .expect("the loop started");
        let started = Instant::now();
        // Past the flag check, so only the wake can end its poll: woken once, by the stop
        // (the waker's event stays pending if the poll starts after it).
        assert_eq!(server.stop(), Some(1));
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_shared_stop_flag_and_a_drop_both_stop_it() {
        let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
        let flag = Arc::new(AtomicBool::new(false));
        let server = ServerThread::start("test-server", loopback, Arc::clone(&flag), |p, _, s| {
            serve_until_stopped(p, s, None)
        })
        .expect("start");
        drop(server);
        assert!(flag.load(Ordering::Acquire), "the drop set the shared flag");
    }

    #[test]
    fn an_address_that_cannot_be_bound_is_named_in_the_error() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = taken.local_addr().expect("addr");
        let err = ServerThread::start("test-server", addr, Arc::default(), |p, _, s| {
            serve_until_stopped(p, s, None)
        })
        .expect_err("in use");
        assert_eq!(err.kind(), io::ErrorKind::AddrInUse);
        assert!(err.to_string().contains(&addr.to_string()), "{err}");
    }
}
