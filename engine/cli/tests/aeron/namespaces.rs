//! Separate hosts, as network namespaces joined by a veth pair that the test makes (as
//! root, with iproute2) and removes: the publisher sends the books by multicast on its end
//! of the pair; one subscriber follows on the other host, one on the publisher's own host
//! (multicast looped back). Where namespaces cannot be made (not root, no `ip`, a
//! container without the right), the test says loudly that it skipped.

use std::process::{Command, Stdio};
use std::time::Duration;

use ticklane_testkit::process::{free_port, wait_bounded, Watched, READY_WITHIN};
use ticklane_testkit::skip;

use super::{
    assert_ended_exact, day_and_replay, line_config, replace_aeron_section, sim_command, utf8,
};

/// Two namespaces and the veth pair between them; removed on drop.
struct Hosts {
    publisher: String,
    subscriber: String,
    /// The publisher's address on the pair, and the subscriber's.
    addresses: (String, String),
    /// The pair's publisher end (removed from the host too, if it never moved).
    link: String,
}

impl Hosts {
    /// Makes them, or says why not.
    fn make() -> Result<Hosts, String> {
        let id = std::process::id() % 100_000;
        let net = id % 250;
        let hosts = Hosts {
            publisher: format!("tlpub{id}"),
            subscriber: format!("tlsub{id}"),
            addresses: (format!("10.231.{net}.1"), format!("10.231.{net}.2")),
            link: format!("tlvp{id}"),
        };
        let (pub_link, sub_link) = (hosts.link.clone(), format!("tlvs{id}"));
        let (p, s) = (&hosts.publisher, &hosts.subscriber);
        let (pa, sa) = (
            format!("{}/24", hosts.addresses.0),
            format!("{}/24", hosts.addresses.1),
        );
        let steps: [&[&str]; 10] = [
            &["netns", "add", p],
            &["netns", "add", s],
            &[
                "link", "add", &pub_link, "type", "veth", "peer", "name", &sub_link,
            ],
            &["link", "set", &pub_link, "netns", p],
            &["link", "set", &sub_link, "netns", s],
            &["-n", p, "addr", "add", &pa, "dev", &pub_link],
            &["-n", s, "addr", "add", &sa, "dev", &sub_link],
            &["-n", p, "link", "set", &pub_link, "up"],
            &["-n", s, "link", "set", &sub_link, "up"],
            &["-n", p, "link", "set", "lo", "up"],
        ];
        for step in steps
            .iter()
            .copied()
            .chain([["-n", s.as_str(), "link", "set", "lo", "up"].as_slice()])
        {
            let out = Command::new("ip")
                .args(step)
                .output()
                .map_err(|e| format!("ip: {e}"))?;
            if !out.status.success() {
                return Err(format!(
                    "ip {}: {}",
                    step.join(" "),
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
        }
        Ok(hosts)
    }

    /// `command` run inside the namespace `ns`.
    fn inside(ns: &str, command: &Command) -> Command {
        let mut inside = Command::new("ip");
        inside
            .args(["netns", "exec", ns])
            .arg(command.get_program());
        inside.args(command.get_args());
        inside
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        // Removing a namespace removes its end of the pair, and so the pair.
        for ns in [&self.publisher, &self.subscriber] {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
        let _ = Command::new("ip")
            .args(["link", "del", &self.link])
            .output();
    }
}

#[test]
fn hosts_joined_by_a_veth_pair_follow_the_books_by_multicast() {
    const TEST: &str = "hosts_joined_by_a_veth_pair_follow_the_books_by_multicast";
    let hosts = match Hosts::make() {
        Ok(hosts) => hosts,
        Err(why) => {
            skip(TEST, &format!("no network namespaces here: {why}"));
            return;
        }
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let (day, replayed) = day_and_replay(dir.path(), 200_000, 26);
    let (data, request, port) = (free_port(), free_port(), free_port());
    let config = line_config(dir.path(), data, request, 0);
    // Aeron's multicast data address is odd; its control address is the next one.
    let group = format!("239.255.31.1:{port}");
    let (publisher_ip, subscriber_ip) = &hosts.addresses;
    replace_aeron_section(
        &config,
        &format!(
            "channel = \"aeron:udp?endpoint={group}|interface={publisher_ip}\"\n\
             stream_id = 77\nrefresh_cycle_ms = 300\nheartbeat_ms = 100\nlinger_ms = 2000\n"
        ),
    );
    let mut run_command = super::ticklane();
    run_command.args(["run", "--config", utf8(&config)]);
    let mut run = Watched::spawn(&mut Hosts::inside(&hosts.publisher, &run_command));
    run.wait_for_line("ticklane run: ready (", READY_WITHIN);
    let follow = |ns: &str, interface: &str, out: &std::path::Path| {
        let mut command = super::ticklane();
        command
            .args(["subscribe", "--aeron"])
            .arg(format!("aeron:udp?endpoint={group}|interface={interface}"))
            .args(["--stream", "77", "--quiet", "--book-out", utf8(out)]);
        let mut watched = Watched::spawn(&mut Hosts::inside(ns, &command));
        watched.wait_for_line("ticklane subscribe: following", READY_WITHIN);
        watched
    };
    let (far_out, near_out) = (dir.path().join("far.csv"), dir.path().join("near.csv"));
    let far = follow(&hosts.subscriber, subscriber_ip, &far_out);
    let near = follow(&hosts.publisher, publisher_ip, &near_out);
    std::thread::sleep(Duration::from_millis(500));
    let sim = Hosts::inside(&hosts.publisher, &sim_command(&day, data, request, 100_000))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start sim");
    let run_out = run.finish(Duration::from_secs(90));
    let summary = String::from_utf8_lossy(&run_out.stdout);
    assert!(run_out.status.success(), "run: {summary}");
    assert!(summary.contains("end of stream sent"), "{summary}");
    wait_bounded(sim, Duration::from_secs(30));
    assert_ended_exact(far, &far_out, &replayed, "the subscriber on the other host");
    assert_ended_exact(
        near,
        &near_out,
        &replayed,
        "the subscriber on the publisher's host",
    );
    drop(hosts);
}
