//! The screen `ticklane replay` (and the demo) print at the end: the replay summary for
//! people. The same summary as JSON (`--summary-json`, the Parquet footers) is an output
//! file's format, written by the replay itself.

use std::fmt::Write as _;

use crate::book::MBO_ACTIONS;
use crate::digit_groups::group;
use crate::replay::{DbnCounts, PacketCounts, ReplayFault, ReplaySummary};

/// Declared-lost ranges listed one by one on the screen when there are at most this many.
const SCREEN_GAP_RANGES: usize = 8;
/// When there are more, this many from each end are listed, and the rest counted.
const SCREEN_GAP_ENDS: usize = 3;

impl ReplaySummary {
    /// The screen printed at the end of `ticklane replay`. It ends with the fault, if any
    /// (`STOPPED EARLY: …` or `NO FEED DATA: …`): a caller that prints this text must not
    /// print [`ReplaySummary::error`] again.
    pub fn to_text(&self) -> String {
        let b = &self.book;
        let mut t = String::new();
        let format = self.format.map(|f| f.to_string()).unwrap_or_default();
        let _ = writeln!(t, "ticklane replay: {} ({format})", self.input);
        let _ = writeln!(
            t,
            "  messages     {:>14}   in {:.3} s = {:.2} M msg/s",
            group(self.messages),
            self.elapsed_s,
            self.msgs_per_s() / 1e6
        );
        let types: Vec<String> = self
            .by_type
            .seen()
            .map(|(tag, n)| format!("{}:{}", tag as char, group(n)))
            .collect();
        // A DBN input has no ITCH types; its `by action` line stands instead.
        if self.dbn.is_none() {
            let _ = writeln!(t, "  by type      {}", types.join(" "));
        }
        if let Some(p) = &self.packets {
            self.packet_lines(&mut t, p);
        }
        if let Some(d) = &self.dbn {
            d.write_lines(&mut t);
        }
        let _ = writeln!(
            t,
            "  orders live  {:>14}   peak {}",
            group(self.live_orders_end),
            group(b.live_orders_peak)
        );
        let _ = writeln!(
            t,
            "  unknown refs {:>14}   clamped {}   rejected {}   unknown types {}",
            group(b.unknown_refs),
            group(b.clamped),
            group(b.rejected),
            group(self.unknown_types)
        );
        let capacity =
            b.rejected_order_capacity + b.rejected_level_capacity + b.rejected_book_capacity;
        if capacity > 0 {
            let _ = writeln!(
                t,
                "  CAPACITY     orders full {}   levels full {}   books full {}  (raise the --max-* options)",
                b.rejected_order_capacity, b.rejected_level_capacity, b.rejected_book_capacity
            );
        }
        if b.symbols_replaced > 0 {
            let _ = writeln!(
                t,
                "  SYMBOLS      {} with bytes no output carries (control, non-ASCII, comma, quote), written as ?",
                group(b.symbols_replaced)
            );
        }
        let _ = writeln!(
            t,
            "  crossed      {:>14}   books crossed at end, {} crossing events",
            self.crossed_books_end, b.crossed_events
        );
        if self.bbo_rows > 0 {
            let _ = writeln!(t, "  bbo rows     {:>14}", group(self.bbo_rows));
        }
        if let Some(why) = &self.no_messages {
            let _ = writeln!(t, "  NOTE: {why}");
        }
        match &self.error {
            Some(e @ ReplayFault::NoFeedData { .. }) => {
                let _ = writeln!(t, "  NO FEED DATA: {e}");
            }
            Some(e) => {
                let _ = writeln!(t, "  STOPPED EARLY: {e}");
            }
            None => {}
        }
        t
    }

    fn packet_lines(&self, t: &mut String, p: &PacketCounts) {
        let _ = writeln!(
            t,
            "  packets      {:>14}   MoldUDP64 {}   other {} (no IPv4/UDP {}, UDP not MoldUDP64 {})",
            group(p.packets),
            group(p.mold_packets),
            group(p.non_mold_packets),
            group(p.non_udp_frames),
            group(p.non_mold_datagrams)
        );
        let _ = writeln!(
            t,
            "  sequencing   gaps {} ({} messages declared lost)   duplicates {}   reordered {}   session changes {}",
            p.gaps,
            group(p.missing_messages),
            group(p.duplicates),
            group(p.reordered),
            p.session_changes
        );
        let line = |t: &mut String, [first, last]: [u64; 2]| {
            let n = last.saturating_sub(first).saturating_add(1);
            let _ = writeln!(
                t,
                "               declared lost: sequences {first} ..= {last} ({})",
                group(n)
            );
        };
        let ranges = &p.gap_ranges;
        let unlisted = p.unlisted_gaps();
        if ranges.len() <= SCREEN_GAP_RANGES {
            ranges.iter().for_each(|&r| line(t, r));
        } else if unlisted == 0 {
            // All of them known: the first and last few, and what lies between.
            let (head, rest) = ranges.split_at(SCREEN_GAP_ENDS);
            let (middle, tail) = rest.split_at(rest.len() - SCREEN_GAP_ENDS);
            head.iter().for_each(|&r| line(t, r));
            let between: u64 = middle
                .iter()
                .map(|[f, l]| l.saturating_sub(*f).saturating_add(1))
                .sum();
            let _ = writeln!(
                t,
                "               ... {} more lost ranges ({} messages) not listed ...",
                group(middle.len() as u64),
                group(between)
            );
            tail.iter().for_each(|&r| line(t, r));
        } else {
            ranges[..SCREEN_GAP_ENDS].iter().for_each(|&r| line(t, r));
        }
        let shown = ranges.len().min(SCREEN_GAP_ENDS) as u64;
        if unlisted > 0 {
            let _ = writeln!(
                t,
                "               ... and {} more lost ranges not listed (the reader keeps the first {})",
                group(p.gaps - shown),
                group(ranges.len() as u64)
            );
        }
        // A capture with no feed data at all says this in its error already.
        let said_in_error = matches!(self.error, Some(ReplayFault::NoFeedData { .. }));
        if let (Some(link), false) = (p.unsupported_link, said_in_error) {
            let _ = writeln!(t, "  WARNING: {link}");
        }
    }
}

impl DbnCounts {
    fn write_lines(&self, t: &mut String) {
        let actions: Vec<String> = MBO_ACTIONS
            .iter()
            .zip(self.mbo.by_action)
            .map(|(a, n)| format!("{}:{}", char::from(*a), group(n)))
            .collect();
        let _ = writeln!(t, "  by action    {}", actions.join(" "));
        let m = &self.mbo;
        let _ = writeln!(
            t,
            "  DBN records  {:>14}   symbol mappings {}   other {}   snapshot {}   maybe-bad-book {}",
            group(self.reader.records),
            group(self.reader.symbol_mappings),
            group(self.reader.other_records),
            group(m.snapshot_records),
            group(m.maybe_bad_book_records)
        );
        if m.started_mid_day() {
            let _ = writeln!(
                t,
                "  WARNING: the input starts mid-day without a snapshot: {} records named orders \
                 from before it, so every book may lack orders (MAYBE_BAD)",
                group(m.unknown_orders)
            );
        }
        let _ = writeln!(
            t,
            "  DBN skipped  unknown actions {}   instrument ids over 65535 {}   prices not in 1e-4 {}   modify of unknown order added {}   records of an event cut off by the input's end (not applied) {}",
            group(m.unknown_actions),
            group(m.instrument_out_of_range),
            group(m.unrepresentable_prices),
            group(m.modify_unknown_added),
            group(self.incomplete_event_records)
        );
        let session = self.session_date.map_or_else(
            || "none (stamped since the Unix epoch)".to_string(),
            |d| d.date().to_string(),
        );
        let _ = writeln!(
            t,
            "  DBN session  {session}   records before its New York midnight (no row) {}   on a later day {}",
            group(m.before_session_day),
            group(m.after_session_day)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_ranges_on_screen_show_both_ends_and_count_the_middle() {
        let ranges: Vec<[u64; 2]> = (0..20u64).map(|i| [10 * i + 1, 10 * i + 2]).collect();
        let p = PacketCounts {
            gaps: 20,
            missing_messages: 40,
            gap_ranges: ranges,
            ..PacketCounts::default()
        };
        let mut t = String::new();
        ReplaySummary::default().packet_lines(&mut t, &p);
        assert!(t.contains("sequences 1 ..= 2 (2)"), "{t}");
        assert!(t.contains("sequences 191 ..= 192 (2)"), "{t}");
        assert!(
            t.contains("... 14 more lost ranges (28 messages) not listed ..."),
            "{t}"
        );
        let truncated = PacketCounts { gaps: 2_000, ..p };
        let mut t = String::new();
        ReplaySummary::default().packet_lines(&mut t, &truncated);
        assert!(
            t.contains("... and 1,997 more lost ranges not listed (the reader keeps the first 20)"),
            "{t}"
        );
    }
}
