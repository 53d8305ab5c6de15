//! What a replay did, and the `--summary-json` object it writes (the screen a person reads at
//! the end is rendered in `views`, with every other report).
//!
//! # `--summary-json PATH`
//!
//! One JSON object, its keys in this order:
//!
//! - every input: `input`, `format`, `messages`, `by_type` (type letter to count),
//!   `unknown_types` (length-framed messages of a type ITCH 5.0 does not define: skipped,
//!   since Nasdaq adds types over the years), `unknown_refs`, `rejected`,
//!   `rejected_by_reason` (`zero_shares`, `live_ref`, `bad_side`, `order_capacity`,
//!   `level_capacity`, `book_capacity`), `clamped`, `symbols_replaced`, `crossed_events`,
//!   `crossed_books_end`, `live_orders_end`, `live_orders_peak`, `bbo_rows` (top-of-book rows
//!   before any `--symbols`/`--between` filter), `declared_lost_messages`,
//!   `declared_lost_ranges` (every range, as inclusive `[first,last]` sequence pairs) and
//!   `declared_lost_ranges_unlisted` (0: every range is kept);
//! - pcap and pcapng inputs add `packets`, `mold_packets`, `non_mold_packets`,
//!   `non_udp_frames`, `non_mold_datagrams`, `unsupported_link_frames`,
//!   `unsupported_link_type`, `gaps`, `missing_messages`, `gap_ranges`, `duplicates`,
//!   `reordered` and `session_changes`;
//! - a Databento DBN MBO input adds a `dbn` object: `records`, `mbo_records`,
//!   `symbol_mappings`, `other_records` (skipped), `long_symbols` (cut to ITCH's 8 bytes),
//!   `by_action` (action letter to count), `unknown_actions`, `instrument_out_of_range`,
//!   `unrepresentable_prices`, `modify_unknown_added`, `snapshot_records` (`F_SNAPSHOT`),
//!   `maybe_bad_book_records` (`F_MAYBE_BAD_BOOK`), `before_session_day`,
//!   `after_session_day`, `incomplete_event_records` and `session_date`; its `messages`
//!   counts MBO records and its `by_type` is empty;
//! - then `dbn_out_records` (records `--dbn-out` wrote, `null` without it), `no_messages`
//!   (why an input held no feed data, else `null`), `error` (what stopped the replay, else
//!   `null`), `elapsed_s` and `msgs_per_s`.
//!
//! A replay that stops on an error still writes the object, with `error` set and every
//! count up to the message before it. With `replay --threads N` the object is byte for byte
//! one thread's but for `elapsed_s` and `msgs_per_s`.

use std::fmt::{self, Write as _};

use ticklane_feed::capture::{
    CaptureCounts, DbnRecordCounts, InputFormat, NoMessages, UnsupportedLink,
};

use super::fault::ReplayFault;
use crate::book::{BookCounts, MboCounts, TypeCounts, MBO_ACTIONS};
use crate::exit_status::ExitStatus;

/// Packet-level counts of a pcap input (absent for ITCH50 files).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PacketCounts {
    /// Captured frames read.
    pub packets: u64,
    /// Frames that carried a MoldUDP64 packet.
    pub mold_packets: u64,
    /// Frames skipped because they carried no MoldUDP64 packet:
    /// `non_udp_frames + non_mold_datagrams`.
    pub non_mold_packets: u64,
    /// Of `non_mold_packets`, frames with no whole IPv4/UDP datagram (another link type,
    /// not IPv4, not UDP, an IPv4 fragment, broken headers).
    pub non_udp_frames: u64,
    /// Of `non_mold_packets`, UDP datagrams that were not MoldUDP64.
    pub non_mold_datagrams: u64,
    /// Of `non_udp_frames`, those on a link type the reader does not unwrap.
    pub unsupported_link: Option<UnsupportedLink>,
    /// Sequence ranges the MoldUDP64 sequencer declared lost.
    pub gaps: u64,
    /// Messages missing in those ranges.
    pub missing_messages: u64,
    /// Every lost range, as inclusive `[first, last]` sequence ranges (the capture reader
    /// keeps them all; [`PacketCounts::unlisted_gaps`] stays 0 unless a reader ever caps it).
    pub gap_ranges: Vec<[u64; 2]>,
    /// Messages skipped because their sequence was already applied.
    pub duplicates: u64,
    /// Messages that arrived after later ones and were put back in sequence order.
    pub reordered: u64,
    /// Times the MoldUDP64 session name changed.
    pub session_changes: u64,
}

impl PacketCounts {
    /// The packet-level part of a capture reader's counters.
    pub fn of(stats: &CaptureCounts<'_>) -> Self {
        PacketCounts {
            packets: stats.packets,
            mold_packets: stats.mold_packets,
            non_mold_packets: stats.non_mold_packets,
            non_udp_frames: stats.non_udp_frames,
            non_mold_datagrams: stats.non_mold_datagrams,
            unsupported_link: UnsupportedLink::of(stats),
            gaps: stats.gaps,
            missing_messages: stats.missing_messages,
            gap_ranges: stats.gap_ranges.iter().map(|g| [g.first, g.last]).collect(),
            duplicates: stats.duplicates,
            reordered: stats.reordered,
            session_changes: stats.session_changes,
        }
    }

    /// Lost ranges counted in `gaps` but not in `gap_ranges`.
    pub fn unlisted_gaps(&self) -> u64 {
        self.gaps.saturating_sub(self.gap_ranges.len() as u64)
    }

    /// The counts of `stats` if `format` is a packet capture, else `None`.
    pub fn of_capture(format: InputFormat, stats: &CaptureCounts<'_>) -> Option<Self> {
        matches!(format, InputFormat::Pcap | InputFormat::PcapNg).then(|| Self::of(stats))
    }
}

/// Record-level counts of a DBN MBO input (absent for ITCH inputs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DbnCounts {
    /// What the DBN reader counted.
    pub reader: DbnRecordCounts,
    /// What the MBO translation counted.
    pub mbo: MboCounts,
    /// The session the rows are stamped in (ns since its New York midnight), if one was
    /// found (`--date`, the metadata's `start`, or the first record).
    pub session_date: Option<crate::dbn_out::SessionDate>,
    /// MBO records of an event the input ended inside (after the last `F_LAST` record): not
    /// applied, so no output shows half an event.
    pub incomplete_event_records: u64,
}

impl DbnCounts {
    fn json(&self, j: &mut String) {
        let (r, m) = (&self.reader, &self.mbo);
        let _ = write!(
            j,
            "\"dbn\":{{\"records\":{},\"mbo_records\":{},\"symbol_mappings\":{},\
             \"other_records\":{},\"long_symbols\":{},\"by_action\":{{",
            r.records, r.mbo_records, r.symbol_mappings, r.other_records, r.long_symbols
        );
        for (i, (action, n)) in MBO_ACTIONS.iter().zip(m.by_action).enumerate() {
            let sep = if i == 0 { "" } else { "," };
            let _ = write!(j, "{sep}\"{}\":{n}", char::from(*action));
        }
        let _ = write!(
            j,
            "}},\"unknown_actions\":{},\"instrument_out_of_range\":{},\
             \"unrepresentable_prices\":{},\"modify_unknown_added\":{},\
             \"snapshot_records\":{},\"maybe_bad_book_records\":{},\
             \"before_session_day\":{},\"after_session_day\":{},\
             \"incomplete_event_records\":{},\"session_date\":",
            m.unknown_actions,
            m.instrument_out_of_range,
            m.unrepresentable_prices,
            m.modify_unknown_added,
            m.snapshot_records,
            m.maybe_bad_book_records,
            m.before_session_day,
            m.after_session_day,
            self.incomplete_event_records,
        );
        match self.session_date {
            Some(date) => {
                let _ = write!(j, "\"{}\"}},", date.date());
            }
            None => j.push_str("null},"),
        }
    }
}

/// Everything a replay reports.
#[derive(Debug, Default)]
pub struct ReplaySummary {
    /// The input file.
    pub input: String,
    /// Its detected format (`None` when it could not be opened).
    pub format: Option<InputFormat>,
    /// ITCH messages handled (unknown types included).
    pub messages: u64,
    /// Counts by type.
    pub by_type: TypeCounts,
    /// Length-framed messages of a type ITCH 5.0 does not define.
    pub unknown_types: u64,
    /// What the books counted.
    pub book: BookCounts,
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
    /// For DBN inputs (`messages` then counts MBO records, and `by_type` stays empty).
    pub dbn: Option<DbnCounts>,
    /// Records written by `--dbn-out` (`None` without it).
    pub dbn_out_records: Option<u64>,
    /// Why no message was delivered, when the input held feed data but none to deliver (a
    /// session of heartbeats only): an honest empty result, not a failure. An input with no
    /// feed data at all is an `error` ([`ReplayFault::NoFeedData`]) instead.
    pub no_messages: Option<NoMessages>,
    /// What stopped the replay early or made it a failure, if anything did.
    pub error: Option<ReplayFault>,
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

    /// Success only when nothing stopped the replay, the input held feed data and nothing
    /// was declared lost; a fault outranks loss: 0 when the input was read to its end and held
    /// feed data, 1 for a [`ReplayFault`] (stopped early, or no feed data at all), 3 when it
    /// was read to its end but a capture's MoldUDP64 sequencer declared sequences lost. A
    /// replay that could not start or write an output returns a
    /// [`ReplayError`](super::ReplayError) instead, also exit status 1.
    pub fn exit_status(&self) -> ExitStatus {
        match self.error {
            Some(_) => ExitStatus::Failure,
            None if self.declared_lost_messages() > 0 => ExitStatus::DeclaredLost,
            None => ExitStatus::Success,
        }
    }

    /// Messages the capture's MoldUDP64 sequencer declared lost (0 for ITCH50 files, which
    /// carry no sequence numbers to find a gap by).
    pub fn declared_lost_messages(&self) -> u64 {
        self.packets.as_ref().map_or(0, |p| p.missing_messages)
    }

    /// The `--summary-json` object, one line.
    pub fn to_json(&self) -> String {
        self.json(self.error.as_ref().map(|e| e as &dyn fmt::Display))
    }

    /// The `--summary-json` object with `error` given by the caller: what a replay that
    /// could not start writes (the counts are those of `self`, usually all zero).
    pub fn to_json_with_error(&self, error: &dyn fmt::Display) -> String {
        self.json(Some(error))
    }

    fn json(&self, error: Option<&dyn fmt::Display>) -> String {
        let mut j = String::with_capacity(1024);
        let b = &self.book;
        j.push('{');
        let _ = write!(j, "\"input\":{},", json_string(&self.input));
        match self.format {
            Some(format) => {
                let _ = write!(j, "\"format\":{},", json_string(&format.to_string()));
            }
            None => j.push_str("\"format\":null,"),
        }
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
        let _ = write!(j, "\"symbols_replaced\":{},", b.symbols_replaced);
        let _ = write!(j, "\"crossed_events\":{},", b.crossed_events);
        let _ = write!(j, "\"crossed_books_end\":{},", self.crossed_books_end);
        let _ = write!(j, "\"live_orders_end\":{},", self.live_orders_end);
        let _ = write!(j, "\"live_orders_peak\":{},", b.live_orders_peak);
        let _ = write!(j, "\"bbo_rows\":{},", self.bbo_rows);
        // Present for every input, so a reader need not know the format to check for loss.
        let _ = write!(
            j,
            "\"declared_lost_messages\":{},",
            self.declared_lost_messages()
        );
        j.push_str("\"declared_lost_ranges\":[");
        if let Some(p) = &self.packets {
            for (i, [first, last]) in p.gap_ranges.iter().enumerate() {
                let sep = if i == 0 { "" } else { "," };
                let _ = write!(j, "{sep}[{first},{last}]");
            }
        }
        j.push_str("],");
        let unlisted = self.packets.as_ref().map_or(0, PacketCounts::unlisted_gaps);
        let _ = write!(j, "\"declared_lost_ranges_unlisted\":{unlisted},");
        if let Some(p) = &self.packets {
            let _ = write!(j, "\"packets\":{},", p.packets);
            let _ = write!(j, "\"mold_packets\":{},", p.mold_packets);
            let _ = write!(j, "\"non_mold_packets\":{},", p.non_mold_packets);
            let _ = write!(j, "\"non_udp_frames\":{},", p.non_udp_frames);
            let _ = write!(j, "\"non_mold_datagrams\":{},", p.non_mold_datagrams);
            let link = p.unsupported_link;
            let _ = write!(
                j,
                "\"unsupported_link_frames\":{},",
                link.map_or(0, |l| l.frames)
            );
            match link {
                Some(l) => {
                    let _ = write!(j, "\"unsupported_link_type\":{},", l.linktype);
                }
                None => j.push_str("\"unsupported_link_type\":null,"),
            }
            let _ = write!(j, "\"gaps\":{},", p.gaps);
            let _ = write!(j, "\"missing_messages\":{},", p.missing_messages);
            j.push_str("\"gap_ranges\":[");
            for (i, [first, last]) in p.gap_ranges.iter().enumerate() {
                let sep = if i == 0 { "" } else { "," };
                let _ = write!(j, "{sep}[{first},{last}]");
            }
            j.push_str("],");
            let _ = write!(j, "\"duplicates\":{},", p.duplicates);
            let _ = write!(j, "\"reordered\":{},", p.reordered);
            let _ = write!(j, "\"session_changes\":{},", p.session_changes);
        }
        if let Some(d) = &self.dbn {
            d.json(&mut j);
        }
        match self.dbn_out_records {
            Some(n) => {
                let _ = write!(j, "\"dbn_out_records\":{n},");
            }
            None => j.push_str("\"dbn_out_records\":null,"),
        }
        match &self.no_messages {
            Some(why) => {
                let _ = write!(j, "\"no_messages\":{},", json_string(&why.to_string()));
            }
            None => j.push_str("\"no_messages\":null,"),
        }
        match error {
            Some(e) => {
                let _ = write!(j, "\"error\":{},", json_string(&e.to_string()));
            }
            None => j.push_str("\"error\":null,"),
        }
        let _ = write!(j, "\"elapsed_s\":{:.6},", self.elapsed_s);
        let _ = write!(j, "\"msgs_per_s\":{:.0}", self.msgs_per_s());
        j.push_str("}\n");
        j
    }
}

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
    use crate::digit_groups::group;

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
            "\"symbols_replaced\":",
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
        assert!(
            j.contains("\"declared_lost_messages\":0,\"declared_lost_ranges\":[],"),
            "every input says what it lost: {j}"
        );
        assert_eq!(s.exit_status(), ExitStatus::Success);
    }

    #[test]
    fn a_capture_with_declared_loss_lists_every_range_and_exits_3() {
        let s = ReplaySummary {
            packets: Some(PacketCounts {
                gaps: 2,
                missing_messages: 4 + 1,
                gap_ranges: vec![[5, 8], [20, 20]],
                ..PacketCounts::default()
            }),
            ..ReplaySummary::default()
        };
        let j = s.to_json();
        assert!(
            j.contains(
                "\"declared_lost_messages\":5,\"declared_lost_ranges\":[[5,8],[20,20]],\
                 \"declared_lost_ranges_unlisted\":0,"
            ),
            "{j}"
        );
        assert_eq!(s.exit_status(), ExitStatus::DeclaredLost);
        assert_eq!(s.exit_status().code(), 3);
        let text = s.to_text();
        assert!(
            text.contains("declared lost: sequences 5 ..= 8 (4)\n")
                && text.contains("declared lost: sequences 20 ..= 20 (1)\n"),
            "{text}"
        );
    }

    #[test]
    fn a_fault_outranks_loss() {
        let s = ReplaySummary {
            packets: Some(PacketCounts {
                gaps: 1,
                missing_messages: 3,
                gap_ranges: vec![[5, 7]],
                ..PacketCounts::default()
            }),
            error: Some(ReplayFault::BookStage("bad message".into())),
            ..ReplaySummary::default()
        };
        assert_eq!(s.exit_status(), ExitStatus::Failure);
    }
}
