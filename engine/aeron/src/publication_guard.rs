//! The Aeron publication as a dependency: a circuit breaker over whether it reaches any
//! subscriber, mirrored into its [`Dependency`] (so `/metrics` shows it beside the line's)
//! and raising [`Condition::PublicationDown`] in health while open or isolated.
//!
//! What a call is (the rules of `ticklane_pipeline::dependency`): one interval of the
//! publisher's heartbeat, which always offers something in it. Once some subscriber has
//! been connected, an interval in which one was (an offer sent, or refused by back
//! pressure: a subscriber is there, only behind) is a success, one in which none was a
//! fault; a publication the driver closed is a fault at once. Before the first subscriber,
//! nothing is counted: nobody has been lost. The breaker never stops the offers (Aeron
//! reconnects by itself, and an offer is the only probe); isolating it by hand (the
//! admin's `isolate` of the feed) does: every record is refused and counted until `close`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ticklane_feed::resilience::{Breaker, BreakerConfig, BreakerState, CallOutcome};
use ticklane_pipeline::dependency::{Dependency, DependencyCounts, ManualCommand};
use ticklane_pipeline::health::{Condition, Health};
use ticklane_snapshot::wall_clock_ns;

use crate::book_publisher::{Offer, Transport};
use crate::driver_counts::DriverCounts;

/// The publication breaker's settings: a 30 s window, no decision before 5 intervals, open
/// at half of them without a subscriber, open 5 s, then one probe interval.
pub const PUBLICATION_BREAKER: BreakerConfig = BreakerConfig {
    window: Duration::from_secs(30),
    min_calls: 5,
    failure_percent: 50,
    slow_percent: 100,
    slow_threshold: Duration::from_secs(3600),
    open_interval: Duration::from_secs(5),
    probes: 1,
};

/// Where the guard reports: both optional (tests, and a run without an admin server).
#[derive(Clone, Debug, Default)]
pub struct PublicationHandles {
    /// The publication's dependency handle (`{feed}.aeron`).
    pub dependency: Option<Arc<Dependency>>,
    /// The process's health.
    pub health: Option<Arc<Health>>,
}

/// A [`Transport`] with the publication's breaker around it.
#[derive(Debug)]
pub struct GuardedTransport<T> {
    inner: T,
    breaker: Breaker,
    handles: PublicationHandles,
    epoch: Instant,
    interval: Duration,
    interval_began: Duration,
    connected_in_interval: bool,
    ever_connected: bool,
    counts: DependencyCounts,
    raised: bool,
}

impl<T: Transport> GuardedTransport<T> {
    /// Guards `inner` with [`PUBLICATION_BREAKER`], one call per `interval` (the
    /// publisher's heartbeat).
    pub fn new(inner: T, interval: Duration, handles: PublicationHandles) -> Self {
        Self::with_breaker(inner, interval, PUBLICATION_BREAKER, handles)
    }

    /// [`GuardedTransport::new`] with another breaker.
    pub fn with_breaker(
        inner: T,
        interval: Duration,
        breaker: BreakerConfig,
        handles: PublicationHandles,
    ) -> Self {
        GuardedTransport {
            inner,
            breaker: Breaker::new(breaker),
            handles,
            epoch: Instant::now(),
            interval: interval.max(Duration::from_millis(1)),
            interval_began: Duration::ZERO,
            connected_in_interval: false,
            ever_connected: false,
            counts: DependencyCounts::default(),
            raised: false,
        }
    }

    /// The guarded transport.
    pub fn inner(&self) -> &T {
        &self.inner
    }

    /// The breaker's state now.
    pub fn state(&self) -> BreakerState {
        self.breaker.state(self.epoch.elapsed())
    }

    /// The calls as counted so far.
    pub fn counts(&self) -> DependencyCounts {
        self.counts
    }

    fn upkeep(&mut self, now: Duration) {
        if let Some(command) = self
            .handles
            .dependency
            .as_ref()
            .and_then(|d| d.take_command())
        {
            match command {
                ManualCommand::Isolate => self.breaker.isolate(now),
                ManualCommand::Close => self.breaker.close(now),
            }
            self.report(now);
        }
        if now.saturating_sub(self.interval_began) < self.interval {
            return;
        }
        self.interval_began = now;
        let connected = std::mem::take(&mut self.connected_in_interval);
        if self.ever_connected {
            self.call(
                now,
                if connected {
                    CallOutcome::Success
                } else {
                    CallOutcome::Fault
                },
            );
        }
        self.report(now);
    }

    fn call(&mut self, now: Duration, outcome: CallOutcome) {
        if self.breaker.try_call(now).is_err() {
            self.counts.refused += 1;
            return;
        }
        self.counts.calls += 1;
        self.counts.distinct = 1;
        match outcome {
            CallOutcome::Fault => self.counts.faults += 1,
            CallOutcome::Success | CallOutcome::SlowSuccess => self.counts.successes += 1,
        }
        self.breaker.record(now, outcome);
    }

    fn report(&mut self, now: Duration) {
        let state = self.breaker.state(now);
        self.counts.breaker_transitions = self.breaker.transitions();
        if let Some(d) = &self.handles.dependency {
            d.mirror_breaker(state.into(), self.breaker.transitions());
            d.store_counts(self.counts);
        }
        let down = matches!(state, BreakerState::Open | BreakerState::Isolated);
        if let Some(health) = &self.handles.health {
            if down != self.raised {
                if down {
                    health.raise(Condition::PublicationDown, wall_clock_ns());
                } else {
                    health.clear(Condition::PublicationDown);
                }
            }
        }
        self.raised = down;
    }
}

impl<T: Transport> Transport for GuardedTransport<T> {
    fn offer(&mut self, record: &[u8]) -> Offer {
        let now = self.epoch.elapsed();
        self.upkeep(now);
        if self.breaker.state(now) == BreakerState::Isolated {
            self.counts.refused += 1;
            return Offer::NotConnected;
        }
        let offer = self.inner.offer(record);
        match offer {
            Offer::Sent | Offer::BackPressured => {
                self.connected_in_interval = true;
                self.ever_connected = true;
            }
            Offer::Closed => {
                self.call(now, CallOutcome::Fault);
                self.report(now);
            }
            Offer::NotConnected => {}
        }
        offer
    }

    fn linger(&mut self, wait: Duration) {
        self.inner.linger(wait);
    }

    fn driver_counts(&self) -> Option<DriverCounts> {
        self.inner.driver_counts()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemoryTransport;
    use ticklane_pipeline::dependency::BreakerMirror;

    /// A guard of `t` with 1 ms intervals and a breaker open for 200 ms.
    fn guarded(t: &MemoryTransport) -> (GuardedTransport<MemoryTransport>, PublicationHandles) {
        let handles = PublicationHandles {
            dependency: Some(Arc::new(Dependency::new(
                "line.aeron",
                ticklane_pipeline::dependency::DependencyKind::Publication,
            ))),
            health: Some(Arc::new(Health::new())),
        };
        let breaker = BreakerConfig {
            open_interval: Duration::from_millis(200),
            ..PUBLICATION_BREAKER
        };
        (
            GuardedTransport::with_breaker(
                t.clone(),
                Duration::from_millis(1),
                breaker,
                handles.clone(),
            ),
            handles,
        )
    }

    /// Offers one record per interval for `intervals` intervals.
    fn intervals(g: &mut GuardedTransport<MemoryTransport>, intervals: usize) {
        for _ in 0..intervals {
            std::thread::sleep(Duration::from_millis(2));
            let _ = g.offer(b"record");
        }
    }

    #[test]
    fn nobody_ever_connected_is_not_a_fault() {
        let t = MemoryTransport::new();
        t.refuse(Some(Offer::NotConnected));
        let (mut g, handles) = guarded(&t);
        intervals(&mut g, 12);
        assert_eq!(g.counts().faults, 0);
        assert_eq!(g.state(), BreakerState::Closed);
        assert!(!handles
            .health
            .expect("health")
            .is_raised(Condition::PublicationDown));
    }

    #[test]
    fn subscribers_lost_open_the_breaker_and_their_return_closes_it() {
        let t = MemoryTransport::new();
        let (mut g, handles) = guarded(&t);
        let health = handles.health.clone().expect("health");
        intervals(&mut g, 3);
        assert_eq!(t.take().len(), 3);
        t.refuse(Some(Offer::NotConnected));
        intervals(&mut g, 12);
        assert_eq!(g.state(), BreakerState::Open, "{:?}", g.counts());
        assert!(health.is_raised(Condition::PublicationDown));
        let dependency = handles.dependency.expect("dependency");
        assert_eq!(dependency.breaker(), BreakerMirror::Open);
        assert!(dependency.counts().faults >= 3);
        // Offers go on while open: they are the probe.
        assert!(t.take().is_empty(), "refused offers are not kept");
        t.refuse(None);
        let _ = g.offer(b"probe");
        assert_eq!(t.take().len(), 1, "an open breaker still offers");
        // After the open interval, one probe interval with a subscriber closes it.
        std::thread::sleep(Duration::from_millis(250));
        intervals(&mut g, 3);
        assert_eq!(g.state(), BreakerState::Closed);
        assert!(!health.is_raised(Condition::PublicationDown));
    }

    #[test]
    fn isolated_by_hand_it_offers_nothing_until_closed() {
        let t = MemoryTransport::new();
        let (mut g, handles) = guarded(&t);
        let dependency = handles.dependency.expect("dependency");
        dependency.post(ManualCommand::Isolate);
        assert_eq!(g.offer(b"a"), Offer::NotConnected);
        assert!(t.take().is_empty());
        assert_eq!(g.counts().refused, 1);
        assert!(handles
            .health
            .expect("health")
            .is_raised(Condition::PublicationDown));
        dependency.post(ManualCommand::Close);
        assert_eq!(g.offer(b"b"), Offer::Sent);
        assert_eq!(t.take().len(), 1);
    }
}
