//! The end-to-end and cross-crate tests, one binary: a module per topic, so that a change
//! links this binary rather than one per file. Helpers that need engine or feed types are
//! in [`util`]; the rest come from this crate's library (`ticklane_testkit`).
//!
//! Every test here shares one process with the others, so none may change what is
//! process-wide: no `std::env::set_var` or `set_current_dir` (a child gets its own
//! environment and directory through `Command`), files only under a test's own temporary
//! directory (and `target/fault_table.txt`, `target/recovery_table.txt`, one writer each),
//! ports from the kernel (`:0`).
//!
//! The counting allocator is installed for `zero_alloc` and `overload_zero_alloc`. It counts
//! per thread: each of those tests does all its work on its own thread, so what the other
//! tests allocate meanwhile, on libtest's other threads, is not counted, and they can share
//! this binary.

use ticklane_testkit::counting_alloc::CountingAllocator;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

mod util;

mod ab_lines;
mod bad_input_captures;
mod bad_input_length_prefixes;
mod bad_input_open_errors;
mod bad_input_torn_snapshot_slot;
mod book_model;
mod dbn_input;
mod dbn_out;
mod dbn_round_trip;
mod fault_injection;
mod garbage_input;
mod glimpse_snapshot;
mod glimpse_start;
mod live_feed;
mod oracle_itch_book;
mod overload_zero_alloc;
mod parquet_out;
mod recovery_rates;
mod replay_threads;
mod sample_depth;
mod shared_data;
mod soup_reconnects;
mod zero_alloc;
