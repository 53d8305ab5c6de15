//! Contract violations: input that breaks the protocol is not weather. A
//! malformed MoldUDP64 packet, an ITCH message whose length contradicts the specification, a
//! malformed SoupBinTCP frame: never retried, never masked by a fallback; counted by kind,
//! logged with where the offending bytes were, and [`Condition::ContractViolation`] raised
//! for the rest of the run, so that health says Degraded and a person looks.
//!
//! The log is rate-limited per kind: the first violation of each kind is logged at once, with
//! its position; after that at most one line per kind per [`LOG_INTERVAL_NS`], saying how many
//! more there were, so that a flood of garbage cannot fill the log.
//!
//! Shared between the reader thread and the book thread as `Arc<ContractViolations>`: the
//! counts are atomics; the log writer sits behind a mutex taken only when a line is written
//! (at most once per kind per interval).

use std::fmt;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use ticklane_feed::moldudp64::MoldError;

use crate::health::{Condition, Health};

/// At most one log line per kind in this interval, after the first (ns).
pub const LOG_INTERVAL_NS: u64 = 10_000_000_000;

/// Which contract was broken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ViolationKind {
    /// A datagram that is not a well-formed MoldUDP64 packet (header too short, a block
    /// running past the end, trailing bytes, a sequence that overflows).
    MalformedPacket,
    /// An ITCH message whose length contradicts the specification for its type (or is
    /// empty, or whose type ITCH 5.0 does not define).
    MessageLength,
    /// A SoupBinTCP frame that breaks the protocol (an unknown type, a length that
    /// contradicts the frame's type).
    MalformedFrame,
    /// A GLIMPSE snapshot message a snapshot may not hold (one that changes orders, one
    /// that does not decode, an End of Snapshot without a sequence).
    MalformedSnapshot,
}

impl ViolationKind {
    /// Every kind, in the order the summary lists them.
    pub const ALL: [ViolationKind; 4] = [
        ViolationKind::MalformedPacket,
        ViolationKind::MessageLength,
        ViolationKind::MalformedFrame,
        ViolationKind::MalformedSnapshot,
    ];

    /// A stable snake-case name, for JSON and logs.
    pub fn name(self) -> &'static str {
        match self {
            ViolationKind::MalformedPacket => "malformed_packet",
            ViolationKind::MessageLength => "message_length",
            ViolationKind::MalformedFrame => "malformed_frame",
            ViolationKind::MalformedSnapshot => "malformed_snapshot",
        }
    }

    /// What becomes of the offending bytes, for the log line: never retried; a snapshot's
    /// are not applied (the snapshot is asked for again when its end is the fault, which
    /// the line says itself).
    fn outcome(self) -> &'static str {
        match self {
            ViolationKind::MalformedSnapshot => "not applied",
            _ => "not retried",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Where the offending bytes were.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ViolationAt {
    /// The `packet`-th datagram the line received (1-based), at byte `offset` in it.
    Packet {
        /// 1-based datagram number on the line.
        packet: u64,
        /// Byte offset in the datagram.
        offset: usize,
    },
    /// The message with this feed sequence number (0: unsequenced).
    Message {
        /// The message's sequence number.
        seq: u64,
    },
    /// The SoupBinTCP frame that followed this many sequenced messages on the line.
    AfterMessages {
        /// Sequenced messages received before the frame.
        messages: u64,
    },
    /// A GLIMPSE snapshot's message (its place in the snapshot is in the error).
    Snapshot,
}

impl fmt::Display for ViolationAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ViolationAt::Packet { packet, offset } => {
                write!(f, "packet {packet}, byte offset {offset}")
            }
            ViolationAt::Message { seq } => write!(f, "message sequence {seq}"),
            ViolationAt::AfterMessages { messages } => {
                write!(f, "the frame after sequenced message {messages}")
            }
            ViolationAt::Snapshot => write!(f, "the GLIMPSE snapshot"),
        }
    }
}

/// Where in a datagram a MoldUDP64 packet error lies (`len`: the datagram's length).
pub fn mold_error_offset(error: &MoldError, len: usize) -> usize {
    match *error {
        MoldError::TruncatedHeader { have } => have,
        MoldError::TruncatedLength { offset, .. } | MoldError::MessageOverrun { offset, .. } => {
            offset
        }
        MoldError::TrailingBytes { extra, .. } => len.saturating_sub(extra),
        // The sequence number field follows the 10-byte session.
        MoldError::SequenceOverflow { .. } => 10,
        MoldError::RequestLength { .. } => 0,
    }
}

const KINDS: usize = ViolationKind::ALL.len();

/// The counts of each kind, as the run summary reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ViolationCounts {
    /// Per kind, in [`ViolationKind::ALL`]'s order.
    pub by_kind: [u64; KINDS],
}

impl ViolationCounts {
    /// Violations of `kind`.
    pub fn of(&self, kind: ViolationKind) -> u64 {
        self.by_kind[kind.index()]
    }

    /// Violations of every kind.
    pub fn total(&self) -> u64 {
        self.by_kind.iter().sum()
    }
}

/// Counts contract violations, logs them rate-limited, and raises
/// [`Condition::ContractViolation`] on the first.
pub struct ContractViolations {
    counts: [AtomicU64; KINDS],
    /// Per kind: the count when a line was last written (so the next says how many since).
    logged_count: [AtomicU64; KINDS],
    /// Per kind: when a line was last written (ns, the caller's clock); `u64::MAX` never.
    logged_at_ns: [AtomicU64; KINDS],
    health: Option<Arc<Health>>,
    log: Mutex<Box<dyn Write + Send>>,
}

impl fmt::Debug for ContractViolations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ContractViolations")
            .field("counts", &self.counts())
            .finish_non_exhaustive()
    }
}

impl ContractViolations {
    /// Logging to standard error, raising on `health` if given.
    pub fn new(health: Option<Arc<Health>>) -> Self {
        Self::with_log(health, Box::new(std::io::stderr()))
    }

    /// Logging to `log` (a test's buffer).
    pub fn with_log(health: Option<Arc<Health>>, log: Box<dyn Write + Send>) -> Self {
        ContractViolations {
            counts: Default::default(),
            logged_count: Default::default(),
            logged_at_ns: std::array::from_fn(|_| AtomicU64::new(u64::MAX)),
            health,
            log: Mutex::new(log),
        }
    }

    /// Records one violation of `kind` at `at`, described by `what`, at `now_ns` (monotonic,
    /// for the rate limit) and `wall_ns` (for health's since-when). Never allocates unless a
    /// line is written.
    pub fn record(
        &self,
        kind: ViolationKind,
        at: ViolationAt,
        what: &dyn fmt::Display,
        now_ns: u64,
        wall_ns: u64,
    ) {
        let i = kind.index();
        let count = self.counts[i].fetch_add(1, Ordering::Relaxed) + 1;
        if count == 1 {
            if let Some(health) = &self.health {
                health.raise(Condition::ContractViolation, wall_ns);
            }
        }
        let last = self.logged_at_ns[i].load(Ordering::Relaxed);
        let due = last == u64::MAX || now_ns.saturating_sub(last) >= LOG_INTERVAL_NS;
        if !due
            || self.logged_at_ns[i]
                .compare_exchange(last, now_ns, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        let before = self.logged_count[i].swap(count, Ordering::Relaxed);
        let suppressed = count - before - 1;
        let mut log = match self.log.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        let name = kind.name();
        // A log that cannot be written loses the line, not the count.
        let _ = if suppressed == 0 {
            writeln!(
                log,
                "ticklane: contract violation ({name}) at {at}: {what}; {}, health Degraded",
                kind.outcome()
            )
        } else {
            writeln!(
                log,
                "ticklane: contract violation ({name}) at {at}: {what} \
                 ({suppressed} more since the last line, {count} in all)"
            )
        };
    }

    /// The counts now.
    pub fn counts(&self) -> ViolationCounts {
        ViolationCounts {
            by_kind: std::array::from_fn(|i| self.counts[i].load(Ordering::Relaxed)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log buffer the test keeps a handle to.
    #[derive(Clone, Default)]
    struct SharedLog(Arc<Mutex<Vec<u8>>>);

    impl Write for SharedLog {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl SharedLog {
        fn lines(&self) -> Vec<String> {
            String::from_utf8(self.0.lock().unwrap().clone())
                .unwrap()
                .lines()
                .map(str::to_owned)
                .collect()
        }
    }

    fn packet(n: u64) -> ViolationAt {
        ViolationAt::Packet {
            packet: n,
            offset: 20,
        }
    }

    #[test]
    fn first_violation_raises_health_and_logs_its_position() {
        let health = Arc::new(Health::new());
        let log = SharedLog::default();
        let v = ContractViolations::with_log(Some(Arc::clone(&health)), Box::new(log.clone()));
        assert!(!health.is_raised(Condition::ContractViolation));
        v.record(
            ViolationKind::MalformedPacket,
            ViolationAt::Packet {
                packet: 7,
                offset: 22,
            },
            &"block runs past the end",
            1_000,
            5_000,
        );
        assert!(health.is_raised(Condition::ContractViolation));
        let reason = health.report().reasons[0];
        assert_eq!(reason.condition, Condition::ContractViolation);
        assert_eq!(reason.since_ns, 5_000);
        assert_eq!(
            log.lines(),
            [
                "ticklane: contract violation (malformed_packet) at packet 7, byte offset 22: \
              block runs past the end; not retried, health Degraded"
            ]
        );
        assert_eq!(v.counts().of(ViolationKind::MalformedPacket), 1);
        assert_eq!(v.counts().total(), 1);
    }

    #[test]
    fn a_flood_is_counted_in_full_and_logged_once_per_interval_per_kind() {
        let log = SharedLog::default();
        let v = ContractViolations::with_log(None, Box::new(log.clone()));
        // 100,000 malformed packets, 1 ms apart: 100 s of flood.
        for n in 0..100_000u64 {
            v.record(
                ViolationKind::MalformedPacket,
                packet(n + 1),
                &"x",
                n * 1_000_000,
                1,
            );
        }
        // One wrong-length message in the middle: its kind has its own first line.
        v.record(
            ViolationKind::MessageLength,
            ViolationAt::Message { seq: 42 },
            &"y",
            50_000_000_000,
            1,
        );
        let c = v.counts();
        assert_eq!(c.of(ViolationKind::MalformedPacket), 100_000);
        assert_eq!(c.of(ViolationKind::MessageLength), 1);
        assert_eq!(c.of(ViolationKind::MalformedFrame), 0);
        let lines = log.lines();
        // Packets at 0 s, 10 s, ..., 90 s: 10 lines; plus the message's one.
        assert_eq!(lines.len(), 11, "{lines:#?}");
        assert!(lines[1].contains("at packet 10001,"), "{}", lines[1]);
        assert!(
            lines[1].contains("(9999 more since the last line, 10001 in all)"),
            "{}",
            lines[1]
        );
        assert!(lines
            .iter()
            .any(|l| l.contains("(message_length) at message sequence 42: y;")));
    }
}
