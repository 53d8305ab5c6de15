//! `ticklane account add` and a real `ticklane run` whose subscriber server requires
//! accounts: the password is read from stdin, never the command line; the file stays
//! owner-only and a symbolic link to it stays a link; `subscribe` with the right password
//! (`TICKLANE_PASSWORD` or `--password-file`) connects, a wrong one and none are refused
//! at once (exit 1, not retried), and the audit file says who tried.
//!
//! Bounded: every wait has a limit.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use crate::util::{free_port, ticklane, utf8, wait_bounded, Watched, READY_WITHIN};

/// `ticklane account add NAME --file FILE --symbols SYMBOLS`, the password on stdin.
fn add(file: &Path, name: &str, password: &str, symbols: &str) -> std::process::Output {
    let mut child = ticklane()
        .args([
            "account",
            "add",
            name,
            "--file",
            utf8(file),
            "--symbols",
            symbols,
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start account add");
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{password}").unwrap();
    drop(stdin);
    wait_bounded(child, Duration::from_secs(30))
}

fn subscribe(server: &str) -> std::process::Command {
    let mut command = ticklane();
    command
        .args(["subscribe", "--server", server, "--symbols", "AAPL"])
        .args(["--account", "alice", "--max-attempts", "1"])
        .env_remove("TICKLANE_PASSWORD")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

#[test]
fn accounts_are_added_from_stdin_and_only_the_right_password_gets_in() {
    let dir = tempfile::tempdir().expect("dir");
    let real = dir.path().join("accounts.toml");
    let link = dir.path().join("link.toml");
    std::os::unix::fs::symlink("accounts.toml", &link).unwrap();
    // Through a link whose file does not exist yet, then again through it.
    let first = add(&link, "alice", "alice-pw", "AAPL,Q*");
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let second = add(&link, "bob", "bob-pw", "*");
    assert!(
        second.status.success(),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let text = std::fs::read_to_string(&real).unwrap();
    assert_eq!(text.matches("[[account]]").count(), 2, "{text}");
    assert!(
        !text.contains("alice-pw") && text.contains("$argon2id$"),
        "{text}"
    );
    let mode = std::fs::metadata(&real).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let again = add(&link, "alice", "other", "AAPL");
    assert_eq!(
        again.status.code(),
        Some(2),
        "a name already there is refused"
    );

    let serve = free_port();
    let audit = dir.path().join("audit.log");
    let config = dir.path().join("line.toml");
    std::fs::write(
        &config,
        format!(
            "[snapshot]\npath = \"{}\"\n\n[serve]\nlisten = \"127.0.0.1:{serve}\"\n\
             accounts = \"{}\"\naudit_log = \"{}\"\nlogin_failure_delay_ms = 200\n\n\
             [feed]\nkind = \"moldudp64\"\nbind = \"127.0.0.1:{}\"\n\
             silence_timeout_s = 30.0\nmax_duration_s = 60.0\n",
            dir.path().join("books.snap").display(),
            link.display(),
            audit.display(),
            free_port(),
        ),
    )
    .unwrap();
    let mut run = Watched::spawn(ticklane().args(["run", "--config", utf8(&config)]));
    run.wait_for_line("ticklane run: subscribers on", READY_WITHIN);
    let server = format!("127.0.0.1:{serve}");

    let password_file = dir.path().join("alice.pw");
    std::fs::write(&password_file, "alice-pw\n").unwrap();
    let mut right = subscribe(&server);
    right.args(["--password-file", utf8(&password_file)]);
    let mut subscriber = Watched::spawn(&mut right);
    subscriber.wait_for_line("connected", READY_WITHIN);
    subscriber.child.kill().unwrap();
    let _ = subscriber.finish(Duration::from_secs(10));

    let mut wrong = subscribe(&server);
    wrong.env("TICKLANE_PASSWORD", "alice-PW");
    let mut none = subscribe(&server);
    for (command, says) in [(&mut wrong, "not authorised"), (&mut none, "version")] {
        let out = wait_bounded(command.spawn().unwrap(), Duration::from_secs(20));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
    }

    let stopped = std::process::Command::new("kill")
        .args(["-TERM", &run.child.id().to_string()])
        .status()
        .unwrap();
    assert!(stopped.success());
    let out = run.finish(Duration::from_secs(30));
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(
        summary.contains("accounts: 1 logins not authorised, 1 without a secret (version 1)"),
        "{summary}"
    );
    let lines = std::fs::read_to_string(&audit).unwrap();
    let results: Vec<_> = lines
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|l| l["event"] == "login")
        .map(|l| format!("{} {}", l["account"], l["result"]))
        .collect();
    assert_eq!(
        results,
        [
            "\"alice\" \"accepted\"",
            "\"alice\" \"refused\"",
            "\"alice\" \"refused\""
        ],
        "{lines}"
    );
}
