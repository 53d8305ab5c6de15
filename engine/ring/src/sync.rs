//! The synchronisation primitives the ring and the seqlock are built on.
//!
//! Under `--cfg loom` these are loom's model-checked mocks; otherwise they are the real
//! `core`/`std` items. The ring and the seqlock import only from here, so the code that loom
//! checks is the code that ships (the same shim crossbeam-utils keeps in its `primitive` module).
//!
//! `UnsafeCell` is the one item whose API differs: loom's cell exposes its pointer only inside
//! `with`/`with_mut` closures, so that it can check every access for a data race. The std
//! stand-in below offers the same closure API over `core::cell::UnsafeCell`, at no cost.

#[cfg(loom)]
pub(crate) mod atomic {
    pub(crate) use loom::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};
}

#[cfg(not(loom))]
pub(crate) mod atomic {
    pub(crate) use core::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};
}

#[cfg(loom)]
pub(crate) use loom::sync::Arc;
#[cfg(not(loom))]
pub(crate) use std::sync::Arc;

#[cfg(not(loom))]
pub(crate) use core::hint;
#[cfg(loom)]
pub(crate) use loom::hint;

/// Threads, for the loom tests (loom's `model` only sees threads it spawned itself).
#[cfg(all(test, loom))]
pub(crate) use loom::thread;

#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;

/// `core::cell::UnsafeCell` behind loom's closure API, so one source serves both builds.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(core::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(value: T) -> Self {
        Self(core::cell::UnsafeCell::new(value))
    }

    /// Calls `f` with a pointer through which the value may be read.
    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Calls `f` with a pointer through which the value may be written.
    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}
