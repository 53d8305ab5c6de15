//! The `[serve]` keys of the storm defences and the server's connections, and the `[web]`
//! keys that guard the browser view.
//! Each is refused out of its rule with an error naming the key (exit 2 in the binary, as
//! every config error), the pairs that must agree are refused together, and an absent key
//! keeps its built-in value. The ranges and defaults below are written out by hand from
//! `engine/ticklane.example.toml`, not read from the code under test.

use std::path::Path;
use std::time::Duration;

use ticklane_engine::config::{ConfigError, RunConfig};
use ticklane_engine::serve::ServeConfig;
use ticklane_engine::serve_guard::AdmissionConfig;

/// A valid MoldUDP64 file with `serve` as the lines after `[serve]` (line 5 on).
fn with_serve(serve: &str) -> String {
    format!("[feed]\nkind = \"moldudp64\"\nbind = \"127.0.0.1:26477\"\n[serve]\n{serve}\n")
}

fn parse(text: &str) -> Result<RunConfig, ConfigError> {
    RunConfig::parse(text, Path::new("conf/serve.toml"))
}

fn refused(text: &str) -> ConfigError {
    match parse(text) {
        Ok(config) => panic!("accepted:\n{text}\n{:?}", config.serve),
        Err(e) => e,
    }
}

/// Every key with the rule the example configuration gives it: (key, a value just outside,
/// the rule).
const RULES: [(&str, &str, &str); 27] = [
    ("accept_per_second", "0", "an integer in 1 ..= 1000000"),
    ("accept_burst", "1000001", "an integer in 1 ..= 1000000"),
    ("max_connections", "0", "an integer in 1 ..= 1000000"),
    ("handshake_per_second", "0", "an integer in 1 ..= 1000000"),
    ("handshake_burst", "-1", "an integer in 1 ..= 1000000"),
    (
        "handshake_max_in_flight",
        "0",
        "an integer in 1 ..= 1000000",
    ),
    ("login_per_second", "0", "an integer in 1 ..= 1000000"),
    ("login_burst", "0", "an integer in 1 ..= 1000000"),
    ("login_max_in_flight", "0", "an integer in 1 ..= 1000000"),
    ("subscribe_per_second", "1.5", "an integer in 1 ..= 1000000"),
    ("subscribe_burst", "0", "an integer in 1 ..= 1000000"),
    (
        "subscribe_max_in_flight",
        "0",
        "an integer in 1 ..= 1000000",
    ),
    ("symbol_list_per_second", "0", "an integer in 1 ..= 1000000"),
    ("symbol_list_burst", "\"5\"", "an integer in 1 ..= 1000000"),
    (
        "symbol_list_max_in_flight",
        "0",
        "an integer in 1 ..= 1000000",
    ),
    ("ip_max_connections", "0", "an integer in 1 ..= 1000000"),
    ("ip_max_attempts", "0", "an integer in 1 ..= 1000000"),
    ("account_max_sessions", "0", "an integer in 1 ..= 1000000"),
    ("account_max_attempts", "0", "an integer in 1 ..= 1000000"),
    ("attempt_window_ms", "9", "an integer in 10 ..= 3600000"),
    ("retry_after_min_ms", "0", "an integer in 1 ..= 3600000"),
    (
        "retry_after_max_ms",
        "3600001",
        "an integer in 1 ..= 3600000",
    ),
    ("login_timeout_ms", "9", "an integer in 10 ..= 600000"),
    ("heartbeat_ms", "9", "an integer in 10 ..= 60000"),
    ("idle_timeout_ms", "29", "an integer in 30 ..= 3600000"),
    ("high_water_bytes", "983039", "an integer in 0 ..= 983038"),
    ("low_water_bytes", "-1", "an integer in 0 ..= 983038"),
];

#[test]
fn every_serve_key_out_of_its_rule_is_refused_naming_the_key() {
    for (key, value, rule) in RULES {
        let e = refused(&with_serve(&format!("{key} = {value}")));
        let message = e.to_string();
        let full = format!("serve.{key}");
        assert_eq!(e.key(), Some(full.as_str()), "{message}");
        assert_eq!(e.location().map(|l| l.line), Some(5), "{message}");
        assert!(
            message.contains(&format!("{full} = {value} ")),
            "{message:?} lacks the key and value"
        );
        assert!(message.contains(rule), "{message:?} lacks {rule:?}");
    }
}

#[test]
fn every_serve_key_at_its_rules_edge_is_taken() {
    let inside = [
        ("accept_per_second", 1u64),
        ("accept_burst", 1_000_000),
        ("attempt_window_ms", 10),
        ("login_timeout_ms", 600_000),
        ("high_water_bytes", 983_038),
        ("low_water_bytes", 0),
    ];
    for (key, value) in inside {
        let text = with_serve(&format!("{key} = {value}"));
        assert!(
            parse(&text).is_ok(),
            "{text} refused: {:?}",
            parse(&text).err()
        );
    }
}

#[test]
fn a_fixed_retry_after_is_refused_because_it_resynchronises_clients() {
    for (min, max) in [(3_000, 3_000), (4_000, 2_000)] {
        let e = refused(&with_serve(&format!(
            "retry_after_min_ms = {min}\nretry_after_max_ms = {max}"
        )));
        let message = e.to_string();
        assert_eq!(e.key(), Some("serve.retry_after_min_ms"), "{message}");
        assert!(message.contains("one fixed retry-after"), "{message}");
        assert!(
            message.contains("retry_after_min_ms < retry_after_max_ms"),
            "{message}"
        );
    }
    // Against the default maximum (5 s) too.
    let e = refused(&with_serve("retry_after_min_ms = 5000"));
    assert_eq!(e.key(), Some("serve.retry_after_min_ms"), "{e}");
}

#[test]
fn an_idle_timeout_under_three_heartbeats_is_refused() {
    let e = refused(&with_serve("heartbeat_ms = 500\nidle_timeout_ms = 1499"));
    assert_eq!(e.key(), Some("serve.idle_timeout_ms"), "{e}");
    assert!(
        e.to_string()
            .contains("idle_timeout_ms >= 3 * heartbeat_ms"),
        "{e}"
    );
    assert!(parse(&with_serve("heartbeat_ms = 500\nidle_timeout_ms = 1500")).is_ok());
    // The default idle timeout (10 s) against a long heartbeat.
    let e = refused(&with_serve("heartbeat_ms = 4000"));
    assert_eq!(e.key(), Some("serve.idle_timeout_ms"), "{e}");
}

#[test]
fn a_low_mark_not_below_the_high_mark_is_refused() {
    let e = refused(&with_serve(
        "high_water_bytes = 4096\nlow_water_bytes = 4096",
    ));
    assert_eq!(e.key(), Some("serve.low_water_bytes"), "{e}");
    // The default low mark (64 KiB) above a small high mark.
    let e = refused(&with_serve("high_water_bytes = 1024"));
    assert_eq!(e.key(), Some("serve.low_water_bytes"), "{e}");
}

#[test]
fn absent_keys_keep_the_built_in_values() {
    let serve = parse(&with_serve("")).unwrap().serve;
    let a = serve.admission;
    // The documented defaults (`engine/ticklane.example.toml`), by hand.
    assert_eq!(
        (
            a.connect.per_second,
            a.connect.burst,
            a.connect.max_in_flight
        ),
        (500, 100, 10_000)
    );
    assert_eq!(
        (
            a.symbol_list.per_second,
            a.symbol_list.burst,
            a.symbol_list.max_in_flight
        ),
        (20, 5, 2)
    );
    assert_eq!((a.per_ip.max_open, a.per_ip.max_attempts), (16, 30));
    assert_eq!(
        (a.per_account.max_open, a.per_account.max_attempts),
        (4, 10)
    );
    assert_eq!(a.per_ip.window_ns, 10_000_000_000);
    assert_eq!((a.retry_after.min_ms, a.retry_after.max_ms), (2_000, 5_000));
    assert_eq!(a.login_timeout_ms, 5_000);
    assert_eq!(serve.heartbeat_ms, 1_000);
    assert_eq!(serve.idle_timeout, Duration::from_secs(10));
    assert_eq!(
        (serve.high_water_bytes, serve.low_water_bytes),
        (512 << 10, 64 << 10)
    );
    // And they are the values the code had built in before the keys existed.
    assert_eq!(a, AdmissionConfig::default());
    let built_in = ServeConfig::new("127.0.0.1:0".parse().unwrap());
    assert_eq!(serve.heartbeat_ms, built_in.heartbeat_ms);
    assert_eq!(serve.idle_timeout, built_in.idle_timeout);
    assert_eq!(
        (serve.high_water_bytes, serve.low_water_bytes),
        (built_in.high_water, built_in.low_water)
    );
}

#[test]
fn set_keys_reach_the_admission_settings() {
    let serve = parse(&with_serve(
        "accept_per_second = 60\naccept_burst = 20\nsymbol_list_max_in_flight = 1\n\
         ip_max_connections = 3\naccount_max_attempts = 7\nattempt_window_ms = 2500\n\
         retry_after_min_ms = 250\nretry_after_max_ms = 2500\nlogin_timeout_ms = 800\n\
         heartbeat_ms = 100\nidle_timeout_ms = 300\nhigh_water_bytes = 8192\n\
         low_water_bytes = 1024",
    ))
    .unwrap()
    .serve;
    let a = serve.admission;
    assert_eq!((a.connect.per_second, a.connect.burst), (60, 20));
    assert_eq!(a.symbol_list.max_in_flight, 1);
    assert_eq!(a.per_ip.max_open, 3);
    assert_eq!(a.per_account.max_attempts, 7);
    assert_eq!(
        (a.per_ip.window_ns, a.per_account.window_ns),
        (2_500_000_000, 2_500_000_000)
    );
    assert_eq!((a.retry_after.min_ms, a.retry_after.max_ms), (250, 2_500));
    assert_eq!(a.login_timeout_ms, 800);
    assert_eq!(serve.heartbeat_ms, 100);
    assert_eq!(serve.idle_timeout, Duration::from_millis(300));
    assert_eq!(
        (serve.high_water_bytes, serve.low_water_bytes),
        (8192, 1024)
    );
}

#[test]
fn tls_keys_come_in_pairs_and_their_files_are_checked_at_load() {
    use ticklane_testkit::certs::TestCa;
    let dir = tempfile::tempdir().expect("dir");
    let ca = TestCa::new("config test CA");
    let good = ca.issue(dir.path(), "good", &["localhost"]);
    let old = ca.issue_expired(dir.path(), "old", &["localhost"]);
    let other = ca.issue(dir.path(), "other", &["localhost"]);
    let keys = |cert: &Path, key: &Path| {
        with_serve(&format!(
            "tls_cert = {:?}\ntls_key = {:?}",
            cert.display().to_string(),
            key.display().to_string()
        ))
    };

    let config = parse(&keys(&good.cert, &good.key)).expect("a good pair");
    let tls = config.serve.tls.expect("TLS on");
    assert_eq!((tls.cert, tls.key), (good.cert.clone(), good.key.clone()));
    assert_eq!(config.serve.tls_handshake_timeout, Duration::from_secs(5));
    assert!(parse(&with_serve("")).expect("plain").serve.tls.is_none());

    let half = refused(&with_serve(&format!("tls_cert = {:?}", good.cert)));
    assert_eq!(half.key(), Some("serve.tls_cert"));
    assert!(half.to_string().contains("without serve.tls_key"), "{half}");

    let expired = refused(&keys(&old.cert, &old.key));
    assert_eq!(expired.key(), Some("serve.tls_cert"));
    let text = expired.to_string();
    assert!(
        text.contains(&old.cert.display().to_string()) && text.contains("expired"),
        "{text}"
    );

    let mismatch = refused(&keys(&good.cert, &other.key));
    assert_eq!(mismatch.key(), Some("serve.tls_key"));
    assert!(
        mismatch.to_string().contains("does not match"),
        "{mismatch}"
    );

    let missing = dir.path().join("missing.pem");
    let unreadable = refused(&keys(&good.cert, &missing));
    assert_eq!(unreadable.key(), Some("serve.tls_key"));
    assert!(
        unreadable.to_string().contains("missing.pem"),
        "{unreadable}"
    );

    let timeout = refused(&with_serve("tls_handshake_timeout_ms = 5"));
    assert_eq!(timeout.key(), Some("serve.tls_handshake_timeout_ms"));
}

#[test]
fn the_browser_views_tls_keys_are_checked_as_the_servers_are_and_its_session_length_too() {
    use ticklane_testkit::certs::TestCa;
    let dir = tempfile::tempdir().expect("dir");
    let ca = TestCa::new("config test CA");
    let good = ca.issue(dir.path(), "good", &["localhost"]);
    let old = ca.issue_expired(dir.path(), "old", &["localhost"]);
    let web = |lines: &str| {
        format!(
            "[feed]\nkind = \"moldudp64\"\nbind = \"127.0.0.1:26477\"\n[snapshot]\n\
             path = \"/tmp/s\"\n[web]\nlisten = \"127.0.0.1:8080\"\n{lines}\n"
        )
    };
    let pair = |cert: &Path, key: &Path| {
        web(&format!(
            "tls_cert = {:?}\ntls_key = {:?}",
            cert.display().to_string(),
            key.display().to_string()
        ))
    };
    let config = parse(&pair(&good.cert, &good.key)).expect("a good pair");
    assert_eq!(config.web.tls.expect("HTTPS").cert, good.cert);
    assert_eq!(config.web.session_length, Duration::from_secs(12 * 3600));
    let half = refused(&web(&format!("tls_key = {:?}", good.key)));
    assert_eq!(half.key(), Some("web.tls_key"));
    assert!(half.to_string().contains("without web.tls_cert"), "{half}");
    let expired = refused(&pair(&old.cert, &old.key));
    assert_eq!(expired.key(), Some("web.tls_cert"));
    assert_eq!(
        parse(&web("session_minutes = 10080"))
            .expect("a week")
            .web
            .session_length,
        Duration::from_secs(7 * 24 * 3600)
    );
    for bad in ["session_minutes = 0", "session_minutes = 10081"] {
        assert_eq!(
            refused(&web(bad)).key(),
            Some("web.session_minutes"),
            "{bad}"
        );
    }
}
