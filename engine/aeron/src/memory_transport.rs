//! A transport that keeps what it is offered, for tests: it can be told to refuse (back
//! pressure, or no subscriber) to show what the publisher does then.

use std::sync::{Arc, Mutex, PoisonError};

use crate::book_publisher::{Offer, Transport};

/// Records kept in memory, shared with whoever reads them.
#[derive(Clone, Debug, Default)]
pub struct MemoryTransport {
    shared: Arc<Mutex<Kept>>,
}

#[derive(Debug, Default)]
struct Kept {
    records: Vec<Vec<u8>>,
    refuse: Option<Offer>,
}

impl MemoryTransport {
    /// An empty transport that accepts everything.
    pub fn new() -> Self {
        MemoryTransport::default()
    }

    /// From now on answers every offer with `answer` (`None`: accept again).
    pub fn refuse(&self, answer: Option<Offer>) {
        self.lock().refuse = answer;
    }

    /// Takes the records kept so far.
    pub fn take(&self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.lock().records)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Transport for MemoryTransport {
    fn offer(&mut self, record: &[u8]) -> Offer {
        let mut kept = self.lock();
        match kept.refuse {
            Some(answer) => answer,
            None => {
                kept.records.push(record.to_vec());
                Offer::Sent
            }
        }
    }
}
