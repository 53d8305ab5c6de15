//! The reconnect storm, simulated: 2,000 clients reconnecting in the same second against the
//! subscriber server's admission policy, with a fixed retry-after and with a jittered one,
//! side by side: per second, attempts, accepted, refused and served, and the time until every
//! client is served.
//!
//! `cargo run --release -p ticklane-bench --bin reconnect_storm -- [--clients 2000]
//! [--accept-rate 500] [--burst 100] [--fixed-ms 3500] [--min-ms 2000] [--max-ms 5000]`

use clap::Parser;
use ticklane_bench::reconnect_storm::{run_storm, StormParams, StormReport, NS_PER_S};
use ticklane_engine::serve_guard::RetryAfter;

/// The storm's settings; the defaults are the server's.
#[derive(Parser, Debug)]
#[command(about = "A reconnect storm against the admission policy, fixed vs jittered retry-after")]
struct Args {
    /// Clients reconnecting in the same second.
    #[arg(long, default_value_t = 2_000)]
    clients: u32,
    /// New connections admitted per second.
    #[arg(long, default_value_t = 500)]
    accept_rate: u32,
    /// Burst of new connections.
    #[arg(long, default_value_t = 100)]
    burst: u32,
    /// The fixed policy's retry-after, in ms.
    #[arg(long, default_value_t = 3_500)]
    fixed_ms: u32,
    /// The jittered policy's shortest retry-after, in ms.
    #[arg(long, default_value_t = 2_000)]
    min_ms: u32,
    /// The jittered policy's longest retry-after, in ms.
    #[arg(long, default_value_t = 5_000)]
    max_ms: u32,
}

fn params(a: &Args, retry_after: RetryAfter) -> StormParams {
    let mut p = StormParams::full(retry_after);
    p.clients = a.clients;
    p.admission.connect.per_second = a.accept_rate;
    p.admission.connect.burst = a.burst;
    p
}

fn served_at(r: &StormReport) -> String {
    r.all_served_ns.map_or_else(
        || format!("not all ({} served)", r.served),
        |ns| format!("{:.2} s", ns as f64 / NS_PER_S as f64),
    )
}

fn main() {
    let a = Args::parse();
    if a.min_ms > a.max_ms || a.clients == 0 {
        eprintln!("reconnect_storm: need --min-ms <= --max-ms and --clients >= 1");
        std::process::exit(2);
    }
    let fixed_policy = RetryAfter::fixed(a.fixed_ms);
    let jittered_policy = RetryAfter {
        min_ms: a.min_ms,
        max_ms: a.max_ms,
    };
    let fixed = run_storm(&params(&a, fixed_policy));
    let jittered = run_storm(&params(&a, jittered_policy));
    println!(
        "{} clients in one second; accept rate {}/s, burst {}",
        a.clients, a.accept_rate, a.burst
    );
    println!(
        "{:>6} | {:>28} | {:>28}",
        "",
        format!("fixed {} ms", a.fixed_ms),
        format!("jittered {}-{} ms", a.min_ms, a.max_ms)
    );
    println!(
        "{:>6} | {:>6} {:>6} {:>6} {:>6} | {:>6} {:>6} {:>6} {:>6}",
        "second", "tries", "accept", "reject", "served", "tries", "accept", "reject", "served"
    );
    let rows = fixed.seconds.len().max(jittered.seconds.len());
    for s in 0..rows {
        let f = fixed.seconds.get(s).copied().unwrap_or_default();
        let j = jittered.seconds.get(s).copied().unwrap_or_default();
        println!(
            "{s:>6} | {:>6} {:>6} {:>6} {:>6} | {:>6} {:>6} {:>6} {:>6}",
            f.attempts,
            f.accepted,
            f.rejected,
            f.served,
            j.attempts,
            j.accepted,
            j.rejected,
            j.served
        );
    }
    println!(
        "all served          | {:>28} | {:>28}",
        served_at(&fixed),
        served_at(&jittered)
    );
    println!(
        "attempts            | {:>28} | {:>28}",
        fixed.attempts(),
        jittered.attempts()
    );
    println!(
        "peak rejected/s 1+  | {:>28} | {:>28}",
        fixed.peak_rejected_from(1),
        jittered.peak_rejected_from(1)
    );
}
