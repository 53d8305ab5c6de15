//! `ticklane replay FILE.dbn[.zst]`: Databento MBO records through the books.
//!
//! - Databento's own MBO test files (copied from the `dbn` repository, Apache-2.0, see
//!   `tests/data/dbn/PROVENANCE.md`) replay without error; their counters are printed.
//! - A hand-built MBO stream, written with Databento's own encoder, gives the book a naive
//!   model of Databento's documented MBO actions expects: the model is written here from
//!   the documentation, not from the code under test.
//! - Truncated and corrupted DBN bytes give an error naming the file, the byte offset and
//!   the record index, never a panic and never a quiet end.

use std::collections::BTreeMap;
use std::ffi::c_char;
use std::io::Write;
use std::path::{Path, PathBuf};

use dbn::encode::{DbnEncoder, EncodeRecord};
use dbn::{FlagSet, MappingInterval, MboMsg, Metadata, RecordHeader, SType, Schema, SymbolMapping};
use ticklane_engine::book::BookConfig;
use ticklane_engine::exit_status::ExitStatus;
use ticklane_engine::replay::{replay_file, ReplayOptions, ReplaySummary};

const F_LAST: u8 = 1 << 7;
/// DBN price units per dollar.
const DOLLAR: i64 = 1_000_000_000;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data/dbn")
        .join(name)
}

fn small_books() -> BookConfig {
    BookConfig {
        max_orders: 1 << 12,
        max_books: 64,
        levels_per_side: 64,
    }
}

fn replay(input: &Path, dir: &Path) -> (ReplaySummary, String, String) {
    let book = dir.join("book.csv");
    let bbo = dir.join("bbo.csv");
    let opts = ReplayOptions {
        input: input.to_path_buf(),
        bbo_out: Some(bbo.clone()),
        book_out: Some(book.clone()),
        depth: 10,
        summary_json: Some(dir.join("summary.json")),
        books: small_books(),
        ..ReplayOptions::default()
    };
    let outcome = replay_file(&opts).expect("replay starts and writes its outputs");
    let book = std::fs::read_to_string(book).expect("book csv");
    let bbo = std::fs::read_to_string(bbo).expect("bbo csv");
    (outcome.summary, book, bbo)
}

#[test]
fn databento_test_files_replay_without_error() {
    for name in [
        "test_data.mbo.dbn",
        "test_data.mbo.v1.dbn.zst",
        "test_data.mbo.v2.dbn.zst",
        "test_data.mbo.v3.dbn",
        "test_data.mbo.v3.dbn.zst",
    ] {
        let dir = tempfile::tempdir().expect("temp dir");
        let (summary, _, _) = replay(&data(name), dir.path());
        // Straight to stderr, so that `--nocapture` shows each test file's counters to a person
        // checking what Databento's own files exercise.
        let _ = writeln!(std::io::stderr(), "{}", summary.to_text());
        assert!(summary.error.is_none(), "{name}: {:?}", summary.error);
        assert_eq!(summary.exit_status(), ExitStatus::Success, "{name}");
        let dbn = summary.dbn.expect("DBN counts");
        // Each file holds two MBO records (Databento's own fixture: two cancels of ESH1,
        // instrument 5482, read from the bytes above), and no other record.
        assert_eq!(dbn.reader.mbo_records, 2, "{name}");
        assert_eq!(summary.messages, 2, "{name}");
        assert_eq!(dbn.mbo.by_action[1], 2, "{name}: two cancels");
        // Cancels of orders the file never added: counted, nothing changes, and with no
        // snapshot first the file is said to start mid-day.
        assert_eq!(summary.book.unknown_refs, 2, "{name}");
        assert_eq!(summary.live_orders_end, 0, "{name}");
        assert!(dbn.mbo.started_mid_day(), "{name}");
        let json = summary.to_json();
        assert!(json.contains("\"dbn\":{\"records\":2,"), "{name}: {json}");
        assert!(json.contains("\"started_mid_day\":true"), "{name}: {json}");
    }
}

/// One MBO record for the hand-built stream.
struct Rec {
    instrument: u32,
    action: u8,
    side: u8,
    order: u64,
    /// Price in 1/10,000 dollars (ITCH units), written to DBN as 1e-9 units.
    price_e4: i64,
    size: u32,
    last: bool,
    seq: u32,
}

fn rec(instrument: u32, action: u8, side: u8, order: u64, price_e4: i64, size: u32) -> Rec {
    Rec {
        instrument,
        action,
        side,
        order,
        price_e4,
        size,
        last: true,
        seq: 0,
    }
}

/// One of each MBO action the books act on: add, partial cancel, modify price, modify size down,
/// fill + cancel, clear, with a trade and a none that change nothing.
fn stream() -> Vec<Rec> {
    let mut fill = rec(7, b'F', b'B', 1, 1_000_000, 70);
    fill.last = false;
    let mut records = vec![
        rec(7, b'A', b'B', 1, 1_000_000, 100),
        rec(7, b'A', b'B', 2, 1_000_000, 50),
        rec(7, b'A', b'A', 3, 1_010_000, 200),
        rec(7, b'C', b'B', 1, 1_000_000, 30),
        rec(7, b'M', b'B', 2, 995_000, 50),
        rec(7, b'M', b'A', 3, 1_010_000, 120),
        fill,
        rec(7, b'C', b'B', 1, 1_000_000, 70),
        rec(8, b'A', b'A', 4, 1_020_000, 10),
        rec(8, b'A', b'B', 6, 970_000, 25),
        rec(8, b'R', b'N', 0, 0, 0),
        rec(7, b'T', b'B', 0, 1_010_000, 5),
        rec(8, b'A', b'B', 5, 980_000, 40),
        rec(7, b'A', b'A', 7, 1_011_000, 15),
        rec(7, b'N', b'N', 0, 0, 0),
    ];
    for (i, r) in records.iter_mut().enumerate() {
        r.seq = i as u32 + 1;
    }
    // The cancel that follows the fill belongs to the same event.
    records[7].seq = records[6].seq;
    records
}

fn encode(records: &[Rec]) -> Vec<u8> {
    let mapping = |symbol: &str, id: u32| SymbolMapping {
        raw_symbol: symbol.to_string(),
        intervals: vec![MappingInterval {
            start_date: time::Date::from_calendar_date(2026, time::Month::November, 30)
                .expect("a date"),
            end_date: time::Date::from_calendar_date(2026, time::Month::December, 1)
                .expect("a date"),
            symbol: id.to_string(),
        }],
    };
    let metadata: Metadata = Metadata::builder()
        .dataset("XNAS.ITCH")
        .schema(Some(Schema::Mbo))
        .start(1_764_460_800_000_000_000)
        .stype_in(Some(SType::RawSymbol))
        .stype_out(SType::InstrumentId)
        .mappings(vec![mapping("AAPL", 7), mapping("MSFT", 8)])
        .build();
    let mut out = Vec::new();
    let mut encoder = DbnEncoder::new(&mut out, &metadata).expect("metadata encodes");
    for (i, r) in records.iter().enumerate() {
        // 09:30 New York (14:30 UTC): in the session the file's start (00:00 UTC, as
        // Databento's daily files start) names.
        let ts = 1_764_460_800_000_000_000 + 52_200_000_000_000 + i as u64;
        let msg = MboMsg {
            hd: RecordHeader::new::<MboMsg>(dbn::rtype::MBO, 2, r.instrument, ts),
            order_id: r.order,
            price: if r.action == b'R' || r.action == b'N' {
                i64::MAX
            } else {
                r.price_e4 * (DOLLAR / 10_000)
            },
            size: r.size,
            flags: FlagSet::new(if r.last { F_LAST } else { 0 }),
            channel_id: 0,
            action: r.action as c_char,
            side: r.side as c_char,
            ts_recv: ts,
            ts_in_delta: 0,
            sequence: r.seq,
        };
        encoder.encode_record(&msg).expect("record encodes");
    }
    encoder.flush().expect("flush");
    out
}

/// Databento's documented MBO actions on a map of resting orders: Add inserts, Cancel takes
/// `size` shares off (the order leaves at 0), Modify sets price and size, Clear removes the
/// instrument's orders, Trade / Fill / None change nothing.
fn naive_book(records: &[Rec]) -> Vec<String> {
    // order id -> (instrument, side, price, size)
    let mut orders: BTreeMap<u64, (u32, u8, i64, u64)> = BTreeMap::new();
    for r in records {
        match r.action {
            b'A' => {
                orders.insert(
                    r.order,
                    (r.instrument, r.side, r.price_e4, u64::from(r.size)),
                );
            }
            b'C' => {
                let o = orders
                    .get_mut(&r.order)
                    .expect("stream cancels live orders");
                o.3 -= u64::from(r.size);
                if o.3 == 0 {
                    orders.remove(&r.order);
                }
            }
            b'M' => {
                let o = orders
                    .get_mut(&r.order)
                    .expect("stream modifies live orders");
                o.2 = r.price_e4;
                o.3 = u64::from(r.size);
            }
            b'R' => orders.retain(|_, o| o.0 != r.instrument),
            _ => {}
        }
    }
    // (instrument, side letter, price) -> (qty, orders)
    let mut levels: BTreeMap<(u32, char, i64), (u64, u32)> = BTreeMap::new();
    for &(instrument, side, price, size) in orders.values() {
        let side = if side == b'B' { 'B' } else { 'S' };
        let level = levels.entry((instrument, side, price)).or_default();
        level.0 += size;
        level.1 += 1;
    }
    let symbol = |id: u32| if id == 7 { "AAPL" } else { "MSFT" };
    let mut rows = Vec::new();
    for instrument in [7u32, 8] {
        for side in ['B', 'S'] {
            let mut side_levels: Vec<_> = levels
                .iter()
                .filter(|((i, s, _), _)| *i == instrument && *s == side)
                .collect();
            if side == 'B' {
                side_levels.reverse();
            }
            for (n, ((_, _, price), (qty, count))) in side_levels.into_iter().enumerate() {
                rows.push(format!(
                    "{instrument},{},{side},{},{price},{qty},{count}",
                    symbol(instrument),
                    n + 1
                ));
            }
        }
    }
    rows
}

#[test]
fn hand_built_mbo_stream_gives_the_naive_book() {
    let records = stream();
    let bytes = encode(&records);
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("hand.dbn");
    std::fs::write(&input, &bytes).expect("write dbn");
    let (summary, book, bbo) = replay(&input, dir.path());
    assert!(summary.error.is_none(), "{:?}", summary.error);

    let mut expected = vec!["locate,stock,side,level,price,qty,orders".to_string()];
    expected.extend(naive_book(&records));
    let got: Vec<&str> = book.lines().collect();
    assert_eq!(got, expected);

    let dbn = summary.dbn.expect("DBN counts");
    let count = |a: u8| records.iter().filter(|r| r.action == a).count() as u64;
    let by_action: Vec<u64> = [b'A', b'C', b'M', b'R', b'T', b'F', b'N']
        .iter()
        .map(|&a| count(a))
        .collect();
    assert_eq!(dbn.mbo.by_action.to_vec(), by_action);
    assert_eq!(summary.messages, records.len() as u64);
    assert_eq!(summary.book.unknown_refs, 0);
    assert_eq!(summary.book.clamped, 0);
    assert_eq!(dbn.mbo.modify_unknown_added, 0);
    assert!(
        !dbn.mbo.started_mid_day(),
        "every order named was added first"
    );

    // The fill and the cancel after it are one event (one ITCH execution: one sequence,
    // F_LAST on the cancel): one row, after the cancel, with AAPL's bid down to order 2
    // at 99.50 x 50 and the ask at 101.00 x 120.
    let fill_seq = records
        .iter()
        .find(|r| r.action == b'F')
        .map(|r| r.seq)
        .expect("a fill");
    let rows: Vec<&str> = bbo.lines().collect();
    assert_eq!(
        rows[0],
        "msg_index,timestamp_ns,locate,stock,bid_px,bid_qty,bid_orders,ask_px,ask_qty,ask_orders"
    );
    let event_rows: Vec<&&str> = rows
        .iter()
        .filter(|r| r.starts_with(&format!("{fill_seq},")))
        .collect();
    assert_eq!(event_rows.len(), 1, "{bbo}");
    assert!(
        event_rows[0].ends_with(",7,AAPL,995000,50,1,1010000,120,1"),
        "{bbo}"
    );
}

/// The v3 test file's bytes: metadata then two 56-byte MBO records.
fn v3_bytes() -> Vec<u8> {
    std::fs::read(data("test_data.mbo.v3.dbn")).expect("test file")
}

fn replay_bytes(bytes: &[u8]) -> ReplaySummary {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("bad.dbn");
    std::fs::write(&input, bytes).expect("write");
    match replay_file(&ReplayOptions {
        input,
        books: small_books(),
        ..ReplayOptions::default()
    }) {
        Ok(outcome) => outcome.summary,
        Err(e) => ReplaySummary {
            error: None,
            input: format!("OPEN ERROR: {e}"),
            ..ReplaySummary::default()
        },
    }
}

#[test]
fn truncated_dbn_names_the_offset_and_record() {
    let bytes = v3_bytes();
    let len = bytes.len();
    // Cut 10 bytes into the second record: the first is applied, the second reported.
    let cut = &bytes[..len - 56 + 10];
    let summary = replay_bytes(cut);
    let error = summary
        .error
        .as_ref()
        .expect("truncation is an error")
        .to_string();
    let second_record_at = len - 56;
    assert!(error.contains("bad.dbn"), "{error}");
    assert!(
        error.contains(&format!("byte {second_record_at}, message 2")),
        "{error}"
    );
    assert!(error.contains("10 bytes into a DBN record"), "{error}");
    assert_eq!(summary.messages, 1);
    assert_eq!(summary.exit_status(), ExitStatus::Failure);
}

#[test]
fn an_error_far_past_the_read_ahead_comes_after_every_record_before_it() {
    // Replay reads records ahead of the one it applies (to prefetch for them): a cut deep in
    // a long file must still apply every whole record before it, then report the cut one.
    let records: Vec<Rec> = (0..60u64)
        .map(|i| {
            let side = if i % 2 == 0 { b'B' } else { b'A' };
            let mut r = if i % 3 == 2 {
                rec(7, b'C', side, i - 2, 1_000_000, 1)
            } else {
                rec(7, b'A', side, i, 1_000_000 + 100 * i as i64, 10)
            };
            r.seq = i as u32 + 1;
            r
        })
        .collect();
    let bytes = encode(&records);
    let record_len = 56;
    let cut_record = 45; // 1-based: records 1..=44 are whole
    let first_record_at = bytes.len() - records.len() * record_len;
    let cut_at = first_record_at + (cut_record - 1) * record_len;
    let summary = replay_bytes(&bytes[..cut_at + 20]);
    let error = summary.error.as_ref().expect("a cut record").to_string();
    assert!(
        error.contains(&format!("byte {cut_at}, message {cut_record}")),
        "{error}"
    );
    assert_eq!(
        summary.messages,
        cut_record as u64 - 1,
        "{}",
        summary.to_text()
    );
    let whole = replay_bytes(&bytes);
    assert!(whole.error.is_none(), "{}", whole.to_text());
    assert_eq!(whole.messages, records.len() as u64);
}

/// A day that ends with a replace: order 1's cancel, then (`F_LAST`) its add at a new price,
/// one event of two records.
fn ending_in_a_replace() -> Vec<Rec> {
    let mut cancel = rec(7, b'C', b'B', 1, 1_000_000, 100);
    cancel.last = false;
    let mut records = vec![
        rec(7, b'A', b'B', 1, 1_000_000, 100),
        rec(7, b'A', b'A', 2, 1_010_000, 50),
        cancel,
        rec(7, b'A', b'B', 1, 1_005_000, 100),
    ];
    for (i, r) in records.iter_mut().enumerate() {
        r.seq = i as u32 + 1;
    }
    records[3].seq = records[2].seq;
    records
}

#[test]
fn an_input_cut_inside_an_event_applies_none_of_it_and_counts_it() {
    let records = ending_in_a_replace();
    let bytes = encode(&records);
    let record_len = 56;
    let cancel_at = bytes.len() - 2 * record_len;
    let add_at = bytes.len() - record_len;
    // Before the replace, as the venue published it: order 1 bid 100.00 x 100, order 2 ask
    // 101.00 x 50.
    let before = [
        "locate,stock,side,level,price,qty,orders",
        "7,AAPL,B,1,1000000,100,1",
        "7,AAPL,S,1,1010000,50,1",
    ];
    // Cut inside the add's record, and exactly between the cancel and the add (which the
    // decoder reads as a clean end).
    for (cut, says) in [
        (add_at + 20, format!("byte {add_at}, message 4")),
        (add_at, format!("byte {cancel_at}, message 3")),
    ] {
        let dir = tempfile::tempdir().expect("temp dir");
        let input = dir.path().join("cut.dbn");
        std::fs::write(&input, &bytes[..cut]).expect("write dbn");
        let (summary, book, bbo) = replay(&input, dir.path());
        let error = summary.error.as_ref().expect("a cut input is an error");
        let error = error.to_string();
        assert!(error.contains(&says), "cut at {cut}: {error}");
        assert_eq!(summary.exit_status(), ExitStatus::Failure, "cut at {cut}");
        assert_eq!(book.lines().collect::<Vec<_>>(), before, "cut at {cut}");
        let rows: Vec<&str> = bbo.lines().skip(1).collect();
        assert_eq!(summary.bbo_rows, rows.len() as u64, "cut at {cut}: {bbo}");
        let last = rows.last().expect("rows before the replace");
        assert!(
            last.ends_with(",7,AAPL,1000000,100,1,1010000,50,1"),
            "cut at {cut}: the last row is the book before the replace: {bbo}"
        );
        let dbn = summary.dbn.as_ref().expect("DBN counts");
        assert_eq!(dbn.incomplete_event_records, 1, "cut at {cut}");
        assert_eq!(
            summary.messages, 2,
            "cut at {cut}: the cancel was not applied"
        );
        let json = std::fs::read_to_string(dir.path().join("summary.json")).expect("json");
        assert!(json.contains("\"incomplete_event_records\":1"), "{json}");
        assert!(
            summary.to_text().contains("(not applied) 1"),
            "{}",
            summary.to_text()
        );
    }
    // Whole, the replace moves order 1 to 100.50.
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("whole.dbn");
    std::fs::write(&input, &bytes).expect("write dbn");
    let (summary, book, bbo) = replay(&input, dir.path());
    assert!(summary.error.is_none(), "{:?}", summary.error);
    assert!(book.contains("7,AAPL,B,1,1005000,100,1"), "{book}");
    assert_eq!(summary.bbo_rows, bbo.lines().count() as u64 - 1, "{bbo}");
    assert_eq!(summary.dbn.expect("DBN counts").incomplete_event_records, 0);
}

#[test]
fn truncated_zstd_is_an_error_not_a_clean_end() {
    let bytes = std::fs::read(data("test_data.mbo.v3.dbn.zst")).expect("test file");
    for cut in [bytes.len() - 1, bytes.len() - 8, bytes.len() / 2] {
        let summary = replay_bytes(&bytes[..cut]);
        let error = summary.error.as_ref().map(ToString::to_string);
        let opened = !summary.input.starts_with("OPEN ERROR");
        assert!(
            error.is_some() || !opened,
            "cut at {cut}: a cut zstd stream replayed as if whole: {}",
            summary.to_text()
        );
    }
}

#[test]
fn corrupted_dbn_is_an_error_never_a_panic() {
    let bytes = v3_bytes();
    let second = bytes.len() - 56;
    // A record length of 1 word (shorter than a record header).
    let mut short = bytes.clone();
    short[second] = 1;
    let summary = replay_bytes(&short);
    let error = summary.error.as_ref().expect("corrupt length").to_string();
    assert!(
        error.contains(&format!("byte {second}, message 2")),
        "{error}"
    );
    // Every single-byte corruption of the file: an error or a replay, never a panic.
    for at in 0..bytes.len() {
        for value in [0x00u8, 0xff, 0x01] {
            let mut bad = bytes.clone();
            bad[at] = value;
            let _ = replay_bytes(&bad);
        }
    }
    // A version byte from the future: the metadata cannot be read.
    let mut future = bytes.clone();
    future[3] = 99;
    let summary = replay_bytes(&future);
    assert!(
        summary.input.starts_with("OPEN ERROR") && summary.input.contains("bad.dbn"),
        "{}",
        summary.input
    );
}
