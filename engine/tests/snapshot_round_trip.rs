//! Writer to reader: the snapshot's CSV equals `--book-out`'s for the same books.

mod snapshot_util;

use std::collections::HashMap;

use snapshot_util::{book_csv, day, messages, publish_day, replay, snapshot_of};
use ticklane_engine::book::trade_of;
use ticklane_engine::book::{Books, Side};
use ticklane_engine::snapshot::{
    read_all, write_snapshot_book_csv, LastTrade, SnapshotReader, SnapshotWriter,
};
use ticklane_feed::itch;

fn snapshot_csv(reader: &SnapshotReader, depth: usize) -> String {
    String::from_utf8(write_snapshot_book_csv(reader, depth, Vec::new()).expect("readable"))
        .expect("ASCII")
}

#[test]
fn final_books_read_back_as_the_book_out_csv() {
    let day = day(60_000, 7, 12, false);
    let books = replay(&day);
    let dir = tempfile::tempdir().expect("temp dir");
    for depth in [1, 3, 10] {
        let path = dir.path().join(format!("d{depth}.snap"));
        let writer = snapshot_of(&books, &path, depth);
        let reader = SnapshotReader::open(&path).expect("open");
        let expected = book_csv(&books, depth);
        assert!(expected.lines().count() > 12, "a day with books");
        assert_eq!(snapshot_csv(&reader, depth), expected, "depth {depth}");
        // Asking for fewer levels than the file keeps matches too.
        assert_eq!(snapshot_csv(&reader, 1), book_csv(&books, 1));
        writer.close().expect("close");
    }
}

#[test]
fn publishing_every_message_ends_on_the_final_books_and_last_trades() {
    let day = day(60_000, 11, 10, true);
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("live.snap");
    let mut writer = SnapshotWriter::create(&path, 64, 10).expect("create");
    let books = publish_day(&day, &mut writer);
    let reader = SnapshotReader::open(&path).expect("open");
    assert_eq!(snapshot_csv(&reader, 10), book_csv(&books, 10));
    assert_eq!(snapshot_csv(&reader, 10), book_csv(&replay(&day), 10));

    // The naive model: the last print and the totals per locate, straight from the messages.
    let mut model = Books::new(snapshot_util::book_config()).expect("books");
    let mut last: HashMap<u16, (LastTrade, u64, u64)> = HashMap::new();
    let mut last_seq: HashMap<u16, u64> = HashMap::new();
    for (i, bytes) in messages(&day).into_iter().enumerate() {
        let message = itch::decode(bytes).expect("valid");
        if let Some(t) = trade_of(&model, &message) {
            let e = last.entry(t.locate.0).or_insert((
                LastTrade {
                    price: t.price,
                    shares: 0,
                    timestamp: t.timestamp,
                },
                0,
                0,
            ));
            e.0 = LastTrade {
                price: t.price,
                shares: t.shares,
                timestamp: t.timestamp,
            };
            e.1 += 1;
            e.2 += u64::from(t.shares);
        }
        if let Some(locate) = model.apply(&message) {
            last_seq.insert(locate.0, i as u64 + 1);
        }
    }
    assert!(!last.is_empty(), "the day has executions");
    let states = read_all(&reader).expect("readable");
    assert_eq!(reader.header().instruments as usize, states.len());
    let mut crossed = 0;
    for state in &states {
        let trade = last.get(&state.locate.0);
        assert_eq!(state.last_trade, trade.map(|t| t.0), "{:?}", state.locate);
        assert_eq!(state.trades, trade.map_or(0, |t| t.1));
        assert_eq!(state.traded_shares, trade.map_or(0, |t| t.2));
        if let Some(&seq) = last_seq.get(&state.locate.0) {
            assert!(
                state.feed_seq >= seq,
                "published at or after its last change"
            );
        }
        assert_eq!(state.symbol(), books.symbol(state.locate));
        assert_eq!(state.trading_state, books.trading_state(state.locate));
        let top = books.top_of_book(state.locate);
        assert_eq!(state.flags.is_crossed(), top.is_crossed());
        crossed += usize::from(top.is_crossed());
        let depth = |side| books.side(state.locate, side).map_or(0, |l| l.depth());
        assert_eq!(state.bids.len(), depth(Side::Bid).min(10));
        assert_eq!(state.asks.len(), depth(Side::Ask).min(10));
    }
    assert_eq!(crossed, books.crossed_books());
    // Slots carry their locate: every symbol is found where it is.
    for (slot, state) in states.iter().enumerate() {
        if !state.symbol().is_empty() {
            assert_eq!(reader.find(state.symbol()), Some(slot));
        }
    }
    writer.close().expect("close");
    assert!(reader.header().is_closed());
}
