//! A MoldUDP64 line's snapshot start: a GLIMPSE 5.0 snapshot loaded over SoupBinTCP while
//! the line's live packets are held, so that a line started mid-day has exact books without
//! asking a retransmission server for the whole morning.
//!
//! The reader thread, before its main loop: connects (bounded by `connect_timeout`), logs in
//! for sequence 1, and reads the snapshot (`ticklane_feed::glimpse`) into a buffer, draining
//! the data sockets into the hold meanwhile. Nothing reaches the books until End of
//! Snapshot has been read, so a snapshot cut short is discarded whole and asked for again
//! (after a jittered backoff, up to `attempts` in all). A login refused ends the line: a
//! retry would be refused again. Then the snapshot's messages go to the book thread in
//! order, as the book of sequence `next - 1`, and the main loop starts at `next` with the
//! held packets first: those below `next` are duplicates, a gap after them an ordinary gap.
//!
//! The same load rebuilds the books in the middle of the day. A line with a snapshot
//! server never declares a gap lost: a gap of more than `max_recovery_gap` messages is not
//! asked of the retransmission server (meant for small gaps), and one it could not fill (or
//! any gap, with no retransmission server) waits. The reader then says the line is loading
//! a snapshot (the books stale), loads one as above, and only once it is whole clears every
//! order and sends its messages; the recovery goes on from the sequence it names
//! (`MoldRecovery::restart_at`), the packets held meanwhile first. A rebuild that fails
//! after its attempts leaves the books as they were, declares the gaps lost as a line
//! without a snapshot server would, and rebuilds no more.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ticklane_feed::glimpse::{SnapshotItem, SnapshotLoad, SnapshotViolation};
use ticklane_feed::net::OsError;
use ticklane_feed::resilience::{Backoff, BackoffConfig};
use ticklane_feed::rng::SplitMix64;
use ticklane_feed::soupbintcp::{
    ClientConfig, ClientEvent, ClientState, Credentials, RejectReason, SoupClient,
};

/// How long one read waits before the hold is drained again.
const READ_SLICE: Duration = Duration::from_millis(1);

/// The largest gap asked of the retransmission server on a line with a snapshot server, in
/// messages: about 10 ms of a busy open, or seconds of a quiet afternoon: what a request
/// server is meant for. Past it a snapshot is the cheaper way back.
pub const DEFAULT_MAX_RECOVERY_GAP: u64 = 10_000;

/// Where a line's snapshot comes from, and how patiently it is asked for.
#[derive(Clone, Copy, Debug)]
pub struct GlimpseConfig {
    /// The GLIMPSE server.
    pub server: SocketAddr,
    /// Its login.
    pub credentials: Credentials,
    /// The longest wait for the TCP connection.
    pub connect_timeout: Duration,
    /// A snapshot with nothing received for this long has stopped: it is discarded and
    /// asked for again.
    pub read_timeout: Duration,
    /// Snapshots asked for at most, the first included.
    pub attempts: u32,
    /// The wait between attempts: full jitter under a doubling ceiling.
    pub backoff: BackoffConfig,
    /// Bytes of live packets held while the snapshot loads; the packets past it are not
    /// held (counted), and become an ordinary gap after the snapshot.
    pub hold_bytes: usize,
    /// A gap of more than this many messages is filled from a new snapshot, not asked of
    /// the retransmission server.
    pub max_recovery_gap: u64,
    /// Bytes of snapshot kept at most before End of Snapshot: a server that streams past
    /// it without ending is refused, not retried (it would do the same again).
    pub max_snapshot_bytes: usize,
}

impl GlimpseConfig {
    /// Asks `server` with `credentials`: 2 s to connect, 5 s of silence, 5 attempts 100 ms
    /// to 5 s apart, 256 MiB of held packets (some four seconds of a busy open), gaps past
    /// [`DEFAULT_MAX_RECOVERY_GAP`] filled from a snapshot, and 1 GiB of snapshot at most
    /// (a whole day's live orders at the books' default capacity of 8 Mi is some 320 MB).
    pub fn new(server: SocketAddr, credentials: Credentials) -> Self {
        GlimpseConfig {
            server,
            credentials,
            connect_timeout: Duration::from_secs(2),
            read_timeout: Duration::from_secs(5),
            attempts: 5,
            backoff: BackoffConfig {
                base: Duration::from_millis(100),
                cap: Duration::from_secs(5),
            },
            hold_bytes: 256 << 20,
            max_recovery_gap: DEFAULT_MAX_RECOVERY_GAP,
            max_snapshot_bytes: 1 << 30,
        }
    }
}

/// Why one snapshot attempt failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotFailure {
    /// The TCP connection could not be made in time.
    #[error("cannot connect to the GLIMPSE server {server}: {error}")]
    Connect {
        /// The server.
        server: SocketAddr,
        /// The OS error.
        #[source]
        error: OsError,
    },
    /// The server refused the login.
    #[error("the GLIMPSE server refused the login ({0:?})")]
    Rejected(RejectReason),
    /// The connection ended or failed before End of Snapshot.
    #[error(
        "the GLIMPSE connection ended after {messages} snapshot messages, before End of Snapshot"
    )]
    Cut {
        /// Snapshot messages read before it ended.
        messages: u64,
    },
    /// Nothing arrived for the read timeout.
    #[error("the GLIMPSE snapshot stopped: nothing for {0:?}")]
    Stalled(Duration),
    /// End of Snapshot came without a sequence number to start from.
    #[error(transparent)]
    MalformedEnd(SnapshotViolation),
    /// The snapshot ran past the bytes kept at most without End of Snapshot.
    #[error("the GLIMPSE snapshot ran past {limit} bytes without End of Snapshot")]
    TooLarge {
        /// [`GlimpseConfig::max_snapshot_bytes`].
        limit: usize,
    },
    /// The line was stopped while the snapshot loaded.
    #[error("stopped while the snapshot loaded")]
    Stopped,
}

impl SnapshotFailure {
    /// Whether asking again could help: not for a refused login, a snapshot past the
    /// bound, or a stop.
    pub fn retried(&self) -> bool {
        !matches!(
            self,
            SnapshotFailure::Rejected(_)
                | SnapshotFailure::TooLarge { .. }
                | SnapshotFailure::Stopped
        )
    }
}

/// What the snapshot start, and every rebuild after it, did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GlimpseReport {
    /// Snapshots asked for, the start's and the rebuilds'.
    pub attempts: u64,
    /// The first live sequence of the latest snapshot the books were built from.
    pub next_sequence: Option<u64>,
    /// Messages of that snapshot applied.
    pub messages: u64,
    /// Messages of every snapshot applied, the start's and the rebuilds'.
    pub all_messages: u64,
    /// Times the books were rebuilt from a snapshot after the start, to fill a gap.
    pub rebuilds: u64,
    /// Rebuilds that failed after their attempts (the gaps then declared lost).
    pub rebuild_failures: u64,
    /// Payloads a snapshot may not hold, over every attempt (not applied).
    pub violations: u64,
    /// Attempts that failed, by why: connect, refused, cut, stalled, malformed or missing
    /// end (none within [`GlimpseConfig::max_snapshot_bytes`]).
    pub failures: [u64; 5],
    /// Live packets held while snapshots loaded.
    pub held_packets: u64,
    /// Live packets that arrived with the hold full (an ordinary gap afterwards).
    pub unheld_packets: u64,
    /// Nanoseconds from the first connect to End of Snapshot read, for the latest snapshot.
    pub load_ns: u64,
}

impl GlimpseReport {
    fn failed(&mut self, failure: &SnapshotFailure) {
        let at = match failure {
            SnapshotFailure::Connect { .. } => 0,
            SnapshotFailure::Rejected(_) => 1,
            SnapshotFailure::Cut { .. } => 2,
            SnapshotFailure::Stalled(_) => 3,
            SnapshotFailure::MalformedEnd(_) | SnapshotFailure::TooLarge { .. } => 4,
            SnapshotFailure::Stopped => return,
        };
        self.failures[at] += 1;
    }
}

/// The live packets kept while the snapshot loads, in arrival order, each with the line it
/// came on.
#[derive(Debug, Default)]
pub struct Held<L> {
    bytes: Vec<u8>,
    packets: Vec<(usize, usize, L)>,
    limit: usize,
    unheld: u64,
}

impl<L: Copy> Held<L> {
    /// A hold of at most `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Held {
            bytes: Vec::new(),
            packets: Vec::new(),
            limit,
            unheld: 0,
        }
    }

    /// Keeps `datagram`, or counts it when the hold is full.
    pub fn keep(&mut self, datagram: &[u8], line: L) {
        if self.bytes.len() + datagram.len() > self.limit {
            self.unheld += 1;
            return;
        }
        self.packets.push((self.bytes.len(), datagram.len(), line));
        self.bytes.extend_from_slice(datagram);
    }

    /// Packets held.
    pub fn len(&self) -> usize {
        self.packets.len()
    }

    /// Packets that found the hold full.
    pub fn unheld(&self) -> u64 {
        self.unheld
    }

    /// The held packets in arrival order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], L)> {
        self.packets
            .iter()
            .map(|&(at, len, line)| (&self.bytes[at..at + len], line))
    }
}

/// A snapshot read whole: its messages, back to back after a 2-byte big-endian length each,
/// and the first live sequence to apply after them.
#[derive(Debug, Default)]
pub struct Snapshot {
    frames: Vec<u8>,
    /// The first live sequence to apply.
    pub next_sequence: u64,
    /// Messages held.
    pub messages: u64,
}

impl Snapshot {
    /// The messages, in the order the server sent them.
    pub fn messages(&self) -> impl Iterator<Item = &[u8]> {
        let mut rest = self.frames.as_slice();
        std::iter::from_fn(move || {
            let (len, tail) = rest.split_first_chunk::<2>()?;
            let len = usize::from(u16::from_be_bytes(*len));
            let (message, tail) = tail.split_at(len);
            rest = tail;
            Some(message)
        })
    }
}

/// Loads a snapshot, attempt after attempt, calling `hold` between reads to keep the live
/// packets. Violations of the snapshot contract are counted in `report` and given to
/// `violation`.
///
/// # Errors
///
/// The last attempt's failure, when none succeeded or one cannot be retried.
pub fn load_snapshot(
    config: &GlimpseConfig,
    seed: u64,
    stop: &AtomicBool,
    report: &mut GlimpseReport,
    hold: &mut dyn FnMut(),
    violation: &mut dyn FnMut(&SnapshotViolation),
) -> Result<Snapshot, SnapshotFailure> {
    let started = Instant::now();
    let backoff = Backoff::new(config.backoff);
    let mut rng = SplitMix64::new(seed);
    let mut attempt = 0u32;
    loop {
        report.attempts += 1;
        match load_once(config, stop, report, hold, violation) {
            Ok(snapshot) => {
                report.next_sequence = Some(snapshot.next_sequence);
                report.messages = snapshot.messages;
                report.all_messages += snapshot.messages;
                report.load_ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
                return Ok(snapshot);
            }
            Err(failure) => {
                report.failed(&failure);
                attempt += 1;
                if !failure.retried() || attempt >= config.attempts {
                    return Err(failure);
                }
                eprintln!("ticklane: warning: {failure}; asking again");
                let until = Instant::now() + backoff.delay(attempt - 1, &mut rng);
                while Instant::now() < until {
                    if stop.load(Ordering::Relaxed) {
                        return Err(SnapshotFailure::Stopped);
                    }
                    hold();
                    std::thread::sleep(READ_SLICE);
                }
            }
        }
    }
}

/// One attempt: connect, log in, read to End of Snapshot.
fn load_once(
    config: &GlimpseConfig,
    stop: &AtomicBool,
    report: &mut GlimpseReport,
    hold: &mut dyn FnMut(),
    violation: &mut dyn FnMut(&SnapshotViolation),
) -> Result<Snapshot, SnapshotFailure> {
    let connect_failed = |error: io::Error| SnapshotFailure::Connect {
        server: config.server,
        error: OsError::of(&error),
    };
    hold();
    let mut stream = TcpStream::connect_timeout(&config.server, config.connect_timeout)
        .map_err(connect_failed)?;
    stream
        .set_read_timeout(Some(READ_SLICE))
        .and_then(|()| stream.set_nodelay(true))
        .map_err(connect_failed)?;
    let origin = Instant::now();
    let mut client = SoupClient::new(ClientConfig {
        next_sequence: 1,
        server_timeout: config.read_timeout,
        ..ClientConfig::new(config.credentials)
    });
    let cut = |load: &SnapshotLoad| SnapshotFailure::Cut {
        messages: load.applied(),
    };
    client
        .on_connected(origin.elapsed())
        .map_err(|_| SnapshotFailure::Cut { messages: 0 })?;
    let mut load = SnapshotLoad::new();
    let mut snapshot = Snapshot::default();
    loop {
        if stop.load(Ordering::Relaxed) {
            return Err(SnapshotFailure::Stopped);
        }
        hold();
        write_out(&mut stream, &mut client).map_err(|_| cut(&load))?;
        let now = origin.elapsed();
        match stream.read(client.read_buf()) {
            Ok(0) => return Err(cut(&load)),
            Ok(n) => client.commit_read(n, origin.elapsed()),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Err(cut(&load)),
        }
        while let Some(event) = client.poll_event() {
            match event {
                Err(_) => return Err(cut(&load)),
                Ok(ClientEvent::Rejected(reason)) => return Err(SnapshotFailure::Rejected(reason)),
                Ok(ClientEvent::Sequenced { payload, .. }) => match load.accept(payload) {
                    Ok(SnapshotItem::Apply(_)) => {
                        let len = u16::try_from(payload.len()).expect("a SoupBinTCP payload fits");
                        if snapshot.frames.len() + 2 + payload.len() > config.max_snapshot_bytes {
                            return Err(SnapshotFailure::TooLarge {
                                limit: config.max_snapshot_bytes,
                            });
                        }
                        snapshot.frames.extend_from_slice(&len.to_be_bytes());
                        snapshot.frames.extend_from_slice(payload);
                        snapshot.messages += 1;
                    }
                    Ok(SnapshotItem::End { next_sequence }) => {
                        snapshot.next_sequence = next_sequence;
                    }
                    Err(e @ SnapshotViolation::MalformedEnd { .. }) => {
                        report.violations += 1;
                        violation(&e);
                        return Err(SnapshotFailure::MalformedEnd(e));
                    }
                    Err(e) => {
                        report.violations += 1;
                        violation(&e);
                    }
                },
                Ok(ClientEvent::EndOfSession { .. }) => return Err(cut(&load)),
                Ok(_) => {}
            }
            if snapshot.next_sequence > 0 {
                // Done: say goodbye without waiting for the server's end.
                let _ = client.logout(origin.elapsed());
                let _ = write_out(&mut stream, &mut client);
                return Ok(snapshot);
            }
        }
        while client.poll_timers(now).is_some() {}
        if matches!(client.state(), ClientState::Dead(_)) {
            return Err(SnapshotFailure::Stalled(config.read_timeout));
        }
    }
}

/// Writes what the client queued (a login, heartbeats, a logout).
fn write_out(stream: &mut TcpStream, client: &mut SoupClient) -> io::Result<()> {
    while !client.output().is_empty() {
        let n = stream.write(client.output())?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        client.consume_output(n);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;
    use std::sync::atomic::AtomicBool;
    use std::thread;

    use ticklane_feed::glimpse::end_of_snapshot;
    use ticklane_feed::itch::{owned, Alpha, Locate, Nanos, OrderRef, Price};
    use ticklane_feed::moldudp64::Session;
    use ticklane_feed::soupbintcp::{ServerConfig, ServerEvent, SoupServerSession};

    use super::*;

    /// What one connection to the fake GLIMPSE server does once logged in.
    #[derive(Clone)]
    enum Script {
        /// Sends these payloads, then closes.
        SendThenClose(Vec<Vec<u8>>),
        /// Sends these payloads, then stays silent (no heartbeat) until the client leaves.
        SendThenStall(Vec<Vec<u8>>),
    }

    fn add(order_ref: u64) -> Vec<u8> {
        let mut buf = [0u8; 64];
        let n = owned::Message::AddOrder(owned::AddOrder {
            locate: Locate(1),
            tracking: 0,
            timestamp: Nanos(1),
            order_ref: OrderRef(order_ref),
            side: b'S',
            shares: 10,
            stock: Alpha(*b"ZVZZT   "),
            price: Price(100_000),
        })
        .encode(&mut buf);
        buf[..n].to_vec()
    }

    /// A whole snapshot of `orders` adds, ending before live sequence `next`.
    fn whole(orders: u64, next: u64) -> Vec<Vec<u8>> {
        (1..=orders)
            .map(add)
            .chain(std::iter::once(end_of_snapshot(next).to_vec()))
            .collect()
    }

    fn credentials() -> Credentials {
        Credentials::parse("glimps:pw").expect("login")
    }

    /// Serves one connection per script, in order, accepting `credentials`.
    fn fake_server(scripts: Vec<Script>, accepted: Credentials) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        thread::spawn(move || {
            for script in scripts {
                let Ok((mut stream, _)) = listener.accept() else {
                    return;
                };
                let session = Session::new(b"GLIMPSE").expect("fits");
                let origin = Instant::now();
                let mut server = SoupServerSession::new(
                    ServerConfig::new(accepted, session),
                    1,
                    origin.elapsed(),
                );
                stream
                    .set_read_timeout(Some(Duration::from_millis(5)))
                    .expect("timeout");
                let mut buf = [0u8; 1024];
                let mut logged_in = false;
                while !logged_in {
                    match stream.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => {
                            server.feed(&buf[..n], origin.elapsed());
                        }
                        Err(_) => {}
                    }
                    while let Some(event) = server.poll_event(origin.elapsed()) {
                        logged_in |= matches!(event, Ok(ServerEvent::LoginAccepted { .. }));
                    }
                    let _ = stream.write_all(server.output());
                    let n = server.output().len();
                    server.consume_output(n);
                    if !logged_in
                        && server.state() != ticklane_feed::soupbintcp::ServerState::AwaitingLogin
                    {
                        break; // refused
                    }
                }
                if !logged_in {
                    continue;
                }
                let (payloads, stall) = match &script {
                    Script::SendThenClose(p) => (p, false),
                    Script::SendThenStall(p) => (p, true),
                };
                for payload in payloads {
                    server
                        .send_sequenced(payload, origin.elapsed())
                        .expect("room");
                    let _ = stream.write_all(server.output());
                    let n = server.output().len();
                    server.consume_output(n);
                }
                if stall {
                    // Silent until the client gives up and closes.
                    while !matches!(stream.read(&mut buf), Ok(0)) {
                        if origin.elapsed() > Duration::from_secs(10) {
                            break;
                        }
                    }
                }
            }
        });
        addr
    }

    fn config(server: SocketAddr) -> GlimpseConfig {
        GlimpseConfig {
            read_timeout: Duration::from_millis(300),
            connect_timeout: Duration::from_millis(300),
            attempts: 3,
            backoff: BackoffConfig {
                base: Duration::from_millis(1),
                cap: Duration::from_millis(5),
            },
            ..GlimpseConfig::new(server, credentials())
        }
    }

    fn load(config: &GlimpseConfig) -> (Result<Snapshot, SnapshotFailure>, GlimpseReport, u64) {
        let mut report = GlimpseReport::default();
        let mut holds = 0;
        let mut violations = 0;
        let loaded = load_snapshot(
            config,
            7,
            &AtomicBool::new(false),
            &mut report,
            &mut || holds += 1,
            &mut |_| violations += 1,
        );
        assert!(holds > 0, "the hold is drained while the snapshot loads");
        (loaded, report, violations)
    }

    #[test]
    fn a_whole_snapshot_loads_with_its_messages_in_order_and_its_next_sequence() {
        let server = fake_server(vec![Script::SendThenClose(whole(3, 501))], credentials());
        let (loaded, report, violations) = load(&config(server));
        let snapshot = loaded.expect("loaded");
        assert_eq!((snapshot.next_sequence, snapshot.messages), (501, 3));
        let refs: Vec<u8> = snapshot.messages().map(|m| m[18]).collect();
        assert_eq!(refs, [1, 2, 3]);
        assert_eq!(
            (report.attempts, report.next_sequence, violations),
            (1, Some(501), 0)
        );
    }

    #[test]
    fn a_snapshot_cut_short_is_discarded_and_asked_for_again() {
        let mut cut = whole(3, 501);
        cut.truncate(2);
        let server = fake_server(
            vec![
                Script::SendThenClose(cut),
                Script::SendThenClose(whole(3, 777)),
            ],
            credentials(),
        );
        let (loaded, report, _) = load(&config(server));
        let snapshot = loaded.expect("the second attempt");
        assert_eq!(
            (snapshot.next_sequence, snapshot.messages),
            (777, 3),
            "nothing of the first"
        );
        assert_eq!((report.attempts, report.failures), (2, [0, 0, 1, 0, 0]));
    }

    #[test]
    fn a_stalled_snapshot_times_out_and_a_malformed_end_is_a_counted_violation() {
        let mut bad_end = whole(2, 9);
        *bad_end.last_mut().expect("the end") = b"G      not a number ".to_vec();
        let server = fake_server(
            vec![
                Script::SendThenStall(whole(2, 9)[..1].to_vec()),
                Script::SendThenClose(bad_end),
                Script::SendThenClose(whole(2, 9)),
            ],
            credentials(),
        );
        let started = Instant::now();
        let (loaded, report, violations) = load(&config(server));
        assert_eq!(loaded.expect("the third attempt").next_sequence, 9);
        assert!(
            started.elapsed() >= Duration::from_millis(300),
            "the stall was waited out"
        );
        assert_eq!((report.attempts, report.failures), (3, [0, 0, 0, 1, 1]));
        assert_eq!((report.violations, violations), (1, 1));
    }

    #[test]
    fn a_refused_login_ends_at_once_and_a_server_never_there_after_every_attempt() {
        let other = Credentials::parse("other:pw").expect("login");
        let server = fake_server(vec![Script::SendThenClose(whole(1, 2))], other);
        let (loaded, report, _) = load(&config(server));
        assert!(
            matches!(loaded, Err(SnapshotFailure::Rejected(_))),
            "{loaded:?}"
        );
        assert_eq!((report.attempts, report.failures), (1, [0, 1, 0, 0, 0]));

        let nobody = {
            let probe = TcpListener::bind("127.0.0.1:0").expect("probe");
            probe.local_addr().expect("addr")
        };
        let (loaded, report, _) = load(&config(nobody));
        assert!(
            matches!(loaded, Err(SnapshotFailure::Connect { .. })),
            "{loaded:?}"
        );
        assert_eq!((report.attempts, report.failures), (3, [3, 0, 0, 0, 0]));
    }

    #[test]
    fn a_snapshot_past_the_bound_is_refused_once() {
        // Three adds of 36 bytes are 114 bytes kept; the bound lets two in.
        let server = fake_server(vec![Script::SendThenClose(whole(3, 4))], credentials());
        let small = GlimpseConfig {
            max_snapshot_bytes: 80,
            ..config(server)
        };
        let (loaded, report, _) = load(&small);
        assert_eq!(loaded.err(), Some(SnapshotFailure::TooLarge { limit: 80 }));
        assert_eq!((report.attempts, report.failures), (1, [0, 0, 0, 0, 1]));
    }

    #[test]
    fn a_stop_ends_the_load() {
        let server = fake_server(vec![Script::SendThenStall(vec![add(1)])], credentials());
        let mut report = GlimpseReport::default();
        let stop = AtomicBool::new(false);
        let mut polls = 0;
        let patient = GlimpseConfig {
            read_timeout: Duration::from_secs(10),
            ..config(server)
        };
        let started = Instant::now();
        let loaded = load_snapshot(
            &patient,
            1,
            &stop,
            &mut report,
            &mut || {
                polls += 1;
                if polls == 5 {
                    stop.store(true, Ordering::Relaxed);
                }
            },
            &mut |_| {},
        );
        assert!(
            matches!(loaded, Err(SnapshotFailure::Stopped)),
            "{loaded:?}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "stopped, not timed out"
        );
    }
}
