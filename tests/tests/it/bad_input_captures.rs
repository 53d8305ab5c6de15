//! `ticklane replay` on captures a new user might hand it: empty files, captures of another
//! link type or of other traffic, an input that cannot be opened, a session with lost
//! messages. Each gets a clear error or an honest result, on the screen and in the summary
//! JSON, and a failure where nothing was replayed. Captures are laid out by hand from the
//! pcap, pcapng, IPv4/UDP and MoldUDP64 specifications, so the expected counts come from the
//! bytes written here, not from the reader under test.

use std::path::{Path, PathBuf};

use ticklane_engine::exit_status::ExitStatus;
use ticklane_engine::pipeline::{Pace, PipelineConfig};
use ticklane_engine::replay::{
    replay_file, replay_paced, ReplayError, ReplayFault, ReplayOptions, ReplaySummary,
};
use ticklane_testkit::itch::START_OF_MESSAGES;
use ticklane_testkit::moldudp64;
use ticklane_testkit::pcap::{ethernet_ipv4, pcap, pcapng, ETHERNET, WIFI};

struct Replayed {
    summary: ReplaySummary,
    json: String,
    _dir: tempfile::TempDir,
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write input");
    path
}

fn options(input: PathBuf, summary_json: PathBuf) -> ReplayOptions {
    ReplayOptions {
        input,
        summary_json: Some(summary_json),
        depth: 5,
        ..ReplayOptions::default()
    }
}

/// Replays `bytes` unpaced, with a summary JSON.
fn replay(name: &str, bytes: &[u8]) -> Replayed {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = write(dir.path(), name, bytes);
    let json_path = dir.path().join("summary.json");
    let outcome = replay_file(&options(input, json_path.clone())).expect("opens");
    let json = std::fs::read_to_string(&json_path).expect("the summary is written");
    Replayed {
        summary: outcome.summary,
        json,
        _dir: dir,
    }
}

/// Replays `bytes` through the pipeline at full speed, with a summary JSON.
fn replay_through_pipeline(name: &str, bytes: &[u8]) -> Replayed {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = write(dir.path(), name, bytes);
    let json_path = dir.path().join("summary.json");
    let opts = options(input, json_path.clone());
    let pipeline = PipelineConfig {
        ring_slots: 64,
        books: opts.books,
        ..PipelineConfig::default()
    };
    let outcome = replay_paced(&opts, Pace::Max, pipeline, None).expect("opens");
    let json = std::fs::read_to_string(&json_path).expect("the summary is written");
    Replayed {
        summary: outcome.summary,
        json,
        _dir: dir,
    }
}

/// Asserts a replay of nothing: a failure, said once on the screen and in the JSON.
fn assert_no_feed_data(r: &Replayed, says: &[&str]) {
    let s = &r.summary;
    assert_eq!(s.messages, 0);
    assert!(
        matches!(s.error, Some(ReplayFault::NoFeedData { .. })),
        "{:?}",
        s.error
    );
    assert_eq!(s.exit_status(), ExitStatus::Failure);
    assert_eq!(s.exit_status().code(), 1);
    let text = s.to_text();
    assert_eq!(text.matches("NO FEED DATA: ").count(), 1, "{text}");
    for needle in says {
        assert!(text.contains(needle), "{needle:?} missing from:\n{text}");
        assert!(
            r.json.contains(needle),
            "{needle:?} missing from {}",
            r.json
        );
    }
    assert!(!r.json.contains("\"error\":null"), "{}", r.json);
}

#[test]
fn an_empty_input_says_so_and_fails() {
    for replayed in [
        replay("empty.itch50", &[]),
        replay_through_pipeline("empty.itch50", &[]),
    ] {
        assert_no_feed_data(
            &replayed,
            &["no messages: the input is empty", "empty.itch50"],
        );
    }
}

#[test]
fn a_capture_of_another_link_type_says_which_and_fails() {
    let wifi = vec![0x08, 0x00, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
    let bytes = pcapng(&[WIFI], &[(0, wifi.clone()), (0, wifi.clone()), (0, wifi)]);
    for replayed in [
        replay("wifi.pcapng", &bytes),
        replay_through_pipeline("wifi.pcapng", &bytes),
    ] {
        assert_no_feed_data(
            &replayed,
            &[
                "none of the 3 packets carried MoldUDP64",
                "link type 105 (IEEE 802.11)",
            ],
        );
        assert!(
            replayed.json.contains("\"unsupported_link_frames\":3"),
            "{}",
            replayed.json
        );
        assert!(
            replayed.json.contains("\"unsupported_link_type\":105"),
            "{}",
            replayed.json
        );
        assert!(replayed.json.contains("\"packets\":3"), "{}", replayed.json);
        // Said once, in the fault, not again as a warning.
        let text = replayed.summary.to_text();
        assert_eq!(text.matches("link type 105").count(), 1, "{text}");
    }
}

#[test]
fn a_capture_of_other_traffic_counts_it_and_fails() {
    let tcp = ethernet_ipv4(6, b"GET / HTTP/1.1\r\n");
    let dns = ethernet_ipv4(17, b"not moldudp64");
    let bytes = pcap(u32::from(ETHERNET), &[tcp, dns]);
    let replayed = replay("other.pcap", &bytes);
    assert_no_feed_data(&replayed, &["none of the 2 packets carried MoldUDP64"]);
    for key in [
        "\"packets\":2",
        "\"mold_packets\":0",
        "\"non_mold_packets\":2",
        "\"non_udp_frames\":1",
        "\"non_mold_datagrams\":1",
        "\"unsupported_link_frames\":0",
        "\"unsupported_link_type\":null",
    ] {
        assert!(
            replayed.json.contains(key),
            "{key} missing from {}",
            replayed.json
        );
    }
}

#[test]
fn a_session_of_heartbeats_is_an_honest_empty_result_not_a_failure() {
    let heartbeat = ethernet_ipv4(17, &moldudp64::packet(b"SESSION001", 1, &[]));
    let bytes = pcap(u32::from(ETHERNET), &[heartbeat.clone(), heartbeat]);
    let replayed = replay("quiet.pcap", &bytes);
    let s = &replayed.summary;
    assert!(s.error.is_none(), "{:?}", s.error);
    assert_eq!(s.exit_status(), ExitStatus::Success);
    assert!(s.no_messages.is_some());
    let text = s.to_text();
    assert!(
        text.contains("NOTE: no messages: the 2 MoldUDP64 packets"),
        "{text}"
    );
    assert!(replayed
        .json
        .contains("\"no_messages\":\"no messages: the 2 MoldUDP64"));
    assert!(
        replayed.json.contains("\"error\":null"),
        "{}",
        replayed.json
    );
}

#[test]
fn an_unsupported_link_beside_real_traffic_gets_a_warning_and_the_messages_count() {
    let ethernet = ethernet_ipv4(
        17,
        &moldudp64::packet(b"SESSION001", 1, &[&START_OF_MESSAGES, &START_OF_MESSAGES]),
    );
    let wifi = vec![0x08, 0x00, 0, 0];
    let bytes = pcapng(&[ETHERNET, WIFI], &[(0, ethernet), (1, wifi)]);
    for replayed in [
        replay("mixed.pcapng", &bytes),
        replay_through_pipeline("mixed.pcapng", &bytes),
    ] {
        let s = &replayed.summary;
        assert_eq!(s.messages, 2);
        assert!(s.error.is_none(), "{:?}", s.error);
        assert_eq!(s.exit_status(), ExitStatus::Success);
        let text = s.to_text();
        assert!(
            text.contains("WARNING: link type 105 (IEEE 802.11) is not supported")
                && text.contains("frames skipped: 1"),
            "{text}"
        );
        assert!(replayed.json.contains("\"unsupported_link_type\":105"));
        assert!(replayed.json.contains("\"unsupported_link_frames\":1"));
    }
}

#[test]
fn the_screen_shows_skipped_packets_session_changes_and_declared_lost_ranges() {
    let m = &START_OF_MESSAGES[..];
    let frames = [
        ethernet_ipv4(17, &moldudp64::packet(b"SESSION001", 1, &[m, m])),
        ethernet_ipv4(17, b"a datagram that is not MoldUDP64"),
        // Sequences 3 and 4 never arrive.
        ethernet_ipv4(17, &moldudp64::packet(b"SESSION001", 5, &[m])),
        // Message 5 again: a duplicate.
        ethernet_ipv4(17, &moldudp64::packet(b"SESSION001", 5, &[m])),
    ];
    let replayed = replay("lossy.pcap", &pcap(u32::from(ETHERNET), &frames));
    let s = &replayed.summary;
    assert_eq!(s.messages, 3);
    let text = s.to_text();
    for needle in [
        "packets                   4   MoldUDP64 3   other 1 (no IPv4/UDP 0, UDP not MoldUDP64 1)",
        "gaps 1 (2 messages declared lost)",
        "duplicates 1",
        "session changes 0",
        "declared lost: sequences 3 ..= 4",
    ] {
        assert!(text.contains(needle), "{needle:?} missing from:\n{text}");
    }
    for key in [
        "\"non_mold_packets\":1",
        "\"gap_ranges\":[[3,4]]",
        "\"missing_messages\":2",
        "\"duplicates\":1",
        "\"reordered\":0",
        "\"session_changes\":0",
    ] {
        assert!(
            replayed.json.contains(key),
            "{key} missing from {}",
            replayed.json
        );
    }
}

#[test]
fn a_read_error_is_carried_once_typed() {
    // A length prefix promising 12 bytes with 5 left: truncated.
    let mut bytes = vec![0, 12];
    bytes.extend_from_slice(&START_OF_MESSAGES);
    bytes.extend_from_slice(&[0, 12, b'S', 0, 0]);
    let replayed = replay("cut.itch50", &bytes);
    let s = &replayed.summary;
    assert_eq!(s.messages, 1);
    let Some(ReplayFault::Input(error)) = &s.error else {
        panic!("a truncated input is an input fault: {:?}", s.error);
    };
    assert_eq!((error.offset, error.index), (14, 2));
    assert_eq!(s.exit_status(), ExitStatus::Failure);
    let text = s.to_text();
    let said = error.to_string();
    assert_eq!(text.matches(&said).count(), 1, "{text}");
    assert!(text.contains(&format!("STOPPED EARLY: {said}")), "{text}");
}

#[test]
fn an_input_that_cannot_be_opened_still_writes_the_summary_with_the_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("no-such-day.itch50");
    let json_path = dir.path().join("summary.json");
    let err = replay_file(&options(input.clone(), json_path.clone()))
        .err()
        .expect("nothing to open");
    assert!(matches!(err, ReplayError::Open(_)), "{err}");
    let json = std::fs::read_to_string(&json_path).expect("the summary comes with the error");
    let path = input.display().to_string();
    assert!(
        json.contains(&format!("\"error\":\"cannot open {path}: ")),
        "{json}"
    );
    assert!(json.contains("\"messages\":0"), "{json}");
    assert!(json.contains("\"format\":null"), "{json}");

    let pipeline = PipelineConfig::default();
    std::fs::remove_file(&json_path).expect("remove");
    let err = replay_paced(
        &options(input, json_path.clone()),
        Pace::Max,
        pipeline,
        None,
    )
    .err()
    .expect("nothing to open");
    assert!(matches!(err, ReplayError::Open(_)), "{err}");
    let json = std::fs::read_to_string(&json_path).expect("the paced summary comes too");
    assert!(json.contains("cannot open"), "{json}");
}
