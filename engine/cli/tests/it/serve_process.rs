//! A real `ticklane run --serve` process fed a generated day by `ticklane sim`: a client that
//! subscribes to every symbol while the day runs rebuilds, from images and updates, the books
//! the engine's snapshot holds at the end of the session; it sees no sequence gap, and the
//! engine's stop tells it when to come back.
//!
//! Here rather than in `tests/`: only this crate's tests are handed the `ticklane` binary.
//! Bounded: every wait has a limit.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::process::Stdio;
use std::time::{Duration, Instant};

use ticklane_engine::book::LevelView;
use ticklane_engine::serve::client::{ClientError, Ended, Received, Session};
use ticklane_engine::serve::protocol::{Reason, ServerMessage};
use ticklane_engine::snapshot::SnapshotReader;

use crate::util::serve::ModelBook;
use crate::util::{free_port, ticklane, wait_bounded, Watched, READY_WITHIN};

const DEPTH: usize = 1024;

fn top(map: &BTreeMap<u32, (u64, u32)>, best_high: bool, n: usize) -> Vec<(u32, u64, u32)> {
    let all: Vec<_> = map.iter().map(|(&p, &(q, o))| (p, q, o)).collect();
    if best_high {
        all.into_iter().rev().take(n).collect()
    } else {
        all.into_iter().take(n).collect()
    }
}

fn levels(v: &[LevelView]) -> Vec<(u32, u64, u32)> {
    v.iter().map(|l| (l.price.0, l.qty, l.orders)).collect()
}

#[test]
fn a_subscriber_rebuilds_the_engines_books_from_images_and_updates() {
    let dir = tempfile::tempdir().expect("tempdir");
    let day = dir.path().join("day.itch50");
    let gen = ticklane()
        .args(["gen", day.to_str().expect("utf-8")])
        .args(["--messages", "300000", "--stocks", "6", "--seed", "11"])
        .output()
        .expect("gen");
    assert!(gen.status.success(), "gen failed");
    let snapshot = dir.path().join("books.snap");
    let (data, serve) = (free_port(), free_port());
    let config = dir.path().join("line.toml");
    std::fs::write(
        &config,
        format!(
            "[engine]\nmax_orders = 262144\nmax_books = 256\nlevels_per_side = 2048\n\n\
             [snapshot]\npath = \"{}\"\ndepth = {DEPTH}\ncapacity = 64\n\n\
             [feed]\nkind = \"moldudp64\"\nbind = \"127.0.0.1:{data}\"\n\
             silence_timeout_s = 10.0\nmax_duration_s = 120.0\n",
            snapshot.display()
        ),
    )
    .expect("write config");
    let serve_addr: SocketAddr = format!("127.0.0.1:{serve}").parse().expect("addr");
    let mut run = Watched::spawn(ticklane().args([
        "run",
        "--config",
        config.to_str().expect("utf-8"),
        "--serve",
        &serve_addr.to_string(),
    ]));
    run.wait_for_line("ticklane run: subscribers on", READY_WITHIN);
    run.wait_for_line("ticklane run: ready (", READY_WITHIN);
    let sim = ticklane()
        .args(["sim", day.to_str().expect("utf-8")])
        .args(["--udp", &format!("127.0.0.1:{data}")])
        .args(["--rate", "60000"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start sim");

    let timeout = Duration::from_secs(5);
    let mut client = Session::connect(serve_addr, "e2e", timeout).expect("connect");
    // The symbols appear as the day's directory arrives: ask until there are some.
    let deadline = Instant::now() + Duration::from_secs(20);
    let symbols: Vec<[u8; 8]> = loop {
        client.symbol_list(timeout).expect("ask");
        let listed = match client.recv().expect("answer") {
            Received::Message(ServerMessage::SymbolList { symbols, .. }) => symbols
                .chunks_exact(8)
                .map(|c| c.try_into().expect("8 bytes"))
                .collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        };
        if listed.len() >= 6 {
            break listed;
        }
        assert!(Instant::now() < deadline, "no symbols listed");
        std::thread::sleep(Duration::from_millis(20));
    };
    for s in &symbols {
        let text = String::from_utf8_lossy(s).trim_end().to_owned();
        client.subscribe(&text, timeout).expect("subscribe");
    }
    let mut books: HashMap<[u8; 8], ModelBook> = HashMap::new();
    let mut images = 0;
    let end = loop {
        match client.recv() {
            Ok(Received::Message(m)) => {
                let symbol = match m {
                    ServerMessage::BookImage { header, .. } => {
                        images += 1;
                        header.symbol
                    }
                    ServerMessage::Level { symbol, .. } => symbol,
                    _ => continue,
                };
                books.entry(symbol).or_default().apply(&m);
            }
            Ok(Received::Gap { expected, got }) => panic!("gap {expected}..{got}"),
            Err(ClientError::Ended { why, .. }) => break why,
            Err(e) => panic!("{e}"),
        }
    };
    assert!(
        matches!(end, Ended::ComeBackLater(Reason::Restarting, _)),
        "{end:?}"
    );
    assert!(images >= symbols.len());
    let out = run.finish(Duration::from_secs(60));
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(summary.contains("subscribers: 1 accepted"), "{summary}");
    wait_bounded(sim, Duration::from_secs(60));

    let reader = SnapshotReader::open(&snapshot).expect("snapshot");
    let mut compared = 0;
    for slot in reader.slots() {
        let state = reader.read(slot).expect("read");
        let Some(book) = books.get(&state.symbol.0) else {
            continue;
        };
        assert!(
            state.bids.len() < DEPTH && state.asks.len() < DEPTH,
            "deeper than the image"
        );
        assert_eq!(
            top(&book.bids, true, DEPTH),
            levels(&state.bids),
            "{:?} bids",
            state.symbol
        );
        assert_eq!(
            top(&book.asks, false, DEPTH),
            levels(&state.asks),
            "{:?} asks",
            state.symbol
        );
        compared += 1;
    }
    assert_eq!(compared, symbols.len());
}
