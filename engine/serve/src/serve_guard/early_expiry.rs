//! A cached derived answer refreshed early, at random, before it expires (XFetch).

use ticklane_feed::rng::SplitMix64;

#[derive(Clone, Debug)]
struct Entry<V> {
    value: V,
    /// How long computing `value` took, in ns.
    delta_ns: u64,
    /// When `value` expires, in the caller's ns.
    expiry_ns: u64,
}

/// What [`EarlyExpiry::lookup`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup<'a, V> {
    /// The cached value; no refresh is due for this caller.
    Fresh(&'a V),
    /// This caller should recompute: the cache is empty or expired (`None`), or this caller
    /// drew an early refresh (`Some`: the old value, still within its lifetime, may be
    /// served meanwhile).
    Refresh(Option<&'a V>),
}

/// What [`EarlyExpiry::get_or_refresh`] returns: the value to answer with, and whether this
/// call computed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fetched<'a, V> {
    /// The value to answer with.
    pub value: &'a V,
    /// Whether this call computed it.
    pub recomputed: bool,
}

/// Probabilistic early expiration (XFetch: Vattani, Chierichetti, Lowenstein, "Optimal
/// Probabilistic Cache Stampede Prevention", VLDB 2015): an expensive derived answer (the
/// symbol list) is cached with `delta`, the time its computation took, and a caller
/// recomputes it when
///
/// `now − delta · beta · ln(u) ≥ expiry`, with `u` uniform in (0, 1]
///
/// so the chance of an early refresh rises as expiry nears and with how long the answer takes
/// to compute; a refresh is certain at expiry and (with `u ≥ 2^-53`) impossible more than
/// `36.8 · delta · beta` before it. Many caches filled at the same moment (engines restarted
/// together, clients that cache the list) do not all recompute in the same second. `beta`
/// = 1 is the paper's optimum; above 1 refreshes earlier; 0 is a plain time-to-live.
///
/// All times are nanoseconds of the caller's clock, handed in: nothing here reads a clock.
///
/// ```
/// use ticklane_serve::serve_guard::{EarlyExpiry, Lookup};
/// use ticklane_feed::rng::SplitMix64;
///
/// let s = 1_000_000_000u64;
/// let mut cache = EarlyExpiry::new(60 * s, 1.0);
/// let mut rng = SplitMix64::new(1);
/// assert_eq!(cache.lookup(0, &mut rng), Lookup::Refresh(None));
/// cache.store(vec!["AAPL", "MSFT"], 0, s / 2); // took half a second
/// assert!(matches!(cache.lookup(s, &mut rng), Lookup::Fresh(_)));
/// assert!(matches!(cache.lookup(61 * s, &mut rng), Lookup::Refresh(None)));
/// ```
#[derive(Clone, Debug)]
pub struct EarlyExpiry<V> {
    entry: Option<Entry<V>>,
    /// How long a value lives after its computation ends, in ns.
    ttl_ns: u64,
    /// How eagerly to refresh early; finite and at least 0.
    beta: f64,
}

/// XFetch's rule: whether a caller at `now_ns` holding draw `u` (in (0, 1]) recomputes a
/// value that took `delta_ns` to compute and expires at `expiry_ns`.
pub fn refresh_due(now_ns: u64, delta_ns: u64, beta: f64, expiry_ns: u64, u: f64) -> bool {
    if now_ns >= expiry_ns {
        return true;
    }
    // `now − delta·beta·ln(u) ≥ expiry` as `delta·beta·(−ln u) ≥ expiry − now`, so the
    // comparison happens at the scale of the gap, not of the clock (where f64 rounds).
    let early_ns = delta_ns as f64 * beta * -u.ln();
    early_ns >= (expiry_ns - now_ns) as f64
}

/// `u` uniform in (0, 1], in steps of 2^-53 (never 0, so `ln u` is finite).
pub fn draw_unit(rng: &mut SplitMix64) -> f64 {
    ((rng.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
}

impl<V> EarlyExpiry<V> {
    /// An empty cache whose values live `ttl_ns` after their computation ends, refreshed
    /// early with eagerness `beta` (negative or not finite is read as 1).
    pub fn new(ttl_ns: u64, beta: f64) -> Self {
        EarlyExpiry {
            entry: None,
            ttl_ns,
            beta: if beta.is_finite() && beta >= 0.0 {
                beta
            } else {
                1.0
            },
        }
    }

    /// The eagerness in use.
    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// Whether a caller at `now_ns` with draw `u` recomputes (always, when empty).
    pub fn should_refresh(&self, now_ns: u64, u: f64) -> bool {
        self.entry
            .as_ref()
            .is_none_or(|e| refresh_due(now_ns, e.delta_ns, self.beta, e.expiry_ns, u))
    }

    /// The cached value for a caller at `now_ns`, or the news that this caller should
    /// recompute it (one draw from `rng`).
    pub fn lookup(&self, now_ns: u64, rng: &mut SplitMix64) -> Lookup<'_, V> {
        let Some(e) = &self.entry else {
            return Lookup::Refresh(None);
        };
        if now_ns >= e.expiry_ns {
            Lookup::Refresh(None)
        } else if refresh_due(now_ns, e.delta_ns, self.beta, e.expiry_ns, draw_unit(rng)) {
            Lookup::Refresh(Some(&e.value))
        } else {
            Lookup::Fresh(&e.value)
        }
    }

    /// Stores `value`, computed from `started_ns` to `finished_ns`: it expires `ttl` after
    /// `finished_ns`.
    pub fn store(&mut self, value: V, started_ns: u64, finished_ns: u64) {
        self.entry = Some(Entry {
            value,
            delta_ns: finished_ns.saturating_sub(started_ns),
            expiry_ns: finished_ns.saturating_add(self.ttl_ns),
        });
    }

    /// When the cached value expires (`None` when empty).
    pub fn expiry_ns(&self) -> Option<u64> {
        self.entry.as_ref().map(|e| e.expiry_ns)
    }

    /// The cached value, recomputed first when [`lookup`](Self::lookup) says so: `clock` is
    /// read before and after `compute` to measure its delta.
    pub fn get_or_refresh(
        &mut self,
        clock: &mut impl FnMut() -> u64,
        rng: &mut SplitMix64,
        compute: impl FnOnce() -> V,
    ) -> Fetched<'_, V> {
        let now = clock();
        let recomputed = matches!(self.lookup(now, rng), Lookup::Refresh(_));
        if recomputed {
            let value = compute();
            let finished = clock();
            self.store(value, now, finished);
        }
        let entry = self
            .entry
            .as_ref()
            .expect("invariant: stored above when it was empty");
        Fetched {
            value: &entry.value,
            recomputed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const S: u64 = 1_000 * MS;

    #[test]
    fn never_refreshes_far_from_expiry() {
        // The largest early margin is delta·beta·(−ln 2^-53) = 36.74 · delta · beta.
        let delta = 10 * MS;
        let expiry = 3_600 * S;
        let mut rng = SplitMix64::new(11);
        let far = expiry - 37 * delta;
        for i in 0..200_000u64 {
            let now = far - (i % 1_000) * MS;
            assert!(!refresh_due(now, delta, 1.0, expiry, draw_unit(&mut rng)));
        }
        // Even the smallest u there is.
        let smallest = 1.0 / (1u64 << 53) as f64;
        assert!(!refresh_due(far, delta, 1.0, expiry, smallest));
        assert!(refresh_due(
            expiry - 36 * delta,
            delta,
            1.0,
            expiry,
            smallest
        ));
    }

    #[test]
    fn always_refreshes_at_or_after_expiry() {
        let mut rng = SplitMix64::new(12);
        let expiry = 60 * S;
        for now in [expiry, expiry + 1, expiry + S, u64::MAX] {
            assert!(refresh_due(now, 10 * MS, 1.0, expiry, 1.0)); // −ln 1 = 0: no margin
            for _ in 0..10_000 {
                assert!(refresh_due(now, 10 * MS, 1.0, expiry, draw_unit(&mut rng)));
            }
        }
        // Just before expiry, u = 1 never refreshes early.
        assert!(!refresh_due(expiry - 1, 10 * MS, 1.0, expiry, 1.0));
    }

    #[test]
    fn the_unit_draw_is_in_the_half_open_interval() {
        let mut rng = SplitMix64::new(13);
        let mut below_half = 0;
        for _ in 0..100_000 {
            let u = draw_unit(&mut rng);
            assert!(u > 0.0 && u <= 1.0);
            below_half += usize::from(u < 0.5);
        }
        assert!((49_000..=51_000).contains(&below_half), "{below_half}");
    }

    /// `n` clients each cache the same answer (taking `delta` to compute) at time 0 and look
    /// it up every `poll` ns; the number that refresh at each poll, until everyone has.
    fn refreshes_per_poll(n: usize, delta: u64, beta: f64, ttl: u64, poll: u64) -> Vec<u64> {
        let mut rng = SplitMix64::new(2_024);
        let mut caches: Vec<EarlyExpiry<u32>> = (0..n)
            .map(|_| {
                let mut c = EarlyExpiry::new(ttl, beta);
                c.store(0, 0, delta);
                c
            })
            .collect();
        let mut refreshed = vec![false; n];
        let mut per_poll = Vec::new();
        let mut t = 0;
        while refreshed.iter().any(|r| !r) {
            t += poll;
            let mut this_poll = 0;
            for (cache, done) in caches.iter_mut().zip(&mut refreshed) {
                if !*done && !matches!(cache.lookup(t, &mut rng), Lookup::Fresh(_)) {
                    *done = true;
                    this_poll += 1;
                }
            }
            per_poll.push(this_poll);
        }
        per_poll
    }

    #[test]
    fn early_refreshes_of_many_clients_spread_out_before_expiry() {
        let (n, delta, ttl, poll) = (2_000, S, 60 * S, 100 * MS);
        let expiry = delta + ttl;
        let expiry_poll = (expiry / poll) as usize; // 1-based index of the poll at expiry
                                                    // The control: a plain time-to-live (beta 0) refreshes all of them at one poll.
        let plain = refreshes_per_poll(n, delta, 0.0, ttl, poll);
        assert_eq!(plain.len(), expiry_poll);
        assert_eq!(plain[expiry_poll - 1], n as u64);
        // XFetch with beta 1.
        let spread = refreshes_per_poll(n, delta, 1.0, ttl, poll);
        assert!(
            spread.len() <= expiry_poll,
            "someone refreshed after expiry"
        );
        let peak = *spread.iter().max().expect("polls");
        assert!(peak < n as u64 / 5, "peak {peak} of {n} at one poll");
        // The oracle, from the formula on paper: a poll at gap g before expiry refreshes with
        // probability P(−ln u ≥ g / (delta·beta)) = exp(−g / delta), so the expected count at
        // poll k is n · (survivors before k) · p_k. Compared per second of polls.
        let mut survive = 1.0f64;
        let mut expected = vec![0.0f64; expiry_poll];
        for (k, slot) in expected.iter_mut().enumerate() {
            let t = (k as u64 + 1) * poll;
            let p = if t >= expiry {
                1.0
            } else {
                (-((expiry - t) as f64) / delta as f64).exp()
            };
            *slot = n as f64 * survive * p;
            survive *= 1.0 - p;
        }
        let per_second = |v: &[f64]| -> Vec<f64> { v.chunks(10).map(|c| c.iter().sum()).collect() };
        let got: Vec<f64> = spread.iter().map(|&c| c as f64).collect();
        let (got, want) = (per_second(&got), per_second(&expected));
        let mut seconds_with_refreshes = 0;
        for (i, w) in want.iter().enumerate() {
            let g = got.get(i).copied().unwrap_or(0.0);
            let tolerance = 5.0 * w.sqrt() + 5.0;
            assert!(
                (g - w).abs() <= tolerance,
                "second {i}: got {g}, expected {w:.1}"
            );
            seconds_with_refreshes += usize::from(g > 0.0);
        }
        // Spread over several seconds, not one.
        assert!(seconds_with_refreshes >= 4, "{got:?}");
    }

    #[test]
    fn get_or_refresh_measures_delta_with_the_injected_clock() {
        let mut now = 0u64;
        let mut clock = || {
            now += 250 * MS; // every read advances the clock a quarter second
            now
        };
        let mut rng = SplitMix64::new(3);
        let mut cache = EarlyExpiry::new(10 * S, 1.0);
        let first = cache.get_or_refresh(&mut clock, &mut rng, || 41);
        assert_eq!((*first.value, first.recomputed), (41, true));
        // Read at 250 ms and 500 ms: delta 250 ms, expiry 10.5 s.
        assert_eq!(cache.expiry_ns(), Some(10 * S + 500 * MS));
        let again = cache.get_or_refresh(&mut clock, &mut rng, || 42);
        assert_eq!((*again.value, again.recomputed), (41, false));
        assert_eq!(EarlyExpiry::<u8>::new(1, f64::NAN).beta(), 1.0);
    }
}
