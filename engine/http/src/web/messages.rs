//! The JSON the WebSocket sends (sans-I/O: states in, text out).
//!
//! Server to browser, one JSON object per text message, told apart by `type`:
//!
//! - `book`: one book's image as the snapshot holds it, sent for every subscribed book on
//!   subscribe, and again whenever it changes (conflated: the latest state, never a
//!   backlog). Prices are ITCH integers (1/10,000 dollars); times that need more than 53
//!   bits are in milliseconds.
//! - `health`: the engine's health and lag, twice a second.
//! - `refused`: symbols the browser's account may not see (`reason` `"not entitled"`), may
//!   no longer see after a change of the accounts file (`"entitlement withdrawn"`: their
//!   books stop at once), or past its limit of books (`"too many subscriptions"`, with
//!   `max_subscriptions`; an empty `symbols` list: "every book" asked by an account with a
//!   limit, which must name its books). Only with accounts.
//!
//! Browser to server: `{"subscribe": ["AAPL", "MSFT"]}` (an empty list: every book).
#![forbid(unsafe_code)]

use serde_json::{json, Value};

use ticklane_book::LevelView;
use ticklane_pipeline::health::HealthReport;
use ticklane_snapshot::{InstrumentState, SnapshotHeader};

/// Most symbols one subscribe message may name.
pub const MAX_SUBSCRIBED_SYMBOLS: usize = 256;

/// A `book` message for `state`.
pub fn book_json(state: &InstrumentState) -> String {
    let levels = |side: &[LevelView]| -> Vec<Value> {
        side.iter()
            .map(|l| json!({"price": l.price.0, "qty": l.qty, "orders": l.orders}))
            .collect()
    };
    json!({
        "type": "book",
        "symbol": String::from_utf8_lossy(state.symbol.trimmed()),
        "locate": state.locate.0,
        "feed_seq": state.feed_seq,
        "exchange_ts_ns": state.exchange_ts.0,
        "updated_ms": state.updated_ns / 1_000_000,
        "trading_state": state.trading_state.map(|s| char::from(s).to_string()),
        "stale": state.flags.is_stale(),
        "maybe_bad": state.flags.is_maybe_bad(),
        "crossed": state.flags.is_crossed(),
        "bids": levels(&state.bids),
        "asks": levels(&state.asks),
        "last_trade": state.last_trade.map(|t| json!({"price": t.price.0, "shares": t.shares})),
        "trades": state.trades,
    })
    .to_string()
}

/// A `health` message: the process's health, and the snapshot header's view of the line
/// and of how far behind publication is. `now_ns` is wall-clock ns since the Unix epoch.
pub fn health_json(report: &HealthReport, header: &SnapshotHeader, now_ns: u64) -> String {
    let reasons: Vec<&str> = report.reasons.iter().map(|r| r.condition.name()).collect();
    json!({
        "type": "health",
        "state": report.state.name(),
        "draining": report.draining_since_ns.is_some(),
        "reasons": reasons,
        "line": header.line().map_or("unknown", |l| l.as_str()),
        "behind_us": header.behind_ns / 1_000,
        "heartbeat_age_ms": now_ns.saturating_sub(header.heartbeat_ns) / 1_000_000,
        "stale": header.is_stale(),
        "maybe_bad": header.is_maybe_bad(),
        "closed": header.is_closed(),
        "lost_messages": header.lost_messages,
        "now_ms": now_ns / 1_000_000,
    })
    .to_string()
}

/// A `refused` message: `symbols` refused for `reason`; `max_subscriptions`, the
/// account's limit of books, if it has one.
pub fn refused_json(symbols: &[Vec<u8>], reason: &str, max_subscriptions: Option<usize>) -> String {
    let symbols: Vec<_> = symbols.iter().map(|s| String::from_utf8_lossy(s)).collect();
    json!({
        "type": "refused",
        "symbols": symbols,
        "reason": reason,
        "max_subscriptions": max_subscriptions,
    })
    .to_string()
}

/// What a browser's text message asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BrowserRequest {
    /// These symbols (without padding); empty: every book.
    Subscribe(Vec<Vec<u8>>),
    /// Not a message this server knows: ignored.
    Unknown,
}

/// Parses a browser's text message; anything malformed is [`BrowserRequest::Unknown`].
pub fn parse_request(text: &str) -> BrowserRequest {
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        return BrowserRequest::Unknown;
    };
    let Some(list) = value.get("subscribe").and_then(Value::as_array) else {
        return BrowserRequest::Unknown;
    };
    if list.len() > MAX_SUBSCRIBED_SYMBOLS {
        return BrowserRequest::Unknown;
    }
    let symbols: Option<Vec<Vec<u8>>> = list
        .iter()
        .map(|s| {
            s.as_str()
                .map(str::trim)
                .filter(|s| !s.is_empty() && s.len() <= 8)
                .map(|s| s.as_bytes().to_vec())
        })
        .collect();
    symbols.map_or(BrowserRequest::Unknown, BrowserRequest::Subscribe)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklane_feed::itch::{Alpha, Locate, Nanos, Price};
    use ticklane_pipeline::health::{Condition, Health};
    use ticklane_snapshot::{LastTrade, SlotFlags};

    fn state() -> InstrumentState {
        InstrumentState {
            sequence: 4,
            symbol: Alpha(*b"AAPL    "),
            locate: Locate(3),
            trading_state: Some(b'T'),
            flags: SlotFlags(1), // bit 0: STALE (the slot layout in `snapshot::layout`)
            feed_seq: 99,
            exchange_ts: Nanos(34_200_000_000_000),
            updated_ns: 1_700_000_000_123_456_789,
            behind_since_ns: None,
            publishes: 2,
            bids: vec![LevelView {
                price: Price(1_234_500),
                qty: 300,
                orders: 2,
            }],
            asks: Vec::new(),
            last_trade: Some(LastTrade {
                price: Price(1_234_600),
                shares: 50,
                timestamp: Nanos(1),
            }),
            trades: 1,
            traded_shares: 50,
        }
    }

    #[test]
    fn a_book_image_carries_levels_flags_and_the_last_trade() {
        let v: Value = serde_json::from_str(&book_json(&state())).expect("json");
        // Expected values written from the state above, not from the encoder.
        assert_eq!(
            v,
            json!({
                "type": "book", "symbol": "AAPL", "locate": 3, "feed_seq": 99,
                "exchange_ts_ns": 34_200_000_000_000u64, "updated_ms": 1_700_000_000_123u64,
                "trading_state": "T", "stale": true, "maybe_bad": false, "crossed": false,
                "bids": [{"price": 1_234_500, "qty": 300, "orders": 2}], "asks": [],
                "last_trade": {"price": 1_234_600, "shares": 50}, "trades": 1
            })
        );
    }

    #[test]
    fn health_names_its_reasons_and_the_lag() {
        let health = Health::new();
        health.raise(Condition::LineStale, 5);
        let header = SnapshotHeader {
            behind_ns: 2_500_000,
            heartbeat_ns: 1_000_000_000,
            ..bytemuck::Zeroable::zeroed()
        };
        let v: Value = serde_json::from_str(&health_json(&health.report(), &header, 1_250_000_000))
            .expect("json");
        assert_eq!(v["state"], "Degraded");
        assert_eq!(v["reasons"], json!(["line_stale"]));
        assert_eq!(v["behind_us"], 2_500);
        assert_eq!(v["heartbeat_age_ms"], 250);
        assert_eq!(v["line"], "live");
    }

    #[test]
    fn subscribe_requests_are_parsed_and_garbage_is_ignored() {
        assert_eq!(
            parse_request(r#"{"subscribe": ["AAPL", " MSFT "]}"#),
            BrowserRequest::Subscribe(vec![b"AAPL".to_vec(), b"MSFT".to_vec()])
        );
        assert_eq!(
            parse_request(r#"{"subscribe": []}"#),
            BrowserRequest::Subscribe(vec![])
        );
        for bad in [
            "",
            "{",
            r#"{"subscribe": "AAPL"}"#,
            r#"{"subscribe": [1]}"#,
            r#"{"subscribe": ["TOOLONGSYM"]}"#,
            r#"{"other": 1}"#,
        ] {
            assert_eq!(parse_request(bad), BrowserRequest::Unknown, "{bad}");
        }
        let many = format!(r#"{{"subscribe": [{}]}}"#, vec!["\"A\""; 257].join(","));
        assert_eq!(parse_request(&many), BrowserRequest::Unknown);
    }
}
