//! How a real `ticklane subscribe` process ends: a Ctrl-C (SIGINT) during a long backoff
//! ends it at once with 130, not when the backoff is over; a closed stdout
//! (`ticklane subscribe … | head -1`) ends it with 141, as the other commands do.
//!
//! Against a server that refuses every login with a retry-after, laid out by the protocol's
//! encoder (as `serve_reconnect.rs` does). Here rather than in `tests/`: only this crate's
//! tests are handed the `ticklane` binary. Bounded: every wait has a limit.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ticklane_engine::serve::protocol::{encode_server, Reason, ServerMessage};

use crate::util::{ticklane, wait_bounded, Watched, READY_WITHIN};

/// A server that answers every login with "busy, come back after `retry_after_ms`" and
/// closes, until it is dropped: the tests share their process, so it must not outlive its
/// test.
struct RefusingServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

fn refusing_server(retry_after_ms: u32) -> RefusingServer {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let mut reply = Vec::new();
    encode_server(
        &ServerMessage::LoginRejected {
            reason: Reason::Busy,
            retry_after_ms,
        },
        &mut reply,
    );
    let stop = Arc::new(AtomicBool::new(false));
    let thread = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(mut s) = stream else { continue };
                // The login frame (21 bytes), then the refusal.
                let mut login = [0u8; 21];
                let _ = s.read_exact(&mut login);
                let _ = s.write_all(&reply);
            }
        })
    };
    RefusingServer {
        addr,
        stop,
        thread: Some(thread),
    }
}

impl Drop for RefusingServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept, which then sees `stop`.
        let _ = TcpStream::connect(self.addr);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[test]
fn sigint_during_a_long_backoff_exits_130_at_once() {
    let server = refusing_server(30_000);
    let mut child = Watched::spawn(ticklane().args([
        "subscribe",
        "--server",
        &server.addr.to_string(),
        "--symbols",
        "AAPL",
        "--backoff-cap-ms",
        "60000",
    ]));
    // Printed just before the pause begins; the handler was installed before connecting.
    let line = child.wait_for_line("disconnected:", READY_WITHIN);
    assert!(
        line.ends_with("reconnecting in 30000 ms (as the server asked)"),
        "{line}"
    );
    let sent = Instant::now();
    assert!(Command::new("kill")
        .args(["-INT", &child.child.id().to_string()])
        .status()
        .expect("kill")
        .success());
    // Well inside the 30 s backoff: a pause that ignored the signal fails here.
    let out = child.finish(Duration::from_secs(10));
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(sent.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_closed_stdout_exits_141() {
    // Refused every 20 ms: a line to print every 20 ms or so.
    let server = refusing_server(20);
    let mut child = ticklane()
        .args([
            "subscribe",
            "--server",
            &server.addr.to_string(),
            "--symbols",
            "AAPL",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start ticklane");
    // `| head -1`: read one line, then close the pipe.
    let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut first = String::new();
    stdout.read_line(&mut first).expect("a first line");
    assert!(first.starts_with("disconnected:"), "{first}");
    drop(stdout);
    let out = wait_bounded(child, READY_WITHIN);
    assert_eq!(
        out.status.code(),
        Some(141),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
