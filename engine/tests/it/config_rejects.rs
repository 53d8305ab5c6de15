//! Configuration values a careless loader would panic on, abort on, or run with a silent
//! default, one test each: each must be refused with an error that names the file, the key's
//! full dotted path, the value, the allowed range and the key's line.
//!
//! The ranges below are written out by hand from `engine/ticklane.example.toml`, not read from
//! the code under test.

use std::path::Path;

use ticklane_engine::config::{ConfigError, RunConfig};

/// A valid MoldUDP64 file; `engine` and `feed_extra` are inserted as lines 2 and 7.
fn mold(engine: &str, snapshot: &str, feed_extra: &str) -> String {
    format!(
        "[engine]\n{engine}\n[snapshot]\n{snapshot}\n[feed]\nkind = \"moldudp64\"\n\
         {feed_extra}\nbind = \"127.0.0.1:26477\"\n"
    )
}

fn refused(text: &str) -> ConfigError {
    match RunConfig::parse(text, Path::new("conf/case.toml")) {
        Ok(config) => panic!("accepted:\n{text}\n{config:?}"),
        Err(e) => e,
    }
}

/// The error names the file, the key, the value as written and the allowed range, and
/// points at `line`.
fn assert_names(e: &ConfigError, key: &str, value: &str, allowed: &str, line: usize) {
    let message = e.to_string();
    assert_eq!(e.key(), Some(key), "{message}");
    assert_eq!(e.location().map(|l| l.line), Some(line), "{message}");
    for part in [
        format!("conf/case.toml:{line}:"),
        format!("{key} = {value} "),
        format!("allowed: {allowed}"),
    ] {
        assert!(message.contains(&part), "{message:?} lacks {part:?}");
    }
}

#[test]
fn a_negative_max_duration_is_refused_not_a_panic() {
    let e = refused(&mold("", "", "max_duration_s = -3"));
    assert_names(
        &e,
        "feed.max_duration_s",
        "-3",
        "a finite number of seconds in 0.001 ..= 604800",
        7,
    );
}

#[test]
fn a_negative_silence_timeout_is_refused_not_replaced_by_5s() {
    let e = refused(&mold("", "", "silence_timeout_s = -1"));
    assert_names(
        &e,
        "feed.silence_timeout_s",
        "-1",
        "a finite number of seconds in 1 ..= 3600",
        7,
    );
    let e = refused(&mold("", "", "silence_timeout_s = -1.0"));
    assert_names(&e, "feed.silence_timeout_s", "-1.0", "a finite number", 7);
}

#[test]
fn nan_and_infinite_durations_are_refused() {
    for value in ["nan", "inf", "-inf", "0.0", "0"] {
        let e = refused(&mold("", "", &format!("max_duration_s = {value}")));
        assert_names(
            &e,
            "feed.max_duration_s",
            value,
            "a finite number of seconds in 0.001 ..= 604800",
            7,
        );
    }
}

#[test]
fn ring_slots_of_1_or_3_are_refused() {
    for value in ["1", "3"] {
        let e = refused(&mold(&format!("ring_slots = {value}"), "", ""));
        assert_names(
            &e,
            "engine.ring_slots",
            value,
            "a power of two in 1024 ..= 4194304",
            2,
        );
    }
}

#[test]
fn ring_slots_of_2_to_the_40_are_refused_not_an_allocation_abort() {
    let e = refused(&mold("ring_slots = 1099511627776", "", ""));
    assert_names(
        &e,
        "engine.ring_slots",
        "1099511627776",
        "a power of two in 1024 ..= 4194304",
        2,
    );
}

#[test]
fn levels_per_side_of_2_to_the_40_is_refused_not_a_bytemuck_panic() {
    let e = refused(&mold("levels_per_side = 1099511627776", "", ""));
    assert_names(
        &e,
        "engine.levels_per_side",
        "1099511627776",
        "an integer in 1 ..= 1048576",
        2,
    );
}

#[test]
fn max_books_of_2_to_the_40_is_refused() {
    let e = refused(&mold("max_books = 1099511627776", "", ""));
    assert_names(
        &e,
        "engine.max_books",
        "1099511627776",
        "an integer in 1 ..= 65536",
        2,
    );
}

#[test]
fn a_level_table_too_large_to_allocate_names_both_keys() {
    // Each in range on its own: 65,536 books of 2^20 levels is 2 TiB of levels.
    let e = refused(&mold(
        "max_books = 65536\nlevels_per_side = 1048576",
        "",
        "",
    ));
    let message = e.to_string();
    assert!(matches!(e, ConfigError::Conflict { .. }), "{message}");
    assert_eq!(e.location().map(|l| l.line), Some(3), "{message}");
    for part in ["engine.max_books", "engine.levels_per_side", "16 GiB"] {
        assert!(message.contains(part), "{message:?} lacks {part:?}");
    }
}

#[test]
fn a_reader_core_this_machine_lacks_is_refused() {
    let cores = core_affinity::get_core_ids().map_or(0, |ids| ids.len());
    // The case is core 99 on a 2-core machine; on a bigger one, one past its cores.
    let core = 99.max(cores + 1);
    let e = refused(&mold(&format!("reader_core = {core}"), "", ""));
    assert_names(
        &e,
        "engine.reader_core",
        &core.to_string(),
        "a core this process may run on: ",
        2,
    );
}

#[test]
fn a_snapshot_depth_of_100000_is_refused() {
    let e = refused(&mold("", "depth = 100000", ""));
    assert_names(
        &e,
        "snapshot.depth",
        "100000",
        "an integer in 1 ..= 1024",
        4,
    );
}

#[test]
fn feed_value_errors_point_at_the_key_not_the_feed_line() {
    // `[feed]` is line 5; each bad value is on line 7.
    for (line7, key, value, allowed) in [
        (
            "silence_timeout_s = \"5\"",
            "feed.silence_timeout_s",
            "\"5\"",
            "a finite number of seconds",
        ),
        (
            "request_server = \"nowhere\"",
            "feed.request_server",
            "\"nowhere\"",
            "a socket address to send to",
        ),
        (
            "multicast_group = \"10.0.0.1\"",
            "feed.multicast_group",
            "\"10.0.0.1\"",
            "an IPv4 multicast group",
        ),
        (
            "retransmit_timeout_ms = 0",
            "feed.retransmit_timeout_ms",
            "0",
            "an integer in 1 ..= 60000",
        ),
    ] {
        let e = refused(&mold("", "", line7));
        assert_names(&e, key, value, allowed, 7);
    }
}

#[test]
fn a_key_of_the_other_feed_kind_is_named() {
    let e = refused(&mold("", "", "username = \"me\""));
    assert_eq!(e.key(), Some("feed.username"));
    assert_eq!(e.location().map(|l| l.line), Some(7));
    assert!(e.to_string().contains("soupbintcp"), "{e}");
}

#[test]
fn soupbintcp_fields_must_fit_the_wire() {
    let text = "[feed]\nkind = \"soupbintcp\"\nserver = \"127.0.0.1:26400\"\n\
                username = \"toolong\"\npassword = \"pw\"\n";
    let e = refused(text);
    let message = e.to_string();
    assert_eq!(e.key(), Some("feed.username"), "{message}");
    assert_eq!(e.location().map(|l| l.line), Some(4), "{message}");
    assert!(
        message.contains("1 to 6 printable ASCII characters"),
        "{message}"
    );
}

#[test]
fn a_missing_feed_is_named() {
    let e = refused("[engine]\nwait = \"park\"\n");
    assert_eq!(e.key(), Some("feed.kind"));
    assert!(e.to_string().contains("moldudp64"), "{e}");
    let e = refused("[feed]\nkind = \"moldudp64\"\n");
    assert_eq!(e.key(), Some("feed.bind"));
}

#[test]
fn an_unreadable_file_is_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("absent.toml");
    let e = RunConfig::load(&path).expect_err("absent");
    assert!(matches!(e, ConfigError::Read { .. }));
    assert!(e.to_string().contains("absent.toml"), "{e}");
}

#[test]
fn the_largest_snapshot_geometry_accepted_is_one_the_writer_creates() {
    // The config's snapshot limits are the layout's: the writer takes the largest accepted
    // geometry and refuses one past it.
    let config = RunConfig::parse(
        &mold("", "depth = 1024\ncapacity = 65536", ""),
        Path::new("max.toml"),
    )
    .expect("largest geometry");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("max.snap");
    let (capacity, depth) = (config.snapshot.capacity, config.snapshot.depth);
    assert!(ticklane_engine::snapshot::SnapshotWriter::create(&path, capacity, depth).is_ok());
    assert!(ticklane_engine::snapshot::SnapshotWriter::create(&path, capacity, depth + 1).is_err());
    assert!(ticklane_engine::snapshot::SnapshotWriter::create(&path, capacity + 1, depth).is_err());
}

#[test]
fn the_staggered_start_and_shutdown_keys_are_checked_with_their_rules() {
    let e = refused(&mold("stagger_step_ms = 60001", "", ""));
    assert_names(
        &e,
        "engine.stagger_step_ms",
        "60001",
        "an integer in 0 ..= 60000",
        2,
    );
    let e = refused(&mold("stagger_cap_ms = -1", "", ""));
    assert_names(
        &e,
        "engine.stagger_cap_ms",
        "-1",
        "an integer in 0 ..= 600000",
        2,
    );
    let e = refused(&mold("shutdown_timeout_s = 0.05", "", ""));
    assert_names(
        &e,
        "engine.shutdown_timeout_s",
        "0.05",
        "a finite number of seconds in 0.1 ..= 600",
        2,
    );
    let e = refused(&mold("instance = 65536", "", ""));
    assert_names(
        &e,
        "engine.instance",
        "65536",
        "an integer in 0 ..= 65535",
        2,
    );
    let e = refused(&mold("instance = \"\"", "", ""));
    assert_eq!(e.key(), Some("engine.instance"), "{e}");
    // A name is accepted and hashed; an index is taken as it is.
    let named = RunConfig::parse(
        &mold("instance = \"host-a\"\nstagger_step_ms = 250", "", ""),
        Path::new("conf/case.toml"),
    )
    .expect("a named instance");
    assert_eq!(
        named.engine.stagger_step,
        std::time::Duration::from_millis(250)
    );
    assert!(named.engine.instance.index() < 1024);
}

#[test]
fn engine_wait_takes_only_its_documented_names() {
    for name in ["busy-spin", "spin-yield", "park"] {
        let text = mold(&format!("wait = \"{name}\""), "", "");
        RunConfig::parse(&text, Path::new("conf/case.toml"))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    // Names the wait strategy's own parser also takes, but the example file does not
    // document: refused, so that a file means the same to every reader.
    for name in ["spin", "yield", "sleep", "Park", ""] {
        let e = refused(&mold(&format!("wait = \"{name}\""), "", ""));
        let message = e.to_string();
        assert_eq!(e.key(), Some("engine.wait"), "{message}");
        assert_eq!(e.location().map(|l| l.line), Some(2), "{message}");
        assert!(
            message.contains("busy-spin") && message.contains("park"),
            "{message}"
        );
    }
}
