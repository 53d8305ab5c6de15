//! The book thread: pops frames from the ring, applies each message to the books, and
//! publishes what changed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::frame::{Frame, FrameKind};
use super::latency::{LatencyGroup, StageLatency};
use super::latency_gauges::{LatencyGauges, LatencyPublisher};
use super::queue::FrameConsumer;
use super::wait::{WaitStrategy, Waiter};
use crate::clock::Clock;
use ticklane_book::publish::{FeedState, Publisher};
use ticklane_book::{Applier, ApplyError, BookConfig, Books, NoBbo, TouchesAhead, TypeCounts};

/// Frames taken per batch: the slots go back to the reader together.
const BATCH: usize = 256;

/// What the book thread did.
pub struct BookStageReport {
    /// The books as they ended.
    pub books: Books,
    /// Messages applied (unknown types included).
    pub messages: u64,
    /// Counts by type.
    pub by_type: TypeCounts,
    /// Messages that could not be decoded (skipped, counted; the first is described).
    pub decode_errors: u64,
    /// The first decode error, with the frame's sequence number.
    pub first_decode_error: Option<String>,
    /// Latency histograms.
    pub latency: StageLatency,
    /// Whether an end frame was seen (the feed ended) rather than a stop request.
    pub ended: bool,
    /// Messages the source declared lost (the sum of its loss frames), whatever the source:
    /// what a consumer that sees only the books reports, and exits 3 for.
    pub declared_lost: u64,
}

/// The book stage, before it runs.
pub struct BookStage<P: Publisher> {
    applier: Applier<NoBbo>,
    publisher: P,
    clock: Clock,
    wait: WaitStrategy,
    latency_gauges: LatencyPublisher,
}

impl<P: Publisher> BookStage<P> {
    /// Books at `config`, publishing to `publisher`.
    ///
    /// # Errors
    ///
    /// If the book tables cannot be allocated.
    pub fn new(
        config: BookConfig,
        publisher: P,
        clock: Clock,
        wait: WaitStrategy,
    ) -> std::io::Result<Self> {
        Ok(BookStage {
            applier: Applier::new(config, None)?,
            publisher,
            clock,
            wait,
            latency_gauges: LatencyPublisher::default(),
        })
    }

    /// Publishes the receive-to-applied percentiles into `gauges` while it runs (at most
    /// every [`super::latency_gauges::PUBLISH_EVERY_NS`], never per message) and at the end.
    pub fn with_latency_gauges(mut self, gauges: Option<Arc<LatencyGauges>>) -> Self {
        self.latency_gauges = LatencyPublisher::new(gauges);
        self
    }

    /// Runs until an end frame arrives, or `stop` is set and the ring is drained, or the
    /// reader is gone and the ring is drained.
    pub fn run<C: FrameConsumer>(mut self, mut frames: C, stop: &AtomicBool) -> BookStageReport {
        let mut latency = StageLatency::default();
        let mut group = LatencyGroup::default();
        let mut waiter = Waiter::new(self.wait);
        let mut decode_errors = 0u64;
        let mut first_decode_error = None;
        let mut ended = false;
        let mut declared_lost = 0u64;
        loop {
            let gone = frames.is_abandoned();
            // The clock is read once when a batch's first message is taken, then once per
            // group of applied messages (see `LatencyGroup`) and at the batch's end: that
            // reading is the group's applied (and, for what changed a book, published) stamp,
            // the next messages' sojourn and publication stamp, and the batch end's time.
            let mut now_ns = None;
            // Look ahead in this batch only while the books have outgrown the caches.
            let look_ahead = self.applier.books().worth_prefetching();
            let mut each = |frame: &Frame, ahead: TouchesAhead| {
                match frame.kind() {
                    Some(FrameKind::Message) => {}
                    Some(FrameKind::LineState) => {
                        if let Some((state, since_ns)) = frame.line_state() {
                            // A snapshot's messages come between "loading snapshot" and
                            // the next state: the books keep its locate-0 ones by symbol.
                            self.applier
                                .books_mut()
                                .set_loading_snapshot(state == FeedState::Snapshot);
                            self.publisher
                                .line_state(self.applier.books(), state, since_ns);
                        }
                        return false;
                    }
                    Some(FrameKind::Loss) => {
                        if let Some(loss) = frame.declared_loss() {
                            declared_lost += loss.count;
                            self.publisher.declared_loss(self.applier.books(), loss);
                        }
                        return false;
                    }
                    Some(FrameKind::LateJoin) => {
                        if let Some(join) = frame.late_join() {
                            self.publisher.late_join(self.applier.books(), join);
                        }
                        return false;
                    }
                    Some(FrameKind::ClearOrders) => {
                        self.applier.books_mut().clear_orders();
                        self.publisher
                            .books_cleared(self.applier.books(), frame.arrival());
                        return false;
                    }
                    Some(FrameKind::End) | None => {
                        ended = true;
                        return true;
                    }
                }
                let taken_ns = *now_ns.get_or_insert_with(|| self.clock.now_ns());
                self.applier.prefetch(ahead);
                let publisher = &mut self.publisher;
                let step = self
                    .applier
                    .step_with(frame.seq, frame.message(), |books, message| {
                        publisher.before_apply(books, message)
                    });
                match step {
                    Ok(applied) => {
                        let published = self.publisher.publish(
                            self.applier.books(),
                            &applied,
                            frame.arrival(),
                            taken_ns,
                        );
                        if group.push(frame.recv_ns, frame.intended_ns, published) {
                            let done_ns = self.clock.now_ns();
                            group.close(&mut latency, done_ns);
                            now_ns = Some(done_ns);
                        }
                    }
                    Err(ApplyError::Decode(e)) => {
                        self.publisher.decode_error(frame.seq, e);
                        decode_errors += 1;
                        if first_decode_error.is_none() {
                            first_decode_error = Some(format!("sequence {}: {e}", frame.seq));
                        }
                    }
                    Err(ApplyError::Output(_)) => {}
                }
                false
            };
            let taken = if look_ahead {
                frames.read_with_ahead(BATCH, each)
            } else {
                frames.read_with(BATCH, |frame| each(frame, TouchesAhead::default()))
            };
            if !group.is_empty() {
                let done_ns = self.clock.now_ns();
                group.close(&mut latency, done_ns);
                now_ns = Some(done_ns);
            }
            if ended {
                break;
            }
            if taken == 0 {
                if gone || stop.load(Ordering::Relaxed) {
                    break;
                }
                let now_ns = self.clock.now_ns();
                self.publisher.drained(self.applier.books(), now_ns);
                self.publisher.idle(now_ns);
                self.latency_gauges
                    .maybe_publish(now_ns, &latency.receive_to_applied);
                waiter.wait();
                continue;
            }
            waiter.reset();
            let batch_ns = now_ns.unwrap_or_else(|| self.clock.now_ns());
            self.publisher.batch_end(self.applier.books(), batch_ns);
            self.latency_gauges
                .maybe_publish(batch_ns, &latency.receive_to_applied);
        }
        self.latency_gauges
            .publish_final(&latency.receive_to_applied);
        self.publisher.finish(self.applier.books());
        let messages = self.applier.messages();
        let by_type = *self.applier.by_type();
        let books = self.applier.finish().expect("invariant: NoBbo never fails");
        BookStageReport {
            books,
            messages,
            by_type,
            decode_errors,
            first_decode_error,
            latency,
            ended,
            declared_lost,
        }
    }
}
