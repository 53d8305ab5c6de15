//! The set of instruments whose latest state is not yet published, in two orders at once:
//! by latest change (newest first, for overload service) and by first unpublished change
//! (oldest first, for in-order service and for "how far behind is the engine").
//!
//! Both orders are intrusive doubly linked lists threaded through one array indexed by
//! locate, allocated once: marking, popping and removing are O(1) and allocate nothing.
#![forbid(unsafe_code)]

use ticklane_feed::itch::{Locate, Nanos};

/// Every locate a 16-bit field can name.
const LOCATES: usize = 1 << 16;
/// The end of a list.
const NIL: u32 = u32::MAX;

/// The pending publication of one instrument: what its latest change was and how long it
/// has been waiting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirtyEntry {
    /// The instrument.
    pub locate: Locate,
    /// When the oldest change not yet published arrived (ns, the caller's clock).
    pub first_ns: u64,
    /// When the latest change arrived (ns, the caller's clock).
    pub last_ns: u64,
    /// Feed sequence of the latest change.
    pub feed_seq: u64,
    /// ITCH timestamp of the latest change.
    pub exchange_ts: Nanos,
    /// Changes folded into this one publication (1 = none conflated).
    pub changes: u32,
    /// Whether the instrument's snapshot slot has been marked behind for this entry.
    pub flagged: bool,
}

#[derive(Clone, Copy, Debug)]
struct Node {
    /// Neighbour toward the newest change (recency list).
    newer: u32,
    /// Neighbour toward the oldest latest-change (recency list).
    older: u32,
    /// Neighbour toward later first changes (age list).
    younger: u32,
    /// Neighbour toward earlier first changes (age list).
    elder: u32,
    linked: bool,
    flagged: bool,
    changes: u32,
    first_ns: u64,
    last_ns: u64,
    feed_seq: u64,
    exchange_ts: u64,
}

const EMPTY: Node = Node {
    newer: NIL,
    older: NIL,
    younger: NIL,
    elder: NIL,
    linked: false,
    flagged: false,
    changes: 0,
    first_ns: 0,
    last_ns: 0,
    feed_seq: 0,
    exchange_ts: 0,
};

/// Dirty instruments, newest change first, each at most once.
///
/// Invariants: a node is `linked` exactly when it is on both lists; `newest`/`oldest` are
/// the ends of the recency list and `youngest`/`eldest` of the age list; `len` counts the
/// linked nodes. Along the age list `first_ns` never decreases from eldest to youngest, as
/// long as the caller marks with non-decreasing times.
///
/// # Examples
///
/// ```
/// use ticklane_pipeline::overload::DirtySet;
/// use ticklane_feed::itch::{Locate, Nanos};
///
/// let mut dirty = DirtySet::new();
/// dirty.mark(Locate(1), 100, 1, Nanos(0));
/// dirty.mark(Locate(2), 200, 2, Nanos(0));
/// dirty.mark(Locate(1), 300, 3, Nanos(0)); // conflated: one entry, the latest change
/// assert_eq!(dirty.len(), 2);
/// let newest = dirty.pop_newest().unwrap();
/// assert_eq!((newest.locate, newest.first_ns, newest.last_ns, newest.changes), (Locate(1), 100, 300, 2));
/// assert_eq!(dirty.pop_newest().unwrap().locate, Locate(2));
/// assert!(dirty.is_empty());
/// ```
pub struct DirtySet {
    nodes: Box<[Node]>,
    newest: u32,
    oldest: u32,
    youngest: u32,
    eldest: u32,
    len: usize,
}

impl Default for DirtySet {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for DirtySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirtySet").field("len", &self.len).finish()
    }
}

impl DirtySet {
    /// An empty set with room for every locate (about 3.5 MiB, allocated here once).
    pub fn new() -> Self {
        DirtySet {
            nodes: vec![EMPTY; LOCATES].into_boxed_slice(),
            newest: NIL,
            oldest: NIL,
            youngest: NIL,
            eldest: NIL,
            len: 0,
        }
    }

    /// Instruments pending.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is pending.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `locate` is pending.
    #[inline(always)]
    pub fn contains(&self, locate: Locate) -> bool {
        self.nodes[usize::from(locate.0)].linked
    }

    /// Records a change of `locate` that arrived at `now_ns`: a new entry at the front, or
    /// the existing one moved to the front with its latest change replaced. Returns `true`
    /// if the instrument was already pending (the change was conflated into it).
    #[inline]
    pub fn mark(&mut self, locate: Locate, now_ns: u64, feed_seq: u64, exchange_ts: Nanos) -> bool {
        let i = u32::from(locate.0);
        let node = &mut self.nodes[i as usize];
        node.last_ns = now_ns;
        node.feed_seq = feed_seq;
        node.exchange_ts = exchange_ts.0;
        if node.linked {
            node.changes = node.changes.saturating_add(1);
            self.unlink_recency(i);
            self.push_newest(i);
            true
        } else {
            node.linked = true;
            node.flagged = false;
            node.changes = 1;
            node.first_ns = now_ns;
            self.push_newest(i);
            self.push_youngest(i);
            self.len += 1;
            false
        }
    }

    /// Marks every entry not yet flagged as flagged, calling `flag` with each. Entries join
    /// at the young end of the age list and keep their place, so the unflagged ones are the
    /// youngest: the walk stops at the first flagged entry, and over a run every entry is
    /// visited once, however often this is called.
    #[inline]
    pub fn flag_new(&mut self, mut flag: impl FnMut(&DirtyEntry)) {
        let mut i = self.youngest;
        while i != NIL && !self.nodes[i as usize].flagged {
            self.nodes[i as usize].flagged = true;
            flag(&self.entry(i));
            i = self.nodes[i as usize].elder;
        }
    }

    /// Takes the entry whose latest change is the newest.
    #[inline]
    pub fn pop_newest(&mut self) -> Option<DirtyEntry> {
        let i = self.newest;
        (i != NIL).then(|| self.take(i))
    }

    /// Takes the entry whose first unpublished change is the oldest (in-order service).
    #[inline]
    pub fn pop_eldest(&mut self) -> Option<DirtyEntry> {
        let i = self.eldest;
        (i != NIL).then(|| self.take(i))
    }

    /// Takes `locate`'s entry, if it is pending (its state was just published otherwise).
    #[inline]
    pub fn remove(&mut self, locate: Locate) -> Option<DirtyEntry> {
        let i = u32::from(locate.0);
        self.nodes[i as usize].linked.then(|| self.take(i))
    }

    /// The arrival time of the oldest change not yet published, if any (ns).
    #[inline]
    pub fn eldest_first_ns(&self) -> Option<u64> {
        (self.eldest != NIL).then(|| self.nodes[self.eldest as usize].first_ns)
    }

    /// The pending entries, newest change first, without taking them.
    pub fn iter_newest_first(&self) -> impl Iterator<Item = DirtyEntry> + '_ {
        let mut i = self.newest;
        std::iter::from_fn(move || {
            if i == NIL {
                return None;
            }
            let entry = self.entry(i);
            i = self.nodes[i as usize].older;
            Some(entry)
        })
    }

    fn entry(&self, i: u32) -> DirtyEntry {
        let node = &self.nodes[i as usize];
        DirtyEntry {
            locate: Locate(i as u16),
            first_ns: node.first_ns,
            last_ns: node.last_ns,
            feed_seq: node.feed_seq,
            exchange_ts: Nanos(node.exchange_ts),
            changes: node.changes,
            flagged: node.flagged,
        }
    }

    fn take(&mut self, i: u32) -> DirtyEntry {
        debug_assert!(
            self.nodes[i as usize].linked,
            "invariant: only linked nodes are taken"
        );
        let entry = self.entry(i);
        self.unlink_recency(i);
        self.unlink_age(i);
        let node = &mut self.nodes[i as usize];
        node.linked = false;
        node.flagged = false;
        self.len -= 1;
        entry
    }

    fn push_newest(&mut self, i: u32) {
        let old_newest = self.newest;
        let node = &mut self.nodes[i as usize];
        node.newer = NIL;
        node.older = old_newest;
        if old_newest == NIL {
            self.oldest = i;
        } else {
            self.nodes[old_newest as usize].newer = i;
        }
        self.newest = i;
    }

    fn push_youngest(&mut self, i: u32) {
        let old_youngest = self.youngest;
        let node = &mut self.nodes[i as usize];
        node.younger = NIL;
        node.elder = old_youngest;
        if old_youngest == NIL {
            self.eldest = i;
        } else {
            self.nodes[old_youngest as usize].younger = i;
        }
        self.youngest = i;
    }

    fn unlink_recency(&mut self, i: u32) {
        let Node { newer, older, .. } = self.nodes[i as usize];
        match newer {
            NIL => self.newest = older,
            n => self.nodes[n as usize].older = older,
        }
        match older {
            NIL => self.oldest = newer,
            o => self.nodes[o as usize].newer = newer,
        }
    }

    fn unlink_age(&mut self, i: u32) {
        let Node { younger, elder, .. } = self.nodes[i as usize];
        match younger {
            NIL => self.youngest = elder,
            y => self.nodes[y as usize].elder = elder,
        }
        match elder {
            NIL => self.eldest = younger,
            e => self.nodes[e as usize].younger = younger,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn mark(set: &mut DirtySet, locate: u16, t: u64) -> bool {
        set.mark(Locate(locate), t, t * 10, Nanos(t * 100))
    }

    #[test]
    fn newest_first_keeps_exactly_the_latest_change() {
        let mut set = DirtySet::new();
        assert!(!mark(&mut set, 5, 1));
        assert!(!mark(&mut set, 6, 2));
        assert!(!mark(&mut set, 7, 3));
        assert!(mark(&mut set, 5, 4));
        assert!(mark(&mut set, 6, 5));
        let order: Vec<_> = set.iter_newest_first().map(|e| e.locate.0).collect();
        assert_eq!(order, [6, 5, 7]);
        let e = set.pop_newest().expect("pending");
        assert_eq!(e.locate, Locate(6));
        assert_eq!(
            (e.first_ns, e.last_ns, e.feed_seq, e.exchange_ts),
            (2, 5, 50, Nanos(500))
        );
        assert_eq!(e.changes, 2);
        assert_eq!(set.eldest_first_ns(), Some(1));
        assert_eq!(set.pop_eldest().map(|e| e.locate), Some(Locate(5)));
        assert_eq!(set.eldest_first_ns(), Some(3));
        assert_eq!(set.remove(Locate(7)).map(|e| e.changes), Some(1));
        assert!(set.is_empty());
        assert_eq!(set.pop_newest(), None);
        assert_eq!(set.pop_eldest(), None);
        assert_eq!(set.eldest_first_ns(), None);
    }

    #[test]
    fn flag_new_visits_each_entry_once() {
        let mut set = DirtySet::new();
        for t in 1..=4 {
            mark(&mut set, t as u16, t);
        }
        let mut seen = Vec::new();
        set.flag_new(|e| seen.push(e.locate.0));
        assert_eq!(seen, [4, 3, 2, 1]);
        mark(&mut set, 2, 5); // conflated: keeps its flag and its place in age
        mark(&mut set, 9, 6);
        seen.clear();
        set.flag_new(|e| seen.push(e.locate.0));
        assert_eq!(seen, [9]);
        assert!(set.pop_newest().is_some_and(|e| e.flagged));
    }

    #[test]
    fn agrees_with_a_naive_model_under_a_seeded_mix() {
        // The model: locate -> (first, last, changes); orders by sorting.
        let mut set = DirtySet::new();
        let mut model: BTreeMap<u16, (u64, u64, u32)> = BTreeMap::new();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for t in 1..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let locate = (x % 64) as u16;
            match x % 7 {
                0 => {
                    let got = set
                        .pop_newest()
                        .map(|e| (e.locate.0, e.first_ns, e.last_ns, e.changes));
                    let want = model
                        .iter()
                        .max_by_key(|(_, v)| v.1)
                        .map(|(&k, &v)| (k, v.0, v.1, v.2));
                    assert_eq!(got, want);
                    if let Some((k, ..)) = want {
                        model.remove(&k);
                    }
                }
                1 => {
                    let got = set.pop_eldest().map(|e| e.locate.0);
                    let want = model.iter().min_by_key(|(_, v)| v.0).map(|(&k, _)| k);
                    assert_eq!(got, want);
                    if let Some(k) = want {
                        model.remove(&k);
                    }
                }
                2 => {
                    let got = set.remove(Locate(locate)).map(|e| e.changes);
                    assert_eq!(got, model.remove(&locate).map(|v| v.2));
                }
                _ => {
                    let was = mark(&mut set, locate, t);
                    let entry = model.entry(locate).or_insert((t, t, 0));
                    assert_eq!(was, entry.2 > 0);
                    entry.1 = t;
                    entry.2 += 1;
                }
            }
            assert_eq!(set.len(), model.len());
            assert_eq!(set.eldest_first_ns(), model.values().map(|v| v.0).min());
        }
    }
}
