//! `ticklane subscribe --server … --book-out`: a subscriber of a `run --serve` process fed a
//! generated day with loss on the feed (recovered) writes, when it is stopped after the
//! session, the books a replay of the day writes, byte for byte; the same check the Aeron
//! subscriber passes. Bounded: every wait has a limit.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::util::{free_port, ticklane, utf8, wait_bounded, Watched, READY_WITHIN};

#[test]
fn a_tcp_subscribers_book_out_is_the_replays() {
    let dir = tempfile::tempdir().expect("tempdir");
    let day = dir.path().join("day.itch50");
    let gen = ticklane()
        .args(["gen", utf8(&day), "--messages", "200000"])
        .args(["--stocks", "12", "--seed", "31"])
        .output()
        .expect("gen");
    assert!(gen.status.success(), "gen failed");
    let replay = dir.path().join("replay.csv");
    let replayed = ticklane()
        .args(["replay", utf8(&day), "-q", "--depth", "10"])
        .args(["--book-out", utf8(&replay)])
        .output()
        .expect("replay");
    assert!(replayed.status.success(), "replay failed");
    let replayed = std::fs::read_to_string(&replay).expect("replay csv");
    let mut symbols: Vec<&str> = replayed
        .lines()
        .skip(1)
        .map(|row| row.split(',').nth(1).expect("a stock column"))
        .collect();
    symbols.dedup();
    assert!(symbols.len() >= 10, "books to follow: {symbols:?}");

    let (data, request, serve) = (free_port(), free_port(), free_port());
    let config = dir.path().join("line.toml");
    // Images as deep as any book here, so that no level is beyond what the client sees.
    std::fs::write(
        &config,
        format!(
            "[engine]\nmax_orders = 262144\nmax_books = 256\nlevels_per_side = 2048\n\n\
             [snapshot]\npath = {:?}\ndepth = 1024\ncapacity = 64\n\n\
             [feed]\nkind = \"moldudp64\"\nbind = \"127.0.0.1:{data}\"\n\
             request_server = \"127.0.0.1:{request}\"\nretransmit_timeout_ms = 20\n\
             silence_timeout_s = 10.0\nmax_duration_s = 90.0\n",
            dir.path().join("books.snap")
        ),
    )
    .expect("write config");
    let mut run = Watched::spawn(ticklane().args([
        "run",
        "--config",
        utf8(&config),
        "--serve",
        &format!("127.0.0.1:{serve}"),
    ]));
    run.wait_for_line("ticklane run: ready (", READY_WITHIN);
    let sim = ticklane()
        .args(["sim", utf8(&day)])
        .args(["--udp", &format!("127.0.0.1:{data}")])
        .args(["--request", &format!("127.0.0.1:{request}")])
        .args(["--rate", "100000", "--drop", "0.01", "--seed", "5"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start sim");
    // The day's directory comes first: once it is in, every symbol can be subscribed.
    std::thread::sleep(Duration::from_millis(300));
    let book_out = dir.path().join("followed.csv");
    let mut subscriber = Watched::spawn(
        ticklane()
            .args(["subscribe", "--server", &format!("127.0.0.1:{serve}")])
            .args(["--symbols", &symbols.join(",")])
            .args(["--book-out", utf8(&book_out), "--depth", "10"]),
    );
    subscriber.wait_for_line("connected", READY_WITHIN);
    let run_out = run.finish(Duration::from_secs(90));
    let summary = String::from_utf8_lossy(&run_out.stdout);
    assert!(run_out.status.success(), "run: {summary}");
    assert!(summary.contains("lost 0"), "every gap filled:\n{summary}");
    wait_bounded(sim, Duration::from_secs(30));
    // The session's end reached it: everything before it has too. Ctrl-C ends it.
    subscriber.wait_for_line("disconnected: ", Duration::from_secs(30));
    let interrupted = Command::new("kill")
        .args(["-INT", &subscriber.child.id().to_string()])
        .status()
        .expect("kill");
    assert!(interrupted.success());
    let out = subscriber.finish(Duration::from_secs(30));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    for said in [
        format!("{} books; 0 may be short of depth 10", symbols.len()),
        "; 0 behind a sequence gap; 0 updates before any image".to_owned(),
    ] {
        assert!(err.contains(&said), "`{said}` in:\n{err}");
    }
    let followed = std::fs::read_to_string(&book_out).expect("the subscriber's book");
    assert!(followed == replayed, "books differ from the replay\n{err}");
}
