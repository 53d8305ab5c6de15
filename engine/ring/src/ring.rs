//! A bounded, lock-free, single-producer single-consumer ring: the tick arena between stages.
//!
//! [`Ring::new`] allocates every slot once and hands back the two halves, a [`Producer`] and a
//! [`Consumer`]. After that nothing on either side allocates, locks or waits: a full ring makes
//! [`Producer::push`] hand the value back, an empty ring makes [`Consumer::pop`] say so, and the
//! caller chooses how to wait (spin, yield or park).
//!
//! # Concurrency contract
//!
//! There is exactly one producer and one consumer. `Producer` and `Consumer` are `Send` (when `T`
//! is) but not `Sync`: each half may move to another thread, but it cannot be shared, and every
//! operation that moves an index takes `&mut self`. The producer is the only writer of the head
//! index and of the free slots; the consumer is the only writer of the tail index and the only
//! reader of the filled slots. A slot changes hands only through a Release store of an index
//! matched by an Acquire load on the other side, so a consumer sees every byte the producer
//! wrote into a slot, and a producer never overwrites a slot the consumer is still reading.
//!
//! Each side keeps a private copy of the other side's index and reads the shared one (a cache
//! line the other core owns) only when its copy says the ring is full, or empty.
//!
//! # What a hop costs in cache lines
//!
//! A hop of one item, on a ring that is nearly empty (the latency case), touches these lines
//! that the other core also touches: the producer writes the slot and then the head; the
//! consumer, spinning, reads the head, then the slot, then writes the tail. The producer reads
//! the tail only when its cached copy says the ring is full. Nothing else is shared:
//!
//! - Head, tail and the read-only fields (slot pointer, mask) each own a 128-byte block
//!   (`#[repr(C)]`, [`CachePadded`] is 128 bytes on x86-64), not only a 64-byte line: Intel's
//!   adjacent-line prefetcher fetches lines in 128-byte pairs (AMD's L2 prefetchers fetch the
//!   next line too), so two hot words 64 bytes apart can still ping-pong.
//! - Each half's private state (its own index, its cached copy of the other's) is aligned to
//!   128 bytes too: the halves are often allocated next to each other (two thread closures
//!   boxed one after the other), and the producer's private head, written every push, must not
//!   share a pair with the consumer's private tail, written every pop.
//! - [`Producer::push_with`] zeroes the *next* free slot right after publishing, not the slot
//!   it is about to fill: the zeroing stores take the slot's lines back from the consumer's
//!   cache (where they sit, shared, since it last read them) while the producer has nothing
//!   else to do, so the stores of the next frame hit lines the producer already owns and the
//!   head store behind them is not held up by those transfers. Same instructions, off the
//!   latency path.
//! - [`Consumer::read_batch`] (and `pop`) read the head only when the cached copy shows nothing
//!   to take: a consumer behind the producer drains what it knows of before it looks again.
//!
//! What remains is structural and shared with `rtrb` and the `disruptor` crate: the index and
//! the data are on different lines, so a consumer waiting on an empty ring takes two transfers
//! per hop (the head's line, then the slot's), where a queue that marks each slot itself
//! (crossbeam's `ArrayQueue`, a sequence stamp per slot) takes one.
//!
//! The batch APIs ([`Producer::write_batch`], [`Producer::push_slice`],
//! [`Consumer::read_batch`]) move any number of items with a single index store, which is what
//! makes a burst of messages from one datagram cheap to hand over.
//!
//! When both halves are gone, the items still in the ring are dropped.
//!
//! # Examples
//!
//! ```
//! use ticklane_ring::ring::Ring;
//!
//! let (mut producer, mut consumer) = Ring::<u64>::new(1024);
//! let reader = std::thread::spawn(move || {
//!     let mut sum = 0;
//!     let mut seen = 0;
//!     while seen < 10_000 {
//!         match consumer.pop() {
//!             Ok(value) => {
//!                 sum += value;
//!                 seen += 1;
//!             }
//!             Err(_) => std::hint::spin_loop(),
//!         }
//!     }
//!     sum
//! });
//! for value in 0..10_000u64 {
//!     let mut value = value;
//!     while let Err(full) = producer.push(value) {
//!         value = full.into_inner();
//!         std::hint::spin_loop();
//!     }
//! }
//! assert_eq!(reader.join().unwrap(), (0..10_000u64).sum::<u64>());
//! ```
#![allow(unsafe_code)]

use core::cell::Cell;
use core::fmt;
use core::mem::{needs_drop, MaybeUninit};

use bytemuck::Zeroable;
use crossbeam_utils::CachePadded;

use crate::sync::atomic::{fence, AtomicUsize, Ordering};
use crate::sync::{Arc, UnsafeCell};

/// True once the other half has been dropped. Then an Acquire fence pairs with the Release
/// decrement in the other half's `Arc` drop, so every index it published before dropping is
/// visible to the loads that follow.
#[inline]
fn abandoned<T>(ring: &Arc<Ring<T>>) -> bool {
    let gone = Arc::strong_count(ring) < 2;
    if gone {
        fence(Ordering::Acquire);
    }
    gone
}

/// The storage shared by a [`Producer`] and its [`Consumer`].
///
/// Indices are free-running counters: they count every item ever pushed (head) or popped (tail)
/// and wrap at `usize::MAX`, and slot `i & mask` is the storage for index `i`. Because the
/// capacity is a power of two no larger than `usize::MAX / 2 + 1`, `head.wrapping_sub(tail)` is
/// always the number of items in the ring.
///
/// `#[repr(C)]` keeps the declared order, so head, tail and the read-only fields each start a
/// 128-byte block of their own (see the module docs on what a hop costs).
#[repr(C)]
pub struct Ring<T> {
    /// Published head: the index of the next slot the producer will fill.
    ///
    /// Written only by the producer (Release), read by the consumer (Acquire).
    /// Invariant: `head.wrapping_sub(tail)` in `0..=capacity`.
    head: CachePadded<AtomicUsize>,

    /// Published tail: the index of the next slot the consumer will read.
    ///
    /// Written only by the consumer (Release), read by the producer (Acquire).
    tail: CachePadded<AtomicUsize>,

    /// `capacity` slots, read-only after construction (like `mask`), behind tail's padding.
    /// The slot of index `i` holds an initialised `T` exactly when `i` lies in
    /// `tail..head` (wrapping), counting the halves' private indices, which may run ahead of the
    /// published ones inside a batch.
    slots: Box<[UnsafeCell<MaybeUninit<T>>]>,

    /// `capacity - 1`; capacity is a power of two, so `i & mask` is `i % capacity`.
    mask: usize,
}

// SAFETY: a `Ring` only moves `T` values between threads (the producer writes them, the consumer
// reads or drops them), it never hands out `&T` to two threads at once, and every slot access is
// ordered by the Release/Acquire index protocol described on the fields. So sharing a
// `Ring<T>` between the two halves' threads is sound whenever `T` may be sent between threads.
unsafe impl<T: Send> Sync for Ring<T> {}

impl<T> Ring<T> {
    /// Allocates a ring of at least `capacity` slots and returns its two halves.
    ///
    /// The capacity is rounded up to a power of two (and to at least 1). This is the only
    /// allocation the ring ever makes.
    ///
    /// # Panics
    ///
    /// If the rounded capacity does not fit in a `usize`, or the allocation fails.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_ring::ring::Ring;
    ///
    /// let (producer, consumer) = Ring::<[u8; 64]>::new(1000);
    /// assert_eq!(producer.capacity(), 1024);
    /// assert_eq!(consumer.capacity(), 1024);
    /// ```
    #[allow(clippy::new_ret_no_self)]
    pub fn new(capacity: usize) -> (Producer<T>, Consumer<T>) {
        let capacity = capacity
            .max(1)
            .checked_next_power_of_two()
            .expect("ring capacity overflows usize when rounded up to a power of two");
        let slots: Box<[UnsafeCell<MaybeUninit<T>>]> = (0..capacity)
            .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
            .collect();
        let ring = Arc::new(Ring {
            head: CachePadded::new(AtomicUsize::new(0)),
            tail: CachePadded::new(AtomicUsize::new(0)),
            slots,
            mask: capacity - 1,
        });
        let producer = Producer {
            ring: Arc::clone(&ring),
            head: 0,
            cached_tail: Cell::new(0),
            next_zeroed: false,
        };
        let consumer = Consumer {
            ring,
            tail: 0,
            cached_head: Cell::new(0),
        };
        (producer, consumer)
    }

    fn capacity(&self) -> usize {
        self.mask + 1
    }

    fn slot(&self, index: usize) -> &UnsafeCell<MaybeUninit<T>> {
        &self.slots[index & self.mask]
    }

    /// Moves `value` into the slot of `index`.
    ///
    /// # Safety
    ///
    /// The caller is the producer and the slot is free: `index` is at or past the producer's
    /// head and less than `capacity` past the latest tail it loaded with Acquire.
    unsafe fn write(&self, index: usize, value: T) {
        self.slot(index).with_mut(|slot| {
            // SAFETY: the caller guarantees the slot is free, so the consumer is not reading it
            // (its reads happened before the tail store we acquired) and nothing in it needs
            // dropping; the producer is the only thread that writes free slots.
            unsafe { (*slot).write(value) };
        });
    }

    /// Moves the value out of the slot of `index`.
    ///
    /// # Safety
    ///
    /// The caller is the consumer, the slot is filled (`index` in `tail..head` where head was
    /// loaded with Acquire), and the caller treats the slot as empty from now on.
    unsafe fn read(&self, index: usize) -> T {
        self.slot(index).with(|slot| {
            // SAFETY: the caller guarantees the slot holds an initialised value published by the
            // producer's Release store of head, and that it will not read it again.
            unsafe { (*slot).assume_init_read() }
        })
    }

    /// Calls `f` with a reference to the value in the slot of `index`, leaving it in place.
    ///
    /// # Safety
    ///
    /// As for [`Ring::read`], except that the value stays initialised.
    unsafe fn peek_with<R>(&self, index: usize, f: impl FnOnce(&T) -> R) -> R {
        self.slot(index).with(|slot| {
            // SAFETY: the caller guarantees the slot holds an initialised value published by the
            // producer, which will not touch the slot until the consumer releases it.
            f(unsafe { (*slot).assume_init_ref() })
        })
    }
}

impl<T> Drop for Ring<T> {
    fn drop(&mut self) {
        if !needs_drop::<T>() {
            return;
        }
        // Both halves are gone, and each published its private index in its own `drop`. The
        // `Arc` that owned us synchronised with both of them, so Relaxed loads see those stores.
        let head = self.head.load(Ordering::Relaxed);
        let mut tail = self.tail.load(Ordering::Relaxed);
        debug_assert!(head.wrapping_sub(tail) <= self.capacity());
        while tail != head {
            self.slot(tail).with_mut(|slot| {
                // SAFETY: `tail..head` are exactly the filled slots, each dropped once here, and
                // no other thread can reach the ring any more.
                unsafe { (*slot).assume_init_drop() };
            });
            tail = tail.wrapping_add(1);
        }
    }
}

impl<T> fmt::Debug for Ring<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ring")
            .field("capacity", &self.capacity())
            .field("head", &self.head.load(Ordering::Relaxed))
            .field("tail", &self.tail.load(Ordering::Relaxed))
            .finish()
    }
}

/// The writing half of a [`Ring`].
///
/// `Send` but not `Sync`: it may move to the producing thread, but there is only ever one.
///
/// Aligned to 128 bytes so that its private head, written on every push, never shares an
/// adjacent-line pair with the consumer's private state, wherever the two halves are stored.
#[repr(align(128))]
pub struct Producer<T> {
    ring: Arc<Ring<T>>,

    /// The producer's head: the next index to fill. Equal to `ring.head` except inside a
    /// [`WriteBatch`], which advances it and publishes it once when it ends.
    head: usize,

    /// The last value of `ring.tail` loaded, a lower bound on the real tail (the consumer only
    /// moves it forward). Invariant: `head.wrapping_sub(cached_tail)` in `0..=capacity`.
    cached_tail: Cell<usize>,

    /// The slot at `head` is free and already all zero bytes (see [`Producer::push_with`]).
    /// Every write into that slot clears it first, so it never outlives the slot's zeroes.
    next_zeroed: bool,
}

impl<T> Producer<T> {
    /// Moves `value` into the ring.
    ///
    /// # Errors
    ///
    /// [`PushError::Full`], carrying `value` back, if every slot is taken.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_ring::ring::{PushError, Ring};
    ///
    /// let (mut producer, _consumer) = Ring::new(1);
    /// assert_eq!(producer.push(10), Ok(()));
    /// assert_eq!(producer.push(20), Err(PushError::Full(20)));
    /// ```
    #[inline]
    pub fn push(&mut self, value: T) -> Result<(), PushError<T>> {
        self.stage(value)?;
        self.publish();
        Ok(())
    }

    /// Fills the next slot in place: zeroes it, then lets `fill` write into it.
    ///
    /// This is for large frames: the value is built in the ring's memory, not on the stack and
    /// then copied in. The bound is [`Zeroable`] rather than `Default` because zeroing is a
    /// `memset` of the slot itself (a `Default` value may be built on the stack and moved), and
    /// because byte-array frames such as `[u8; 128]` are `Zeroable` but not `Default`.
    ///
    /// If `fill` panics, the slot is not published and its value is leaked, never dropped twice.
    ///
    /// The zeroing is done ahead of time: after publishing, and only for types that need no
    /// drop, the producer zeroes the next slot if its cached tail already shows it free (it
    /// reads no shared index for this). The next `push_with` then finds its slot zeroed and
    /// owned, and skips the clear; any other write into that slot clears the mark first.
    ///
    /// # Errors
    ///
    /// [`PushError::Full`], carrying `fill` back uncalled, if every slot is taken.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_ring::ring::Ring;
    ///
    /// #[derive(Clone, Copy, bytemuck::Zeroable)]
    /// #[repr(C)]
    /// struct Frame {
    ///     len: u16,
    ///     bytes: [u8; 62],
    /// }
    ///
    /// let (mut producer, mut consumer) = Ring::<Frame>::new(8);
    /// let message = b"A\x00\x01";
    /// let pushed = producer.push_with(|frame| {
    ///     frame.len = message.len() as u16;
    ///     frame.bytes[..message.len()].copy_from_slice(message);
    /// });
    /// assert!(pushed.is_ok());
    /// let len = consumer.pop_with(|frame| frame.len).unwrap();
    /// assert_eq!(len, 3);
    /// ```
    #[inline]
    pub fn push_with<F>(&mut self, fill: F) -> Result<(), PushError<F>>
    where
        T: Zeroable,
        F: FnOnce(&mut T),
    {
        if self.free_at_least(1) == 0 {
            return Err(PushError::Full(fill));
        }
        // Taken before `fill` runs: a panicking fill leaves the slot neither zero nor published.
        let zeroed = core::mem::take(&mut self.next_zeroed);
        // SAFETY: we are the producer and `free_at_least` found the slot at `head` free; if
        // `zeroed`, the slot at `head` was zeroed by `zero_next` and not written since.
        unsafe { self.fill_slot(self.head, fill, zeroed) };
        self.head = self.head.wrapping_add(1);
        self.publish();
        self.zero_next();
        Ok(())
    }

    /// Moves `value` into the next slot without making it visible: the consumer sees it, with
    /// every value staged before it, at the next [`Producer::publish_staged`], at the end of the
    /// next push or batch (each publishes the producer's whole head), or when the producer is
    /// dropped.
    ///
    /// For a producer that gathers items one call at a time and hands them over in batches (one
    /// release store per batch) without first copying them into a batch of its own. Staged slots
    /// count as taken: a ring full of staged items refuses the next until they are published
    /// and read.
    ///
    /// # Errors
    ///
    /// [`PushError::Full`], carrying `value` back, if every slot is taken.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_ring::ring::Ring;
    ///
    /// let (mut producer, mut consumer) = Ring::new(4);
    /// producer.stage(1).unwrap();
    /// producer.stage(2).unwrap();
    /// assert!(consumer.is_empty()); // staged, not yet published
    /// producer.publish_staged();
    /// assert_eq!(consumer.read_batch(usize::MAX).collect::<Vec<_>>(), [1, 2]);
    /// ```
    #[inline(always)]
    pub fn stage(&mut self, value: T) -> Result<(), PushError<T>> {
        if self.free_at_least(1) == 0 {
            return Err(PushError::Full(value));
        }
        self.next_zeroed = false;
        // SAFETY: we are the producer and `free_at_least` found the slot at `head` free; it
        // stays ours until a publish covers it, since the consumer reads only below the
        // published head.
        unsafe { self.ring.write(self.head, value) };
        self.head = self.head.wrapping_add(1);
        Ok(())
    }

    /// Publishes every staged value (one Release store of the head); a no-op cost of one store
    /// when nothing is staged.
    #[inline(always)]
    pub fn publish_staged(&mut self) {
        self.publish();
    }

    /// Copies as many items from the front of `items` as there are free slots, and publishes
    /// them all with one store. Returns how many were copied.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_ring::ring::Ring;
    ///
    /// let (mut producer, mut consumer) = Ring::new(4);
    /// assert_eq!(producer.push_slice(&[1, 2, 3, 4, 5, 6]), 4);
    /// assert_eq!(consumer.read_batch(usize::MAX).collect::<Vec<_>>(), [1, 2, 3, 4]);
    /// ```
    #[inline]
    pub fn push_slice(&mut self, items: &[T]) -> usize
    where
        T: Copy,
    {
        let mut batch = self.write_batch(items.len());
        let n = batch.remaining();
        for &item in &items[..n] {
            // SAFETY: at most `remaining` items are written, each into a slot the batch reserved.
            unsafe { batch.write_unchecked(item) };
        }
        n
    }

    /// Starts a batch of up to `max` pushes that are published together, with one store, when
    /// the batch ends (on [`WriteBatch::commit`] or drop).
    ///
    /// The batch reserves `min(max, free slots)` slots; it reads the consumer's index only if
    /// its cached copy shows fewer than `max` free.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_ring::ring::Ring;
    ///
    /// let (mut producer, mut consumer) = Ring::<u32>::new(4);
    /// let mut batch = producer.write_batch(3);
    /// for value in [7, 8, 9] {
    ///     batch.push(value).unwrap();
    /// }
    /// assert!(consumer.is_empty()); // nothing is visible until the batch ends
    /// batch.commit();
    /// assert_eq!(consumer.slots(), 3);
    /// ```
    #[inline]
    pub fn write_batch(&mut self, max: usize) -> WriteBatch<'_, T> {
        let reserved = self.free_at_least(max).min(max);
        let start = self.head;
        WriteBatch {
            producer: self,
            start,
            end: start.wrapping_add(reserved),
        }
    }

    /// Returns the number of free slots, reading the consumer's index to be up to date.
    ///
    /// The consumer may free more slots at any moment, so this is a lower bound.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_ring::ring::Ring;
    ///
    /// let (mut producer, _consumer) = Ring::new(4);
    /// producer.push(1).unwrap();
    /// assert_eq!(producer.slots(), 3);
    /// ```
    pub fn slots(&self) -> usize {
        self.refresh_free()
    }

    /// Returns the number of items in the ring (an upper bound: the consumer may take more).
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_ring::ring::Ring;
    ///
    /// let (mut producer, _consumer) = Ring::new(4);
    /// producer.push(1).unwrap();
    /// assert_eq!(producer.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.capacity() - self.refresh_free()
    }

    /// Returns `true` if the ring holds no items (the consumer has taken all of them).
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_ring::ring::Ring;
    ///
    /// let (producer, _consumer) = Ring::<u8>::new(4);
    /// assert!(producer.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Returns the number of slots, a power of two.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_ring::ring::Ring;
    ///
    /// let (producer, _consumer) = Ring::<u8>::new(3);
    /// assert_eq!(producer.capacity(), 4);
    /// ```
    pub fn capacity(&self) -> usize {
        self.ring.capacity()
    }

    /// Returns `true` if the [`Consumer`] has been dropped, so nothing will be taken any more.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_ring::ring::Ring;
    ///
    /// let (producer, consumer) = Ring::<u8>::new(4);
    /// assert!(!producer.is_abandoned());
    /// drop(consumer);
    /// assert!(producer.is_abandoned());
    /// ```
    pub fn is_abandoned(&self) -> bool {
        abandoned(&self.ring)
    }

    /// Returns the free slots according to the cached tail, refreshing it only if that shows
    /// fewer than `wanted`.
    #[inline]
    fn free_at_least(&self, wanted: usize) -> usize {
        let used = self.head.wrapping_sub(self.cached_tail.get());
        debug_assert!(
            used <= self.capacity(),
            "invariant: head - cached tail <= capacity"
        );
        let free = self.capacity() - used;
        if free >= wanted {
            free
        } else {
            self.refresh_free()
        }
    }

    /// Loads the consumer's tail (Acquire, so its reads of the slots it released happened
    /// before we overwrite them), caches it, and returns the free slots.
    #[inline]
    fn refresh_free(&self) -> usize {
        let tail = self.ring.tail.load(Ordering::Acquire);
        self.cached_tail.set(tail);
        let used = self.head.wrapping_sub(tail);
        debug_assert!(
            used <= self.capacity(),
            "invariant: head - tail <= capacity"
        );
        self.capacity() - used
    }

    /// Publishes the private head (Release, so the slots' contents are visible with it).
    #[inline]
    fn publish(&self) {
        self.ring.head.store(self.head, Ordering::Release);
    }

    /// Zeroes the slot at `head` ahead of the next [`Producer::push_with`], if the cached tail
    /// shows it free and `T` needs no drop (a zeroed value is then overwritten without loss).
    ///
    /// Called right after a publish: the zeroing stores queue behind the head store (x86 keeps
    /// stores in order), so they cannot delay it, and they pull the slot's lines into this
    /// core's cache before the next frame is due.
    #[inline]
    fn zero_next(&mut self)
    where
        T: Zeroable,
    {
        if needs_drop::<T>() || self.head.wrapping_sub(self.cached_tail.get()) >= self.capacity() {
            return;
        }
        // SAFETY: the cached tail is a lower bound on the real one (the consumer only moves it
        // forward, and we loaded it with Acquire), so `head - tail < capacity`: the slot at
        // `head` is free, the consumer is done with it, and only the producer writes it.
        unsafe { self.zero_slot(self.head) };
        self.next_zeroed = true;
    }

    /// Writes all-zero bytes over the slot of `index`.
    ///
    /// # Safety
    ///
    /// As for [`Ring::write`].
    #[inline]
    unsafe fn zero_slot(&self, index: usize)
    where
        T: Zeroable,
    {
        self.ring.slot(index).with_mut(|slot| {
            // SAFETY: the caller guarantees the slot is free and ours alone to write; it holds
            // no value that needs dropping (it is free), and `write_bytes` covers exactly one
            // `T` inside the slot's `MaybeUninit<T>`.
            unsafe { (*slot).as_mut_ptr().write_bytes(0, 1) };
        });
    }

    /// Zeroes the slot of `index` unless `zeroed` says it already is, then lets `fill` modify
    /// it in place.
    ///
    /// # Safety
    ///
    /// As for [`Ring::write`]; and if `zeroed`, the slot holds all-zero bytes.
    #[inline]
    unsafe fn fill_slot<F>(&self, index: usize, fill: F, zeroed: bool)
    where
        T: Zeroable,
        F: FnOnce(&mut T),
    {
        if !zeroed {
            // SAFETY: the caller's guarantee is `zero_slot`'s.
            unsafe { self.zero_slot(index) };
        }
        self.ring.slot(index).with_mut(|slot| {
            // SAFETY: the slot is free and ours alone to write (the caller's guarantee), and it
            // holds all-zero bytes (zeroed above, or by the caller's guarantee), which
            // `T: Zeroable` promises are a valid `T`, so it is initialised. The `&mut T` lives
            // only for the call to `fill`, before the slot is published.
            fill(unsafe { (*slot).assume_init_mut() });
        });
    }
}

impl<T> Drop for Producer<T> {
    fn drop(&mut self) {
        // A forgotten `WriteBatch` may have left filled slots unpublished; publish them so the
        // consumer, or the ring's own drop, sees them.
        self.publish();
    }
}

impl<T> fmt::Debug for Producer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Producer")
            .field("capacity", &self.capacity())
            .field("head", &self.head)
            .field("cached_tail", &self.cached_tail.get())
            .finish()
    }
}

/// A batch of pushes, published together when it ends. Made by [`Producer::write_batch`].
///
/// Items pushed into the batch are invisible to the consumer until [`WriteBatch::commit`] is
/// called or the batch is dropped, which publishes them all with a single Release store.
#[must_use = "a batch publishes its items when committed or dropped"]
pub struct WriteBatch<'a, T> {
    producer: &'a mut Producer<T>,
    /// The producer's head when the batch began.
    start: usize,
    /// One past the last reserved index. Invariant: `producer.head..end` are free slots.
    end: usize,
}

impl<T> WriteBatch<'_, T> {
    /// Moves `value` into the next reserved slot.
    ///
    /// # Errors
    ///
    /// [`PushError::Full`], carrying `value` back, if the batch's reserved slots are used up.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_ring::ring::{PushError, Ring};
    ///
    /// let (mut producer, _consumer) = Ring::new(2);
    /// let mut batch = producer.write_batch(8);
    /// assert_eq!(batch.remaining(), 2);
    /// assert_eq!(batch.push('a'), Ok(()));
    /// assert_eq!(batch.push('b'), Ok(()));
    /// assert_eq!(batch.push('c'), Err(PushError::Full('c')));
    /// ```
    #[inline]
    pub fn push(&mut self, value: T) -> Result<(), PushError<T>> {
        if self.remaining() == 0 {
            return Err(PushError::Full(value));
        }
        // SAFETY: one reserved slot is left.
        unsafe { self.write_unchecked(value) };
        Ok(())
    }

    /// Zeroes the next reserved slot and fills it in place, as [`Producer::push_with`] does.
    ///
    /// # Errors
    ///
    /// [`PushError::Full`], carrying `fill` back uncalled, if the reserved slots are used up.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_ring::ring::Ring;
    ///
    /// let (mut producer, mut consumer) = Ring::<[u8; 128]>::new(4);
    /// let mut batch = producer.write_batch(2);
    /// for tag in [1u8, 2] {
    ///     assert!(batch.push_with(|frame| frame[0] = tag).is_ok());
    /// }
    /// batch.commit();
    /// assert_eq!(consumer.pop_with(|frame| frame[0]), Ok(1));
    /// assert_eq!(consumer.pop_with(|frame| frame[0]), Ok(2));
    /// ```
    #[inline]
    pub fn push_with<F>(&mut self, fill: F) -> Result<(), PushError<F>>
    where
        T: Zeroable,
        F: FnOnce(&mut T),
    {
        if self.remaining() == 0 {
            return Err(PushError::Full(fill));
        }
        let index = self.producer.head;
        let zeroed = core::mem::take(&mut self.producer.next_zeroed);
        // SAFETY: `index` is a slot this batch reserved, so it is free and ours; `zeroed` says
        // whether `zero_next` zeroed it (nothing has written it since).
        unsafe { self.producer.fill_slot(index, fill, zeroed) };
        self.producer.head = index.wrapping_add(1);
        Ok(())
    }

    /// Returns how many more items this batch can take.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_ring::ring::Ring;
    ///
    /// let (mut producer, _consumer) = Ring::<u8>::new(4);
    /// assert_eq!(producer.write_batch(3).remaining(), 3);
    /// ```
    pub fn remaining(&self) -> usize {
        self.end.wrapping_sub(self.producer.head)
    }

    /// Ends the batch, publishing its items. Dropping the batch does the same.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_ring::ring::Ring;
    ///
    /// let (mut producer, consumer) = Ring::new(4);
    /// let mut batch = producer.write_batch(4);
    /// batch.push(1).unwrap();
    /// batch.commit();
    /// assert_eq!(consumer.slots(), 1);
    /// ```
    pub fn commit(self) {
        drop(self);
    }

    /// Moves `value` into the next reserved slot without checking that one is left.
    ///
    /// # Safety
    ///
    /// `self.remaining() > 0`.
    #[inline]
    unsafe fn write_unchecked(&mut self, value: T) {
        debug_assert!(self.remaining() > 0, "invariant: a reserved slot is left");
        let index = self.producer.head;
        self.producer.next_zeroed = false;
        // SAFETY: the caller guarantees `index` is one of the free slots this batch reserved.
        unsafe { self.producer.ring.write(index, value) };
        self.producer.head = index.wrapping_add(1);
    }
}

impl<T> Drop for WriteBatch<'_, T> {
    fn drop(&mut self) {
        // An empty batch (the usual outcome of polling a full ring) stores nothing, so the
        // head's cache line is not dirtied for nothing.
        if self.producer.head != self.start {
            self.producer.publish();
        }
    }
}

impl<T> fmt::Debug for WriteBatch<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriteBatch")
            .field("remaining", &self.remaining())
            .finish()
    }
}

/// The reading half of a [`Ring`].
///
/// `Send` but not `Sync`: it may move to the consuming thread, but there is only ever one.
///
/// Aligned to 128 bytes, as [`Producer`] is: its private tail is written on every pop.
#[repr(align(128))]
pub struct Consumer<T> {
    ring: Arc<Ring<T>>,

    /// The consumer's tail: the next index to read. Equal to `ring.tail` except inside a
    /// [`ReadBatch`], which advances it and publishes it once when it ends.
    tail: usize,

    /// The last value of `ring.head` loaded, a lower bound on the real head (the producer only
    /// moves it forward). Invariant: `cached_head.wrapping_sub(tail)` in `0..=capacity`.
    cached_head: Cell<usize>,
}

impl<T> Consumer<T> {
    /// Takes the oldest item out of the ring.
    ///
    /// # Errors
    ///
    /// [`PopError::Empty`] if there is none.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_ring::ring::{PopError, Ring};
    ///
    /// let (mut producer, mut consumer) = Ring::new(2);
    /// producer.push("hello").unwrap();
    /// assert_eq!(consumer.pop(), Ok("hello"));
    /// assert_eq!(consumer.pop(), Err(PopError::Empty));
    /// ```
    #[inline]
    pub fn pop(&mut self) -> Result<T, PopError> {
        if self.available_at_least(1) == 0 {
            return Err(PopError::Empty);
        }
        // SAFETY: we are the consumer, `available_at_least` saw the slot at `tail` published,
        // and we advance past it at once.
        let value = unsafe { self.ring.read(self.tail) };
        self.tail = self.tail.wrapping_add(1);
        self.release();
        Ok(value)
    }

    /// Lets `f` look at the oldest item where it lies, then removes it; returns what `f` returns.
    ///
    /// For types that need no drop (frames of plain bytes), the item is never copied out of the
    /// ring. Other types are moved out first and dropped after `f`, so a panic in `f` or in the
    /// drop cannot leave the ring holding a half-dropped item.
    ///
    /// # Errors
    ///
    /// [`PopError::Empty`] if there is no item; `f` is not called.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_ring::ring::Ring;
    ///
    /// let (mut producer, mut consumer) = Ring::<[u64; 16]>::new(2);
    /// producer.push([3; 16]).unwrap();
    /// assert_eq!(consumer.pop_with(|frame| frame.iter().sum::<u64>()), Ok(48));
    /// assert!(consumer.is_empty());
    /// ```
    #[inline]
    pub fn pop_with<R>(&mut self, f: impl FnOnce(&T) -> R) -> Result<R, PopError> {
        if self.available_at_least(1) == 0 {
            return Err(PopError::Empty);
        }
        // SAFETY: the slot at `tail` is published and ours until we release it.
        let result = unsafe { self.take_with(f) };
        self.release();
        Ok(result)
    }

    /// Starts a batch that reads up to `max` items; the slots they free are released to the
    /// producer together, with one store, when the batch is dropped.
    ///
    /// The batch covers `min(max, n)` items, where `n` is what the cached copy of the producer's
    /// index shows; only if that is none does it read the shared index (a line the producer's
    /// core writes) to see more. So a consumer behind the producer reads the shared index once
    /// per drain, not once per batch. Items the batch does not reach stay in the ring.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_ring::ring::Ring;
    ///
    /// let (mut producer, mut consumer) = Ring::new(8);
    /// producer.push_slice(&[1, 2, 3, 4, 5]);
    /// let mut batch = consumer.read_batch(3);
    /// assert_eq!(batch.len(), 3);
    /// assert_eq!(batch.next(), Some(1));
    /// drop(batch); // releases one slot; 2 and 3 stay in the ring
    /// assert_eq!(consumer.read_batch(8).collect::<Vec<_>>(), [2, 3, 4, 5]);
    /// ```
    #[inline]
    pub fn read_batch(&mut self, max: usize) -> ReadBatch<'_, T> {
        let available = self.available_at_least(1).min(max);
        let start = self.tail;
        ReadBatch {
            consumer: self,
            start,
            end: start.wrapping_add(available),
        }
    }

    /// Returns the number of items ready to take, reading the producer's index to be up to date.
    ///
    /// The producer may add more at any moment, so this is a lower bound.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_ring::ring::Ring;
    ///
    /// let (mut producer, consumer) = Ring::new(4);
    /// producer.push(1).unwrap();
    /// assert_eq!(consumer.slots(), 1);
    /// ```
    pub fn slots(&self) -> usize {
        self.refresh_available()
    }

    /// Returns the number of items in the ring; the same as [`Consumer::slots`].
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_ring::ring::Ring;
    ///
    /// let (mut producer, consumer) = Ring::new(4);
    /// producer.push_slice(&[1, 2]);
    /// assert_eq!(consumer.len(), 2);
    /// ```
    pub fn len(&self) -> usize {
        self.refresh_available()
    }

    /// Returns `true` if there is nothing to take.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_ring::ring::Ring;
    ///
    /// let (_producer, consumer) = Ring::<u8>::new(4);
    /// assert!(consumer.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Returns the number of slots, a power of two.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_ring::ring::Ring;
    ///
    /// let (_producer, consumer) = Ring::<u8>::new(5);
    /// assert_eq!(consumer.capacity(), 8);
    /// ```
    pub fn capacity(&self) -> usize {
        self.ring.capacity()
    }

    /// Returns `true` if the [`Producer`] has been dropped: once the ring is also empty, nothing
    /// more will arrive. Useful for draining at shutdown.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_ring::ring::Ring;
    ///
    /// let (mut producer, mut consumer) = Ring::new(4);
    /// producer.push(1).unwrap();
    /// drop(producer);
    /// assert!(consumer.is_abandoned());
    /// assert_eq!(consumer.pop(), Ok(1)); // what was pushed is still delivered
    /// ```
    pub fn is_abandoned(&self) -> bool {
        abandoned(&self.ring)
    }

    /// Returns the items available according to the cached head, refreshing it only if that
    /// shows fewer than `wanted`.
    #[inline]
    fn available_at_least(&self, wanted: usize) -> usize {
        let available = self.cached_head.get().wrapping_sub(self.tail);
        debug_assert!(
            available <= self.capacity(),
            "invariant: cached head - tail <= capacity"
        );
        if available >= wanted {
            available
        } else {
            self.refresh_available()
        }
    }

    /// Loads the producer's head (Acquire, so the slots it published are visible), caches it,
    /// and returns the items available.
    #[inline]
    fn refresh_available(&self) -> usize {
        let head = self.ring.head.load(Ordering::Acquire);
        self.cached_head.set(head);
        let available = head.wrapping_sub(self.tail);
        debug_assert!(
            available <= self.capacity(),
            "invariant: head - tail <= capacity"
        );
        available
    }

    /// Publishes the private tail (Release, so our reads of the freed slots happen before the
    /// producer reuses them).
    #[inline]
    fn release(&self) {
        self.ring.tail.store(self.tail, Ordering::Release);
    }

    /// Passes the item at `tail` to `f`, removes it, and advances the private tail.
    ///
    /// # Safety
    ///
    /// The slot at `tail` is filled and published.
    #[inline]
    unsafe fn take_with<R>(&mut self, f: impl FnOnce(&T) -> R) -> R {
        let index = self.tail;
        if needs_drop::<T>() {
            // SAFETY: the caller guarantees the slot is filled; the tail moves past it at once.
            let value = unsafe { self.ring.read(index) };
            self.tail = index.wrapping_add(1);
            f(&value)
        } else {
            // SAFETY: the caller guarantees the slot is filled, and the producer cannot touch it
            // until the tail moves past it. If `f` panics the tail stays put and the item stays.
            let result = unsafe { self.ring.peek_with(index, f) };
            // No drop needed: moving past the slot is all it takes to remove the item.
            self.tail = index.wrapping_add(1);
            result
        }
    }
}

impl<T> Drop for Consumer<T> {
    fn drop(&mut self) {
        // A forgotten `ReadBatch` may have moved items out without releasing their slots;
        // publish the private tail so the ring's drop does not drop them again.
        self.release();
    }
}

impl<T> fmt::Debug for Consumer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Consumer")
            .field("capacity", &self.capacity())
            .field("tail", &self.tail)
            .field("cached_head", &self.cached_head.get())
            .finish()
    }
}

/// A batch of items being read, whose slots are released together when it is dropped. Made by
/// [`Consumer::read_batch`].
///
/// It is an iterator that moves the items out in order; [`ReadBatch::next_with`] reads one in
/// place instead. Only the items actually taken are removed.
#[must_use = "a batch does nothing unless its items are taken"]
pub struct ReadBatch<'a, T> {
    consumer: &'a mut Consumer<T>,
    /// The consumer's tail when the batch began.
    start: usize,
    /// One past the last index covered. Invariant: `consumer.tail..end` are published slots.
    end: usize,
}

impl<T> ReadBatch<'_, T> {
    /// Lets `f` look at the next item where it lies, then removes it, as
    /// [`Consumer::pop_with`] does. Returns `None` when the batch is exhausted.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_ring::ring::Ring;
    ///
    /// let (mut producer, mut consumer) = Ring::<[u8; 64]>::new(4);
    /// producer.push_slice(&[[1; 64], [2; 64]]);
    /// let mut batch = consumer.read_batch(4);
    /// let mut firsts = Vec::new();
    /// while let Some(first) = batch.next_with(|frame| frame[0]) {
    ///     firsts.push(first);
    /// }
    /// assert_eq!(firsts, [1, 2]);
    /// ```
    #[inline]
    pub fn next_with<R>(&mut self, f: impl FnOnce(&T) -> R) -> Option<R> {
        if self.consumer.tail == self.end {
            return None;
        }
        // SAFETY: `tail` lies in `tail..end`, which the batch found published.
        Some(unsafe { self.consumer.take_with(f) })
    }

    /// Lets `f` look at the item `ahead` places after the next one, where it lies, without
    /// taking it: for a consumer that prefetches for what comes. `None` if the batch does
    /// not reach that far.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_ring::ring::Ring;
    ///
    /// let (mut producer, mut consumer) = Ring::<u32>::new(4);
    /// producer.push_slice(&[1, 2, 3]);
    /// let mut batch = consumer.read_batch(4);
    /// assert_eq!(batch.peek_with(2, |&v| v), Some(3));
    /// assert_eq!(batch.peek_with(3, |&v| v), None);
    /// assert_eq!(batch.next_with(|&v| v), Some(1), "peeking took nothing");
    /// ```
    #[inline]
    pub fn peek_with<R>(&self, ahead: usize, f: impl FnOnce(&T) -> R) -> Option<R> {
        if ahead >= self.end.wrapping_sub(self.consumer.tail) {
            return None;
        }
        let index = self.consumer.tail.wrapping_add(ahead);
        // SAFETY: `index` lies in `tail..end`, which the batch found published; the value is
        // read in place and stays in its slot, which the producer does not touch until the
        // batch has taken the value and released the slot.
        Some(unsafe { self.consumer.ring.peek_with(index, f) })
    }
}

impl<T> Iterator for ReadBatch<'_, T> {
    type Item = T;

    #[inline]
    fn next(&mut self) -> Option<T> {
        let index = self.consumer.tail;
        if index == self.end {
            return None;
        }
        // SAFETY: `index` lies in `tail..end`, which the batch found published; the private
        // tail moves past it at once, so it is read only once even if the batch is forgotten.
        let value = unsafe { self.consumer.ring.read(index) };
        self.consumer.tail = index.wrapping_add(1);
        Some(value)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.end.wrapping_sub(self.consumer.tail);
        (n, Some(n))
    }
}

impl<T> ExactSizeIterator for ReadBatch<'_, T> {}

impl<T> Drop for ReadBatch<'_, T> {
    fn drop(&mut self) {
        // An empty batch (the usual outcome of polling an empty ring) stores nothing.
        if self.consumer.tail != self.start {
            self.consumer.release();
        }
    }
}

impl<T> fmt::Debug for ReadBatch<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadBatch")
            .field("len", &self.len())
            .finish()
    }
}

/// Why [`Producer::push`] (and its batch and in-place variants) failed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PushError<T> {
    /// Every slot is taken; the value (or, for `push_with`, the fill function) is handed back.
    /// Wait for the consumer and try again.
    Full(T),
}

impl<T> PushError<T> {
    /// Returns the value the push was given.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_ring::ring::Ring;
    ///
    /// let (mut producer, _consumer) = Ring::new(1);
    /// producer.push(1).unwrap();
    /// assert_eq!(producer.push(2).unwrap_err().into_inner(), 2);
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            PushError::Full(value) => value,
        }
    }
}

impl<T> fmt::Display for PushError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PushError::Full(_) => f.write_str("the ring is full"),
        }
    }
}

impl<T: fmt::Debug> std::error::Error for PushError<T> {}

/// Why [`Consumer::pop`] failed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PopError {
    /// There is nothing to take. Wait for the producer and try again, or, if
    /// [`Consumer::is_abandoned`] says the producer is gone, stop.
    Empty,
}

impl fmt::Display for PopError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PopError::Empty => f.write_str("the ring is empty"),
        }
    }
}

impl std::error::Error for PopError {}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    /// Counts its drops in a shared counter, to prove each item is dropped exactly once.
    struct Counted(Rc<Cell<usize>>);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.set(self.0.get() + 1);
        }
    }

    #[test]
    fn capacity_rounds_up_to_a_power_of_two() {
        for (asked, got) in [(0, 1), (1, 1), (2, 2), (3, 4), (1000, 1024), (1024, 1024)] {
            let (producer, consumer) = Ring::<u8>::new(asked);
            assert_eq!(producer.capacity(), got, "asked for {asked}");
            assert_eq!(consumer.capacity(), got, "asked for {asked}");
        }
    }

    #[test]
    fn staged_items_wait_for_a_publish_and_fill_the_ring() {
        let (mut producer, mut consumer) = Ring::new(4);
        for i in 0..4 {
            assert_eq!(producer.stage(i), Ok(()));
        }
        // Staged slots are taken, though the consumer sees none of them yet.
        assert_eq!(producer.stage(4), Err(PushError::Full(4)));
        assert_eq!(consumer.pop(), Err(PopError::Empty));
        producer.publish_staged();
        assert_eq!(consumer.read_batch(2).collect::<Vec<_>>(), [0, 1]);
        // A push publishes what was staged before it, in order.
        producer.stage(4).unwrap();
        assert_eq!(consumer.len(), 2);
        producer.push(5).unwrap();
        let popped: Vec<_> = std::iter::from_fn(|| consumer.pop().ok()).collect();
        assert_eq!(popped, [2, 3, 4, 5]);
        // Dropping the producer publishes what is staged.
        producer.stage(6).unwrap();
        drop(producer);
        assert_eq!(consumer.read_batch(usize::MAX).collect::<Vec<_>>(), [6]);
    }

    #[test]
    fn full_and_empty() {
        let (mut producer, mut consumer) = Ring::new(4);
        assert!(producer.is_empty() && consumer.is_empty());
        assert_eq!(consumer.pop(), Err(PopError::Empty));
        for i in 0..4 {
            assert_eq!(producer.push(i), Ok(()));
        }
        assert_eq!(producer.push(4), Err(PushError::Full(4)));
        assert_eq!(producer.slots(), 0);
        assert_eq!((producer.len(), consumer.len()), (4, 4));
        assert_eq!(consumer.pop(), Ok(0));
        assert_eq!(producer.push(4), Ok(()));
        for i in 1..5 {
            assert_eq!(consumer.pop(), Ok(i));
        }
        assert_eq!(consumer.pop(), Err(PopError::Empty));
        assert_eq!(producer.slots(), 4);
    }

    #[test]
    fn wraps_around_many_times_in_order() {
        let (mut producer, mut consumer) = Ring::new(4);
        let mut next_in = 0u32;
        let mut next_out = 0u32;
        // Uneven step sizes move the indices through every slot and across the end many times.
        for round in 0..1000u32 {
            for _ in 0..(round % 5) {
                if producer.push(next_in).is_ok() {
                    next_in += 1;
                }
            }
            for _ in 0..(round % 3 + 1) {
                if let Ok(value) = consumer.pop() {
                    assert_eq!(value, next_out);
                    next_out += 1;
                }
            }
        }
        while let Ok(value) = consumer.pop() {
            assert_eq!(value, next_out);
            next_out += 1;
        }
        assert_eq!(next_in, next_out);
        assert!(next_in > 1000, "the test wrapped only {next_in} items");
    }

    #[test]
    fn indices_wrap_at_usize_max() {
        let (mut producer, mut consumer) = Ring::new(4);
        // Start both halves just below the wrap of the free-running counters.
        let start = usize::MAX - 5;
        producer.head = start;
        producer.cached_tail.set(start);
        producer.ring.head.store(start, Ordering::Relaxed);
        producer.ring.tail.store(start, Ordering::Relaxed);
        consumer.tail = start;
        consumer.cached_head.set(start);
        for i in 0..20u32 {
            assert_eq!(producer.push_slice(&[i, i + 100, i + 200]), 3);
            assert_eq!(consumer.len(), 3);
            assert_eq!(
                consumer.read_batch(8).collect::<Vec<_>>(),
                [i, i + 100, i + 200]
            );
        }
        assert!(producer.head < start, "the head did not wrap");
    }

    #[test]
    fn write_batch_publishes_once_at_the_end() {
        let (mut producer, mut consumer) = Ring::new(8);
        producer.push(0).unwrap();
        let mut batch = producer.write_batch(16);
        assert_eq!(batch.remaining(), 7);
        for i in 1..8 {
            batch.push(i).unwrap();
            assert_eq!(consumer.slots(), 1, "batch items must stay unpublished");
        }
        assert_eq!(batch.push(8), Err(PushError::Full(8)));
        drop(batch);
        assert_eq!(consumer.slots(), 8, "one store published the whole batch");
        assert_eq!(
            consumer.read_batch(100).collect::<Vec<_>>(),
            (0..8).collect::<Vec<_>>()
        );
    }

    #[test]
    fn read_batch_releases_only_what_it_took() {
        let (mut producer, mut consumer) = Ring::new(4);
        assert_eq!(producer.push_slice(&[1, 2, 3, 4]), 4);
        let mut batch = consumer.read_batch(3);
        assert_eq!(batch.len(), 3);
        assert_eq!(batch.next(), Some(1));
        assert_eq!(batch.next_with(|v| v * 10), Some(20));
        assert_eq!(
            producer.slots(),
            0,
            "nothing released before the batch ends"
        );
        drop(batch);
        assert_eq!(producer.slots(), 2);
        assert_eq!(consumer.pop(), Ok(3));
        assert_eq!(consumer.read_batch(0).len(), 0);
        assert_eq!(consumer.read_batch(9).collect::<Vec<_>>(), [4]);
    }

    #[test]
    fn push_with_fills_in_place() {
        let (mut producer, mut consumer) = Ring::<[u64; 16]>::new(2);
        for tag in 1..=2u64 {
            assert!(producer.push_with(|frame| frame[15] = tag).is_ok());
        }
        let refused = producer.push_with(|frame| frame[0] = 99);
        assert!(matches!(refused, Err(PushError::Full(_))));
        assert_eq!(consumer.pop_with(|frame| (frame[0], frame[15])), Ok((0, 1)));
        assert_eq!(
            consumer.pop(),
            Ok({
                let mut expected = [0; 16];
                expected[15] = 2;
                expected
            })
        );
    }

    #[test]
    fn remaining_items_are_dropped_once() {
        let drops = Rc::new(Cell::new(0));
        let item = || Counted(Rc::clone(&drops));
        {
            let (mut producer, mut consumer) = Ring::new(4);
            // Move the indices off zero so the leftovers straddle the end of the storage.
            for _ in 0..3 {
                producer.push(item()).ok().unwrap();
                drop(consumer.pop().ok().unwrap());
            }
            assert_eq!(drops.get(), 3);
            for _ in 0..4 {
                producer.push(item()).ok().unwrap();
            }
            // Taken through `pop_with`: dropped by the ring, once.
            consumer.pop_with(|_| ()).unwrap();
            assert_eq!(drops.get(), 4);
            drop(consumer);
            assert_eq!(drops.get(), 4, "the producer still holds the ring");
        }
        assert_eq!(drops.get(), 7);
    }

    #[test]
    fn forgotten_batches_neither_lose_nor_double_drop() {
        let drops = Rc::new(Cell::new(0));
        let item = || Counted(Rc::clone(&drops));
        {
            let (mut producer, mut consumer) = Ring::new(8);
            let mut batch = producer.write_batch(3);
            for _ in 0..3 {
                batch.push(item()).ok().unwrap();
            }
            core::mem::forget(batch);
            // The next push publishes the forgotten batch's items along with its own.
            producer.push(item()).ok().unwrap();
            assert_eq!(consumer.len(), 4);

            let mut batch = consumer.read_batch(2);
            drop(batch.next());
            drop(batch.next());
            core::mem::forget(batch);
            assert_eq!(drops.get(), 2);
            // The consumer does not see the forgotten items again.
            assert_eq!(consumer.len(), 2);
            drop(consumer.pop().ok().unwrap());
            assert_eq!(drops.get(), 3);
        }
        assert_eq!(drops.get(), 4);
    }

    #[test]
    fn a_panicking_fill_publishes_nothing() {
        let (mut producer, mut consumer) = Ring::<[u8; 4]>::new(2);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = producer.push_with(|frame| {
                frame[0] = 1;
                panic!("fill failed");
            });
        }));
        assert!(result.is_err());
        assert!(consumer.is_empty());
        assert!(producer.push_with(|frame| frame[3] = 7).is_ok());
        assert_eq!(consumer.pop(), Ok([0, 0, 0, 7]));
    }

    #[test]
    fn hot_words_sit_in_128_byte_blocks_of_their_own() {
        use core::mem::{align_of, offset_of};
        // 128: the pair of 64-byte lines an adjacent-line prefetcher moves together.
        const PAIR: usize = 128;
        let head = offset_of!(Ring<u64>, head);
        let tail = offset_of!(Ring<u64>, tail);
        let slots = offset_of!(Ring<u64>, slots);
        let mask = offset_of!(Ring<u64>, mask);
        assert_eq!(head, 0);
        assert!(tail >= head + PAIR, "head at {head}, tail at {tail}");
        assert!(
            slots >= tail + PAIR && mask >= tail + PAIR,
            "read-only fields after tail's pair"
        );
        assert_eq!(head % PAIR, 0);
        assert_eq!(tail % PAIR, 0);
        assert_eq!(align_of::<Ring<u64>>() % PAIR, 0);
        assert_eq!(align_of::<Producer<u64>>() % PAIR, 0);
        assert_eq!(align_of::<Consumer<u64>>() % PAIR, 0);
    }

    #[test]
    fn push_with_always_starts_from_zeroes() {
        // Two slots, so every slot is reused; each frame is checked against the all-zero frame
        // with only the filled byte set, whichever way the slot was written before.
        let (mut producer, mut consumer) = Ring::<[u8; 4]>::new(2);
        assert_eq!(producer.push([5; 4]), Ok(()));
        assert_eq!(producer.push([6; 4]), Ok(()));
        assert_eq!(consumer.pop(), Ok([5; 4]));
        assert_eq!(consumer.pop(), Ok([6; 4]));
        // Into slot 0 (stale 5s); zeroes slot 1 (stale 6s) ahead of time.
        assert!(producer.push_with(|f| f[0] = 1).is_ok());
        // Slot 1 is written by value over the early zeroes: the next push_with must not trust
        // them for slot 0, which still holds [1, 0, 0, 0].
        assert_eq!(producer.push([7; 4]), Ok(()));
        assert_eq!(consumer.pop(), Ok([1, 0, 0, 0]));
        assert_eq!(consumer.pop(), Ok([7; 4]));
        assert!(producer.push_with(|f| f[1] = 2).is_ok());
        // Slot 1 (stale 7s) zeroed early, then filled by a batch's push_with.
        let mut batch = producer.write_batch(1);
        assert!(batch.push_with(|f| f[2] = 3).is_ok());
        batch.commit();
        assert_eq!(consumer.pop(), Ok([0, 2, 0, 0]));
        assert_eq!(consumer.pop(), Ok([0, 0, 3, 0]));
        // A batch zeroes nothing ahead: a value written by a batch into slot 0, then
        // push_with into slot 1, which still holds [0, 0, 3, 0].
        assert_eq!(producer.push_slice(&[[9; 4]]), 1);
        assert!(producer.push_with(|f| f[3] = 4).is_ok());
        assert_eq!(consumer.pop(), Ok([9; 4]));
        assert_eq!(consumer.pop(), Ok([0, 0, 0, 4]));
    }

    #[test]
    fn read_batch_takes_what_it_knows_of_before_looking_again() {
        let (mut producer, mut consumer) = Ring::new(8);
        producer.push_slice(&[1, 2, 3]);
        // Dry: reads the head, sees 3, takes 2.
        assert_eq!(consumer.read_batch(2).collect::<Vec<_>>(), [1, 2]);
        producer.push_slice(&[4, 5]);
        // One still known: takes it without reading the head.
        assert_eq!(consumer.read_batch(8).collect::<Vec<_>>(), [3]);
        // Dry again: reads the head and sees the rest.
        assert_eq!(consumer.read_batch(8).collect::<Vec<_>>(), [4, 5]);
        assert_eq!(consumer.read_batch(8).count(), 0);
    }

    #[test]
    fn zero_sized_items() {
        let (mut producer, mut consumer) = Ring::new(2);
        assert_eq!(producer.push(()), Ok(()));
        assert_eq!(producer.push(()), Ok(()));
        assert_eq!(producer.push(()), Err(PushError::Full(())));
        assert_eq!(consumer.read_batch(5).count(), 2);
    }

    #[test]
    fn abandonment_is_visible_to_the_other_half() {
        let (producer, consumer) = Ring::<u8>::new(2);
        assert!(!consumer.is_abandoned());
        drop(producer);
        assert!(consumer.is_abandoned());
    }

    #[test]
    fn halves_are_send_but_not_sync() {
        fn assert_send<T: Send>() {}
        assert_send::<Producer<Vec<u8>>>();
        assert_send::<Consumer<Vec<u8>>>();

        // Resolves only if exactly one impl applies, i.e. if `T` is not `Sync`.
        trait AmbiguousIfSync<A> {
            fn check() {}
        }
        impl<T: ?Sized> AmbiguousIfSync<()> for T {}
        impl<T: ?Sized + Sync> AmbiguousIfSync<u8> for T {}
        <Producer<u8> as AmbiguousIfSync<_>>::check();
        <Consumer<u8> as AmbiguousIfSync<_>>::check();
    }

    /// Items per stress run: a few million in release builds, fewer in debug ones.
    const STRESS_ITEMS: u64 = if cfg!(debug_assertions) {
        1 << 20
    } else {
        1 << 22
    };

    /// Waits for the other thread: spins briefly, then yields, since the test machine may have
    /// fewer free cores than threads.
    fn backoff(spins: &mut u32) {
        *spins += 1;
        if *spins < 64 {
            core::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }

    #[test]
    fn two_threads_single_items_in_order() {
        let (mut producer, mut consumer) = Ring::<u64>::new(1024);
        let reader = std::thread::spawn(move || {
            let mut expected = 0u64;
            let mut checksum = 0u64;
            let mut spins = 0;
            while expected < STRESS_ITEMS {
                match consumer.pop() {
                    Ok(value) => {
                        assert_eq!(value, expected);
                        checksum = checksum.wrapping_add(value.wrapping_mul(0x9E37_79B9));
                        expected += 1;
                        spins = 0;
                    }
                    Err(PopError::Empty) => backoff(&mut spins),
                }
            }
            checksum
        });
        let mut spins = 0;
        for mut value in 0..STRESS_ITEMS {
            while let Err(PushError::Full(back)) = producer.push(value) {
                value = back;
                backoff(&mut spins);
            }
            spins = 0;
        }
        let expected =
            (0..STRESS_ITEMS).fold(0u64, |c, v| c.wrapping_add(v.wrapping_mul(0x9E37_79B9)));
        assert_eq!(reader.join().unwrap(), expected);
    }

    #[test]
    fn two_threads_batches_of_frames() {
        type Frame = [u64; 8]; // 64 bytes, one cache line
        let (mut producer, mut consumer) = Ring::<Frame>::new(256);
        let reader = std::thread::spawn(move || {
            let mut expected = 0u64;
            let mut checksum = 0u64;
            let mut spins = 0;
            while expected < STRESS_ITEMS {
                let mut batch = consumer.read_batch(37);
                if batch.len() == 0 {
                    backoff(&mut spins);
                    continue;
                }
                spins = 0;
                while let Some(frame) = batch.next_with(|frame| *frame) {
                    assert_eq!(frame[0], expected);
                    assert_eq!(frame[7], !expected, "frame torn");
                    checksum = checksum.wrapping_add(frame[0]);
                    expected += 1;
                }
            }
            checksum
        });
        let mut next = 0u64;
        let mut spins = 0;
        while next < STRESS_ITEMS {
            let want = (STRESS_ITEMS - next).min(1 + next % 61) as usize;
            let mut batch = producer.write_batch(want);
            if batch.remaining() == 0 {
                drop(batch);
                backoff(&mut spins);
                continue;
            }
            spins = 0;
            while batch
                .push_with(|frame| {
                    frame[0] = next;
                    frame[7] = !next;
                })
                .is_ok()
            {
                next += 1;
            }
        }
        let expected = (0..STRESS_ITEMS).fold(0u64, |c, v| c.wrapping_add(v));
        assert_eq!(reader.join().unwrap(), expected);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sync::{hint, thread};

    /// Pushes `items` in order, waiting (which loom sees as a yield) whenever the ring is full.
    fn push_all(producer: &mut Producer<u32>, items: &[u32]) {
        for &item in items {
            let mut item = item;
            while let Err(PushError::Full(back)) = producer.push(item) {
                item = back;
                hint::spin_loop();
            }
        }
    }

    #[test]
    fn loom_two_slots_three_items_in_order() {
        loom::model(|| {
            let (mut producer, mut consumer) = Ring::<u32>::new(2);
            let writer = thread::spawn(move || push_all(&mut producer, &[1, 2, 3]));
            let mut got = Vec::new();
            while got.len() < 3 {
                match consumer.pop() {
                    Ok(value) => got.push(value),
                    Err(PopError::Empty) => hint::spin_loop(),
                }
            }
            assert_eq!(got, [1, 2, 3]);
            writer.join().unwrap();
        });
    }

    #[test]
    fn loom_batches_three_items_in_order() {
        loom::model(|| {
            let (mut producer, mut consumer) = Ring::<u32>::new(2);
            let writer = thread::spawn(move || {
                let items = [1, 2, 3];
                let mut sent = 0;
                while sent < items.len() {
                    match producer.push_slice(&items[sent..]) {
                        0 => hint::spin_loop(),
                        n => sent += n,
                    }
                }
            });
            let mut got = Vec::new();
            while got.len() < 3 {
                let batch = consumer.read_batch(2);
                if batch.len() == 0 {
                    drop(batch);
                    hint::spin_loop();
                } else {
                    got.extend(batch);
                }
            }
            assert_eq!(got, [1, 2, 3]);
            writer.join().unwrap();
        });
    }

    #[test]
    fn loom_staged_items_arrive_in_order_only_once_published() {
        loom::model(|| {
            let (mut producer, mut consumer) = Ring::<u32>::new(2);
            let writer = thread::spawn(move || {
                // Two staged then published, then a third through a full ring.
                producer.stage(1).unwrap();
                producer.stage(2).unwrap();
                producer.publish_staged();
                let mut item = 3;
                while let Err(PushError::Full(back)) = producer.stage(item) {
                    item = back;
                    hint::spin_loop();
                }
                producer.publish_staged();
            });
            let mut got = Vec::new();
            while got.len() < 3 {
                match consumer.pop() {
                    Ok(value) => got.push(value),
                    Err(PopError::Empty) => hint::spin_loop(),
                }
            }
            assert_eq!(got, [1, 2, 3]);
            writer.join().unwrap();
        });
    }

    #[test]
    fn loom_in_place_frames_are_not_torn() {
        loom::model(|| {
            let (mut producer, mut consumer) = Ring::<[u32; 2]>::new(2);
            let writer = thread::spawn(move || {
                for tag in 1..=3u32 {
                    let mut batch = producer.write_batch(1);
                    while batch
                        .push_with(|frame| {
                            frame[0] = tag;
                            frame[1] = tag;
                        })
                        .is_err()
                    {
                        drop(batch);
                        hint::spin_loop();
                        batch = producer.write_batch(1);
                    }
                }
            });
            let mut got = Vec::new();
            while got.len() < 3 {
                let mut batch = consumer.read_batch(2);
                let mut took = false;
                loop {
                    // A look one ahead, as the book stage's prefetch takes it: never torn,
                    // and the frame the batch then hands out.
                    let ahead = batch.peek_with(1, |frame| *frame);
                    let Some(frame) = batch.next_with(|frame| *frame) else {
                        break;
                    };
                    assert_eq!(frame[0], frame[1]);
                    if let Some(next) = ahead {
                        assert_eq!(next, [frame[0] + 1; 2]);
                    }
                    got.push(frame[0]);
                    took = true;
                }
                drop(batch);
                if !took {
                    hint::spin_loop();
                }
            }
            assert_eq!(got, [1, 2, 3]);
            writer.join().unwrap();
        });
    }

    #[test]
    fn loom_push_with_zeroes_ahead_without_racing_the_reader() {
        // `push_with` zeroes the next free slot right after publishing, while the consumer may
        // be reading the slot just published: loom checks the two never touch one cell at once,
        // and the consumer checks each frame is the filled word on all-zero bytes.
        loom::model(|| {
            let (mut producer, mut consumer) = Ring::<[u32; 2]>::new(2);
            let writer = thread::spawn(move || {
                for tag in 1..=3u32 {
                    let mut fill = move |frame: &mut [u32; 2]| frame[1] = tag;
                    while let Err(PushError::Full(back)) = producer.push_with(fill) {
                        fill = back;
                        hint::spin_loop();
                    }
                }
            });
            let mut got = Vec::new();
            while got.len() < 3 {
                match consumer.pop_with(|frame| *frame) {
                    Ok(frame) => {
                        assert_eq!(frame[0], 0, "a frame not zeroed before its fill");
                        got.push(frame[1]);
                    }
                    Err(PopError::Empty) => hint::spin_loop(),
                }
            }
            assert_eq!(got, [1, 2, 3]);
            writer.join().unwrap();
        });
    }

    #[test]
    fn loom_leftover_items_dropped_once() {
        // loom reports a leaked `loom::sync::Arc`, so an item the ring fails to drop fails the
        // test, and a double drop trips loom's reference counting.
        loom::model(|| {
            let shared = Arc::new(());
            let (mut producer, mut consumer) = Ring::<Arc<()>>::new(2);
            let item = Arc::clone(&shared);
            let writer = thread::spawn(move || {
                let _ = producer.push(item);
                let _ = producer.push(Arc::new(()));
            });
            drop(consumer.pop());
            drop(consumer);
            writer.join().unwrap();
            assert_eq!(Arc::strong_count(&shared), 1);
        });
    }
}
