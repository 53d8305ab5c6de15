//! `ticklane tail --capture FILE` at full speed prints every trade of the symbol asked, each
//! exactly once: a file has no real-time constraint, so the engine waits for its printing
//! consumer instead of cutting it loose. The expected trades are read out of the file here,
//! from the ITCH 5.0 byte offsets, not through the engine.

use std::collections::HashMap;
use std::io::{self, Write};

use ticklane_engine::pipeline::{Pace, PipelineConfig};
use ticklane_engine::tail::{tail_capture, SymbolFilter};
use ticklane_sim::{write_itch50, GenConfig};

/// One trade as the file states it: the message's 1-based index and the shares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct ExpectedTrade {
    index: u64,
    shares: u32,
}

fn be_u16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Every trade in a BinaryFILE day, by symbol: `E`, `C` marked printable, and `P`. Offsets
/// from the ITCH 5.0 specification: locate at 1; `R` stock at 11; `E` and `C` executed
/// shares at 19, `C` printable at 31; `P` shares at 20.
fn trades_by_symbol(day: &[u8]) -> HashMap<String, Vec<ExpectedTrade>> {
    let mut symbols: HashMap<u16, String> = HashMap::new();
    let mut trades: HashMap<String, Vec<ExpectedTrade>> = HashMap::new();
    let (mut at, mut index) = (0, 0u64);
    while at < day.len() {
        let len = usize::from(be_u16(day, at));
        let m = &day[at + 2..at + 2 + len];
        at += 2 + len;
        index += 1;
        let locate = be_u16(m, 1);
        let shares = match m[0] {
            b'R' => {
                let stock = String::from_utf8_lossy(&m[11..19]).trim_end().to_string();
                symbols.insert(locate, stock);
                continue;
            }
            b'E' => be_u32(m, 19),
            b'C' if m[31] == b'Y' => be_u32(m, 19),
            b'P' => be_u32(m, 20),
            _ => continue,
        };
        let symbol = symbols.get(&locate).cloned().unwrap_or_default();
        trades
            .entry(symbol)
            .or_default()
            .push(ExpectedTrade { index, shares });
    }
    trades
}

/// A consumer slower than the book thread: it gives up its time slice on every write, so
/// the engine outruns it by far unless it waits.
struct SlowTerminal(Vec<u8>);

impl Write for SlowTerminal {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        std::thread::yield_now();
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn every_trade_of_a_symbol_is_printed_exactly_once_at_max_pace() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("day.itch50");
    let config = GenConfig {
        messages: 100_000,
        seed: 8,
        stocks: 6,
        hard_cases: false,
        crossing: false,
    };
    let mut day = Vec::new();
    write_itch50(config, &mut day).expect("generate");
    std::fs::write(&path, &day).expect("write day");
    let expected = trades_by_symbol(&day);
    let (symbol, want) = expected
        .iter()
        .max_by_key(|(_, t)| t.len())
        .expect("the day has trades");
    assert!(
        want.len() > 1_000,
        "enough trades to outrun a consumer: {}",
        want.len()
    );

    let filter = SymbolFilter::parse(&format!("{symbol},NOSUCH"));
    let mut out = SlowTerminal(Vec::new());
    let pipeline = PipelineConfig {
        ring_slots: 1024,
        ..PipelineConfig::default()
    };
    let report = tail_capture(&path, Pace::Max, pipeline, &filter, &mut out).expect("tail");
    assert_eq!(report.messages, config.messages);
    assert_eq!(report.resubscribed, 0);

    let text = String::from_utf8(out.0).expect("utf-8");
    assert_eq!(text.lines().count() as u64, report.printed);
    let mut got: Vec<ExpectedTrade> = text
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(fields.get(2), Some(&symbol.as_str()), "{line}");
            (fields[3] == "TRADE").then(|| {
                let shares = fields[4].split('@').next().expect("shares@price");
                ExpectedTrade {
                    index: fields[0].parse().expect("sequence"),
                    shares: shares.parse().expect("shares"),
                }
            })
        })
        .collect();
    // Sorted, not deduplicated: a trade printed twice would show.
    got.sort_unstable();
    assert_eq!(got.len(), want.len(), "trades printed for {symbol}");
    assert_eq!(&got, want);

    assert_eq!(report.unseen_symbols, vec!["NOSUCH".to_string()]);
    let said = report.to_text();
    assert!(
        said.contains("symbol NOSUCH never appeared in the feed"),
        "{said}"
    );
    assert!(!said.contains(&format!("symbol {symbol} never")), "{said}");
}
