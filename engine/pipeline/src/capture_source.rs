//! A reader stage that plays a captured file into the ring: `ticklane replay --pace`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ticklane_feed::capture::{CaptureCounts, CaptureError, CaptureReader, InputFormat, NoMessages};
use ticklane_feed::itch::{Nanos, WireField};
use ticklane_feed::moldudp64::GapRange;

use super::frame::Frame;
use super::wait::{WaitStrategy, Waiter};
use super::{FrameProducer, FrameSource};
use crate::clock::Clock;
use ticklane_book::publish::DeclaredLoss;
use ticklane_ring::ring::PushError;
use ticklane_snapshot::wall_clock_ns;

/// How fast a capture is played.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pace {
    /// As fast as the book thread takes it.
    Max,
    /// At the recorded pace (pcap timestamps, or ITCH timestamps for ITCH50 files),
    /// divided by the factor: `Recorded(1.0)` is real time, `Recorded(10.0)` ten times faster.
    Recorded(f64),
}

impl std::str::FromStr for Pace {
    type Err = String;

    /// `max`, `recorded`, or `<N>x` (N times the recorded pace).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "max" => Ok(Pace::Max),
            "recorded" => Ok(Pace::Recorded(1.0)),
            _ => s
                .strip_suffix('x')
                .and_then(|n| n.parse::<f64>().ok())
                .filter(|n| *n > 0.0 && n.is_finite())
                .map(Pace::Recorded)
                .ok_or_else(|| format!("pace {s:?}: use max, recorded or <N>x (e.g. 10x)")),
        }
    }
}

/// What the capture source did.
#[derive(Debug)]
pub struct CaptureSourceReport {
    /// The input's format.
    pub format: InputFormat,
    /// Messages pushed into the ring.
    pub messages: u64,
    /// The reader's counters at the end; their `gap_ranges` are empty here: the ranges are
    /// in [`CaptureSourceReport::gap_ranges`] (see [`CaptureSourceReport::stats`]).
    pub counts: CaptureCounts<'static>,
    /// The first ranges the MoldUDP64 sequencer declared lost.
    pub gap_ranges: Vec<GapRange>,
    /// Why the input yielded no message although it read to its end, if it did not.
    pub no_messages: Option<NoMessages>,
    /// The error that ended the input early, if any.
    pub error: Option<CaptureError>,
}

impl CaptureSourceReport {
    /// The reader's counters at the end, gap ranges included.
    pub fn stats(&self) -> CaptureCounts<'_> {
        CaptureCounts {
            gap_ranges: &self.gap_ranges,
            ..self.counts
        }
    }
}

/// Plays a capture into the pipeline.
pub struct CaptureSource {
    reader: CaptureReader,
    pace: Pace,
    wait: WaitStrategy,
}

impl CaptureSource {
    /// A source reading `reader` at `pace`, waiting on a full ring with `wait`.
    pub fn new(reader: CaptureReader, pace: Pace, wait: WaitStrategy) -> Self {
        CaptureSource { reader, pace, wait }
    }
}

/// Messages that share one receive stamp at [`Pace::Max`]: a file has no packets to stamp, so
/// the reader reads the clock once per this many messages (and again whenever the ring was
/// full). A stamp then marks when the reader began reading the batch its message belongs to:
/// never later than the message's own read, at most `STAMP_EVERY - 1` reads earlier (about
/// a microsecond), so receive-to-applied errs on the long side by at most that.
pub const STAMP_EVERY: usize = 32;

/// Pushes a frame stamped `recv_ns`, waiting with `waiter` while the ring is full; a frame
/// that had to wait is stamped again when a slot is free (the wait is the book thread's
/// backlog, not the reader's). Returns the stamp the frame carries, or `None` if the book
/// thread is gone.
#[inline(always)]
fn push_stamped<Q: FrameProducer>(
    frames: &mut Q,
    waiter: &mut Waiter,
    clock: &Clock,
    recv_ns: u64,
    fill: impl Fn(&mut Frame, u64),
) -> Option<u64> {
    let mut now = recv_ns;
    loop {
        match frames.push_with(|f: &mut Frame| fill(f, now)) {
            Ok(()) => {
                waiter.reset();
                return Some(now);
            }
            Err(PushError::Full(_)) => {
                if frames.is_abandoned() {
                    return None;
                }
                waiter.wait();
                now = clock.now_ns();
            }
        }
    }
}

/// The time a message carries: its capture stamp if the format has one, else its ITCH
/// timestamp (bytes 5..11 of every message).
fn message_time(bytes: &[u8], capture_ns: Option<u64>) -> Option<u64> {
    capture_ns.or_else(|| bytes.get(5..11).map(|t| Nanos::read(t).0))
}

/// Waits until the clock reads `deadline`: sleeps while far, spins the last stretch.
fn wait_until(clock: &Clock, deadline: u64, stop: &AtomicBool) {
    loop {
        let now = clock.now_ns();
        if now >= deadline || stop.load(Ordering::Relaxed) {
            return;
        }
        let left = deadline - now;
        if left > 200_000 {
            std::thread::sleep(Duration::from_nanos((left - 100_000).min(50_000_000)));
        } else {
            std::hint::spin_loop();
        }
    }
}

impl CaptureSource {
    /// Tells the book thread, in order with the messages, of the messages the sequencer
    /// declared lost since `declared` (a pcap's gap): the snapshot flags every book
    /// `MAYBE_BAD` and counts them, as a live line's declared loss does. Returns `false` if
    /// the book thread is gone.
    #[cold]
    fn declare_losses<Q: FrameProducer>(
        &self,
        frames: &mut Q,
        waiter: &mut Waiter,
        clock: &Clock,
        declared: &mut u64,
    ) -> bool {
        let lost = self.reader.messages_lost();
        let loss = DeclaredLoss {
            first: self.reader.stats().gap_ranges.last().map_or(0, |r| r.first),
            count: lost - *declared,
            at_ns: wall_clock_ns(),
        };
        *declared = lost;
        let recv_ns = clock.now_ns();
        frames.push_waiting(waiter, |f: &mut Frame| f.set_declared_loss(loss, recv_ns))
    }
}

impl FrameSource for CaptureSource {
    type Report = CaptureSourceReport;

    fn run<Q: FrameProducer>(
        mut self,
        mut frames: Q,
        clock: Clock,
        stop: &AtomicBool,
    ) -> CaptureSourceReport {
        let mut messages = 0u64;
        let mut error = None;
        let mut waiter = Waiter::new(self.wait);
        let mut first: Option<(u64, u64)> = None; // (message time, clock) at the first message
                                                  // At `Pace::Max`, the stamp of the batch being read and how many messages it still
                                                  // covers.
        let (mut stamp_ns, mut unstamped) = (0u64, 0usize);
        // Messages declared lost that the book thread has been told of.
        let mut declared = 0u64;
        loop {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let raw = match self.reader.next_message() {
                Ok(Some(raw)) => raw,
                Ok(None) => break,
                Err(e) => {
                    error = Some(e);
                    break;
                }
            };
            let mut intended_ns = 0;
            let recv_ns = if let Pace::Recorded(speed) = self.pace {
                if let Some(t) = message_time(raw.bytes, raw.capture_ns) {
                    let (t0, c0) = *first.get_or_insert((t, clock.now_ns()));
                    intended_ns = c0 + (t.saturating_sub(t0) as f64 / speed) as u64;
                    wait_until(&clock, intended_ns, stop);
                }
                clock.now_ns()
            } else {
                if unstamped == 0 {
                    stamp_ns = clock.now_ns();
                    unstamped = STAMP_EVERY;
                }
                unstamped -= 1;
                stamp_ns
            };
            let seq = raw.seq.unwrap_or(raw.index);
            let bytes = raw.bytes;
            let pushed = push_stamped(&mut frames, &mut waiter, &clock, recv_ns, |f, now| {
                f.set_message_or_empty(bytes, seq, now, intended_ns);
            });
            match pushed {
                Some(restamped) if restamped != recv_ns => {
                    // The ring was full: the batch's stamp is stale, the next one starts now.
                    stamp_ns = restamped;
                    unstamped = STAMP_EVERY - 1;
                }
                Some(_) => {}
                None => return report(&self.reader, messages, error),
            }
            messages += 1;
            if self.reader.messages_lost() != declared
                && !self.declare_losses(&mut frames, &mut waiter, &clock, &mut declared)
            {
                return report(&self.reader, messages, error);
            }
        }
        // The end of the input declares the gaps still open.
        if self.reader.messages_lost() != declared
            && !self.declare_losses(&mut frames, &mut waiter, &clock, &mut declared)
        {
            return report(&self.reader, messages, error);
        }
        frames.push_end(&mut waiter, clock.now_ns());
        report(&self.reader, messages, error)
    }
}

fn report(
    reader: &CaptureReader,
    messages: u64,
    error: Option<CaptureError>,
) -> CaptureSourceReport {
    let stats = reader.stats();
    CaptureSourceReport {
        format: reader.format(),
        messages,
        counts: CaptureCounts {
            gap_ranges: &[],
            ..stats
        },
        gap_ranges: stats.gap_ranges.to_vec(),
        no_messages: reader.no_messages(),
        error,
    }
}
