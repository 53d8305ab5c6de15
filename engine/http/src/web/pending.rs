//! One browser's owed updates: at most one per book, the latest (conflation by symbol).
//!
//! The server never queues a book's JSON for a browser; it queues the *slot* whose book
//! changed, and encodes the book from the snapshot when the browser can take it. However
//! often a book changes while a browser is slow, it owes that browser one update, read
//! when sent, so the newest state goes out and the queue is bounded by the number of books.
#![forbid(unsafe_code)]

use std::collections::VecDeque;

/// The slots a browser is owed, each once, in the order they first became owed.
#[derive(Debug, Default)]
pub struct PendingBooks {
    /// `owed[slot]`: whether `slot` is in `order`.
    owed: Vec<bool>,
    /// Owed slots, oldest first; never holds a slot twice.
    order: VecDeque<usize>,
    /// Marks that found the slot already owed: updates a slow browser never saw.
    conflated: u64,
}

impl PendingBooks {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Owes `slot`'s latest state; a slot already owed stays where it is, counted as
    /// conflated.
    pub fn mark(&mut self, slot: usize) {
        if slot >= self.owed.len() {
            self.owed.resize(slot + 1, false);
        }
        if self.owed[slot] {
            self.conflated += 1;
        } else {
            self.owed[slot] = true;
            self.order.push_back(slot);
        }
    }

    /// The oldest owed slot, no longer owed.
    pub fn pop(&mut self) -> Option<usize> {
        let slot = self.order.pop_front()?;
        self.owed[slot] = false;
        Some(slot)
    }

    /// Owes nothing.
    pub fn clear(&mut self) {
        for slot in self.order.drain(..) {
            self.owed[slot] = false;
        }
    }

    /// Slots owed now.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether nothing is owed.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Updates folded into one already owed, so far.
    pub fn conflated(&self) -> u64 {
        self.conflated
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_book_marked_many_times_is_owed_once_in_first_marked_order() {
        let mut p = PendingBooks::new();
        for _ in 0..1000 {
            p.mark(7);
            p.mark(2);
        }
        p.mark(40);
        assert_eq!(p.len(), 3);
        assert_eq!(p.conflated(), 1998);
        assert_eq!(
            [p.pop(), p.pop(), p.pop(), p.pop()],
            [Some(7), Some(2), Some(40), None]
        );
        // Popped slots can be owed again.
        p.mark(2);
        assert_eq!(p.pop(), Some(2));
    }

    #[test]
    fn the_set_is_bounded_by_the_books_under_a_seeded_random_stream() {
        // A slow browser: a million marks over 50 books, a pop now and then.
        let mut p = PendingBooks::new();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut popped = 0u64;
        for i in 0..1_000_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            p.mark((x % 50) as usize);
            assert!(p.len() <= 50);
            if i % 1000 == 0 && p.pop().is_some() {
                popped += 1;
            }
        }
        assert_eq!(p.conflated() + p.len() as u64 + popped, 1_000_000);
        p.clear();
        assert!(p.is_empty());
        assert_eq!(p.pop(), None);
    }
}
