//! The reconnect storm, simulated: thousands of clients reconnecting in the same second
//! against the subscriber server's [`Admission`] policy, in simulated time.
//!
//! No sockets: each client is a sequence of events in a queue ordered by time, and at each
//! stage the client asks the same [`Admission`] the server asks, with the simulated clock's
//! nanoseconds. A client goes through connect, handshake, login and subscribe (each taking
//! its stage's work time and holding its stage meanwhile); it is *served* when its first
//! subscription's image is sent, and then stays connected. Any refusal closes the client
//! (its holds released) and it reconnects after the refusal's retry-after, as the client
//! library does. Run with a fixed retry-after and with a jittered one, the difference is the
//! point: a fixed delay brings every refused client back in the same second, to be refused
//! again; a range spreads them under the accept rate.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::{IpAddr, Ipv4Addr};

use ticklane_engine::serve_guard::{Admission, AdmissionConfig, Decision, Peer, RetryAfter, Stage};
use ticklane_feed::rng::SplitMix64;

/// Nanoseconds in a second.
pub const NS_PER_S: u64 = 1_000_000_000;

/// One storm's settings.
#[derive(Clone, Copy, Debug)]
pub struct StormParams {
    /// Clients, each with its own address and account.
    pub clients: u32,
    /// Their first connections, uniform over `[0, arrival_ns)`.
    pub arrival_ns: u64,
    /// The policy; its `retry_after` is the one under test.
    pub admission: AdmissionConfig,
    /// Work time of the handshake, the login and the subscription's image, each in ns.
    pub handshake_ns: u64,
    /// See `handshake_ns`.
    pub login_ns: u64,
    /// See `handshake_ns`.
    pub subscribe_ns: u64,
    /// Simulated time after which the run stops, served or not.
    pub horizon_ns: u64,
    /// Seeds the arrivals (the admission has its own seed).
    pub seed: u64,
}

impl StormParams {
    /// 2,000 clients in one second against the default policy, with `retry_after`.
    pub fn full(retry_after: RetryAfter) -> Self {
        StormParams {
            clients: 2_000,
            arrival_ns: NS_PER_S,
            admission: AdmissionConfig {
                retry_after,
                ..AdmissionConfig::default()
            },
            handshake_ns: 1_000_000,
            login_ns: 2_000_000,
            subscribe_ns: 5_000_000,
            horizon_ns: 120 * NS_PER_S,
            seed: 9,
        }
    }
}

/// What happened in one second of simulated time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StormSecond {
    /// Connection attempts.
    pub attempts: u64,
    /// Connections accepted (admitted at [`Stage::Connect`]).
    pub accepted: u64,
    /// Refusals at any stage.
    pub rejected: u64,
    /// Clients served (first image sent).
    pub served: u64,
}

/// A storm's outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StormReport {
    /// Per second from 0 to the last second anything happened in.
    pub seconds: Vec<StormSecond>,
    /// When the last client was served (`None`: not all within the horizon).
    pub all_served_ns: Option<u64>,
    /// Clients served.
    pub served: u64,
}

impl StormReport {
    /// The most refusals in one second from second `from` on.
    pub fn peak_rejected_from(&self, from: usize) -> u64 {
        self.seconds
            .iter()
            .skip(from)
            .map(|s| s.rejected)
            .max()
            .unwrap_or(0)
    }

    /// Connection attempts in all.
    pub fn attempts(&self) -> u64 {
        self.seconds.iter().map(|s| s.attempts).sum()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    Connect,
    HandshakeDone,
    LoginDone,
    SubscribeDone,
}

/// A client's progress: what it holds, to release on a refusal.
#[derive(Clone, Copy, Debug)]
struct Client {
    peer: Peer,
    logged_in: bool,
}

/// Runs one storm.
pub fn run_storm(p: &StormParams) -> StormReport {
    let mut admission = Admission::new(p.admission);
    let mut rng = SplitMix64::new(p.seed);
    let mut clients: Vec<Client> = (0..p.clients)
        .map(|i| Client {
            peer: Peer::new(IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + i)))
                .with_account(&format!("client-{i}")),
            logged_in: false,
        })
        .collect();
    // (time, sequence for a stable order, client, step)
    let mut queue: BinaryHeap<Reverse<(u64, u64, u32, Step)>> = BinaryHeap::new();
    let mut sequence = 0u64;
    let mut push = |queue: &mut BinaryHeap<_>, t: u64, c: u32, s: Step| {
        sequence += 1;
        queue.push(Reverse((t, sequence, c, s)));
    };
    for c in 0..p.clients {
        let t = rng.below(p.arrival_ns.max(1));
        push(&mut queue, t, c, Step::Connect);
    }
    let mut seconds: Vec<StormSecond> = Vec::new();
    let mut served = 0u64;
    let mut all_served_ns = None;
    while let Some(Reverse((now, _, c, step))) = queue.pop() {
        if now > p.horizon_ns {
            break;
        }
        let second = (now / NS_PER_S) as usize;
        if seconds.len() <= second {
            seconds.resize(second + 1, StormSecond::default());
        }
        let client = &mut clients[c as usize];
        let row = &mut seconds[second];
        // The stage to ask now, and the step that follows when it is admitted.
        let (stage, next_at) = match step {
            Step::Connect => {
                row.attempts += 1;
                (Stage::Handshake, p.handshake_ns)
            }
            Step::HandshakeDone => {
                admission.release(Stage::Handshake, client.peer);
                (Stage::Login, p.login_ns)
            }
            Step::LoginDone => (Stage::Subscribe, p.subscribe_ns),
            Step::SubscribeDone => {
                admission.release(Stage::Subscribe, client.peer);
                row.served += 1;
                served += 1;
                if served == u64::from(p.clients) {
                    all_served_ns = Some(now);
                }
                continue;
            }
        };
        if step == Step::Connect {
            match admission.admit(Stage::Connect, client.peer, now) {
                Decision::Admitted => row.accepted += 1,
                Decision::Rejected(r) => {
                    row.rejected += 1;
                    let back = now + u64::from(r.retry_after_ms) * 1_000_000;
                    push(&mut queue, back, c, Step::Connect);
                    continue;
                }
            }
        }
        match admission.admit(stage, client.peer, now) {
            Decision::Admitted => {
                client.logged_in |= stage == Stage::Login;
                let next = match stage {
                    Stage::Handshake => Step::HandshakeDone,
                    Stage::Login => Step::LoginDone,
                    _ => Step::SubscribeDone,
                };
                push(&mut queue, now + next_at, c, next);
            }
            Decision::Rejected(r) => {
                // The server closes the connection: every hold of this client ends.
                row.rejected += 1;
                if client.logged_in {
                    admission.release(Stage::Login, client.peer);
                    client.logged_in = false;
                }
                admission.release(Stage::Connect, client.peer);
                let back = now + u64::from(r.retry_after_ms) * 1_000_000;
                push(&mut queue, back, c, Step::Connect);
            }
        }
    }
    StormReport {
        seconds,
        all_served_ns,
        served,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklane_engine::serve_guard::StageLimit;

    /// A reduced storm: 600 clients in one second against an accept rate of 100 a second
    /// (bursts of 20), so the first second admits about 120 and refuses about 480.
    fn reduced(retry_after: RetryAfter) -> StormReport {
        let mut p = StormParams::full(retry_after);
        p.clients = 600;
        p.admission.connect = StageLimit {
            per_second: 100,
            burst: 20,
            max_in_flight: 10_000,
        };
        run_storm(&p)
    }

    #[test]
    fn a_fixed_retry_after_synchronises_the_retries_and_a_jittered_one_spreads_them() {
        // Fixed at 3.5 s, the jittered range's middle (2-5 s): the same mean wait.
        let fixed = reduced(RetryAfter::fixed(3_500));
        let jittered = reduced(RetryAfter::DEFAULT);
        assert_eq!(fixed.served, 600);
        assert_eq!(jittered.served, 600);
        // Worked by hand for the fixed policy: each wave arrives within one second and the
        // bucket admits at most 20 + 100 of it, so 600 clients need 5 waves: served no
        // sooner than 4 × 3.5 s = 14 s, and each wave is refused nearly whole again (the
        // second wave holds about 480 clients, of whom about 120 get in).
        let fixed_done = fixed.all_served_ns.expect("fixed: all served");
        assert!(fixed_done >= 14 * NS_PER_S, "{fixed_done}");
        // Every retry of the fixed policy lands 3.5 s after a refusal: seconds 1 and 2 hold
        // no attempt at all, and the second wave (seconds 3 and 4) is refused nearly whole
        // again: of the clients refused in the first second, at most 20 + 100 get in.
        for s in [1, 2] {
            assert_eq!(fixed.seconds[s].attempts, 0, "{:?}", fixed.seconds);
        }
        let first_wave_refused = fixed.seconds[0].rejected;
        assert!(first_wave_refused >= 600 - 120);
        let second_wave_refused = fixed.seconds[3].rejected + fixed.seconds[4].rejected;
        assert!(
            second_wave_refused >= first_wave_refused - 120,
            "{:?}",
            fixed.seconds
        );
        // The jittered policy spreads the same clients over 2-6 s: a lower peak of refusals
        // after the first second, and everyone served no later.
        assert!(
            jittered.peak_rejected_from(1) * 2 <= fixed.peak_rejected_from(1),
            "jittered {:?}\nfixed {:?}",
            jittered.seconds,
            fixed.seconds
        );
        let jittered_done = jittered.all_served_ns.expect("jittered: all served");
        assert!(
            jittered_done <= fixed_done,
            "{jittered_done} > {fixed_done}"
        );
        assert!(jittered.attempts() < fixed.attempts());
    }

    #[test]
    fn nobody_is_refused_when_the_storm_fits_the_budget() {
        let mut p = StormParams::full(RetryAfter::DEFAULT);
        p.clients = 50; // under the burst of 100
        let r = run_storm(&p);
        assert_eq!(r.served, 50);
        assert_eq!(r.attempts(), 50);
        assert_eq!(r.seconds.iter().map(|s| s.rejected).sum::<u64>(), 0);
    }
}
