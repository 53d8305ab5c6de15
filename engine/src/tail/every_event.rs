//! The publisher `tail --capture` runs: every event of every message, handed to the printing
//! consumer through a bounded queue that the book thread waits on when it is full.
//!
//! A live feed cannot wait for a slow terminal, so a live tail sheds and cuts loose (the
//! overload policy). A file has no real-time constraint: waiting costs only time, and the
//! stream it prints is then whole. The wait propagates back: the book thread stops popping,
//! the ring fills, and the capture source waits to push.
#![forbid(unsafe_code)]

use std::sync::mpsc::SyncSender;

use ticklane_feed::itch::Message;

use crate::book::{Applied, Books};
use crate::overload::{Event, EventDeriver};
use crate::publish::{Arrival, Publisher};

/// Derives every event of each applied message and sends it, waiting while the consumer's
/// queue is full. When the consumer is gone (it failed to print), events are dropped and
/// counted: the caller stops the pipeline then.
pub(super) struct EveryEvent {
    deriver: EventDeriver,
    /// `None` once the consumer is gone.
    events: Option<SyncSender<Event>>,
}

impl EveryEvent {
    /// A publisher sending into `events`.
    pub(super) fn new(events: SyncSender<Event>) -> Self {
        EveryEvent {
            deriver: EventDeriver::new(),
            events: Some(events),
        }
    }
}

impl Publisher for EveryEvent {
    fn before_apply(&mut self, books: &Books, message: &Message<'_>) {
        self.deriver.before_apply(books, message);
    }

    fn publish(&mut self, books: &Books, applied: &Applied<'_>, arrival: Arrival, _: u64) -> bool {
        let events = &mut self.events;
        let mut sent = false;
        self.deriver
            .after_apply(books, applied, arrival.seq, |event| {
                if let Some(queue) = events {
                    // Blocks while the queue is full: the backpressure a file source can afford.
                    if queue.send(event).is_ok() {
                        sent = true;
                    } else {
                        *events = None;
                    }
                }
            });
        sent
    }

    fn finish(&mut self, _books: &Books) {
        // Dropping the sender ends the consumer's stream once it has read every event.
        self.events = None;
    }
}
