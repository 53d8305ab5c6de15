//! The engine's zero-allocation tests, in a binary of their own with a main of its own.
//!
//! What they measure runs on threads they do not create (the pipeline's reader and book
//! threads, the subscriber server's thread), where no thread-local switch can be turned on,
//! so they count every thread of the process but the main one
//! (`ticklane_testkit::counting_alloc`'s `EveryThread`). Under libtest's harness the other
//! tests' threads start and end while a window is open (each test thread's output capture is
//! allocated on it, each result is sent from it), and on a loaded machine that lands inside
//! a window now and then. Here `main` runs the tests one after another, each on a thread of
//! its own that is joined before the next starts, so nothing else runs while one counts.
//!
//! `cargo test` runs it like any test binary; arguments that are not flags filter the tests
//! by name, as libtest's do. Started with the simulator's variable set, the binary is the
//! live test's exchange simulator instead, in a process of its own.

use std::process::ExitCode;

use ticklane_testkit::counting_alloc::CountingAllocator;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

mod live_zero_alloc;
mod serve_zero_alloc;

const TESTS: [(&str, fn()); 2] = [
    (
        "live_zero_alloc::reader_and_book_threads_allocate_nothing_per_message",
        live_zero_alloc::reader_and_book_threads_allocate_nothing_per_message,
    ),
    (
        "serve_zero_alloc::serving_requests_allocates_nothing_once_warm",
        serve_zero_alloc::serving_requests_allocates_nothing_once_warm,
    ),
];

fn main() -> ExitCode {
    if live_zero_alloc::simulator_child() {
        return ExitCode::SUCCESS;
    }
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with('-'))
        .collect();
    let chosen: Vec<_> = TESTS
        .iter()
        .filter(|(name, _)| filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str())))
        .collect();
    println!("\nrunning {} tests", chosen.len());
    let mut failed = Vec::new();
    for &&(name, test) in &chosen {
        let outcome = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(test)
            .expect("start the test's thread")
            .join();
        // A failing test's panic message was printed by the panic hook as it happened.
        let verdict = if outcome.is_ok() { "ok" } else { "FAILED" };
        println!("test {name} ... {verdict}");
        if outcome.is_err() {
            failed.push(name);
        }
    }
    let verdict = if failed.is_empty() { "ok" } else { "FAILED" };
    println!(
        "\ntest result: {verdict}. {} passed; {} failed; {} filtered out\n",
        chosen.len() - failed.len(),
        failed.len(),
        TESTS.len() - chosen.len()
    );
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
