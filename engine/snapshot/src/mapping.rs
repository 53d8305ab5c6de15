//! The snapshot file's memory mappings, seen as 64-bit atomic words: the only unsafe code in
//! the snapshot module.
//!
//! Every byte of the file is reached through atomics, never through a `&[u8]`, so the
//! writer's stores and any reader's loads (in this process or another) never race in the sense
//! of Rust's memory model. The writer's mapping is writable and handed out as `&[AtomicU64]`.
//! A reader's is read-only, and handed out only as [`ReadOnlyWords`], which offers Relaxed
//! loads and nothing else: Relaxed loads of 8-byte words are the atomic accesses Rust
//! guarantees on read-only memory on the 64-bit targets this engine runs on, and no safe code
//! holding a reader's mapping can reach a store.
//!
//! If another process shrinks the file while it is mapped, touching the lost pages raises
//! `SIGBUS`: a crash, never a silent wrong value. The writer therefore never resizes a file in
//! place: it builds each new file under a temporary name and renames it over the old one.
#![allow(unsafe_code)]

use core::sync::atomic::AtomicU64;
use std::io;

use memmap2::MmapRaw;

use ticklane_ring::seqlock::ReadOnlyWords;

/// The writer's mapping of the file, viewed as 64-bit atomic words it may store to.
///
/// `WritableWords` is `Send` and `Sync` (through `MmapRaw`): every access goes through atomics.
#[derive(Debug)]
pub(crate) struct WritableWords {
    /// Owns a read-write mapping; unmapped on drop.
    map: MmapRaw,
    /// `map.len() / 8`: checked to be exact at construction.
    words: usize,
}

impl WritableWords {
    /// Wraps a read-write mapping whose length is a multiple of 8.
    ///
    /// # Errors
    ///
    /// `InvalidData` if the length is not a multiple of 8 or the start is not 8-aligned (a
    /// mapping always starts on a page boundary, so this is a check of an invariant).
    pub(crate) fn new(map: MmapRaw) -> io::Result<Self> {
        let words = word_count(&map)?;
        Ok(WritableWords { map, words })
    }

    /// The whole mapping as words.
    #[inline(always)]
    pub(crate) fn words(&self) -> &[AtomicU64] {
        // SAFETY: the pointer is 8-aligned and `words * 8` bytes long (both checked in `new`),
        // and the mapping, read-write, lives as long as `self`, which the returned borrow
        // cannot outlive. `AtomicU64` has the size, alignment and bit validity of `u64`, so any
        // file contents are valid. Nothing in this process reaches these bytes except through
        // atomics (the module never hands out `&[u8]` or `&mut` views), so there is no data
        // race; other processes follow the same word-atomic protocol.
        unsafe { core::slice::from_raw_parts(self.map.as_ptr().cast::<AtomicU64>(), self.words) }
    }

    /// Writes dirty pages back to the file (`msync`). Readers on this host never need this;
    /// it makes the file's contents durable for readers that open it after a reboot or crash
    /// of the machine.
    ///
    /// # Errors
    ///
    /// Whatever `msync` reports.
    pub(crate) fn flush(&self) -> io::Result<()> {
        self.map.flush()
    }
}

/// A reader's read-only mapping of the file: loads only.
///
/// `ReadOnlyMapping` is `Send` and `Sync` (through `MmapRaw`).
#[derive(Debug)]
pub(crate) struct ReadOnlyMapping {
    /// Owns a read-only mapping; unmapped on drop.
    map: MmapRaw,
    /// `map.len() / 8`: checked to be exact at construction.
    words: usize,
}

impl ReadOnlyMapping {
    /// Wraps a read-only mapping whose length is a multiple of 8.
    ///
    /// # Errors
    ///
    /// `InvalidData` if the length is not a multiple of 8 or the start is not 8-aligned.
    pub(crate) fn new(map: MmapRaw) -> io::Result<Self> {
        let words = word_count(&map)?;
        Ok(ReadOnlyMapping { map, words })
    }

    /// The whole mapping, as words that can only be loaded.
    #[inline(always)]
    pub(crate) fn words(&self) -> ReadOnlyWords<'_> {
        // SAFETY: as in `WritableWords::words` for alignment, length, lifetime, validity and
        // the absence of non-atomic access. The pages are mapped read-only, where a store would
        // fault: the slice goes straight into `ReadOnlyWords`, whose only accesses are Relaxed
        // 8-byte loads, which Rust guarantees to work on read-only memory on 64-bit targets.
        let words = unsafe {
            core::slice::from_raw_parts(self.map.as_ptr().cast::<AtomicU64>(), self.words)
        };
        ReadOnlyWords::new(words)
    }
}

/// The number of whole, aligned 64-bit words in `map`.
fn word_count(map: &MmapRaw) -> io::Result<usize> {
    if !map.len().is_multiple_of(8) || !map.as_ptr().cast::<AtomicU64>().is_aligned() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "snapshot mapping is not a whole number of aligned 64-bit words",
        ));
    }
    Ok(map.len() / 8)
}

// Loads of 8-byte words from read-only memory are guaranteed only on 64-bit targets.
const _: () = assert!(
    cfg!(target_pointer_width = "64"),
    "the snapshot reader needs a 64-bit target"
);
