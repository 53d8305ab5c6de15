//! A reconnect storm over real sockets: a few hundred clients, each in the client library's
//! reconnect loop, connect in the same instant to a server behind the storm defences
//! (`GuardedAdmission`) with a low accept rate. Every client is served in the end; the
//! refused ones were told retry-afters spread over the configured range (never one value,
//! which would bring them back together); and a client connected before the storm keeps
//! receiving updates all through it. Accepted and refused per second are printed.
//!
//! The client count stays under the default soft limit of open files (1,024) with a margin:
//! each client is two descriptors in this process (its socket and the server's side).

use std::net::SocketAddr;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use ticklane_engine::book::{LevelView, Side};
use ticklane_engine::overload::SubscriberHub;
use ticklane_engine::serve::client::{
    run_subscriber, ClientConfig, Received, Session, SubscriberEvent,
};
use ticklane_engine::serve::protocol::ServerMessage;
use ticklane_engine::serve::{start_server, GuardedAdmission, ServeConfig};
use ticklane_engine::serve_guard::{AdmissionConfig, PeerLimits, RetryAfter, Stage, StageLimit};
use ticklane_feed::itch::Price;
use ticklane_feed::resilience::BackoffConfig;

use crate::util::serve::{hub_config, SharedModel};

const AAPL: [u8; 8] = *b"AAPL    ";
const CLIENTS: usize = 300;
/// New connections a second, in bursts of at most `BURST`: 300 clients need 5 s at least.
const ACCEPT_PER_SECOND: u32 = 60;
const BURST: u32 = 20;
const RETRY_AFTER: RetryAfter = RetryAfter {
    min_ms: 250,
    max_ms: 2_500,
};
/// The storm must be over by then (it needs about 5 to 8 s).
const DEADLINE: Duration = Duration::from_secs(18);

/// What one storm client saw, in seconds since the storm began.
#[derive(Default)]
struct Seen {
    accepted_at: Vec<f64>,
    rejected_at: Vec<f64>,
    retry_after_ms: Vec<u64>,
}

fn admission() -> GuardedAdmission {
    let many = PeerLimits {
        max_open: 4_096,
        max_attempts: u32::MAX,
        window_ns: 10_000_000_000,
    };
    GuardedAdmission::new(AdmissionConfig {
        connect: StageLimit {
            per_second: ACCEPT_PER_SECOND,
            burst: BURST,
            max_in_flight: 4_096,
        },
        // Every client comes from 127.0.0.1: the per-IP limits would be the whole defence.
        per_ip: many,
        retry_after: RETRY_AFTER,
        ..AdmissionConfig::default()
    })
}

fn client_config(server: SocketAddr, n: usize) -> ClientConfig {
    ClientConfig {
        account: format!("storm{n}"),
        backoff: BackoffConfig {
            base: Duration::from_millis(100),
            cap: Duration::from_secs(10),
        },
        timeout: Duration::from_secs(5),
        max_attempts: Some(100),
        seed: 0x5709_0000 + n as u64,
        ..ClientConfig::new(server, vec!["AAPL".into()])
    }
}

/// One storm client: waits for the others, then runs the reconnect loop until its book
/// image arrives (served), recording each acceptance and refusal.
fn storm_client(
    config: &ClientConfig,
    start: &Barrier,
    began: Instant,
    stop: &AtomicBool,
) -> (bool, Seen) {
    let mut seen = Seen::default();
    let mut served = false;
    start.wait();
    let at = |seen_at: Instant| seen_at.duration_since(began).as_secs_f64();
    let result = run_subscriber(
        config,
        stop,
        // The reconnect loop's own pause: what the client is told to wait, waited.
        &mut |d| std::thread::sleep(d),
        &mut |event| match event {
            SubscriberEvent::Connected { .. } => {
                seen.accepted_at.push(at(Instant::now()));
                ControlFlow::Continue(())
            }
            SubscriberEvent::Message(ServerMessage::BookImage { .. }) => {
                served = true;
                ControlFlow::Break(())
            }
            SubscriberEvent::Reconnecting {
                why,
                server_asked: true,
                ..
            } => {
                seen.rejected_at.push(at(Instant::now()));
                if let Some(d) = why.and_then(|w| w.retry_after()) {
                    seen.retry_after_ms.push(d.as_millis() as u64);
                }
                ControlFlow::Continue(())
            }
            _ => ControlFlow::Continue(()),
        },
    );
    let _ = result; // GaveUp or stopped: `served` says whether it was served.
    (served, seen)
}

#[test]
fn a_reconnect_storm_is_admitted_at_the_accept_rate_and_everyone_is_served() {
    let model = SharedModel::default();
    model.add_symbol(&AAPL, 1);
    let (hub, mut fanout) = SubscriberHub::new(hub_config());
    let admission = admission();
    let counters = admission.counters();
    let server = start_server(
        ServeConfig {
            max_clients: CLIENTS + 16,
            heartbeat_ms: 200,
            ..ServeConfig::new("127.0.0.1:0".parse().unwrap())
        },
        Some(hub),
        Box::new(model.clone()),
        Box::new(admission),
    )
    .unwrap();
    fanout.accept_subscribers();
    let addr = server.local_addr();
    let stop = Arc::new(AtomicBool::new(false));
    let feed_stop = Arc::new(AtomicBool::new(false));

    // The feed: a level update on AAPL every 2 ms until the end.
    let publisher = {
        let stop = Arc::clone(&feed_stop);
        let model = model.clone();
        std::thread::spawn(move || {
            let mut seq = 0u64;
            while !stop.load(Ordering::Relaxed) {
                seq += 1;
                let level = LevelView {
                    price: Price(100_0000 - (seq % 20) as u32 * 100),
                    qty: 100 + seq % 7,
                    orders: 1,
                };
                model.level(&mut fanout, &AAPL, seq, Side::Bid, level);
                std::thread::sleep(Duration::from_millis(2));
            }
            seq
        })
    };

    // The veteran: connected and streaming before the storm.
    let mut veteran = Session::connect(addr, "veteran", Duration::from_secs(5)).unwrap();
    veteran.subscribe("AAPL", Duration::from_secs(5)).unwrap();
    loop {
        if let Received::Message(ServerMessage::BookImage { .. }) = veteran.recv().unwrap() {
            break;
        }
    }
    let began = Instant::now();
    let veteran_thread = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            // Seconds since the storm began at which an update arrived.
            let mut updates = Vec::new();
            let mut gaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                match veteran.recv() {
                    Ok(Received::Message(ServerMessage::Level { .. })) => {
                        updates.push(began.elapsed().as_secs_f64())
                    }
                    Ok(Received::Message(_)) => {}
                    Ok(Received::Gap { .. }) => gaps += 1,
                    Err(e) => panic!("the veteran's session ended during the storm: {e}"),
                }
            }
            (updates, gaps)
        })
    };

    // The storm.
    let start = Arc::new(Barrier::new(CLIENTS));
    let (done_tx, done_rx) = mpsc::channel();
    let clients: Vec<_> = (0..CLIENTS)
        .map(|n| {
            let config = client_config(addr, n);
            let (start, stop, done) = (Arc::clone(&start), Arc::clone(&stop), done_tx.clone());
            std::thread::Builder::new()
                .stack_size(256 << 10)
                .spawn(move || {
                    let outcome = storm_client(&config, &start, began, &stop);
                    let _ = done.send(());
                    outcome
                })
                .unwrap()
        })
        .collect();
    drop(done_tx);
    let mut finished = 0;
    while finished < CLIENTS {
        let left = DEADLINE.saturating_sub(began.elapsed());
        match done_rx.recv_timeout(left) {
            Ok(()) => finished += 1,
            Err(_) => break,
        }
    }
    let storm_s = began.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let outcomes: Vec<(bool, Seen)> = clients.into_iter().map(|t| t.join().unwrap()).collect();
    // The veteran sees `stop` at its next update: the feed runs until it has.
    let (updates, gaps) = veteran_thread.join().unwrap();
    feed_stop.store(true, Ordering::Relaxed);
    publisher.join().unwrap();
    let counts = counters.load();
    drop(server);

    // Per second: accepted and refused, as the clients saw them.
    let seconds = storm_s.ceil() as usize;
    let mut per_second = vec![(0u64, 0u64, 0u64); seconds.max(1)];
    let bucket = |t: f64| (t as usize).min(seconds.max(1) - 1);
    for (_, seen) in &outcomes {
        for &t in &seen.accepted_at {
            per_second[bucket(t)].0 += 1;
        }
        for &t in &seen.rejected_at {
            per_second[bucket(t)].1 += 1;
        }
    }
    for &t in &updates {
        if t < storm_s {
            per_second[bucket(t)].2 += 1;
        }
    }
    println!("storm: {CLIENTS} clients, accept rate {ACCEPT_PER_SECOND}/s (bursts of {BURST}), retry-after {}..={} ms, over in {storm_s:.1} s", RETRY_AFTER.min_ms, RETRY_AFTER.max_ms);
    println!("second  accepted  rejected  veteran's updates");
    for (s, (a, r, u)) in per_second.iter().enumerate() {
        println!("{s:>6}  {a:>8}  {r:>8}  {u:>17}");
    }
    let delays: Vec<u64> = outcomes
        .iter()
        .flat_map(|(_, s)| s.retry_after_ms.iter().copied())
        .collect();
    let (lo, hi) = (
        delays.iter().min().copied().unwrap_or(0),
        delays.iter().max().copied().unwrap_or(0),
    );
    let distinct = {
        let mut d = delays.clone();
        d.sort_unstable();
        d.dedup();
        d.len()
    };
    println!(
        "retry-afters told: {} ({distinct} distinct, {lo}..={hi} ms); server admitted {} connections, refused {} (rate {})",
        delays.len(),
        counts.admitted_at(Stage::Connect),
        counts.rejected_total(Stage::Connect),
        counts.rejected_at(Stage::Connect, ticklane_engine::serve_guard::RejectReason::Rate),
    );

    // Every client served, within the deadline.
    let unserved = outcomes.iter().filter(|(served, _)| !*served).count();
    assert_eq!(
        unserved, 0,
        "{unserved} clients never got their image in {storm_s:.1} s"
    );
    // The accept rate held: the storm took at least as long as the rate allows (the burst
    // is the only head start), and it was a storm: most first attempts were refused.
    let min_s = (CLIENTS as f64 - f64::from(BURST)) / f64::from(ACCEPT_PER_SECOND);
    assert!(
        storm_s >= min_s * 0.9,
        "over in {storm_s:.1} s, faster than {min_s:.1} s allows"
    );
    assert!(
        counts.rejected_total(Stage::Connect) >= (CLIENTS / 2) as u64,
        "{counts:?}"
    );
    // Retry-afters spread over the configured range, not one value.
    assert!(
        delays.len() >= CLIENTS / 2,
        "only {} retry-afters seen",
        delays.len()
    );
    let span = u64::from(RETRY_AFTER.max_ms - RETRY_AFTER.min_ms);
    assert!(
        delays
            .iter()
            .all(|d| (u64::from(RETRY_AFTER.min_ms)..=u64::from(RETRY_AFTER.max_ms)).contains(d)),
        "a retry-after outside {RETRY_AFTER:?}"
    );
    assert!(
        lo <= u64::from(RETRY_AFTER.min_ms) + span / 10,
        "lowest {lo} ms"
    );
    assert!(
        hi >= u64::from(RETRY_AFTER.max_ms) - span / 10,
        "highest {hi} ms"
    );
    assert!(
        distinct >= delays.len() / 4,
        "{distinct} distinct of {}",
        delays.len()
    );
    // The veteran kept receiving updates in every second of the storm, without a gap.
    for (s, &(_, _, u)) in per_second.iter().enumerate().take(storm_s as usize) {
        assert!(u > 0, "the veteran received nothing in second {s}");
    }
    assert_eq!(gaps, 0, "the veteran lost updates");
}
