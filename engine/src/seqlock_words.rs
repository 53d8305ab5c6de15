//! The seqlock protocol of [`crate::seqlock`], over a slot whose length is known only at run
//! time.
//!
//! [`crate::seqlock::SeqLockSlot`] fixes its payload length at compile time; a snapshot's
//! depth, and so its slot length, is chosen when the file is created. This is the same
//! protocol, with the same orderings (checked under loom there), over a slice of words:
//!
//! - Writer: sequence to odd (Relaxed), Release fence, Relaxed payload stores, sequence to the
//!   next even value (Release).
//! - Reader: sequence (Acquire), odd fails; Relaxed payload loads; Acquire fence; sequence
//!   again (Relaxed); unchanged means the copy is consistent.
//!
//! The atomics come from the `sync` shim, so the loom models at the bottom check this very
//! code (the snapshot's slots), not a copy of it.

use crate::sync::atomic::{fence, AtomicU64, Ordering};
use crate::sync::hint;

use crate::seqlock::TryReadError;

/// One slot: its sequence word and its payload words, as they lie in the mapping.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SlotLock<'a> {
    /// Even while the payload is stable, odd while a write is in progress.
    seq: &'a AtomicU64,
    payload: &'a [AtomicU64],
}

impl<'a> SlotLock<'a> {
    /// Splits a slot's words into the sequence and the payload.
    ///
    /// # Panics
    ///
    /// If `slot` is empty (the geometry guarantees it never is).
    #[inline(always)]
    pub(crate) fn new(slot: &'a [AtomicU64]) -> Self {
        let (seq, payload) = slot
            .split_first()
            .expect("invariant: a slot has a sequence word");
        SlotLock { seq, payload }
    }

    /// The sequence as it stands.
    #[inline]
    pub(crate) fn sequence(&self) -> u64 {
        self.seq.load(Ordering::Acquire)
    }

    /// Payload word `index`, loaded on its own: consistent by itself (one atomic word), not
    /// with the rest of the slot.
    #[inline]
    pub(crate) fn word(&self, index: usize) -> u64 {
        self.payload[index].load(Ordering::Relaxed)
    }

    /// Copies the writer's own last payload into `dst`. Writer side only: the single writer is
    /// the only one storing the payload, so Relaxed loads read back its own values.
    #[inline]
    pub(crate) fn load_own(&self, dst: &mut [u64]) {
        debug_assert_eq!(dst.len(), self.payload.len());
        for (d, word) in dst.iter_mut().zip(self.payload) {
            *d = word.load(Ordering::Relaxed);
        }
    }

    /// Publishes `src` as the payload. Writer side: one writer per slot at a time.
    #[inline]
    pub(crate) fn store(&self, src: &[u64]) {
        debug_assert_eq!(src.len(), self.payload.len());
        let before = self.seq.load(Ordering::Relaxed);
        // A slot left odd by a writer killed mid-write moves on to the next odd value, so this
        // write still ends on an even one (as `SeqLockSlot::store` does).
        let writing = if before & 1 == 0 {
            before.wrapping_add(1)
        } else {
            before.wrapping_add(2)
        };
        self.seq.store(writing, Ordering::Relaxed);
        // Orders the odd sequence before every payload store: a reader whose Acquire fence
        // follows a load of any of them sees the odd sequence (or a later one).
        fence(Ordering::Release);
        for (word, &value) in self.payload.iter().zip(src) {
            word.store(value, Ordering::Relaxed);
        }
        // Release: a reader that loads the even value with Acquire sees the whole payload.
        self.seq.store(writing.wrapping_add(1), Ordering::Release);
    }

    /// Makes the sequence odd and leaves it so: what a writer killed mid-write leaves behind.
    /// For tests of readers only.
    pub(crate) fn abandon_write(&self) {
        let before = self.seq.load(Ordering::Relaxed);
        self.seq.store(before | 1, Ordering::Release);
    }

    /// Copies the payload into `dst` if no write overlapped the copy; returns the (even)
    /// sequence the copy belongs to.
    ///
    /// # Errors
    ///
    /// [`TryReadError::WriteInProgress`] if the sequence was odd, [`TryReadError::Changed`] if
    /// a write overlapped the copy.
    #[inline]
    pub(crate) fn try_load(&self, dst: &mut [u64]) -> Result<u64, TryReadError> {
        debug_assert_eq!(dst.len(), self.payload.len());
        let before = self.seq.load(Ordering::Acquire);
        if before & 1 == 1 {
            return Err(TryReadError::WriteInProgress);
        }
        for (d, word) in dst.iter_mut().zip(self.payload) {
            *d = word.load(Ordering::Relaxed);
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

    /// [`SlotLock::try_load`] up to `attempts` times (at least once), spinning between tries
    /// and yielding the core now and then, since on a shared core the writer may need it to
    /// finish.
    ///
    /// # Errors
    ///
    /// The last attempt's error.
    pub(crate) fn load_bounded(&self, dst: &mut [u64], attempts: u32) -> Result<u64, TryReadError> {
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

    fn slot(words: usize) -> Vec<AtomicU64> {
        (0..words).map(|_| AtomicU64::new(0)).collect()
    }

    #[test]
    fn writes_go_between_an_odd_and_an_even_sequence() {
        let words = slot(4);
        let lock = SlotLock::new(&words);
        lock.store(&[1, 2, 3]);
        assert_eq!(lock.sequence(), 2);
        let mut out = [0; 3];
        assert_eq!(lock.try_load(&mut out), Ok(2));
        assert_eq!(out, [1, 2, 3]);
        lock.load_own(&mut out);
        assert_eq!(out, [1, 2, 3]);
        assert_eq!(lock.word(1), 2);
    }

    #[test]
    fn an_abandoned_write_is_reported_then_repaired_by_the_next_write() {
        let words = slot(3);
        let lock = SlotLock::new(&words);
        lock.store(&[5, 5]);
        lock.abandon_write();
        let mut out = [0; 2];
        assert_eq!(
            lock.load_bounded(&mut out, 100),
            Err(TryReadError::WriteInProgress)
        );
        lock.store(&[6, 6]);
        assert_eq!(lock.sequence(), 6);
        assert_eq!(lock.load_bounded(&mut out, 1), Ok(6));
        assert_eq!(out, [6, 6]);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sync::{thread, Arc};

    fn slot(words: usize) -> Arc<Vec<AtomicU64>> {
        Arc::new((0..words).map(|_| AtomicU64::new(0)).collect())
    }

    /// A 2-word payload written (1, 1) then (2, 2): a reader's successful copy is always a
    /// whole write, never (1, 2) or (2, 1), and never the zeros of an unwritten slot mixed in.
    #[test]
    fn loom_slot_try_load_never_torn() {
        loom::model(|| {
            let words = slot(3);
            let writer = {
                let words = Arc::clone(&words);
                thread::spawn(move || {
                    let lock = SlotLock::new(&words);
                    lock.store(&[1, 1]);
                    lock.store(&[2, 2]);
                })
            };
            let lock = SlotLock::new(&words);
            let mut out = [0u64; 2];
            if let Ok(sequence) = lock.try_load(&mut out) {
                assert_eq!(out[0], out[1], "torn read at sequence {sequence}");
                assert_eq!(sequence / 2, out[0], "the copy belongs to its sequence");
            }
            writer.join().expect("writer");
        });
    }

    /// A slot left odd by a killed writer is reported, not read, and the next write repairs it.
    #[test]
    fn loom_abandoned_write_is_refused_until_rewritten() {
        loom::model(|| {
            let words = slot(2);
            let lock = SlotLock::new(&words);
            lock.store(&[7]);
            lock.abandon_write();
            let mut out = [0u64; 1];
            assert_eq!(lock.try_load(&mut out), Err(TryReadError::WriteInProgress));
            let writer = {
                let words = Arc::clone(&words);
                thread::spawn(move || SlotLock::new(&words).store(&[8]))
            };
            if lock.try_load(&mut out).is_ok() {
                assert_eq!(out, [8]);
            }
            writer.join().expect("writer");
        });
    }
}
