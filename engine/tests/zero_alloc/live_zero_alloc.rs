//! Zero allocation per message, end to end: after warm-up, the reader thread (mio, MoldUDP64
//! recovery, ring) and the book thread (decode, books, snapshot publication, latency
//! histograms) allocate nothing while well over a million messages arrive over loopback
//! from the simulator, which runs in another process so that its allocations are not ours.
//!
//! Counting starts at the book thread's 50,000th publication and stops when the feed ends,
//! through a publisher that wraps the real snapshot publisher. The test proves its window:
//! the counter counts (a probe allocation inside a window is seen), the window opened, it
//! closed only at the end, and the messages published while it was open are counted one by
//! one and must be every message after warm-up, well over a million.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ticklane_engine::book::Applied;
use ticklane_engine::book::{BookConfig, Books};
use ticklane_engine::live::{ExchangeSim, ExchangeSimConfig};
use ticklane_engine::overload::{OverloadConfig, SheddingPublisher, SnapshotSink};
use ticklane_engine::pipeline::{
    run_pipeline_with_latency, LatencyGauges, MoldFeedConfig, MoldSource, PipelineConfig, SourceEnd,
};
use ticklane_engine::publish::{Arrival, Publisher};
use ticklane_engine::snapshot::SnapshotWriter;
use ticklane_feed::itch::Message;
use ticklane_feed::moldudp64::RecoveryConfig;
use ticklane_feed::net::UdpFeedConfig;
use ticklane_sim::{Faults, GenConfig, MessageLog, Rate};
use ticklane_testkit::counting_alloc::{
    close_window, first_window_allocation, open_window, take_window_allocations,
    window_allocations, window_is_open, EveryThread,
};

/// Publications seen while the window was open, and in all (written by `finish`).
static MEASURED: AtomicU64 = AtomicU64::new(0);
static PUBLICATIONS: AtomicU64 = AtomicU64::new(0);
/// Set when the window opens, and when `finish` closes it.
static OPENED: AtomicBool = AtomicBool::new(false);
static CLOSED_AT_FINISH: AtomicBool = AtomicBool::new(false);

const WARM_UP_PUBLICATIONS: u64 = 50_000;
const MESSAGES: u64 = 1_100_000;

/// Set for the simulator child: `DATA REQUEST`, the line's two addresses.
const SIMULATOR_ENV: &str = "TICKLANE_ZERO_ALLOC_SIMULATOR";

/// The live publisher (overload control over the snapshot), switching the count on after
/// warm-up and off at the end.
struct Counted {
    inner: SheddingPublisher<SnapshotSink>,
    publications: u64,
    /// Messages applied while counting.
    measured: u64,
}

impl Publisher for Counted {
    fn before_apply(&mut self, books: &Books, message: &Message<'_>) {
        self.inner.before_apply(books, message);
    }
    fn publish(
        &mut self,
        books: &Books,
        applied: &Applied<'_>,
        arrival: Arrival,
        now_ns: u64,
    ) -> bool {
        self.publications += 1;
        if self.publications == WARM_UP_PUBLICATIONS {
            open_window();
            OPENED.store(true, Ordering::SeqCst);
        }
        if window_is_open() {
            self.measured += 1;
        }
        self.inner.publish(books, applied, arrival, now_ns)
    }
    fn idle(&mut self, now_ns: u64) {
        self.inner.idle(now_ns);
    }
    fn batch_end(&mut self, books: &Books, now_ns: u64) {
        self.inner.batch_end(books, now_ns);
    }
    fn drained(&mut self, books: &Books, now_ns: u64) {
        self.inner.drained(books, now_ns);
    }
    fn finish(&mut self, books: &Books) {
        CLOSED_AT_FINISH.store(close_window(), Ordering::SeqCst);
        MEASURED.store(self.measured, Ordering::SeqCst);
        PUBLICATIONS.store(self.publications, Ordering::SeqCst);
        self.inner.finish(books);
    }
}

/// The counter sees an allocation made inside a window, and none outside one.
fn probe_the_counter() {
    open_window();
    let probe = std::hint::black_box(vec![1u8; 64]);
    close_window();
    drop(probe);
    let _outside = std::hint::black_box(vec![2u8; 64]);
    assert!(
        take_window_allocations() >= 1,
        "the counting allocator counts"
    );
}

pub fn reader_and_book_threads_allocate_nothing_per_message() {
    let _turn = EveryThread::turn();
    probe_the_counter();
    let dir = tempfile::tempdir().expect("tempdir");
    let snapshot = SnapshotWriter::create(dir.path().join("z.snap"), 256, 10).expect("snapshot");
    let feed = MoldFeedConfig {
        udp: UdpFeedConfig {
            bind: SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)),
            ..UdpFeedConfig::default()
        },
        recovery: RecoveryConfig {
            start_sequence: Some(1),
            retransmit_timeout: Duration::from_millis(20),
            max_retries: 50,
            ..RecoveryConfig::default()
        },
        silence_timeout: Duration::from_secs(10),
        max_duration: Some(Duration::from_secs(120)),
        ..MoldFeedConfig::default()
    };
    let pipeline = PipelineConfig {
        books: BookConfig {
            max_orders: 1 << 20,
            max_books: 256,
            levels_per_side: 2048,
        },
        ..PipelineConfig::default()
    };
    let mut source = MoldSource::open(feed, pipeline.wait).expect("bind");
    let data = source.local_addr().expect("bound");
    let request = std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .expect("probe port");
    source.set_request_server(request);
    let mut sim = std::process::Command::new(std::env::current_exe().expect("this binary"))
        .env(SIMULATOR_ENV, format!("{data} {request}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the simulator process");
    let publisher = Counted {
        inner: SheddingPublisher::new(SnapshotSink::new(snapshot), OverloadConfig::default()),
        publications: 0,
        measured: 0,
    };
    // With the latency gauges /metrics reads: their refreshes (every 100 ms) are inside the
    // counting window too.
    let latency = Arc::new(LatencyGauges::new());
    let report = run_pipeline_with_latency(
        pipeline,
        source,
        publisher,
        &AtomicBool::new(false),
        Arc::clone(&latency),
    )
    .expect("pipeline");
    let _ = sim.kill();
    let _ = sim.wait();
    let allocations = window_allocations();
    assert_eq!(
        report.source.end,
        SourceEnd::EndOfSession,
        "{:?}",
        report.source
    );
    assert!(
        report.source.lost.is_empty(),
        "unfilled gaps: {:?}",
        report.source.lost
    );
    assert_eq!(report.book.messages, MESSAGES);
    // The window really covered the messages: it opened, stayed open until `finish`, and
    // every publication after warm-up happened inside it (one publication per message).
    let (measured, publications) = (
        MEASURED.load(Ordering::SeqCst),
        PUBLICATIONS.load(Ordering::SeqCst),
    );
    assert!(OPENED.load(Ordering::SeqCst), "the counting window opened");
    assert!(
        CLOSED_AT_FINISH.load(Ordering::SeqCst),
        "the window was still open when the feed ended"
    );
    assert_eq!(
        publications, report.book.messages,
        "one publication per message"
    );
    assert_eq!(
        measured,
        publications - WARM_UP_PUBLICATIONS + 1,
        "every message after warm-up was published inside the window"
    );
    assert!(measured > 1_000_000, "{measured} messages measured");
    // The gauges were refreshed while the window was open (a run of over a second at
    // 1 M msg/s: about ten periodic refreshes, then the final one, all before `finish`),
    // and the last one covers every message applied.
    let latency = latency.load();
    assert!(latency.refreshes >= 5, "{latency:?}");
    assert_eq!(latency.samples, report.book.messages, "{latency:?}");
    assert_eq!(
        allocations,
        0,
        "allocations after warm-up; {}",
        first_window_allocation()
    );
}

/// The exchange simulator, when this binary was started again as its child (the variable
/// set), so that its allocations are not counted with the line's: a generated day at
/// 1 M msg/s to the line, retransmissions answered, then five seconds of lingering for late
/// requests. Whether it was asked to: without the variable, it does nothing.
pub fn simulator_child() -> bool {
    let Ok(addresses) = std::env::var(SIMULATOR_ENV) else {
        return false;
    };
    let (data, request) = addresses.split_once(' ').expect("DATA REQUEST");
    let log = Arc::new(MessageLog::from_generator(GenConfig {
        messages: MESSAGES,
        seed: 4,
        ..GenConfig::default()
    }));
    let config = ExchangeSimConfig {
        udp: Some(data.parse().expect("data address")),
        request: request.parse().expect("request address"),
        tcp: None,
        glimpse: None,
        rate: Rate::per_second(1_000_000),
        faults: Faults {
            seed: 4,
            ..Faults::default()
        },
        line_b: None,
        disconnect_after: None,
        linger: Duration::from_secs(5),
    };
    let sim = ExchangeSim::start(&log, config).expect("start the simulator");
    sim.serve(&AtomicBool::new(false)).expect("serve");
    true
}
