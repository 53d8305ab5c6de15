//! When an A/B line's reader may stop after the session ended.
//!
//! The session is over once every sequence up to the end of session is delivered, by
//! whichever line came first. The other line's copies of the last packets may then still be
//! on their way, or already queued in its socket but not yet read: readiness is
//! edge-triggered, so data that came while the first line was being drained is reported by
//! the next poll, and a reader that stopped at once would never count it. The reader goes on
//! until every line has sent its own end of session, or for at most the arbitration wait
//! (and at least one more poll), so that a line that carried everything is never reported
//! short, and a line that did not is reported as it was.

use std::time::Duration;

use super::arbitration::Line;

/// What the reader knows of each line's end.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SessionTail {
    wait_ns: u64,
    /// Line A's and line B's end of session seen; both set for a line without a line B,
    /// which has no other line's counters to complete.
    ended: [bool; 2],
    /// When the session was first seen over, on the reader's clock.
    over_since_ns: Option<u64>,
    /// Rounds of the reader's loop since then: the first poll after it reads what is queued.
    rounds: u32,
}

impl SessionTail {
    /// A line with a line B (`two_lines`) waits at most `wait` for the other line's tail.
    pub(crate) fn new(two_lines: bool, wait: Duration) -> Self {
        SessionTail {
            wait_ns: u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX),
            ended: [!two_lines; 2],
            over_since_ns: None,
            rounds: 0,
        }
    }

    /// An end-of-session packet came on `line` (retransmission replies do not count).
    pub(crate) fn line_ended(&mut self, line: Line) {
        match line {
            Line::A => self.ended[0] = true,
            Line::B => self.ended[1] = true,
            Line::Retransmission => {}
        }
    }

    /// Called each round of the reader's loop once the session is over: whether it may stop
    /// now, at `now_ns`.
    pub(crate) fn may_stop(&mut self, now_ns: u64) -> bool {
        let since = *self.over_since_ns.get_or_insert(now_ns);
        self.rounds += 1;
        self.ended == [true, true] || (self.rounds > 1 && now_ns - since >= self.wait_ns)
    }

    /// How long the next poll may wait: the time left of the tail, once the session is over.
    pub(crate) fn poll_limit(&self, now_ns: u64) -> Option<Duration> {
        self.over_since_ns
            .map(|since| Duration::from_nanos((since + self.wait_ns).saturating_sub(now_ns)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WAIT: Duration = Duration::from_millis(20);
    const MS: u64 = 1_000_000;

    #[test]
    fn one_line_stops_at_once() {
        assert!(SessionTail::new(false, WAIT).may_stop(5));
    }

    #[test]
    fn two_lines_stop_when_both_have_ended() {
        let mut tail = SessionTail::new(true, WAIT);
        tail.line_ended(Line::A);
        assert!(!tail.may_stop(0));
        assert_eq!(tail.poll_limit(2 * MS), Some(Duration::from_millis(18)));
        tail.line_ended(Line::Retransmission);
        assert!(!tail.may_stop(2 * MS));
        tail.line_ended(Line::B);
        assert!(tail.may_stop(3 * MS));
    }

    #[test]
    fn a_silent_line_is_waited_for_the_arbitration_wait_and_one_more_poll() {
        let mut tail = SessionTail::new(true, WAIT);
        tail.line_ended(Line::B);
        assert_eq!(tail.poll_limit(0), None, "not over yet");
        assert!(!tail.may_stop(100 * MS));
        assert!(!tail.may_stop(119 * MS));
        assert!(tail.may_stop(120 * MS));
        assert_eq!(tail.poll_limit(130 * MS), Some(Duration::ZERO));

        let mut no_wait = SessionTail::new(true, Duration::ZERO);
        assert!(
            !no_wait.may_stop(7),
            "the poll after the end reads what is queued"
        );
        assert!(no_wait.may_stop(7));
    }
}
