//! The built-in live demo (`ticklane run` with no configuration, and `cargo run --release`):
//! the exchange simulator serves a generated day as MoldUDP64 over loopback UDP, dropping a
//! few packets on purpose; the real pipeline receives it through real sockets, recovers the
//! gaps from the simulator's retransmission server, and publishes into a snapshot file.
//! At the end the snapshot's books are compared with a plain replay of the messages the line
//! delivered: a check of the transport (sockets, recovery, ring, publication), not of the
//! books, since both sides run the same book code. A demo stopped early is compared with a
//! replay of what it received up to then.

use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ticklane_feed::moldudp64::{GapRange, RecoveryConfig, Session};
use ticklane_feed::net::UdpFeedConfig;
use ticklane_sim::{
    Faults, GenConfig, MessageLog, MoldSimConfig, MoldSimulator, Rate, SimCounts, SimError,
};

use crate::book::{Applier, NoBbo};
use crate::book::{BookConfig, Books};
use crate::csv::{write_book_csv, write_snapshot_book_csv};
use crate::overload::{OverloadConfig, OverloadCounts};
use crate::pipeline::{MoldFeedConfig, MoldSource, Percentiles, PipelineConfig, SourceEnd};
use crate::snapshot::{remove_snapshot_files, SnapshotError, SnapshotReader, SnapshotWriter};

use super::line::{run_line, LineSource, LineSourceReport};

/// What the demo serves.
#[derive(Clone, Copy, Debug)]
pub struct DemoConfig {
    /// Messages in the generated day.
    pub messages: u64,
    /// Stocks in it.
    pub stocks: u16,
    /// Messages per second the simulator sends.
    pub rate: u64,
    /// Fraction of packets the simulator drops (recovered by retransmission).
    pub drop_ratio: f64,
    /// Seed of the day and of the drops.
    pub seed: u64,
    /// Print a progress line while it runs.
    pub progress: bool,
}

impl Default for DemoConfig {
    fn default() -> Self {
        DemoConfig {
            messages: 1_000_000,
            stocks: 12,
            rate: 1_000_000,
            drop_ratio: 0.002,
            seed: 1,
            progress: true,
        }
    }
}

/// What the demo did.
pub struct DemoReport {
    /// The simulator's counters.
    pub sim: SimCounts,
    /// The reader's counters (packets, gaps, recovered, lost).
    pub source: LineSourceReport,
    /// Messages the book thread applied.
    pub messages: u64,
    /// Wall time of the pipeline.
    pub elapsed: Duration,
    /// Receive to published, the book thread's view of end-to-end latency.
    pub receive_to_published: Percentiles,
    /// Receive to applied.
    pub receive_to_applied: Percentiles,
    /// What overload control did.
    pub overload: Option<OverloadCounts>,
    /// The snapshot's books against a plain replay of the messages the line delivered.
    pub transport: TransportCheck,
    /// Whether a stop request (a signal) ended the line before the end of session.
    pub interrupted: bool,
    /// The snapshot file (removed at the end unless asked to keep it).
    pub snapshot: PathBuf,
    /// Final books.
    pub books: Books,
}

/// The transport check: a plain replay (the same book code, no sockets, no ring) of the
/// messages the line delivered, against the books in the snapshot. Equal books say the
/// transport lost, duplicated and reordered nothing that recovery did not put right; they
/// say nothing about whether the books themselves are right.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransportCheck {
    /// Same messages, same books: the snapshot equals the replay of `messages` messages.
    Same {
        /// Messages replayed.
        messages: u64,
    },
    /// The snapshot differs from the replay of the same `messages` messages.
    Differs {
        /// Messages replayed.
        messages: u64,
    },
    /// The line was not MoldUDP64, so which messages it delivered is not known by sequence
    /// and nothing was compared.
    Unknown,
}

impl TransportCheck {
    /// True only for [`TransportCheck::Same`].
    pub fn is_same(self) -> bool {
        matches!(self, TransportCheck::Same { .. })
    }
}

/// The sequence numbers a MoldUDP64 line starting at 1 delivered, in order, when it
/// delivered `count` messages and declared `lost` lost: recovery never delivers out of
/// order, so they are 1, 2, … skipping each lost range. `lost` is every declared range (the
/// recovery machine keeps them all), in any order.
fn delivered_sequences(count: u64, lost: &[GapRange]) -> impl Iterator<Item = u64> {
    let mut gaps = lost.to_vec();
    gaps.sort_unstable_by_key(|g| g.first);
    let mut gaps = gaps.into_iter().peekable();
    (1..)
        .filter(move |&seq| {
            while gaps.next_if(|g| g.last < seq).is_some() {}
            gaps.peek().is_none_or(|g| g.first > seq)
        })
        .take(usize::try_from(count).unwrap_or(usize::MAX))
}

/// Why the demo could not run.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// A socket, a thread, or the books.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The simulator.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// The snapshot file.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
}

/// Runs the demo.
///
/// # Errors
///
/// If a socket, a thread, the snapshot or the books cannot be set up.
pub fn run_demo(config: DemoConfig, stop: &AtomicBool) -> Result<DemoReport, DemoError> {
    let log = Arc::new(MessageLog::from_generator(GenConfig {
        messages: config.messages,
        seed: config.seed,
        stocks: config.stocks,
        hard_cases: false,
        crossing: false,
    }));
    let pipeline = PipelineConfig {
        books: BookConfig {
            max_orders: 1 << 20,
            max_books: 1024,
            ..BookConfig::default()
        },
        ..PipelineConfig::default()
    };
    let feed = MoldFeedConfig {
        udp: UdpFeedConfig {
            bind: SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)),
            ..UdpFeedConfig::default()
        },
        recovery: RecoveryConfig {
            start_sequence: Some(1),
            retransmit_timeout: Duration::from_millis(20),
            max_retries: 10,
            ..RecoveryConfig::default()
        },
        silence_timeout: Duration::from_secs(5),
        max_duration: Some(Duration::from_secs(120)),
        ..MoldFeedConfig::default()
    };
    let mut source = MoldSource::open(feed, pipeline.wait)?;
    let mut sim_config =
        MoldSimConfig::new(Session::new(b"DEMO").expect("fits"), source.local_addr()?);
    sim_config.rate = Rate::per_second(config.rate.max(1));
    sim_config.faults = Faults {
        seed: config.seed,
        drop_ratio: config.drop_ratio,
        ..Faults::default()
    };
    let sim = MoldSimulator::start(Arc::clone(&log), sim_config)?;
    source.set_request_server(sim.request_addr());

    let snapshot = std::env::temp_dir().join(format!("ticklane-demo-{}.snap", std::process::id()));
    let writer = SnapshotWriter::create(&snapshot, 1024, 10)?;
    let done = AtomicBool::new(false);
    let report = std::thread::scope(|scope| {
        if config.progress {
            scope.spawn(|| {
                while !done.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(200));
                    let s = sim.stats();
                    print!(
                        "\r  simulator sent {:>9} messages in {:>7} packets, dropped {:>4} on purpose, resent {:>6} on request",
                        s.messages_sent, s.packets_sent, s.packets_dropped, s.messages_retransmitted
                    );
                    let _ = std::io::stdout().flush();
                }
                println!();
            });
        }
        let report = run_line(
            LineSource::Mold(source),
            pipeline,
            Some(writer),
            OverloadConfig::default(),
            stop,
        );
        done.store(true, Ordering::Relaxed);
        report
    })?;
    let overload = report.overload;
    let report = report.report;
    let sim_stats = sim.stop()?;

    // The messages the line delivered, through a plain replay: the books must be equal.
    // Interrupted or not, that is a prefix of the day with the declared-lost ranges left out.
    let delivered = match &report.source {
        LineSourceReport::Mold(r) => {
            let lost: Vec<GapRange> = r.lost.ranges().iter().map(|l| l.range).collect();
            Some(delivered_sequences(report.book.messages, &lost).collect::<Vec<u64>>())
        }
        LineSourceReport::Soup(_) => None,
    };
    let transport = match delivered {
        Some(sequences) => {
            let mut applier: Applier<NoBbo> = Applier::new(pipeline.books, None)?;
            for &seq in &sequences {
                if let Some(message) = log.get(seq) {
                    // Errors are counted by the books on both sides alike.
                    let _ = applier.step(seq, message);
                }
            }
            let expected = write_book_csv(applier.books(), 10, Vec::new())?;
            let published =
                write_snapshot_book_csv(&SnapshotReader::open(&snapshot)?, 10, Vec::new())?;
            let messages = sequences.len() as u64;
            if expected == published {
                TransportCheck::Same { messages }
            } else {
                TransportCheck::Differs { messages }
            }
        }
        None => TransportCheck::Unknown,
    };
    // Best effort: a temp file left behind is no reason to fail the demo.
    let _ = remove_snapshot_files(&snapshot);
    let interrupted = matches!(report.source.end(), SourceEnd::Stopped);
    let latency = &report.book.latency;
    Ok(DemoReport {
        sim: sim_stats,
        source: report.source,
        messages: report.book.messages,
        elapsed: report.elapsed,
        receive_to_published: Percentiles::of(&latency.receive_to_published),
        receive_to_applied: Percentiles::of(&latency.receive_to_applied),
        transport,
        interrupted,
        overload,
        snapshot,
        books: report.book.books,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delivered(count: u64, lost: &[GapRange]) -> Vec<u64> {
        delivered_sequences(count, lost).collect()
    }

    #[test]
    fn a_clean_prefix_is_one_to_count() {
        assert_eq!(delivered(4, &[]), vec![1, 2, 3, 4]);
        assert_eq!(
            delivered(0, &[]),
            Vec::<u64>::new(),
            "stopped before the first"
        );
    }

    #[test]
    fn declared_lost_ranges_are_skipped_in_any_order() {
        let lost = [
            GapRange { first: 6, last: 6 },
            GapRange { first: 2, last: 3 },
        ];
        assert_eq!(delivered(5, &lost), vec![1, 4, 5, 7, 8]);
        let first_lost = [GapRange { first: 1, last: 2 }];
        assert_eq!(delivered(2, &first_lost), vec![3, 4]);
    }
}
