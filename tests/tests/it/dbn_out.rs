//! `replay --dbn-out`, read back by Databento's own Python package (`databento-dbn`, run by
//! `tests/oracle/dbn_dump.py`) and compared field by field with what the same replay says
//! elsewhere:
//! - MBO and trades against a naive order model written here from the ITCH messages and the
//!   mapping table Databento documents for XNAS.ITCH (Add; Trade, Fill, Cancel for an
//!   execution; Cancel for X and D; Cancel then Add for U; Trade for P);
//! - MBP-1's book updates against `--bbo-out`, and its trades' levels against the row before;
//! - TBBO against the model's trades and the `--bbo-out` row before each;
//! - MBP-10's last record per stock against `--book-out`'s depth;
//! - a `.zst` output against the plain one;
//! - `F_MAYBE_BAD_BOOK` on records after a hand-built pcap's declared MoldUDP64 gap.
//!
//! Without a Python that imports `databento_dbn` the test fails under `CI=true` and
//! otherwise skips loudly (`util::oracle::python_with`).

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use ticklane_engine::book::BookConfig;
use ticklane_engine::dbn_out::{DbnOutOptions, DbnSchema, ItchDataset, SessionDate};
use ticklane_engine::output_filter::OutputFilter;
use ticklane_engine::replay::{replay_file, replay_file_threaded, ReplayOptions, ReplaySummary};
use ticklane_feed::itch::{decode, Message};
use ticklane_sim::GenConfig;

use crate::util;

/// 2019-01-30 00:00 America/New_York, from `TZ=America/New_York date -d '2019-01-30 00:00' +%s`.
const MIDNIGHT_NS: u64 = 1_548_824_400 * 1_000_000_000;
const F_LAST: u8 = 128;
/// `databento_dbn.UNDEF_PRICE`: an empty level's price.
const UNDEF_PRICE: i64 = i64::MAX;

const DAY: GenConfig = GenConfig {
    messages: 60_000,
    seed: 12,
    stocks: 6,
    hard_cases: false,
    crossing: false,
};

/// One replay with every CSV output and one DBN output.
struct Run {
    bbo: PathBuf,
    book: PathBuf,
    dbn: PathBuf,
    /// The summary's `dbn_out_records`.
    records: Option<u64>,
}

fn replay(dir: &Path, input: &Path, schema: DbnSchema, name: &str) -> Run {
    let mut run = Run {
        records: None,
        bbo: dir.join(format!("{name}.bbo.csv")),
        book: dir.join(format!("{name}.book.csv")),
        dbn: dir.join(name),
    };
    let outcome = replay_file(&ReplayOptions {
        input: input.to_path_buf(),
        bbo_out: Some(run.bbo.clone()),
        book_out: Some(run.book.clone()),
        depth: 10,
        books: BookConfig {
            max_orders: 1 << 20,
            max_books: 1024,
            levels_per_side: 4096,
        },
        dbn_out: Some(DbnOutOptions {
            path: run.dbn.clone(),
            schema,
            date: SessionDate::parse("2019-01-30").expect("a valid date"),
            dataset: Default::default(),
        }),
        ..ReplayOptions::default()
    })
    .expect("replay runs");
    assert!(
        outcome.summary.error.is_none(),
        "{:?}",
        outcome.summary.error
    );
    assert!(
        !dir.join(format!("{name}.records.tmp")).exists(),
        "the spool is removed"
    );
    run.records = outcome.summary.dbn_out_records;
    let json = outcome.summary.to_json();
    let key = format!("\"dbn_out_records\":{},", run.records.unwrap_or(u64::MAX));
    assert!(json.contains(&key), "{key} in {json}");
    run
}

/// Metadata (JSON) and record lines, as Databento's reader sees the file.
fn dump(python: &Path, file: &Path) -> (String, Vec<Vec<String>>) {
    let out = util::oracle::run(python, "dbn_dump.py", &[file], &[]);
    let mut lines = out.lines();
    let metadata = lines.next().expect("a metadata line").to_owned();
    let records = lines
        .map(|l| l.split(',').map(str::to_owned).collect())
        .collect();
    (metadata, records)
}

/// A live order in the naive model.
#[derive(Clone, Copy)]
struct Live {
    locate: u16,
    /// DBN's letter: `B` or `A`.
    side: char,
    price: u32,
    shares: u32,
}

/// A trade as the model prints it.
#[derive(Clone, Debug, PartialEq)]
struct ModelTrade {
    sequence: u64,
    ts_event: u64,
    locate: u16,
    side: char,
    price: u32,
    shares: u32,
}

/// What the ITCH file says, read by a model that knows nothing of ticklane's books.
struct Model {
    /// Expected MBO record lines, in dump format.
    mbo: Vec<String>,
    trades: Vec<ModelTrade>,
    /// Ticker → locate, from the stock directory.
    symbols: HashMap<String, u16>,
}

fn other(side: char) -> char {
    if side == 'B' {
        'A'
    } else {
        'B'
    }
}

/// The ITCH message framed at `*at` in a file of 2-byte big-endian length prefixes, moving
/// `*at` past it; `None` at the end.
fn next_frame<'a>(bytes: &'a [u8], at: &mut usize) -> Option<&'a [u8]> {
    let prefix = bytes.get(*at..*at + 2)?;
    let len = usize::from(u16::from_be_bytes([prefix[0], prefix[1]]));
    let body = bytes.get(*at + 2..*at + 2 + len)?;
    *at += 2 + len;
    Some(body)
}

fn model(file: &Path) -> Model {
    let bytes = fs::read(file).expect("read the day");
    let mut orders: HashMap<u64, Live> = HashMap::new();
    let mut m = Model {
        mbo: Vec::new(),
        trades: Vec::new(),
        symbols: HashMap::new(),
    };
    let mut at = 0;
    let mut sequence = 0u64;
    while let Some(body) = next_frame(&bytes, &mut at) {
        sequence += 1;
        let message = decode(body).expect("generated messages decode");
        let ts = MIDNIGHT_NS + message.timestamp().0;
        // (locate, action, side, order_id, price, size)
        let mut events: Vec<(u16, char, char, u64, u32, u32)> = Vec::new();
        let trade = |m: &mut Model, locate, side, price, shares| {
            m.trades.push(ModelTrade {
                sequence,
                ts_event: ts,
                locate,
                side,
                price,
                shares,
            })
        };
        let add = |orders: &mut HashMap<u64, Live>, locate, side: u8, r, shares, price| {
            let side = if side == b'B' { 'B' } else { 'A' };
            if shares > 0 && !orders.contains_key(&r) {
                orders.insert(
                    r,
                    Live {
                        locate,
                        side,
                        price,
                        shares,
                    },
                );
            }
            (locate, 'A', side, r, price, shares)
        };
        match message {
            Message::StockDirectory(d) => {
                let ticker = String::from_utf8_lossy(d.stock().trimmed()).into_owned();
                m.symbols.insert(ticker, d.locate().0);
            }
            Message::AddOrder(a) => {
                let e = add(
                    &mut orders,
                    a.locate().0,
                    a.side(),
                    a.order_ref().0,
                    a.shares(),
                    a.price().0,
                );
                events.push(e);
            }
            Message::AddOrderMpid(a) => {
                let e = add(
                    &mut orders,
                    a.locate().0,
                    a.side(),
                    a.order_ref().0,
                    a.shares(),
                    a.price().0,
                );
                events.push(e);
            }
            Message::OrderExecuted(x) => {
                let r = x.order_ref().0;
                if let Some(o) = orders.get(&r).copied() {
                    let n = x.executed_shares().min(o.shares);
                    trade(&mut m, o.locate, other(o.side), o.price, n);
                    events.push((o.locate, 'T', other(o.side), 0, o.price, n));
                    events.push((o.locate, 'F', o.side, r, o.price, n));
                    events.push((o.locate, 'C', o.side, r, o.price, n));
                    reduce(&mut orders, r, n);
                }
            }
            Message::OrderExecutedWithPrice(x) => {
                let r = x.order_ref().0;
                if let Some(o) = orders.get(&r).copied() {
                    let n = x.executed_shares().min(o.shares);
                    let px = x.execution_price().0;
                    if x.printable() == b'Y' {
                        trade(&mut m, o.locate, other(o.side), px, n);
                        events.push((o.locate, 'T', other(o.side), 0, px, n));
                    }
                    events.push((o.locate, 'F', o.side, r, px, n));
                    events.push((o.locate, 'C', o.side, r, o.price, n));
                    reduce(&mut orders, r, n);
                }
            }
            Message::OrderCancel(x) => {
                let r = x.order_ref().0;
                if let Some(o) = orders.get(&r).copied() {
                    let n = x.cancelled_shares().min(o.shares);
                    events.push((o.locate, 'C', o.side, r, o.price, n));
                    reduce(&mut orders, r, n);
                }
            }
            Message::OrderDelete(x) => {
                let r = x.order_ref().0;
                if let Some(o) = orders.remove(&r) {
                    events.push((o.locate, 'C', o.side, r, o.price, o.shares));
                }
            }
            Message::OrderReplace(x) => {
                let r = x.original_order_ref().0;
                if let Some(o) = orders.remove(&r) {
                    events.push((o.locate, 'C', o.side, r, o.price, o.shares));
                    let wire = if o.side == 'B' { b'B' } else { b'S' };
                    let e = add(
                        &mut orders,
                        o.locate,
                        wire,
                        x.new_order_ref().0,
                        x.shares(),
                        x.price().0,
                    );
                    events.push(e);
                }
            }
            Message::Trade(p) => {
                trade(&mut m, p.locate().0, 'N', p.price().0, p.shares());
                events.push((p.locate().0, 'T', 'N', 0, p.price().0, p.shares()));
            }
            _ => {}
        }
        let count = events.len();
        for (i, (locate, action, side, id, price, size)) in events.into_iter().enumerate() {
            let flags = if i + 1 == count { F_LAST } else { 0 };
            let price = i64::from(price) * 100_000;
            m.mbo.push(format!(
                "160,{locate},{ts},{ts},0,{sequence},{flags},{action},{side},{id},{price},{size}"
            ));
        }
    }
    m
}

fn reduce(orders: &mut HashMap<u64, Live>, r: u64, n: u32) {
    if let Some(o) = orders.get_mut(&r) {
        o.shares -= n;
        if o.shares == 0 {
            orders.remove(&r);
        }
    }
}

/// A `--bbo-out` row: msg_index, locate, then bid px/qty/orders and ask px/qty/orders.
type BboRow = (u64, u16, [u64; 6]);

fn bbo_rows(path: &Path) -> Vec<BboRow> {
    fs::read_to_string(path)
        .expect("read bbo")
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let n = |i: usize| f[i].parse::<u64>().expect("a number");
            (n(0), n(2) as u16, [n(4), n(5), n(6), n(7), n(8), n(9)])
        })
        .collect()
}

/// A DBN level in ticklane's CSV units: price in 1e-4 (empty as 0), size, count.
fn level(fields: &[String]) -> [u64; 6] {
    let px = |s: &str| -> u64 {
        let p: i64 = s.parse().expect("a price");
        if p == UNDEF_PRICE {
            0
        } else {
            assert_eq!(p % 100_000, 0, "DBN price {p} is a whole ITCH price");
            (p / 100_000) as u64
        }
    };
    let n = |s: &str| s.parse::<u64>().expect("a number");
    [
        px(&fields[0]),
        n(&fields[1]),
        n(&fields[2]),
        px(&fields[3]),
        n(&fields[4]),
        n(&fields[5]),
    ]
}

/// An MBP-1 file's book updates (its records but the trades) as `--bbo-out` rows.
fn mbp1_updates(records: &[Vec<String>]) -> Vec<BboRow> {
    records
        .iter()
        .filter(|r| r[7] != "T")
        .map(|r| {
            (
                r[5].parse().unwrap(),
                r[1].parse().unwrap(),
                level(&r[12..18]),
            )
        })
        .collect()
}

/// The last `--bbo-out` row of `locate` before message `sequence` (all zero if none).
fn bbo_before(rows: &[BboRow], locate: u16, sequence: u64) -> [u64; 6] {
    rows.iter()
        .rev()
        .find(|(i, l, _)| *l == locate && *i < sequence)
        .map_or([0; 6], |r| r.2)
}

/// Every sequence's records: `F_LAST` on the last one only.
fn check_f_last(records: &[Vec<String>]) {
    for (i, r) in records.iter().enumerate() {
        let last_of_message = records.get(i + 1).is_none_or(|next| next[5] != r[5]);
        let flags: u8 = r[6].parse().expect("flags");
        assert_eq!(flags & F_LAST != 0, last_of_message, "F_LAST on {r:?}");
    }
}

fn trade_line(t: &ModelTrade, rtype: u8) -> Vec<String> {
    let price = i64::from(t.price) * 100_000;
    vec![
        rtype.to_string(),
        t.locate.to_string(),
        t.ts_event.to_string(),
        t.ts_event.to_string(),
        "0".into(),
        t.sequence.to_string(),
        F_LAST.to_string(),
        "T".into(),
        t.side.to_string(),
        "0".into(),
        price.to_string(),
        t.shares.to_string(),
    ]
}

#[test]
fn dbn_output_reads_back_with_databento_dbn_and_matches_the_csv() {
    let test = "dbn_output_reads_back_with_databento_dbn_and_matches_the_csv";
    let Some(python) = util::oracle::python_with(test, "databento_dbn", "databento-dbn") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("day.itch50");
    util::write_generated(&input, DAY);
    let expected = model(&input);
    assert!(expected.trades.len() > 100, "the day trades");

    // MBO: record for record against the model; metadata names the dataset and the symbols.
    let mbo = replay(dir.path(), &input, DbnSchema::Mbo, "day.mbo.dbn");
    let (metadata, records) = dump(&python, &mbo.dbn);
    let got: Vec<String> = records.iter().map(|r| r.join(",")).collect();
    assert_eq!(got.len(), expected.mbo.len(), "MBO record count");
    assert_eq!(
        mbo.records,
        Some(records.len() as u64),
        "summary's record count"
    );
    for (g, e) in got.iter().zip(&expected.mbo) {
        assert_eq!(g, e);
    }
    for want in [
        "\"dataset\": \"XNAS.ITCH\"".to_owned(),
        "\"schema\": \"mbo\"".to_owned(),
        format!("\"start\": {MIDNIGHT_NS}"),
    ] {
        assert!(metadata.contains(&want), "{want} in {metadata}");
    }
    for (ticker, locate) in &expected.symbols {
        let want = format!("\"{ticker}\": [[\"2019-01-30\", \"2019-01-31\", \"{locate}\"]]");
        assert!(metadata.contains(&want), "{want} in {metadata}");
    }

    // The same file zstd-compressed reads back the same.
    let zst = replay(dir.path(), &input, DbnSchema::Mbo, "day.mbo.dbn.zst");
    let raw = fs::read(&zst.dbn).expect("read zst");
    assert_eq!(&raw[..4], &[0x28, 0xB5, 0x2F, 0xFD], "a zstd frame");
    assert_eq!(
        dump(&python, &zst.dbn).1,
        records,
        ".zst reads back as the plain file"
    );

    // MBP-1: book updates are the top-of-book stream; trades carry the top before them.
    let mbp1 = replay(dir.path(), &input, DbnSchema::Mbp1, "day.mbp1.dbn");
    let bbo = bbo_rows(&mbp1.bbo);
    let (_, records) = dump(&python, &mbp1.dbn);
    check_f_last(&records);
    let updates = mbp1_updates(&records);
    assert_eq!(
        updates.len(),
        bbo.len(),
        "one MBP-1 update per top-of-book row"
    );
    assert_eq!(updates, bbo);
    let trades: Vec<&Vec<String>> = records.iter().filter(|r| r[7] == "T").collect();
    assert_eq!(trades.len(), expected.trades.len());
    for (r, t) in trades.iter().zip(&expected.trades) {
        let mut want = trade_line(t, 1);
        want[6] = r[6].clone(); // F_LAST checked above
        assert_eq!(&r[..12], &want[..], "MBP-1 trade");
        assert_eq!(level(&r[12..18]), bbo_before(&bbo, t.locate, t.sequence));
    }

    // TBBO: each trade with the top of book before it.
    let tbbo = replay(dir.path(), &input, DbnSchema::Tbbo, "day.tbbo.dbn");
    let (metadata, records) = dump(&python, &tbbo.dbn);
    assert!(metadata.contains("\"schema\": \"tbbo\""), "{metadata}");
    assert_eq!(records.len(), expected.trades.len());
    for (r, t) in records.iter().zip(&expected.trades) {
        assert_eq!(&r[..12], &trade_line(t, 1)[..], "TBBO trade");
        assert_eq!(level(&r[12..18]), bbo_before(&bbo, t.locate, t.sequence));
    }

    // Trades: each trade, as the model prints it.
    let trades = replay(dir.path(), &input, DbnSchema::Trades, "day.trades.dbn.zst");
    let (_, records) = dump(&python, &trades.dbn);
    let want: Vec<Vec<String>> = expected.trades.iter().map(|t| trade_line(t, 0)).collect();
    assert_eq!(records, want);

    // MBP-10: each stock's last record holds the final depth of --book-out.
    let mbp10 = replay(dir.path(), &input, DbnSchema::Mbp10, "day.mbp10.dbn");
    let (_, records) = dump(&python, &mbp10.dbn);
    assert_eq!(
        mbp10.records,
        Some(records.len() as u64),
        "summary's record count"
    );
    check_f_last(&records);
    let mut last: HashMap<u16, &Vec<String>> = HashMap::new();
    for r in &records {
        last.insert(r[1].parse().unwrap(), r);
    }
    let book = fs::read_to_string(&mbp10.book).expect("read book");
    let mut from_csv: HashMap<(u16, usize), [u64; 6]> = HashMap::new();
    for l in book.lines().skip(1) {
        let f: Vec<&str> = l.split(',').collect();
        let (locate, side, lvl) = (
            f[0].parse::<u16>().unwrap(),
            f[2],
            f[3].parse::<usize>().unwrap(),
        );
        let n = |i: usize| f[i].parse::<u64>().unwrap();
        let entry = from_csv.entry((locate, lvl)).or_insert([0; 6]);
        let at = if side == "B" { 0 } else { 3 };
        entry[at..at + 3].copy_from_slice(&[n(4), n(5), n(6)]);
    }
    assert!(!from_csv.is_empty(), "the book CSV has levels");
    for (locate, r) in &last {
        for lvl in 0..10 {
            let key = (*locate, lvl + 1); // --book-out counts levels from 1
            let want = from_csv.get(&key).copied().unwrap_or([0; 6]);
            let at = 12 + 6 * lvl;
            assert_eq!(level(&r[at..at + 6]), want, "locate {locate} level {lvl}");
        }
    }
}

#[test]
fn mbp1_has_an_update_for_every_top_of_book_row_even_past_dbn_sizes() {
    let test = "mbp1_has_an_update_for_every_top_of_book_row_even_past_dbn_sizes";
    let Some(python) = util::oracle::python_with(test, "databento_dbn", "databento-dbn") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("day.itch50");
    // The hard cases pile shares on one level past a DBN size (`u32`): 473 of this day's
    // top-of-book rows have such a level. A record whose written size stayed at the limit
    // used to be left out though the book had changed there.
    util::write_generated(
        &input,
        GenConfig {
            hard_cases: true,
            ..DAY
        },
    );
    let mbp1 = replay(dir.path(), &input, DbnSchema::Mbp1, "day.mbp1.dbn");
    let bbo = bbo_rows(&mbp1.bbo);
    let past = |qty: u64| qty > u64::from(u32::MAX);
    assert!(
        bbo.iter()
            .filter(|(_, _, l)| past(l[1]) || past(l[4]))
            .count()
            > 100,
        "the day has levels past a DBN size"
    );
    let (_, records) = dump(&python, &mbp1.dbn);
    let updates = mbp1_updates(&records);
    // The CSV's sizes as DBN can hold them: saturated at `u32::MAX`.
    let written: Vec<BboRow> = bbo
        .iter()
        .map(|&(i, locate, mut l)| {
            for at in [1, 4] {
                l[at] = l[at].min(u64::from(u32::MAX));
            }
            (i, locate, l)
        })
        .collect();
    assert_eq!(
        updates.len(),
        written.len(),
        "one update per top-of-book row"
    );
    assert_eq!(updates, written);
}

/// An ITCH add order (`A`, 36 bytes) laid out by hand from the spec.
fn add_order(locate: u16, order_ref: u64, ts: u64) -> Vec<u8> {
    let mut m = vec![b'A'];
    m.extend_from_slice(&locate.to_be_bytes());
    m.extend_from_slice(&0u16.to_be_bytes());
    m.extend_from_slice(&ts.to_be_bytes()[2..]);
    m.extend_from_slice(&order_ref.to_be_bytes());
    m.push(b'B');
    m.extend_from_slice(&100u32.to_be_bytes());
    m.extend_from_slice(b"ABCD    ");
    m.extend_from_slice(&1_000_000u32.to_be_bytes());
    assert_eq!(m.len(), 36);
    m
}

#[test]
fn records_after_a_declared_gap_carry_f_maybe_bad_book() {
    let test = "records_after_a_declared_gap_carry_f_maybe_bad_book";
    let Some(python) = util::oracle::python_with(test, "databento_dbn", "databento-dbn") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    // MoldUDP64 packets with sequences 1 and 4: messages 2 and 3 were dropped.
    let mut pcap = ticklane_feed::capture::PcapWriter::new(Vec::new()).expect("pcap");
    let src = std::net::SocketAddrV4::new([10, 0, 0, 1].into(), 1000);
    let dst = std::net::SocketAddrV4::new([233, 54, 12, 1].into(), 26400);
    for (seq, order_ref) in [(1u64, 11u64), (4, 12)] {
        let m = add_order(1, order_ref, 34_200_000_000_000 + seq);
        let mut p = b"SESSION001".to_vec();
        p.extend_from_slice(&seq.to_be_bytes());
        p.extend_from_slice(&1u16.to_be_bytes());
        p.extend_from_slice(&(m.len() as u16).to_be_bytes());
        p.extend_from_slice(&m);
        pcap.write_udp(1_548_858_600_000_000_000 + seq, src, dst, &p)
            .expect("write packet");
    }
    let input = dir.path().join("gap.pcap");
    fs::write(&input, pcap.finish().expect("finish pcap")).expect("write pcap");
    let dbn = dir.path().join("gap.mbo.dbn");
    let outcome = replay_file(&ReplayOptions {
        input,
        dbn_out: Some(DbnOutOptions {
            path: dbn.clone(),
            schema: DbnSchema::Mbo,
            date: SessionDate::parse("2019-01-30").expect("a valid date"),
            dataset: Default::default(),
        }),
        ..ReplayOptions::default()
    })
    .expect("replay runs");
    assert_eq!(
        outcome.summary.declared_lost_messages(),
        2,
        "the gap is declared"
    );
    let (_, records) = dump(&python, &dbn);
    assert_eq!(records.len(), 2, "{records:?}");
    // Field 6 is flags: F_LAST (128) on both; F_MAYBE_BAD_BOOK (4) only after the gap.
    assert_eq!(records[0][6], "128", "before the gap: {:?}", records[0]);
    assert_eq!(records[1][6], "132", "after the gap: {:?}", records[1]);
}

/// One MBP-10 level: (bid_px, bid_sz, bid_ct, ask_px, ask_sz, ask_ct).
type Level6 = [i64; 6];

/// A stock's top ten levels as MBP-10 carries them, read from scratch off `books`; an empty
/// level is `UNDEF_PRICE`, 0, 0.
fn top_ten(
    books: &ticklane_engine::book::Books,
    locate: ticklane_feed::itch::Locate,
) -> Vec<Level6> {
    use ticklane_engine::book::Side;
    let mut out = vec![[UNDEF_PRICE, 0, 0, UNDEF_PRICE, 0, 0]; 10];
    for (side, at) in [(Side::Bid, 0), (Side::Ask, 3)] {
        if let Some(view) = books.side(locate, side) {
            for (row, l) in out.iter_mut().zip(view.best_first()) {
                row[at] = i64::from(l.price.0) * 100_000;
                row[at + 1] = i64::try_from(l.qty.min(u64::from(u32::MAX))).unwrap();
                row[at + 2] = i64::from(l.orders);
            }
        }
    }
    out
}

#[test]
fn every_mbp10_record_holds_the_top_ten_as_read_from_scratch_and_none_is_missing() {
    // Hard cases (replaces across levels, executions that empty levels, deep books): the
    // MBP-10 writer keeps each stock's levels and updates them in place; here they are read
    // afresh from a second set of books after every message, with Databento's own Rust
    // decoder reading the file.
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("hard.itch50");
    util::write_generated(
        &input,
        GenConfig {
            messages: 40_000,
            seed: 5,
            stocks: 4,
            hard_cases: true,
            crossing: false,
        },
    );
    let run = replay(dir.path(), &input, DbnSchema::Mbp10, "hard.mbp10.dbn");
    let mut decoder = dbn::decode::DbnDecoder::from_file(&run.dbn).expect("open the DBN");
    // Per sequence: each record's action and levels.
    let mut records: HashMap<u32, Vec<(u8, Vec<Level6>)>> = HashMap::new();
    while let Some(r) =
        dbn::decode::DecodeRecord::decode_record::<dbn::Mbp10Msg>(&mut decoder).expect("decode")
    {
        let levels = r
            .levels
            .iter()
            .map(|l| {
                [
                    l.bid_px,
                    i64::from(l.bid_sz),
                    i64::from(l.bid_ct),
                    l.ask_px,
                    i64::from(l.ask_sz),
                    i64::from(l.ask_ct),
                ]
            })
            .collect();
        records
            .entry(r.sequence)
            .or_default()
            .push((r.action as u8, levels));
    }
    let mut books = ticklane_engine::book::Books::new(BookConfig {
        max_orders: 1 << 20,
        max_books: 1024,
        levels_per_side: 4096,
    })
    .expect("books");
    let bytes = fs::read(&input).expect("read the day");
    let (mut at, mut sequence, mut updates) = (0, 0u32, 0);
    while let Some(body) = next_frame(&bytes, &mut at) {
        let message = decode(body).expect("generated messages decode");
        sequence += 1;
        let locate = message.locate();
        let before = top_ten(&books, locate);
        books.apply(&message);
        let after = top_ten(&books, locate);
        let mine = records.remove(&sequence).unwrap_or_default();
        for (action, levels) in &mine {
            let want = if *action == b'T' { &before } else { &after };
            assert_eq!(
                levels, want,
                "message {sequence}, action {}",
                *action as char
            );
        }
        let updated = mine.iter().any(|(action, _)| *action != b'T');
        assert_eq!(
            updated,
            before != after,
            "message {sequence}: an update record iff the top ten moved"
        );
        updates += usize::from(updated);
    }
    assert!(
        records.is_empty(),
        "records of no message: {:?}",
        records.keys()
    );
    assert!(updates > 10_000, "{updates} book updates checked");
}

/// The metadata and MBO records of a plain DBN file, as the `dbn` crate's decoder reads them.
fn decode_mbo(path: &Path) -> (dbn::Metadata, Vec<dbn::MboMsg>) {
    use dbn::decode::{DbnMetadata, DecodeRecord};
    let mut decoder = dbn::decode::DbnDecoder::from_file(path).expect("open the DBN file");
    let metadata = decoder.metadata().clone();
    let mut records = Vec::new();
    while let Some(r) = decoder.decode_record::<dbn::MboMsg>().expect("decode") {
        records.push(*r);
    }
    (metadata, records)
}

/// `input` replayed to an MBO file at `out` on `threads` book threads, keeping what
/// `filter` keeps.
fn replay_mbo(input: &Path, out: &Path, filter: OutputFilter, threads: usize) -> ReplaySummary {
    let opts = ReplayOptions {
        input: input.to_path_buf(),
        books: BookConfig {
            max_orders: 1 << 20,
            max_books: 1024,
            levels_per_side: 4096,
        },
        dbn_out: Some(DbnOutOptions {
            path: out.to_path_buf(),
            schema: DbnSchema::Mbo,
            date: SessionDate::parse("2019-01-30").expect("a valid date"),
            dataset: Default::default(),
        }),
        filter,
        ..ReplayOptions::default()
    };
    match threads {
        1 => replay_file(&opts).expect("replay runs").summary,
        n => replay_file_threaded(&opts, n).expect("replay runs").summary,
    }
}

/// Under `--symbols` and `--between` the metadata says what the file holds: the symbols
/// kept and their mappings only, from the window's start to its end (the day goes on past
/// it), on one book thread and on two.
#[test]
fn the_metadata_under_symbols_and_between_names_only_what_the_file_holds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("day.itch50");
    util::write_generated(&input, DAY);
    let (whole, records) = decode_mbo(&{
        let out = dir.path().join("whole.dbn");
        replay_mbo(&input, &out, OutputFilter::default(), 1);
        out
    });
    assert!(whole.symbols.len() > 1, "a day of several stocks");
    // A stock that trades in the middle of the day, and the middle half of the day.
    let middle = &records[records.len() / 2];
    let mapping = whole
        .mappings
        .iter()
        .find(|m| m.intervals[0].symbol == middle.hd.instrument_id.to_string())
        .expect("every instrument is mapped");
    let (first, last) = (
        records[0].hd.ts_event,
        records[records.len() - 1].hd.ts_event,
    );
    let (from, to) = (first + (last - first) / 4, first + 3 * (last - first) / 4);
    let between = format!(
        "{}-{}",
        util::time_of_day(from - MIDNIGHT_NS),
        util::time_of_day(to - MIDNIGHT_NS)
    );
    let filter = OutputFilter::parse(&mapping.raw_symbol, &between).expect("a valid filter");
    for threads in [1, 2] {
        let out = dir.path().join(format!("filtered.{threads}.dbn"));
        replay_mbo(&input, &out, filter.clone(), threads);
        let (metadata, kept) = decode_mbo(&out);
        assert_eq!(metadata.symbols, vec![mapping.raw_symbol.clone()]);
        assert_eq!(metadata.mappings, vec![mapping.clone()]);
        assert_eq!(metadata.start, from, "the window's start");
        assert_eq!(metadata.end.map(|e| e.get()), Some(to), "the window's end");
        assert!(!kept.is_empty(), "the stock trades in the window");
        for r in &kept {
            assert_eq!(r.hd.instrument_id.to_string(), mapping.intervals[0].symbol);
            assert!((from..to).contains(&r.hd.ts_event), "{r:?}");
        }
    }
}

/// A replay whose input fails part-way finishes its DBN file (metadata, and every record
/// made before the failure, which are the whole input's first records) but leaves it as
/// `PATH.partial`; an earlier `PATH` stays as it was. On one book thread and on two.
#[test]
fn after_a_failed_input_the_dbn_file_is_finished_under_its_partial_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("day.itch50");
    util::write_generated(&input, DAY);
    let whole = dir.path().join("whole.dbn");
    replay_mbo(&input, &whole, OutputFilter::default(), 1);
    let (_, all) = decode_mbo(&whole);
    // Cut inside the last message.
    let mut bytes = fs::read(&input).expect("read the day");
    bytes.truncate(bytes.len() - 3);
    let cut = dir.path().join("cut.itch50");
    fs::write(&cut, &bytes).expect("write the cut day");
    for threads in [1, 2] {
        let out = dir.path().join(format!("cut.{threads}.dbn"));
        fs::write(&out, b"an earlier run").expect("write");
        let summary = replay_mbo(&cut, &out, OutputFilter::default(), threads);
        assert!(summary.error.is_some(), "the cut input fails");
        assert_eq!(fs::read(&out).expect("read"), b"an earlier run");
        let partial = dir.path().join(format!("cut.{threads}.dbn.partial"));
        let (metadata, records) = decode_mbo(&partial);
        assert_eq!(Some(records.len() as u64), summary.dbn_out_records);
        assert!(!records.is_empty() && records.len() <= all.len());
        assert_eq!(
            records,
            all[..records.len()],
            "the whole input's first records"
        );
        let last = records[records.len() - 1].hd.ts_event;
        assert!(metadata.end.is_some_and(|e| e.get() > last));
    }
}

/// A capture's records carry what the capture knows: `ts_recv` the packet's capture time,
/// `sequence` the message's MoldUDP64 sequence number (1 and 4 here: 2 and 3 were lost, so
/// the message indexes are 1 and 2), and the dataset and publisher asked for (XBOS.ITCH,
/// publisher 3, from Databento's table). On one book thread and on two.
#[test]
fn a_capture_s_records_carry_its_capture_time_sequence_and_venue() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut pcap = ticklane_feed::capture::PcapWriter::new(Vec::new()).expect("pcap");
    let src = std::net::SocketAddrV4::new([10, 0, 0, 1].into(), 1000);
    let dst = std::net::SocketAddrV4::new([233, 54, 12, 1].into(), 26400);
    // 09:30 plus a few ns, captured 1.5 µs (and then some) after the event.
    let packets = [(1u64, 11u64), (4, 12)].map(|(seq, order_ref)| {
        let itch_ns = 34_200_000_000_000 + seq;
        (
            seq,
            order_ref,
            itch_ns,
            MIDNIGHT_NS + itch_ns + 1_500 + 7 * seq,
        )
    });
    for &(seq, order_ref, itch_ns, capture_ns) in &packets {
        let m = add_order(1, order_ref, itch_ns);
        let mut p = b"SESSION001".to_vec();
        p.extend_from_slice(&seq.to_be_bytes());
        p.extend_from_slice(&1u16.to_be_bytes());
        p.extend_from_slice(&(m.len() as u16).to_be_bytes());
        p.extend_from_slice(&m);
        pcap.write_udp(capture_ns, src, dst, &p)
            .expect("write packet");
    }
    let input = dir.path().join("capture.pcap");
    fs::write(&input, pcap.finish().expect("finish pcap")).expect("write pcap");
    for threads in [1, 2] {
        let out = dir.path().join(format!("capture.{threads}.mbo.dbn"));
        let opts = ReplayOptions {
            input: input.clone(),
            dbn_out: Some(DbnOutOptions {
                path: out.clone(),
                schema: DbnSchema::Mbo,
                date: SessionDate::parse("2019-01-30").expect("a valid date"),
                dataset: ItchDataset::XbosItch,
            }),
            ..ReplayOptions::default()
        };
        match threads {
            1 => replay_file(&opts).map(|o| o.summary),
            n => replay_file_threaded(&opts, n).map(|o| o.summary),
        }
        .expect("replay runs");
        let (metadata, records) = decode_mbo(&out);
        assert_eq!(metadata.dataset, "XBOS.ITCH");
        let got: Vec<_> = records
            .iter()
            .map(|r| (r.sequence, r.hd.ts_event, r.ts_recv, r.hd.publisher_id))
            .collect();
        let expected: Vec<_> = packets
            .iter()
            .map(|&(seq, _, itch_ns, capture_ns)| {
                (seq as u32, MIDNIGHT_NS + itch_ns, capture_ns, 3)
            })
            .collect();
        assert_eq!(got, expected, "(sequence, ts_event, ts_recv, publisher_id)");
    }
}
