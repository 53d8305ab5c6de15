//! The state a snapshot reader should judge the data by: the header's engine-wide status
//! (writer, heartbeat, behind, stale with since-when and why, maybe bad after a declared
//! loss, publications lost to a full file, closed) and a slot's flags. Ages are measured against
//! `now_ns` (wall-clock ns since the Unix epoch), which the caller reads once per frame.

use crate::snapshot::{FlaggedBooks, InstrumentState, LineState, SnapshotHeader};

use crate::digit_groups::group;

/// A writer that has not stamped its heartbeat for this long is reported silent: it is
/// expected to stamp it at least every second.
pub const SILENT_AFTER_NS: u64 = 5_000_000_000;

/// How long before `now_ns` a wall-clock time was, as `S.mmm s ago` (a time in the future
/// reads as `0.000 s ago`).
pub fn age(then_ns: u64, now_ns: u64) -> String {
    let ms = now_ns.saturating_sub(then_ns) / 1_000_000;
    format!("{}.{:03} s ago", ms / 1000, ms % 1000)
}

/// The header as one line: writer pid, heartbeat age, instruments, depth, then `BEHIND`,
/// `STALE (why) since …`, `MAYBE_BAD since … (N messages lost)`, `FULL (N publications
/// lost)`, and `CLOSED` or `WRITER SILENT` where they apply.
pub fn header_status(h: &SnapshotHeader, now_ns: u64) -> String {
    let mut status = format!(
        "pid {}  heartbeat {}  {}/{} instruments  depth {}",
        h.writer_pid,
        age(h.heartbeat_ns, now_ns),
        h.instruments,
        h.slot_capacity,
        h.depth
    );
    if h.behind_ns > 0 {
        status.push_str(&format!("  BEHIND {} ns", group(h.behind_ns)));
    }
    if h.is_stale() {
        let why = h.line().map_or("feed down", |line| match line.as_str() {
            "live" => "feed down",
            why => why,
        });
        match h.stale_since() {
            Some(since) => {
                status.push_str(&format!("  STALE ({why}) since {}", age(since, now_ns)))
            }
            None => status.push_str(&format!("  STALE ({why})")),
        }
    }
    if h.is_maybe_bad() {
        status.push_str(&format!(
            "  MAYBE_BAD since {} ({} messages lost)",
            age(h.maybe_bad_since_ns, now_ns),
            group(h.lost_messages)
        ));
    }
    if h.full_publications > 0 {
        status.push_str(&format!(
            "  FULL ({} publications lost: no free slot)",
            group(h.full_publications)
        ));
    }
    if h.is_closed() {
        status.push_str("  CLOSED (writer exited)");
    } else if now_ns.saturating_sub(h.heartbeat_ns) > SILENT_AFTER_NS {
        status.push_str("  WRITER SILENT (no heartbeat: gone or stuck)");
    }
    status
}

/// A slot's flags, space separated: `STALE`, `MAYBE_BAD`, `CROSSED`, `BEHIND since …`; empty
/// when none.
pub fn slot_flags(s: &InstrumentState, now_ns: u64) -> String {
    let mut flags = Vec::new();
    if s.flags.is_stale() {
        flags.push("STALE".to_string());
    }
    if s.flags.is_maybe_bad() {
        flags.push("MAYBE_BAD".to_string());
    }
    if s.flags.is_crossed() {
        flags.push("CROSSED".to_string());
    }
    if let Some(since) = s.behind_since_ns {
        flags.push(format!("BEHIND since {}", age(since, now_ns)));
    }
    flags.join(" ")
}

/// Most symbols a warning names before it gives their count only.
const NAMED_SYMBOLS: usize = 10;

/// One line for stderr when the CSV's books may be wrong or out of date (the CSV has no
/// column for flags, so a script would not know): each flag with the books that carry it,
/// the header's reason, and a writer that stopped heartbeating without closing the file (gone
/// or stuck: every book is its last). `None` when none of these holds at `now_ns`.
pub fn book_csv_warning(
    header: &SnapshotHeader,
    flagged: &FlaggedBooks,
    now_ns: u64,
) -> Option<String> {
    let books = |symbols: &[String]| {
        let of = format!("{} of {} books", symbols.len(), flagged.books);
        if symbols.is_empty() || symbols.len() > NAMED_SYMBOLS {
            of
        } else {
            format!("{of}: {}", symbols.join(" "))
        }
    };
    let mut parts = Vec::new();
    if header.is_maybe_bad() || !flagged.maybe_bad.is_empty() {
        parts.push(format!(
            "MAYBE_BAD ({} messages declared lost; books may be wrong) on {}",
            header.lost_messages,
            books(&flagged.maybe_bad)
        ));
    }
    if header.is_stale() || !flagged.stale.is_empty() {
        let why = header
            .line()
            .filter(|line| *line != LineState::Live)
            .map_or("feed down", LineState::as_str);
        parts.push(format!(
            "STALE (line {why}; last known books, not live) on {}",
            books(&flagged.stale)
        ));
    }
    if !header.is_closed() && now_ns.saturating_sub(header.heartbeat_ns) > SILENT_AFTER_NS {
        parts.push(format!(
            "WRITER SILENT (last heartbeat {}: the writer is gone or stuck; these are its \
             last books) on all {} books",
            age(header.heartbeat_ns, now_ns),
            flagged.books
        ));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::snapshot::layout::{
        HEADER_CLOSED, HEADER_MAYBE_BAD, HEADER_STALE, SLOT_CROSSED, SLOT_MAYBE_BAD, SLOT_STALE,
    };
    use crate::snapshot::LineState;
    use crate::snapshot::SlotFlags;
    use ticklane_feed::itch::{Alpha, Locate, Nanos};

    pub(in crate::views) const NOW: u64 = 1_700_000_000_000_000_000;

    pub(in crate::views) fn header(flags: u64, heartbeat_ns: u64) -> SnapshotHeader {
        SnapshotHeader {
            magic: *b"TICKSNAP",
            layout_version: 2,
            byte_order: 0,
            header_size: 0,
            slot_size: 0,
            slot_capacity: 64,
            depth: 10,
            file_size: 0,
            writer_pid: 4242,
            reserved0: 0,
            created_ns: 0,
            heartbeat_ns,
            instruments: 3,
            flags,
            behind_ns: 0,
            stale_since_ns: 0,
            line_state: 0,
            maybe_bad_since_ns: 0,
            lost_messages: 0,
            full_publications: 0,
        }
    }

    pub(in crate::views) fn state(symbol: &[u8; 8], locate: u16) -> InstrumentState {
        InstrumentState {
            sequence: 2,
            symbol: Alpha(*symbol),
            locate: Locate(locate),
            trading_state: None,
            flags: SlotFlags(0),
            feed_seq: 0,
            exchange_ts: Nanos(0),
            updated_ns: NOW,
            behind_since_ns: None,
            publishes: 0,
            bids: Vec::new(),
            asks: Vec::new(),
            last_trade: None,
            trades: 0,
            traded_shares: 0,
        }
    }

    #[test]
    fn ages_in_milliseconds() {
        assert_eq!(age(NOW - 1_234_567_890, NOW), "1.234 s ago");
        assert_eq!(age(NOW, NOW), "0.000 s ago");
        assert_eq!(
            age(NOW + 5, NOW),
            "0.000 s ago",
            "a clock step back is no age"
        );
    }

    #[test]
    fn a_live_writer_a_closed_one_and_a_silent_one() {
        let live = header_status(&header(0, NOW - 500_000_000), NOW);
        assert_eq!(
            live,
            "pid 4242  heartbeat 0.500 s ago  3/64 instruments  depth 10"
        );
        let closed = header_status(&header(HEADER_CLOSED, NOW - 60_000_000_000), NOW);
        assert!(closed.ends_with("  CLOSED (writer exited)"), "{closed}");
        assert!(!closed.contains("SILENT"), "a closed writer is not silent");
        let silent = header_status(&header(HEADER_STALE, NOW - 6_000_000_000), NOW);
        assert!(
            silent.ends_with("  STALE (feed down)  WRITER SILENT (no heartbeat: gone or stuck)"),
            "{silent}"
        );
        let mut behind = header(0, NOW);
        behind.behind_ns = 1_500_000;
        assert!(header_status(&behind, NOW).contains("  BEHIND 1,500,000 ns"));
    }

    #[test]
    fn stale_with_why_and_since_maybe_bad_and_full() {
        let mut h = header(HEADER_STALE | HEADER_MAYBE_BAD, NOW);
        h.line_state = LineState::Reconnecting.code();
        h.stale_since_ns = NOW - 3_250_000_000;
        h.maybe_bad_since_ns = NOW - 10_000_000_000;
        h.lost_messages = 43_000;
        h.full_publications = 12;
        assert_eq!(
            header_status(&h, NOW),
            "pid 4242  heartbeat 0.000 s ago  3/64 instruments  depth 10  \
             STALE (reconnecting) since 3.250 s ago  \
             MAYBE_BAD since 10.000 s ago (43,000 messages lost)  \
             FULL (12 publications lost: no free slot)"
        );
        // A line that ended silent: stale, and not closed though the writer is gone.
        let mut ended = header(HEADER_STALE, NOW - 60_000_000_000);
        ended.line_state = LineState::EndedSilent.code();
        ended.stale_since_ns = NOW - 62_000_000_000;
        let text = header_status(&ended, NOW);
        assert!(
            text.contains("STALE (ended silent) since 62.000 s ago") && !text.contains("CLOSED"),
            "{text}"
        );
    }

    #[test]
    fn slot_flags_in_order() {
        let mut s = state(b"AAPL    ", 1);
        assert_eq!(slot_flags(&s, NOW), "");
        s.flags = SlotFlags(SLOT_STALE | SLOT_CROSSED | SLOT_MAYBE_BAD);
        s.behind_since_ns = Some(NOW - 2_000_000_000);
        assert_eq!(
            slot_flags(&s, NOW),
            "STALE MAYBE_BAD CROSSED BEHIND since 2.000 s ago"
        );
    }
}
