//! A real `ticklane run` whose subscriber server speaks TLS (`[serve] tls_cert`/`tls_key`,
//! certificates made in the test): `ticklane subscribe --ca` verifies it and connects; a
//! subscriber that trusts another CA ends at once with exit 1 and says TLS, without
//! retrying; an expired certificate stops `run` before it starts, exit 2, naming the file.
//!
//! Bounded: every wait has a limit.

use std::path::Path;
use std::time::{Duration, Instant};

use ticklane_testkit::certs::{CertFiles, TestCa};

use crate::util::{free_port, ticklane, utf8, wait_bounded, Watched, READY_WITHIN};

fn config(dir: &Path, files: &CertFiles, serve: u16) -> std::path::PathBuf {
    let path = dir.join("line.toml");
    std::fs::write(
        &path,
        format!(
            "[snapshot]\npath = \"{}\"\n\n\
             [serve]\nlisten = \"127.0.0.1:{serve}\"\ntls_cert = \"{}\"\ntls_key = \"{}\"\n\n\
             [feed]\nkind = \"moldudp64\"\nbind = \"127.0.0.1:{}\"\n\
             silence_timeout_s = 30.0\nmax_duration_s = 60.0\n",
            dir.join("books.snap").display(),
            files.cert.display(),
            files.key.display(),
            free_port(),
        ),
    )
    .expect("write config");
    path
}

/// Sends `signal` to the child `pid` (which is live until it is waited for).
fn signal(signal: &str, pid: u32) {
    let sent = std::process::Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .expect("kill");
    assert!(sent.success(), "kill {signal} {pid}");
}

#[test]
fn subscribe_verifies_the_engines_certificate_and_refuses_another_ca() {
    let dir = tempfile::tempdir().expect("dir");
    let ca = TestCa::new("engine CA");
    let files = ca.issue(dir.path(), "serve", &["localhost", "127.0.0.1"]);
    let trusted = ca.write(dir.path(), "ca.pem");
    let other = TestCa::new("another CA").write(dir.path(), "other.pem");
    let serve = free_port();
    let mut run = Watched::spawn(ticklane().args([
        "run",
        "--config",
        utf8(&config(dir.path(), &files, serve)),
    ]));
    run.wait_for_line("ticklane run: subscribers on", READY_WITHIN);
    let server = format!("127.0.0.1:{serve}");

    let mut subscriber = Watched::spawn(ticklane().args([
        "subscribe",
        "--server",
        &server,
        "--symbols",
        "AAPL",
        "--ca",
        utf8(&trusted),
    ]));
    subscriber.wait_for_line("connected", READY_WITHIN);
    signal("-INT", subscriber.child.id());
    let out = subscriber.finish(Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(130), "ended by Ctrl-C");

    let started = Instant::now();
    let refused = wait_bounded(
        ticklane()
            .args(["subscribe", "--server", &server, "--symbols", "AAPL"])
            .args(["--ca", utf8(&other)])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start subscribe"),
        Duration::from_secs(20),
    );
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("TLS"), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "not retried: {:?}",
        started.elapsed()
    );
    signal("-TERM", run.child.id());
    let out = run.finish(Duration::from_secs(30));
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(summary.contains("1 accepted"), "{summary}");
}

#[test]
fn an_expired_certificate_stops_run_before_it_starts() {
    let dir = tempfile::tempdir().expect("dir");
    let files = TestCa::new("engine CA").issue_expired(dir.path(), "old", &["localhost"]);
    let out = wait_bounded(
        ticklane()
            .args([
                "run",
                "--config",
                utf8(&config(dir.path(), &files, free_port())),
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start run"),
        Duration::from_secs(20),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("serve.tls_cert") && stderr.contains(&files.cert.display().to_string()),
        "{stderr}"
    );
    assert!(stderr.contains("expired"), "{stderr}");
}
