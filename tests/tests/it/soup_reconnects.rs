//! SoupBinTCP reconnects over loopback: the backoff schedule the source follows (exact, from
//! the seed), a refused connect, a server that accepts and never answers, a login that is not
//! authorised (never retried) and a session that is not available (retried).
//!
//! Bounded: every run waits at most a few hundred milliseconds of backoff and has a time
//! limit; nothing sleeps hoping a condition holds.

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use ticklane_engine::book::BookConfig;
use ticklane_engine::live::{run_line, LineSource, LineSourceReport};
use ticklane_engine::overload::OverloadConfig;
use ticklane_engine::pipeline::{
    DropReason, PipelineConfig, SoupFeedConfig, SoupSource, SoupSourceReport, SourceEnd,
    SourceError, DEFAULT_LINE_BREAKER,
};
use ticklane_feed::moldudp64::Session;
use ticklane_feed::resilience::BackoffConfig;
use ticklane_feed::soupbintcp::{ClientConfig, Credentials, RejectReason};
use ticklane_sim::{GenConfig, MessageLog, SoupSimConfig, SoupSimulator};

const MS: Duration = Duration::from_millis(1);

/// The waits before reconnects 1 to 4 with base 10 ms, cap 1 s and seed 42, in nanoseconds:
/// from a separate Python SplitMix64 with Lemire's multiply-shift (the same draws
/// `resilience::backoff`'s own test takes from it), ceilings 10, 20, 40 and 80 ms.
const WAITS_SEED_42: [u64; 4] = [7_415_649, 3_198_208, 11_144_045, 27_535_257];

fn line(server: SocketAddr, client: ClientConfig, max_reconnects: u32) -> SoupSource {
    SoupSource::new(
        SoupFeedConfig {
            server,
            client,
            connect_timeout: Duration::from_secs(2),
            max_reconnects,
            reconnect: BackoffConfig {
                base: 10 * MS,
                cap: Duration::from_secs(1),
            },
            reconnect_seed: Some(42),
            max_duration: Some(Duration::from_secs(20)),
            breaker: DEFAULT_LINE_BREAKER,
        },
        PipelineConfig::default().wait,
    )
}

fn client(user: &[u8], password: &[u8]) -> ClientConfig {
    ClientConfig::new(Credentials::new(user, password).expect("fits"))
}

fn run(source: SoupSource) -> SoupSourceReport {
    let pipeline = PipelineConfig {
        books: BookConfig {
            max_orders: 1 << 12,
            max_books: 16,
            levels_per_side: 64,
        },
        ..PipelineConfig::default()
    };
    let report = run_line(
        LineSource::Soup(source),
        pipeline,
        None,
        OverloadConfig::default(),
        &AtomicBool::new(false),
    )
    .expect("pipeline")
    .report
    .source;
    match report {
        LineSourceReport::Soup(r) => r,
        other => panic!("not a SoupBinTCP report: {other:?}"),
    }
}

fn simulator() -> SoupSimulator {
    let log = Arc::new(MessageLog::from_generator(GenConfig {
        messages: 100,
        seed: 5,
        stocks: 4,
        hard_cases: false,
        crossing: false,
    }));
    SoupSimulator::start(
        log,
        SoupSimConfig::new(
            "127.0.0.1:0".parse().expect("address"),
            Credentials::new(b"e2e", b"secret").expect("fits"),
            Session::new(b"SOUP").expect("fits"),
        ),
    )
    .expect("simulator")
}

/// The waits recorded after each drop, in nanoseconds.
fn waits(r: &SoupSourceReport) -> Vec<Option<u64>> {
    r.drops
        .last
        .iter()
        .map(|d| d.wait.map(|w| w.as_nanos() as u64))
        .collect()
}

#[test]
fn a_port_nobody_listens_on_backs_off_on_the_seeded_schedule_then_gives_up() {
    // A port that was free a moment ago and has no listener now.
    let addr = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port");
    let r = run(line(addr, client(b"e2e", b"secret"), 4));
    assert!(
        matches!(
            r.end,
            SourceEnd::Error(SourceError::ReconnectsExhausted {
                reconnects: 4,
                last: DropReason::Connect { .. }
            })
        ),
        "{:?}",
        r.end
    );
    assert_eq!((r.connections, r.drops.by_reason.connect), (0, 5));
    assert_eq!(
        r.drops.last.iter().map(|d| d.attempt).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5]
    );
    let expected: Vec<Option<u64>> = WAITS_SEED_42
        .iter()
        .map(|&w| Some(w))
        .chain([None])
        .collect();
    assert_eq!(waits(&r), expected, "full jitter, drawn from the seed");
    // The source waited at least each drawn wait before its next attempt.
    for pair in r.drops.last.iter().collect::<Vec<_>>().windows(2) {
        let waited = pair[1].at_ns - pair[0].at_ns;
        let wait = pair[0].wait.expect("a wait before the next attempt");
        assert!(
            waited >= wait.as_nanos() as u64,
            "attempt {}: {waited} ns < {wait:?}",
            pair[1].attempt
        );
    }
}

#[test]
fn a_server_that_never_answers_the_login_is_dropped_at_its_timeout_and_reconnected() {
    // The kernel completes the handshake from the backlog; nobody ever reads or writes.
    let listener = TcpListener::bind("127.0.0.1:0").expect("listener");
    let mut c = client(b"e2e", b"secret");
    c.server_timeout = 100 * MS;
    let r = run(line(listener.local_addr().expect("address"), c, 1));
    drop(listener);
    assert!(
        matches!(
            r.end,
            SourceEnd::Error(SourceError::ReconnectsExhausted {
                reconnects: 1,
                last: DropReason::ServerSilent { .. }
            })
        ),
        "{:?}",
        r.end
    );
    assert_eq!((r.connections, r.drops.by_reason.server_silent), (2, 2));
    assert_eq!(waits(&r), [Some(WAITS_SEED_42[0]), None]);
}

#[test]
fn a_login_not_authorised_ends_the_source_after_one_attempt() {
    let sim = simulator();
    let r = run(line(sim.local_addr(), client(b"e2e", b"wrong"), 5));
    let stats = sim.stop();
    assert_eq!(
        r.end,
        SourceEnd::Error(SourceError::LoginRejected(RejectReason::NotAuthorized))
    );
    assert_eq!((r.connections, r.drops.by_reason.total()), (1, 0));
    assert_eq!((stats.connections, stats.rejected, stats.logins), (1, 1, 0));
}

#[test]
fn a_session_not_available_is_retried_with_backoff() {
    let sim = simulator();
    let mut c = client(b"e2e", b"secret");
    c.session = Session::new(b"LATER").expect("fits");
    let r = run(line(sim.local_addr(), c, 2));
    let stats = sim.stop();
    assert_eq!(
        r.end,
        SourceEnd::Error(SourceError::ReconnectsExhausted {
            reconnects: 2,
            last: DropReason::Rejected(RejectReason::SessionNotAvailable),
        })
    );
    assert_eq!((r.connections, r.drops.by_reason.rejected), (3, 3));
    assert_eq!(
        waits(&r),
        [Some(WAITS_SEED_42[0]), Some(WAITS_SEED_42[1]), None]
    );
    assert_eq!((stats.rejected, stats.logins), (3, 0));
}
