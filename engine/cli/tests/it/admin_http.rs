//! The admin server of a real `ticklane run` process fed by `ticklane sim` over loopback:
//! `/metrics` passes `promtool check metrics` (Prometheus's own linter, from the Debian
//! package `prometheus`) and counts the messages flowing, `/health` is the documented JSON,
//! and the admin calls answer 401 without a token, 403 with a wrong one (the file's token
//! too: `TICKLANE_ADMIN_TOKEN` wins), 200 with the right one.
//!
//! Here rather than in `tests/`: only this crate's tests are handed the `ticklane` binary
//! cargo built for them (`CARGO_BIN_EXE_ticklane`); a path guessed from `tests/` could run a
//! stale one.
//!
//! Bounded: every wait has a limit; the process is stopped with SIGTERM at the end.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ticklane_testkit::moldudp64;

use crate::util::{free_port, ticklane, wait_bounded, Watched, READY_WITHIN};

const FILE_TOKEN: &str = "file-token-0123456789";
const ENV_TOKEN: &str = "env-token-9876543210";

/// One HTTP exchange: status and body.
fn http(addr: SocketAddr, method: &str, path: &str, auth: Option<&str>) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect to the admin server");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let auth = auth.map_or(String::new(), |a| format!("Authorization: {a}\r\n"));
    write!(s, "{method} {path} HTTP/1.1\r\nHost: test\r\n{auth}\r\n").expect("send");
    let mut answer = String::new();
    s.read_to_string(&mut answer).expect("read answer");
    let status = answer
        .get(9..12)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {answer:?}"));
    let body = answer
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    (status, body)
}

/// The value of the sample `series` (name and labels, as written) in an exposition.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// `promtool check metrics` on `text`; `None` when promtool is not installed.
fn promtool_check(text: &str) -> Option<(bool, String)> {
    let mut child = match Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => panic!("promtool: {e}"),
    };
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("feed promtool");
    let out = wait_bounded(child, Duration::from_secs(30));
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some((out.status.success(), said))
}

/// A line with its snapshot, the subscriber server, the browser view and the audit trail
/// in `dir`, so that every family of `/metrics` has series.
fn write_config(path: &Path, data: u16, request: u16) {
    let dir = path.parent().expect("a folder").display();
    let toml = format!(
        "[engine]\nmax_orders = 262144\nmax_books = 256\nlevels_per_side = 2048\n\n\
         [feed]\nkind = \"moldudp64\"\nname = \"nasdaq\"\nbind = \"127.0.0.1:{data}\"\n\
         request_server = \"127.0.0.1:{request}\"\nsilence_timeout_s = 10.0\nmax_duration_s = 60.0\n\n\
         [snapshot]\npath = \"{dir}/books.snap\"\n\n\
         [serve]\nlisten = \"127.0.0.1:0\"\naudit_log = \"{dir}/audit.jsonl\"\n\n\
         [web]\nlisten = \"127.0.0.1:0\"\n\n\
         [admin]\nlisten = \"127.0.0.1:0\"\ntoken = \"{FILE_TOKEN}\"\n"
    );
    std::fs::write(path, toml).expect("write config");
}

#[test]
fn a_running_engine_serves_lint_clean_metrics_health_and_guarded_admin_calls() {
    const MESSAGES: u64 = 2_000_000;
    let dir = tempfile::tempdir().expect("tempdir");
    let day = dir.path().join("day.itch50");
    let gen = ticklane()
        .args(["gen", day.to_str().expect("utf-8")])
        .args(["--messages", &MESSAGES.to_string(), "--stocks", "10"])
        .output()
        .expect("gen");
    assert!(gen.status.success(), "gen failed");
    let (data, request) = (free_port(), free_port());
    let config = dir.path().join("line.toml");
    write_config(&config, data, request);

    let mut run = Watched::spawn(
        ticklane()
            .args(["run", "--config", config.to_str().expect("utf-8")])
            .env("TICKLANE_ADMIN_TOKEN", ENV_TOKEN),
    );
    let admin_line = run.wait_for_line("ticklane run: admin on http://", READY_WITHIN);
    let addr: SocketAddr = admin_line
        .trim_start_matches("ticklane run: admin on http://")
        .split(' ')
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no address in {admin_line:?}"));
    run.wait_for_line("ticklane run: ready (", READY_WITHIN);
    // About 20 s of feed at this rate: the checks below finish long before its end.
    let mut sim = ticklane()
        .args(["sim", day.to_str().expect("utf-8")])
        .args(["--udp", &format!("127.0.0.1:{data}")])
        .args(["--request", &format!("127.0.0.1:{request}")])
        .args(["--rate", "100000", "--drop", "0.01", "--seed", "5"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start sim");

    // /metrics: poll (bounded) until the reader's counters have been copied in, and the book
    // thread's latency percentiles published (its first refresh comes 100 ms into the run).
    let latency_samples = "ticklane_book_latency_samples_total{feed=\"nasdaq\"}";
    let deadline = Instant::now() + Duration::from_secs(20);
    let metrics = loop {
        let (status, body) = http(addr, "GET", "/metrics", None);
        assert_eq!(status, 200, "{body}");
        let messages = sample(&body, "ticklane_messages_total{feed=\"nasdaq\"}");
        if messages.is_some_and(|m| m > 0.0)
            && sample(&body, latency_samples).is_some_and(|n| n > 0.0)
        {
            break body;
        }
        assert!(Instant::now() < deadline, "no messages counted:\n{body}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let messages = sample(&metrics, "ticklane_messages_total{feed=\"nasdaq\"}").expect("series");
    assert!(
        messages <= MESSAGES as f64,
        "{messages} > the day's {MESSAGES}"
    );
    for series in [
        "ticklane_health_state",
        "ticklane_packets_total{feed=\"nasdaq\"}",
        "ticklane_retransmission_reply_timeout_seconds{feed=\"nasdaq\"}",
        "ticklane_snapshot_publications_total{feed=\"nasdaq\"}",
        "ticklane_dependency_breaker_state{feed=\"nasdaq\",dependency=\"nasdaq\"}",
        "ticklane_dependency_breaker_state{feed=\"nasdaq\",dependency=\"nasdaq.retransmission\"}",
        // The servers' families, each server's series once it runs.
        "ticklane_tls_handshakes_total{server=\"serve\",result=\"failed\"}",
        "ticklane_tls_handshakes_total{server=\"web\",result=\"established\"}",
        "ticklane_logins_total{server=\"serve\",result=\"not_authorised\"}",
        "ticklane_logins_total{server=\"web\",result=\"accepted\"}",
        "ticklane_entitlement_refusals_total{server=\"web\"}",
        "ticklane_sessions{server=\"serve\"}",
        "ticklane_web_requests_refused_total{reason=\"unknown_session\"}",
        "ticklane_audit_records_dropped_total",
    ] {
        assert!(sample(&metrics, series).is_some(), "{series}:\n{metrics}");
    }
    // The latency family: four quantiles, in seconds, in order, over no more messages than
    // the reader counted by the time of the scrape (the book thread is behind it).
    let quantiles: Vec<f64> = ["p50", "p99", "p99.9", "max"]
        .iter()
        .map(|q| {
            let series = format!("ticklane_book_latency_seconds{{feed=\"nasdaq\",stat=\"{q}\"}}");
            sample(&metrics, &series).unwrap_or_else(|| panic!("no {series}:\n{metrics}"))
        })
        .collect();
    assert!(
        quantiles[0] > 0.0 && quantiles.windows(2).all(|w| w[0] <= w[1]) && quantiles[3] < 60.0,
        "latency quantiles out of order or range: {quantiles:?}"
    );
    // The reader copies its counters about once a millisecond, so the count in this scrape
    // may trail the messages the book thread has already applied and covered by up to a
    // millisecond's pushes (a packet's worth, when the book thread keeps up). Compare with a
    // count copied after this scrape instead: it includes every message pushed before it.
    let covered = sample(&metrics, latency_samples).expect("series");
    std::thread::sleep(Duration::from_millis(20));
    let (_, later) = http(addr, "GET", "/metrics", None);
    let pushed = sample(&later, "ticklane_messages_total{feed=\"nasdaq\"}").expect("series");
    assert!(
        covered <= pushed,
        "{covered} latency samples > {pushed} messages pushed by the reader"
    );
    match promtool_check(&metrics) {
        Some((passed, said)) => assert!(passed, "promtool check metrics:\n{said}\n{metrics}"),
        None if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("promtool is not installed (.ci/run installs the Debian package prometheus)")
        }
        None => {
            let _ = std::io::stderr().write_all(
                b"\n!!!! SKIPPED the promtool check: promtool is not installed \
                  (apt-get install prometheus)\n",
            );
        }
    }

    // /health: the documented JSON, 200 unless Unhealthy or draining.
    let (status, body) = http(addr, "GET", "/health", None);
    let health: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    let state = health["state"].as_str().expect("state");
    assert!(
        ["Starting", "Healthy", "Degraded"].contains(&state),
        "{body}"
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(health["draining"], serde_json::Value::Bool(false));
    assert!(health["reasons"].is_array(), "{body}");

    // Admin calls: the environment's token wins over the file's.
    let isolate = "/feeds/nasdaq/isolate";
    assert_eq!(http(addr, "POST", isolate, None).0, 401);
    assert_eq!(http(addr, "POST", isolate, Some("Bearer wrong")).0, 403);
    let file = format!("Bearer {FILE_TOKEN}");
    assert_eq!(http(addr, "POST", isolate, Some(&file)).0, 403);
    let env = format!("Bearer {ENV_TOKEN}");
    let (status, body) = http(addr, "POST", isolate, Some(&env));
    assert_eq!(status, 200, "{body}");
    let answer: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(
        answer["dependencies"],
        serde_json::json!(["nasdaq", "nasdaq.retransmission"])
    );
    assert_eq!(http(addr, "POST", "/feeds/nasdaq/close", Some(&env)).0, 200);
    assert_eq!(http(addr, "POST", "/feeds/other/close", Some(&env)).0, 404);

    let _ = sim.kill();
    let _ = sim.wait();
    assert!(Command::new("kill")
        .args(["-TERM", &run.child.id().to_string()])
        .status()
        .expect("kill")
        .success());
    let out = run.finish(Duration::from_secs(10));
    let err = String::from_utf8_lossy(&out.stderr);
    for token in [FILE_TOKEN, ENV_TOKEN] {
        assert!(!err.contains(token), "the token was logged:\n{err}");
    }
    assert!(err.contains("POST /feeds/nasdaq/isolate -> 403"), "{err}");
}

#[test]
fn a_token_variable_the_file_would_refuse_stops_run_with_exit_2_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("line.toml");
    write_config(&config, free_port(), free_port());
    for refused in ["x", "short-secret"] {
        let child = ticklane()
            .args(["run", "--config", config.to_str().expect("utf-8")])
            .env("TICKLANE_ADMIN_TOKEN", refused)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start ticklane");
        let out = wait_bounded(child, Duration::from_secs(10));
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(2), "{refused}: {stdout}{stderr}");
        assert!(
            stderr.contains("TICKLANE_ADMIN_TOKEN") && stderr.contains("16 to 256 printable"),
            "{stderr}"
        );
        assert!(!stdout.contains("ready"), "started anyway:\n{stdout}");
        assert!(!stderr.contains(&format!("= {refused}")), "{stderr}");
    }
}

/// `/health`'s status, state and raised conditions.
fn health_of(addr: SocketAddr) -> (u16, String, Vec<String>) {
    let (status, body) = http(addr, "GET", "/health", None);
    let health: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    let state = health["state"].as_str().expect("state").to_owned();
    let conditions = health["reasons"]
        .as_array()
        .expect("reasons")
        .iter()
        .map(|r| r["condition"].as_str().expect("condition").to_owned())
        .collect();
    (status, state, conditions)
}

/// Polls `/health` (doing `each` before every poll) until it answers `status` and `state`,
/// at most `limit`; returns the conditions then.
fn wait_health(
    addr: SocketAddr,
    status: u16,
    state: &str,
    limit: Duration,
    mut each: impl FnMut(),
) -> Vec<String> {
    let deadline = Instant::now() + limit;
    loop {
        each();
        let seen = health_of(addr);
        if seen.0 == status && seen.1 == state {
            return seen.2;
        }
        assert!(
            Instant::now() < deadline,
            "no {status} {state} within {limit:?}; last {seen:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_silent_udp_line_turns_health_unhealthy_503_and_a_packet_brings_it_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("line.toml");
    let data = free_port();
    // The stale bound is half the silence timeout, at most 2 s: 2 s here, with 28 s more
    // before the line would end.
    let toml = format!(
        "[engine]\nmax_orders = 1024\nmax_books = 16\nlevels_per_side = 16\n\n\
         [feed]\nkind = \"moldudp64\"\nname = \"nasdaq\"\nbind = \"127.0.0.1:{data}\"\n\
         silence_timeout_s = 30.0\nmax_duration_s = 60.0\n\n\
         [admin]\nlisten = \"127.0.0.1:0\"\n"
    );
    std::fs::write(&config, toml).expect("write config");
    let mut run =
        Watched::spawn(ticklane().args(["run", "--config", config.to_str().expect("utf-8")]));
    let admin_line = run.wait_for_line("ticklane run: admin on http://", READY_WITHIN);
    let addr: SocketAddr = admin_line
        .trim_start_matches("ticklane run: admin on http://")
        .split(' ')
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no address in {admin_line:?}"));
    run.wait_for_line("ticklane run: ready (", READY_WITHIN);
    let sender = std::net::UdpSocket::bind("127.0.0.1:0").expect("sender");
    let beat = || {
        sender
            .send_to(&moldudp64::heartbeat(b"HEALTH    ", 1), ("127.0.0.1", data))
            .expect("send a heartbeat");
    };
    let within = Duration::from_secs(15);

    // Nothing heard since the start: past the stale bound the line is silent.
    let raised = wait_health(addr, 503, "Unhealthy", within, || {});
    assert!(raised.contains(&"line_silent".to_owned()), "{raised:?}");
    // Heartbeats: live again, nothing raised.
    let raised = wait_health(addr, 200, "Healthy", within, beat);
    assert!(raised.is_empty(), "{raised:?}");
    // Silent again: Unhealthy again, and a heartbeat ends it.
    let raised = wait_health(addr, 503, "Unhealthy", within, || {});
    assert_eq!(raised, ["line_stale", "line_silent"]);
    let raised = wait_health(addr, 200, "Healthy", within, beat);
    assert!(raised.is_empty(), "{raised:?}");

    assert!(Command::new("kill")
        .args(["-TERM", &run.child.id().to_string()])
        .status()
        .expect("kill")
        .success());
    let out = run.finish(Duration::from_secs(10));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
