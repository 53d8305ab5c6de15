//! The subscriber server over loopback: login, subscribe, an image then updates that
//! rebuild the book the engine holds (a naive BTreeMap model is both the engine's books and
//! the oracle), the symbol list, a request whose budget ran out dropped and counted, a
//! sequence gap seen by the client, a slow client conflated then cut loose while another
//! keeps every update, and a graceful stop that stops accepting and says when to come back.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ticklane_engine::book::{LevelView, Side};
use ticklane_engine::overload::{EventFanout, SubscriberHub};
use ticklane_engine::serve::client::{ClientError, Ended, Received, Session};
use ticklane_engine::serve::protocol::{encode_server, Reason, ServerMessage};
use ticklane_engine::serve::{start_server, AdmitAll, ServeConfig, ServeHandle};
use ticklane_feed::itch::Price;
use ticklane_feed::rng::SplitMix64;
use ticklane_testkit::loopback;

use crate::util::serve::{hub_config, ModelBook, SharedModel};

const AAPL: [u8; 8] = *b"AAPL    ";
const MSFT: [u8; 8] = *b"MSFT    ";
const TIMEOUT: Duration = Duration::from_secs(5);

struct Fixture {
    server: ServeHandle,
    fanout: EventFanout,
    model: SharedModel,
    feed_seq: u64,
    rng: SplitMix64,
}

impl Fixture {
    fn new(config: ServeConfig) -> Self {
        let model = SharedModel::default();
        model.add_symbol(&AAPL, 1);
        model.add_symbol(&MSFT, 2);
        let (hub, mut fanout) = SubscriberHub::new(hub_config());
        let server = start_server(
            config,
            Some(hub),
            Box::new(model.clone()),
            Box::new(AdmitAll),
        )
        .unwrap();
        fanout.accept_subscribers();
        let mut f = Fixture {
            server,
            fanout,
            model,
            feed_seq: 0,
            rng: SplitMix64::new(42),
        };
        // A starting book: ten levels a side.
        for i in 0..10 {
            f.level(&AAPL, Side::Bid, 100_0000 - i * 100, 100 + u64::from(i));
            f.level(&AAPL, Side::Ask, 100_0100 + i * 100, 200 + u64::from(i));
        }
        f
    }

    fn level(&mut self, symbol: &[u8; 8], side: Side, price: u32, qty: u64) {
        self.feed_seq += 1;
        let level = LevelView {
            price: Price(price),
            qty,
            orders: u32::from(qty > 0),
        };
        self.model
            .level(&mut self.fanout, symbol, self.feed_seq, side, level);
    }

    /// A random change among 20 prices a side: set (1 in 4: remove) a level.
    fn random_level(&mut self, symbol: &[u8; 8], qty: u64) {
        let side = if self.rng.below(2) == 0 {
            Side::Bid
        } else {
            Side::Ask
        };
        let step = self.rng.below(20) as u32 * 100;
        let price = match side {
            Side::Bid => 100_0000 - step,
            Side::Ask => 100_0100 + step,
        };
        let qty = if self.rng.below(4) == 0 {
            0
        } else {
            qty.max(1)
        };
        self.level(symbol, side, price, qty);
    }

    fn trade(&mut self, symbol: &[u8; 8], shares: u32) {
        self.feed_seq += 1;
        self.model
            .trade(&mut self.fanout, symbol, self.feed_seq, shares);
    }

    fn addr(&self) -> SocketAddr {
        self.server.local_addr()
    }
}

/// Reads until `done` says so, applying images and levels to `book`; the messages read.
fn read_until(
    session: &mut Session,
    book: &mut ModelBook,
    mut done: impl FnMut(&ServerMessage<'_>, &ModelBook) -> bool,
) -> u64 {
    let mut read = 0;
    loop {
        match session.recv().expect("the session stays up") {
            Received::Message(m) => {
                read += 1;
                book.apply(&m);
                if done(&m, book) {
                    return read;
                }
            }
            Received::Gap { expected, got } => panic!("gap: expected {expected}, got {got}"),
        }
    }
}

/// A session logged in as `account` and subscribed to `symbol`, its book the image.
fn subscribed(f: &Fixture, account: &str, symbol: &str) -> (Session, ModelBook) {
    let mut client = Session::connect(f.addr(), account, TIMEOUT).unwrap();
    let id = client.subscribe(symbol, TIMEOUT).unwrap();
    let mut book = ModelBook::default();
    read_until(
        &mut client,
        &mut book,
        |m, _| matches!(m, ServerMessage::BookImage { header, .. } if header.request_id == id),
    );
    (client, book)
}

#[test]
fn image_then_updates_rebuild_the_engines_book() {
    let mut f = Fixture::new(ServeConfig::new(loopback(0)));
    let (mut client, mut book) = subscribed(&f, "alice", "AAPL");
    assert_eq!(book, f.model.book(&AAPL), "the image is the book");
    assert_eq!(book.bids.len(), 10);
    for i in 0..2_000 {
        f.random_level(&AAPL, 1 + i);
        f.random_level(&MSFT, 1 + i); // not subscribed: never sent
    }
    f.trade(&AAPL, 77);
    let read = read_until(&mut client, &mut book, |m, _| {
        matches!(m, ServerMessage::Trade { shares: 77, .. })
    });
    assert_eq!(
        book,
        f.model.book(&AAPL),
        "image + levels = the engine's book"
    );
    assert_eq!(
        read, 2_001,
        "every AAPL level and the trade, nothing of MSFT"
    );
    // Unsubscribed: nothing more comes for it; MSFT is subscribed and its image arrives.
    client
        .send(&ticklane_engine::serve::protocol::ClientMessage::Unsubscribe { symbol: AAPL })
        .unwrap();
    let id = client.subscribe("MSFT", TIMEOUT).unwrap();
    let mut msft = ModelBook::default();
    read_until(
        &mut client,
        &mut msft,
        |m, _| matches!(m, ServerMessage::BookImage { header, .. } if header.request_id == id),
    );
    f.random_level(&AAPL, 5);
    f.trade(&MSFT, 78);
    let read = read_until(&mut client, &mut msft, |m, _| {
        matches!(m, ServerMessage::Trade { .. })
    });
    assert_eq!(read, 1, "no AAPL level after the unsubscribe");
    assert_eq!(msft, f.model.book(&MSFT));
    let counts = f.server.stop().unwrap();
    assert_eq!((counts.accepted, counts.requests), (1, 2));
}

/// With `engine.wait = busy-spin` the loop spins between turns while updates come instead
/// of sleeping in `poll`: the client rebuilds the same book, and the server still stops
/// cleanly once the updates have stopped and it sleeps again.
#[test]
fn a_spinning_loop_serves_the_same_book() {
    let mut f = Fixture::new(ServeConfig {
        wait: ticklane_engine::pipeline::WaitStrategy::BusySpin,
        ..ServeConfig::new(loopback(0))
    });
    let (mut client, mut book) = subscribed(&f, "spin", "AAPL");
    for i in 0..2_000 {
        f.random_level(&AAPL, 1 + i);
    }
    f.trade(&AAPL, 79);
    let read = read_until(&mut client, &mut book, |m, _| {
        matches!(m, ServerMessage::Trade { shares: 79, .. })
    });
    assert_eq!(read, 2_001, "every level and the trade");
    assert_eq!(book, f.model.book(&AAPL));
    // Quiet long enough to sleep in `poll` again; it still answers.
    std::thread::sleep(Duration::from_millis(200));
    let listed = client.symbol_list(TIMEOUT).unwrap();
    assert!(matches!(
        client.recv().unwrap(),
        Received::Message(ServerMessage::SymbolList { request_id, .. }) if request_id == listed
    ));
    let counts = f.server.stop().unwrap();
    assert_eq!(counts.accepted, 1);
}

/// The snapshot is published after the book thread delivers a batch's events, so an image
/// can be older than updates the server already sent; such an image is held until the
/// source catches up, and the new subscriber's book is still the engine's.
#[test]
fn an_image_behind_the_update_stream_waits_for_its_source() {
    let mut f = Fixture::new(ServeConfig {
        stale_image_wait: Duration::from_secs(60),
        ..ServeConfig::new(loopback(0))
    });
    let (mut first, mut first_book) = subscribed(&f, "first", "AAPL");
    // An update the server sends before the "snapshot" (the model) holds it.
    let late = LevelView {
        price: Price(99_0000),
        qty: 900,
        orders: 9,
    };
    f.feed_seq += 1;
    let now = f.fanout.now_ns();
    f.fanout.deliver(
        crate::util::serve::event(
            &AAPL,
            1,
            f.feed_seq,
            ticklane_engine::overload::EventBody::Level {
                side: Side::Bid,
                level: late,
            },
        ),
        now,
    );
    read_until(&mut first, &mut first_book, |m, _| {
        matches!(m, ServerMessage::Level { .. })
    });
    let mut second = Session::connect(f.addr(), "second", TIMEOUT).unwrap();
    let id = second.subscribe("AAPL", TIMEOUT).unwrap();
    let listed = second.symbol_list(TIMEOUT).unwrap();
    // Requests are served in order: the list answered first means the image is held.
    assert!(matches!(
        second.recv().unwrap(),
        Received::Message(ServerMessage::SymbolList { request_id, .. }) if request_id == listed
    ));
    // The snapshot catches up: the image goes out, with the late level in it.
    {
        let mut model = f.model.0.lock().unwrap();
        let entry = model.books.get_mut(&AAPL).unwrap();
        entry.1 = f.feed_seq;
        entry.2.set(Side::Bid, late);
    }
    let mut second_book = ModelBook::default();
    read_until(
        &mut second,
        &mut second_book,
        |m, _| matches!(m, ServerMessage::BookImage { header, .. } if header.request_id == id),
    );
    assert_eq!(second_book, f.model.book(&AAPL));
    assert_eq!(first_book, second_book);
}

/// Requests sent in one write, more than the server reads at once (4 KiB), are all served:
/// the socket is read until it would block.
#[test]
fn a_burst_of_requests_larger_than_the_read_buffer_is_served_whole() {
    use ticklane_engine::serve::protocol::{encode_client, ClientMessage};
    let f = Fixture::new(ServeConfig::new(loopback(0)));
    let mut client = Session::connect(f.addr(), "burst", TIMEOUT).unwrap();
    let mut burst = Vec::new();
    for request_id in 1..=300 {
        encode_client(
            &ClientMessage::Subscribe {
                request_id,
                budget_ms: 60_000,
                symbol: AAPL,
            },
            &mut burst,
        );
        encode_client(&ClientMessage::Unsubscribe { symbol: AAPL }, &mut burst);
    }
    assert!(burst.len() > 8 << 10);
    // Sent through the session's own socket, all at once.
    client.send_raw(&burst).unwrap();
    for request_id in 1..=300 {
        match client.recv().unwrap() {
            Received::Message(ServerMessage::BookImage { header, .. }) => {
                assert_eq!(header.request_id, request_id);
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn symbol_list_and_unknown_symbol() {
    let f = Fixture::new(ServeConfig::new(loopback(0)));
    let mut client = Session::connect(f.addr(), "bob", TIMEOUT).unwrap();
    let id = client.symbol_list(TIMEOUT).unwrap();
    match client.recv().unwrap() {
        Received::Message(ServerMessage::SymbolList {
            request_id,
            last,
            symbols,
            ..
        }) => {
            assert_eq!((request_id, last), (id, true));
            assert_eq!(symbols, b"AAPL    MSFT    ");
        }
        other => panic!("{other:?}"),
    }
    let id = client.subscribe("NOPE", TIMEOUT).unwrap();
    assert!(matches!(
        client.recv().unwrap(),
        Received::Message(ServerMessage::UnknownSymbol { request_id, symbol, .. })
            if request_id == id && &symbol == b"NOPE    "
    ));
}

#[test]
fn a_request_whose_budget_ran_out_is_dropped_and_counted() {
    let f = Fixture::new(ServeConfig::new(loopback(0)));
    let mut client = Session::connect(f.addr(), "carol", TIMEOUT).unwrap();
    let expired = client.subscribe("AAPL", Duration::ZERO).unwrap();
    let listed = client.symbol_list(Duration::ZERO).unwrap();
    let fresh = client.subscribe("AAPL", TIMEOUT).unwrap();
    let mut answers = Vec::new();
    for _ in 0..3 {
        match client.recv().unwrap() {
            Received::Message(ServerMessage::RequestExpired { request_id }) => {
                answers.push(("expired", request_id));
            }
            Received::Message(ServerMessage::BookImage { header, .. }) => {
                answers.push(("image", header.request_id));
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        answers,
        [("expired", expired), ("expired", listed), ("image", fresh)]
    );
    let counts = f.server.counters().load();
    assert_eq!((counts.expired_requests, counts.requests), (2, 1));
}

/// A hand-made server that skips sequence number 2.
#[test]
fn a_sequence_gap_is_reported_by_the_client() {
    let listener = TcpListener::bind(loopback(0)).unwrap();
    let addr = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut login = [0u8; 21];
        s.read_exact(&mut login).unwrap();
        let mut out = Vec::new();
        encode_server(
            &ServerMessage::LoginAccepted {
                version: 1,
                heartbeat_ms: 1000,
            },
            &mut out,
        );
        for seq in [1, 3] {
            encode_server(
                &ServerMessage::Trade {
                    seq,
                    symbol: AAPL,
                    price: Price(1),
                    shares: seq as u32,
                },
                &mut out,
            );
        }
        s.write_all(&out).unwrap();
        s
    });
    let mut client = Session::connect(addr, "dave", TIMEOUT).unwrap();
    assert!(matches!(
        client.recv().unwrap(),
        Received::Message(ServerMessage::Trade { seq: 1, .. })
    ));
    assert_eq!(
        client.recv().unwrap(),
        Received::Gap {
            expected: 2,
            got: 3
        }
    );
    assert!(matches!(
        client.recv().unwrap(),
        Received::Message(ServerMessage::Trade { seq: 3, .. })
    ));
    drop(server.join().unwrap());
}

fn small_queues() -> ServeConfig {
    ServeConfig {
        queue_bytes: 64 << 10,
        high_water: 16 << 10,
        low_water: 4 << 10,
        closing_grace: Duration::from_secs(30),
        ..ServeConfig::new(loopback(0))
    }
}

/// Reads every message on its own thread, applying it to a book and stamping latency: each
/// level's shares carry the producer's clock (ns since the test began).
struct FastReader {
    levels: Arc<AtomicU64>,
    thread: std::thread::JoinHandle<(ModelBook, Vec<u64>)>,
}

fn fast_reader(mut session: Session, epoch: Instant, trade_marker: u32) -> FastReader {
    let levels = Arc::new(AtomicU64::new(0));
    let seen = Arc::clone(&levels);
    let thread = std::thread::spawn(move || {
        let mut book = ModelBook::default();
        let mut latencies = Vec::new();
        loop {
            match session.recv().expect("the fast client is never cut") {
                Received::Message(m) => {
                    if let ServerMessage::Level { level, .. } = m {
                        if level.qty > 0 {
                            let now = epoch.elapsed().as_nanos() as u64;
                            latencies.push(now.saturating_sub(level.qty));
                        }
                        seen.fetch_add(1, Ordering::Release);
                    }
                    book.apply(&m);
                    if matches!(m, ServerMessage::Trade { shares, .. } if shares == trade_marker) {
                        return (book, latencies);
                    }
                }
                Received::Gap { expected, got } => panic!("fast client gap {expected}..{got}"),
            }
        }
    });
    FastReader { levels, thread }
}

fn wait_for(levels: &AtomicU64, at_least: u64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while levels.load(Ordering::Acquire) < at_least {
        assert!(Instant::now() < deadline, "the fast client stopped reading");
        std::thread::yield_now();
    }
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    sorted[((sorted.len() - 1) as f64 * p) as usize]
}

#[test]
fn a_slow_client_is_conflated_then_gets_the_latest_state_and_others_never_notice() {
    let mut f = Fixture::new(small_queues());
    let epoch = Instant::now();
    let mut slow = Session::connect(f.addr(), "slow", TIMEOUT).unwrap();
    let mut fast = Session::connect(f.addr(), "fast", TIMEOUT).unwrap();
    let mut slow_book = ModelBook::default();
    let mut fast_book = ModelBook::default();
    for (s, b) in [(&mut slow, &mut slow_book), (&mut fast, &mut fast_book)] {
        let id = s.subscribe("AAPL", TIMEOUT).unwrap();
        read_until(
            s,
            b,
            |m, _| matches!(m, ServerMessage::BookImage { header, .. } if header.request_id == id),
        );
    }
    let fast = fast_reader(fast, epoch, 1);
    // Levels, paced by the fast reader, until the slow client's queue passes its high mark
    // (its socket buffers fill first), and a few thousand more after.
    let mut delivered = 0u64;
    let mut after_conflation = None;
    while after_conflation.is_none_or(|start| delivered < start + 5_000) {
        for _ in 0..500 {
            let stamp = epoch.elapsed().as_nanos() as u64;
            f.random_level(&AAPL, stamp);
            delivered += 1;
        }
        wait_for(&fast.levels, delivered);
        if after_conflation.is_none() && f.server.counters().load().conflated > 0 {
            after_conflation = Some(delivered);
        }
        assert!(delivered < 5_000_000, "the slow client was never conflated");
    }
    f.trade(&AAPL, 1);
    let (fast_book, mut latencies) = fast.thread.join().unwrap();
    assert_eq!(
        fast_book,
        f.model.book(&AAPL),
        "the fast client has every update"
    );
    latencies.sort_unstable();
    println!(
        "fast client while one reads nothing: {} updates, latency p50 {} us, p99 {} us, max {} us",
        latencies.len(),
        percentile(&latencies, 0.5) / 1000,
        percentile(&latencies, 0.99) / 1000,
        latencies.last().unwrap() / 1000
    );
    // The slow client now reads: no gap (conflation skips no sequence number), at least one
    // refresh image, and it ends with the engine's book.
    let model = f.model.book(&AAPL);
    let mut refreshes = 0;
    read_until(&mut slow, &mut slow_book, |m, book| {
        if matches!(m, ServerMessage::BookImage { header, .. } if header.request_id == 0) {
            refreshes += 1;
        }
        refreshes > 0 && *book == model
    });
    assert!(refreshes >= 1);
    let counts = f.server.counters().load();
    assert!(counts.conflated > 0 && counts.cut_loose == 0, "{counts:?}");
}

#[test]
fn a_trade_that_fits_nowhere_cuts_the_slow_client_loose_and_only_it() {
    let mut f = Fixture::new(small_queues());
    let epoch = Instant::now();
    let mut slow = Session::connect(f.addr(), "slow", TIMEOUT).unwrap();
    let mut fast = Session::connect(f.addr(), "fast", TIMEOUT).unwrap();
    for s in [&mut slow, &mut fast] {
        let id = s.subscribe("AAPL", TIMEOUT).unwrap();
        read_until(
            s,
            &mut ModelBook::default(),
            |m, _| matches!(m, ServerMessage::BookImage { header, .. } if header.request_id == id),
        );
    }
    let fast = fast_reader(fast, epoch, u32::MAX);
    let mut trades = 0u64;
    while f.server.counters().load().cut_loose == 0 {
        for _ in 0..500 {
            trades += 1;
            f.trade(&AAPL, trades as u32);
            // A level after each trade paces the fast reader (it counts levels).
            f.level(&AAPL, Side::Bid, 50_0000, trades);
        }
        wait_for(&fast.levels, trades);
        assert!(trades < 5_000_000, "the slow client was never cut");
    }
    f.trade(&AAPL, u32::MAX);
    let (_, _) = fast.thread.join().unwrap();
    // The slow client reads what reached it, then the reason.
    let end = loop {
        match slow.recv() {
            Ok(_) => {}
            Err(ClientError::Ended { why, .. }) => break why,
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(end, Ended::CutLoose(Reason::SlowConsumer));
    let counts = f.server.counters().load();
    assert_eq!((counts.cut_loose, counts.shed), (1, 0));
}

/// A connection that never logs in is cut loose with reason `T` after the login timeout.
#[test]
fn a_connection_that_never_logs_in_is_cut_at_the_login_timeout() {
    let f = Fixture::new(ServeConfig {
        login_timeout: Duration::from_millis(50),
        ..ServeConfig::new(loopback(0))
    });
    let mut raw = std::net::TcpStream::connect(f.addr()).unwrap();
    raw.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut said = Vec::new();
    raw.read_to_end(&mut said).unwrap();
    // `C` (cut loose), reason `T`, then the server closed.
    assert_eq!(said, [0, 2, b'C', b'T']);
}

/// All queues together past their bound: the heaviest is shed, the light client stays.
#[test]
fn under_overload_the_heaviest_consumer_is_shed_first() {
    let mut f = Fixture::new(ServeConfig {
        total_queue_bytes: 32 << 10,
        ..small_queues()
    });
    let epoch = Instant::now();
    let mut heavy = Session::connect(f.addr(), "heavy", TIMEOUT).unwrap();
    let mut light = Session::connect(f.addr(), "light", TIMEOUT).unwrap();
    for symbol in ["AAPL", "MSFT"] {
        let id = heavy.subscribe(symbol, TIMEOUT).unwrap();
        read_until(
            &mut heavy,
            &mut ModelBook::default(),
            |m, _| matches!(m, ServerMessage::BookImage { header, .. } if header.request_id == id),
        );
    }
    let id = light.subscribe("AAPL", TIMEOUT).unwrap();
    read_until(
        &mut light,
        &mut ModelBook::default(),
        |m, _| matches!(m, ServerMessage::BookImage { header, .. } if header.request_id == id),
    );
    // The light client reads (and paces the producer); the heavy one reads nothing and gets
    // MSFT's trades on top of what both get.
    let light = fast_reader(light, epoch, u32::MAX);
    let mut rounds = 0u64;
    while f.server.counters().load().shed == 0 {
        for _ in 0..200 {
            f.trade(&MSFT, 1);
        }
        rounds += 1;
        f.level(&AAPL, Side::Bid, 50_0000, rounds);
        wait_for(&light.levels, rounds);
        assert!(rounds < 100_000, "nobody was shed");
    }
    f.trade(&AAPL, u32::MAX);
    light.thread.join().unwrap();
    let end = loop {
        match heavy.recv() {
            Ok(_) => {}
            Err(ClientError::Ended { why, .. }) => break why,
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(end, Ended::CutLoose(Reason::Shed));
    let counts = f.server.counters().load();
    assert_eq!((counts.shed, counts.cut_loose), (1, 0));
}

#[test]
fn a_graceful_stop_stops_accepting_and_says_when_to_come_back() {
    let f = Fixture::new(ServeConfig::new(loopback(0)));
    let addr = f.addr();
    let mut clients: Vec<_> = (0..3)
        .map(|i| Session::connect(addr, &format!("c{i}"), TIMEOUT).unwrap())
        .collect();
    let stopped = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let counts = f.server.stop().unwrap();
    stopped.store(true, Ordering::Relaxed);
    assert!(
        started.elapsed() < ServeConfig::new(addr).drain_timeout + Duration::from_secs(1),
        "drained within its bound"
    );
    assert_eq!(counts.accepted, 3);
    let mut delays = Vec::new();
    for c in &mut clients {
        match c.recv() {
            Err(ClientError::Ended {
                why: Ended::ComeBackLater(Reason::Restarting, d),
                ..
            }) => delays.push(d),
            other => panic!("{other:?}"),
        }
    }
    for d in &delays {
        assert!((2000..=5000).contains(&d.as_millis()), "{d:?}");
    }
    assert!(
        std::net::TcpStream::connect_timeout(&addr, TIMEOUT).is_err(),
        "no longer accepting"
    );
}
