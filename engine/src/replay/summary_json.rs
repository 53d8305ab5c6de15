//! The `--summary-json` object: a [`ReplaySummary`] as JSON, through `serde`.
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
//!   `opened_with_snapshot` (the first record is one), `unknown_orders` (Cancel and Modify
//!   records naming an order the books never had), `started_mid_day` (no snapshot first,
//!   and orders from before the input: every book may lack orders),
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
//!
//! Numbers are integers but for `elapsed_s` (seconds, rounded to the microsecond); strings
//! are JSON-escaped by `serde_json`.

use std::fmt;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde::Serialize as DeriveSerialize;

use super::summary::{DbnCounts, PacketCounts, ReplaySummary};
use crate::book::MBO_ACTIONS;

/// A count per letter (an ITCH type, a DBN action), as an object keyed by the letter, in
/// the order given.
struct LetterCounts(Vec<(u8, u64)>);

impl Serialize for LetterCounts {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for &(letter, n) in &self.0 {
            map.serialize_entry(&char::from(letter), &n)?;
        }
        map.end()
    }
}

#[derive(DeriveSerialize)]
struct RejectedByReason {
    zero_shares: u64,
    live_ref: u64,
    bad_side: u64,
    order_capacity: u64,
    level_capacity: u64,
    book_capacity: u64,
}

#[derive(DeriveSerialize)]
struct PacketsJson<'a> {
    packets: u64,
    mold_packets: u64,
    non_mold_packets: u64,
    non_udp_frames: u64,
    non_mold_datagrams: u64,
    unsupported_link_frames: u64,
    unsupported_link_type: Option<u32>,
    gaps: u64,
    missing_messages: u64,
    gap_ranges: &'a [[u64; 2]],
    duplicates: u64,
    reordered: u64,
    session_changes: u64,
}

#[derive(DeriveSerialize)]
struct DbnJson {
    records: u64,
    mbo_records: u64,
    symbol_mappings: u64,
    other_records: u64,
    long_symbols: u64,
    by_action: LetterCounts,
    unknown_actions: u64,
    instrument_out_of_range: u64,
    unrepresentable_prices: u64,
    modify_unknown_added: u64,
    snapshot_records: u64,
    opened_with_snapshot: bool,
    unknown_orders: u64,
    started_mid_day: bool,
    maybe_bad_book_records: u64,
    before_session_day: u64,
    after_session_day: u64,
    incomplete_event_records: u64,
    session_date: Option<String>,
}

#[derive(DeriveSerialize)]
struct SummaryJson<'a> {
    input: &'a str,
    format: Option<String>,
    messages: u64,
    by_type: LetterCounts,
    unknown_types: u64,
    unknown_refs: u64,
    rejected: u64,
    rejected_by_reason: RejectedByReason,
    clamped: u64,
    symbols_replaced: u64,
    crossed_events: u64,
    crossed_books_end: u64,
    live_orders_end: u64,
    live_orders_peak: u64,
    bbo_rows: u64,
    declared_lost_messages: u64,
    declared_lost_ranges: &'a [[u64; 2]],
    declared_lost_ranges_unlisted: u64,
    #[serde(flatten)]
    packets: Option<PacketsJson<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dbn: Option<DbnJson>,
    dbn_out_records: Option<u64>,
    no_messages: Option<String>,
    error: Option<String>,
    elapsed_s: f64,
    msgs_per_s: u64,
}

impl PacketCounts {
    fn json(&self) -> PacketsJson<'_> {
        PacketsJson {
            packets: self.packets,
            mold_packets: self.mold_packets,
            non_mold_packets: self.non_mold_packets,
            non_udp_frames: self.non_udp_frames,
            non_mold_datagrams: self.non_mold_datagrams,
            unsupported_link_frames: self.unsupported_link.map_or(0, |l| l.frames),
            unsupported_link_type: self.unsupported_link.map(|l| l.linktype),
            gaps: self.gaps,
            missing_messages: self.missing_messages,
            gap_ranges: &self.gap_ranges,
            duplicates: self.duplicates,
            reordered: self.reordered,
            session_changes: self.session_changes,
        }
    }
}

impl DbnCounts {
    fn json(&self) -> DbnJson {
        let (r, m) = (&self.reader, &self.mbo);
        DbnJson {
            records: r.records,
            mbo_records: r.mbo_records,
            symbol_mappings: r.symbol_mappings,
            other_records: r.other_records,
            long_symbols: r.long_symbols,
            by_action: LetterCounts(MBO_ACTIONS.iter().copied().zip(m.by_action).collect()),
            unknown_actions: m.unknown_actions,
            instrument_out_of_range: m.instrument_out_of_range,
            unrepresentable_prices: m.unrepresentable_prices,
            modify_unknown_added: m.modify_unknown_added,
            snapshot_records: m.snapshot_records,
            opened_with_snapshot: m.opened_with_snapshot,
            unknown_orders: m.unknown_orders,
            started_mid_day: m.started_mid_day(),
            maybe_bad_book_records: m.maybe_bad_book_records,
            before_session_day: m.before_session_day,
            after_session_day: m.after_session_day,
            incomplete_event_records: self.incomplete_event_records,
            session_date: self.session_date.map(|d| d.date().to_string()),
        }
    }
}

impl ReplaySummary {
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
        let b = &self.book;
        let lost: &[[u64; 2]] = self.packets.as_ref().map_or(&[], |p| &p.gap_ranges);
        let json = SummaryJson {
            input: &self.input,
            format: self.format.map(|f| f.to_string()),
            messages: self.messages,
            by_type: LetterCounts(self.by_type.seen().collect()),
            unknown_types: self.unknown_types,
            unknown_refs: b.unknown_refs,
            rejected: b.rejected,
            rejected_by_reason: RejectedByReason {
                zero_shares: b.rejected_zero_shares,
                live_ref: b.rejected_live_ref,
                bad_side: b.rejected_bad_side,
                order_capacity: b.rejected_order_capacity,
                level_capacity: b.rejected_level_capacity,
                book_capacity: b.rejected_book_capacity,
            },
            clamped: b.clamped,
            symbols_replaced: b.symbols_replaced,
            crossed_events: b.crossed_events,
            crossed_books_end: self.crossed_books_end,
            live_orders_end: self.live_orders_end,
            live_orders_peak: b.live_orders_peak,
            bbo_rows: self.bbo_rows,
            // Present for every input, so a reader need not know the format to check for
            // loss.
            declared_lost_messages: self.declared_lost_messages(),
            declared_lost_ranges: lost,
            declared_lost_ranges_unlisted: self
                .packets
                .as_ref()
                .map_or(0, PacketCounts::unlisted_gaps),
            packets: self.packets.as_ref().map(PacketCounts::json),
            dbn: self.dbn.as_ref().map(DbnCounts::json),
            dbn_out_records: self.dbn_out_records,
            no_messages: self.no_messages.as_ref().map(ToString::to_string),
            error: error.map(ToString::to_string),
            elapsed_s: (self.elapsed_s * 1e6).round() / 1e6,
            // Rounded to a whole message per second (a rate is never negative, nor near
            // 2^64).
            msgs_per_s: self.msgs_per_s().round() as u64,
        };
        let mut text = serde_json::to_string(&json).unwrap_or_else(|e| {
            // Every field is a number, a string or a list of numbers: serde_json cannot fail
            // on them, but if it ever did the file says so rather than holding nothing.
            format!("{{\"error\":\"the summary could not be written as JSON: {e}\"}}")
        });
        text.push('\n');
        text
    }
}
