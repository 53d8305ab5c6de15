//! `ticklane tail`: runs the engine with a printing consumer attached to the update stream.
//!
//! On a live line the consumer is an ordinary in-process
//! [`Subscription`](crate::overload::Subscription): if it is cut loose (the terminal could
//! not keep up with the trades), it says so on stderr and subscribes again. A capture file
//! has no real-time constraint, so `tail --capture` waits for its consumer instead
//! (`every_event.rs`): every event is printed, none conflated, none cut loose.
#![forbid(unsafe_code)]

mod every_event;
mod tail_command;

pub use tail_command::{run_tail, TailInput};

use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use ticklane_feed::capture::{CaptureError, CaptureReader, NoMessages, ReadOptions};
use ticklane_feed::itch::Locate;

use every_event::EveryEvent;

use crate::book::{Books, LevelView, Side};
use crate::config::{FeedConfig, RunConfig};
use crate::overload::{
    Change, Event, EventBody, OverloadConfig, OverloadCounts, RecvError, SheddingPublisher,
    SnapshotSink, StateSink, SubscriberConfig, SubscriberHub,
};
use crate::pipeline::{
    run_pipeline, CaptureSource, FrameSource, MoldSource, Pace, PipelineConfig, SoupSource,
};
use crate::snapshot::SnapshotWriter;

/// A sink that publishes nothing: `tail` without a snapshot file.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoSink;

impl StateSink for NoSink {
    fn publish_state(&mut self, _: &Books, _: &Change) -> bool {
        true
    }
}

/// Which instruments a tail prints.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SymbolFilter {
    /// Symbols to print (without padding); empty prints every instrument.
    pub symbols: Vec<Vec<u8>>,
}

impl SymbolFilter {
    /// `A,B,C` as a filter; an empty list prints everything.
    pub fn parse(list: &str) -> Self {
        SymbolFilter {
            symbols: list
                .split(',')
                .map(|s| s.trim().as_bytes().to_vec())
                .filter(|s| !s.is_empty())
                .collect(),
        }
    }

    /// Whether `event` passes.
    pub fn admits(&self, event: &Event) -> bool {
        self.symbols.is_empty() || self.symbols.iter().any(|s| s == event.symbol())
    }

    /// The symbols of the filter that no `R` message of the feed named, in filter order.
    pub fn unseen(&self, books: &Books) -> Vec<String> {
        self.symbols
            .iter()
            .filter(|wanted| {
                !(0..=u16::MAX).any(|locate| books.symbol(Locate(locate)) == wanted.as_slice())
            })
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect()
    }
}

/// What a tail run did.
#[derive(Debug, Default)]
pub struct TailReport {
    /// ITCH messages the engine applied.
    pub messages: u64,
    /// Lines printed.
    pub printed: u64,
    /// Times the printing consumer was cut loose and subscribed again (always 0 for a
    /// capture: its consumer is waited for).
    pub resubscribed: u64,
    /// The overload counters of the run (all 0 for a capture: nothing is shed).
    pub counters: OverloadCounts,
    /// Symbols asked for with `--symbols` that the feed never named.
    pub unseen_symbols: Vec<String>,
    /// Why a capture yielded no message, if it read to its end without one.
    pub no_messages: Option<NoMessages>,
    /// The error that ended a capture early, if one did.
    pub input_error: Option<CaptureError>,
    /// Messages the line or the capture declared lost: the books (and what was printed) may
    /// be wrong from the first loss on.
    pub declared_lost: u64,
}

/// Writes one event as one line: sequence, ITCH time, symbol, kind, fields.
///
/// # Errors
///
/// If `out` fails.
pub fn write_event(out: &mut impl Write, event: &Event) -> io::Result<()> {
    let ts = event.exchange_ts.0;
    let (h, m, s, ns) = (
        ts / 3_600_000_000_000,
        ts / 60_000_000_000 % 60,
        ts / 1_000_000_000 % 60,
        ts % 1_000_000_000,
    );
    write!(
        out,
        "{:>10} {h:02}:{m:02}:{s:02}.{ns:09} {:<8} ",
        event.feed_seq,
        String::from_utf8_lossy(event.symbol())
    )?;
    let level = |l: &LevelView| format!("{}x{}@{}", l.qty, l.orders, l.price);
    match &event.body {
        EventBody::Quote(top) => writeln!(
            out,
            "QUOTE   bid {}  ask {}",
            level(&top.bid),
            level(&top.ask)
        ),
        EventBody::Level { side, level: l } => writeln!(
            out,
            "LEVEL   {} {}",
            if *side == Side::Bid { "bid" } else { "ask" },
            level(l)
        ),
        EventBody::Trade { price, shares } => writeln!(out, "TRADE   {shares}@{price}"),
        EventBody::TradingState { state, reason } => writeln!(
            out,
            "STATE   {} {}",
            char::from(*state),
            String::from_utf8_lossy(reason).trim_end()
        ),
        EventBody::Refresh(r) => {
            let top = r.top();
            writeln!(
                out,
                "REFRESH bid {}  ask {}  levels {}/{}",
                level(&top.bid),
                level(&top.ask),
                r.bid_levels,
                r.ask_levels
            )
        }
    }
}

/// Events queued between the book thread and the printer of a capture: enough to keep both
/// threads busy, small enough that the wait is felt at once.
const CAPTURE_QUEUE_EVENTS: usize = 4096;

/// Plays a capture through the engine and prints its whole update stream to `out`: the
/// engine waits for the printer (a file has no real-time constraint), so every event of the
/// symbols asked is printed once, in order, whatever the pace.
///
/// # Errors
///
/// If the capture cannot be opened, the books cannot be allocated, or `out` fails. A capture
/// that cannot be read on is reported in [`TailReport::input_error`], after everything
/// before it was printed.
pub fn tail_capture(
    path: &Path,
    pace: Pace,
    pipeline: PipelineConfig,
    filter: &SymbolFilter,
    mut out: impl Write + Send,
) -> io::Result<TailReport> {
    let reader = CaptureReader::open(path, ReadOptions::default()).map_err(io::Error::other)?;
    let source = CaptureSource::new(reader, pace, pipeline.wait);
    let (events, queue) = mpsc::sync_channel(CAPTURE_QUEUE_EVENTS);
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let (stop_printing, out) = (&stop, &mut out);
        let printer = scope.spawn(move || -> io::Result<u64> {
            let printed = print_all(&queue, filter, out);
            if printed.is_err() {
                // Nobody reads on: end the run rather than apply the rest unseen.
                stop_printing.store(true, Ordering::Relaxed);
            }
            printed
        });
        let ran = run_pipeline(pipeline, source, EveryEvent::new(events), &stop);
        let printed = printer
            .join()
            .map_err(|_| io::Error::other("the printing consumer panicked"))?;
        let report = ran?;
        let printed = printed?;
        Ok(TailReport {
            messages: report.book.messages,
            printed,
            unseen_symbols: filter.unseen(&report.book.books),
            no_messages: report.source.no_messages,
            input_error: report.source.error,
            declared_lost: report.book.declared_lost,
            ..TailReport::default()
        })
    })
}

/// Prints every event of `queue` that `filter` admits until the sender is gone; returns the
/// lines printed.
fn print_all(
    queue: &mpsc::Receiver<Event>,
    filter: &SymbolFilter,
    out: &mut impl Write,
) -> io::Result<u64> {
    let mut printed = 0;
    for event in queue {
        if filter.admits(&event) {
            write_event(out, &event)?;
            printed += 1;
        }
    }
    out.flush()?;
    Ok(printed)
}

/// Runs the feed line of `config` (and its snapshot file, if it names one) and prints its
/// update stream to `out` until the feed ends.
///
/// # Errors
///
/// If the configuration is invalid, the feed cannot be opened, the snapshot cannot be
/// created, or `out` fails.
pub fn tail_config(
    config: &RunConfig,
    filter: &SymbolFilter,
    out: impl Write + Send,
) -> io::Result<TailReport> {
    let pipeline = config.pipeline().map_err(io::Error::other)?;
    let writer = match &config.snapshot.path {
        Some(path) => Some(
            SnapshotWriter::create(path, config.snapshot.capacity, config.snapshot.depth)
                .map_err(io::Error::other)?,
        ),
        None => None,
    };
    match config.feed_config().map_err(io::Error::other)? {
        FeedConfig::Mold(feed) => {
            let source = MoldSource::open(feed, pipeline.wait)?;
            tail_source(pipeline, source, writer, filter, out)
        }
        FeedConfig::Soup(feed) => {
            let source = SoupSource::new(feed, pipeline.wait);
            tail_source(pipeline, source, writer, filter, out)
        }
    }
}

/// Runs `source` with a printing consumer attached.
fn tail_source<S: FrameSource>(
    pipeline: PipelineConfig,
    source: S,
    snapshot: Option<SnapshotWriter>,
    filter: &SymbolFilter,
    mut out: impl Write + Send,
) -> io::Result<TailReport> {
    let (hub, fanout) = SubscriberHub::new(SubscriberConfig::default());
    let mut subscription = hub.subscribe();
    let config = OverloadConfig::default();
    let stop = AtomicBool::new(false);
    let printer_done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let printer = scope.spawn(|| -> io::Result<(u64, u64)> {
            let mut printed = 0u64;
            let mut resubscribed = 0u64;
            loop {
                match subscription.try_recv() {
                    Ok(event) if filter.admits(&event) => {
                        write_event(&mut out, &event)?;
                        printed += 1;
                    }
                    Ok(_) => {}
                    Err(RecvError::Empty) => std::thread::sleep(Duration::from_micros(200)),
                    Err(RecvError::CutLoose(reason)) => {
                        out.flush()?;
                        eprintln!("ticklane tail: cut loose ({reason}); subscribing again");
                        resubscribed += 1;
                        subscription = hub.subscribe();
                    }
                    Err(RecvError::Closed) => break,
                }
                if printer_done.load(Ordering::Relaxed) {
                    break;
                }
            }
            out.flush()?;
            Ok((printed, resubscribed))
        });
        let ran = |r: crate::pipeline::PipelineReport<S::Report>, counters: OverloadCounts| {
            (
                r.book.messages,
                counters,
                filter.unseen(&r.book.books),
                r.book.declared_lost,
            )
        };
        let run = |fanout| match snapshot {
            Some(writer) => {
                let publisher = SheddingPublisher::new(SnapshotSink::new(writer), config)
                    .with_subscribers(fanout);
                let counters = publisher.shared_counters();
                run_pipeline(pipeline, source, publisher, &stop).map(|r| ran(r, counters.load()))
            }
            None => {
                let publisher = SheddingPublisher::new(NoSink, config).with_subscribers(fanout);
                let counters = publisher.shared_counters();
                run_pipeline(pipeline, source, publisher, &stop).map(|r| ran(r, counters.load()))
            }
        };
        let ran = run(fanout);
        if ran.is_err() {
            // The engine never ran: the printer would wait for a close that may not come.
            printer_done.store(true, Ordering::Relaxed);
        }
        let printed = printer
            .join()
            .map_err(|_| io::Error::other("the printing consumer panicked"))?;
        let (messages, counters, unseen_symbols, declared_lost) = ran?;
        let (printed, resubscribed) = printed?;
        Ok(TailReport {
            messages,
            printed,
            resubscribed,
            counters,
            unseen_symbols,
            declared_lost,
            ..TailReport::default()
        })
    })
}
