//! The snapshot file's memory mapping, seen as a slice of `AtomicU64`: the only unsafe code in
//! the snapshot module.
//!
//! Every byte of the file is reached through these atomics, never through a `&[u8]`, so the
//! writer's stores and any reader's loads (in this process or another) never race in the sense
//! of Rust's memory model. A reader maps the file read-only and only loads; atomic loads of
//! 8-byte words from read-only memory are allowed on the 64-bit targets this engine runs on.
//!
//! If another process shrinks the file while it is mapped, touching the lost pages raises
//! `SIGBUS`: a crash, never a silent wrong value. The writer therefore never resizes a file in
//! place: it builds each new file under a temporary name and renames it over the old one.
#![allow(unsafe_code)]

use core::sync::atomic::AtomicU64;
use std::io;

use memmap2::MmapRaw;

/// A mapped file viewed as 64-bit atomic words.
///
/// `SharedWords` is `Send` and `Sync` (through `MmapRaw`): every access goes through atomics.
#[derive(Debug)]
pub(crate) struct SharedWords {
    /// Owns the mapping; unmapped on drop.
    map: MmapRaw,
    /// `map.len() / 8`: the mapping's length is checked to be a multiple of 8 at construction.
    words: usize,
}

impl SharedWords {
    /// Wraps a mapping whose length is a multiple of 8.
    ///
    /// # Errors
    ///
    /// `InvalidData` if the length is not a multiple of 8 or the start is not 8-aligned (a
    /// mapping always starts on a page boundary, so this is a check of an invariant).
    pub(crate) fn new(map: MmapRaw) -> io::Result<Self> {
        if !map.len().is_multiple_of(8) || !map.as_ptr().cast::<AtomicU64>().is_aligned() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "snapshot mapping is not a whole number of aligned 64-bit words",
            ));
        }
        let words = map.len() / 8;
        Ok(SharedWords { map, words })
    }

    /// The whole mapping as words.
    #[inline(always)]
    pub(crate) fn words(&self) -> &[AtomicU64] {
        // SAFETY: the pointer is 8-aligned and `words * 8` bytes long (both checked in `new`),
        // and the mapping lives as long as `self`, which the returned borrow cannot outlive.
        // `AtomicU64` has the size, alignment and bit validity of `u64`, so any file contents
        // are valid. Nothing in this process reaches these bytes except through this slice
        // (the module never hands out `&[u8]` or `&mut` views), and all accesses through it
        // are atomic, so there is no data race; other processes follow the same word-atomic
        // protocol. The writer's mapping is writable; a reader's is read-only and reader code
        // only ever loads through it.
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
