//! What a replay did: the `--summary-json` object and the screen a person reads at the end.

use std::fmt::Write as _;

use crate::book::{BookCounters, TypeCounts};

/// Packet-level counts of a pcap input (absent for ITCH50 files).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PacketCounts {
    /// MoldUDP64 packets read.
    pub packets: u64,
    /// Frames that were not MoldUDP64 over IPv4/UDP, skipped.
    pub non_mold_packets: u64,
    /// Sequence gaps seen.
    pub gaps: u64,
    /// Messages missing in those gaps.
    pub missing_messages: u64,
    /// The first gaps as inclusive `[first, last]` sequence ranges.
    pub gap_ranges: Vec<[u64; 2]>,
    /// Messages skipped because their sequence was already applied.
    pub duplicates: u64,
    /// Times the MoldUDP64 session name changed.
    pub session_changes: u64,
}

/// Everything a replay reports.
#[derive(Clone, Debug, Default)]
pub struct ReplaySummary {
    /// The input file.
    pub input: String,
    /// Its detected format.
    pub format: String,
    /// ITCH messages handled (unknown types included).
    pub messages: u64,
    /// Counts by type.
    pub by_type: TypeCounts,
    /// Length-framed messages of a type ITCH 5.0 does not define.
    pub unknown_types: u64,
    /// What the books counted.
    pub book: BookCounters,
    /// Books crossed at the end.
    pub crossed_books_end: u64,
    /// Orders live at the end.
    pub live_orders_end: u64,
    /// Top-of-book rows written.
    pub bbo_rows: u64,
    /// Wall-clock seconds of the replay.
    pub elapsed_s: f64,
    /// For pcap inputs.
    pub packets: Option<PacketCounts>,
    /// The error that stopped the replay early, if one did.
    pub error: Option<String>,
}

impl ReplaySummary {
    /// Messages per second over the whole replay.
    pub fn msgs_per_s(&self) -> f64 {
        if self.elapsed_s > 0.0 {
            self.messages as f64 / self.elapsed_s
        } else {
            0.0
        }
    }

    /// The `--summary-json` object, one line.
    pub fn to_json(&self) -> String {
        let mut j = String::with_capacity(1024);
        let b = &self.book;
        j.push('{');
        let _ = write!(j, "\"input\":{},", json_string(&self.input));
        let _ = write!(j, "\"format\":{},", json_string(&self.format));
        let _ = write!(j, "\"messages\":{},", self.messages);
        j.push_str("\"by_type\":{");
        for (i, (tag, n)) in self.by_type.seen().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            let _ = write!(j, "{sep}\"{}\":{n}", tag as char);
        }
        j.push_str("},");
        let _ = write!(j, "\"unknown_types\":{},", self.unknown_types);
        let _ = write!(j, "\"unknown_refs\":{},", b.unknown_refs);
        let _ = write!(j, "\"rejected\":{},", b.rejected);
        let _ = write!(
            j,
            "\"rejected_by_reason\":{{\"zero_shares\":{},\"live_ref\":{},\"bad_side\":{},\
             \"order_capacity\":{},\"level_capacity\":{},\"book_capacity\":{}}},",
            b.rejected_zero_shares,
            b.rejected_live_ref,
            b.rejected_bad_side,
            b.rejected_order_capacity,
            b.rejected_level_capacity,
            b.rejected_book_capacity
        );
        let _ = write!(j, "\"clamped\":{},", b.clamped);
        let _ = write!(j, "\"crossed_events\":{},", b.crossed_events);
        let _ = write!(j, "\"crossed_books_end\":{},", self.crossed_books_end);
        let _ = write!(j, "\"live_orders_end\":{},", self.live_orders_end);
        let _ = write!(j, "\"live_orders_peak\":{},", b.live_orders_peak);
        let _ = write!(j, "\"bbo_rows\":{},", self.bbo_rows);
        if let Some(p) = &self.packets {
            let _ = write!(j, "\"packets\":{},", p.packets);
            let _ = write!(j, "\"non_mold_packets\":{},", p.non_mold_packets);
            let _ = write!(j, "\"gaps\":{},", p.gaps);
            let _ = write!(j, "\"missing_messages\":{},", p.missing_messages);
            j.push_str("\"gap_ranges\":[");
            for (i, [first, last]) in p.gap_ranges.iter().enumerate() {
                let sep = if i == 0 { "" } else { "," };
                let _ = write!(j, "{sep}[{first},{last}]");
            }
            j.push_str("],");
            let _ = write!(j, "\"duplicates\":{},", p.duplicates);
            let _ = write!(j, "\"session_changes\":{},", p.session_changes);
        }
        match &self.error {
            Some(e) => {
                let _ = write!(j, "\"error\":{},", json_string(e));
            }
            None => j.push_str("\"error\":null,"),
        }
        let _ = write!(j, "\"elapsed_s\":{:.6},", self.elapsed_s);
        let _ = write!(j, "\"msgs_per_s\":{:.0}", self.msgs_per_s());
        j.push_str("}\n");
        j
    }

    /// The screen printed at the end of `ticklane replay`.
    pub fn to_text(&self) -> String {
        let b = &self.book;
        let mut t = String::new();
        let _ = writeln!(t, "ticklane replay: {} ({})", self.input, self.format);
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
        let _ = writeln!(t, "  by type      {}", types.join(" "));
        if let Some(p) = &self.packets {
            let _ = writeln!(
                t,
                "  packets      {:>14}   gaps {} ({} messages missing)   duplicates {}",
                group(p.packets),
                p.gaps,
                group(p.missing_messages),
                group(p.duplicates)
            );
            for [first, last] in p.gap_ranges.iter().take(5) {
                let _ = writeln!(t, "               gap: sequences {first} ..= {last}");
            }
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
        let _ = writeln!(
            t,
            "  crossed      {:>14}   books crossed at end, {} crossing events",
            self.crossed_books_end, b.crossed_events
        );
        if self.bbo_rows > 0 {
            let _ = writeln!(t, "  bbo rows     {:>14}", group(self.bbo_rows));
        }
        if let Some(e) = &self.error {
            let _ = writeln!(t, "  STOPPED EARLY: {e}");
        }
        t
    }
}

/// `1234567` as `1,234,567`.
pub fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A JSON string literal.
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_thousands() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1_000), "1,000");
        assert_eq!(group(1_234_567), "1,234,567");
    }

    #[test]
    fn json_has_the_contract_keys() {
        let mut s = ReplaySummary {
            messages: 3,
            ..Default::default()
        };
        s.by_type.0[usize::from(b'A')] = 2;
        s.by_type.0[usize::from(b'D')] = 1;
        s.input = "a\"b".into();
        let j = s.to_json();
        for key in [
            "\"messages\":3",
            "\"by_type\":{\"A\":2,\"D\":1}",
            "\"unknown_refs\":",
            "\"rejected\":",
            "\"clamped\":",
            "\"crossed_books_end\":",
            "\"live_orders_end\":",
            "\"live_orders_peak\":",
            "\"elapsed_s\":",
            "\"msgs_per_s\":",
            "\"input\":\"a\\\"b\"",
        ] {
            assert!(j.contains(key), "{key} missing in {j}");
        }
        assert!(
            !j.contains("\"packets\""),
            "only pcap inputs carry packet counts"
        );
    }
}
