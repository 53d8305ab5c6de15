//! ticklane-testkit: the tools every crate's tests share, kept once.
//!
//! - [`counting_alloc`]: a counting global allocator, for the tests that prove a path
//!   allocates nothing once warm (per thread, or every thread of a process).
//! - [`pcap`], [`moldudp64`], [`soupbintcp`], [`itch`]: captures, packets, frames and
//!   messages laid out by hand from the specifications (pcap, pcapng, Ethernet/IPv4/UDP,
//!   MoldUDP64 1.0, SoupBinTCP 4.1, ITCH 5.0), never with the writers under test, so a
//!   shared encoding mistake cannot hide.
//! - [`process`]: child processes with bounded waits (`wait_bounded`, the line-watching
//!   [`process::Watched`]), ports a child can bind ([`process::free_port`]), and this test
//!   binary run again as a child ([`process::rerun_test`]).
//! - [`certs`]: a test CA and the certificates it issues (current, expired), made in the
//!   test with rcgen.
//! - [`loopback`], [`poll_until`], [`temp_file`]: a loopback address, a bounded poll, a file
//!   holding given bytes.
//! - [`skips`] and [`oracle`]: where the repository and `../shared/data` are, and the
//!   independent implementation (itch-book and other Python readers in `tests/oracle/`);
//!   a test that cannot reach them skips loudly, or fails under `CI=true`.
//!
//! This crate depends on no ticklane crate (std and small crates only), so that the engine
//! and the feed can dev-depend on it without a cycle. Helpers that need ticklane types
//! (generated days, book capacities) live in a `util` module inside each crate's test
//! binary instead. The crate's own tests, the end-to-end ones, are the binary `tests/it`.
//!
//! ```
//! use ticklane_testkit::moldudp64;
//!
//! // A MoldUDP64 packet of one 12-byte message: a 20-byte header, then the block.
//! let packet = moldudp64::packet(b"SESSION001", 1, &[&[b'S'; 12]]);
//! assert_eq!(packet.len(), 20 + 2 + 12);
//! assert_eq!(moldudp64::Header::read(&packet).map(|h| h.count), Some(1));
//! ```

// Only the allocator needs `unsafe` (a `GlobalAlloc` impl); it says so where it does.
#![deny(unsafe_code)]

pub mod certs;
pub mod counting_alloc;
pub mod itch;
pub mod moldudp64;
pub mod oracle;
pub mod pcap;
pub mod process;
pub mod skips;
pub mod soupbintcp;

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::{Duration, Instant};

pub use skips::{in_ci, repo_root, shared_data, skip};

/// `127.0.0.1:port`; port 0 lets the kernel choose when the address is bound.
pub fn loopback(port: u16) -> SocketAddr {
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port))
}

/// Polls `done` every millisecond until it says true or `within` has passed; whether it
/// did (asked once more at the deadline).
pub fn poll_until(within: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    done()
}

/// A temporary file holding `bytes`, deleted when dropped.
///
/// # Panics
///
/// If the file cannot be created or written.
pub fn temp_file(bytes: &[u8]) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    file.write_all(bytes).expect("write temp file");
    file
}
