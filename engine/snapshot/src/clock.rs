//! The wall clock the snapshot's timestamps are taken from.

use std::time::{SystemTime, UNIX_EPOCH};

/// Nanoseconds since the Unix epoch, by the system's wall clock (`CLOCK_REALTIME`).
///
/// Wall-clock time is what another process can compare with its own clock to judge a
/// heartbeat's age. On Linux it is read through the vDSO: no system call. A clock set before
/// 1970 reads as 0.
pub fn wall_clock_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}
