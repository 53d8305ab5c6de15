//! GLIMPSE 5.0, the exchange's side: the state of the day after its first messages, as the
//! snapshot a GLIMPSE server sends (the protocol facts are `ticklane_feed::glimpse`'s).
//!
//! [`DayState`] follows the day message by message under the same rules as the books
//! (`ticklane-book`'s "The book rules", written again here from the rules, not shared with
//! the books, so that a snapshot start is checked against something the books did not
//! compute): executions and cancels take at most what an order has left, a message naming
//! a reference that is not live changes nothing, an add with 0 shares, a side other than
//! `B`/`S` or a live reference is refused, and a replace removes the original and adds the
//! new reference under the original's side, stock and locate.
//!
//! The snapshot holds, in this order: the stock directory (`R`, by locate), the system
//! events so far (`S`), each stock's latest trading action (`H`) and Reg SHO state (`Y`),
//! every live order as the add that made it (`A` or `F`) carrying the shares it still has
//! open, in time priority (the order the adds or replaces that made them arrived), then End
//! of Snapshot naming the first live sequence to apply.

use std::collections::{BTreeMap, HashMap};

use ticklane_feed::glimpse::end_of_snapshot;
use ticklane_feed::itch::{self, Message};

use crate::MessageLog;

/// Where the order reference sits in `A` and `F`.
const REF: std::ops::Range<usize> = 11..19;
/// Where the shares sit in `A` and `F`.
const SHARES: std::ops::Range<usize> = 20..24;
/// Where the price sits in `A` and `F`.
const PRICE: std::ops::Range<usize> = 32..36;
/// Where the timestamp sits in every message.
const TIMESTAMP: std::ops::Range<usize> = 5..11;

/// A live order: the add that made it (`A`, 36 bytes, or `F`, 40), its shares kept
/// current, and its place in time priority.
#[derive(Clone, Debug)]
struct LiveOrder {
    priority: u64,
    add: Vec<u8>,
}

impl LiveOrder {
    fn shares(&self) -> u32 {
        u32::from_be_bytes(self.add[SHARES].try_into().expect("4 bytes"))
    }

    fn set_shares(&mut self, shares: u32) {
        self.add[SHARES].copy_from_slice(&shares.to_be_bytes());
    }
}

/// The state of a day, message by message: what a GLIMPSE snapshot sends.
#[derive(Clone, Debug, Default)]
pub struct DayState {
    directory: BTreeMap<u16, Vec<u8>>,
    system_events: Vec<Vec<u8>>,
    trading: BTreeMap<u16, Vec<u8>>,
    reg_sho: BTreeMap<u16, Vec<u8>>,
    orders: HashMap<u64, LiveOrder>,
    next_priority: u64,
    applied: u64,
}

impl DayState {
    /// The state before the day's first message.
    pub fn new() -> Self {
        Self::default()
    }

    /// The state after the first `messages` messages of `log`.
    pub fn after(log: &MessageLog, messages: u64) -> Self {
        let mut state = DayState::new();
        for seq in 1..=messages {
            let Some(message) = log.get(seq) else { break };
            state.apply(message);
        }
        state
    }

    /// Messages applied so far (undecodable ones included: they change nothing).
    pub fn applied(&self) -> u64 {
        self.applied
    }

    /// Orders live now.
    pub fn live_orders(&self) -> usize {
        self.orders.len()
    }

    /// The shares `order_ref` has open, if it is live.
    pub fn open_shares(&self, order_ref: u64) -> Option<u32> {
        self.orders.get(&order_ref).map(LiveOrder::shares)
    }

    /// Follows one message.
    pub fn apply(&mut self, bytes: &[u8]) {
        self.applied += 1;
        let Ok(message) = itch::decode(bytes) else {
            return;
        };
        let locate = message.locate().0;
        match message {
            Message::StockDirectory(_) => {
                self.directory.insert(locate, bytes.to_vec());
            }
            Message::SystemEvent(_) => self.system_events.push(bytes.to_vec()),
            Message::StockTradingAction(_) => {
                self.trading.insert(locate, bytes.to_vec());
            }
            Message::RegShoRestriction(_) => {
                self.reg_sho.insert(locate, bytes.to_vec());
            }
            Message::AddOrder(m) => self.add(m.order_ref().0, m.side(), m.shares(), bytes),
            Message::AddOrderMpid(m) => self.add(m.order_ref().0, m.side(), m.shares(), bytes),
            Message::OrderExecuted(m) => self.take(m.order_ref().0, m.executed_shares()),
            Message::OrderExecutedWithPrice(m) => self.take(m.order_ref().0, m.executed_shares()),
            Message::OrderCancel(m) => self.take(m.order_ref().0, m.cancelled_shares()),
            Message::OrderDelete(m) => {
                self.orders.remove(&m.order_ref().0);
            }
            Message::OrderReplace(m) => {
                let Some(original) = self.orders.remove(&m.original_order_ref().0) else {
                    return;
                };
                let mut add = original.add;
                add[TIMESTAMP].copy_from_slice(&bytes[TIMESTAMP]);
                add[REF].copy_from_slice(&m.new_order_ref().0.to_be_bytes());
                add[PRICE].copy_from_slice(&m.price().0.to_be_bytes());
                add[SHARES].copy_from_slice(&m.shares().to_be_bytes());
                let side = add[19];
                self.add(m.new_order_ref().0, side, m.shares(), &add);
            }
            _ => {}
        }
    }

    /// An add under the add rules.
    fn add(&mut self, order_ref: u64, side: u8, shares: u32, add: &[u8]) {
        if shares == 0 || !matches!(side, b'B' | b'S') || self.orders.contains_key(&order_ref) {
            return;
        }
        self.next_priority += 1;
        self.orders.insert(
            order_ref,
            LiveOrder {
                priority: self.next_priority,
                add: add.to_vec(),
            },
        );
    }

    /// An execution or cancel: at most what the order has left; gone at 0.
    fn take(&mut self, order_ref: u64, shares: u32) {
        let Some(order) = self.orders.get_mut(&order_ref) else {
            return;
        };
        let left = order.shares().saturating_sub(shares);
        if left == 0 {
            self.orders.remove(&order_ref);
        } else {
            order.set_shares(left);
        }
    }

    /// The snapshot of this state, ending with End of Snapshot for `next_sequence`: the
    /// first live message to apply after it.
    pub fn snapshot(&self, next_sequence: u64) -> MessageLog {
        self.snapshot_as(next_sequence, SnapshotForm::default())
    }

    /// [`DayState::snapshot`], in `form`.
    pub fn snapshot_as(&self, next_sequence: u64, form: SnapshotForm) -> MessageLog {
        let mut orders: Vec<&LiveOrder> = self.orders.values().collect();
        orders.sort_unstable_by_key(|o| o.priority);
        let mut log = MessageLog::with_capacity(
            self.directory.len() * 3 + self.system_events.len() + orders.len() + 1,
            self.directory.len() * 100 + orders.len() * 40 + 64,
        );
        let state = self
            .directory
            .values()
            .chain(&self.system_events)
            .chain(self.trading.values())
            .chain(self.reg_sho.values())
            .chain(orders.iter().map(|o| &o.add));
        let mut zeroed = Vec::new();
        for message in state {
            let message = if form.locate_zero && LOCATE_ZERO_TYPES.contains(&message[0]) {
                // Bytes 1 and 2 are the stock locate in every ITCH 5.0 message.
                zeroed.clear();
                zeroed.extend_from_slice(message);
                zeroed[1..3].fill(0);
                &zeroed[..]
            } else {
                &message[..]
            };
            log.push(message)
                .expect("invariant: every kept message is a whole ITCH message");
        }
        let end = if form.malformed_end {
            *b"Gnot a sequence numbr"
        } else {
            end_of_snapshot(next_sequence)
        };
        log.push(&end)
            .expect("invariant: End of Snapshot is 21 bytes");
        log
    }
}

/// The GLIMPSE snapshot a server sends before live message `next_sequence` of `log`: the
/// state after messages `1 .. next_sequence`.
pub fn glimpse_snapshot(log: &MessageLog, next_sequence: u64) -> MessageLog {
    glimpse_snapshot_as(log, next_sequence, SnapshotForm::default())
}

/// [`glimpse_snapshot`], in `form`.
pub fn glimpse_snapshot_as(log: &MessageLog, next_sequence: u64, form: SnapshotForm) -> MessageLog {
    DayState::after(log, next_sequence.saturating_sub(1)).snapshot_as(next_sequence, form)
}

/// How a simulated GLIMPSE snapshot is sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SnapshotForm {
    /// End of Snapshot's sequence field is no number (a fault).
    pub malformed_end: bool,
    /// The stock directory, trading actions, Reg SHO states and orders carry stock locate
    /// 0, as some venues' GLIMPSE definitions send them: a handler learns each locate from
    /// the live stream.
    pub locate_zero: bool,
}

/// The snapshot's message types that carry stock locate 0 in [`SnapshotForm::locate_zero`].
const LOCATE_ZERO_TYPES: [u8; 5] = [b'R', b'H', b'Y', b'A', b'F'];
