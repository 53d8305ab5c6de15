//! The sampling clock: which boundaries the messages' timestamps pass, and which of them
//! `--between` lets through. It reads nothing but timestamps, so the reader of `replay
//! --threads` runs it as well as the one-thread [`super::Sampler`].

use crate::output_filter::TimeWindow;

/// The boundaries one message passed: `first`, `first + interval`, ... up to `last`
/// (inclusive), all written with the books as they stood just before that message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Boundaries {
    /// The first boundary (a multiple of the interval).
    pub first: u64,
    /// No boundary after this (not necessarily one itself).
    pub last: u64,
    /// The interval, in ns.
    pub interval: u64,
}

impl Boundaries {
    /// The boundaries, in order.
    pub fn iter(self) -> impl Iterator<Item = u64> {
        let Boundaries {
            first,
            last,
            interval,
        } = self;
        (0..=(last - first) / interval).map(move |k| first + k * interval)
    }
}

/// The boundary clock of one replay.
#[derive(Clone, Debug)]
pub struct BoundaryClock {
    interval: u64,
    /// The next boundary to write; `None` before the first message.
    next: Option<u64>,
    window: Option<TimeWindow>,
}

impl BoundaryClock {
    /// A clock for boundaries every `interval` ns (at least 1), written only inside
    /// `window` if there is one.
    pub fn new(interval: u64, window: Option<TimeWindow>) -> Self {
        BoundaryClock {
            interval: interval.max(1),
            next: None,
            window,
        }
    }

    /// A message stamped `at` (ns since midnight) is about to be applied: the boundaries up
    /// to `at` it passes and the window keeps, if any. Before the first message no stock
    /// has a book, so the first boundary that can hold a row is the first one after it.
    #[inline]
    pub fn passes(&mut self, at: u64) -> Option<Boundaries> {
        match self.next {
            Some(next) if at < next => None,
            None => {
                self.next = Some(self.boundary_after(at));
                None
            }
            Some(next) => self.cross(next, at),
        }
    }

    /// The first boundary strictly after `t`.
    fn boundary_after(&self, t: u64) -> u64 {
        (t / self.interval)
            .saturating_add(1)
            .saturating_mul(self.interval)
    }

    #[cold]
    fn cross(&mut self, next: u64, at: u64) -> Option<Boundaries> {
        let mut first = next;
        let mut last = at;
        if let Some(w) = self.window {
            // Nothing before the window is written: on to its first boundary.
            first = first.max(w.start.0.div_ceil(self.interval) * self.interval);
            // Nor at or after its end.
            last = last.min(w.end.0.saturating_sub(1));
        }
        self.next = Some(self.boundary_after(at).max(first));
        (first <= last && first < w_end(self.window)).then_some(Boundaries {
            first,
            last,
            interval: self.interval,
        })
    }
}

/// The window's end, or no end.
fn w_end(window: Option<TimeWindow>) -> u64 {
    window.map_or(u64::MAX, |w| w.end.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklane_itch::Nanos;

    fn walk(clock: &mut BoundaryClock, stamps: &[u64]) -> Vec<(usize, Vec<u64>)> {
        stamps
            .iter()
            .enumerate()
            .filter_map(|(i, &at)| clock.passes(at).map(|b| (i, b.iter().collect())))
            .collect()
    }

    #[test]
    fn each_boundary_is_written_once_before_the_first_message_at_or_past_it() {
        let mut clock = BoundaryClock::new(10, None);
        // The first message (at 3) sets the clock: 10 is the first boundary.
        let got = walk(&mut clock, &[3, 9, 10, 10, 15, 42, 43, 50]);
        assert_eq!(
            got,
            vec![(2, vec![10]), (5, vec![20, 30, 40]), (7, vec![50])]
        );
    }

    #[test]
    fn the_window_keeps_its_boundaries_only() {
        let window = TimeWindow {
            start: Nanos(25),
            end: Nanos(50),
        };
        let mut clock = BoundaryClock::new(10, Some(window));
        let got = walk(&mut clock, &[1, 12, 28, 47, 61, 99]);
        // 10 and 20 are before the window (12 passes 10 but writes nothing, and 28 is
        // before the next boundary kept, 30), 50 and later at or after its end.
        assert_eq!(got, vec![(3, vec![30, 40])]);
    }
}
