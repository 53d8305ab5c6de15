//! The layered-retry chain model: a deterministic model, in abstract rounds, of a request
//! chain whose every layer retries on its own, against one dependency that loses capacity
//! for a while. It shows how retries multiply the load on a dependency that is already
//! short, how that looks different from real demand in the counters (edge rate, distinct
//! request ids, call multiplier, success ratio), and what each cut in the retry allowance
//! costs in dropped requests and saves in recovery time.
//!
//! Nothing in it is random, so its tables are the same on every run; they are printed by
//! `cargo run -p ticklane-bench --release --bin storm_model`.

use std::collections::HashSet;
use std::ops::RangeInclusive;

/// Demand and capacity over the rounds.
#[derive(Clone, Debug, PartialEq)]
pub struct ChainParams {
    /// Layers in the chain, each retrying on its own.
    pub layers: u32,
    /// Attempts allowed per layer (1: no retries).
    pub attempts: u32,
    /// Rounds between one attempt and the next.
    pub spacing: u64,
    /// Calls the dependency serves per round, outside the fault.
    pub capacity: u64,
    /// New requests per round, outside the surge.
    pub demand: f64,
    /// Rounds of the event window: the fault (capacity cut) or the surge (demand raised).
    pub window: RangeInclusive<u64>,
    /// Capacity inside the window, when the event is a fault.
    pub fault_capacity: Option<u64>,
    /// Demand inside the window, when the event is a surge of real demand.
    pub surge_demand: Option<f64>,
    /// Rounds to run.
    pub rounds: u64,
}

impl Default for ChainParams {
    /// The model's defaults: 3 layers × 3 attempts, 4 rounds apart, capacity 12, demand 4,
    /// capacity 1 in rounds 101 … 160, 400 rounds.
    fn default() -> Self {
        ChainParams {
            layers: 3,
            attempts: 3,
            spacing: 4,
            capacity: 12,
            demand: 4.0,
            window: 101..=160,
            fault_capacity: Some(1),
            surge_demand: None,
            rounds: 400,
        }
    }
}

impl ChainParams {
    /// Run 1 of the model: real demand growth (8 a round in the window), no fault.
    pub fn real_demand_growth(&self) -> Self {
        ChainParams {
            fault_capacity: None,
            surge_demand: Some(self.demand * 2.0),
            ..self.clone()
        }
    }

    /// Run 3 of the model: no retries (one attempt per layer).
    pub fn no_retries(&self) -> Self {
        ChainParams {
            attempts: 1,
            ..self.clone()
        }
    }

    fn capacity_at(&self, t: u64) -> u64 {
        match self.fault_capacity {
            Some(c) if self.window.contains(&t) => c,
            _ => self.capacity,
        }
    }

    fn demand_at(&self, t: u64) -> f64 {
        match self.surge_demand {
            Some(d) if self.window.contains(&t) => d,
            _ => self.demand,
        }
    }
}

/// What one round recorded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Round {
    /// New requests appended (edge arrivals).
    pub edge: u64,
    /// Calls the dependency saw (the requests due this round).
    pub calls: u64,
    /// Calls served.
    pub successes: u64,
    /// Requests dropped because every allowance was spent.
    pub drops: u64,
    /// The ids the dependency saw this round.
    pub seen: Vec<u64>,
}

/// One active request.
struct Request {
    id: u64,
    /// One attempt counter per layer, first layer first.
    counters: Vec<u32>,
    next_call: u64,
}

impl Request {
    /// Advances the counters like an odometer from the deepest layer; `false` when the carry
    /// runs past the first layer (every allowance spent).
    fn retry(&mut self, attempts: u32) -> bool {
        for counter in self.counters.iter_mut().rev() {
            *counter += 1;
            if *counter < attempts {
                return true;
            }
            *counter = 0;
        }
        false
    }
}

/// Runs the model; element `t - 1` is round `t`.
pub fn run_chain(p: &ChainParams) -> Vec<Round> {
    let layers = p.layers.max(1) as usize;
    let mut active: Vec<Request> = Vec::new();
    let mut next_id = 1u64;
    let mut accumulator = 0.0f64;
    let mut rounds = Vec::with_capacity(p.rounds as usize);
    for t in 1..=p.rounds {
        let mut round = Round::default();
        accumulator += p.demand_at(t);
        while accumulator >= 1.0 {
            accumulator -= 1.0;
            active.push(Request {
                id: next_id,
                counters: vec![0; layers],
                next_call: t,
            });
            next_id += 1;
            round.edge += 1;
        }
        let mut tokens = p.capacity_at(t);
        active.retain_mut(|r| {
            if r.next_call != t {
                return true;
            }
            round.calls += 1;
            round.seen.push(r.id);
            if tokens > 0 {
                tokens -= 1;
                round.successes += 1;
                return false;
            }
            if r.retry(p.attempts) {
                r.next_call = t + p.spacing;
                true
            } else {
                round.drops += 1;
                false
            }
        });
        rounds.push(round);
    }
    rounds
}

/// The summaries of a window of rounds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WindowSummary {
    /// Edge arrivals per round.
    pub edge_rate: f64,
    /// Calls per round.
    pub call_rate: f64,
    /// Distinct ids seen in the window, per round.
    pub unique_rate: f64,
    /// Calls over distinct ids (0 if none).
    pub call_multiplier: f64,
    /// Successes over calls (0 if no calls).
    pub success_ratio: f64,
    /// Requests dropped.
    pub drops: u64,
}

/// Summarises rounds `window` (1-based, inclusive) of a run.
pub fn summarize(rounds: &[Round], window: RangeInclusive<u64>) -> WindowSummary {
    let (a, b) = (*window.start(), *window.end());
    let picked = &rounds[(a - 1) as usize..b as usize];
    let n = (b - a + 1) as f64;
    let edge: u64 = picked.iter().map(|r| r.edge).sum();
    let calls: u64 = picked.iter().map(|r| r.calls).sum();
    let successes: u64 = picked.iter().map(|r| r.successes).sum();
    let drops: u64 = picked.iter().map(|r| r.drops).sum();
    let distinct: HashSet<u64> = picked.iter().flat_map(|r| r.seen.iter().copied()).collect();
    let ratio = |x: u64, y: usize| if y == 0 { 0.0 } else { x as f64 / y as f64 };
    WindowSummary {
        edge_rate: edge as f64 / n,
        call_rate: calls as f64 / n,
        unique_rate: distinct.len() as f64 / n,
        call_multiplier: ratio(calls, distinct.len()),
        success_ratio: ratio(successes, calls as usize),
        drops,
    }
}

/// Rounds after the window until the call rate is back to at most 1.1 × the baseline (the
/// call rate before the window): the first round `t` after the window with calls at most
/// that gives `t - window end`; `None` if it never comes back within the run.
pub fn recovery_time(rounds: &[Round], window: &RangeInclusive<u64>) -> Option<u64> {
    let baseline = summarize(rounds, 1..=window.start() - 1).call_rate;
    let end = *window.end();
    (end + 1..=rounds.len() as u64)
        .find(|&t| rounds[(t - 1) as usize].calls as f64 <= 1.1 * baseline)
        .map(|t| t - end)
}

/// The peak calls in one round, and its ratio to the baseline call rate.
pub fn peak_calls(rounds: &[Round], window: &RangeInclusive<u64>) -> (u64, f64) {
    let baseline = summarize(rounds, 1..=window.start() - 1).call_rate;
    let peak = rounds.iter().map(|r| r.calls).max().unwrap_or(0);
    let ratio = if baseline > 0.0 {
        peak as f64 / baseline
    } else {
        0.0
    };
    (peak, ratio)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn never_served(layers: u32, attempts: u32) -> ChainParams {
        ChainParams {
            layers,
            attempts,
            spacing: 4,
            capacity: 0,
            demand: 0.0,
            window: 1..=1,
            fault_capacity: None,
            surge_demand: Some(1.0),
            rounds: 200,
        }
    }

    #[test]
    fn a_request_never_served_is_called_attempts_to_the_layers_then_dropped() {
        // One request (demand 1 in round 1 only), a dependency that serves nothing: the
        // odometer gives attempts^layers calls, `spacing` rounds apart, then one drop.
        for (layers, attempts, calls) in [(3, 3, 27), (2, 2, 4), (1, 3, 3), (3, 1, 1)] {
            let rounds = run_chain(&never_served(layers, attempts));
            let call_rounds: Vec<u64> = (1..=200u64)
                .filter(|&t| rounds[(t - 1) as usize].calls > 0)
                .collect();
            assert_eq!(call_rounds.len() as u64, calls, "{layers} × {attempts}");
            let expected: Vec<u64> = (0..calls).map(|k| 1 + 4 * k).collect();
            assert_eq!(call_rounds, expected);
            assert_eq!(rounds.iter().map(|r| r.drops).sum::<u64>(), 1);
            assert!(rounds.iter().all(|r| r.seen.iter().all(|&id| id == 1)));
        }
    }

    #[test]
    fn with_capacity_to_spare_every_call_succeeds_once() {
        let p = ChainParams {
            fault_capacity: None,
            ..ChainParams::default()
        };
        let rounds = run_chain(&p);
        let s = summarize(&rounds, 1..=400);
        assert_eq!(s.edge_rate, 4.0);
        assert_eq!(s.call_rate, 4.0);
        assert_eq!(s.unique_rate, 4.0);
        assert_eq!(s.call_multiplier, 1.0);
        assert_eq!(s.success_ratio, 1.0);
        assert_eq!(s.drops, 0);
        assert_eq!(recovery_time(&rounds, &p.window), Some(1));
    }

    #[test]
    fn real_demand_raises_distinct_ids_with_the_calls() {
        let p = ChainParams::default().real_demand_growth();
        let rounds = run_chain(&p);
        let during = summarize(&rounds, 101..=160);
        assert_eq!(during.edge_rate, 8.0);
        assert_eq!(during.call_rate, 8.0);
        assert_eq!(during.call_multiplier, 1.0);
        assert_eq!(during.success_ratio, 1.0);
    }

    #[test]
    fn a_fault_with_retries_multiplies_the_calls_and_no_retries_does_not() {
        let p = ChainParams::default();
        let storm = run_chain(&p);
        let plain = run_chain(&p.no_retries());
        let s = summarize(&storm, 101..=160);
        let n = summarize(&plain, 101..=160);
        // Without retries each request is called once: the multiplier stays 1, the calls
        // equal the edge rate, and one call a round is served.
        assert_eq!(n.call_multiplier, 1.0);
        assert_eq!(n.call_rate, 4.0);
        assert_eq!(n.success_ratio, 0.25);
        // With retries the dependency sees several calls per request, for the same edge
        // rate, and serves the same one call a round.
        assert_eq!(s.edge_rate, 4.0);
        assert!(s.call_multiplier > 2.0, "{s:?}");
        assert!(s.call_rate > n.call_rate * 2.0, "{s:?}");
        assert!((s.call_rate * s.success_ratio - 1.0).abs() < 1e-9);
        // Recovery: the retries keep calling after the capacity is back; no retries
        // recovers at once.
        assert_eq!(recovery_time(&plain, &p.window), Some(1));
        assert!(recovery_time(&storm, &p.window).unwrap_or(u64::MAX) > 1);
    }
}
