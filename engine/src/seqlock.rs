//! A sequence lock over plain 64-bit words, laid out to live in shared memory.
//!
//! A [`SeqLockSlot<N>`] is a `#[repr(C)]` block of `N + 1` `AtomicU64`s: a sequence word, then
//! `N` payload words. One writer updates the payload; any number of readers, in this process or
//! in others that map the same file, copy it out and retry if it changed under them. Readers never
//! block the writer and never write, so a slow or dead reader cannot stall the engine.
//!
//! # Protocol
//!
//! The sequence is even while the payload is stable and odd while a write is in progress.
//!
//! - Writer: make the sequence odd (Relaxed store), Release fence, Relaxed stores of the payload,
//!   then make the sequence even again with a Release store.
//! - Reader: load the sequence (Acquire); if odd, the read fails; Relaxed loads of the payload;
//!   Acquire fence; load the sequence again. If it is unchanged, the copy is consistent.
//!
//! If a reader's payload loads saw any word of a newer write, the reader's Acquire fence
//! synchronises with that write's Release fence, so the second sequence load sees the odd value
//! (or later) and the read is rejected. Every access is atomic: there are no racy plain reads,
//! which is what lets this be checked by loom and be sound in Rust's memory model.
//!
//! # Concurrency contract
//!
//! At most one thread writes a given slot at a time (the engine's book thread owns each
//! instrument's slot); writes from different threads must be ordered by some other
//! synchronisation. Breaking this cannot cause undefined behaviour, since every access is atomic
//! and every bit pattern is a valid payload, but readers may then see mixed payloads. Readers are
//! unrestricted.
//!
//! If a writer dies mid-write (`kill -9`), the sequence stays odd: [`SeqLockSlot::try_read`]
//! keeps failing and [`SeqLockSlot::read`] spins until a new writer finishes a write to the
//! slot (its first write makes the sequence even again). Readers in other processes should use
//! `try_read` with their own bound and report the slot as unavailable.
//!
//! # Layout
//!
//! `size_of::<SeqLockSlot<N>>() == 8 * (N + 1)`, alignment 8, the sequence at offset 0 and payload
//! word `i` at offset `8 * (i + 1)`, each in native byte order. A payload written with
//! [`SeqLockSlot::write_pod`] lies in memory exactly as the `Pod` value does, starting at offset 8.
//!
//! # Examples
//!
//! ```
//! use ticklane_engine::seqlock::SeqLockSlot;
//!
//! #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable, PartialEq, Debug)]
//! #[repr(C)]
//! struct Top {
//!     bid_px: u32,
//!     ask_px: u32,
//!     bid_qty: u64,
//!     ask_qty: u64,
//! }
//!
//! // In the engine the block lives in a memory-mapped snapshot file; here, in a buffer.
//! let mut file = vec![0u64; 4];
//! let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut file[..]);
//! let slot = SeqLockSlot::<3>::from_bytes_mut(bytes).unwrap();
//!
//! let top = Top { bid_px: 1_000_000, ask_px: 1_000_100, bid_qty: 300, ask_qty: 500 };
//! slot.write_pod(&top);
//! assert_eq!(slot.read_pod::<Top>(), top);
//! assert_eq!(slot.sequence(), 2);
//! ```
#![allow(unsafe_code)]

use core::fmt;
use core::mem::{align_of, size_of};

use bytemuck::Pod;

use crate::sync::atomic::{fence, AtomicU64, Ordering};
use crate::sync::hint;

/// A sequence word and `N` payload words, guarded by the seqlock protocol (see the
/// [module docs](self)).
#[repr(C)]
pub struct SeqLockSlot<const N: usize> {
    /// Even while the payload is stable, odd while a write is in progress. Written only by the
    /// writer; it only grows, by 2 per completed write.
    seq: AtomicU64,
    /// The payload, in native byte order.
    words: [AtomicU64; N],
}

impl<const N: usize> SeqLockSlot<N> {
    /// The size of a slot in bytes: `8 * (N + 1)`.
    pub const SIZE: usize = size_of::<Self>();

    /// The alignment a slot needs: 8.
    pub const ALIGN: usize = align_of::<Self>();

    /// Returns a slot whose sequence and payload are all zero: what a freshly zeroed file holds.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_engine::seqlock::SeqLockSlot;
    ///
    /// let slot = SeqLockSlot::<2>::new();
    /// assert_eq!(slot.read(), [0, 0]);
    /// ```
    pub fn new() -> Self {
        Self {
            seq: AtomicU64::new(0),
            words: core::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// Views `bytes`, which must be exactly [`Self::SIZE`] long and 8-aligned, as a slot.
    ///
    /// This is how the writer lays a slot over its mutable mapping of the snapshot file.
    ///
    /// # Errors
    ///
    /// [`SlotViewError::BadLength`] or [`SlotViewError::Misaligned`].
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_engine::seqlock::SeqLockSlot;
    ///
    /// let mut buffer = [0u64; 3];
    /// let slot = SeqLockSlot::<2>::from_bytes_mut(bytemuck::cast_slice_mut(&mut buffer[..]))?;
    /// slot.store(&[7, 8]);
    /// assert_eq!(slot.read(), [7, 8]);
    /// # Ok::<(), ticklane_engine::seqlock::SlotViewError>(())
    /// ```
    #[cfg(not(loom))]
    pub fn from_bytes_mut(bytes: &mut [u8]) -> Result<&Self, SlotViewError> {
        Self::check_view(bytes, bytes.len() == Self::SIZE)?;
        // SAFETY: the pointer is aligned for `Self` and points to `Self::SIZE` initialised bytes
        // (both checked above). `Self` is `repr(C)` over `AtomicU64`s, which have the size, the
        // alignment and the bit validity of `u64`, so any bytes are a valid `Self`. The exclusive
        // borrow of `bytes` is held for the life of the returned reference, so nothing else in
        // this process touches those bytes meanwhile, and through `&Self` every access is atomic.
        Ok(unsafe { &*bytes.as_mut_ptr().cast::<Self>() })
    }

    /// Views `bytes`, whose length must be a multiple of [`Self::SIZE`] and which must be
    /// 8-aligned, as a table of slots (one per instrument, say).
    ///
    /// # Errors
    ///
    /// [`SlotViewError::BadLength`] or [`SlotViewError::Misaligned`].
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_engine::seqlock::SeqLockSlot;
    ///
    /// let mut buffer = [0u64; 6];
    /// let slots = SeqLockSlot::<1>::slice_from_bytes_mut(bytemuck::cast_slice_mut(&mut buffer[..]))?;
    /// assert_eq!(slots.len(), 3);
    /// slots[2].store(&[42]);
    /// assert_eq!(buffer[5], 42);
    /// # Ok::<(), ticklane_engine::seqlock::SlotViewError>(())
    /// ```
    #[cfg(not(loom))]
    pub fn slice_from_bytes_mut(bytes: &mut [u8]) -> Result<&[Self], SlotViewError> {
        let count = bytes.len() / Self::SIZE;
        Self::check_view(bytes, count * Self::SIZE == bytes.len())?;
        // SAFETY: as in `from_bytes_mut`; in addition `Self::SIZE` is a multiple of the
        // alignment, so `count` slots tile the `count * Self::SIZE` bytes exactly.
        Ok(unsafe { core::slice::from_raw_parts(bytes.as_mut_ptr().cast::<Self>(), count) })
    }

    /// Views the [`Self::SIZE`] bytes at `ptr` as a slot, for readers of a shared mapping.
    ///
    /// Readers in another process typically map the snapshot file read-only, and must not hold
    /// a `&[u8]` over bytes that the writer changes; this takes the mapping's raw pointer instead.
    /// Atomic loads from read-only memory are allowed for `AtomicU64` on 64-bit targets, so a
    /// read-only mapping is fine as long as only the read methods are called.
    ///
    /// # Safety
    ///
    /// For the whole lifetime `'a`:
    /// - `ptr` is 8-aligned and valid for reads of `Self::SIZE` bytes (and for writes, if any
    ///   write method is called), and the memory stays mapped;
    /// - every access to those bytes, from this process or any other, is atomic: nothing reads or
    ///   writes them through a plain `&[u8]`, `&mut [u8]` or non-atomic pointer.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_engine::seqlock::SeqLockSlot;
    ///
    /// let writer_side = SeqLockSlot::<2>::new();
    /// writer_side.store(&[1, 2]);
    /// let ptr = (&writer_side as *const SeqLockSlot<2>).cast::<u8>();
    /// // SAFETY: `ptr` points to a live, aligned slot that is only accessed atomically.
    /// let reader_side = unsafe { SeqLockSlot::<2>::from_ptr(ptr) };
    /// assert_eq!(reader_side.read(), [1, 2]);
    /// ```
    #[cfg(not(loom))]
    pub unsafe fn from_ptr<'a>(ptr: *const u8) -> &'a Self {
        debug_assert!(
            ptr.cast::<Self>().is_aligned(),
            "SeqLockSlot::from_ptr: pointer not 8-aligned"
        );
        // SAFETY: the caller guarantees alignment, validity for `'a` and atomic-only access;
        // any bytes are a valid `Self` (see `from_bytes_mut`).
        unsafe { &*ptr.cast::<Self>() }
    }

    #[cfg(not(loom))]
    fn check_view(bytes: &[u8], length_ok: bool) -> Result<(), SlotViewError> {
        if !length_ok {
            return Err(SlotViewError::BadLength {
                slot_size: Self::SIZE,
                actual: bytes.len(),
            });
        }
        if !bytes.as_ptr().cast::<Self>().is_aligned() {
            return Err(SlotViewError::Misaligned {
                address: bytes.as_ptr() as usize,
                align: Self::ALIGN,
            });
        }
        Ok(())
    }

    /// Returns the current sequence: even when stable, odd during a write; `2 * writes` for a
    /// slot that started at zero.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_engine::seqlock::SeqLockSlot;
    ///
    /// let slot = SeqLockSlot::<1>::new();
    /// slot.store(&[5]);
    /// assert_eq!(slot.sequence(), 2);
    /// ```
    pub fn sequence(&self) -> u64 {
        self.seq.load(Ordering::Acquire)
    }

    /// Replaces the payload with `words`. Writer side: see the concurrency contract.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_engine::seqlock::SeqLockSlot;
    ///
    /// let slot = SeqLockSlot::<2>::new();
    /// slot.store(&[3, 4]);
    /// assert_eq!(slot.read(), [3, 4]);
    /// ```
    pub fn store(&self, words: &[u64; N]) {
        // Only the writer stores the sequence, so Relaxed reads back its own last store.
        let before = self.seq.load(Ordering::Relaxed);
        // Odd marks the write. A slot left odd by a writer that died mid-write moves on to the
        // next odd value, so this write still ends on an even one.
        let writing = if before & 1 == 0 {
            before.wrapping_add(1)
        } else {
            before.wrapping_add(2)
        };
        self.seq.store(writing, Ordering::Relaxed);
        // Orders the odd sequence before every payload store below: a reader whose Acquire fence
        // follows a load of any of them will see the odd sequence (or a later one).
        fence(Ordering::Release);
        for (word, &value) in self.words.iter().zip(words) {
            word.store(value, Ordering::Relaxed);
        }
        // Release: a reader that loads the even value with Acquire sees the whole payload.
        self.seq.store(writing.wrapping_add(1), Ordering::Release);
    }

    /// Updates the payload in place: `update` gets a copy of the current words to modify, and
    /// the result is published as one write. Writer side: see the concurrency contract.
    ///
    /// The new payload is built before the write begins, so readers are held off only for the
    /// stores, and a panic in `update` leaves the slot untouched.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_engine::seqlock::SeqLockSlot;
    ///
    /// let slot = SeqLockSlot::<2>::new();
    /// slot.write(|words| words[1] = 9);
    /// slot.write(|words| words[0] = words[1] + 1);
    /// assert_eq!(slot.read(), [10, 9]);
    /// ```
    pub fn write(&self, update: impl FnOnce(&mut [u64; N])) {
        // The writer is the only one storing the payload, so Relaxed loads read its own values.
        let mut words: [u64; N] = core::array::from_fn(|i| self.words[i].load(Ordering::Relaxed));
        update(&mut words);
        self.store(&words);
    }

    /// Copies out the payload if no write overlapped the copy.
    ///
    /// # Errors
    ///
    /// [`TryReadError::WriteInProgress`] if a write had begun and not ended;
    /// [`TryReadError::Changed`] if a write happened during the copy. Either way, retry, or
    /// after a bounded number of tries treat the slot as unavailable.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_engine::seqlock::SeqLockSlot;
    ///
    /// let slot = SeqLockSlot::<2>::new();
    /// slot.store(&[1, 1]);
    /// assert_eq!(slot.try_read(), Ok([1, 1]));
    /// ```
    #[inline]
    pub fn try_read(&self) -> Result<[u64; N], TryReadError> {
        let before = self.seq.load(Ordering::Acquire);
        if before & 1 == 1 {
            return Err(TryReadError::WriteInProgress);
        }
        let words: [u64; N] = core::array::from_fn(|i| self.words[i].load(Ordering::Relaxed));
        // Keeps the payload loads before the second sequence load, and synchronises with the
        // Release fence of any write whose payload stores they saw.
        fence(Ordering::Acquire);
        let after = self.seq.load(Ordering::Relaxed);
        if after == before {
            Ok(words)
        } else {
            Err(TryReadError::Changed)
        }
    }

    /// Copies out the payload, retrying until no write overlaps the copy.
    ///
    /// Spins for as long as writes keep overlapping; spins forever if the writer died mid-write
    /// and none replaces it. Use [`SeqLockSlot::try_read`] to bound the wait.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_engine::seqlock::SeqLockSlot;
    ///
    /// let slot = SeqLockSlot::<1>::new();
    /// slot.store(&[u64::MAX]);
    /// assert_eq!(slot.read(), [u64::MAX]);
    /// ```
    #[inline]
    pub fn read(&self) -> [u64; N] {
        loop {
            match self.try_read() {
                Ok(words) => return words,
                Err(_) => hint::spin_loop(),
            }
        }
    }

    /// Publishes `value` as the payload; see [`pod_to_words`] for the layout. Writer side.
    ///
    /// `P` must be exactly `8 * N` bytes; any other size fails to compile.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_engine::seqlock::SeqLockSlot;
    ///
    /// let slot = SeqLockSlot::<2>::new();
    /// slot.write_pod(&[1u32, 2, 3, 4]);
    /// assert_eq!(slot.read_pod::<[u32; 4]>(), [1, 2, 3, 4]);
    /// ```
    pub fn write_pod<P: Pod>(&self, value: &P) {
        self.store(&pod_to_words(value));
    }

    /// Reads the payload as a `P`, retrying as [`SeqLockSlot::read`] does.
    ///
    /// `P` must be exactly `8 * N` bytes; any other size fails to compile.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_engine::seqlock::SeqLockSlot;
    ///
    /// let slot = SeqLockSlot::<1>::new();
    /// slot.write_pod(&[-1i16, 2, -3, 4]);
    /// assert_eq!(slot.read_pod::<[i16; 4]>(), [-1, 2, -3, 4]);
    /// ```
    pub fn read_pod<P: Pod>(&self) -> P {
        pod_from_words(&self.read())
    }

    /// Reads the payload as a `P` if no write overlapped the copy.
    ///
    /// `P` must be exactly `8 * N` bytes; any other size fails to compile.
    ///
    /// # Errors
    ///
    /// As for [`SeqLockSlot::try_read`].
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_engine::seqlock::SeqLockSlot;
    ///
    /// let slot = SeqLockSlot::<1>::new();
    /// slot.write_pod(&7.5f64.to_bits());
    /// assert_eq!(slot.try_read_pod::<u64>().map(f64::from_bits), Ok(7.5));
    /// ```
    pub fn try_read_pod<P: Pod>(&self) -> Result<P, TryReadError> {
        self.try_read().map(|words| pod_from_words(&words))
    }
}

impl<const N: usize> Default for SeqLockSlot<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> fmt::Debug for SeqLockSlot<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SeqLockSlot")
            .field("seq", &self.sequence())
            .field("words", &self.try_read())
            .finish()
    }
}

/// Copies the bytes of `value` into `N` words, each word taking 8 bytes in native byte order, so
/// the words lie in memory exactly as `value` does.
///
/// `P` must be exactly `8 * N` bytes; any other size fails to compile.
///
/// # Examples
///
/// ```
/// use ticklane_engine::seqlock::{pod_from_words, pod_to_words};
///
/// let words: [u64; 1] = pod_to_words(&[1u8, 2, 3, 4, 5, 6, 7, 8]);
/// assert_eq!(words[0].to_ne_bytes(), [1, 2, 3, 4, 5, 6, 7, 8]);
/// assert_eq!(pod_from_words::<[u8; 8], 1>(&words), [1, 2, 3, 4, 5, 6, 7, 8]);
/// ```
pub fn pod_to_words<P: Pod, const N: usize>(value: &P) -> [u64; N] {
    const {
        assert!(
            size_of::<P>() == 8 * N,
            "payload type must be exactly 8 * N bytes"
        )
    };
    let mut words = [0u64; N];
    bytemuck::cast_slice_mut::<u64, u8>(&mut words[..]).copy_from_slice(bytemuck::bytes_of(value));
    words
}

/// Rebuilds a `P` from words made by [`pod_to_words`] (or read from a slot).
///
/// `P` must be exactly `8 * N` bytes; any other size fails to compile.
///
/// # Examples
///
/// ```
/// use ticklane_engine::seqlock::{pod_from_words, pod_to_words};
///
/// let words: [u64; 2] = pod_to_words(&[1u32, 2, 3, 4]);
/// assert_eq!(pod_from_words::<[u32; 4], 2>(&words), [1, 2, 3, 4]);
/// ```
pub fn pod_from_words<P: Pod, const N: usize>(words: &[u64; N]) -> P {
    const {
        assert!(
            size_of::<P>() == 8 * N,
            "payload type must be exactly 8 * N bytes"
        )
    };
    bytemuck::pod_read_unaligned(bytemuck::cast_slice::<u64, u8>(&words[..]))
}

/// Why a consistent copy could not be taken by [`SeqLockSlot::try_read`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TryReadError {
    /// The sequence was odd: a write was in progress (or its writer died mid-write). Retry.
    WriteInProgress,
    /// The sequence changed during the copy: a write overlapped it. Retry.
    Changed,
}

impl fmt::Display for TryReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryReadError::WriteInProgress => f.write_str("a write to the slot is in progress"),
            TryReadError::Changed => f.write_str("the slot changed while it was being read"),
        }
    }
}

impl std::error::Error for TryReadError {}

/// Why bytes could not be viewed as [`SeqLockSlot`]s.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SlotViewError {
    /// The byte length is not `slot_size` (for one slot) or a multiple of it (for a table):
    /// check the file's layout version and instrument count.
    BadLength {
        /// `SeqLockSlot::<N>::SIZE`.
        slot_size: usize,
        /// The length given.
        actual: usize,
    },
    /// The bytes do not start on an `align`-byte boundary. Mappings are page-aligned, so this
    /// means a slot offset inside the file is not a multiple of `align`.
    Misaligned {
        /// The address of the first byte.
        address: usize,
        /// The alignment needed, 8.
        align: usize,
    },
}

impl fmt::Display for SlotViewError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            SlotViewError::BadLength { slot_size, actual } => write!(
                f,
                "{actual} bytes cannot hold seqlock slots of {slot_size} bytes each"
            ),
            SlotViewError::Misaligned { address, align } => write!(
                f,
                "seqlock slot at {address:#x} is not {align}-byte aligned"
            ),
        }
    }
}

impl std::error::Error for SlotViewError {}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    #[derive(Clone, Copy, PartialEq, Debug, bytemuck::Pod, bytemuck::Zeroable)]
    #[repr(C)]
    struct Quote {
        bid_px: u32,
        ask_px: u32,
        bid_qty: u64,
        ask_qty: u64,
        flags: u64,
    }

    #[test]
    fn layout_is_the_sequence_then_the_words() {
        assert_eq!(size_of::<SeqLockSlot<0>>(), 8);
        assert_eq!(size_of::<SeqLockSlot<4>>(), 40);
        assert_eq!(SeqLockSlot::<4>::SIZE, 40);
        assert_eq!(SeqLockSlot::<4>::ALIGN, 8);
        let mut buffer = [0u64; 3];
        let slot = SeqLockSlot::<2>::from_bytes_mut(bytemuck::cast_slice_mut(&mut buffer[..]))
            .expect("aligned, exact length");
        slot.store(&[0xAAAA, 0xBBBB]);
        assert_eq!(buffer, [2, 0xAAAA, 0xBBBB]);
    }

    #[test]
    fn views_check_length_and_alignment() {
        let mut buffer = [0u64; 5];
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut buffer[..]);
        assert_eq!(
            SeqLockSlot::<2>::from_bytes_mut(&mut bytes[..16]).err(),
            Some(SlotViewError::BadLength {
                slot_size: 24,
                actual: 16
            })
        );
        assert!(matches!(
            SeqLockSlot::<2>::from_bytes_mut(&mut bytes[1..25]),
            Err(SlotViewError::Misaligned { align: 8, .. })
        ));
        assert_eq!(
            SeqLockSlot::<1>::slice_from_bytes_mut(&mut bytes[..24]).err(),
            Some(SlotViewError::BadLength {
                slot_size: 16,
                actual: 24
            })
        );
        let slots = SeqLockSlot::<1>::slice_from_bytes_mut(&mut bytes[8..40]).expect("2 slots");
        assert_eq!(slots.len(), 2);
        slots[0].store(&[5]);
        slots[1].store(&[6]);
        assert_eq!(buffer, [0, 2, 5, 2, 6]);
    }

    #[test]
    fn each_write_adds_two_to_the_sequence() {
        let slot = SeqLockSlot::<2>::new();
        for i in 1..=5u64 {
            slot.write(|words| words[0] += 1);
            assert_eq!(slot.sequence(), 2 * i);
        }
        assert_eq!(slot.try_read(), Ok([5, 0]));
    }

    #[test]
    fn a_slot_left_odd_refuses_reads_until_rewritten() {
        // What a writer killed mid-write leaves behind.
        let mut buffer = [7u64, 1, 1];
        let slot = SeqLockSlot::<2>::from_bytes_mut(bytemuck::cast_slice_mut(&mut buffer[..]))
            .expect("aligned, exact length");
        assert_eq!(slot.try_read(), Err(TryReadError::WriteInProgress));
        slot.store(&[2, 2]);
        assert_eq!(slot.sequence(), 10);
        assert_eq!(slot.try_read(), Ok([2, 2]));
    }

    #[test]
    fn pod_round_trip_keeps_the_struct_layout() {
        let quote = Quote {
            bid_px: 1_234_500,
            ask_px: 1_234_600,
            bid_qty: 300,
            ask_qty: 1 << 40,
            flags: 0b101,
        };
        let words: [u64; 4] = pod_to_words(&quote);
        assert_eq!(pod_from_words::<Quote, 4>(&words), quote);
        let mut buffer = [0u64; 5];
        let slot = SeqLockSlot::<4>::from_bytes_mut(bytemuck::cast_slice_mut(&mut buffer[..]))
            .expect("aligned, exact length");
        slot.write_pod(&quote);
        assert_eq!(slot.read_pod::<Quote>(), quote);
        assert_eq!(slot.try_read_pod::<Quote>(), Ok(quote));
        // The payload bytes in the "file" are the struct's bytes, after the sequence.
        let bytes: &[u8] = bytemuck::cast_slice(&buffer[..]);
        assert_eq!(&bytes[8..], bytemuck::bytes_of(&quote));
    }

    #[test]
    fn readers_never_see_a_torn_payload() {
        const WRITES: u64 = if cfg!(debug_assertions) {
            200_000
        } else {
            2_000_000
        };
        let payload = |i: u64| [i, !i, i.wrapping_mul(3), i ^ 0x5555];
        let slot = Arc::new(SeqLockSlot::<4>::new());
        slot.store(&payload(0));
        let done = Arc::new(AtomicBool::new(false));
        let started = Arc::new(AtomicBool::new(false));
        let reader = {
            let slot = Arc::clone(&slot);
            let done = Arc::clone(&done);
            let started = Arc::clone(&started);
            std::thread::spawn(move || {
                let (mut consistent, mut refused, mut last) = (0u64, 0u64, 0u64);
                started.store(true, Ordering::Release);
                loop {
                    // Read once more after the writer finished: that read must succeed.
                    let finished = done.load(Ordering::Acquire);
                    match slot.try_read() {
                        Ok(words) => {
                            let i = words[0];
                            assert_eq!(words, payload(i), "torn");
                            assert!(i >= last, "went back in time: {i} after {last}");
                            last = i;
                            consistent += 1;
                        }
                        Err(_) => {
                            refused += 1;
                            std::thread::yield_now();
                        }
                    }
                    if finished {
                        break;
                    }
                }
                assert_eq!(last, WRITES);
                (consistent, refused)
            })
        };
        // Overlap the writes with the reads, as far as the scheduler lets us.
        while !started.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
        for i in 1..=WRITES {
            slot.store(&payload(i));
        }
        done.store(true, Ordering::Release);
        let (consistent, _refused) = reader.join().unwrap();
        assert!(consistent > 0);
        assert_eq!(slot.read()[0], WRITES);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sync::{thread, Arc};

    #[test]
    fn loom_try_read_never_torn() {
        loom::model(|| {
            let slot = Arc::new(SeqLockSlot::<2>::new());
            let writer = {
                let slot = Arc::clone(&slot);
                thread::spawn(move || {
                    slot.store(&[1, 1]);
                    slot.store(&[2, 2]);
                })
            };
            for _ in 0..2 {
                if let Ok([a, b]) = slot.try_read() {
                    assert_eq!(a, b, "torn read ({a}, {b})");
                }
            }
            writer.join().unwrap();
            assert_eq!(slot.try_read(), Ok([2, 2]));
        });
    }

    #[test]
    fn loom_read_returns_a_whole_write() {
        loom::model(|| {
            let slot = Arc::new(SeqLockSlot::<2>::new());
            let writer = {
                let slot = Arc::clone(&slot);
                thread::spawn(move || {
                    slot.write(|words| *words = [1, 1]);
                    slot.write(|words| *words = [2, 2]);
                })
            };
            let [a, b] = slot.read();
            assert_eq!(a, b, "torn read ({a}, {b})");
            assert!(a <= 2);
            writer.join().unwrap();
        });
    }
}
