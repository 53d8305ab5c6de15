//! The machinery of the fault-injection suite (`fault_injection.rs`): one scenario runs the
//! exchange simulator with its faults against a real line (loopback sockets, reader thread,
//! ring, book thread, snapshot file), and comes back as one row of the table with the
//! checks that failed on it.
//!
//! A scenario is data ([`Scenario`]): adding a row (A/B lines, breakers) is adding a value
//! to the list, plus a variant of [`Line`] when the line itself is new.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ticklane_engine::csv::write_snapshot_book_csv;
use ticklane_engine::live::{run_line, LineSource, LineSourceReport};
use ticklane_engine::overload::OverloadConfig;
use ticklane_engine::pipeline::{
    GlimpseConfig, MoldFeedConfig, MoldSource, PipelineConfig, SoupFeedConfig, SoupSource,
    SourceEnd, DEFAULT_MAX_RECOVERY_GAP,
};
use ticklane_engine::snapshot::{SnapshotReader, SnapshotWriter};
use ticklane_feed::moldudp64::{RecoveryConfig, Session};
use ticklane_feed::net::UdpFeedConfig;
use ticklane_feed::resilience::BackoffConfig;
use ticklane_feed::soupbintcp::{ClientConfig, Credentials};
use ticklane_sim::{
    Faults, LineB, MessageLog, MoldSimConfig, MoldSimulator, Rate, SimCounts, SoupSimConfig,
    SoupSimCounts, SoupSimulator,
};
use ticklane_testkit::{loopback, poll_until};

use crate::util;
use crate::util::books;

/// Depth of the books compared.
pub const DEPTH: usize = 10;
/// The paced rate of every row but the flood: the simulator's default.
pub const PACED: u64 = 400_000;

/// What a row must end with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Nothing lost: every gap filled; the books equal itch-book's.
    Recovered,
    /// Losses declared (recovery was impossible), every book flagged `MAYBE_BAD`.
    Declared,
    /// Either, as the machine allows (a flood): the invariants hold whichever it is.
    Either,
    /// The login is refused once and never retried; nothing applied.
    Refused,
}

/// A MoldUDP64 line and its simulator.
#[derive(Clone, Copy, Debug)]
pub struct MoldCase {
    /// The simulator's faults.
    pub faults: Faults,
    /// The simulator's rate.
    pub rate: Rate,
    /// Whether the line knows the retransmission server.
    pub request_server: bool,
    /// The reader's recovery settings.
    pub recovery: RecoveryConfig,
    /// Late join: the line's socket is bound only after this many messages went out.
    pub join_after: Option<u64>,
    /// The data socket's receive buffer to ask for (the kernel may grant less).
    pub recv_buffer_bytes: usize,
    /// Line B's own per-packet faults, when the session is served on two lines (A and B):
    /// the simulator sends every packet on both, and the line reads both sockets.
    pub line_b: Option<Faults>,
    /// Start the line from a GLIMPSE snapshot of the simulator's stream, with these faults.
    pub glimpse: Option<GlimpseCase>,
}

/// A GLIMPSE start's faults, on the snapshot server's first connection only.
#[derive(Clone, Copy, Debug, Default)]
pub struct GlimpseCase {
    /// Close the first connection after this many snapshot messages.
    pub cut_after: Option<u64>,
    /// Go silent on it after this many.
    pub stall_after: Option<u64>,
    /// Log in with a wrong password.
    pub wrong_login: bool,
    /// The line's `max_recovery_gap`; `None`: the default.
    pub max_recovery_gap: Option<u64>,
    /// End the first snapshot with a malformed End of Snapshot.
    pub malformed_end: bool,
    /// Point the line at a port nobody listens on: every connect is refused.
    pub server_down: bool,
    /// Logins the server accepts before it refuses every later one.
    pub logins_allowed: Option<u64>,
    /// Send the snapshot at stock locate 0, stocks named by symbol only.
    pub locate_zero: bool,
}

/// How long a GLIMPSE row's snapshot may be silent before it is asked for again.
pub const GLIMPSE_READ_TIMEOUT: Duration = Duration::from_millis(500);

impl MoldCase {
    /// Paced, answered, from sequence 1, with `faults`.
    pub fn with(faults: Faults) -> Self {
        MoldCase {
            faults,
            rate: Rate::per_second(PACED),
            request_server: true,
            recovery: recovering(),
            join_after: None,
            recv_buffer_bytes: UdpFeedConfig::default().recv_buffer_bytes,
            line_b: None,
            glimpse: None,
        }
    }

    /// An A/B line: line A through `a`, line B through `b`, answered, with an arbitration
    /// wait (20 ms, as `ab_lines.rs`) far above the loopback skew between the lines, so that
    /// a reader thread held up on a busy machine still sees the other line's copy in time.
    pub fn ab(a: Faults, b: Faults) -> Self {
        MoldCase {
            line_b: Some(b),
            recovery: RecoveryConfig {
                arbitration_wait: Duration::from_millis(20),
                ..recovering()
            },
            ..MoldCase::with(a)
        }
    }
}

/// The reader's recovery settings of every MoldUDP64 row unless it says otherwise: a known
/// session start (sequence 1), one request per 1,024 messages (the simulator's reply bound),
/// and a deadline a recoverable gap never reaches.
pub fn recovering() -> RecoveryConfig {
    RecoveryConfig {
        start_sequence: Some(1),
        retransmit_timeout: Duration::from_millis(20),
        max_retries: 20,
        max_per_request: 1_024,
        gap_deadline: Duration::from_secs(10),
        ..RecoveryConfig::default()
    }
}

/// A SoupBinTCP line and its simulator.
#[derive(Clone, Copy, Debug)]
pub struct SoupCase {
    /// The simulator's rate.
    pub rate: Rate,
    /// The half-open fault.
    pub half_open_after: Option<u64>,
    /// Log in with a wrong password.
    pub wrong_password: bool,
    /// The client's server-silence timeout.
    pub server_timeout: Duration,
}

impl Default for SoupCase {
    fn default() -> Self {
        SoupCase {
            rate: Rate::per_second(PACED),
            half_open_after: None,
            wrong_password: false,
            server_timeout: Duration::from_secs(15),
        }
    }
}

/// Which line a scenario runs.
#[derive(Clone, Debug)]
pub enum Line {
    /// MoldUDP64 over UDP, with the simulator's retransmission server (boxed: its recovery
    /// settings make it several times the SoupBinTCP case).
    Mold(Box<MoldCase>),
    /// SoupBinTCP over TCP.
    Soup(SoupCase),
}

impl Line {
    /// A MoldUDP64 line.
    pub fn mold(case: MoldCase) -> Line {
        Line::Mold(Box::new(case))
    }
}

/// What the simulator said it did.
#[derive(Clone, Copy, Debug)]
pub enum SimSide {
    /// MoldUDP64.
    Mold(SimCounts),
    /// SoupBinTCP.
    Soup(SoupSimCounts),
}

/// One run's results, for the row and the checks.
pub struct Outcome {
    /// The simulator's counters.
    pub sim: SimSide,
    /// The reader's report.
    pub source: LineSourceReport,
    /// Messages the book thread applied.
    pub applied: u64,
    /// The snapshot's depth CSV at the end.
    pub depth_csv: String,
    /// The snapshot's header `MAYBE_BAD` and lost count, and whether every slot in use is
    /// `MAYBE_BAD` (false when no slot is in use).
    pub header_maybe_bad: bool,
    pub header_lost: u64,
    pub every_slot_maybe_bad: bool,
    /// How long the run took.
    pub took: Duration,
}

impl Outcome {
    /// Messages declared lost.
    pub fn lost(&self) -> u64 {
        match &self.source {
            LineSourceReport::Mold(r) => r.lost.messages(),
            LineSourceReport::Soup(_) => 0,
        }
    }

    /// The MoldUDP64 simulator's counters (a check of a MoldUDP64 row).
    pub fn mold_sim(&self) -> SimCounts {
        match self.sim {
            SimSide::Mold(s) => s,
            SimSide::Soup(_) => SimCounts::default(),
        }
    }

    /// The SoupBinTCP simulator's counters (a check of a SoupBinTCP row).
    pub fn soup_sim(&self) -> SoupSimCounts {
        match self.sim {
            SimSide::Soup(s) => s,
            SimSide::Mold(_) => SoupSimCounts::default(),
        }
    }
}

/// A scenario-specific check: `Err` says what did not happen.
pub type Check = fn(&Outcome) -> Result<(), String>;

/// One row of the suite.
pub struct Scenario {
    /// Its name in the table.
    pub name: &'static str,
    /// The line and its faults.
    pub line: Line,
    /// How it must end.
    pub expect: Expect,
    /// That the fault really happened, and what the line must have done about it.
    pub check: Check,
}

/// Runs `scenario` over `log` into a fresh snapshot.
pub fn run(scenario: &Scenario, log: &Arc<MessageLog>) -> Outcome {
    let started = Instant::now();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("faults.snap");
    let writer = SnapshotWriter::create(&path, 256, DEPTH).expect("snapshot");
    let (source, finish): (LineSource, Box<dyn FnOnce() -> SimSide>) = match &scenario.line {
        Line::Mold(case) => {
            let (source, sim, glimpse) = start_mold(**case, log);
            (
                LineSource::Mold(source),
                Box::new(move || {
                    drop(glimpse);
                    SimSide::Mold(sim.stop().expect("simulator stops"))
                }),
            )
        }
        Line::Soup(case) => {
            let (source, sim) = start_soup(*case, log);
            (
                LineSource::Soup(source),
                Box::new(move || SimSide::Soup(sim.stop())),
            )
        }
    };
    let pipeline = PipelineConfig {
        books: books(),
        ..PipelineConfig::default()
    };
    let run = run_line(
        source,
        pipeline,
        Some(writer),
        OverloadConfig::default(),
        &AtomicBool::new(false),
    )
    .expect("pipeline");
    let sim = finish();
    let reader = SnapshotReader::open(&path).expect("open snapshot");
    let header = reader.header();
    let slots = reader.slots();
    let every_slot_maybe_bad = !slots.is_empty()
        && slots
            .into_iter()
            .all(|i| reader.read(i).is_ok_and(|s| s.flags.is_maybe_bad()));
    let csv = write_snapshot_book_csv(&reader, DEPTH, Vec::new()).expect("csv");
    Outcome {
        sim,
        applied: run.report.book.messages,
        source: run.report.source,
        depth_csv: String::from_utf8(csv).expect("ascii"),
        header_maybe_bad: header.is_maybe_bad(),
        header_lost: header.lost_messages,
        every_slot_maybe_bad,
        took: started.elapsed(),
    }
}

fn start_mold(
    case: MoldCase,
    log: &Arc<MessageLog>,
) -> (MoldSource, MoldSimulator, Option<SoupSimulator>) {
    let udp = |bind| UdpFeedConfig {
        bind,
        recv_buffer_bytes: case.recv_buffer_bytes,
        ..UdpFeedConfig::default()
    };
    let feed = |bind| MoldFeedConfig {
        udp: udp(bind),
        line_b: case.line_b.map(|_| udp(loopback(0))),
        recovery: case.recovery,
        silence_timeout: Duration::from_secs(5),
        max_duration: Some(Duration::from_secs(30)),
        ..MoldFeedConfig::default()
    };
    let wait = PipelineConfig::default().wait;
    let session = Session::new(b"FAULTS").expect("fits");
    let start_sim = |destination, line_b: Option<SocketAddr>| {
        let mut sim = MoldSimConfig::new(session, destination);
        sim.rate = case.rate;
        sim.faults = case.faults;
        sim.line_b = line_b.zip(case.line_b).map(|(destination, faults)| LineB {
            destination,
            faults,
        });
        MoldSimulator::start(Arc::clone(log), sim).expect("simulator")
    };
    let (mut source, sim) = match case.join_after {
        None => {
            let source = MoldSource::open(feed(loopback(0)), wait).expect("bind the feed");
            let sim = start_sim(
                source.local_addr().expect("bound"),
                source.local_addr_b().expect("B bound"),
            );
            (source, sim)
        }
        Some(after) => {
            assert!(case.line_b.is_none(), "a late join is a one-line row");
            // A late join: the port is held by a socket nobody reads until `after` messages
            // went out; then it closes and the line binds the port. What went before, and
            // what arrived in between, the line never sees.
            let early = std::net::UdpSocket::bind(loopback(0)).expect("early socket");
            let port = early.local_addr().expect("bound").port();
            let sim = start_sim(loopback(port), None);
            assert!(
                poll_until(Duration::from_secs(10), || sim.stats().messages_released
                    >= after),
                "the simulator released {after} messages within 10 s"
            );
            drop(early);
            let source = MoldSource::open(feed(loopback(port)), wait).expect("bind the feed");
            (source, sim)
        }
    };
    if case.request_server {
        source.set_request_server(sim.request_addr());
    }
    let glimpse = case.glimpse.map(|g| {
        let right = Credentials::new(b"glimps", b"secret").expect("fits");
        let mut server = SoupSimConfig::new(loopback(0), right, session);
        server.disconnect_after = g.cut_after;
        server.half_open_after = g.stall_after;
        server.malformed_end = g.malformed_end;
        server.logins_allowed = g.logins_allowed;
        server.locate_zero = g.locate_zero;
        server.faulty_logins = Some(1);
        let server = SoupSimulator::start_glimpse(Arc::clone(log), sim.live_position(), server)
            .expect("GLIMPSE server");
        let login = if g.wrong_login {
            Credentials::new(b"glimps", b"wrong").expect("fits")
        } else {
            right
        };
        source.set_glimpse(GlimpseConfig {
            read_timeout: GLIMPSE_READ_TIMEOUT,
            backoff: BackoffConfig {
                base: Duration::from_millis(10),
                cap: Duration::from_millis(100),
            },
            max_recovery_gap: g.max_recovery_gap.unwrap_or(DEFAULT_MAX_RECOVERY_GAP),
            ..GlimpseConfig::new(
                if g.server_down {
                    closed_port()
                } else {
                    server.local_addr()
                },
                login,
            )
        });
        server
    });
    (source, sim, glimpse)
}

/// A loopback address nobody listens on: a listener's port, closed again.
fn closed_port() -> SocketAddr {
    std::net::TcpListener::bind(loopback(0))
        .and_then(|l| l.local_addr())
        .expect("a free port")
}

fn start_soup(case: SoupCase, log: &Arc<MessageLog>) -> (SoupSource, SoupSimulator) {
    let right = Credentials::new(b"faults", b"secret").expect("fits");
    let mut sim = SoupSimConfig::new(loopback(0), right, Session::new(b"SOUP").expect("fits"));
    sim.rate = case.rate;
    sim.half_open_after = case.half_open_after;
    let sim = SoupSimulator::start(Arc::clone(log), sim).expect("simulator");
    let login = if case.wrong_password {
        Credentials::new(b"faults", b"wrong").expect("fits")
    } else {
        right
    };
    let mut client = ClientConfig::new(login);
    client.next_sequence = 1;
    client.server_timeout = case.server_timeout;
    let source = SoupSource::new(
        SoupFeedConfig {
            server: sim.local_addr(),
            client,
            connect_timeout: Duration::from_secs(5),
            max_reconnects: 20,
            reconnect: BackoffConfig {
                base: Duration::from_millis(20),
                cap: Duration::from_millis(200),
            },
            reconnect_seed: Some(31),
            max_duration: Some(Duration::from_secs(30)),
            breaker: ticklane_engine::pipeline::DEFAULT_LINE_BREAKER,
        },
        PipelineConfig::default().wait,
    );
    (source, sim)
}

/// itch-book's final book of the same messages, read by its own parser from an ITCH50 file,
/// and the Python that runs the comparison; `None` when the oracle cannot run (said loudly;
/// a failure under CI).
pub struct Oracle {
    python: PathBuf,
    theirs: PathBuf,
    dir: tempfile::TempDir,
}

impl Oracle {
    /// Writes `log` as an ITCH50 day and runs itch-book on it once.
    pub fn start(test: &str, log: &MessageLog) -> Option<Oracle> {
        let python = util::oracle::python(test)?;
        let dir = tempfile::tempdir().expect("tempdir");
        let day = dir.path().join("day.itch50");
        let mut bytes = Vec::new();
        for seq in 1..=log.len() as u64 {
            let message = log.get(seq).expect("in the log");
            let len = u16::try_from(message.len()).expect("an ITCH message fits a u16 prefix");
            bytes.extend_from_slice(&len.to_be_bytes());
            bytes.extend_from_slice(message);
        }
        std::fs::write(&day, bytes).expect("write the day");
        let theirs = dir.path().join("theirs.book.csv");
        let depth = DEPTH.to_string();
        util::oracle::run(
            &python,
            "itch_book_oracle.py",
            &[
                &day,
                Path::new("--book-out"),
                &theirs,
                Path::new("--depth"),
                Path::new(&depth),
            ],
            &[],
        );
        Some(Oracle {
            python,
            theirs,
            dir,
        })
    }

    /// `Err` with compare.py's verdict unless `ours` equals itch-book's book row for row
    /// (quantities modulo 2^32: itch-book sums levels in 32 bits, see compare.py).
    pub fn compare(&self, name: &str, ours: &str) -> Result<(), String> {
        // A row's name as a file name: `A/B: ...` holds a path separator.
        let file: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let path = self.dir.path().join(format!("{file}.book.csv"));
        std::fs::write(&path, ours).expect("write");
        let out = std::process::Command::new(&self.python)
            .arg(util::repo_root().join("tests/oracle/compare.py"))
            .args([&path, &self.theirs])
            .args(["--depth-only", "--mod32"])
            .output()
            .expect("run compare.py");
        let verdict = String::from_utf8_lossy(&out.stdout).into_owned();
        let rows = ours.lines().count().saturating_sub(1);
        if out.status.success()
            && verdict.contains("ORACLE OK")
            && verdict.contains(&format!("{rows} depth rows equal"))
        {
            Ok(())
        } else {
            Err(format!("not itch-book's book: {}", verdict.trim()))
        }
    }
}

/// The checks every row gets, then the scenario's own; each failure is one line.
pub fn verify(
    scenario: &Scenario,
    out: &Outcome,
    last_sequence: u64,
    replayed: &str,
    oracle: Option<&Oracle>,
) -> Vec<String> {
    let mut failed = Vec::new();
    let lost = out.lost();
    let end = match &out.source {
        LineSourceReport::Mold(r) => r.end,
        LineSourceReport::Soup(r) => r.end,
    };
    if scenario.expect == Expect::Refused {
        if out.applied != 0 || !end.is_error() {
            failed.push(format!(
                "a refused login applies nothing and ends in error: applied {}, {end}",
                out.applied
            ));
        }
    } else {
        if end != SourceEnd::EndOfSession {
            failed.push(format!("ended {end}, not at end of session"));
        }
        // A line started from a snapshot applied the snapshot's messages in place of the
        // sequences before the one it named. One rebuilt from later snapshots applied what
        // each snapshot held and what the recovery delivered, nothing else (the books'
        // equality below says that it covered the day).
        let (applied, before) = match &out.source {
            LineSourceReport::Mold(r) => {
                match r.glimpse.as_ref().and_then(|g| Some((g, g.next_sequence?))) {
                    Some((g, _)) if g.rebuilds > 0 => {
                        let delivered = r.recovery.delivered;
                        if out.applied != g.all_messages + delivered {
                            failed.push(format!(
                                "applied {} != snapshot messages {} + delivered {delivered}",
                                out.applied, g.all_messages
                            ));
                        }
                        (last_sequence - lost, 0)
                    }
                    Some((g, next)) => (out.applied - g.messages, next - 1),
                    None => (out.applied, 0),
                }
            }
            LineSourceReport::Soup(_) => (out.applied, 0),
        };
        if before + applied + lost != last_sequence {
            failed.push(format!(
                "snapshot to {before} + applied {applied} + declared lost {lost} != last \
                 sequence {last_sequence}",
            ));
        }
    }
    if lost > 0 && !(out.header_maybe_bad && out.every_slot_maybe_bad && out.header_lost == lost) {
        failed.push(format!(
            "{lost} declared lost but the books are not all flagged: header MAYBE_BAD {} \
             (lost {}), every slot MAYBE_BAD {}",
            out.header_maybe_bad, out.header_lost, out.every_slot_maybe_bad
        ));
    }
    if lost == 0 && scenario.expect != Expect::Refused {
        if out.header_maybe_bad {
            failed.push("nothing lost, yet the header says MAYBE_BAD".into());
        }
        if out.depth_csv != replayed {
            failed.push("the snapshot's books differ from a replay of the same day".into());
        }
        if let Some(oracle) = oracle {
            if let Err(e) = oracle.compare(scenario.name, &out.depth_csv) {
                failed.push(e);
            }
        }
    }
    if let LineSourceReport::Mold(r) = &out.source {
        if let Some(lines) = r.lines {
            // The arbitration's own account: each message delivered was won exactly once,
            // by line A's copy, line B's or a retransmission (summed here, not by the
            // report's own `delivered()`).
            let won = lines.a.won + lines.b.won + lines.retransmitted_won;
            if won != r.recovery.delivered {
                failed.push(format!(
                    "won A {} + won B {} + retransmitted {} = {won} != delivered {}",
                    lines.a.won, lines.b.won, lines.retransmitted_won, r.recovery.delivered
                ));
            }
        }
    }
    match scenario.expect {
        Expect::Recovered if lost > 0 => {
            failed.push(format!("{lost} declared lost where recovery was possible"))
        }
        Expect::Declared if lost == 0 => failed.push("no loss declared".into()),
        _ => {}
    }
    if let Err(e) = (scenario.check)(out) {
        failed.push(e);
    }
    failed
}

/// The table's header.
pub const HEADER: &str =
    "scenario                      expect     sent  received   applied  dups  \
                          gaps  recovered     lost  ttr p50   ttr max   reqs  refused   secs  result";

/// One row of the table.
pub fn row(scenario: &Scenario, out: &Outcome, failed: &[String]) -> String {
    let ms = |d: Duration| format!("{:.1}ms", d.as_secs_f64() * 1e3);
    let (sent, received, dups, gaps, recovered, p50, max, reqs, refused) =
        match (&out.source, out.sim) {
            (LineSourceReport::Mold(r), SimSide::Mold(s)) => {
                let st = &r.recovery;
                let has_times = st.gaps_recovered > 0;
                (
                    s.messages_sent,
                    st.delivered + st.duplicates,
                    st.duplicates,
                    st.gaps,
                    st.recovered,
                    if has_times {
                        ms(st.recover_p50)
                    } else {
                        "-".into()
                    },
                    if has_times {
                        ms(st.recover_max)
                    } else {
                        "-".into()
                    },
                    st.requests_sent.to_string(),
                    st.breaker_refused.to_string(),
                )
            }
            (LineSourceReport::Soup(r), SimSide::Soup(s)) => (
                s.messages_sent,
                r.messages,
                0,
                0,
                0,
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
            ),
            _ => unreachable!("a line and its own simulator"),
        };
    let mut line = String::new();
    let _ = write!(
        line,
        "{:<29} {:<9} {:>6} {:>9} {:>9} {:>5} {:>5} {:>10} {:>8} {:>8} {:>9} {:>6} {:>8} {:>6.2}  {}",
        scenario.name,
        format!("{:?}", scenario.expect),
        sent,
        received,
        out.applied,
        dups,
        gaps,
        recovered,
        out.lost(),
        p50,
        max,
        reqs,
        refused,
        out.took.as_secs_f64(),
        if failed.is_empty() { "ok" } else { "FAILED" }
    );
    if let (LineSourceReport::Mold(r), SimSide::Mold(s)) = (&out.source, out.sim) {
        if let Some(l) = r.lines {
            // An A/B row's second line: what each line carried and won, beside the
            // simulator's sends and drops on each.
            let _ = write!(
                line,
                "\n    A/B: A sent {} dropped {} pkts, carried {} gaps {} won {}; \
                 B sent {} dropped {} pkts, carried {} gaps {} won {}; retransmitted won {}",
                s.messages_sent,
                s.packets_dropped,
                l.a.messages,
                l.a.gaps,
                l.a.won,
                s.b_messages_sent,
                s.b_packets_dropped,
                l.b.messages,
                l.b.gaps,
                l.b.won,
                l.retransmitted_won
            );
        }
    }
    line
}
