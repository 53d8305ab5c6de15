//! Helpers for the tests that run `ticklane` as a child process: bounded waits, free ports.
#![allow(dead_code)]

use std::net::UdpSocket;
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

/// How long a child may take to say it is ready.
pub const READY_WITHIN: Duration = Duration::from_secs(10);

/// The `ticklane` binary this test crate was built with.
pub fn ticklane() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ticklane"))
}

/// A free loopback UDP port (released at once; the race with other processes is benign
/// here, and the test would fail loudly rather than pass wrongly).
pub fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .map(|a| a.port())
        .expect("probe port")
}

/// Waits for `child` at most `limit`, polling its status; kills it and fails if it runs
/// longer.
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
