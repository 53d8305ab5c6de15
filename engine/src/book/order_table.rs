//! The live-order table: every resting order by reference, in memory allocated once.
//!
//! Open addressing with linear probing and backward-shift deletion (no tombstones, so probe
//! chains never rot over a day). The slot of a reference keeps the low bits of the reference
//! itself and folds the high bits in with a multiply: Nasdaq hands out references nearly in
//! sequence, so consecutive orders land in consecutive slots (a direct index in effect,
//! cache- and TLB-friendly), while references that share their low bits are still spread.
//! The table holds at most half as many orders as it has slots, so probe chains stay short.

use bytemuck::{Pod, Zeroable};
use ticklane_feed::itch::{Locate, OrderRef, Price};

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

/// One slot. `shares == 0` marks an empty slot: a live order always has shares left, so no
/// reference (0 included) needs to be reserved as a marker.
#[derive(Clone, Copy, Pod, Zeroable)]
#[repr(C)]
struct Slot {
    order_ref: u64,
    price: u32,
    shares: u32,
    locate: u16,
    /// 0 bid, 1 ask.
    side: u8,
    _pad: [u8; 5],
}

const _: () = assert!(core::mem::size_of::<Slot>() == 24);

impl Slot {
    #[inline(always)]
    fn is_empty(&self) -> bool {
        self.shares == 0
    }

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

/// Every live order by reference, with a fixed capacity chosen at start-up.
///
/// Lookups, inserts and removals allocate nothing.
pub struct OrderTable {
    /// Length is a power of two, at least twice `capacity`.
    slots: Vec<Slot>,
    /// `slots.len() - 1`.
    mask: usize,
    /// `log2(slots.len())`.
    shift: u32,
    /// Most live orders allowed.
    capacity: usize,
    /// Live orders now; never above `capacity`.
    len: usize,
}

impl OrderTable {
    /// A table for up to `capacity` live orders. The slots are zeroed memory from the
    /// allocator, so pages the day never touches are never made resident.
    ///
    /// # Panics
    ///
    /// If `capacity` is 0 or the table would not fit the address space.
    pub fn with_capacity(capacity: usize) -> Self {
        assert!(capacity > 0, "order capacity must be at least 1");
        let slot_count = capacity
            .checked_mul(2)
            .and_then(usize::checked_next_power_of_two)
            .expect("invariant: order capacity fits the address space");
        OrderTable {
            slots: bytemuck::zeroed_vec(slot_count),
            mask: slot_count - 1,
            shift: slot_count.trailing_zeros(),
            capacity,
            len: 0,
        }
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
        self.capacity
    }

    #[inline(always)]
    fn home(&self, order_ref: OrderRef) -> usize {
        let r = order_ref.0;
        // Low bits kept as they are (sequential refs, sequential slots); the high bits are
        // mixed in so refs that differ only above the mask do not share a home.
        let folded = r ^ (r >> self.shift).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        folded as usize & self.mask
    }

    /// The slot index holding `order_ref`, if it is live.
    #[inline(always)]
    fn find(&self, order_ref: OrderRef) -> Option<usize> {
        let mut i = self.home(order_ref);
        loop {
            let slot = &self.slots[i];
            if slot.is_empty() {
                return None;
            }
            if slot.order_ref == order_ref.0 {
                return Some(i);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// The live order with this reference.
    #[inline]
    pub fn get(&self, order_ref: OrderRef) -> Option<Order> {
        self.find(order_ref).map(|i| self.slots[i].order())
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
    #[inline]
    pub fn insert(&mut self, order_ref: OrderRef, order: Order) -> Result<(), InsertError> {
        debug_assert!(order.shares > 0, "a live order has shares");
        let mut i = self.home(order_ref);
        loop {
            let slot = &self.slots[i];
            if slot.is_empty() {
                break;
            }
            if slot.order_ref == order_ref.0 {
                return Err(InsertError::AlreadyLive);
            }
            i = (i + 1) & self.mask;
        }
        if self.len == self.capacity {
            return Err(InsertError::Full);
        }
        self.slots[i] = Slot {
            order_ref: order_ref.0,
            price: order.price.0,
            shares: order.shares,
            locate: order.locate.0,
            side: u8::from(order.side == Side::Ask),
            _pad: [0; 5],
        };
        self.len += 1;
        Ok(())
    }

    /// Takes up to `shares` off a live order: returns the order as it was and the shares
    /// actually taken (clamped to what was left). An order whose shares reach 0 leaves.
    #[inline]
    pub fn reduce(&mut self, order_ref: OrderRef, shares: u32) -> Option<(Order, u32)> {
        let i = self.find(order_ref)?;
        let before = self.slots[i].order();
        let taken = shares.min(before.shares);
        if taken == before.shares {
            self.remove_at(i);
        } else {
            self.slots[i].shares -= taken;
        }
        Some((before, taken))
    }

    /// Removes a live order and returns it.
    #[inline]
    pub fn remove(&mut self, order_ref: OrderRef) -> Option<Order> {
        let i = self.find(order_ref)?;
        let order = self.slots[i].order();
        self.remove_at(i);
        Some(order)
    }

    /// Backward-shift deletion: pull later members of the probe chain into the hole so that
    /// every live order stays reachable from its home without tombstones.
    #[inline]
    fn remove_at(&mut self, mut hole: usize) {
        let mut i = hole;
        loop {
            i = (i + 1) & self.mask;
            let slot = self.slots[i];
            if slot.is_empty() {
                break;
            }
            let home = self.home(OrderRef(slot.order_ref));
            // The slot may move into the hole only if its home is not cyclically in
            // (hole, i]; otherwise moving it would put it before its home.
            let dist_home = i.wrapping_sub(home) & self.mask;
            let dist_hole = i.wrapping_sub(hole) & self.mask;
            if dist_home >= dist_hole {
                self.slots[hole] = slot;
                hole = i;
            }
        }
        self.slots[hole] = Slot::zeroed();
        self.len -= 1;
    }

    /// Every live order, in table order (for checks and final reports, not the hot path).
    pub fn iter(&self) -> impl Iterator<Item = (OrderRef, Order)> + '_ {
        self.slots
            .iter()
            .filter(|s| !s.is_empty())
            .map(|s| (OrderRef(s.order_ref), s.order()))
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
        let mut t = OrderTable::with_capacity(4);
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
        let mut t = OrderTable::with_capacity(2);
        t.insert(OrderRef(1), order(1)).expect("room");
        t.insert(OrderRef(2), order(1)).expect("room");
        assert_eq!(t.insert(OrderRef(3), order(1)), Err(InsertError::Full));
        assert!(t.remove(OrderRef(1)).is_some());
        assert_eq!(t.insert(OrderRef(3), order(1)), Ok(()));
    }

    #[test]
    fn colliding_refs_survive_deletion_in_any_order() {
        // Refs equal modulo the slot count share a home without the high-bit fold; with it,
        // and with wrap-around at the end of the table, chains still resolve.
        let mut t = OrderTable::with_capacity(8);
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
            let mut t = OrderTable::with_capacity(16);
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
