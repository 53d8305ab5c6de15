//! Raises and clears the health conditions that the book thread knows the truth of, by
//! watching what passes through the [`Publisher`] it calls: the line-state and declared-loss
//! control frames the readers send in order with the messages, the first message, the
//! messages that could not be decoded, and the publications the snapshot had no room for.
//!
//! | seen | condition |
//! |---|---|
//! | the first message, or the line going Live | clears `Starting` (a line that starts from a snapshot: only going Live, once the snapshot is in) |
//! | the line Silent, Disconnected, Reconnecting or loading a snapshot | raises `LineStale` (cleared when Live) |
//! | a MoldUDP64 line Silent ([`HealthWatch::silence_unhealthy`]) | raises `LineSilent` too (cleared when Live) |
//! | the line ended silent or in error | raises `LineEnded` and `LineStale` |
//! | a declared loss | raises `MessagesLost` (the books stay `MAYBE_BAD`) |
//! | a message that breaks ITCH 5.0 | counted in [`ContractViolations`] (`ContractViolation`) |
//! | a publication refused for want of a snapshot slot | raises `PublicationsMissed` |
//!
//! A wrapper rather than code in the book stage, so that the stage stays one loop. Which of
//! these conditions are Unhealthy, and why, is written in `crate::health`.

use std::sync::Arc;

use ticklane_feed::itch::{DecodeError, Message};

use super::contract_violations::{ContractViolations, ViolationAt, ViolationKind};
use crate::health::{Condition, Health};
use crate::overload::OverloadCounters;
use ticklane_book::publish::{Arrival, DeclaredLoss, FeedState, LateJoin, Publisher};
use ticklane_book::{Applied, Books};
use ticklane_snapshot::wall_clock_ns;

/// A [`Publisher`] that keeps [`Health`] current and forwards everything to `inner`.
pub struct HealthWatch<P: Publisher> {
    inner: P,
    health: Option<Arc<Health>>,
    violations: Arc<ContractViolations>,
    /// The overload counters of the publisher inside, for its refused publications.
    overload: Option<Arc<OverloadCounters>>,
    /// Whether `Starting` is still to be cleared.
    starting: bool,
    /// Whether the line said it is loading a snapshot and has not gone Live since: its
    /// first messages are the snapshot's, not the live feed's.
    loading_snapshot: bool,
    /// Whether a Silent line has no way back but the feed itself (MoldUDP64).
    silence_unhealthy: bool,
}

impl<P: Publisher> HealthWatch<P> {
    /// Watches `inner`'s traffic; raises on `health` if given (and `Starting` at once);
    /// counts decode errors in `violations`.
    pub fn new(inner: P, health: Option<Arc<Health>>, violations: Arc<ContractViolations>) -> Self {
        if let Some(h) = &health {
            h.raise(Condition::Starting, wall_clock_ns());
        }
        HealthWatch {
            inner,
            health,
            violations,
            overload: None,
            starting: true,
            loading_snapshot: false,
            silence_unhealthy: false,
        }
    }

    /// With `unhealthy`, raises `LineSilent` (Unhealthy) while the line is Silent, as well as
    /// `LineStale`: for a MoldUDP64 line, whose silence no reconnect can end. A SoupBinTCP
    /// line's silence leads to a reconnect, so it stays Degraded (`LineStale` only).
    pub fn silence_unhealthy(mut self, unhealthy: bool) -> Self {
        self.silence_unhealthy = unhealthy;
        self
    }

    /// Also raises `PublicationsMissed` when `overload` counts a publication the snapshot
    /// had no room for.
    pub fn with_overload(mut self, overload: Arc<OverloadCounters>) -> Self {
        self.overload = Some(overload);
        self
    }

    #[cold]
    fn started(&mut self) {
        self.starting = false;
        if let Some(h) = &self.health {
            h.clear(Condition::Starting);
        }
    }

    fn check_missed(&self) {
        if let (Some(h), Some(o)) = (&self.health, &self.overload) {
            if !h.is_raised(Condition::PublicationsMissed) && o.load().snapshot_full > 0 {
                h.raise(Condition::PublicationsMissed, wall_clock_ns());
            }
        }
    }
}

impl<P: Publisher> Publisher for HealthWatch<P> {
    #[inline(always)]
    fn before_apply(&mut self, books: &Books, message: &Message<'_>) {
        self.inner.before_apply(books, message);
    }

    #[inline(always)]
    fn publish(
        &mut self,
        books: &Books,
        applied: &Applied<'_>,
        arrival: Arrival,
        now_ns: u64,
    ) -> bool {
        if self.starting && !self.loading_snapshot {
            self.started();
        }
        self.inner.publish(books, applied, arrival, now_ns)
    }

    fn idle(&mut self, now_ns: u64) {
        self.inner.idle(now_ns);
    }

    #[inline(always)]
    fn batch_end(&mut self, books: &Books, now_ns: u64) {
        self.inner.batch_end(books, now_ns);
        self.check_missed();
    }

    #[inline(always)]
    fn drained(&mut self, books: &Books, now_ns: u64) {
        self.inner.drained(books, now_ns);
    }

    fn line_state(&mut self, books: &Books, state: FeedState, since_ns: u64) {
        self.inner.line_state(books, state, since_ns);
        if let Some(h) = &self.health {
            match state {
                FeedState::Live => {
                    self.loading_snapshot = false;
                    h.clear(Condition::LineStale);
                    h.clear(Condition::LineSilent);
                    if self.starting {
                        self.started();
                    }
                }
                FeedState::Silent => {
                    h.raise(Condition::LineStale, since_ns);
                    if self.silence_unhealthy {
                        h.raise(Condition::LineSilent, since_ns);
                    }
                }
                // Isolated by hand: stale too (the guard raises LineIsolated itself), and
                // not silent: packets may be arriving, only they are ignored.
                FeedState::Disconnected | FeedState::Reconnecting | FeedState::Isolated => {
                    h.clear(Condition::LineSilent);
                    h.raise(Condition::LineStale, since_ns);
                }
                FeedState::Snapshot => {
                    self.loading_snapshot = true;
                    h.clear(Condition::LineSilent);
                    h.raise(Condition::LineStale, since_ns);
                }
                FeedState::EndedSilent | FeedState::EndedError => {
                    h.raise(Condition::LineStale, since_ns);
                    h.raise(Condition::LineEnded, since_ns);
                }
            }
        }
    }

    fn declared_loss(&mut self, books: &Books, loss: DeclaredLoss) {
        self.inner.declared_loss(books, loss);
        if let Some(h) = &self.health {
            h.raise(Condition::MessagesLost, loss.at_ns);
        }
    }

    fn books_cleared(&mut self, books: &Books, arrival: Arrival) {
        self.inner.books_cleared(books, arrival);
    }

    fn late_join(&mut self, books: &Books, join: LateJoin) {
        self.inner.late_join(books, join);
        if let Some(h) = &self.health {
            h.raise(Condition::JoinedLate, join.at_ns);
        }
    }

    fn decode_error(&mut self, seq: u64, error: DecodeError) {
        self.inner.decode_error(seq, error);
        let wall = wall_clock_ns();
        self.violations.record(
            ViolationKind::MessageLength,
            ViolationAt::Message { seq },
            &error,
            wall,
            wall,
        );
    }

    fn finish(&mut self, books: &Books) {
        self.inner.finish(books);
        self.check_missed();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::overload::OverloadCounts;
    use ticklane_book::publish::NoPublisher;
    use ticklane_book::{Applier, BookConfig, NoBbo};

    fn watch() -> (HealthWatch<NoPublisher>, Arc<Health>, Books) {
        let health = Arc::new(Health::new());
        let violations = Arc::new(ContractViolations::with_log(
            Some(Arc::clone(&health)),
            Box::new(std::io::sink()),
        ));
        let w = HealthWatch::new(NoPublisher, Some(Arc::clone(&health)), violations);
        let books = Applier::<NoBbo>::new(
            BookConfig {
                max_orders: 16,
                max_books: 4,
                levels_per_side: 4,
            },
            None,
        )
        .unwrap()
        .finish()
        .unwrap();
        (w, health, books)
    }

    fn raised(h: &Health) -> Vec<Condition> {
        h.report().reasons.iter().map(|r| r.condition).collect()
    }

    #[test]
    fn starting_until_live_then_stale_while_silent_and_cleared_when_live() {
        let (mut w, h, books) = watch();
        assert_eq!(raised(&h), [Condition::Starting]);
        w.line_state(&books, FeedState::Silent, 10);
        assert_eq!(raised(&h), [Condition::Starting, Condition::LineStale]);
        w.line_state(&books, FeedState::Live, 20);
        assert_eq!(raised(&h), []);
        w.line_state(&books, FeedState::Reconnecting, 30);
        assert_eq!(raised(&h), [Condition::LineStale]);
        assert_eq!(h.report().reasons[0].since_ns, 30);
        w.line_state(&books, FeedState::EndedError, 40);
        assert_eq!(raised(&h), [Condition::LineStale, Condition::LineEnded]);
    }

    #[test]
    fn a_line_loading_a_snapshot_is_starting_until_live_and_stale_while_it_rebuilds() {
        let (mut w, h, books) = watch();
        let applied = Applied {
            message: None,
            changed: None,
            placed: false,
        };
        let arrival = Arrival { seq: 9, recv_ns: 1 };
        w.line_state(&books, FeedState::Snapshot, 10);
        w.publish(&books, &applied, arrival, 11);
        assert_eq!(raised(&h), [Condition::Starting, Condition::LineStale]);
        w.line_state(&books, FeedState::Live, 20);
        assert_eq!(raised(&h), []);
        w.line_state(&books, FeedState::Snapshot, 30);
        w.publish(&books, &applied, arrival, 31);
        assert_eq!(raised(&h), [Condition::LineStale], "a rebuild is no start");
        w.line_state(&books, FeedState::Live, 40);
        assert_eq!(raised(&h), []);
    }

    #[test]
    fn a_silent_udp_line_is_unhealthy_until_a_packet_and_a_silent_tcp_line_degraded() {
        use crate::health::HealthState;
        let (w, h, books) = watch();
        let mut udp = w.silence_unhealthy(true);
        udp.line_state(&books, FeedState::Live, 1);
        assert_eq!(h.report().state, HealthState::Healthy);
        udp.line_state(&books, FeedState::Silent, 10);
        assert_eq!(raised(&h), [Condition::LineStale, Condition::LineSilent]);
        assert_eq!(h.report().state, HealthState::Unhealthy);
        assert_eq!(h.report().http_status(), 503);
        udp.line_state(&books, FeedState::Live, 20);
        assert_eq!(raised(&h), []);
        assert_eq!(h.report().http_status(), 200);
        udp.line_state(&books, FeedState::Silent, 30);
        udp.line_state(&books, FeedState::Isolated, 40);
        assert_eq!(raised(&h), [Condition::LineStale], "isolated, not silent");
        assert_eq!(h.report().state, HealthState::Degraded);

        let (mut tcp, h, books) = watch();
        tcp.line_state(&books, FeedState::Live, 1);
        tcp.line_state(&books, FeedState::Silent, 10);
        assert_eq!(raised(&h), [Condition::LineStale]);
        assert_eq!(h.report().state, HealthState::Degraded);
        tcp.line_state(&books, FeedState::Reconnecting, 20);
        assert_eq!(h.report().http_status(), 200, "a reconnect is under way");
        tcp.line_state(&books, FeedState::EndedError, 30);
        assert_eq!(h.report().state, HealthState::Unhealthy);
    }

    #[test]
    fn declared_loss_and_decode_errors_degrade() {
        let (mut w, h, books) = watch();
        w.line_state(&books, FeedState::Live, 1);
        w.declared_loss(
            &books,
            DeclaredLoss {
                first: 5,
                count: 3,
                at_ns: 77,
            },
        );
        assert_eq!(raised(&h), [Condition::MessagesLost]);
        w.decode_error(
            9,
            DecodeError::WrongLength {
                tag: b'A',
                expected: 36,
                actual: 35,
            },
        );
        assert_eq!(
            raised(&h),
            [Condition::MessagesLost, Condition::ContractViolation]
        );
        assert_eq!(w.violations.counts().of(ViolationKind::MessageLength), 1);
    }

    #[test]
    fn a_refused_publication_raises_publications_missed() {
        let (w, h, books) = watch();
        let counters = Arc::new(OverloadCounters::default());
        let mut w = w.with_overload(Arc::clone(&counters));
        w.batch_end(&books, 1);
        assert!(!h.is_raised(Condition::PublicationsMissed));
        counters.store(&OverloadCounts {
            snapshot_full: 1,
            ..OverloadCounts::default()
        });
        w.batch_end(&books, 2);
        assert!(h.is_raised(Condition::PublicationsMissed));
    }
}
