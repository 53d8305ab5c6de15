//! One snapshot read: each payload checked, classified, and counted.

use crate::itch::{self, DecodeError, Message};

use super::{parse_end_of_snapshot, END_OF_SNAPSHOT};

/// What one snapshot payload is.
#[derive(Clone, Copy, Debug)]
pub enum SnapshotItem<'a> {
    /// A message to apply to the books.
    Apply(Message<'a>),
    /// End of Snapshot: the books are whole; live messages from `next_sequence` on are to
    /// be applied, and those below it dropped.
    End {
        /// The first live sequence to apply.
        next_sequence: u64,
    },
}

/// A payload a snapshot may not hold: counted as a contract violation and not applied.
/// Messages are numbered from 1 in the order the snapshot sent them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotViolation {
    /// Not an ITCH 5.0 message.
    #[error("snapshot message {index}: {error}")]
    Undecodable {
        /// Its place in the snapshot.
        index: u64,
        /// Why it does not decode.
        error: DecodeError,
    },
    /// An execution, cancel, delete, replace or trade: a snapshot only adds orders.
    #[error("snapshot message {index}: type '{}' changes orders; a snapshot only adds them", char::from(*tag))]
    ChangesOrders {
        /// Its place in the snapshot.
        index: u64,
        /// Its type.
        tag: u8,
    },
    /// An End of Snapshot whose sequence number cannot be read: where the live stream
    /// takes over is unknown, so the snapshot cannot be used.
    #[error("snapshot message {index}: End of Snapshot without a sequence number from 1 up")]
    MalformedEnd {
        /// Its place in the snapshot.
        index: u64,
    },
    /// A message after End of Snapshot.
    #[error("snapshot message {index}: after End of Snapshot")]
    AfterEnd {
        /// Its place in the snapshot.
        index: u64,
    },
}

/// Reads one snapshot, payload by payload.
#[derive(Clone, Debug, Default)]
pub struct SnapshotLoad {
    received: u64,
    applied: u64,
    violations: u64,
    next_sequence: Option<u64>,
}

impl SnapshotLoad {
    /// A snapshot not yet begun.
    pub fn new() -> Self {
        Self::default()
    }

    /// Classifies the next payload of the snapshot.
    ///
    /// # Errors
    ///
    /// [`SnapshotViolation`] for a payload the snapshot may not hold; it is counted, and
    /// the load goes on (a [`SnapshotViolation::MalformedEnd`] leaves it without an end).
    pub fn accept<'a>(&mut self, payload: &'a [u8]) -> Result<SnapshotItem<'a>, SnapshotViolation> {
        self.received += 1;
        let index = self.received;
        let item = self.classify(index, payload);
        match &item {
            Ok(SnapshotItem::Apply(_)) => self.applied += 1,
            Ok(SnapshotItem::End { next_sequence }) => self.next_sequence = Some(*next_sequence),
            Err(_) => self.violations += 1,
        }
        item
    }

    fn classify<'a>(
        &self,
        index: u64,
        payload: &'a [u8],
    ) -> Result<SnapshotItem<'a>, SnapshotViolation> {
        if self.next_sequence.is_some() {
            return Err(SnapshotViolation::AfterEnd { index });
        }
        if payload.first() == Some(&END_OF_SNAPSHOT) {
            return parse_end_of_snapshot(payload)
                .map(|next_sequence| SnapshotItem::End { next_sequence })
                .ok_or(SnapshotViolation::MalformedEnd { index });
        }
        let message = itch::decode(payload)
            .map_err(|error| SnapshotViolation::Undecodable { index, error })?;
        match message {
            Message::OrderExecuted(_)
            | Message::OrderExecutedWithPrice(_)
            | Message::OrderCancel(_)
            | Message::OrderDelete(_)
            | Message::OrderReplace(_)
            | Message::Trade(_)
            | Message::CrossTrade(_)
            | Message::BrokenTrade(_) => Err(SnapshotViolation::ChangesOrders {
                index,
                tag: message.tag(),
            }),
            _ => Ok(SnapshotItem::Apply(message)),
        }
    }

    /// The first live sequence to apply, once End of Snapshot has been read.
    pub fn next_sequence(&self) -> Option<u64> {
        self.next_sequence
    }

    /// Messages applied so far.
    pub fn applied(&self) -> u64 {
        self.applied
    }

    /// Payloads refused so far.
    pub fn violations(&self) -> u64 {
        self.violations
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::glimpse::end_of_snapshot;
    use crate::itch::{owned, Locate, OrderRef, Price};

    fn add(order_ref: u64) -> Vec<u8> {
        let mut buf = [0u8; 64];
        let n = owned::Message::AddOrder(owned::AddOrder {
            locate: Locate(1),
            tracking: 0,
            timestamp: itch::Nanos(5),
            order_ref: OrderRef(order_ref),
            side: b'B',
            shares: 100,
            stock: itch::Alpha(*b"AAPL    "),
            price: Price(1_000_000),
        })
        .encode(&mut buf);
        buf[..n].to_vec()
    }

    #[test]
    fn adds_apply_and_the_end_names_the_first_live_sequence() {
        let mut load = SnapshotLoad::new();
        assert!(matches!(
            load.accept(&add(7)),
            Ok(SnapshotItem::Apply(Message::AddOrder(_)))
        ));
        assert_eq!(load.next_sequence(), None);
        assert!(matches!(
            load.accept(&end_of_snapshot(501)),
            Ok(SnapshotItem::End { next_sequence: 501 })
        ));
        assert_eq!(load.next_sequence(), Some(501));
        assert_eq!(
            load.accept(&add(8)).unwrap_err(),
            SnapshotViolation::AfterEnd { index: 3 }
        );
        assert_eq!((load.applied(), load.violations()), (1, 1));
    }

    #[test]
    fn what_a_snapshot_cannot_hold_is_a_counted_violation() {
        let mut load = SnapshotLoad::new();
        let delete = [b'D', 0, 1, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 42];
        assert_eq!(
            load.accept(&delete).unwrap_err(),
            SnapshotViolation::ChangesOrders {
                index: 1,
                tag: b'D'
            }
        );
        assert!(matches!(
            load.accept(b"Z?").unwrap_err(),
            SnapshotViolation::Undecodable { index: 2, .. }
        ));
        assert_eq!(
            load.accept(b"G      not a number ").unwrap_err(),
            SnapshotViolation::MalformedEnd { index: 3 }
        );
        assert_eq!(load.next_sequence(), None, "no end was read");
        assert_eq!((load.applied(), load.violations()), (0, 3));
    }
}
