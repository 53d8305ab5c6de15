//! The engine's zero-allocation tests, in a binary of their own.
//!
//! What they measure runs on threads they do not create (the pipeline's reader and book
//! threads, the subscriber server's thread), where no thread-local switch can be turned on,
//! so they count every thread of the process (`ticklane_testkit::counting_alloc`'s
//! `EveryThread`). In the binary `it` they would count whatever the other tests allocate
//! meanwhile; here the only other test is the other zero-allocation one, and the two take
//! turns (`EveryThread::turn`). The tests whose work stays on their own thread count only
//! that thread and share their crate's `it` binary (the feed's, the testkit's).

use ticklane_testkit::counting_alloc::CountingAllocator;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

mod live_zero_alloc;
mod serve_zero_alloc;
