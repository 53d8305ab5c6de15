//! What was declared lost, and why: every range [`MoldRecovery`](super::MoldRecovery) gives
//! up on carries the one rule that ended it.

use core::fmt;

use super::request::GapRange;

/// Why a range was declared lost. These are the only reasons: while the retransmission
/// server answers, a gap is never given up for want of room (the reorder store drops the
/// packets farthest ahead and asks for them again later instead).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LossReason {
    /// Its last retry ([`RecoveryConfig::max_retries`](super::RecoveryConfig::max_retries))
    /// went unanswered for its reply timeout.
    RetriesExhausted,
    /// Still missing [`RecoveryConfig::gap_deadline`](super::RecoveryConfig::gap_deadline)
    /// after it was detected, while it was being asked for.
    Deadline,
    /// Still missing at its deadline while the retransmission server's circuit breaker
    /// refused its tries (open, or isolated by hand).
    BreakerRefused,
    /// Still missing at its deadline after the retry budget refused its last retry.
    BudgetRefused,
    /// No retransmission server: it waited out the reorder wait (a live line), or the
    /// packets behind it no longer fit the reorder store (a capture).
    NoServer,
    /// A packet behind it was longer than a store slot
    /// ([`RecoveryConfig::max_packet_len`](super::RecoveryConfig::max_packet_len)), so it
    /// could not wait for the gap to fill.
    PacketTooLong,
    /// The input ended (the end of a capture, a line shut down or ended) with it open.
    InputEnded,
    /// A packet named another session, which ends the old one with it open.
    SessionChanged,
}

impl LossReason {
    /// Every reason, in the order the counters list them.
    pub const ALL: [LossReason; 8] = [
        LossReason::RetriesExhausted,
        LossReason::Deadline,
        LossReason::BreakerRefused,
        LossReason::BudgetRefused,
        LossReason::NoServer,
        LossReason::PacketTooLong,
        LossReason::InputEnded,
        LossReason::SessionChanged,
    ];

    /// A short name in snake case, for metrics labels and JSON.
    pub fn name(self) -> &'static str {
        match self {
            LossReason::RetriesExhausted => "retries_exhausted",
            LossReason::Deadline => "deadline",
            LossReason::BreakerRefused => "breaker_refused",
            LossReason::BudgetRefused => "budget_refused",
            LossReason::NoServer => "no_server",
            LossReason::PacketTooLong => "packet_too_long",
            LossReason::InputEnded => "input_ended",
            LossReason::SessionChanged => "session_changed",
        }
    }
}

impl fmt::Display for LossReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LossReason::RetriesExhausted => "its last retry went unanswered",
            LossReason::Deadline => "its gap deadline passed",
            LossReason::BreakerRefused => "its gap deadline passed, the breaker refusing",
            LossReason::BudgetRefused => "its gap deadline passed, the retry budget refusing",
            LossReason::NoServer => "no retransmission server",
            LossReason::PacketTooLong => "a packet behind it was too long to store",
            LossReason::InputEnded => "the input ended",
            LossReason::SessionChanged => "a new session began",
        })
    }
}

/// One range declared lost, with its reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LostRange {
    /// The sequence numbers lost.
    pub range: GapRange,
    /// Why.
    pub reason: LossReason,
}

/// Ranges declared lost, in the order declared, each merged with the one before when they
/// touch and share a reason: a compact list of every loss however many there are (a line
/// that drops a contiguous burst keeps one entry, not one per declaration).
///
/// ```
/// use ticklane_feed::moldudp64::{GapRange, LossReason, LostRanges};
///
/// let mut l = LostRanges::default();
/// l.push(GapRange { first: 4, last: 6 }, LossReason::Deadline);
/// l.push(GapRange { first: 7, last: 7 }, LossReason::Deadline); // touches: merged
/// l.push(GapRange { first: 10, last: 12 }, LossReason::InputEnded);
/// let ranges: Vec<_> = l.ranges().iter().map(|r| r.range).collect();
/// assert_eq!(ranges, [GapRange { first: 4, last: 7 }, GapRange { first: 10, last: 12 }]);
/// assert_eq!(l.messages(), 7);
/// assert_eq!(l.messages_for(LossReason::InputEnded), 3);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LostRanges {
    ranges: Vec<LostRange>,
    messages: u64,
    by_reason: [u64; LossReason::ALL.len()],
}

impl LostRanges {
    /// An empty list with room for `n` ranges before it allocates again.
    pub fn with_capacity(n: usize) -> Self {
        LostRanges {
            ranges: Vec::with_capacity(n),
            ..LostRanges::default()
        }
    }

    /// Adds a range declared lost for `reason`.
    pub fn push(&mut self, gap: GapRange, reason: LossReason) {
        self.messages = self.messages.saturating_add(gap.len());
        let slot = &mut self.by_reason[reason as usize];
        *slot = slot.saturating_add(gap.len());
        match self.ranges.last_mut() {
            Some(last)
                if last.reason == reason && last.range.last.checked_add(1) == Some(gap.first) =>
            {
                last.range.last = gap.last;
            }
            _ => self.ranges.push(LostRange { range: gap, reason }),
        }
    }

    /// The ranges, merged where they touch and share a reason.
    pub fn ranges(&self) -> &[LostRange] {
        &self.ranges
    }

    /// Messages in all of them.
    pub fn messages(&self) -> u64 {
        self.messages
    }

    /// Messages declared lost for `reason`.
    pub fn messages_for(&self, reason: LossReason) -> u64 {
        self.by_reason[reason as usize]
    }

    /// True when nothing was declared lost.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touching_ranges_merge_only_under_one_reason() {
        let mut l = LostRanges::default();
        l.push(GapRange { first: 1, last: 2 }, LossReason::Deadline);
        l.push(GapRange { first: 3, last: 3 }, LossReason::InputEnded);
        l.push(GapRange { first: 4, last: 9 }, LossReason::InputEnded);
        assert_eq!(
            l.ranges(),
            [
                LostRange {
                    range: GapRange { first: 1, last: 2 },
                    reason: LossReason::Deadline
                },
                LostRange {
                    range: GapRange { first: 3, last: 9 },
                    reason: LossReason::InputEnded
                },
            ]
        );
        assert_eq!(l.messages(), 9);
        assert_eq!(l.messages_for(LossReason::Deadline), 2);
        assert_eq!(l.messages_for(LossReason::InputEnded), 7);
        assert_eq!(l.messages_for(LossReason::NoServer), 0);
    }

    #[test]
    fn every_reason_has_its_own_counter_and_name() {
        for (i, r) in LossReason::ALL.iter().enumerate() {
            assert_eq!(*r as usize, i);
        }
        let mut names: Vec<_> = LossReason::ALL.iter().map(|r| r.name()).collect();
        names.dedup();
        assert_eq!(names.len(), LossReason::ALL.len());
    }
}
