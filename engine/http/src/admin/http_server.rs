//! The admin interface's HTTP/1.1 server: a mio loop on one thread that accepts, reads one
//! request head ([`crate::http_head`], `httparse` underneath), answers it with [`route`] and
//! closes.
//!
//! Bounded in every way: one connection served at a time (the others wait in the kernel's
//! accept backlog), a request of at most [`ServerLimits::max_request`] bytes of head, each
//! read within [`ServerLimits::read_timeout`] and the whole request within
//! [`ServerLimits::request_deadline`]; bodies are not read (no call takes one). A loopback
//! health check or scrape takes well under a millisecond, so serving one at a time costs
//! nothing, and a slow or hostile client holds the server for one deadline at most.
//!
//! Never logged: the `Authorization` header (the token). Admin calls are logged to stderr
//! with their peer, path and status.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mio::net::TcpListener;
use mio::{Events, Poll};
use prometheus_client::registry::Registry;
use ticklane_pipeline::server_thread::ServerThread;

use super::{metrics_registry, route, AdminState, Response};
use crate::http_head::{read_blocking, reason, HeadLimits, Progress};

/// How much one request may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerLimits {
    /// Most bytes of request line and headers.
    pub max_request: usize,
    /// Longest wait for the next bytes of a request.
    pub read_timeout: Duration,
    /// Longest time from accept to the request fully read.
    pub request_deadline: Duration,
    /// Longest wait for the client to take the answer.
    pub write_timeout: Duration,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_request: 8 * 1024,
            read_timeout: Duration::from_millis(500),
            request_deadline: Duration::from_secs(2),
            write_timeout: Duration::from_secs(2),
        }
    }
}

/// The running server; dropping it stops it (and waits for its thread).
#[derive(Debug)]
pub struct AdminServer {
    thread: ServerThread<()>,
}

impl AdminServer {
    /// Binds `listen` now (so that a bad address fails before the feed starts, and port 0
    /// is resolved), then serves `state` on a thread named `admin`.
    ///
    /// # Errors
    ///
    /// If the address cannot be bound (the error names it) or the thread cannot start.
    pub fn start(
        listen: SocketAddr,
        state: Arc<AdminState>,
        limits: ServerLimits,
    ) -> io::Result<Self> {
        let registry = metrics_registry(Arc::clone(&state));
        let thread = ServerThread::start(
            "admin",
            listen,
            Arc::default(),
            move |poll, listener, stop| serve(poll, listener, &state, &registry, limits, stop),
        )?;
        Ok(AdminServer { thread })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.thread.local_addr()
    }
}

fn serve(
    mut poll: Poll,
    listener: TcpListener,
    state: &AdminState,
    registry: &Registry,
    limits: ServerLimits,
    stop: &AtomicBool,
) {
    let mut events = Events::with_capacity(8);
    while !stop.load(Ordering::Acquire) {
        if let Err(e) = poll.poll(&mut events, None) {
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            eprintln!("ticklane admin: poll failed, server stops: {e}");
            return;
        }
        // Accept until WouldBlock, serving each connection to its end.
        loop {
            if stop.load(Ordering::Acquire) {
                return;
            }
            match listener.accept() {
                Ok((stream, peer)) => {
                    serve_one(TcpStream::from(stream), peer, state, registry, limits);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // Out of descriptors and the like: poll again rather than spin.
                    eprintln!("ticklane admin: accept failed: {e}");
                    break;
                }
            }
        }
    }
}

/// What came of reading a request.
enum Read_ {
    /// Method, target, and the `Authorization` header's value if sent.
    Request(String, String, Option<Vec<u8>>),
    /// Answer this and close.
    Refuse(Response),
    /// The peer went away or timed out: close without an answer.
    Gone,
}

fn read_request(stream: &mut TcpStream, limits: ServerLimits) -> Read_ {
    let head_limits = HeadLimits {
        max_bytes: limits.max_request,
        deadline: limits.request_deadline,
    };
    match read_blocking(stream, head_limits, limits.read_timeout) {
        Progress::Complete(head) => Read_::Request(
            head.method().to_owned(),
            head.target().to_owned(),
            head.header("authorization").map(<[u8]>::to_vec),
        ),
        Progress::Refused(e) => Read_::Refuse(Response {
            status: e.status(),
            content_type: "text/plain; charset=utf-8",
            body: format!("{e}\n"),
        }),
        // A blocking read is never pending (read_blocking says TimedOut instead).
        Progress::Pending | Progress::Gone => Read_::Gone,
    }
}

fn serve_one(
    mut stream: TcpStream,
    peer: SocketAddr,
    state: &AdminState,
    registry: &Registry,
    limits: ServerLimits,
) {
    // Accepted sockets may inherit the listener's non-blocking mode; this one blocks, with
    // timeouts.
    if stream.set_nonblocking(false).is_err()
        || stream
            .set_write_timeout(Some(limits.write_timeout))
            .is_err()
    {
        return;
    }
    let response = match read_request(&mut stream, limits) {
        Read_::Request(method, target, authorization) => {
            let response = route(state, registry, &method, &target, authorization.as_deref());
            if method == "POST" {
                // The path and the status only: never the Authorization header.
                eprintln!(
                    "ticklane admin: {peer} POST {} -> {}",
                    target.escape_debug(),
                    response.status
                );
            }
            response
        }
        Read_::Refuse(response) => response,
        Read_::Gone => return,
    };
    let auth_challenge = if response.status == 401 {
        "WWW-Authenticate: Bearer\r\n"
    } else {
        ""
    };
    let head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{auth_challenge}Connection: close\r\n\r\n",
        response.status,
        reason(response.status),
        response.content_type,
        response.body.len()
    );
    // A client that went away is not an error of ours.
    let _ = stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(response.body.as_bytes()))
        .and_then(|()| stream.flush());
    linger_close(stream, limits);
}

/// Closes after the answer without resetting the connection: closing with unread bytes
/// (a head cut at the limit, a body never read) makes the kernel send RST, which can
/// destroy the answer before the client reads it. So: end our side, then discard what the
/// client still sends, bounded in bytes and time.
fn linger_close(mut stream: TcpStream, limits: ServerLimits) {
    const DISCARD_MAX: usize = 64 * 1024;
    if stream.shutdown(std::net::Shutdown::Write).is_err()
        || stream.set_read_timeout(Some(limits.read_timeout)).is_err()
    {
        return;
    }
    let mut sink = [0u8; 4096];
    let mut discarded = 0;
    while discarded < DISCARD_MAX {
        match stream.read(&mut sink) {
            Ok(0) | Err(_) => return,
            Ok(n) => discarded += n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admin::FeedHandles;
    use ticklane_pipeline::health::Health;
    use ticklane_pipeline::LineCounters;

    fn server(limits: ServerLimits) -> AdminServer {
        let state = Arc::new(AdminState {
            health: Arc::new(Health::new()),
            feeds: vec![FeedHandles {
                name: "feed".into(),
                line: Arc::new(LineCounters::new()),
                dependencies: Vec::new(),
                overload: None,
                latency: None,
            }],
            token: None,
            servers: Arc::default(),
        });
        AdminServer::start("127.0.0.1:0".parse().expect("addr"), state, limits).expect("bind")
    }

    /// Sends `request` and reads the whole answer (the server closes after it).
    fn exchange(addr: SocketAddr, request: &[u8]) -> String {
        let mut s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        s.write_all(request).expect("send");
        let mut out = String::new();
        s.read_to_string(&mut out).expect("answer");
        out
    }

    #[test]
    fn serves_health_over_a_real_socket() {
        let srv = server(ServerLimits::default());
        let answer = exchange(srv.local_addr(), b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
        assert!(answer.ends_with(r#"{"state":"Healthy","draining":false,"reasons":[]}"#));
    }

    #[test]
    fn an_oversized_head_is_refused_and_garbage_is_a_bad_request() {
        let srv = server(ServerLimits {
            max_request: 64,
            ..ServerLimits::default()
        });
        let big = format!("GET /health HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(100));
        assert!(exchange(srv.local_addr(), big.as_bytes()).starts_with("HTTP/1.1 431 "));
        assert!(exchange(srv.local_addr(), b"\x00\x01garbage\r\n\r\n").starts_with("HTTP/1.1 400 "));
        // The server is still there.
        assert!(exchange(srv.local_addr(), b"GET /metrics HTTP/1.1\r\n\r\n")
            .starts_with("HTTP/1.1 200 "));
    }

    #[test]
    fn a_client_that_never_finishes_is_cut_at_the_deadline() {
        let srv = server(ServerLimits {
            read_timeout: Duration::from_millis(50),
            request_deadline: Duration::from_millis(200),
            ..ServerLimits::default()
        });
        // Half a request, then nothing: the server answers 408 and moves on to the next.
        let answer = exchange(srv.local_addr(), b"GET /health HTTP/1.1\r\n");
        assert!(answer.starts_with("HTTP/1.1 408 "), "{answer}");
        assert!(exchange(srv.local_addr(), b"GET /health HTTP/1.1\r\n\r\n")
            .starts_with("HTTP/1.1 200 "));
    }
}
