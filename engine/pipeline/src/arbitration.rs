//! A/B line arbitration: one MoldUDP64 session heard on two lines. The one sequencer
//! ([`MoldRecovery`](ticklane_feed::moldudp64::MoldRecovery)) delivers the first copy of
//! each sequence and drops the other as a duplicate; this file keeps the books of each line
//! on its own: what it carried, what it won, the gaps it had alone, and how long it was
//! silent.
//!
//! Each packet is fed to the sequencer with its line in [`Origin::offset`], which the
//! sequencer hands back with every message it delivers, however late (a packet that waited
//! in the reorder store is still won by the line that carried it).
//!
//! ```
//! use std::time::Duration;
//! use ticklane_pipeline::{Arbitration, Line};
//!
//! let mut ab = Arbitration::new(0, Duration::from_millis(2));
//! ab.on_sequenced(Line::A, 1, 3, 0); // A carried 1..=2
//! ab.on_sequenced(Line::B, 1, 3, 10);
//! ab.on_sequenced(Line::B, 3, 4, 20); // A lost 3: B's copy wins
//! ab.on_sequenced(Line::A, 4, 5, 30); // A saw the jump from 3 to 4: one gap on A alone
//! ab.on_delivered(Line::A.origin());
//! ab.on_delivered(Line::A.origin());
//! ab.on_delivered(Line::B.origin());
//! let r = ab.report(40);
//! assert_eq!((r.a.won, r.b.won, r.a.gaps, r.a.messages_missed), (2, 1, 1, 1));
//! ```

use std::time::Duration;

use ticklane_feed::moldudp64::Origin;

/// Where a packet came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Line {
    /// The first data socket (`feed.bind`).
    A,
    /// The second (`feed.b_bind`).
    B,
    /// The retransmission server's replies.
    Retransmission,
}

impl Line {
    /// The origin a packet of this line is fed to the sequencer with.
    pub fn origin(self) -> Origin {
        let offset = match self {
            Line::A => 0,
            Line::B => 1,
            Line::Retransmission => 2,
        };
        Origin {
            offset,
            time_ns: None,
        }
    }

    /// The line of a packet fed with [`Line::origin`].
    pub fn of(origin: Origin) -> Line {
        match origin.offset {
            0 => Line::A,
            1 => Line::B,
            _ => Line::Retransmission,
        }
    }
}

/// What one line did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LineArbitration {
    /// Packets received, heartbeats included.
    pub packets: u64,
    /// Messages its data packets carried.
    pub messages: u64,
    /// Messages delivered from this line's copy: it was first (or the other line lost it).
    pub won: u64,
    /// Jumps in this line's own sequence (each a run of packets it never carried), whether
    /// or not the other line filled them.
    pub gaps: u64,
    /// Messages those jumps skipped.
    pub messages_missed: u64,
    /// The longest time between two of its packets (or from the start to its first).
    pub longest_silence: Duration,
    /// The time since its last packet, when the report was taken.
    pub silence_now: Duration,
    /// Times it was silent past the stale threshold while the other line flowed: reported
    /// here, not as `STALE` books, since the books were live.
    pub silent_while_other_flowed: u64,
}

/// The two lines' counters, and what retransmission delivered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ArbitrationReport {
    /// Line A.
    pub a: LineArbitration,
    /// Line B.
    pub b: LineArbitration,
    /// Messages delivered from retransmission replies: missing on both lines.
    pub retransmitted_won: u64,
}

impl ArbitrationReport {
    /// Messages delivered, by whichever copy: `a.won + b.won + retransmitted_won`.
    pub fn delivered(&self) -> u64 {
        self.a.won + self.b.won + self.retransmitted_won
    }

    /// `(name, value)` of each counter of `line`, in a fixed order; durations in
    /// nanoseconds.
    pub fn fields(line: &LineArbitration) -> [(&'static str, u64); 8] {
        let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        [
            ("packets", line.packets),
            ("messages", line.messages),
            ("won", line.won),
            ("gaps", line.gaps),
            ("messages_missed", line.messages_missed),
            ("longest_silence_ns", ns(line.longest_silence)),
            ("silence_now_ns", ns(line.silence_now)),
            ("silent_while_other_flowed", line.silent_while_other_flowed),
        ]
    }
}

/// One line's state between packets.
#[derive(Clone, Copy, Debug, Default)]
struct LineTrack {
    counters: LineArbitration,
    /// One past the highest sequence this line carried or announced in its session.
    next: Option<u64>,
    session: [u8; 10],
    /// When its last packet came (or the start), on the caller's clock.
    last_heard_ns: u64,
    /// Silent past the threshold now, already counted.
    silent: bool,
}

impl LineTrack {
    fn heard(&mut self, now_ns: u64) {
        let quiet = Duration::from_nanos(now_ns.saturating_sub(self.last_heard_ns));
        self.counters.longest_silence = self.counters.longest_silence.max(quiet);
        self.counters.packets += 1;
        self.last_heard_ns = self.last_heard_ns.max(now_ns);
        self.silent = false;
    }
}

/// The per-line bookkeeping of a MoldUDP64 session heard on lines A and B. Nothing here
/// allocates; every method is a few comparisons, fit for the reader's hot loop.
#[derive(Clone, Debug)]
pub struct Arbitration {
    lines: [LineTrack; 2],
    stale_after_ns: u64,
    retransmitted_won: u64,
}

impl Arbitration {
    /// Both lines silent since `started_ns`; a line silent longer than `stale_after`
    /// while the other flows is counted.
    pub fn new(started_ns: u64, stale_after: Duration) -> Self {
        let track = LineTrack {
            last_heard_ns: started_ns,
            ..LineTrack::default()
        };
        Arbitration {
            lines: [track; 2],
            stale_after_ns: u64::try_from(stale_after.as_nanos()).unwrap_or(u64::MAX),
            retransmitted_won: 0,
        }
    }

    fn track(&mut self, line: Line) -> Option<&mut LineTrack> {
        match line {
            Line::A => Some(&mut self.lines[0]),
            Line::B => Some(&mut self.lines[1]),
            Line::Retransmission => None,
        }
    }

    /// A packet of `session` on `line` at `now_ns` that carried sequences `first .. end`
    /// (a heartbeat or end of session: `first == end`, the next sequence).
    pub fn on_packet(&mut self, line: Line, session: [u8; 10], first: u64, end: u64, now_ns: u64) {
        let Some(track) = self.track(line) else {
            return;
        };
        if track.session != session {
            track.session = session;
            track.next = None;
        }
        Self::sequenced(track, first, end, now_ns);
    }

    /// [`Arbitration::on_packet`] within one session (the first session seen).
    pub fn on_sequenced(&mut self, line: Line, first: u64, end: u64, now_ns: u64) {
        if let Some(track) = self.track(line) {
            Self::sequenced(track, first, end, now_ns);
        }
    }

    fn sequenced(track: &mut LineTrack, first: u64, end: u64, now_ns: u64) {
        track.heard(now_ns);
        track.counters.messages += end.saturating_sub(first);
        if let Some(next) = track.next {
            if first > next {
                track.counters.gaps += 1;
                track.counters.messages_missed += first - next;
            }
        }
        track.next = Some(track.next.map_or(end, |n| n.max(end)));
    }

    /// An unsequenced packet (or one that was not MoldUDP64) of `messages` on `line`.
    pub fn on_unsequenced(&mut self, line: Line, messages: u64, now_ns: u64) {
        if let Some(track) = self.track(line) {
            track.heard(now_ns);
            track.counters.messages += messages;
        }
    }

    /// One message delivered from a packet fed with `origin`.
    #[inline]
    pub fn on_delivered(&mut self, origin: Origin) {
        match Line::of(origin) {
            Line::A => self.lines[0].counters.won += 1,
            Line::B => self.lines[1].counters.won += 1,
            Line::Retransmission => self.retransmitted_won += 1,
        }
    }

    /// Counts each line that has just become silent past the threshold while the other
    /// was heard within it. Returns the line that did, if one did now.
    pub fn check_silence(&mut self, now_ns: u64) -> Option<Line> {
        let stale_after_ns = self.stale_after_ns;
        let quiet = |t: &LineTrack| now_ns.saturating_sub(t.last_heard_ns) > stale_after_ns;
        let quiet_now = [quiet(&self.lines[0]), quiet(&self.lines[1])];
        let mut newly = None;
        for (i, line) in [(0, Line::A), (1, Line::B)] {
            let track = &mut self.lines[i];
            if quiet_now[i] && !quiet_now[1 - i] && !track.silent {
                track.silent = true;
                track.counters.silent_while_other_flowed += 1;
                newly = Some(line);
            }
        }
        newly
    }

    /// The counters at `now_ns`.
    pub fn report(&self, now_ns: u64) -> ArbitrationReport {
        let at = |t: &LineTrack| {
            let quiet = Duration::from_nanos(now_ns.saturating_sub(t.last_heard_ns));
            LineArbitration {
                silence_now: quiet,
                longest_silence: t.counters.longest_silence.max(quiet),
                ..t.counters
            }
        };
        ArbitrationReport {
            a: at(&self.lines[0]),
            b: at(&self.lines[1]),
            retransmitted_won: self.retransmitted_won,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn each_line_counts_its_own_gaps_and_wins() {
        // Hand-laid: A carries 1..=10 but loses 4..=5 and 9; B carries 1..=10 but loses
        // 6..=7. Delivery order (first copy wins): A 1..=3, B 4..=5, A 6..=8, B 9, A 10.
        let mut ab = Arbitration::new(0, Duration::from_millis(5));
        let a = [(1, 4), (6, 9), (10, 11)];
        let b = [(1, 6), (8, 11)];
        for (i, &(first, end)) in a.iter().enumerate() {
            ab.on_sequenced(Line::A, first, end, i as u64 * MS);
        }
        for (i, &(first, end)) in b.iter().enumerate() {
            ab.on_sequenced(Line::B, first, end, i as u64 * MS + 1);
        }
        let winners = [
            (Line::A, 3),
            (Line::B, 2),
            (Line::A, 3),
            (Line::B, 1),
            (Line::A, 1),
        ];
        for (line, n) in winners {
            for _ in 0..n {
                ab.on_delivered(line.origin());
            }
        }
        ab.on_delivered(Line::Retransmission.origin());
        let r = ab.report(3 * MS);
        assert_eq!(r.a.packets, 3);
        assert_eq!(r.a.messages, 7);
        assert_eq!((r.a.gaps, r.a.messages_missed), (2, 3));
        assert_eq!((r.b.gaps, r.b.messages_missed), (1, 2));
        assert_eq!(r.b.messages, 8);
        assert_eq!((r.a.won, r.b.won, r.retransmitted_won), (7, 3, 1));
        assert_eq!(r.delivered(), 11);
    }

    #[test]
    fn a_heartbeat_reveals_a_gap_and_a_new_session_starts_afresh() {
        let mut ab = Arbitration::new(0, Duration::from_millis(5));
        let s1 = *b"SESSION001";
        let s2 = *b"SESSION002";
        ab.on_packet(Line::B, s1, 1, 3, 0);
        ab.on_packet(Line::B, s1, 5, 5, 1); // heartbeat: next is 5, so 3..=4 never came
        ab.on_packet(Line::B, s2, 1, 2, 2); // a new session from 1 is no gap
        let r = ab.report(2);
        assert_eq!((r.b.packets, r.b.messages), (3, 3));
        assert_eq!((r.b.gaps, r.b.messages_missed), (1, 2));
    }

    #[test]
    fn a_line_silent_while_the_other_flows_is_counted_once_per_silence() {
        let stale = Duration::from_millis(2);
        let mut ab = Arbitration::new(0, stale);
        ab.on_sequenced(Line::A, 1, 2, 0);
        ab.on_sequenced(Line::B, 1, 2, 0);
        // B stops at 0; A goes on every millisecond until 10 ms.
        let mut flagged = Vec::new();
        for t in 1..=10 {
            ab.on_sequenced(Line::A, t + 1, t + 2, t * MS);
            flagged.extend(ab.check_silence(t * MS).map(|l| (t, l)));
        }
        assert_eq!(flagged, [(3, Line::B)], "past 2 ms, once");
        // B comes back, then both fall silent: no line is silent "while the other flowed".
        ab.on_sequenced(Line::B, 2, 12, 11 * MS);
        assert_eq!(ab.check_silence(30 * MS), None);
        let r = ab.report(30 * MS);
        assert_eq!(r.b.silent_while_other_flowed, 1);
        assert_eq!(r.a.silent_while_other_flowed, 0);
        assert_eq!(r.b.longest_silence, Duration::from_millis(19));
        assert_eq!(r.a.silence_now, Duration::from_millis(20));
        assert_eq!(r.b.silence_now, Duration::from_millis(19));
    }
}
