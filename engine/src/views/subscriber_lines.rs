//! What `ticklane subscribe` prints: one line per message from the subscriber server, and
//! one per reconnect, gap or end.

use std::io::{self, Write};

use ticklane_feed::itch::Alpha;

use crate::book::{LevelView, Side};
use crate::serve::client::SubscriberEvent;
use crate::serve::protocol::{
    image_levels, ServerMessage, IMAGE_AT_DEPTH, IMAGE_MAYBE_BAD, IMAGE_STALE,
};

fn price(out: &mut impl Write, level: LevelView) -> io::Result<()> {
    write!(
        out,
        "{}.{:04} x {} ({})",
        level.price.0 / 10_000,
        level.price.0 % 10_000,
        level.qty,
        level.orders
    )
}

fn symbol(s: &[u8; 8]) -> String {
    String::from_utf8_lossy(Alpha::<8>::trim(s)).into_owned()
}

/// Writes one line for `event`.
///
/// # Errors
///
/// If `out` fails.
pub fn write_subscriber_event(out: &mut impl Write, event: &SubscriberEvent<'_>) -> io::Result<()> {
    match *event {
        SubscriberEvent::Connected { failed_attempts } => match failed_attempts {
            0 => writeln!(out, "connected"),
            1 => writeln!(out, "connected (after 1 failed attempt)"),
            n => writeln!(out, "connected (after {n} failed attempts in a row)"),
        },
        SubscriberEvent::Gap { expected, got } => {
            writeln!(out, "GAP: expected sequence {expected}, got {got}")
        }
        SubscriberEvent::Reconnecting {
            why,
            delay,
            server_asked,
        } => {
            let why = why.map_or_else(|| "could not connect".to_owned(), |w| w.to_string());
            let by = if server_asked {
                "as the server asked"
            } else {
                "backoff"
            };
            writeln!(
                out,
                "disconnected: {why}; reconnecting in {} ms ({by})",
                delay.as_millis()
            )
        }
        SubscriberEvent::Message(m) => write_message(out, &m),
    }
}

fn write_message(out: &mut impl Write, message: &ServerMessage<'_>) -> io::Result<()> {
    match *message {
        ServerMessage::BookImage { header, levels } => {
            let mut flags = String::new();
            if header.flags & IMAGE_STALE != 0 {
                flags.push_str(" STALE");
            }
            if header.flags & IMAGE_MAYBE_BAD != 0 {
                flags.push_str(" MAYBE_BAD");
            }
            if header.flags & IMAGE_AT_DEPTH != 0 {
                flags.push_str(" AT_DEPTH (the book may hold more: raise snapshot.depth)");
            }
            writeln!(
                out,
                "{} #{} image: state {} feed seq {}, {} bids, {} asks{flags}",
                symbol(&header.symbol),
                header.seq,
                char::from(if header.trading_state == 0 {
                    b'-'
                } else {
                    header.trading_state
                }),
                header.feed_seq,
                header.bid_levels,
                header.ask_levels
            )?;
            for (i, level) in image_levels(levels).enumerate() {
                let side = if i < usize::from(header.bid_levels) {
                    "bid"
                } else {
                    "ask"
                };
                write!(out, "  {side} ")?;
                price(out, level)?;
                writeln!(out)?;
            }
            Ok(())
        }
        ServerMessage::Quote {
            seq,
            symbol: s,
            top,
        } => {
            write!(out, "{} #{seq} quote ", symbol(&s))?;
            price(out, top.bid)?;
            write!(out, " / ")?;
            price(out, top.ask)?;
            writeln!(out)
        }
        ServerMessage::Level {
            seq,
            symbol: s,
            side,
            level,
        } => {
            let side = if side == Side::Bid { "bid" } else { "ask" };
            write!(out, "{} #{seq} {side} ", symbol(&s))?;
            price(out, level)?;
            writeln!(out)
        }
        ServerMessage::Trade {
            seq,
            symbol: s,
            price: p,
            shares,
        } => writeln!(
            out,
            "{} #{seq} trade {shares} @ {}.{:04}",
            symbol(&s),
            p.0 / 10_000,
            p.0 % 10_000
        ),
        ServerMessage::TradingState {
            seq,
            symbol: s,
            state,
            reason,
        } => writeln!(
            out,
            "{} #{seq} trading state {} ({})",
            symbol(&s),
            char::from(state),
            String::from_utf8_lossy(&reason).trim_end()
        ),
        ServerMessage::UnknownSymbol { symbol: s, .. } => {
            writeln!(out, "{}: no such instrument (yet)", symbol(&s))
        }
        ServerMessage::NotEntitled {
            seq,
            symbol: s,
            reason,
            ..
        } => writeln!(out, "{} #{seq} refused: {reason}", symbol(&s)),
        ServerMessage::RequestExpired { request_id } => {
            writeln!(out, "request {request_id} dropped: its budget ran out")
        }
        ServerMessage::SymbolList { symbols, .. } => {
            for s in symbols.chunks_exact(8) {
                writeln!(out, "{}", String::from_utf8_lossy(s).trim_end())?;
            }
            Ok(())
        }
        other => writeln!(out, "{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklane_feed::itch::Price;

    #[test]
    fn a_connection_says_how_many_attempts_failed_before_it_in_good_english() {
        let said = |failed_attempts| {
            let mut out = Vec::new();
            write_subscriber_event(&mut out, &SubscriberEvent::Connected { failed_attempts })
                .unwrap();
            String::from_utf8(out).unwrap()
        };
        assert_eq!(said(0), "connected\n");
        assert_eq!(said(1), "connected (after 1 failed attempt)\n");
        assert_eq!(said(3), "connected (after 3 failed attempts in a row)\n");
    }

    #[test]
    fn a_trade_and_a_level_print_as_one_line_each() {
        let mut out = Vec::new();
        let trade = ServerMessage::Trade {
            seq: 4,
            symbol: *b"AAPL    ",
            price: Price(1_234_500),
            shares: 100,
        };
        write_subscriber_event(&mut out, &SubscriberEvent::Message(trade)).unwrap();
        let level = ServerMessage::Level {
            seq: 5,
            symbol: *b"AAPL    ",
            side: Side::Ask,
            level: LevelView {
                price: Price(1_234_600),
                qty: 300,
                orders: 2,
            },
        };
        write_subscriber_event(&mut out, &SubscriberEvent::Message(level)).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "AAPL #4 trade 100 @ 123.4500\nAAPL #5 ask 123.4600 x 300 (2)\n"
        );
    }

    #[test]
    fn an_image_at_the_snapshots_depth_says_so() {
        let mut out = Vec::new();
        // One bid level (price 10.0000, 100 shares, 1 order), laid out as on the wire.
        let mut levels = Vec::new();
        levels.extend_from_slice(&100_000u32.to_be_bytes());
        levels.extend_from_slice(&100u64.to_be_bytes());
        levels.extend_from_slice(&1u32.to_be_bytes());
        let image = ServerMessage::BookImage {
            header: crate::serve::protocol::ImageHeader {
                seq: 1,
                request_id: 1,
                symbol: *b"AAPL    ",
                locate: 1,
                flags: 4,
                trading_state: b'T',
                feed_seq: 9,
                bid_levels: 1,
                ask_levels: 0,
            },
            levels: &levels,
        };
        write_subscriber_event(&mut out, &SubscriberEvent::Message(image)).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with(
                "AAPL #1 image: state T feed seq 9, 1 bids, 0 asks AT_DEPTH (the book may hold \
                 more: raise snapshot.depth)\n  bid 10.0000"
            ),
            "{text}"
        );
    }
}
