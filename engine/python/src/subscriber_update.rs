//! One event of a subscription as Python gets it: the Rust client's event copied out of its
//! frame on the client thread, then made a dict (its `type`, and the fields of that type)
//! when Python takes it.
#![forbid(unsafe_code)]

use pyo3::prelude::*;
use pyo3::types::PyDict;
use ticklane_engine::book::LevelView;
use ticklane_engine::serve::client::SubscriberEvent;
use ticklane_engine::serve::protocol::{
    image_levels, ServerMessage, IMAGE_AT_DEPTH, IMAGE_MAYBE_BAD, IMAGE_STALE,
};

/// A level as Python sees it: `(price, qty, orders)`.
type Level = (u32, u64, u32);

fn level(view: &LevelView) -> Level {
    (view.price.0, view.qty, view.orders)
}

/// A symbol's 8 space-padded bytes, trimmed.
fn symbol(bytes: &[u8; 8]) -> String {
    String::from_utf8_lossy(bytes.trim_ascii_end()).into_owned()
}

/// An event of the subscription, owned.
#[derive(Debug)]
pub enum Update {
    /// Logged in and subscribed.
    Connected { failed_attempts: u32 },
    /// A book's whole state: after each subscribe, and after the server conflated.
    Image {
        seq: u64,
        symbol: String,
        locate: u16,
        stale: bool,
        maybe_bad: bool,
        at_depth: bool,
        trading_state: Option<char>,
        feed_seq: u64,
        bids: Vec<Level>,
        asks: Vec<Level>,
    },
    /// The top of book changed.
    Quote {
        seq: u64,
        symbol: String,
        bid: Level,
        ask: Level,
    },
    /// A level changed (qty 0: it is gone).
    Level {
        seq: u64,
        symbol: String,
        side: char,
        level: Level,
    },
    /// A trade printed.
    Trade {
        seq: u64,
        symbol: String,
        price: u32,
        shares: u32,
    },
    /// The stock's trading state changed.
    TradingState {
        seq: u64,
        symbol: String,
        state: char,
        reason: String,
    },
    /// The server has no such symbol (yet): the client asks again.
    UnknownSymbol { symbol: String },
    /// The account may not follow the symbol.
    NotEntitled { symbol: String, reason: String },
    /// Sequenced messages were lost between `expected` and `got`.
    Gap { expected: u64, got: u64 },
    /// The session ended or could not start; the next attempt comes after `delay_ms`.
    Reconnecting {
        why: String,
        delay_ms: u64,
        server_asked: bool,
    },
}

impl Update {
    /// `event` as an update; `None` for what a follower has no use for (the login's answer,
    /// symbol lists, heartbeats, expired requests).
    pub fn of(event: &SubscriberEvent<'_>) -> Option<Update> {
        Some(match *event {
            SubscriberEvent::Connected { failed_attempts } => Update::Connected { failed_attempts },
            SubscriberEvent::Gap { expected, got } => Update::Gap { expected, got },
            SubscriberEvent::Reconnecting {
                why,
                delay,
                server_asked,
            } => Update::Reconnecting {
                why: why.map_or_else(|| "could not connect".to_owned(), |w| w.to_string()),
                delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                server_asked,
            },
            SubscriberEvent::Message(message) => return Update::of_message(&message),
        })
    }

    fn of_message(message: &ServerMessage<'_>) -> Option<Update> {
        Some(match *message {
            ServerMessage::BookImage { header, levels } => {
                let all: Vec<Level> = image_levels(levels).map(|l| level(&l)).collect();
                let bids = usize::from(header.bid_levels).min(all.len());
                Update::Image {
                    seq: header.seq,
                    symbol: symbol(&header.symbol),
                    locate: header.locate,
                    stale: header.flags & IMAGE_STALE != 0,
                    maybe_bad: header.flags & IMAGE_MAYBE_BAD != 0,
                    at_depth: header.flags & IMAGE_AT_DEPTH != 0,
                    trading_state: (header.trading_state != 0)
                        .then(|| char::from(header.trading_state)),
                    feed_seq: header.feed_seq,
                    asks: all[bids..].to_vec(),
                    bids: all[..bids].to_vec(),
                }
            }
            ServerMessage::Quote {
                seq,
                symbol: s,
                top,
            } => Update::Quote {
                seq,
                symbol: symbol(&s),
                bid: level(&top.bid),
                ask: level(&top.ask),
            },
            ServerMessage::Level {
                seq,
                symbol: s,
                side,
                level: l,
            } => Update::Level {
                seq,
                symbol: symbol(&s),
                side: side.letter(),
                level: level(&l),
            },
            ServerMessage::Trade {
                seq,
                symbol: s,
                price,
                shares,
            } => Update::Trade {
                seq,
                symbol: symbol(&s),
                price: price.0,
                shares,
            },
            ServerMessage::TradingState {
                seq,
                symbol: s,
                state,
                reason,
            } => Update::TradingState {
                seq,
                symbol: symbol(&s),
                state: char::from(state),
                reason: String::from_utf8_lossy(reason.trim_ascii_end()).into_owned(),
            },
            ServerMessage::UnknownSymbol { symbol: s, .. } => {
                Update::UnknownSymbol { symbol: symbol(&s) }
            }
            ServerMessage::NotEntitled {
                symbol: s, reason, ..
            } => Update::NotEntitled {
                symbol: symbol(&s),
                reason: reason.to_string(),
            },
            _ => return None,
        })
    }

    /// The update as a dict: `type`, then its fields.
    pub fn into_dict(self, py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
        let d = PyDict::new(py);
        match self {
            Update::Connected { failed_attempts } => {
                d.set_item("type", "connected")?;
                d.set_item("failed_attempts", failed_attempts)?;
            }
            Update::Image {
                seq,
                symbol,
                locate,
                stale,
                maybe_bad,
                at_depth,
                trading_state,
                feed_seq,
                bids,
                asks,
            } => {
                d.set_item("type", "image")?;
                d.set_item("seq", seq)?;
                d.set_item("symbol", symbol)?;
                d.set_item("locate", locate)?;
                d.set_item("stale", stale)?;
                d.set_item("maybe_bad", maybe_bad)?;
                d.set_item("at_depth", at_depth)?;
                d.set_item("trading_state", trading_state)?;
                d.set_item("feed_seq", feed_seq)?;
                d.set_item("bids", bids)?;
                d.set_item("asks", asks)?;
            }
            Update::Quote {
                seq,
                symbol,
                bid,
                ask,
            } => {
                d.set_item("type", "quote")?;
                d.set_item("seq", seq)?;
                d.set_item("symbol", symbol)?;
                d.set_item("bid", bid)?;
                d.set_item("ask", ask)?;
            }
            Update::Level {
                seq,
                symbol,
                side,
                level,
            } => {
                d.set_item("type", "level")?;
                d.set_item("seq", seq)?;
                d.set_item("symbol", symbol)?;
                d.set_item("side", side)?;
                d.set_item("level", level)?;
            }
            Update::Trade {
                seq,
                symbol,
                price,
                shares,
            } => {
                d.set_item("type", "trade")?;
                d.set_item("seq", seq)?;
                d.set_item("symbol", symbol)?;
                d.set_item("price", price)?;
                d.set_item("shares", shares)?;
            }
            Update::TradingState {
                seq,
                symbol,
                state,
                reason,
            } => {
                d.set_item("type", "trading_state")?;
                d.set_item("seq", seq)?;
                d.set_item("symbol", symbol)?;
                d.set_item("state", state)?;
                d.set_item("reason", reason)?;
            }
            Update::UnknownSymbol { symbol } => {
                d.set_item("type", "unknown_symbol")?;
                d.set_item("symbol", symbol)?;
            }
            Update::NotEntitled { symbol, reason } => {
                d.set_item("type", "not_entitled")?;
                d.set_item("symbol", symbol)?;
                d.set_item("reason", reason)?;
            }
            Update::Gap { expected, got } => {
                d.set_item("type", "gap")?;
                d.set_item("expected", expected)?;
                d.set_item("got", got)?;
            }
            Update::Reconnecting {
                why,
                delay_ms,
                server_asked,
            } => {
                d.set_item("type", "reconnecting")?;
                d.set_item("why", why)?;
                d.set_item("delay_ms", delay_ms)?;
                d.set_item("server_asked", server_asked)?;
            }
        }
        Ok(d)
    }
}
