//! What the media driver counts about loss and its repair: the system counters of its
//! `cnc.dat` that say whether the stream is losing packets and getting them back.
//!
//! A driver counts for every client it serves: with an external driver shared by other
//! programs these are the driver's totals, not this stream's alone.

use std::sync::atomic::{AtomicU64, Ordering};

/// The driver's loss and repair counters, as read at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DriverCounts {
    /// NAKs a receiver sent: gaps it asked to have sent again.
    pub naks_sent: u64,
    /// NAKs a sender received from receivers.
    pub naks_received: u64,
    /// Retransmissions sent in answer.
    pub retransmits_sent: u64,
    /// Bytes retransmitted.
    pub retransmitted_bytes: u64,
    /// Gaps a receiver filled with padding: data lost for good (it was no longer at the
    /// sender when asked for).
    pub loss_gap_fills: u64,
    /// Packets a receiver dropped as beyond its window: it had fallen behind.
    pub flow_control_over_runs: u64,
    /// Errors the driver logged.
    pub errors: u64,
}

/// Where one counter goes in [`DriverCounts`].
pub type CountField = fn(&mut DriverCounts) -> &mut u64;

impl DriverCounts {
    /// The Aeron system counter ids (`AERON_SYSTEM_COUNTER_ID_*` of `aeron_counters.h`),
    /// each with the field it fills.
    pub const SYSTEM_COUNTERS: [(i32, CountField); 7] = [
        (5, |c| &mut c.naks_sent),
        (6, |c| &mut c.naks_received),
        (11, |c| &mut c.retransmits_sent),
        (36, |c| &mut c.retransmitted_bytes),
        (23, |c| &mut c.loss_gap_fills),
        (13, |c| &mut c.flow_control_over_runs),
        (15, |c| &mut c.errors),
    ];
}

/// [`DriverCounts`] shared with `/metrics`: the latest reading.
#[derive(Debug, Default)]
pub struct DriverCounters {
    fields: [AtomicU64; 7],
}

impl DriverCounters {
    /// Keeps `counts` as the latest reading.
    pub fn store(&self, counts: &DriverCounts) {
        let mut copy = *counts;
        for (field, (_, place)) in self.fields.iter().zip(DriverCounts::SYSTEM_COUNTERS) {
            field.store(*place(&mut copy), Ordering::Relaxed);
        }
    }

    /// The latest reading.
    pub fn load(&self) -> DriverCounts {
        let mut counts = DriverCounts::default();
        for (field, (_, place)) in self.fields.iter().zip(DriverCounts::SYSTEM_COUNTERS) {
            *place(&mut counts) = field.load(Ordering::Relaxed);
        }
        counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reading_stored_loads_back_field_for_field() {
        let counts = DriverCounts {
            naks_sent: 1,
            naks_received: 2,
            retransmits_sent: 3,
            retransmitted_bytes: 4,
            loss_gap_fills: 5,
            flow_control_over_runs: 6,
            errors: 7,
        };
        let shared = DriverCounters::default();
        shared.store(&counts);
        assert_eq!(shared.load(), counts);
    }
}
