//! What a replay did. The `--summary-json` object it writes is `summary_json.rs`; the screen
//! a person reads at the end is rendered in `views`, with every other report.

use ticklane_feed::capture::{
    CaptureCounts, DbnRecordCounts, InputFormat, NoMessages, UnsupportedLink,
};

use super::fault::ReplayFault;
use crate::book::{BookCounts, MboCounts, TypeCounts};
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
