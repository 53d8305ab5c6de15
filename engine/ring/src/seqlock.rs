//! A sequence lock over 64-bit words that may live in a file shared between processes: the
//! one the snapshot's slots use.
//!
//! A slot is a sequence word followed by payload words. One writer changes the payload; any
//! number of readers, in this process or in others that map the same file, copy it out and
//! retry if it changed under them. Readers never block the writer and never write, so a slow
//! or dead reader cannot stall the engine.
//!
//! The two sides have their own types. [`SeqLockWriter`] holds the slot's words as
//! `&[AtomicU64]` and stores through them. [`SeqLockReader`] holds them as [`ReadOnlyWords`],
//! a view that offers loads only: a reader's mapping of the file is read-only, and code that
//! holds it has no store to call.
//!
//! # Protocol
//!
//! The sequence is even while the payload is stable and odd while a write is in progress.
//!
//! - Writer ([`SeqLockWriter::write`]): sequence to odd (Relaxed store), Release fence,
//!   Relaxed stores of the payload words that change, sequence to the next even value
//!   (Release store).
//! - Reader ([`SeqLockReader::try_load`]): sequence (Relaxed load, then Acquire fence); odd
//!   fails; Relaxed loads of the payload; Acquire fence; sequence again (Relaxed). Unchanged
//!   means the copy is one write's payload.
//!
//! If a reader's payload loads saw any word of a newer write, its second Acquire fence
//! synchronises with that write's Release fence, so the second sequence load sees the odd
//! value (or later) and the copy is refused. Every access is atomic: there are no racy plain
//! reads, which is what makes this sound in Rust's memory model and checkable by loom (the
//! models at the bottom run this very code through the `sync` shim).
//!
//! A reader uses Relaxed loads and fences only, never an Acquire load: Rust guarantees that
//! Relaxed loads of 8 bytes work on read-only memory on 64-bit targets, and documents a
//! Relaxed load followed by an Acquire fence as the way to get an Acquire load there.
//!
//! # Concurrency contract
//!
//! At most one thread writes a slot at a time (the book thread owns every slot); writes from
//! different threads must be ordered by something else. Breaking this cannot cause undefined
//! behaviour (every access is atomic, every bit pattern is a valid payload), but readers may
//! then see mixed payloads. Readers are unrestricted.
//!
//! A writer that dies mid-write (`kill -9`, or a panic inside [`SeqLockWriter::write`]) leaves
//! the sequence odd: readers keep failing with [`TryReadError::WriteInProgress`], bounded by
//! their own retry count, until a new write to the slot ends on an even sequence.
//!
//! # Examples
//!
//! ```
//! use std::sync::atomic::AtomicU64;
//! use ticklane_ring::seqlock::{ReadOnlyWords, SeqLockReader, SeqLockWriter};
//!
//! // In the engine the words live in a memory-mapped file; here, in a vector.
//! let slot: Vec<AtomicU64> = (0..4).map(|_| AtomicU64::new(0)).collect();
//! let writer = SeqLockWriter::new(&slot).expect("a sequence word");
//! writer.store(&[1, 2, 3]);
//! writer.write(|w| w.store(1, 20)); // only what changed
//!
//! let reader = SeqLockReader::new(ReadOnlyWords::new(&slot)).expect("a sequence word");
//! let mut copy = [0; 3];
//! assert_eq!(reader.try_load(&mut copy), Ok(4));
//! assert_eq!(copy, [1, 20, 3]);
//! ```

use core::fmt;

use crate::sync::atomic::{fence, AtomicU64, Ordering};
use crate::sync::hint;

/// 64-bit words that can be loaded and never stored: how a reader holds a mapping it must not
/// write (a read-only file mapping, where a store would fault).
///
/// Every load is Relaxed, the one kind of atomic access Rust guarantees on read-only memory;
/// [`ReadOnlyWords::load_acquire`] adds an Acquire fence for the ordering of an Acquire load.
/// Any `&[AtomicU64]` can be viewed this way (giving up the right to store is always safe);
/// the snapshot reader builds its view from its mapping and hands out nothing else.
#[derive(Clone, Copy)]
pub struct ReadOnlyWords<'a> {
    words: &'a [AtomicU64],
}

impl<'a> ReadOnlyWords<'a> {
    /// A load-only view of `words`.
    #[inline(always)]
    pub fn new(words: &'a [AtomicU64]) -> Self {
        ReadOnlyWords { words }
    }

    /// How many words.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// Whether there are no words.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Word `index`, loaded atomically on its own (Relaxed): consistent by itself, ordered
    /// with nothing else.
    ///
    /// # Panics
    ///
    /// If `index` is out of range.
    #[inline(always)]
    pub fn load(&self, index: usize) -> u64 {
        self.words[index].load(Ordering::Relaxed)
    }

    /// Word `index` with Acquire ordering: a Relaxed load, then an Acquire fence. If the word
    /// was stored with Release, everything written before that store is visible after this.
    ///
    /// # Panics
    ///
    /// If `index` is out of range.
    #[inline(always)]
    pub fn load_acquire(&self, index: usize) -> u64 {
        let value = self.words[index].load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        value
    }

    /// The words in `range`, still load-only.
    ///
    /// # Panics
    ///
    /// If `range` is out of bounds.
    #[inline(always)]
    pub fn slice(&self, range: core::ops::Range<usize>) -> ReadOnlyWords<'a> {
        ReadOnlyWords {
            words: &self.words[range],
        }
    }

    /// The first word and the rest, or `None` if there are no words.
    #[inline(always)]
    fn split_first(&self) -> Option<(&'a AtomicU64, ReadOnlyWords<'a>)> {
        let (first, rest) = self.words.split_first()?;
        Some((first, ReadOnlyWords { words: rest }))
    }
}

impl fmt::Debug for ReadOnlyWords<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadOnlyWords")
            .field("len", &self.words.len())
            .finish()
    }
}

/// The writer's side of one slot: its sequence word and its payload words.
///
/// `Copy`, and `Send`/`Sync` as `&[AtomicU64]` is; the single-writer rule is the caller's
/// (see the [module docs](self)).
#[derive(Clone, Copy, Debug)]
pub struct SeqLockWriter<'a> {
    /// Even while the payload is stable, odd while a write is in progress. Only this side
    /// stores it.
    seq: &'a AtomicU64,
    payload: &'a [AtomicU64],
}

impl<'a> SeqLockWriter<'a> {
    /// Splits a slot's words into the sequence (the first) and the payload (the rest); `None`
    /// if `slot` is empty.
    #[inline(always)]
    pub fn new(slot: &'a [AtomicU64]) -> Option<Self> {
        let (seq, payload) = slot.split_first()?;
        Some(SeqLockWriter { seq, payload })
    }

    /// Payload words in the slot.
    #[inline(always)]
    pub fn payload_len(&self) -> usize {
        self.payload.len()
    }

    /// The sequence as the writer last left it: even when stable, 2 more per write.
    #[inline]
    pub fn sequence(&self) -> u64 {
        // Only the writer stores the sequence, so Relaxed reads back its own last store.
        self.seq.load(Ordering::Relaxed)
    }

    /// Makes one write: `change` stores the words that change through the [`SlotWrite`] it is
    /// given, and readers see all of them or none. Words it does not store keep their values.
    ///
    /// Build the new values before calling: readers are held off for as long as `change`
    /// runs. If `change` panics the sequence stays odd, and readers report the slot as being
    /// written (as after a killed writer) instead of reading half a write.
    ///
    /// # Panics
    ///
    /// If `change` stores past the payload.
    #[inline]
    pub fn write<R>(&self, change: impl FnOnce(&SlotWrite<'a>) -> R) -> R {
        let before = self.seq.load(Ordering::Relaxed);
        // A slot left odd by a writer killed mid-write moves on to the next odd value, so this
        // write still ends on an even one.
        let writing = if before & 1 == 0 {
            before.wrapping_add(1)
        } else {
            before.wrapping_add(2)
        };
        self.seq.store(writing, Ordering::Relaxed);
        // Orders the odd sequence before every payload store: a reader whose Acquire fence
        // follows a load of any of them sees the odd sequence (or a later one).
        fence(Ordering::Release);
        let result = change(&SlotWrite {
            payload: self.payload,
        });
        // Release: a reader that sees the even value (Relaxed load + Acquire fence) sees every
        // payload store above.
        self.seq.store(writing.wrapping_add(1), Ordering::Release);
        result
    }

    /// Replaces the whole payload with `src` in one write.
    ///
    /// # Panics
    ///
    /// If `src` is not exactly the payload's length.
    #[inline]
    pub fn store(&self, src: &[u64]) {
        assert_eq!(src.len(), self.payload.len(), "a whole payload");
        self.write(|w| w.store_from(0, src));
    }

    /// Makes the sequence odd and leaves it so: what a writer killed mid-write leaves behind.
    /// For tests of readers only.
    #[doc(hidden)]
    pub fn abandon_write(&self) {
        let before = self.seq.load(Ordering::Relaxed);
        self.seq.store(before | 1, Ordering::Release);
    }
}

/// The payload during one [`SeqLockWriter::write`]: stores only.
#[derive(Debug)]
pub struct SlotWrite<'a> {
    payload: &'a [AtomicU64],
}

impl SlotWrite<'_> {
    /// Stores `value` as payload word `index`.
    ///
    /// # Panics
    ///
    /// If `index` is past the payload.
    #[inline(always)]
    pub fn store(&self, index: usize, value: u64) {
        self.payload[index].store(value, Ordering::Relaxed);
    }

    /// Stores `src` as payload words `start ..`.
    ///
    /// # Panics
    ///
    /// If `src` reaches past the payload.
    #[inline(always)]
    pub fn store_from(&self, start: usize, src: &[u64]) {
        let words = &self.payload[start..start + src.len()];
        for (word, &value) in words.iter().zip(src) {
            word.store(value, Ordering::Relaxed);
        }
    }
}

/// A reader's side of one slot: loads only.
#[derive(Clone, Copy, Debug)]
pub struct SeqLockReader<'a> {
    seq: &'a AtomicU64,
    payload: ReadOnlyWords<'a>,
}

impl<'a> SeqLockReader<'a> {
    /// Splits a slot's words into the sequence (the first) and the payload (the rest); `None`
    /// if `slot` is empty.
    #[inline(always)]
    pub fn new(slot: ReadOnlyWords<'a>) -> Option<Self> {
        let (seq, payload) = slot.split_first()?;
        Some(SeqLockReader { seq, payload })
    }

    /// Payload words in the slot.
    #[inline(always)]
    pub fn payload_len(&self) -> usize {
        self.payload.len()
    }

    /// The sequence as it stands (odd while a write is in progress).
    #[inline]
    pub fn sequence(&self) -> u64 {
        let sequence = self.seq.load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        sequence
    }

    /// Payload word `index`, loaded on its own: consistent by itself (one atomic word), not
    /// with the rest of the slot.
    ///
    /// # Panics
    ///
    /// If `index` is past the payload.
    #[inline]
    pub fn word(&self, index: usize) -> u64 {
        self.payload.load(index)
    }

    /// Copies the payload into `dst` if no write overlapped the copy; returns the (even)
    /// sequence the copy belongs to.
    ///
    /// # Errors
    ///
    /// [`TryReadError::WriteInProgress`] if the sequence was odd, [`TryReadError::Changed`] if
    /// a write overlapped the copy. Either way, retry, or after a bounded number of tries
    /// report the slot as unavailable.
    ///
    /// # Panics
    ///
    /// If `dst` is not exactly the payload's length.
    #[inline]
    pub fn try_load(&self, dst: &mut [u64]) -> Result<u64, TryReadError> {
        assert_eq!(dst.len(), self.payload.len(), "a whole payload");
        // Relaxed load + Acquire fence: an Acquire load that read-only memory allows.
        let before = self.seq.load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        if before & 1 == 1 {
            return Err(TryReadError::WriteInProgress);
        }
        for (index, d) in dst.iter_mut().enumerate() {
            *d = self.payload.load(index);
        }
        // Keeps the payload loads before the second sequence load, and synchronises with the
        // Release fence of any write whose payload stores they saw.
        fence(Ordering::Acquire);
        if self.seq.load(Ordering::Relaxed) == before {
            Ok(before)
        } else {
            Err(TryReadError::Changed)
        }
    }

    /// [`SeqLockReader::try_load`] up to `attempts` times (at least once), spinning between
    /// tries and yielding the core now and then, since on a shared core the writer may need
    /// it to finish.
    ///
    /// # Errors
    ///
    /// The last attempt's error.
    ///
    /// # Panics
    ///
    /// If `dst` is not exactly the payload's length.
    pub fn load_bounded(&self, dst: &mut [u64], attempts: u32) -> Result<u64, TryReadError> {
        let mut last = TryReadError::Changed;
        for attempt in 0..attempts.max(1) {
            match self.try_load(dst) {
                Ok(sequence) => return Ok(sequence),
                Err(e) => last = e,
            }
            if attempt % 64 == 63 {
                yield_now();
            } else {
                hint::spin_loop();
            }
        }
        Err(last)
    }
}

/// Why a consistent copy could not be taken by [`SeqLockReader::try_load`].
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

/// Gives the core away (under loom, lets the model schedule another thread).
fn yield_now() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::thread::yield_now();
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    fn slot(words: usize) -> Vec<AtomicU64> {
        (0..words).map(|_| AtomicU64::new(0)).collect()
    }

    fn raw(words: &[AtomicU64]) -> Vec<u64> {
        words.iter().map(|w| w.load(Ordering::Relaxed)).collect()
    }

    #[test]
    fn a_write_goes_between_an_odd_and_an_even_sequence_and_stores_only_what_it_is_given() {
        let words = slot(4);
        let writer = SeqLockWriter::new(&words).expect("a sequence word");
        writer.store(&[1, 2, 3]);
        assert_eq!(raw(&words), [2, 1, 2, 3], "sequence, then the payload");
        let seen_odd = writer.write(|w| {
            w.store(2, 30);
            words[0].load(Ordering::Relaxed)
        });
        assert_eq!(seen_odd, 3);
        assert_eq!(raw(&words), [4, 1, 2, 30]);
        writer.write(|w| w.store_from(0, &[10, 20]));
        assert_eq!(raw(&words), [6, 10, 20, 30]);
        assert_eq!(writer.sequence(), 6);
        let reader = SeqLockReader::new(ReadOnlyWords::new(&words)).expect("a sequence word");
        let mut out = [0; 3];
        assert_eq!(reader.try_load(&mut out), Ok(6));
        assert_eq!(out, [10, 20, 30]);
        assert_eq!((reader.word(1), reader.sequence()), (20, 6));
        assert_eq!((reader.payload_len(), writer.payload_len()), (3, 3));
    }

    #[test]
    fn an_empty_slot_has_no_lock() {
        assert!(SeqLockWriter::new(&[]).is_none());
        assert!(SeqLockReader::new(ReadOnlyWords::new(&[])).is_none());
    }

    #[test]
    fn an_abandoned_write_is_reported_then_repaired_by_the_next_write() {
        let words = slot(3);
        let writer = SeqLockWriter::new(&words).expect("a sequence word");
        let reader = SeqLockReader::new(ReadOnlyWords::new(&words)).expect("a sequence word");
        writer.store(&[5, 5]);
        writer.abandon_write();
        let mut out = [0; 2];
        assert_eq!(
            reader.load_bounded(&mut out, 100),
            Err(TryReadError::WriteInProgress)
        );
        writer.store(&[6, 6]);
        assert_eq!(reader.sequence(), 6);
        assert_eq!(reader.load_bounded(&mut out, 1), Ok(6));
        assert_eq!(out, [6, 6]);
    }

    #[test]
    fn a_panic_inside_a_write_leaves_the_slot_refused_not_half_written() {
        let words = slot(3);
        let writer = SeqLockWriter::new(&words).expect("a sequence word");
        writer.store(&[1, 1]);
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            writer.write(|w| {
                w.store(0, 2);
                panic!("between two stores");
            })
        }));
        assert!(panicked.is_err());
        let reader = SeqLockReader::new(ReadOnlyWords::new(&words)).expect("a sequence word");
        assert_eq!(
            reader.try_load(&mut [0; 2]),
            Err(TryReadError::WriteInProgress)
        );
        writer.store(&[3, 3]);
        assert_eq!(reader.try_load(&mut [0; 2]), Ok(6));
    }

    #[test]
    fn read_only_words_load_and_slice() {
        let words = slot(4);
        words[2].store(7, Ordering::Relaxed);
        let view = ReadOnlyWords::new(&words);
        assert_eq!((view.len(), view.is_empty()), (4, false));
        assert_eq!((view.load(2), view.load_acquire(2)), (7, 7));
        let tail = view.slice(2..4);
        assert_eq!((tail.len(), tail.load(0)), (2, 7));
    }

    #[test]
    fn readers_never_see_a_torn_payload() {
        const WRITES: u64 = if cfg!(debug_assertions) {
            200_000
        } else {
            2_000_000
        };
        let payload = |i: u64| [i, !i, i.wrapping_mul(3), i ^ 0x5555];
        let words = Arc::new(slot(5));
        SeqLockWriter::new(&words)
            .expect("a sequence word")
            .store(&payload(0));
        let done = Arc::new(AtomicBool::new(false));
        let started = Arc::new(AtomicBool::new(false));
        let reader = {
            let words = Arc::clone(&words);
            let done = Arc::clone(&done);
            let started = Arc::clone(&started);
            std::thread::spawn(move || {
                let reader =
                    SeqLockReader::new(ReadOnlyWords::new(&words)).expect("a sequence word");
                let (mut consistent, mut last) = (0u64, 0u64);
                let mut copy = [0u64; 4];
                started.store(true, Ordering::Release);
                loop {
                    // Read once more after the writer finished: that read must succeed.
                    let finished = done.load(Ordering::Acquire);
                    match reader.try_load(&mut copy) {
                        Ok(_) => {
                            let i = copy[0];
                            assert_eq!(copy, payload(i), "torn");
                            assert!(i >= last, "went back in time: {i} after {last}");
                            last = i;
                            consistent += 1;
                        }
                        Err(_) => std::thread::yield_now(),
                    }
                    if finished {
                        break;
                    }
                }
                assert_eq!(last, WRITES);
                consistent
            })
        };
        while !started.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
        let writer = SeqLockWriter::new(&words).expect("a sequence word");
        for i in 1..=WRITES {
            // Alternately the whole payload and only the words that change, as the snapshot
            // writer does.
            if i % 2 == 0 {
                writer.store(&payload(i));
            } else {
                let p = payload(i);
                writer.write(|w| {
                    for (index, &value) in p.iter().enumerate() {
                        w.store(index, value);
                    }
                });
            }
        }
        done.store(true, Ordering::Release);
        assert!(reader.join().expect("reader thread") > 0);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sync::{thread, Arc};

    fn slot(words: usize) -> Arc<Vec<AtomicU64>> {
        Arc::new((0..words).map(|_| AtomicU64::new(0)).collect())
    }

    /// A 2-word payload written (1, 1) whole, then (2, 2) word by word through `write`: a
    /// reader's successful copy is always one write, never (1, 2), (2, 1) or the zeros of the
    /// unwritten slot mixed in, and its sequence says which write.
    #[test]
    fn loom_try_load_never_torn() {
        loom::model(|| {
            let words = slot(3);
            let writer = {
                let words = Arc::clone(&words);
                thread::spawn(move || {
                    let lock = SeqLockWriter::new(&words).expect("a sequence word");
                    lock.store(&[1, 1]);
                    lock.write(|w| {
                        w.store(0, 2);
                        w.store(1, 2);
                    });
                })
            };
            let reader = SeqLockReader::new(ReadOnlyWords::new(&words)).expect("a sequence word");
            let mut out = [0u64; 2];
            if let Ok(sequence) = reader.try_load(&mut out) {
                assert_eq!(out[0], out[1], "torn read at sequence {sequence}");
                assert_eq!(sequence / 2, out[0], "the copy belongs to its sequence");
            }
            writer.join().expect("writer");
        });
    }

    /// A write of one word leaves the others as they were, and a reader sees it whole with
    /// them: (1, 1) then word 1 alone to 2 reads as (1, 1) or (1, 2), never (0, 2).
    #[test]
    fn loom_partial_write_keeps_the_other_words() {
        loom::model(|| {
            let words = slot(3);
            let writer = {
                let words = Arc::clone(&words);
                thread::spawn(move || {
                    let lock = SeqLockWriter::new(&words).expect("a sequence word");
                    lock.store(&[1, 1]);
                    lock.write(|w| w.store(1, 2));
                })
            };
            let reader = SeqLockReader::new(ReadOnlyWords::new(&words)).expect("a sequence word");
            let mut out = [0u64; 2];
            if let Ok(sequence) = reader.try_load(&mut out) {
                let expected = match sequence {
                    0 => [0, 0],
                    2 => [1, 1],
                    _ => [1, 2],
                };
                assert_eq!(out, expected, "at sequence {sequence}");
            }
            writer.join().expect("writer");
        });
    }

    /// A slot left odd by a killed writer is reported, not read, and the next write repairs it.
    #[test]
    fn loom_abandoned_write_is_refused_until_rewritten() {
        loom::model(|| {
            let words = slot(2);
            let lock = SeqLockWriter::new(&words).expect("a sequence word");
            lock.store(&[7]);
            lock.abandon_write();
            let reader = SeqLockReader::new(ReadOnlyWords::new(&words)).expect("a sequence word");
            let mut out = [0u64; 1];
            assert_eq!(
                reader.try_load(&mut out),
                Err(TryReadError::WriteInProgress)
            );
            let writer = {
                let words = Arc::clone(&words);
                thread::spawn(move || {
                    SeqLockWriter::new(&words)
                        .expect("a sequence word")
                        .store(&[8])
                })
            };
            if reader.try_load(&mut out).is_ok() {
                assert_eq!(out, [8]);
            }
            writer.join().expect("writer");
        });
    }
}
