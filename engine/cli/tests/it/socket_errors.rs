//! Socket errors of a line read from a configuration file name the operation, the address
//! and the configuration key, print each cause once, and the SoupBinTCP reader keeps every
//! dropped connection with its typed reason. Each case goes through the library as
//! `ticklane run --config` does: parse the file, open the line, run it.
//!
//! Two `ticklane run` processes on one unicast address: the second is refused at its bind
//! (exit 1, naming the key), never handed the port to share.
//!
//! The addresses are chosen so the OS answers at once and nothing leaves the host:
//! 192.0.2.1 is TEST-NET-1 (RFC 5737), which no host of ours has (bound only, never sent
//! to), and a loopback port that was just released refuses connections.

use std::error::Error;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use ticklane_engine::config::{FeedConfig, RunConfig};
use ticklane_engine::live::{run_line, LineSource, LineSourceReport, FEED_KEYS};
use ticklane_engine::overload::OverloadConfig;
use ticklane_engine::pipeline::{DropReason, SourceEnd, SourceError};
use ticklane_feed::net::{NetError, SocketOp};

use crate::util::{free_port, ticklane, wait_bounded, Watched, READY_WITHIN};

/// Small books, so a run that fails at once does not first allocate the default tables.
const ENGINE: &str = "[engine]\nring_slots = 1024\nmax_orders = 1024\nmax_books = 16\n\
                      levels_per_side = 16\n";

fn config(feed: &str) -> RunConfig {
    RunConfig::parse(&format!("{ENGINE}[feed]\n{feed}"), Path::new("line.toml"))
        .expect("a valid configuration")
}

fn open(feed: &str) -> Result<LineSource, NetError> {
    let config = config(feed);
    let pipeline = config.pipeline().expect("engine section");
    LineSource::open(&config.feed_config().expect("feed section"), &pipeline)
}

/// What `anyhow`'s `{:#}` prints: the error, then each `source()`, joined by `: `.
fn chain(e: &(dyn Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// Every error in the chain adds text of its own: none repeats its source's.
fn assert_each_cause_once(e: &(dyn Error + 'static)) {
    let mut outer = Some(e);
    while let Some(error) = outer {
        if let Some(source) = error.source() {
            assert!(
                !error.to_string().contains(&source.to_string()),
                "{error:?} repeats its source {source:?}"
            );
        }
        outer = error.source();
    }
}

#[test]
fn binding_an_address_this_host_lacks_names_the_address_and_the_key() {
    let Err(e) = open("kind = \"moldudp64\"\nbind = \"192.0.2.1:0\"\n") else {
        panic!("bound 192.0.2.1, a TEST-NET-1 address no host of ours has");
    };
    let addr: SocketAddr = "192.0.2.1:0".parse().expect("address");
    assert_eq!(e.op(), SocketOp::Bind { addr });
    assert_eq!(e.keys().collect::<Vec<_>>(), ["feed.bind"]);
    assert_eq!(e.io_error().kind(), io::ErrorKind::AddrNotAvailable);
    // EADDRNOTAVAIL is 99 on Linux: `Cannot assign requested address (os error 99)`.
    #[cfg(target_os = "linux")]
    assert_eq!(
        chain(&e),
        format!(
            "cannot bind a UDP socket to 192.0.2.1:0 (config key feed.bind): {}",
            io::Error::from_raw_os_error(99)
        )
    );
    assert_each_cause_once(&e);
}

#[test]
fn joining_a_group_on_an_interface_this_host_lacks_names_group_interface_and_keys() {
    let Err(e) = open(
        "kind = \"moldudp64\"\nbind = \"0.0.0.0:0\"\nmulticast_group = \"239.255.0.1\"\n\
         interface = \"192.0.2.1\"\n",
    ) else {
        panic!("joined a group on 192.0.2.1, an address no interface of ours has");
    };
    assert_eq!(
        e.op(),
        SocketOp::JoinMulticast {
            group: "239.255.0.1".parse().expect("group"),
            interface: "192.0.2.1".parse().expect("interface"),
        }
    );
    assert_eq!(
        e.keys().collect::<Vec<_>>(),
        ["feed.multicast_group", "feed.interface"]
    );
    let text = chain(&e);
    assert!(
        text.starts_with(
            "cannot join multicast group 239.255.0.1 on the interface with address 192.0.2.1 \
             (config keys feed.multicast_group, feed.interface): "
        ),
        "{text}"
    );
    // Linux answers ENODEV (19): no interface has that address.
    #[cfg(target_os = "linux")]
    assert_eq!(e.io_error().raw_os_error(), Some(19), "{text}");
    assert_each_cause_once(&e);
}

#[test]
fn a_refused_server_is_retried_and_every_drop_is_kept_with_its_reason() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free loopback port");
        listener.local_addr().expect("its address").port()
        // Dropped here: nobody listens on the port any more.
    };
    let config = config(&format!(
        "kind = \"soupbintcp\"\nserver = \"127.0.0.1:{port}\"\nusername = \"user\"\n\
         password = \"pass\"\nmax_reconnects = 2\nmax_duration_s = 30\n"
    ));
    let pipeline = config.pipeline().expect("engine section");
    let feed = config.feed_config().expect("feed section");
    assert!(matches!(feed, FeedConfig::Soup(_)));
    let source = LineSource::open(&feed, &pipeline).expect("a SoupBinTCP line opens lazily");
    let stop = AtomicBool::new(false);
    let run = run_line(source, pipeline, None, OverloadConfig::default(), &stop).expect("runs");
    let LineSourceReport::Soup(report) = &run.report.source else {
        panic!("a SoupBinTCP line reports as one");
    };
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("address");
    let refused = |r: &DropReason| {
        matches!(r, DropReason::Connect { addr: a, key: Some("feed.server"), error }
            if *a == addr && error.kind() == io::ErrorKind::ConnectionRefused)
    };
    // One first connection and two reconnects, all refused.
    assert_eq!(report.connections, 0);
    assert_eq!(report.drops.by_reason.connect, 3);
    assert_eq!(report.drops.by_reason.total(), 3);
    assert_eq!(
        report
            .drops
            .last
            .iter()
            .map(|d| d.attempt)
            .collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert!(report.drops.last.iter().all(|d| refused(&d.reason)));
    let SourceEnd::Error(SourceError::ReconnectsExhausted { reconnects, last }) = report.end else {
        panic!("ended {:?}, not by running out of reconnects", report.end);
    };
    assert_eq!(reconnects, 2);
    assert!(refused(&last), "{last:?}");
    // ECONNREFUSED is 111 on Linux.
    #[cfg(target_os = "linux")]
    assert_eq!(
        report.end.to_string(),
        format!(
            "error: gave up after 2 reconnects; the last connection ended: cannot connect to \
             127.0.0.1:{port} (config key feed.server): {}",
            io::Error::from_raw_os_error(111)
        )
    );
    assert_each_cause_once(&SourceError::ReconnectsExhausted { reconnects, last });
}

#[test]
fn the_line_keys_are_keys_the_configuration_knows() {
    // Each key a socket error names must be the one a user finds in the file: the
    // configuration refuses a bad value under exactly that name.
    let cases = [
        (FEED_KEYS.bind, "kind = \"moldudp64\"\nbind = \"nowhere\"\n"),
        (
            FEED_KEYS.multicast_group,
            "kind = \"moldudp64\"\nbind = \"0.0.0.0:1\"\nmulticast_group = \"10.0.0.1\"\n",
        ),
        (
            FEED_KEYS.interface,
            "kind = \"moldudp64\"\nbind = \"0.0.0.0:1\"\ninterface = \"nowhere\"\n",
        ),
        (
            FEED_KEYS.server,
            "kind = \"soupbintcp\"\nserver = \"nowhere\"\nusername = \"u\"\npassword = \"p\"\n",
        ),
    ];
    for (key, feed) in cases {
        let err = RunConfig::parse(&format!("[feed]\n{feed}"), Path::new("line.toml"))
            .expect_err("a bad value");
        assert_eq!(err.key(), key, "{err}");
    }
}

/// A MoldUDP64 line's configuration file in `dir`, named `name`, with `feed` keys, that
/// waits long enough in silence for a second process to be started beside it.
fn line_file(dir: &Path, name: &str, feed: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    let text = format!(
        "{ENGINE}[feed]\nkind = \"moldudp64\"\n{feed}silence_timeout_s = 30\nmax_duration_s = 60\n"
    );
    std::fs::write(&path, text).expect("write the configuration");
    path
}

/// Starts `ticklane run --config FILE` and waits until it says it is ready: its sockets are
/// bound.
fn running_line(config: &Path) -> Watched {
    let mut run = Watched::spawn(ticklane().args(["run", "--config"]).arg(config));
    run.wait_for_line("ticklane run: ready (", READY_WITHIN);
    run
}

/// Runs `ticklane run --config FILE`, expected to fail at once; its exit status and stderr.
fn refused_line(config: &Path) -> (Option<i32>, String) {
    let child = ticklane()
        .args(["run", "--config"])
        .arg(config)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start ticklane");
    let out = wait_bounded(child, Duration::from_secs(10));
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_second_process_on_the_same_unicast_address_is_refused_at_its_bind() {
    let dir = tempfile::tempdir().expect("temp dir");
    let port = free_port();
    let feed = format!("bind = \"127.0.0.1:{port}\"\n");
    let first = running_line(&line_file(dir.path(), "first.toml", &feed));
    let (code, stderr) = refused_line(&line_file(dir.path(), "second.toml", &feed));
    // EADDRINUSE is 98 on Linux.
    let in_use = io::Error::from_raw_os_error(98).to_string();
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "cannot bind a UDP socket to 127.0.0.1:{port} (config key feed.bind)"
        )) && stderr.contains(&in_use),
        "{stderr}"
    );
    // The first still holds its port and runs on.
    let mut first = first;
    assert_eq!(first.child.try_wait().expect("poll the first"), None);
    first.child.kill().expect("stop the first");
    let _ = first.child.wait();
}

#[test]
fn line_b_on_an_address_in_use_is_refused_naming_feed_b_bind() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (a, b, other) = (free_port(), free_port(), free_port());
    let first = running_line(&line_file(
        dir.path(),
        "first.toml",
        &format!("bind = \"127.0.0.1:{a}\"\nb_bind = \"127.0.0.1:{b}\"\n"),
    ));
    let (code, stderr) = refused_line(&line_file(
        dir.path(),
        "second.toml",
        &format!("bind = \"127.0.0.1:{other}\"\nb_bind = \"127.0.0.1:{b}\"\n"),
    ));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "cannot bind a UDP socket to 127.0.0.1:{b} (config key feed.b_bind)"
        )) && stderr.contains(&io::Error::from_raw_os_error(98).to_string()),
        "{stderr}"
    );
    let mut first = first;
    assert_eq!(first.child.try_wait().expect("poll the first"), None);
    first.child.kill().expect("stop the first");
    let _ = first.child.wait();
}
