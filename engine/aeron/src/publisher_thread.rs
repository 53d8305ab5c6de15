//! The publisher stage's thread: one subscription of the line's update stream in, one
//! [`BookPublisher`] out, on an unpinned thread of its own (it is never one of the hot
//! stages: the book thread hands it events through the hub's bounded queue and never waits).

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use ticklane_pipeline::overload::{RecvError, SubscriberHub};
use ticklane_pipeline::{WaitStrategy, Waiter};
use ticklane_snapshot::wall_clock_ns;

use crate::book_publisher::{BookPublisher, PublisherCounters, PublisherCounts, Transport};

/// Events taken from the hub before the publisher sends (bounds a turn).
const EVENTS_PER_TURN: usize = 4096;

/// How the publisher thread ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PublisherEnd {
    /// Its counts at the end.
    pub counts: PublisherCounts,
    /// Whether the stream's last record went out (false: stopped, or the transport
    /// refused it until the linger ran out, or closed).
    pub ended_cleanly: bool,
}

/// The running publisher thread.
#[derive(Debug)]
pub struct PublisherThread {
    counters: Arc<PublisherCounters>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<PublisherEnd>>,
}

impl PublisherThread {
    /// Starts `publisher` on a thread named `ticklane-aeron`, fed by a subscription of
    /// `hub`, waiting as `wait` says when there is nothing to do (the line's stages'
    /// `engine.wait`). It runs until the update stream closes (the line ended: it then sends what is
    /// pending and the stream's last record, back-pressured for at most `linger`), or
    /// until [`PublisherThread::stop`].
    ///
    /// `make` builds the publisher on the thread itself, so that a transport tied to the
    /// thread that made it never moves.
    ///
    /// # Errors
    ///
    /// If the thread cannot be started, or `make` fails (its error, once the thread has
    /// ended).
    pub fn start<T, F>(
        hub: SubscriberHub,
        linger: Duration,
        wait: WaitStrategy,
        make: F,
    ) -> io::Result<Self>
    where
        T: Transport,
        F: FnOnce() -> io::Result<BookPublisher<T>> + Send + 'static,
    {
        let stop = Arc::new(AtomicBool::new(false));
        let (ready, started) = std::sync::mpsc::channel();
        let thread = {
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("ticklane-aeron".into())
                .spawn(move || {
                    let mut publisher = match make() {
                        Ok(p) => {
                            let _ = ready.send(Ok(p.counters()));
                            p
                        }
                        Err(e) => {
                            let _ = ready.send(Err(e));
                            return PublisherEnd {
                                counts: PublisherCounts::default(),
                                ended_cleanly: false,
                            };
                        }
                    };
                    serve(&mut publisher, &hub, &stop, linger, wait)
                })?
        };
        let counters = started
            .recv()
            .map_err(|_| io::Error::other("the publisher thread ended before it started"))??;
        Ok(PublisherThread {
            counters,
            stop,
            thread: Some(thread),
        })
    }

    /// The publisher's counters.
    pub fn counters(&self) -> Arc<PublisherCounters> {
        Arc::clone(&self.counters)
    }

    /// Waits for the thread to end on its own (the update stream closed).
    pub fn join(mut self) -> Option<PublisherEnd> {
        self.thread.take().and_then(|t| t.join().ok())
    }

    /// Stops the thread at once (nothing more is sent) and waits for it.
    pub fn stop(mut self) -> Option<PublisherEnd> {
        self.stop.store(true, Ordering::Release);
        self.thread.take().and_then(|t| t.join().ok())
    }
}

impl Drop for PublisherThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve<T: Transport>(
    publisher: &mut BookPublisher<T>,
    hub: &SubscriberHub,
    stop: &AtomicBool,
    linger: Duration,
    wait: WaitStrategy,
) -> PublisherEnd {
    let mut subscription = hub.subscribe();
    let mut waiter = Waiter::new(wait);
    let end = |publisher: &BookPublisher<T>, ended_cleanly| PublisherEnd {
        counts: publisher.counters().load(),
        ended_cleanly,
    };
    loop {
        if stop.load(Ordering::Acquire) || publisher.is_closed() {
            return end(publisher, false);
        }
        let mut events = 0;
        let mut closed = false;
        while events < EVENTS_PER_TURN {
            match subscription.try_recv() {
                Ok(event) => {
                    publisher.on_event(&event, wall_clock_ns());
                    events += 1;
                }
                Err(RecvError::Empty) => break,
                Err(RecvError::Closed) => {
                    closed = true;
                    break;
                }
                Err(RecvError::CutLoose(_)) => {
                    subscription = hub.subscribe();
                    publisher.rejoined(wall_clock_ns());
                    break;
                }
            }
        }
        if closed {
            let give_up = wall_clock_ns() + u64::try_from(linger.as_nanos()).unwrap_or(u64::MAX);
            let ended_cleanly = publisher.finish(wall_clock_ns, give_up);
            if ended_cleanly {
                publisher.linger(linger);
            }
            publisher.read_driver(wall_clock_ns());
            return end(publisher, ended_cleanly);
        }
        let sent = publisher.publish(wall_clock_ns());
        if events == 0 && sent == 0 {
            waiter.wait();
        } else {
            waiter.reset();
        }
    }
}
