//! `ticklane book STOCK`: one instrument's slot as a person reads it: a header line, the top
//! levels of both sides face to face, the last trade, and the snapshot's status.

use std::io::{self, Write};

use crate::book::LevelView;
use crate::snapshot::{InstrumentState, SnapshotHeader};

use super::snapshot_status::{age, header_status, slot_flags};
use super::time_of_day::time_of_day;
use crate::digit_groups::group;

/// Writes one book: header, the top `depth` levels of both sides, the last trade, the
/// snapshot's status. Ages are measured against `now_ns` (wall-clock ns since the epoch).
///
/// # Errors
///
/// Whatever `out` returns.
pub fn write_book_view(
    out: &mut impl Write,
    header: &SnapshotHeader,
    s: &InstrumentState,
    depth: usize,
    now_ns: u64,
) -> io::Result<()> {
    writeln!(
        out,
        "{}  (locate {})  trading state {}  {}",
        String::from_utf8_lossy(s.symbol()),
        s.locate.0,
        s.trading_state
            .map_or("-".to_string(), |b| char::from(b).to_string()),
        slot_flags(s, now_ns)
    )?;
    writeln!(
        out,
        "feed seq {}  exchange time {}  published {}  ({} updates)",
        s.feed_seq,
        time_of_day(s.exchange_ts),
        age(s.updated_ns, now_ns),
        group(s.publishes)
    )?;
    writeln!(
        out,
        "{:>4}  {:>7} {:>12} {:>12} | {:<12} {:<12} {:>7}",
        "lvl", "orders", "bid qty", "bid", "ask", "ask qty", "orders"
    )?;
    let rows = s.bids.len().max(s.asks.len()).min(depth);
    let cell = |levels: &[LevelView], i: usize| levels.get(i).copied();
    for i in 0..rows {
        let bid = cell(&s.bids, i);
        let ask = cell(&s.asks, i);
        writeln!(
            out,
            "{:>4}  {:>7} {:>12} {:>12} | {:<12} {:<12} {:>7}",
            i + 1,
            bid.map_or(String::new(), |l| l.orders.to_string()),
            bid.map_or(String::new(), |l| group(l.qty)),
            bid.map_or(String::new(), |l| l.price.to_string()),
            ask.map_or(String::new(), |l| l.price.to_string()),
            ask.map_or(String::new(), |l| group(l.qty)),
            ask.map_or(String::new(), |l| l.orders.to_string()),
        )?;
    }
    if rows == 0 {
        writeln!(out, "      (no orders)")?;
    }
    match s.last_trade {
        Some(t) => writeln!(
            out,
            "last trade {} @ {} at {}  ({} trades, {} shares)",
            group(u64::from(t.shares)),
            t.price,
            time_of_day(t.timestamp),
            group(s.trades),
            group(s.traded_shares)
        )?,
        None => writeln!(out, "last trade -")?,
    }
    writeln!(out, "snapshot {}", header_status(header, now_ns))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::layout::HEADER_CLOSED;
    use crate::snapshot::LastTrade;
    use crate::views::snapshot_status::tests::{header, state, NOW};
    use ticklane_feed::itch::{Nanos, Price};

    fn level(price: u32, qty: u64, orders: u32) -> LevelView {
        LevelView {
            price: Price(price),
            qty,
            orders,
        }
    }

    fn view(s: &InstrumentState, depth: usize) -> String {
        let mut out = Vec::new();
        write_book_view(&mut out, &header(HEADER_CLOSED, NOW), s, depth, NOW).expect("Vec");
        String::from_utf8(out).expect("UTF-8")
    }

    #[test]
    fn both_sides_face_to_face_cut_at_depth() {
        let mut s = state(b"MSFT    ", 7);
        s.trading_state = Some(b'T');
        s.feed_seq = 99;
        s.exchange_ts = Nanos(34_200_000_000_000);
        s.publishes = 12_345;
        s.bids = vec![level(1_000_000, 1_200, 3), level(999_900, 100, 1)];
        s.asks = vec![level(1_000_100, 50, 2)];
        s.last_trade = Some(LastTrade {
            price: Price(1_000_050),
            shares: 2_500,
            timestamp: Nanos(34_201_000_000_000),
        });
        s.trades = 4;
        s.traded_shares = 10_000;
        let text = view(&s, 1);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "MSFT  (locate 7)  trading state T  ");
        assert_eq!(
            lines[1],
            "feed seq 99  exchange time 09:30:00.000000000  published 0.000 s ago  (12,345 updates)"
        );
        assert_eq!(
            lines[3],
            "   1        3        1,200     100.0000 | 100.0100     50                 2"
        );
        assert_eq!(lines.len(), 6, "depth 1 cuts the second bid:\n{text}");
        assert_eq!(
            lines[4],
            "last trade 2,500 @ 100.0050 at 09:30:01.000000000  (4 trades, 10,000 shares)"
        );
        assert!(lines[5].starts_with("snapshot pid 4242"), "{text}");
        assert!(lines[5].ends_with("CLOSED (writer exited)"), "{text}");
        assert_eq!(
            view(&s, 10).lines().filter(|l| l.contains(" | ")).count(),
            3
        );
    }

    #[test]
    fn an_empty_book_says_so() {
        let text = view(&state(b"EMPTY   ", 2), 10);
        assert!(
            text.contains("\n      (no orders)\nlast trade -\n"),
            "{text}"
        );
        assert!(
            text.starts_with("EMPTY  (locate 2)  trading state -"),
            "{text}"
        );
    }
}
