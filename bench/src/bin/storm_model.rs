//! The layered-retry chain model, printed as tables:
//! real demand growth, a retry storm and no retries, side by side, before, during and after
//! the event; what each run serves during the fault; recovery times and the storm's peak; and
//! the retry allowance (attempts 3, 2, 1) against drops and recovery time.
//!
//! `cargo run --release -p ticklane-bench --bin storm_model -- [--layers 3] [--attempts 3]
//! [--spacing 4] [--capacity 12] [--demand 4] [--fault-capacity 1] [--from 101] [--to 160]
//! [--rounds 400]`

use clap::Parser;
use ticklane_bench::storm_model::{
    peak_calls, recovery_time, run_chain, summarize, ChainParams, Round, WindowSummary,
};

/// The model's parameters; the defaults are the model's own.
#[derive(Parser, Debug)]
#[command(about = "The layered-retry chain model: retries at every layer against retries at one")]
struct Args {
    /// Layers in the chain, each retrying on its own.
    #[arg(long, default_value_t = 3)]
    layers: u32,
    /// Attempts allowed per layer.
    #[arg(long, default_value_t = 3)]
    attempts: u32,
    /// Rounds between one attempt and the next.
    #[arg(long, default_value_t = 4)]
    spacing: u64,
    /// Calls the dependency serves per round.
    #[arg(long, default_value_t = 12)]
    capacity: u64,
    /// New requests per round (doubled in the window for the real-demand run).
    #[arg(long, default_value_t = 4.0)]
    demand: f64,
    /// Capacity during the fault.
    #[arg(long, default_value_t = 1)]
    fault_capacity: u64,
    /// First round of the fault (and of the demand surge).
    #[arg(long, default_value_t = 101)]
    from: u64,
    /// Last round of the fault (and of the demand surge).
    #[arg(long, default_value_t = 160)]
    to: u64,
    /// Rounds to run.
    #[arg(long, default_value_t = 400)]
    rounds: u64,
}

fn main() {
    let a = Args::parse();
    if a.from < 2 || a.to < a.from || a.rounds <= a.to || a.layers == 0 || a.attempts == 0 {
        eprintln!("storm_model: need 2 <= --from <= --to < --rounds, and layers, attempts >= 1");
        std::process::exit(2);
    }
    let storm = ChainParams {
        layers: a.layers,
        attempts: a.attempts,
        spacing: a.spacing,
        capacity: a.capacity,
        demand: a.demand,
        window: a.from..=a.to,
        fault_capacity: Some(a.fault_capacity),
        surge_demand: None,
        rounds: a.rounds,
    };
    println!(
        "layered-retry chain: {} layers x {} attempts, {} rounds apart; capacity {} a round, \
         {} in rounds {}..{}; demand {} a round; {} rounds",
        a.layers,
        a.attempts,
        a.spacing,
        a.capacity,
        a.fault_capacity,
        a.from,
        a.to,
        a.demand,
        a.rounds
    );
    let window = storm.window.clone();
    let windows = [
        ("before", 1..=a.from - 1),
        ("during", window.clone()),
        ("after", a.to + 1..=a.rounds),
    ];
    let runs = [
        ("real demand growth", storm.real_demand_growth()),
        ("retry storm", storm.clone()),
        ("no retries", storm.no_retries()),
    ];
    let results: Vec<(&str, Vec<Round>)> =
        runs.iter().map(|(name, p)| (*name, run_chain(p))).collect();

    println!();
    println!(
        "{:<20} {:<7} {:>9} {:>9} {:>11} {:>10} {:>13}",
        "run", "window", "edge/rnd", "calls/rnd", "unique/rnd", "call mult", "success ratio"
    );
    for (name, rounds) in &results {
        for (label, w) in &windows {
            let s = summarize(rounds, w.clone());
            println!(
                "{:<20} {:<7} {:>9.2} {:>9.2} {:>11.2} {:>10.2} {:>13.3}",
                name,
                label,
                s.edge_rate,
                s.call_rate,
                s.unique_rate,
                s.call_multiplier,
                s.success_ratio
            );
        }
    }

    println!();
    println!(
        "served calls per round during rounds {}..{} (call rate x success ratio):",
        a.from, a.to
    );
    for (name, rounds) in &results {
        let s = summarize(rounds, window.clone());
        println!("  {:<20} {:.2}", name, s.call_rate * s.success_ratio);
    }
    let storm_rounds = &results[1].1;
    let plain_rounds = &results[2].1;
    println!();
    println!(
        "recovery time (rounds after {} until calls <= 1.1 x the rounds 1..{} rate): retry storm {}, no retries {}",
        a.to,
        a.from - 1,
        shown(recovery_time(storm_rounds, &window)),
        shown(recovery_time(plain_rounds, &window)),
    );
    let (peak, ratio) = peak_calls(storm_rounds, &window);
    println!("retry storm's peak: {peak} calls in one round, {ratio:.2} x the baseline call rate");

    println!();
    println!("the retry allowance under the fault:");
    println!(
        "{:>8} {:>16} {:>17} {:>15} {:>14} {:>22}",
        "attempts",
        "calls/rnd during",
        "call mult during",
        "drops after ev.",
        "recovery time",
        "success ratio during"
    );
    for attempts in (1..=a.attempts.max(1)).rev() {
        let p = ChainParams {
            attempts,
            ..storm.clone()
        };
        let rounds = run_chain(&p);
        let during: WindowSummary = summarize(&rounds, window.clone());
        let drops = summarize(&rounds, a.from..=a.rounds).drops;
        println!(
            "{:>8} {:>16.2} {:>17.2} {:>15} {:>14} {:>22.3}",
            attempts,
            during.call_rate,
            during.call_multiplier,
            drops,
            shown(recovery_time(&rounds, &window)),
            during.success_ratio
        );
    }
}

/// A recovery time, or -1 when the calls never came back down (as the model prints it).
fn shown(t: Option<u64>) -> String {
    t.map_or_else(|| "-1".to_string(), |t| t.to_string())
}
