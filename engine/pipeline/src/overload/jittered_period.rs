//! Periodic work at a jittered period: each period is drawn uniform in
//! `base / 2 .. 3 * base / 2`, so that engines started together (and the readers that watch
//! their heartbeats) do not fall into step. The mean period stays `base`.

use ticklane_feed::rng::SplitMix64;

/// Says when periodic work is due, each period drawn afresh.
#[derive(Debug)]
pub struct JitteredPeriod {
    base_ns: u64,
    /// When the work was last due (ns, the caller's clock); 0 before the first time.
    last_ns: u64,
    /// The period running now (ns).
    period_ns: u64,
    rng: SplitMix64,
}

impl JitteredPeriod {
    /// Periods around `base_ns` (at least 2 ns), drawn from `seed`.
    pub fn new(base_ns: u64, seed: u64) -> Self {
        let base_ns = base_ns.max(2);
        let mut rng = SplitMix64::new(seed);
        let period_ns = draw(base_ns, &mut rng);
        JitteredPeriod {
            base_ns,
            last_ns: 0,
            period_ns,
            rng,
        }
    }

    /// Whether the work is due at `now_ns`; if so, the next period starts now.
    #[inline]
    pub fn due(&mut self, now_ns: u64) -> bool {
        if now_ns.saturating_sub(self.last_ns) < self.period_ns {
            return false;
        }
        self.last_ns = now_ns;
        self.period_ns = draw(self.base_ns, &mut self.rng);
        true
    }

    /// The period running now (ns).
    pub fn period_ns(&self) -> u64 {
        self.period_ns
    }
}

fn draw(base_ns: u64, rng: &mut SplitMix64) -> u64 {
    base_ns / 2 + rng.below(base_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_stay_within_half_and_one_and_a_half_base_and_vary() {
        let mut p = JitteredPeriod::new(10_000_000, 7);
        let mut periods = Vec::new();
        let mut now = 0u64;
        for _ in 0..1_000 {
            let period = p.period_ns();
            assert!((5_000_000..15_000_000).contains(&period), "{period}");
            periods.push(period);
            // Not due one nanosecond early; due exactly on time.
            assert!(!p.due(now + period - 1));
            assert!(p.due(now + period));
            now += period;
        }
        let mean = periods.iter().sum::<u64>() / periods.len() as u64;
        assert!((9_000_000..11_000_000).contains(&mean), "mean {mean}");
        periods.sort_unstable();
        periods.dedup();
        assert!(periods.len() > 900, "jittered, not fixed");
    }

    #[test]
    fn two_seeds_fall_out_of_step() {
        let a = JitteredPeriod::new(10_000_000, 1).period_ns();
        let b = JitteredPeriod::new(10_000_000, 2).period_ns();
        assert_ne!(a, b);
    }
}
