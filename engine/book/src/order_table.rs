//! The live-order table: every resting order by reference, in memory allocated once.
//!
//! A bucket array of 4-byte heads, indexed by the reference, points into a pool of order
//! records chained per bucket. The bucket of a reference keeps the reference's low bits and
//! folds the high bits in with a multiply: Nasdaq hands out references nearly in sequence, so
//! consecutive orders land in consecutive buckets and chains stay one long (a direct index in
//! effect), while references that share their low bits are still spread. Pool records are
//! recycled last-freed-first, so the records in use stay few and hot in cache, and the memory
//! a day touches grows with its live orders and (4 bytes each) its reference range, not with
//! the configured capacity: first-touch page faults were a third of a replay's time when the
//! records themselves were indexed by reference.

use std::io;
use std::mem::size_of;

use bytemuck::{Pod, Zeroable};
use ticklane_itch::{Locate, OrderRef, Price};

use super::prefetch::prefetch;
use super::zeroed_pages::ZeroedPages;

/// Which side of the book an order rests on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// Buy orders: the bid.
    Bid,
    /// Sell orders: the ask (offer).
    Ask,
}

impl Side {
    /// `B` is a bid, `S` an ask; any other byte is no side.
    #[inline]
    pub fn from_wire(byte: u8) -> Option<Side> {
        match byte {
            b'B' => Some(Side::Bid),
            b'S' => Some(Side::Ask),
            _ => None,
        }
    }

    /// The ITCH side byte: `B` or `S`.
    #[inline]
    pub fn wire(self) -> u8 {
        match self {
            Side::Bid => b'B',
            Side::Ask => b'S',
        }
    }

    /// The letter the CSV outputs use: `B` or `S`.
    pub fn letter(self) -> char {
        match self {
            Side::Bid => 'B',
            Side::Ask => 'S',
        }
    }
}

/// A resting order, as the table stores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Order {
    /// The stock locate the order was added under.
    pub locate: Locate,
    /// Its side.
    pub side: Side,
    /// Its limit price.
    pub price: Price,
    /// Shares still open; always at least 1 while the order is in the table.
    pub shares: u32,
}

/// A link to a pool record: record `i` is stored as `i + 1`, so zeroed memory is "none".
type Link = u32;
const NONE: Link = 0;

/// One pool record: a live order, or a free record whose `next` links the free list.
#[derive(Clone, Copy, Pod, Zeroable)]
#[repr(C)]
struct Record {
    order_ref: u64,
    /// Next record in the same bucket (live) or in the free list (free).
    next: Link,
    price: u32,
    shares: u32,
    locate: u16,
    /// 0 bid, 1 ask.
    side: u8,
    _pad: u8,
}

const _: () = assert!(core::mem::size_of::<Record>() == 24);

impl Record {
    #[inline(always)]
    fn order(&self) -> Order {
        Order {
            locate: Locate(self.locate),
            side: if self.side == 0 { Side::Bid } else { Side::Ask },
            price: Price(self.price),
            shares: self.shares,
        }
    }
}

/// Why an order could not be inserted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InsertError {
    /// The reference is already live; the table keeps the live order.
    AlreadyLive,
    /// The table holds its capacity of live orders.
    Full,
}

/// Where a live reference sits: its record, and the link that points at it.
#[derive(Clone, Copy)]
struct Found {
    record: usize,
    /// The record before it in the bucket's chain, or `None` if the bucket head points at it.
    before: Option<usize>,
    bucket: usize,
}

/// Every live order by reference, with a fixed capacity chosen at start-up.
///
/// Lookups, inserts and removals allocate nothing.
pub struct OrderTable {
    /// Head link of each bucket; length a power of two, at least twice `capacity`.
    buckets: ZeroedPages<Link>,
    /// `buckets.len() - 1`.
    mask: usize,
    /// `log2(buckets.len())`.
    shift: u32,
    /// `capacity` records.
    records: ZeroedPages<Record>,
    /// Records `0 .. fresh` have been used at least once; the rest were never touched.
    fresh: usize,
    /// Head of the list of freed records.
    free: Link,
    /// Live orders now; never above `capacity`.
    len: usize,
}

/// The bucket of a reference in a table of `mask + 1 == 1 << shift` buckets.
#[inline(always)]
fn bucket_of(order_ref: OrderRef, shift: u32, mask: usize) -> usize {
    let r = order_ref.0;
    // Low bits kept as they are (sequential refs, sequential buckets); the high bits are
    // mixed in so refs that differ only above the mask do not share a bucket.
    let folded = r ^ (r >> shift).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    folded as usize & mask
}

/// Where a live reference sits in tables already viewed as slices (each operation views
/// each table once, so its bounds are known to the compiler across the lookup).
#[inline(always)]
fn find_in(
    shift: u32,
    mask: usize,
    records: &[Record],
    buckets: &[Link],
    order_ref: OrderRef,
) -> Option<Found> {
    let bucket = bucket_of(order_ref, shift, mask);
    let mut link = buckets[bucket];
    let mut before = None;
    while link != NONE {
        let record = link as usize - 1;
        let r = &records[record];
        if r.order_ref == order_ref.0 {
            return Some(Found {
                record,
                before,
                bucket,
            });
        }
        before = Some(record);
        link = r.next;
    }
    None
}

/// Takes a record out of its bucket's chain and pushes it on the free list (whose head is
/// `free`), so the next insert reuses it while it is still in cache.
#[inline(always)]
fn unlink(records: &mut [Record], buckets: &mut [Link], free: &mut Link, found: Found) {
    let next = records[found.record].next;
    match found.before {
        Some(before) => records[before].next = next,
        None => buckets[found.bucket] = next,
    }
    records[found.record] = Record {
        next: *free,
        ..Record::zeroed()
    };
    *free = found.record as Link + 1;
}

impl OrderTable {
    /// A table for up to `capacity` (at least 1, below 2^32) live orders. Its memory is
    /// zeroed pages, made resident only when touched.
    ///
    /// # Errors
    ///
    /// If the table does not fit the address space or cannot be mapped.
    pub fn with_capacity(capacity: usize) -> io::Result<Self> {
        let capacity = capacity.clamp(1, u32::MAX as usize - 1);
        let bucket_count = capacity
            .checked_mul(2)
            .and_then(usize::checked_next_power_of_two)
            .ok_or_else(|| io::Error::other("order capacity overflows the address space"))?;
        Ok(OrderTable {
            buckets: ZeroedPages::new(bucket_count)?,
            mask: bucket_count - 1,
            shift: bucket_count.trailing_zeros(),
            records: ZeroedPages::new(capacity)?,
            fresh: 0,
            free: NONE,
            len: 0,
        })
    }

    /// Live orders now.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no order is live.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Most live orders the table accepts.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.records.len()
    }

    #[inline(always)]
    fn find(&self, order_ref: OrderRef) -> Option<Found> {
        let (records, buckets) = (self.records.as_slice(), self.buckets.as_slice());
        find_in(self.shift, self.mask, records, buckets, order_ref)
    }

    /// Prefetch stage 1 for a message that names `order_ref`: its bucket's head.
    #[inline(always)]
    pub fn prefetch_bucket(&self, order_ref: OrderRef) {
        let bucket = bucket_of(order_ref, self.shift, self.mask);
        prefetch(self.buckets.address_of(bucket));
    }

    /// The first record of `order_ref`'s bucket (chains are nearly always one long, so the
    /// order's own), as a link: what prefetch stage 2 reads once stage 1's line is in.
    #[inline(always)]
    pub fn head_of(&self, order_ref: OrderRef) -> u32 {
        let bucket = bucket_of(order_ref, self.shift, self.mask);
        self.buckets.get(bucket).unwrap_or(NONE)
    }

    /// Prefetch stage 2: the record `head_of` gave.
    #[inline(always)]
    pub fn prefetch_record(&self, head: u32) {
        if head != NONE {
            let record = self.records.address_of(head as usize - 1);
            // A record is 24 bytes: a quarter of them straddle two lines.
            prefetch(record);
            prefetch(record.cast::<u8>().wrapping_add(size_of::<Record>() - 1));
        }
    }

    /// The live order with this reference if it is the record `head` links to: what a
    /// later prefetch stage reads once stage 2's line is in.
    #[inline(always)]
    pub fn order_at(&self, head: u32, order_ref: OrderRef) -> Option<Order> {
        let record = self.records.get((head as usize).wrapping_sub(1))?;
        (record.order_ref == order_ref.0).then(|| record.order())
    }

    /// The live order with this reference.
    #[inline]
    pub fn get(&self, order_ref: OrderRef) -> Option<Order> {
        self.find(order_ref)
            .map(|f| self.records.as_slice()[f.record].order())
    }

    /// Adds a live order.
    ///
    /// # Errors
    ///
    /// [`InsertError::AlreadyLive`] if the reference is live (nothing changes),
    /// [`InsertError::Full`] if `capacity` orders are live.
    ///
    /// # Panics
    ///
    /// In debug builds, if `order.shares` is 0 (the caller rejects such adds).
    #[inline(always)]
    pub fn insert(&mut self, order_ref: OrderRef, order: Order) -> Result<(), InsertError> {
        debug_assert!(order.shares > 0, "a live order has shares");
        let (records, buckets) = (self.records.as_mut_slice(), self.buckets.as_mut_slice());
        if find_in(self.shift, self.mask, records, buckets, order_ref).is_some() {
            return Err(InsertError::AlreadyLive);
        }
        let record = if self.free != NONE {
            let record = self.free as usize - 1;
            self.free = records[record].next;
            record
        } else if self.fresh < records.len() {
            self.fresh += 1;
            self.fresh - 1
        } else {
            return Err(InsertError::Full);
        };
        let head = &mut buckets[bucket_of(order_ref, self.shift, self.mask)];
        records[record] = Record {
            order_ref: order_ref.0,
            next: *head,
            price: order.price.0,
            shares: order.shares,
            locate: order.locate.0,
            side: u8::from(order.side == Side::Ask),
            _pad: 0,
        };
        *head = record as Link + 1;
        self.len += 1;
        Ok(())
    }

    /// Takes up to `shares` off a live order: returns the order as it was and the shares
    /// actually taken (clamped to what was left). An order whose shares reach 0 leaves.
    #[inline(always)]
    pub fn reduce(&mut self, order_ref: OrderRef, shares: u32) -> Option<(Order, u32)> {
        let (records, buckets) = (self.records.as_mut_slice(), self.buckets.as_mut_slice());
        let found = find_in(self.shift, self.mask, records, buckets, order_ref)?;
        let before = records[found.record].order();
        let taken = shares.min(before.shares);
        if taken == before.shares {
            unlink(records, buckets, &mut self.free, found);
            self.len -= 1;
        } else {
            records[found.record].shares -= taken;
        }
        Some((before, taken))
    }

    /// Removes a live order and returns it.
    #[inline(always)]
    pub fn remove(&mut self, order_ref: OrderRef) -> Option<Order> {
        let (records, buckets) = (self.records.as_mut_slice(), self.buckets.as_mut_slice());
        let found = find_in(self.shift, self.mask, records, buckets, order_ref)?;
        let order = records[found.record].order();
        unlink(records, buckets, &mut self.free, found);
        self.len -= 1;
        Some(order)
    }

    /// Every live order (for checks and final reports, not the hot path).
    pub fn iter(&self) -> impl Iterator<Item = (OrderRef, Order)> + '_ {
        let records = self.records.as_slice();
        self.buckets.as_slice().iter().flat_map(move |&head| {
            let mut link = head;
            std::iter::from_fn(move || {
                (link != NONE).then(|| {
                    let r = &records[link as usize - 1];
                    link = r.next;
                    (OrderRef(r.order_ref), r.order())
                })
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn order(shares: u32) -> Order {
        Order {
            locate: Locate(1),
            side: Side::Bid,
            price: Price(100),
            shares,
        }
    }

    #[test]
    fn insert_get_reduce_remove() {
        let mut t = OrderTable::with_capacity(4).expect("map");
        assert_eq!(t.insert(OrderRef(0), order(10)), Ok(()));
        assert_eq!(
            t.insert(OrderRef(0), order(5)),
            Err(InsertError::AlreadyLive)
        );
        assert_eq!(t.get(OrderRef(0)).map(|o| o.shares), Some(10));
        assert_eq!(t.reduce(OrderRef(0), 4).map(|(_, n)| n), Some(4));
        assert_eq!(t.get(OrderRef(0)).map(|o| o.shares), Some(6));
        assert_eq!(
            t.reduce(OrderRef(0), 99).map(|(_, n)| n),
            Some(6),
            "clamped"
        );
        assert!(t.get(OrderRef(0)).is_none(), "left at zero shares");
        assert!(t.is_empty());
    }

    #[test]
    fn full_is_an_error_not_a_crash() {
        let mut t = OrderTable::with_capacity(2).expect("map");
        t.insert(OrderRef(1), order(1)).expect("room");
        t.insert(OrderRef(2), order(1)).expect("room");
        assert_eq!(t.insert(OrderRef(3), order(1)), Err(InsertError::Full));
        assert!(t.remove(OrderRef(1)).is_some());
        assert_eq!(t.insert(OrderRef(3), order(1)), Ok(()));
    }

    #[test]
    fn colliding_refs_survive_deletion_in_any_order() {
        // Refs equal modulo the bucket count would share a bucket without the high-bit fold;
        // with it or without it, chains must resolve.
        let mut t = OrderTable::with_capacity(8).expect("map");
        let refs: Vec<u64> = (0..8).map(|k| 15 + (k << 4)).collect();
        for &r in &refs {
            t.insert(OrderRef(r), order(1)).expect("room");
        }
        for &r in refs.iter().step_by(2) {
            assert!(t.remove(OrderRef(r)).is_some());
        }
        for (k, &r) in refs.iter().enumerate() {
            assert_eq!(t.get(OrderRef(r)).is_some(), k % 2 == 1, "ref {r}");
        }
    }

    proptest! {
        #[test]
        fn behaves_like_a_hash_map(ops in prop::collection::vec((0u8..3, 0u64..40, 1u32..5), 1..400)) {
            let mut t = OrderTable::with_capacity(16).expect("map");
            let mut model: HashMap<u64, u32> = HashMap::new();
            for (op, r, n) in ops {
                match op {
                    0 => {
                        let res = t.insert(OrderRef(r), order(n));
                        let expect = if model.contains_key(&r) {
                            Err(InsertError::AlreadyLive)
                        } else if model.len() == 16 {
                            Err(InsertError::Full)
                        } else {
                            model.insert(r, n);
                            Ok(())
                        };
                        prop_assert_eq!(res, expect);
                    }
                    1 => {
                        let got = t.reduce(OrderRef(r), n).map(|(o, taken)| (o.shares, taken));
                        let expect = model.get(&r).copied().map(|left| (left, n.min(left)));
                        if let Some((left, taken)) = expect {
                            if taken == left { model.remove(&r); } else { model.insert(r, left - taken); }
                        }
                        prop_assert_eq!(got, expect);
                    }
                    _ => {
                        prop_assert_eq!(t.remove(OrderRef(r)).map(|o| o.shares), model.remove(&r));
                    }
                }
                prop_assert_eq!(t.len(), model.len());
            }
            for (r, n) in &model {
                prop_assert_eq!(t.get(OrderRef(*r)).map(|o| o.shares), Some(*n));
            }
        }
    }
}
