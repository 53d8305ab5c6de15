//! Child processes for the tests that run one (`ticklane`, a simulator, promtool, this test
//! binary again): a bounded wait, a child whose stdout is watched line by line so a test can
//! wait for its "ready" line instead of sleeping, and ports a child can bind.
//!
//! The `ticklane` binary itself is named by each test crate (`CARGO_BIN_EXE_ticklane` is
//! handed only to the engine's own tests).

#![forbid(unsafe_code)]

use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a child may take to say it is ready.
pub const READY_WITHIN: Duration = Duration::from_secs(10);

/// This test binary, to be run again as a child that runs only the test `name` of the
/// module `module` (pass `module_path!()`), alone and with its output uncaptured.
///
/// A test binary's test names are module paths without the crate's own name
/// (`snapshot_lock::lock_holder_child` in the binary `it`), hence `module`.
///
/// # Panics
///
/// If the running executable cannot be named.
pub fn rerun_test(module: &str, name: &str) -> Command {
    let path = module.split_once("::").map(|(_, path)| path);
    let test = path.map_or_else(|| name.to_owned(), |path| format!("{path}::{name}"));
    let mut command = Command::new(std::env::current_exe().expect("the test binary"));
    command.args(["--exact", &test, "--nocapture", "--test-threads=1"]);
    command
}

/// A loopback port free for both UDP and TCP now, for a child process to bind.
///
/// The port is probed and released, so something else could take it before the child binds
/// it. It is therefore chosen below the kernel's ephemeral range (from
/// `/proc/sys/net/ipv4/ip_local_port_range`), where no other test's `bind(":0")` and no
/// outgoing connection is ever given a port. Each call moves on along one counter for the
/// whole process, so the tests sharing a binary never pick the same port, and test
/// processes start their probes at places spread by their process id, so two processes that
/// probe at the same moment do not either.
///
/// # Panics
///
/// If every port below the ephemeral range is taken.
pub fn free_port() -> u16 {
    use std::net::TcpListener;
    use std::sync::atomic::{AtomicU32, Ordering};
    const LOWEST: u32 = 10_000;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let below = ephemeral_low().max(LOWEST + 1_000);
    let span = below - LOWEST;
    let start = std::process::id().wrapping_mul(7_919) % span;
    for _ in 0..span {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = (LOWEST + (start + n) % span) as u16;
        let udp = UdpSocket::bind(("127.0.0.1", port));
        let tcp = TcpListener::bind(("127.0.0.1", port));
        if udp.is_ok() && tcp.is_ok() {
            return port;
        }
    }
    panic!("no free loopback port in {LOWEST}..{below}");
}

/// The lowest port the kernel hands out by itself (Linux's default when it cannot be read).
fn ephemeral_low() -> u32 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}

/// Waits for `child` at most `limit`, polling its status; kills it and fails if it runs
/// longer.
///
/// # Panics
///
/// If the child runs past `limit` (its stdout is in the message), or cannot be polled.
pub fn wait_bounded(mut child: Child, limit: Duration) -> Output {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if child.try_wait().expect("poll child").is_some() {
            return child.wait_with_output().expect("collect output");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let out = child.wait_with_output().expect("collect output");
    panic!(
        "still running after {limit:?}:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// A child whose stdout is read line by line as it comes, so a test can wait for one line
/// and still see everything it printed at the end.
pub struct Watched {
    /// The child process.
    pub child: Child,
    lines: Receiver<String>,
    reader: JoinHandle<()>,
    seen: Vec<String>,
}

impl Watched {
    /// Starts `command` with stdout and stderr piped.
    ///
    /// # Panics
    ///
    /// If the child cannot be started.
    pub fn spawn(command: &mut Command) -> Watched {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the child process");
        let stdout = child.stdout.take().expect("piped stdout");
        let (send, lines) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Watched {
            child,
            lines,
            reader,
            seen: Vec::new(),
        }
    }

    /// Waits, at most `limit`, for a line that starts with `prefix`; returns it.
    ///
    /// # Panics
    ///
    /// If no such line comes within `limit` (the child is killed), or the child ends first;
    /// the message holds every line seen (and the child's stderr, if it ended).
    pub fn wait_for_line(&mut self, prefix: &str, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.starts_with(prefix) {
                        return line;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    let _ = self.child.kill();
                    panic!(
                        "no `{prefix}` line within {limit:?}; saw:\n{}",
                        self.seen.join("\n")
                    );
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self.child.wait().expect("child status");
                    let mut stderr = String::new();
                    if let Some(mut pipe) = self.child.stderr.take() {
                        let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
                    }
                    panic!(
                        "exited ({status}) before printing `{prefix}`; saw:\n{}\nstderr:\n{stderr}",
                        self.seen.join("\n")
                    );
                }
            }
        }
    }

    /// Waits for the child to end (at most `limit`): its status, every stdout line as
    /// text (those already waited for included), and its stderr.
    ///
    /// # Panics
    ///
    /// As [`wait_bounded`].
    pub fn finish(mut self, limit: Duration) -> Output {
        let mut output = wait_bounded(self.child, limit);
        self.reader.join().expect("stdout reader");
        self.seen.extend(self.lines.try_iter());
        let mut text = self.seen.join("\n");
        text.push('\n');
        output.stdout = text.into_bytes();
        output
    }
}
