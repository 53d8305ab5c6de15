//! Per-client counts (open connections, recent attempts) in a fixed-size table.

/// Slots searched for a key: a key lives in one of the `PROBES` slots after its hash, so a
/// lookup costs at most `PROBES` comparisons however full the table is.
const PROBES: usize = 8;

/// What the table holds for one client (an IP address, an account).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    key: u128,
    /// Connections (or sessions) the client holds now.
    open: u32,
    /// Attempts in the fixed window starting at `window_start_ns`.
    attempts: u32,
    window_start_ns: u64,
    /// Last time the client was seen: the eviction order among entries holding nothing.
    last_seen_ns: u64,
}

/// Why [`PeerTable::attempt`] refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeerRefusal {
    /// The client made `limit` attempts in this window already.
    TooManyAttempts,
    /// The client holds `limit` connections already.
    TooManyOpen,
    /// Every slot the client could use belongs to a client holding connections: the table is
    /// too small for the connections allowed (size it at twice the connection limit).
    TableFull,
}

/// Limits a [`PeerTable`] enforces per client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerLimits {
    /// Connections one client may hold at once.
    pub max_open: u32,
    /// Attempts one client may make per window, refused ones included: a client in a tight
    /// reconnect loop is refused here, before it can take a token of the shared budget.
    pub max_attempts: u32,
    /// The attempt window in nanoseconds (a fixed window, restarted by the first attempt
    /// after it ends).
    pub window_ns: u64,
}

/// Counts per client in a fixed number of slots, allocated once: memory is bounded however
/// many distinct clients (or forged source addresses) arrive. A client keeps its slot while it
/// holds a connection; among the others, the one seen longest ago is forgotten first when a
/// new client needs a slot (it loses its attempt count, which costs it nothing it could abuse:
/// to flush a slot a client needs as many fresh identities as the table has slots).
///
/// Keys are `u128`: an IPv6 address whole (IPv4 mapped into it), or an account's hash. Slots
/// are chosen by a keyed hash, so an attacker choosing addresses cannot aim them at one slot
/// range without knowing the seed.
///
/// ```
/// use ticklane_serve::serve_guard::{PeerLimits, PeerRefusal, PeerTable};
///
/// let limits = PeerLimits { max_open: 2, max_attempts: 10, window_ns: 1_000_000_000 };
/// let mut table = PeerTable::new(64, limits, 1);
/// assert_eq!(table.attempt(7, 0), Ok(()));
/// assert_eq!(table.attempt(7, 0), Ok(()));
/// assert_eq!(table.attempt(7, 0), Err(PeerRefusal::TooManyOpen));
/// table.release(7);
/// assert_eq!(table.attempt(7, 0), Ok(()));
/// ```
#[derive(Clone, Debug)]
pub struct PeerTable {
    slots: Box<[Option<Entry>]>,
    limits: PeerLimits,
    seed: u64,
}

impl PeerTable {
    /// A table of `capacity` slots (at least 8, the slots a key may live in; rounded up to a
    /// power of two), enforcing `limits`, its slot hash keyed by `seed`.
    pub fn new(capacity: usize, limits: PeerLimits, seed: u64) -> Self {
        let capacity = capacity.max(PROBES).next_power_of_two();
        PeerTable {
            slots: vec![None; capacity].into_boxed_slice(),
            limits,
            seed,
        }
    }

    /// Slots in the table.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// The limits enforced.
    pub fn limits(&self) -> PeerLimits {
        self.limits
    }

    fn home(&self, key: u128) -> usize {
        let folded = (key as u64) ^ ((key >> 64) as u64).rotate_left(29) ^ self.seed;
        let mut z = folded.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) as usize & (self.slots.len() - 1)
    }

    fn probe(&self, key: u128) -> impl Iterator<Item = usize> {
        let home = self.home(key);
        let mask = self.slots.len() - 1;
        (0..PROBES).map(move |i| (home + i) & mask)
    }

    fn find(&self, key: u128) -> Option<usize> {
        self.probe(key)
            .find(|&i| self.slots[i].is_some_and(|e| e.key == key))
    }

    /// The slot a new key takes: an empty one, else the one holding nothing seen longest ago.
    fn claim(&mut self, key: u128, now_ns: u64) -> Option<usize> {
        let fresh = Entry {
            key,
            open: 0,
            attempts: 0,
            window_start_ns: now_ns,
            last_seen_ns: now_ns,
        };
        let slot = self
            .probe(key)
            .find(|&i| self.slots[i].is_none())
            .or_else(|| {
                self.probe(key)
                    .filter(|&i| self.slots[i].is_some_and(|e| e.open == 0))
                    .min_by_key(|&i| self.slots[i].map_or(0, |e| e.last_seen_ns))
            })?;
        self.slots[slot] = Some(fresh);
        Some(slot)
    }

    /// Counts an attempt by `key` at `now_ns` and, if it is within the limits, one more
    /// connection it holds (give it back with [`release`](Self::release)). A refused attempt
    /// still counts towards the attempt limit.
    ///
    /// # Errors
    ///
    /// The limit the attempt hit; nothing is held then.
    pub fn attempt(&mut self, key: u128, now_ns: u64) -> Result<(), PeerRefusal> {
        let limits = self.limits;
        let slot = match self.find(key) {
            Some(slot) => slot,
            None => self.claim(key, now_ns).ok_or(PeerRefusal::TableFull)?,
        };
        let entry = self.slots[slot]
            .as_mut()
            .expect("invariant: find and claim return occupied slots");
        entry.last_seen_ns = entry.last_seen_ns.max(now_ns);
        if now_ns.saturating_sub(entry.window_start_ns) >= limits.window_ns {
            entry.window_start_ns = now_ns;
            entry.attempts = 0;
        }
        entry.attempts = entry.attempts.saturating_add(1);
        if entry.attempts > limits.max_attempts {
            return Err(PeerRefusal::TooManyAttempts);
        }
        if entry.open >= limits.max_open {
            return Err(PeerRefusal::TooManyOpen);
        }
        entry.open += 1;
        Ok(())
    }

    /// Gives back one connection held by `key` (from an [`attempt`](Self::attempt) that was
    /// allowed); a release with nothing held is ignored.
    pub fn release(&mut self, key: u128) {
        if let Some(slot) = self.find(key) {
            if let Some(entry) = self.slots[slot].as_mut() {
                entry.open = entry.open.saturating_sub(1);
            }
        }
    }

    /// Connections `key` holds now (0 for a key the table does not hold).
    pub fn open(&self, key: u128) -> u32 {
        self.find(key)
            .and_then(|slot| self.slots[slot])
            .map_or(0, |e| e.open)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn limits(max_open: u32, max_attempts: u32) -> PeerLimits {
        PeerLimits {
            max_open,
            max_attempts,
            window_ns: S,
        }
    }

    #[test]
    fn a_reconnect_loop_is_refused_by_attempts_and_the_window_forgives_it() {
        let mut t = PeerTable::new(64, limits(100, 5), 3);
        // Connect and drop at once, 20 times in one second: the first 5 are allowed.
        let allowed = (0..20)
            .filter(|i| {
                let ok = t.attempt(9, i * 1_000_000).is_ok();
                if ok {
                    t.release(9);
                }
                ok
            })
            .count();
        assert_eq!(allowed, 5);
        assert_eq!(t.attempt(9, S - 1), Err(PeerRefusal::TooManyAttempts));
        // Another client is not affected.
        assert_eq!(t.attempt(10, S - 1), Ok(()));
        // The window began at the first attempt (0): a new one starts at 1 s.
        assert_eq!(t.attempt(9, S), Ok(()));
    }

    #[test]
    fn open_connections_are_capped_per_client() {
        let mut t = PeerTable::new(64, limits(3, 100), 3);
        for _ in 0..3 {
            assert_eq!(t.attempt(1, 0), Ok(()));
        }
        assert_eq!(t.attempt(1, 0), Err(PeerRefusal::TooManyOpen));
        assert_eq!(t.open(1), 3);
        t.release(1);
        t.release(1);
        assert_eq!(t.open(1), 1);
        t.release(77); // never seen: ignored
        assert_eq!(t.open(77), 0);
    }

    #[test]
    fn memory_is_bounded_and_idle_clients_are_evicted_oldest_first() {
        let mut t = PeerTable::new(16, limits(1, 1), 5);
        assert_eq!(t.capacity(), 16);
        // A million distinct clients, each connecting once and leaving: never a refusal,
        // the table never grows (it cannot: it is a boxed slice).
        for key in 0..1_000_000u128 {
            assert_eq!(t.attempt(key, key as u64), Ok(()), "key {key}");
            t.release(key);
        }
        // Clients holding connections keep their slots: fill every slot with holders, then a
        // newcomer whose probe window is all holders is refused as TableFull, not let in
        // uncounted.
        let mut t = PeerTable::new(8, limits(1, 100), 5);
        for key in 0..8u128 {
            assert_eq!(t.attempt(key, 0), Ok(()));
        }
        assert_eq!(t.attempt(8, 1), Err(PeerRefusal::TableFull));
        // One holder leaves: its slot is the one evicted, and the holder's count is kept.
        t.release(3);
        assert_eq!(t.attempt(8, 2), Ok(()));
        assert_eq!(t.open(3), 0);
        for key in [0u128, 1, 2, 4, 5, 6, 7] {
            assert_eq!(t.open(key), 1);
        }
    }

    #[test]
    fn the_oldest_idle_entry_goes_first() {
        let mut t = PeerTable::new(8, limits(1, 100), 5);
        for key in 0..8u128 {
            assert_eq!(t.attempt(key, 100 + key as u64), Ok(()));
            t.release(key);
        }
        // Key 0 seen at 100, the oldest: a newcomer takes its slot, the rest keep counts.
        assert_eq!(t.attempt(8, 200), Ok(()));
        assert_eq!(t.find(0), None);
        assert!((1..8u128).all(|k| t.find(k).is_some()));
    }
}
