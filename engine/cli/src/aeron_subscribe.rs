//! `ticklane subscribe --aeron CHANNEL`: follows the Aeron stream `run --aeron` publishes,
//! rebuilds every book (or `--symbols`'), prints each update, and at the end of the stream
//! (or on Ctrl-C) writes the final depth with `--book-out`. Built with the `aeron` feature;
//! without it the flag is refused (exit 2).

use anyhow::Result;
use ticklane_engine::views::ExitStatus;

use crate::subscribe_command::SubscribeArgs;

/// Follows `channel` until the stream ends or a signal.
#[cfg(not(feature = "aeron"))]
pub fn follow(_: &SubscribeArgs, _: &str) -> Result<ExitStatus> {
    eprintln!(
        "ticklane subscribe: --aeron: this ticklane was built without the `aeron` feature \
         (cargo build --release --features aeron)"
    );
    Ok(ExitStatus::Usage)
}

/// How long nothing may come, with the driver counting over-runs, before a subscriber
/// takes it that it fell behind.
#[cfg(feature = "aeron")]
const OVER_RUN_GRACE: std::time::Duration = std::time::Duration::from_millis(100);

/// Follows `channel` until the stream ends or a signal.
#[cfg(feature = "aeron")]
pub fn follow(args: &SubscribeArgs, channel: &str) -> Result<ExitStatus> {
    use std::io::{self, BufWriter, Write};
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};

    use ticklane_aeron::aeron_link::{AeronNode, DriverPlace};
    use ticklane_aeron::{FollowedBooks, StreamDecoder};

    let place = match &args.aeron_dir {
        Some(dir) => DriverPlace::External(dir.clone()),
        None => DriverPlace::Embedded,
    };
    let stop = ticklane_engine::live::install_shutdown()?;
    let mut feed = AeronNode::connect(&place)?.into_subscription(channel, args.stream)?;
    eprintln!(
        "ticklane subscribe: following {channel} stream {}",
        args.stream
    );
    let symbols = (!args.symbols.is_empty()).then_some(args.symbols.as_slice());
    let mut books = FollowedBooks::new(symbols);
    let mut decoder = StreamDecoder::new();
    let mut out = BufWriter::new(io::stdout().lock());
    writeln!(
        out,
        "ticklane subscribe: following {channel} stream {}",
        args.stream
    )?;
    out.flush()?;
    let (mut undecodable, mut lost_seen) = (0u64, 0u64);
    let silence = Duration::from_millis(args.silence_ms);
    let mut heard = Instant::now();
    // Over-runs (packets dropped as beyond the receiver window) while nothing comes mean
    // it fell behind: it rejoins then, without waiting for the silence.
    let (mut over_runs_heard, mut driver_read) =
        (feed.driver_counts().flow_control_over_runs, Instant::now());
    let mut written: io::Result<()> = Ok(());
    let interrupted = loop {
        if stop.load(Ordering::Relaxed) {
            break true;
        }
        let polled = feed.poll(256, |message| {
            let decoded = decoder.decode(message, |record| {
                if let Some(update) = books.apply(record) {
                    if !args.quiet && written.is_ok() {
                        written = writeln!(out, "{update}");
                    }
                }
            });
            if let Err(e) = decoded {
                undecodable += 1;
                if undecodable == 1 {
                    eprintln!("ticklane subscribe: a message is not the stream's: {e}");
                }
            }
        })?;
        written
            .as_ref()
            .map_err(|e| io::Error::new(e.kind(), e.to_string()))?;
        if books.has_ended() {
            break false;
        }
        let (_, lost) = feed.images();
        if lost > lost_seen {
            lost_seen = lost;
            books.image_lost();
            eprintln!(
                "ticklane subscribe: the stream's image went (the publisher stopped, or this \
                 subscriber fell behind); books stay as last sent until it comes back"
            );
        }
        if polled > 0 {
            heard = Instant::now();
        } else {
            out.flush()?;
            let quiet = heard.elapsed();
            let mut over_run = false;
            if quiet > OVER_RUN_GRACE && driver_read.elapsed() > OVER_RUN_GRACE {
                driver_read = Instant::now();
                over_run = feed.driver_counts().flow_control_over_runs > over_runs_heard;
            }
            if (over_run || quiet > silence) && feed.is_connected() {
                eprintln!(
                    "ticklane subscribe: {} for {} ms from a connected publisher: this \
                     subscriber fell behind; rejoining at the publisher's position, the \
                     refresh cycle brings the books back",
                    if over_run {
                        "packets beyond the receiver window and nothing delivered"
                    } else {
                        "nothing"
                    },
                    quiet.as_millis()
                );
                feed.rejoin()?;
                books.image_lost();
                heard = Instant::now();
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        if polled > 0 && driver_read.elapsed() > OVER_RUN_GRACE {
            driver_read = Instant::now();
            over_runs_heard = feed.driver_counts().flow_control_over_runs;
        }
    };
    out.flush()?;
    drop(out);
    if let Some(path) = &args.book_out {
        let file = std::fs::File::create(path)
            .map_err(|e| io::Error::new(e.kind(), format!("--book-out {}: {e}", path.display())))?;
        books
            .write_book_csv(args.depth as usize, BufWriter::new(file))?
            .flush()?;
    }
    let c = books.counts();
    let (joined, lost) = feed.images();
    let driver = feed.driver_counts();
    eprintln!(
        "ticklane subscribe: {} records ({} changes, {} trades, {} refreshes, {} cycles), {} \
         books; images joined {joined}, lost {lost}; rejoined {}; {} undecodable; driver: {} \
         NAKs sent, {} gaps filled with padding, {} over-runs; {}; {}",
        c.records,
        c.changes,
        c.trades,
        c.refreshes,
        c.cycles,
        books.len(),
        feed.rejoined(),
        undecodable,
        driver.naks_sent,
        driver.loss_gap_fills,
        driver.flow_control_over_runs,
        if books.is_complete() {
            "every book sent since it joined"
        } else {
            "NOT EVERY BOOK SEEN (no whole refresh cycle since it joined)"
        },
        if books.has_ended() {
            "end of stream"
        } else {
            "stopped before the end of the stream"
        }
    );
    let bad = books.maybe_bad();
    if !bad.is_empty() {
        eprintln!(
            "ticklane subscribe: {} books flagged MAYBE_BAD by the publisher: {}",
            bad.len(),
            bad.join(",")
        );
    }
    // The stream's end without every book, or with books the publisher's line declared
    // messages lost for, is declared loss (3), as replay's is; Ctrl-C before the end is 130.
    Ok(if interrupted {
        ExitStatus::Interrupted
    } else if !books.is_complete() || !bad.is_empty() {
        ExitStatus::DeclaredLost
    } else {
        ExitStatus::Success
    })
}
