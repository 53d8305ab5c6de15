//! After warm-up, reading a file, decoding, applying to the books and tracking the top of
//! book allocate nothing: a counting global allocator watches a replay of well over a
//! million messages, so even one allocation per thousand messages would show.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io;

use ticklane_engine::book::BookConfig;
use ticklane_engine::replay::{BboCsvWriter, Replayer};
use ticklane_feed::capture::{CaptureReader, ReadOptions};
use ticklane_feed::sim::GenConfig;

mod util;

/// Counts allocations made by the thread under test only (the harness has threads too).
struct CountingAllocator;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn note_allocation() {
    // `try_with`: the allocator may run while thread-locals are torn down.
    let _ = COUNTING.try_with(|on| {
        if on.get() {
            let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        }
    });
}

// SAFETY: every call is forwarded unchanged to the system allocator; counting touches only
// const-initialised thread-locals, which never allocate.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract; we pass it on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation();
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

const WARM_UP: u64 = 50_000;
const MEASURED: u64 = 1_200_000;

#[test]
fn replay_allocates_nothing_per_message_after_warm_up() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("day.itch50");
    let config = GenConfig {
        messages: WARM_UP + MEASURED,
        seed: 9,
        stocks: 50,
        hard_cases: true,
        crossing: true,
    };
    util::write_generated(&file, config);

    let mut reader = CaptureReader::open(&file, ReadOptions::default()).expect("open");
    let bbo = BboCsvWriter::new(io::sink()).expect("sink");
    let mut replayer = Replayer::new(
        BookConfig {
            max_orders: 1 << 20,
            max_books: 256,
            levels_per_side: 4096,
        },
        Some(bbo),
    )
    .expect("books fit");
    let mut measured = 0u64;
    while let Some(raw) = reader.next_message().expect("valid file") {
        if raw.index == WARM_UP + 1 {
            COUNTING.with(|c| c.set(true));
        }
        if raw.index > WARM_UP {
            measured += 1;
        }
        replayer.step(raw.index, raw.bytes).expect("valid message");
    }
    COUNTING.with(|c| c.set(false));
    let allocations = ALLOCATIONS.with(Cell::get);
    assert_eq!(measured, MEASURED);
    assert!(
        replayer.bbo_rows() > MEASURED / 10,
        "the top of book was tracked"
    );
    assert_eq!(
        allocations, 0,
        "allocations over {MEASURED} messages after warm-up"
    );
}
