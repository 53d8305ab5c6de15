//! Helpers shared by the snapshot tests: a generated day, replayed the way the engine does.

use std::path::Path;

use ticklane_engine::book::trade_of;
use ticklane_engine::book::Applier;
use ticklane_engine::book::{BookConfig, Books};
use ticklane_engine::csv::{write_book_csv, BboCsvWriter};
use ticklane_engine::snapshot::SnapshotWriter;
use ticklane_feed::itch;
use ticklane_sim::{write_itch50, GenConfig};

/// Book capacities that fit every generated day here.
pub fn book_config() -> BookConfig {
    BookConfig {
        max_orders: 1 << 20,
        max_books: 256,
        levels_per_side: 1024,
    }
}

/// A generated ITCH 5.0 day, length-prefixed as Nasdaq's files are.
pub fn day(messages: u64, seed: u64, stocks: u16, crossing: bool) -> Vec<u8> {
    let mut bytes = Vec::new();
    write_itch50(
        GenConfig {
            messages,
            seed,
            stocks,
            hard_cases: true,
            crossing,
        },
        &mut bytes,
    )
    .expect("writing to memory");
    bytes
}

/// The messages of a length-prefixed day, without their prefixes.
pub fn messages(day: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = day;
    while rest.len() >= 2 {
        let len = usize::from(u16::from_be_bytes([rest[0], rest[1]]));
        out.push(&rest[2..2 + len]);
        rest = &rest[2 + len..];
    }
    out
}

/// The final books of a day, through the applier the CLI uses.
pub fn replay(day: &[u8]) -> Books {
    let mut applier: Applier<BboCsvWriter<std::io::Sink>> =
        Applier::new(book_config(), None).expect("books");
    for (i, message) in messages(day).into_iter().enumerate() {
        applier.step(i as u64 + 1, message).expect("valid day");
    }
    applier.finish().expect("no output to flush")
}

/// `write_book_csv` of `books` at `depth`, as a string.
pub fn book_csv(books: &Books, depth: usize) -> String {
    String::from_utf8(write_book_csv(books, depth, Vec::new()).expect("to memory")).expect("ASCII")
}

/// Replays `day` as the book thread would: applies each message, records its trade, publishes
/// the changed instrument (and `R`/`H` targets) with the message index as feed sequence.
/// Returns the final books; the writer is left open.
pub fn publish_day(day: &[u8], writer: &mut SnapshotWriter) -> Books {
    let mut books = Books::new(book_config()).expect("books");
    for (i, bytes) in messages(day).into_iter().enumerate() {
        let message = itch::decode(bytes).expect("valid day");
        if let Some(trade) = trade_of(&books, &message) {
            writer.record_trade(&books, trade).expect("room");
        }
        let changed = books.apply(&message).or(match message {
            itch::Message::StockDirectory(_) | itch::Message::StockTradingAction(_) => {
                Some(message.locate())
            }
            _ => None,
        });
        if let Some(locate) = changed {
            writer
                .publish(&books, locate, i as u64 + 1, message.timestamp())
                .expect("room");
        }
    }
    books
}

/// Writes a snapshot of `books` at `path`: every book published once.
pub fn snapshot_of(books: &Books, path: &Path, depth: usize) -> SnapshotWriter {
    let mut writer = SnapshotWriter::create(path, 512, depth).expect("create");
    for locate in books.locates() {
        writer
            .publish(books, locate, 1, itch::Nanos(0))
            .expect("room");
    }
    writer
}

/// What a slot must hold after the publication with feed sequence `feed_seq` in
/// [`publish_pass`]: everything a publication sets, derived from the books independently.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expected {
    pub locate: u16,
    pub symbol: Vec<u8>,
    pub trading_state: Option<u8>,
    pub crossed: bool,
    pub exchange_ts: u64,
    pub updated_ns: u64,
    pub bids: Vec<(u32, u64, u32)>,
    pub asks: Vec<(u32, u64, u32)>,
}

/// The local time [`publish_pass`] stamps on publication `feed_seq`: redundancy a torn read
/// would break.
pub fn stamp(feed_seq: u64) -> u64 {
    feed_seq.wrapping_mul(7) + 3
}

/// The locate a message's publication is for: the book it changed, or the target of `R`/`H`.
fn changed_locate(books: &mut Books, message: &itch::Message<'_>) -> Option<itch::Locate> {
    books.apply(message).or(match message {
        itch::Message::StockDirectory(_) | itch::Message::StockTradingAction(_) => {
            Some(message.locate())
        }
        _ => None,
    })
}

/// One pass of the day through fresh books, publishing each change with the message index as
/// feed sequence and [`stamp`] as local time; calls `between` after each message.
pub fn publish_pass(day: &[u8], writer: &mut SnapshotWriter, mut between: impl FnMut(u64)) {
    let mut books = Books::new(book_config()).expect("books");
    for (i, bytes) in messages(day).into_iter().enumerate() {
        let message = itch::decode(bytes).expect("valid day");
        let seq = i as u64 + 1;
        if let Some(locate) = changed_locate(&mut books, &message) {
            writer
                .publish_at(&books, locate, seq, message.timestamp(), stamp(seq))
                .expect("room");
        }
        between(seq);
    }
}

/// For each feed sequence (index = sequence), the slot contents [`publish_pass`] publishes.
pub fn expected_states(day: &[u8], depth: usize) -> Vec<Option<Expected>> {
    let mut books = Books::new(book_config()).expect("books");
    let mut out = vec![None];
    for (i, bytes) in messages(day).into_iter().enumerate() {
        let message = itch::decode(bytes).expect("valid day");
        let seq = i as u64 + 1;
        out.push(changed_locate(&mut books, &message).map(|locate| {
            let side = |side| {
                books
                    .side(locate, side)
                    .map(|l| {
                        l.best_first()
                            .take(depth)
                            .map(|v| (v.price.0, v.qty, v.orders))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            Expected {
                locate: locate.0,
                symbol: books.symbol(locate).to_vec(),
                trading_state: books.trading_state(locate),
                crossed: books.top_of_book(locate).is_crossed(),
                exchange_ts: message.timestamp().0,
                updated_ns: stamp(seq),
                bids: side(ticklane_engine::book::Side::Bid),
                asks: side(ticklane_engine::book::Side::Ask),
            }
        }));
    }
    out
}

/// Panics unless `state` is exactly what [`publish_pass`] published for its feed sequence, or
/// a slot just handed out (feed sequence 0, no levels yet).
pub fn check_state(
    state: &ticklane_engine::snapshot::InstrumentState,
    expected: &[Option<Expected>],
) {
    let levels = |v: &[ticklane_engine::book::LevelView]| {
        v.iter()
            .map(|l| (l.price.0, l.qty, l.orders))
            .collect::<Vec<_>>()
    };
    if state.feed_seq == 0 {
        assert!(state.bids.is_empty() && state.asks.is_empty(), "{state:?}");
        return;
    }
    let want = expected
        .get(state.feed_seq as usize)
        .and_then(Option::as_ref)
        .unwrap_or_else(|| panic!("no publication has feed sequence {}", state.feed_seq));
    let got = Expected {
        locate: state.locate.0,
        symbol: state.symbol().to_vec(),
        trading_state: state.trading_state,
        crossed: state.flags.is_crossed(),
        exchange_ts: state.exchange_ts.0,
        updated_ns: state.updated_ns,
        bids: levels(&state.bids),
        asks: levels(&state.asks),
    };
    assert_eq!(
        &got, want,
        "slot differs from publication {}",
        state.feed_seq
    );
}
