//! `run --aeron` and `subscribe --aeron` as processes, over UDP on loopback: a generated day
//! sent with loss (recovered by retransmission) ends with every subscriber's `--book-out`
//! byte-identical to a replay of the day, whether it followed the stream from the start,
//! joined half-way through, stopped reading for a second (it rejoins), or lost packets at
//! its own driver (Aeron's NAKs get them back).
//!
//! Built and run only with the `aeron` feature (`cargo test --release --features
//! ticklane/aeron --test aeron`). Each process has its own embedded media driver, as
//! separate hosts would; the publisher sends to every subscriber through Aeron's
//! multi-destination cast (a control endpoint that subscribers register with), so that a
//! slow subscriber does not hold the others back. Bounded: every wait has a limit.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use ticklane_testkit::process::{free_port, wait_bounded, Watched, READY_WITHIN};

mod namespaces;

fn ticklane() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ticklane"))
}

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// The day, and the replay's book at the stream's depth (10 levels a side).
fn day_and_replay(dir: &Path, messages: u32, seed: u32) -> (std::path::PathBuf, String) {
    let day = dir.join("day.itch50");
    let gen = ticklane()
        .args(["gen", utf8(&day), "--messages", &messages.to_string()])
        .args(["--stocks", "12", "--seed", &seed.to_string()])
        .output()
        .expect("gen");
    assert!(gen.status.success(), "gen failed");
    let replay = dir.join("replay.csv");
    let out = ticklane()
        .args([
            "replay",
            utf8(&day),
            "-q",
            "--depth",
            "10",
            "--book-out",
            utf8(&replay),
        ])
        .output()
        .expect("replay");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let replayed = std::fs::read_to_string(&replay).expect("replay csv");
    assert!(replayed.lines().count() > 100, "a real book");
    (day, replayed)
}

/// Writes `dir/line.toml`, a line on loopback publishing to Aeron (snapshot in
/// `dir/books.snap`), and returns its path.
fn line_config(dir: &Path, data: u16, request: u16, control: u16) -> std::path::PathBuf {
    let path = dir.join("line.toml");
    let snapshot = dir.join("books.snap");
    let toml = format!(
        "[snapshot]\npath = {snapshot:?}\ndepth = 10\ncapacity = 256\n\n\
         [engine]\nmax_orders = 262144\nmax_books = 256\nlevels_per_side = 2048\n\n\
         [feed]\nkind = \"moldudp64\"\nbind = \"127.0.0.1:{data}\"\n\
         request_server = \"127.0.0.1:{request}\"\n\
         silence_timeout_s = 10.0\nretransmit_timeout_ms = 20\nmax_duration_s = 90.0\n\n\
         [aeron]\nchannel = \"aeron:udp?control=127.0.0.1:{control}|control-mode=dynamic\"\n\
         stream_id = 77\nrefresh_cycle_ms = 300\nheartbeat_ms = 100\nlinger_ms = 2000\n"
    );
    std::fs::write(&path, toml).expect("write config");
    path
}

/// Changes one setting of the config at `path`; `from` must be in it.
fn edit_config(path: &Path, from: &str, to: &str) {
    let toml = std::fs::read_to_string(path).expect("config");
    assert!(toml.contains(from), "the config has {from:?}");
    std::fs::write(path, toml.replace(from, to)).expect("write config");
}

/// Replaces the `[aeron]` section of the config at `path` with `section` (its lines).
fn replace_aeron_section(path: &Path, section: &str) {
    let toml = std::fs::read_to_string(path).expect("config");
    let (head, _) = toml.split_once("[aeron]").expect("an [aeron] section");
    std::fs::write(path, format!("{head}[aeron]\n{section}")).expect("write config");
}

/// A `subscribe --aeron` process on its own endpoint, registered with the publisher's
/// control endpoint.
fn subscriber(control: u16, book_out: &Path) -> Watched {
    subscriber_with(control, book_out, &[], &[])
}

fn subscriber_with(control: u16, book_out: &Path, extra: &[&str], env: &[(&str, &str)]) -> Watched {
    let endpoint = free_port();
    let channel = format!(
        "aeron:udp?endpoint=127.0.0.1:{endpoint}|control=127.0.0.1:{control}|control-mode=dynamic"
    );
    let mut subscriber = Watched::spawn(
        ticklane()
            .args([
                "subscribe",
                "--aeron",
                &channel,
                "--stream",
                "77",
                "--quiet",
            ])
            .args(["--book-out", utf8(book_out)])
            .args(extra)
            .envs(env.iter().copied()),
    );
    subscriber.wait_for_line("ticklane subscribe: following", READY_WITHIN);
    subscriber
}

/// `GET /metrics` from the admin server at `port`.
fn metrics(port: u16) -> String {
    get(port, "/metrics")
}

/// `GET path` from the admin server at `port`: the whole answer, head and body.
fn get(port: u16, path: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("admin server");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .expect("request");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("answer");
    answer
}

/// `ticklane sim` sending `day` with 1% loss, recovered through its request server.
fn sim(day: &Path, data: u16, request: u16, rate: u32) -> Child {
    sim_command(day, data, request, rate)
        .spawn()
        .expect("start sim")
}

fn sim_command(day: &Path, data: u16, request: u16, rate: u32) -> Command {
    let mut command = ticklane();
    command
        .args(["sim", utf8(day)])
        .args(["--udp", &format!("127.0.0.1:{data}")])
        .args(["--request", &format!("127.0.0.1:{request}")])
        .args(["--rate", &rate.to_string(), "--drop", "0.01", "--seed", "9"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// Waits for the subscriber's end: it saw the stream's end and every book, and its
/// `--book-out` is the replay's; returns its summary.
fn assert_ended_exact(subscriber: Watched, book_out: &Path, replayed: &str, who: &str) -> String {
    let out = subscriber.finish(Duration::from_secs(60));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{who}: exit {}:\n{err}", out.status);
    assert!(err.contains("; end of stream"), "{who}: {err}");
    assert!(
        err.contains("every book sent since it joined"),
        "{who}: {err}"
    );
    let followed = std::fs::read_to_string(book_out).expect("subscriber's book");
    assert!(
        followed == replayed,
        "{who}: books differ from the replay\n{err}"
    );
    err.into_owned()
}

/// The number before `label` in a summary line (`…, 12 label, …`).
fn count_before(summary: &str, label: &str) -> u64 {
    let at = summary
        .find(label)
        .unwrap_or_else(|| panic!("`{label}` in {summary}"));
    let digits: String = summary[..at]
        .trim_end()
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect();
    digits
        .chars()
        .rev()
        .collect::<String>()
        .parse()
        .expect("a count")
}

/// The number after `label` in a summary line (`…, label 3; …`).
fn count_after(summary: &str, label: &str) -> u64 {
    let at = summary
        .find(label)
        .unwrap_or_else(|| panic!("`{label}` in {summary}"));
    let digits: String = summary[at + label.len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().expect("a count")
}

fn signal(child: &Child, signal: &str) {
    let sent = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(sent.success(), "kill {signal}");
}

#[test]
fn two_subscribers_end_a_lossy_day_with_the_replays_books() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (day, replayed) = day_and_replay(dir.path(), 200_000, 21);
    let (data, request, control) = (free_port(), free_port(), free_port());
    let config = line_config(dir.path(), data, request, control);
    let admin = free_port();
    let mut run = Watched::spawn(
        ticklane()
            .args(["run", "--config", utf8(&config)])
            .args(["--admin", &format!("127.0.0.1:{admin}")]),
    );
    run.wait_for_line("ticklane run: book updates on aeron:udp", READY_WITHIN);
    run.wait_for_line("ticklane run: ready (", READY_WITHIN);
    let (a_out, b_out) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
    let a = subscriber(control, &a_out);
    let b = subscriber(control, &b_out);
    // Both have registered once the publisher sees a subscriber; the refresh cycle makes
    // good whatever either missed before.
    std::thread::sleep(Duration::from_millis(500));
    let sim = sim(&day, data, request, 100_000);
    std::thread::sleep(Duration::from_millis(500));
    let scraped = metrics(admin);
    for series in [
        "ticklane_aeron_records_total ",
        "ticklane_aeron_connected 1",
        "ticklane_aeron_refresh_cycles_total ",
        "ticklane_aeron_driver_naks_received_total ",
    ] {
        assert!(scraped.contains(series), "{series} in /metrics:\n{scraped}");
    }
    // The publication is a dependency beside the line, its breaker closed.
    assert!(
        scraped
            .lines()
            .any(|l| l.starts_with("ticklane_dependency_breaker_state{")
                && l.contains(".aeron\"")
                && l.ends_with(" 0")),
        "the publication's breaker in /metrics:\n{scraped}"
    );
    let run_out = run.finish(Duration::from_secs(90));
    let summary = String::from_utf8_lossy(&run_out.stdout);
    assert!(
        run_out.status.success(),
        "run: {summary}\n{}",
        String::from_utf8_lossy(&run_out.stderr)
    );
    assert!(summary.contains("lost 0"), "every gap filled:\n{summary}");
    assert!(summary.contains("end of stream sent"), "{summary}");
    wait_bounded(sim, Duration::from_secs(30));
    assert_ended_exact(a, &a_out, &replayed, "subscriber a");
    assert_ended_exact(b, &b_out, &replayed, "subscriber b");
}

#[test]
fn a_subscriber_that_joins_half_way_ends_with_the_same_books() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (day, replayed) = day_and_replay(dir.path(), 300_000, 22);
    let (data, request, control) = (free_port(), free_port(), free_port());
    let config = line_config(dir.path(), data, request, control);
    let mut run = Watched::spawn(ticklane().args(["run", "--config", utf8(&config)]));
    run.wait_for_line("ticklane run: ready (", READY_WITHIN);
    let sim = sim(&day, data, request, 100_000);
    // About half of the day's 3 s has gone when it joins.
    std::thread::sleep(Duration::from_millis(1500));
    let late_out = dir.path().join("late.csv");
    let late = subscriber(control, &late_out);
    let run_out = run.finish(Duration::from_secs(90));
    let summary = String::from_utf8_lossy(&run_out.stdout);
    assert!(run_out.status.success(), "run: {summary}");
    wait_bounded(sim, Duration::from_secs(30));
    assert_ended_exact(late, &late_out, &replayed, "the late subscriber");
}

#[test]
fn a_subscriber_that_stops_reading_neither_slows_the_others_and_comes_back_exact() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (day, replayed) = day_and_replay(dir.path(), 400_000, 23);
    let (data, request, control) = (free_port(), free_port(), free_port());
    let config = line_config(dir.path(), data, request, control);
    let mut run = Watched::spawn(ticklane().args(["run", "--config", utf8(&config)]));
    run.wait_for_line("ticklane run: ready (", READY_WITHIN);
    let (steady_out, slow_out) = (dir.path().join("steady.csv"), dir.path().join("slow.csv"));
    let steady = subscriber(control, &steady_out);
    let slow = subscriber_with(control, &slow_out, &["--silence-ms", "500"], &[]);
    std::thread::sleep(Duration::from_millis(500));
    let sim = sim(&day, data, request, 100_000);
    // A second into the day's four, the slow one stops reading (its embedded driver with
    // it) for a second: the publisher sends on, far past its receiver window.
    std::thread::sleep(Duration::from_secs(1));
    signal(&slow.child, "-STOP");
    std::thread::sleep(Duration::from_secs(1));
    signal(&slow.child, "-CONT");
    let run_out = run.finish(Duration::from_secs(90));
    let summary = String::from_utf8_lossy(&run_out.stdout);
    assert!(run_out.status.success(), "run: {summary}");
    assert!(summary.contains("lost 0"), "every gap filled:\n{summary}");
    // Not held back: a publisher that waited for the stopped subscriber would have been
    // back pressured for the whole second, at about 30k records a second.
    let records = count_after(&summary, "aeron: ");
    let held = count_before(&summary, "back-pressured");
    assert!(
        held * 20 < records,
        "back pressured {held} of {records}:\n{summary}"
    );
    wait_bounded(sim, Duration::from_secs(30));
    let steady_summary = assert_ended_exact(steady, &steady_out, &replayed, "the steady one");
    assert!(
        steady_summary.contains("lost 0; rejoined 0;"),
        "{steady_summary}"
    );
    let slow_summary = assert_ended_exact(slow, &slow_out, &replayed, "the slow one");
    assert!(
        count_after(&slow_summary, "; rejoined ") >= 1,
        "it rejoined:\n{slow_summary}"
    );
}

#[test]
fn loss_at_a_subscribers_driver_is_recovered_by_aeron() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (day, replayed) = day_and_replay(dir.path(), 200_000, 24);
    let (data, request, control) = (free_port(), free_port(), free_port());
    let config = line_config(dir.path(), data, request, control);
    let mut run = Watched::spawn(ticklane().args(["run", "--config", utf8(&config)]));
    run.wait_for_line("ticklane run: ready (", READY_WITHIN);
    let (clean_out, lossy_out) = (dir.path().join("clean.csv"), dir.path().join("lossy.csv"));
    let clean = subscriber(control, &clean_out);
    // The C media driver's own loss generator, on the lossy subscriber's receiving side:
    // 0.5% of data frames dropped as they arrive, retransmissions included, at a rate
    // whose repairs fit the default receiver window.
    let lossy = subscriber_with(
        control,
        &lossy_out,
        &[],
        &[
            ("AERON_UDP_CHANNEL_INCOMING_INTERCEPTORS", "loss"),
            (
                "AERON_UDP_CHANNEL_TRANSPORT_BINDINGS_LOSS_ARGS",
                "rate=0.005|recv-msg-mask=0x2|seed=7",
            ),
        ],
    );
    std::thread::sleep(Duration::from_millis(500));
    let sim = sim(&day, data, request, 25_000);
    let run_out = run.finish(Duration::from_secs(90));
    let summary = String::from_utf8_lossy(&run_out.stdout);
    assert!(run_out.status.success(), "run: {summary}");
    assert!(
        count_after(&summary, "driver: ") > 0,
        "the publisher's driver was asked again:\n{summary}"
    );
    wait_bounded(sim, Duration::from_secs(30));
    assert_ended_exact(clean, &clean_out, &replayed, "the clean one");
    let lossy_summary = assert_ended_exact(lossy, &lossy_out, &replayed, "the lossy one");
    assert!(
        count_after(&lossy_summary, "driver: ") > 0,
        "it asked for what it lost:\n{lossy_summary}"
    );
}

#[test]
fn an_external_driver_carries_ipc_from_run_to_a_subscriber() {
    use ticklane_aeron::aeron_link::{AeronNode, DriverPlace};

    let dir = tempfile::tempdir().expect("tempdir");
    let (day, replayed) = day_and_replay(dir.path(), 200_000, 25);
    // A media driver of this test's own, outside both processes, as a host's shared
    // driver would be: the two reach each other through its shared memory.
    let driver = AeronNode::connect(&DriverPlace::Embedded).expect("a media driver");
    let aeron_dir = driver.dir().to_owned();
    let (data, request) = (free_port(), free_port());
    let config = line_config(dir.path(), data, request, 0);
    replace_aeron_section(
        &config,
        &format!(
            "channel = \"aeron:ipc\"\ndir = {aeron_dir:?}\nstream_id = 77\n\
             refresh_cycle_ms = 300\nheartbeat_ms = 100\n"
        ),
    );
    let mut run = Watched::spawn(ticklane().args(["run", "--config", utf8(&config)]));
    let said = run.wait_for_line("ticklane run: book updates on aeron:ipc", READY_WITHIN);
    assert!(said.contains(&aeron_dir), "{said}");
    run.wait_for_line("ticklane run: ready (", READY_WITHIN);
    let book_out = dir.path().join("ipc.csv");
    let mut subscriber = Watched::spawn(
        ticklane()
            .args(["subscribe", "--aeron", "aeron:ipc", "--stream", "77"])
            .args(["--aeron-dir", &aeron_dir, "--quiet"])
            .args(["--book-out", utf8(&book_out)]),
    );
    subscriber.wait_for_line("ticklane subscribe: following", READY_WITHIN);
    std::thread::sleep(Duration::from_millis(300));
    let sim = sim(&day, data, request, 100_000);
    let run_out = run.finish(Duration::from_secs(90));
    let summary = String::from_utf8_lossy(&run_out.stdout);
    assert!(run_out.status.success(), "run: {summary}");
    assert!(summary.contains("end of stream sent"), "{summary}");
    wait_bounded(sim, Duration::from_secs(30));
    assert_ended_exact(subscriber, &book_out, &replayed, "the IPC subscriber");
    drop(driver);
}

#[test]
fn health_says_when_the_publication_reaches_no_subscriber() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (data, request, control) = (free_port(), free_port(), free_port());
    let config = line_config(dir.path(), data, request, control);
    // No feed comes: the line waits out this test, not its usual 10 s of silence.
    edit_config(
        &config,
        "silence_timeout_s = 10.0",
        "silence_timeout_s = 60.0",
    );
    let admin = free_port();
    let mut run = Watched::spawn(
        ticklane()
            .args(["run", "--config", utf8(&config)])
            .args(["--admin", &format!("127.0.0.1:{admin}")]),
    );
    run.wait_for_line("ticklane run: ready (", READY_WITHIN);
    // Nobody yet: nobody lost, nothing raised.
    let health = get(admin, "/health");
    assert!(!health.contains("publication_down"), "{health}");
    let mut gone = subscriber(control, &dir.path().join("gone.csv"));
    std::thread::sleep(Duration::from_secs(1));
    gone.child.kill().expect("kill the subscriber");
    let _ = gone.child.wait();
    // Its destination times out at the publisher (5 s), then its breaker opens on the
    // heartbeat intervals without a subscriber.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let down = loop {
        let health = get(admin, "/health");
        if health.contains("publication_down") {
            break health;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never raised:\n{health}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    // (The line is silent too here, with no feed: the state is the worse of the two.)
    assert!(
        down.contains("\"condition\":\"publication_down\""),
        "{down}"
    );
    let scraped = metrics(admin);
    assert!(
        scraped
            .lines()
            .any(|l| l.starts_with("ticklane_dependency_breaker_state{")
                && l.contains(".aeron\"")
                && l.ends_with(" 1")),
        "the publication's breaker open in /metrics:\n{scraped}"
    );
    signal(&run.child, "-INT");
    let _ = run.finish(Duration::from_secs(30));
}

#[test]
fn a_subscriber_that_never_saw_a_whole_cycle_ends_with_declared_loss() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (day, _) = day_and_replay(dir.path(), 200_000, 27);
    let (data, request, control) = (free_port(), free_port(), free_port());
    let config = line_config(dir.path(), data, request, control);
    // No cycle ends within the day: a subscriber that joins after the start cannot know it
    // has every book.
    edit_config(
        &config,
        "refresh_cycle_ms = 300",
        "refresh_cycle_ms = 600000",
    );
    let mut run = Watched::spawn(ticklane().args(["run", "--config", utf8(&config)]));
    run.wait_for_line("ticklane run: ready (", READY_WITHIN);
    let sim = sim(&day, data, request, 100_000);
    std::thread::sleep(Duration::from_millis(800));
    let late = subscriber(control, &dir.path().join("late.csv"));
    let run_out = run.finish(Duration::from_secs(90));
    assert!(run_out.status.success());
    wait_bounded(sim, Duration::from_secs(30));
    let out = late.finish(Duration::from_secs(60));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("NOT EVERY BOOK SEEN"), "{err}");
    assert!(err.contains("; end of stream"), "{err}");
}

#[test]
fn run_refuses_aeron_without_a_snapshot() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("line.toml");
    std::fs::write(
        &config,
        format!(
            "[feed]\nkind = \"moldudp64\"\nbind = \"127.0.0.1:{}\"\n",
            free_port()
        ),
    )
    .expect("write config");
    let out = ticklane()
        .args(["run", "--config", utf8(&config), "--aeron", "aeron:ipc"])
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("snapshot.path"), "{err}");
}
