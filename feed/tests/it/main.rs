//! ticklane-feed's integration tests, one binary: a module per topic, so that a change links
//! one test binary rather than one per file. The packet and capture bytes they feed in are
//! laid out by hand (`ticklane_testkit::pcap`, `moldudp64`, `soupbintcp`).
//!
//! The counting allocator is installed for `arbitrary_bytes`, whose sessions must allocate
//! nothing after construction. It counts per thread (the tests of this binary run in
//! parallel on libtest's threads, and each check's work stays on its own thread), so the
//! check can share this binary with the other tests.

use ticklane_testkit::counting_alloc::CountingAllocator;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

mod arbitrary_bytes;
mod capture_length_prefixes;
mod capture_no_messages;
mod capture_os_errors;
mod itch_spec_layout;
