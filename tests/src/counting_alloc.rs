//! A global allocator that counts allocations, for the tests that prove a path allocates
//! nothing once warm ("zero allocations per message after warm-up"). A test binary installs
//! it with `#[global_allocator] static ALLOCATOR: CountingAllocator = CountingAllocator;`
//! (this library does not, so a binary that counts nothing keeps the plain allocator).
//!
//! Every call goes unchanged to the system allocator; `alloc`, `alloc_zeroed` and `realloc`
//! are counted (never `dealloc`), in two scopes, because the tests need both:
//!
//! - **This thread**, always: [`thread_allocations`], or [`start_counting`] and
//!   [`stop_counting`] around a span. For a test whose whole work runs on its own thread (a
//!   file replay, a protocol session driven by hand): the other tests of its binary, which
//!   libtest runs in parallel on other threads, and the harness itself never show up, so
//!   such a test can share its binary with any others.
//! - **Every thread**, while a window is open: [`EveryThread`], [`open_window`],
//!   [`close_window`]. For a test whose work runs on threads it does not create (a
//!   pipeline's reader and book threads, a server's thread), where no thread-local switch
//!   can be turned on. The window counts the whole process except its main thread, which
//!   runs no code under test (a turn cannot be taken on it). Anything else running in the
//!   process is counted too, other tests' threads as they start and end included, so the
//!   tests that count every thread live in a binary of their own without libtest's harness
//!   (the engine's `tests/zero_alloc`), whose main runs them one at a time; a turn also
//!   keeps them from overlapping. The window's first allocation records its thread and
//!   stack ([`first_window_allocation`]), for a failing test to say where it came from.
//!
//! Each test proves its counter counts (a probe allocation inside its window is seen).

// A `GlobalAlloc` impl and one FFI call: the only `unsafe` in this crate.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::backtrace::Backtrace;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Forwards to the system allocator and counts; see the module docs for the two scopes.
pub struct CountingAllocator;

thread_local! {
    /// Allocations made by this thread since it started.
    static THREAD: Cell<u64> = const { Cell::new(0) };
    /// Where this thread's span began ([`start_counting`]).
    static SPAN_START: Cell<Option<u64>> = const { Cell::new(None) };
    /// Set while this thread records where the window's first allocation came from: the
    /// recording's own allocations are not counted.
    static RECORDING: Cell<bool> = const { Cell::new(false) };
}

/// Every thread's allocations (but the main thread's) are counted while this is set.
static WINDOW_OPEN: AtomicBool = AtomicBool::new(false);
/// Allocations counted in windows since the current turn began (or the last take).
static IN_WINDOW: AtomicU64 = AtomicU64::new(0);
/// One turn at a time at counting every thread.
static TURN: Mutex<()> = Mutex::new(());
/// Set while an [`EveryThread`] turn is held.
static TURN_HELD: AtomicBool = AtomicBool::new(false);
/// Set by the first allocation counted in a window since the count was last reset, which
/// then records where it was made in [`FIRST`].
static FIRST_TAKEN: AtomicBool = AtomicBool::new(false);
/// The thread and call stack of that first allocation, unresolved (symbols are looked up
/// only when a failing test prints it).
static FIRST: Mutex<Option<(String, Backtrace)>> = Mutex::new(None);

fn note_allocation() {
    // `try_with`: the allocator may run while this thread's thread-locals are torn down.
    let _ = THREAD.try_with(|n| n.set(n.get() + 1));
    if WINDOW_OPEN.load(Ordering::Relaxed) && !on_main_thread() {
        if RECORDING.try_with(Cell::get).unwrap_or(true) {
            return;
        }
        IN_WINDOW.fetch_add(1, Ordering::Relaxed);
        if !FIRST_TAKEN.swap(true, Ordering::SeqCst) {
            record_first();
        }
    }
}

/// Records the calling thread's name and stack as the window's first allocation. Runs
/// inside the allocator: its own allocations are left out by `RECORDING`, and only the
/// thread that won `FIRST_TAKEN` takes the lock, so it cannot wait on itself.
fn record_first() {
    RECORDING.with(|recording| recording.set(true));
    let thread = std::thread::current()
        .name()
        .unwrap_or("unnamed")
        .to_owned();
    let stack = Backtrace::force_capture();
    *FIRST.lock().unwrap_or_else(PoisonError::into_inner) = Some((thread, stack));
    RECORDING.with(|recording| recording.set(false));
}

fn reset_first() {
    *FIRST.lock().unwrap_or_else(PoisonError::into_inner) = None;
    FIRST_TAKEN.store(false, Ordering::SeqCst);
}

/// Whether the calling thread is the process's main thread (on Linux its thread id is the
/// process id). A system call, made only while a window is open, where allocations are
/// the failure being looked for.
fn on_main_thread() -> bool {
    // SAFETY: `gettid` takes no arguments, touches no memory of ours and cannot fail.
    let tid = unsafe { libc::gettid() };
    u32::try_from(tid).is_ok_and(|tid| tid == std::process::id())
}

/// Allocations this thread has made since it started.
pub fn thread_allocations() -> u64 {
    THREAD.with(Cell::get)
}

/// Starts a span on this thread: [`stop_counting`] returns the allocations this thread made
/// since.
pub fn start_counting() {
    let now = thread_allocations();
    SPAN_START.with(|start| start.set(Some(now)));
}

/// Ends this thread's span; the allocations this thread made in it.
///
/// # Panics
///
/// If this thread did not call [`start_counting`] first.
pub fn stop_counting() -> u64 {
    let start = SPAN_START
        .with(Cell::take)
        .expect("stop_counting without start_counting on this thread");
    thread_allocations() - start
}

/// A turn at counting every thread of the process; the window shuts when it is dropped.
///
/// `EveryThread` is held by the test's own thread; the window itself may be opened and
/// closed from any thread ([`open_window`], [`close_window`]) while it is held.
pub struct EveryThread {
    _turn: MutexGuard<'static, ()>,
}

impl EveryThread {
    /// Waits until no other test holds a turn, then takes it, with the window shut and its
    /// count at zero.
    ///
    /// # Panics
    ///
    /// On the process's main thread, which the window leaves out: the test's own work
    /// would not be counted.
    pub fn turn() -> EveryThread {
        assert!(
            !on_main_thread(),
            "a turn at counting every thread taken on the main thread, which is not counted"
        );
        // A test that panicked holding its turn poisons the lock; the count is reset anyway.
        let turn = TURN.lock().unwrap_or_else(PoisonError::into_inner);
        WINDOW_OPEN.store(false, Ordering::SeqCst);
        IN_WINDOW.store(0, Ordering::SeqCst);
        reset_first();
        TURN_HELD.store(true, Ordering::SeqCst);
        EveryThread { _turn: turn }
    }
}

impl Drop for EveryThread {
    fn drop(&mut self) {
        WINDOW_OPEN.store(false, Ordering::SeqCst);
        TURN_HELD.store(false, Ordering::SeqCst);
    }
}

/// Opens the window: from now on every thread's allocations are counted (but the main
/// thread's).
///
/// # Panics
///
/// Unless a test holds an [`EveryThread`] turn.
pub fn open_window() {
    assert!(
        TURN_HELD.load(Ordering::SeqCst),
        "open_window without an EveryThread turn"
    );
    WINDOW_OPEN.store(true, Ordering::SeqCst);
}

/// Closes the window; whether it was open.
pub fn close_window() -> bool {
    WINDOW_OPEN.swap(false, Ordering::SeqCst)
}

/// Whether the window is open.
pub fn window_is_open() -> bool {
    WINDOW_OPEN.load(Ordering::Relaxed)
}

/// Allocations counted in windows since the turn began or the last
/// [`take_window_allocations`].
pub fn window_allocations() -> u64 {
    IN_WINDOW.load(Ordering::SeqCst)
}

/// [`window_allocations`], and starts that count again from zero.
pub fn take_window_allocations() -> u64 {
    let taken = IN_WINDOW.swap(0, Ordering::SeqCst);
    reset_first();
    taken
}

/// Where the first allocation counted since the turn began (or the last
/// [`take_window_allocations`]) was made: its thread's name and call stack, for a failing
/// test to print. Empty when none was counted.
pub fn first_window_allocation() -> String {
    let first = FIRST.lock().unwrap_or_else(PoisonError::into_inner);
    match &*first {
        Some((thread, stack)) => format!("the first, on thread {thread}:\n{stack}"),
        None => String::new(),
    }
}

// SAFETY: every call is forwarded unchanged to the system allocator; counting touches only
// const-initialised thread-locals (no destructor, no allocation), atomics and `gettid`,
// none of which allocates or re-enters the allocator, except that the window's first
// allocation records its stack, whose own allocations re-enter here and are passed
// through uncounted (`RECORDING`) before the recording thread ever waits on anything.
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
