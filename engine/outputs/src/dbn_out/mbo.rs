//! The MBO schema: every order event, normalised as Databento documents for XNAS.ITCH.
//!
//! | ITCH | MBO records (same `sequence`; `F_LAST` on the last) |
//! |---|---|
//! | `A`, `F` add | Add (`order_id` = the reference, side `B`/`A`) |
//! | `E` executed | Trade (`order_id` 0, side = aggressor, i.e. opposite the resting order), Fill (the resting order, its side), Cancel (the shares executed) |
//! | `C` executed with price | as `E`, at the execution price for Trade and Fill, the Cancel at the order's price; no Trade when non-printable |
//! | `X` cancel | Cancel with the shares cancelled |
//! | `D` delete | Cancel with the order's shares left |
//! | `U` replace | Cancel of the original reference (its shares left), then Add of the new one (same side and stock) |
//! | `P` trade (non-cross) | Trade (`order_id` 0, side `N`: Nasdaq's indicator is not the aggressor) |
//!
//! Executions and cancels take no more shares than the order has left (as the book does),
//! and one naming an unknown order writes nothing, as it changes nothing.

use std::ffi::c_char;

use dbn::{rtype, MboMsg, RecordHeader};
use ticklane_itch::{Locate, Message, OrderRef, Price};

use super::record_sink::RecordSink;
use super::{aggressor_char, price_1e9, side_char, Before, DbnOutError, Stamp, NO_SIDE};

/// Writes MBO records.
pub struct MboWriter;

/// One MBO event before stamping.
#[derive(Clone, Copy)]
struct Event {
    locate: Locate,
    action: u8,
    side: c_char,
    order_id: u64,
    price: Price,
    size: u32,
}

impl MboWriter {
    /// Writes the records of one message.
    pub(crate) fn write<S: RecordSink>(
        &mut self,
        spool: &mut S,
        stamp: Stamp,
        message: &Message<'_>,
        before: &Before,
    ) -> Result<(), DbnOutError> {
        let mut events = [None; 3];
        let add = |locate: Locate, side: u8, order_ref: OrderRef, shares: u32, price: Price| {
            let side = match side {
                b'B' => b'B' as c_char,
                b'S' => b'A' as c_char,
                _ => NO_SIDE,
            };
            Event {
                locate,
                action: b'A',
                side,
                order_id: order_ref.0,
                price,
                size: shares,
            }
        };
        match (message, before.order) {
            (Message::AddOrder(m), _) => {
                events[0] = Some(add(
                    m.locate(),
                    m.side(),
                    m.order_ref(),
                    m.shares(),
                    m.price(),
                ))
            }
            (Message::AddOrderMpid(m), _) => {
                events[0] = Some(add(
                    m.locate(),
                    m.side(),
                    m.order_ref(),
                    m.shares(),
                    m.price(),
                ))
            }
            (Message::OrderExecuted(m), Some(o)) => {
                let shares = m.executed_shares().min(o.shares);
                execution(&mut events, o, m.order_ref(), shares, o.price, true);
            }
            (Message::OrderExecutedWithPrice(m), Some(o)) => {
                let shares = m.executed_shares().min(o.shares);
                let printable = m.printable() == b'Y';
                execution(
                    &mut events,
                    o,
                    m.order_ref(),
                    shares,
                    m.execution_price(),
                    printable,
                );
            }
            (Message::OrderCancel(m), Some(o)) => {
                events[0] = Some(cancel(o, m.order_ref(), m.cancelled_shares().min(o.shares)));
            }
            (Message::OrderDelete(m), Some(o)) => {
                events[0] = Some(cancel(o, m.order_ref(), o.shares));
            }
            (Message::OrderReplace(m), Some(o)) => {
                events[0] = Some(cancel(o, m.original_order_ref(), o.shares));
                events[1] = Some(Event {
                    locate: o.locate,
                    action: b'A',
                    side: side_char(o.side),
                    order_id: m.new_order_ref().0,
                    price: m.price(),
                    size: m.shares(),
                });
            }
            (Message::Trade(m), _) => {
                events[0] = Some(Event {
                    locate: m.locate(),
                    action: b'T',
                    side: NO_SIDE,
                    order_id: 0,
                    price: m.price(),
                    size: m.shares(),
                });
            }
            _ => {}
        }
        let count = events.iter().flatten().count();
        for (i, event) in events.iter().flatten().enumerate() {
            let flags = stamp.flags(i + 1 == count);
            spool.push(&MboMsg {
                hd: RecordHeader::new::<MboMsg>(
                    rtype::MBO,
                    stamp.publisher_id,
                    u32::from(event.locate.0),
                    stamp.ts_event,
                ),
                order_id: event.order_id,
                price: price_1e9(event.price),
                size: event.size,
                flags,
                channel_id: 0,
                action: event.action as c_char,
                side: event.side,
                ts_recv: stamp.ts_recv,
                ts_in_delta: 0,
                sequence: stamp.sequence,
            })?;
        }
        Ok(())
    }
}

fn cancel(order: ticklane_book::Order, order_ref: OrderRef, shares: u32) -> Event {
    Event {
        locate: order.locate,
        action: b'C',
        side: side_char(order.side),
        order_id: order_ref.0,
        price: order.price,
        size: shares,
    }
}

/// Trade (if printable), Fill, Cancel: an execution of a resting order.
fn execution(
    events: &mut [Option<Event>; 3],
    order: ticklane_book::Order,
    order_ref: OrderRef,
    shares: u32,
    price: Price,
    printable: bool,
) {
    let mut i = 0;
    if printable {
        events[i] = Some(Event {
            locate: order.locate,
            action: b'T',
            side: aggressor_char(order.side),
            order_id: 0,
            price,
            size: shares,
        });
        i += 1;
    }
    events[i] = Some(Event {
        locate: order.locate,
        action: b'F',
        side: side_char(order.side),
        order_id: order_ref.0,
        price,
        size: shares,
    });
    events[i + 1] = Some(cancel(order, order_ref, shares));
}
