//! Synthetic but valid ITCH 5.0 flow, deterministic for a seed.
//!
//! The flow looks like a trading day in miniature: system events and the stock directory
//! first, then adds clustered near the touch, cancels and deletes, executions at the touch
//! that sometimes sweep several levels, replaces, hidden and cross trades, and every other
//! message type now and then. Optional hard cases break naive books: prices near the top of
//! the 32-bit range, share counts whose level sums pass 2^32, references reused after their
//! order was deleted, a start in the middle of the day (references to orders never seen,
//! over-sized executions), and, separately, flow with no matching engine behind it, so
//! books cross.
//!
//! The generator never emits reference 0, zero-share or zero-price adds, or an add whose
//! reference is live: those are tested against ticklane's own model, since independent
//! implementations disagree on them.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use flate2::write::GzEncoder;
use flate2::Compression;

use super::error::SimError;
use super::rng::SplitMix64;
use ticklane_feed::itch::owned::{self, Message};
use ticklane_feed::itch::{Alpha, Locate, MatchNumber, Nanos, OrderRef, Price, Price8, Stock};

/// What to generate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GenConfig {
    /// Messages in total (the directory and system events included).
    pub messages: u64,
    /// Seed: the same seed and settings give the same bytes.
    pub seed: u64,
    /// Number of stocks (locates 1 ..= stocks).
    pub stocks: u16,
    /// Prices near 2^32, level sums above 2^32, reused references, a mid-day start.
    pub hard_cases: bool,
    /// Adds that cross the opposite touch and are never matched.
    pub crossing: bool,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            messages: 100_000,
            seed: 1,
            stocks: 8,
            hard_cases: true,
            crossing: false,
        }
    }
}

/// The shape of the generated day. [`Profile::Small`] is the generator as it always was (the
/// same seed gives the same bytes); [`Profile::FullDay`] is shaped like a whole Nasdaq day.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Profile {
    /// A few busy stocks, tight books, a mix weighted towards executions.
    #[default]
    Small,
    /// A Nasdaq day's shape (meant for [`FULL_DAY_STOCKS`] stocks): activity Zipf-like by
    /// stock (exponent [`FULL_DAY_ZIPF`], so a few hundred names carry most messages), the
    /// published mix of a day (adds about 44%, deletes 43%, replaces 8%, executions and
    /// cancels most of the rest, a percent of other types), wide books on the names outside
    /// the busiest 5% (adds spread over hundreds of ticks), and a day's shape: live orders
    /// climb through the morning to [`FULL_DAY_PEAK_SHARE`] of the day's messages, resting
    /// far from the touch on thousands of names, and drain at the close.
    FullDay,
}

impl Profile {
    /// The stocks a day of this shape has when none are asked for: 8, or
    /// [`FULL_DAY_STOCKS`].
    pub fn default_stocks(self) -> u16 {
        match self {
            Profile::Small => 8,
            Profile::FullDay => FULL_DAY_STOCKS,
        }
    }
}

impl std::str::FromStr for Profile {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "small" => Ok(Profile::Small),
            "full-day" => Ok(Profile::FullDay),
            other => Err(format!("unknown profile {other:?} (small, full-day)")),
        }
    }
}

/// Stocks in Nasdaq's directory on a typical day: the full-day profile's default.
pub const FULL_DAY_STOCKS: u16 = 8_900;
/// The full-day profile's activity exponent: stock `i` (0-based, busiest first) is picked
/// with weight `(i + 1)^-FULL_DAY_ZIPF`.
pub const FULL_DAY_ZIPF: f64 = 1.1;

/// The full-day profile's live orders at the peak, as a share of the day's messages: a
/// 50,000,000-message day peaks near 2,500,000 live orders.
pub const FULL_DAY_PEAK_SHARE: f64 = 0.05;
/// The full-day profile's shape, as shares of the day's messages: live orders climb to the
/// peak until [`FULL_DAY_BUILD_END`], hold until [`FULL_DAY_DRAIN_START`], then drain to
/// [`FULL_DAY_CLOSE_LEFT`] of the peak at the last message.
pub const FULL_DAY_BUILD_END: f64 = 0.3;
/// See [`FULL_DAY_BUILD_END`].
pub const FULL_DAY_DRAIN_START: f64 = 0.8;
/// The share of the peak still live at the close (good-till-cancelled orders).
pub const FULL_DAY_CLOSE_LEFT: f64 = 0.1;
/// The exponent of the weights that place resting orders (stock `i` with weight
/// `(i + 1)^-FULL_DAY_RESTING_ZIPF`): much flatter than activity, so the busiest name holds
/// about half a percent of them on 8,900 stocks and the quietest a tenth of that share.
pub const FULL_DAY_RESTING_ZIPF: f64 = 0.5;
/// Resting orders are placed this many ticks or more from their side's touch ...
const RESTING_MIN_TICKS: u64 = 5;
/// ... and fewer than this many, so a side keeps a bounded number of levels.
const RESTING_MAX_TICKS: u64 = 250;

/// 9:30:00 ET in nanoseconds since midnight.
const MARKET_OPEN: u64 = 34_200_000_000_000;
/// References below this are "from before the capture started" in a mid-day start.
const MID_DAY_FIRST_REF: u64 = 1_000_000;

#[derive(Clone, Copy, Debug)]
struct GenOrder {
    stock: usize,
    bid: bool,
    price: u32,
    shares: u32,
    /// Position in the stock's `live` list.
    live_pos: usize,
    /// Position in the generator's `all_live` list.
    all_pos: usize,
}

#[derive(Debug)]
struct StockState {
    locate: Locate,
    symbol: Stock,
    tick: u32,
    reference: u32,
    bids: BTreeMap<u32, VecDeque<u64>>,
    asks: BTreeMap<u32, VecDeque<u64>>,
    live: Vec<u64>,
    target_live: usize,
}

impl StockState {
    fn best_bid(&self) -> Option<u32> {
        self.bids.keys().next_back().copied()
    }
    fn best_ask(&self) -> Option<u32> {
        self.asks.keys().next().copied()
    }
}

/// Produces the messages of one synthetic file, in order.
#[derive(Debug)]
pub struct Generator {
    config: GenConfig,
    rng: SplitMix64,
    emitted: u64,
    clock: u64,
    stocks: Vec<StockState>,
    orders: HashMap<u64, GenOrder>,
    next_ref: u64,
    /// Recently deleted references, candidates for reuse.
    freed: Vec<u64>,
    next_match: u64,
    pending: VecDeque<Message>,
    epilogue_started: bool,
    profile: Profile,
    /// Full day: cumulative activity weights by stock (the last is the total); empty otherwise.
    activity: Vec<u64>,
    /// Full day: cumulative weights by stock for orders resting far from the touch (flatter
    /// than `activity`, so thousands of names hold them); empty otherwise.
    resting: Vec<u64>,
    /// Every live order's reference, in no order: what the close's deletes draw from.
    all_live: Vec<u64>,
}

impl Generator {
    /// A generator for `config`, in the [`Profile::Small`] shape.
    pub fn new(config: GenConfig) -> Self {
        Generator::with_profile(config, Profile::Small)
    }

    /// A generator for `config` in the shape of `profile`.
    pub fn with_profile(config: GenConfig, profile: Profile) -> Self {
        let mut rng = SplitMix64::new(config.seed);
        let stock_count = usize::from(config.stocks.max(1));
        let stocks = (0..stock_count)
            .map(|i| {
                let extreme = config.hard_cases && i == stock_count - 1 && stock_count > 1;
                let (tick, reference) = if extreme {
                    // A price ladder at the very top of Price(4)'s range.
                    (10_000, u32::MAX - 2_000_000)
                } else {
                    (100, 100_000 + (rng.below(4_000) as u32) * 100)
                };
                StockState {
                    locate: Locate(i as u16 + 1),
                    symbol: symbol_for(i),
                    tick,
                    reference,
                    bids: BTreeMap::new(),
                    asks: BTreeMap::new(),
                    live: Vec::new(),
                    target_live: 40 + rng.below(200) as usize,
                }
            })
            .collect();
        let mut g = Generator {
            config,
            rng,
            emitted: 0,
            clock: MARKET_OPEN - 3_600_000_000_000,
            stocks,
            orders: HashMap::new(),
            next_ref: if config.hard_cases {
                MID_DAY_FIRST_REF
            } else {
                1
            },
            freed: Vec::new(),
            next_match: 1,
            pending: VecDeque::new(),
            epilogue_started: false,
            profile,
            activity: Vec::new(),
            resting: Vec::new(),
            all_live: Vec::new(),
        };
        if profile == Profile::FullDay {
            g.activity = zipf_cumulative(g.stocks.len(), FULL_DAY_ZIPF);
            g.resting = zipf_cumulative(g.stocks.len(), FULL_DAY_RESTING_ZIPF);
        }
        g.queue_preamble();
        g
    }

    fn stamp(&mut self) -> Nanos {
        self.clock += 1 + self.rng.below(3_000);
        Nanos(self.clock.min(Nanos::MAX.0))
    }

    fn system_event(&mut self, code: u8) -> Message {
        let timestamp = self.stamp();
        Message::SystemEvent(owned::SystemEvent {
            timestamp,
            event_code: code,
            ..Default::default()
        })
    }

    fn queue_preamble(&mut self) {
        let m = self.system_event(b'O');
        self.pending.push_back(m);
        let timestamp = self.stamp();
        self.pending
            .push_back(Message::MwcbDeclineLevel(owned::MwcbDeclineLevel {
                timestamp,
                level1: Price8(3_000 * 100_000_000),
                level2: Price8(2_800 * 100_000_000),
                level3: Price8(2_600 * 100_000_000),
                ..Default::default()
            }));
        let m = self.system_event(b'S');
        self.pending.push_back(m);
        for i in 0..self.stocks.len() {
            let (locate, stock) = (self.stocks[i].locate, self.stocks[i].symbol);
            let timestamp = self.stamp();
            self.pending
                .push_back(Message::StockDirectory(owned::StockDirectory {
                    locate,
                    timestamp,
                    stock,
                    market_category: b'Q',
                    financial_status: b'N',
                    round_lot_size: 100,
                    round_lots_only: b'N',
                    issue_classification: b'C',
                    issue_subtype: Alpha(*b"Z "),
                    authenticity: b'P',
                    short_sale_threshold: b'N',
                    ipo_flag: b' ',
                    luld_reference_price_tier: b'1',
                    etp_flag: b'N',
                    etp_leverage_factor: 0,
                    inverse_indicator: b'N',
                    ..Default::default()
                }));
            let timestamp = self.stamp();
            self.pending
                .push_back(Message::StockTradingAction(owned::StockTradingAction {
                    locate,
                    timestamp,
                    stock,
                    trading_state: b'T',
                    reserved: b' ',
                    reason: Alpha(*b"    "),
                    ..Default::default()
                }));
        }
        let m = self.system_event(b'Q');
        self.pending.push_back(m);
        self.clock = self.clock.max(MARKET_OPEN);
        if self.config.hard_cases {
            self.queue_mid_day_orphans();
        }
    }

    /// Modifications of orders added before the capture began: every reference is unknown.
    fn queue_mid_day_orphans(&mut self) {
        let count = (self.config.messages / 200).clamp(1, 2_000);
        for _ in 0..count {
            let stock = self.pick_stock();
            let locate = self.stocks[stock].locate;
            let order_ref = OrderRef(1 + self.rng.below(MID_DAY_FIRST_REF - 1));
            let timestamp = self.stamp();
            let m = match self.rng.below(4) {
                0 => Message::OrderDelete(owned::OrderDelete {
                    locate,
                    timestamp,
                    order_ref,
                    ..Default::default()
                }),
                1 => Message::OrderCancel(owned::OrderCancel {
                    locate,
                    timestamp,
                    order_ref,
                    cancelled_shares: 100,
                    ..Default::default()
                }),
                2 => {
                    let match_number = self.next_match();
                    Message::OrderExecuted(owned::OrderExecuted {
                        locate,
                        timestamp,
                        order_ref,
                        executed_shares: 100,
                        match_number,
                        ..Default::default()
                    })
                }
                _ => {
                    // The new reference must not collide with one this file adds later.
                    let new_order_ref = OrderRef(1 + self.rng.below(MID_DAY_FIRST_REF - 1));
                    Message::OrderReplace(owned::OrderReplace {
                        locate,
                        timestamp,
                        original_order_ref: order_ref,
                        new_order_ref,
                        shares: 100,
                        price: Price(self.stocks[stock].reference),
                        ..Default::default()
                    })
                }
            };
            self.pending.push_back(m);
        }
    }

    fn next_match(&mut self) -> MatchNumber {
        self.next_match += 1;
        MatchNumber(self.next_match)
    }

    /// Busier stocks first: activity falls off with the stock's index (Zipf-like in the
    /// full-day profile).
    fn pick_stock(&mut self) -> usize {
        if let Some(&total) = self.activity.last() {
            let x = self.rng.below(total);
            return self.activity.partition_point(|&c| c <= x);
        }
        let n = self.stocks.len() as u64;
        let a = self.rng.below(n);
        let b = self.rng.below(n);
        a.min(b) as usize
    }

    /// Whether `stock` is outside the busiest 5% of a full day: its book is wide.
    fn wide_book(&self, stock: usize) -> bool {
        self.profile == Profile::FullDay && stock >= self.stocks.len().div_ceil(20)
    }

    fn new_ref(&mut self) -> u64 {
        if self.config.hard_cases && !self.freed.is_empty() && self.rng.chance(0.05) {
            let i = self.rng.below(self.freed.len() as u64) as usize;
            return self.freed.swap_remove(i);
        }
        let r = self.next_ref;
        self.next_ref += 1 + self.rng.below(3);
        r
    }

    fn share_count(&mut self) -> u32 {
        if self.config.hard_cases && self.rng.chance(0.002) {
            // Two of these at one level pass 2^32.
            return 3_000_000_000 + self.rng.below(1_000_000_000) as u32;
        }
        match self.rng.below(10) {
            0 => 1 + self.rng.below(99) as u32,
            1..=7 => 100 * (1 + self.rng.below(10) as u32),
            _ => 100 * (1 + self.rng.below(100) as u32),
        }
    }

    /// A limit price near the touch of `bid`'s side, inside the non-crossing bound unless
    /// crossing flow was asked for. `None` if no valid price exists (a one-tick market).
    fn add_price(&mut self, stock: usize, bid: bool) -> Option<u32> {
        let s = &self.stocks[stock];
        let tick = s.tick;
        let (own, other) = if bid {
            (s.best_bid(), s.best_ask())
        } else {
            (s.best_ask(), s.best_bid())
        };
        let distance = if self.wide_book(stock) {
            self.rng.geometric(0.02, 400)
        } else {
            self.rng.geometric(0.35, 40)
        };
        let improve = self.rng.chance(0.12);
        let anchor = own.or(other).unwrap_or(s.reference);
        let step = i64::from(tick);
        let mut price = if own.is_none() || !improve {
            let behind = i64::from(distance + u32::from(own.is_none() && other.is_some()));
            if bid {
                i64::from(anchor) - behind * step
            } else {
                i64::from(anchor) + behind * step
            }
        } else if bid {
            i64::from(anchor) + step
        } else {
            i64::from(anchor) - step
        };
        if self.config.crossing && self.rng.chance(0.02) {
            if let Some(o) = other {
                price = if bid {
                    i64::from(o) + i64::from(distance) * step
                } else {
                    i64::from(o) - i64::from(distance) * step
                };
            }
        } else if let Some(o) = other {
            // Keep the book uncrossed: a bid strictly below the ask, and vice versa.
            let o = i64::from(o);
            price = if bid {
                price.min(o - step)
            } else {
                price.max(o + step)
            };
        }
        let max = i64::from(u32::MAX - u32::MAX % tick);
        (price >= i64::from(tick) && price <= max).then_some(price as u32)
    }

    fn rest(&mut self, stock: usize, order_ref: u64, bid: bool, price: u32, shares: u32) {
        let s = &mut self.stocks[stock];
        let live_pos = s.live.len();
        s.live.push(order_ref);
        let side = if bid { &mut s.bids } else { &mut s.asks };
        side.entry(price).or_default().push_back(order_ref);
        let all_pos = self.all_live.len();
        self.all_live.push(order_ref);
        self.orders.insert(
            order_ref,
            GenOrder {
                stock,
                bid,
                price,
                shares,
                live_pos,
                all_pos,
            },
        );
    }

    /// Takes `shares` off a live order; drops it when none are left.
    fn take(&mut self, order_ref: u64, shares: u32) {
        let Some(o) = self.orders.get_mut(&order_ref) else {
            return;
        };
        if shares < o.shares {
            o.shares -= shares;
            return;
        }
        let o = *o;
        self.orders.remove(&order_ref);
        let s = &mut self.stocks[o.stock];
        s.live.swap_remove(o.live_pos);
        if let Some(&moved) = s.live.get(o.live_pos) {
            if let Some(m) = self.orders.get_mut(&moved) {
                m.live_pos = o.live_pos;
            }
        }
        self.all_live.swap_remove(o.all_pos);
        if let Some(&moved) = self.all_live.get(o.all_pos) {
            if let Some(m) = self.orders.get_mut(&moved) {
                m.all_pos = o.all_pos;
            }
        }
        let side = if o.bid { &mut s.bids } else { &mut s.asks };
        if let Some(queue) = side.get_mut(&o.price) {
            queue.retain(|&r| r != order_ref);
            if queue.is_empty() {
                side.remove(&o.price);
            }
        }
        if self.freed.len() < 4_096 {
            self.freed.push(order_ref);
        }
    }

    fn random_live(&mut self, stock: usize) -> Option<u64> {
        let live = &self.stocks[stock].live;
        if live.is_empty() {
            return None;
        }
        Some(live[self.rng.below(live.len() as u64) as usize])
    }

    fn gen_add(&mut self, stock: usize) -> Option<Message> {
        let bid = self.rng.chance(0.5);
        let price = self.add_price(stock, bid)?;
        let shares = self.share_count();
        let order_ref = self.new_ref();
        self.rest(stock, order_ref, bid, price, shares);
        Some(self.add_message(stock, order_ref, bid, price, shares))
    }

    /// The add (A, or F one time in ten) of an order just rested.
    fn add_message(
        &mut self,
        stock: usize,
        order_ref: u64,
        bid: bool,
        price: u32,
        shares: u32,
    ) -> Message {
        let s = &self.stocks[stock];
        let (locate, symbol) = (s.locate, s.symbol);
        let timestamp = self.stamp();
        let side = if bid { b'B' } else { b'S' };
        if self.rng.chance(0.1) {
            Message::AddOrderMpid(owned::AddOrderMpid {
                locate,
                timestamp,
                order_ref: OrderRef(order_ref),
                side,
                shares,
                stock: symbol,
                price: Price(price),
                attribution: Alpha(*b"NITE"),
                ..Default::default()
            })
        } else {
            Message::AddOrder(owned::AddOrder {
                locate,
                timestamp,
                order_ref: OrderRef(order_ref),
                side,
                shares,
                stock: symbol,
                price: Price(price),
                ..Default::default()
            })
        }
    }

    fn gen_delete(&mut self, stock: usize) -> Option<Message> {
        let order_ref = self.random_live(stock)?;
        Some(self.delete_message(order_ref))
    }

    /// Takes a live order out whole and says so.
    fn delete_message(&mut self, order_ref: u64) -> Message {
        let o = self.orders[&order_ref];
        self.take(order_ref, o.shares);
        let (locate, timestamp) = (self.stocks[o.stock].locate, self.stamp());
        Message::OrderDelete(owned::OrderDelete {
            locate,
            timestamp,
            order_ref: OrderRef(order_ref),
            ..Default::default()
        })
    }

    fn gen_cancel(&mut self, stock: usize) -> Option<Message> {
        let order_ref = self.random_live(stock)?;
        let left = self.orders[&order_ref].shares;
        let cancelled = 1 + self.rng.below(u64::from(left)) as u32;
        self.take(order_ref, cancelled);
        let (locate, timestamp) = (self.stocks[stock].locate, self.stamp());
        Some(Message::OrderCancel(owned::OrderCancel {
            locate,
            timestamp,
            order_ref: OrderRef(order_ref),
            cancelled_shares: cancelled,
            ..Default::default()
        }))
    }

    /// Executions against the front of the best level of one side; sometimes a sweep
    /// through several levels.
    fn gen_executions(&mut self, stock: usize) -> Option<Message> {
        let bid = self.rng.chance(0.5);
        let sweep = self.rng.chance(0.08);
        let mut wanted: u64 = if sweep {
            u64::from(self.share_count()) * 20
        } else {
            u64::from(self.share_count())
        };
        let locate = self.stocks[stock].locate;
        while wanted > 0 {
            let s = &self.stocks[stock];
            let level = if bid {
                s.bids.iter().next_back()
            } else {
                s.asks.iter().next()
            };
            let Some((&price, queue)) = level else { break };
            let Some(&order_ref) = queue.front() else {
                break;
            };
            let left = self.orders[&order_ref].shares;
            let exec = wanted.min(u64::from(left)) as u32;
            wanted -= u64::from(exec);
            let over = self.config.hard_cases && exec == left && self.rng.chance(0.02);
            let executed_shares = if over { exec.saturating_add(100) } else { exec };
            self.take(order_ref, exec);
            let timestamp = self.stamp();
            let match_number = self.next_match();
            let m = if self.rng.chance(0.1) {
                Message::OrderExecutedWithPrice(owned::OrderExecutedWithPrice {
                    locate,
                    timestamp,
                    order_ref: OrderRef(order_ref),
                    executed_shares,
                    match_number,
                    printable: if self.rng.chance(0.8) { b'Y' } else { b'N' },
                    execution_price: Price(price),
                    ..Default::default()
                })
            } else {
                Message::OrderExecuted(owned::OrderExecuted {
                    locate,
                    timestamp,
                    order_ref: OrderRef(order_ref),
                    executed_shares,
                    match_number,
                    ..Default::default()
                })
            };
            self.pending.push_back(m);
            if !sweep {
                break;
            }
        }
        self.pending.pop_front()
    }

    fn gen_replace(&mut self, stock: usize) -> Option<Message> {
        let original = self.random_live(stock)?;
        let o = self.orders[&original];
        self.take(original, o.shares);
        let price = self.add_price(stock, o.bid)?;
        let shares = self.share_count();
        let new_ref = self.new_ref();
        self.rest(stock, new_ref, o.bid, price, shares);
        let (locate, timestamp) = (self.stocks[stock].locate, self.stamp());
        Some(Message::OrderReplace(owned::OrderReplace {
            locate,
            timestamp,
            original_order_ref: OrderRef(original),
            new_order_ref: OrderRef(new_ref),
            shares,
            price: Price(price),
            ..Default::default()
        }))
    }

    /// Messages that leave the book alone: trades against hidden orders, crosses, breaks,
    /// and the administrative types.
    fn gen_other(&mut self, stock: usize) -> Message {
        let s = &self.stocks[stock];
        let (locate, stock_sym) = (s.locate, s.symbol);
        let price = Price(s.best_bid().or(s.best_ask()).unwrap_or(s.reference));
        let timestamp = self.stamp();
        match self.rng.below(16) {
            0..=4 => {
                let match_number = self.next_match();
                Message::Trade(owned::Trade {
                    locate,
                    timestamp,
                    order_ref: OrderRef(0),
                    side: b'B',
                    shares: 100 * (1 + self.rng.below(5) as u32),
                    stock: stock_sym,
                    price,
                    match_number,
                    ..Default::default()
                })
            }
            5 => {
                let match_number = self.next_match();
                Message::CrossTrade(owned::CrossTrade {
                    locate,
                    timestamp,
                    shares: 5_000_000_000 + self.rng.below(1_000),
                    stock: stock_sym,
                    cross_price: price,
                    match_number,
                    cross_type: b'O',
                    ..Default::default()
                })
            }
            6 => Message::BrokenTrade(owned::BrokenTrade {
                locate,
                timestamp,
                match_number: MatchNumber(1 + self.rng.below(self.next_match)),
                ..Default::default()
            }),
            7 => Message::Noii(owned::Noii {
                locate,
                timestamp,
                paired_shares: self.rng.below(1_000_000),
                imbalance_shares: self.rng.below(100_000),
                imbalance_direction: b'B',
                stock: stock_sym,
                far_price: price,
                near_price: price,
                current_reference_price: price,
                cross_type: b'C',
                price_variation_indicator: b'L',
                ..Default::default()
            }),
            8 => Message::RetailInterest(owned::RetailInterest {
                locate,
                timestamp,
                stock: stock_sym,
                interest_flag: b'B',
                ..Default::default()
            }),
            9 => Message::MarketParticipantPosition(owned::MarketParticipantPosition {
                locate,
                timestamp,
                mpid: Alpha(*b"GSCO"),
                stock: stock_sym,
                primary_market_maker: b'Y',
                market_maker_mode: b'N',
                market_participant_state: b'A',
                ..Default::default()
            }),
            10 => Message::LuldAuctionCollar(owned::LuldAuctionCollar {
                locate,
                timestamp,
                stock: stock_sym,
                reference_price: price,
                upper_price: Price(price.0.saturating_add(price.0 / 20)),
                lower_price: Price(price.0 - price.0 / 20),
                extension: 0,
                ..Default::default()
            }),
            11 => Message::IpoQuotingPeriod(owned::IpoQuotingPeriod {
                locate,
                timestamp,
                stock: stock_sym,
                release_time: 36_000,
                release_qualifier: b'A',
                ipo_price: price,
                ..Default::default()
            }),
            12 => Message::OperationalHalt(owned::OperationalHalt {
                locate,
                timestamp,
                stock: stock_sym,
                market_code: b'Q',
                halt_action: b'T',
                ..Default::default()
            }),
            13 => Message::RegShoRestriction(owned::RegShoRestriction {
                locate,
                timestamp,
                stock: stock_sym,
                reg_sho_action: b'0',
                ..Default::default()
            }),
            14 => Message::DlcrPriceDiscovery(owned::DlcrPriceDiscovery {
                locate,
                timestamp,
                stock: stock_sym,
                open_eligibility_status: b'N',
                minimum_allowable_price: price,
                maximum_allowable_price: price,
                near_execution_price: price,
                near_execution_time: timestamp.0,
                lower_price_range_collar: price,
                upper_price_range_collar: price,
                ..Default::default()
            }),
            _ => Message::MwcbStatus(owned::MwcbStatus {
                timestamp,
                breached_level: b'1',
                ..Default::default()
            }),
        }
    }

    fn step(&mut self) -> Message {
        if self.profile == Profile::FullDay {
            return self.full_day_step();
        }
        loop {
            let stock = self.pick_stock();
            let live = self.stocks[stock].live.len();
            let target = self.stocks[stock].target_live;
            let roll = self.rng.below(1_000);
            let add_weight = if live < 4 {
                1_000
            } else if live > target {
                300
            } else {
                450
            };
            let m = if roll < add_weight {
                self.gen_add(stock)
            } else {
                match self.rng.below(100) {
                    0..=54 => self.gen_delete(stock),
                    55..=64 => self.gen_cancel(stock),
                    65..=81 => self.gen_executions(stock),
                    82..=94 => self.gen_replace(stock),
                    _ => Some(self.gen_other(stock)),
                }
            };
            if let Some(m) = m {
                return m;
            }
        }
    }
}

impl Generator {
    /// One message of a full day. Most are trading flow on a stock picked by activity, per
    /// mille of that flow: adds 436, deletes 425, replaces 92, executions 24 (sweeps make
    /// more messages of them), cancels 15, other types 8 (a stock with nothing to delete, cancel, execute or replace gets an add
    /// instead). The rest steer the day's live orders along [`Generator::live_target`]: an
    /// order resting far from the touch while the count is below it (the morning), a delete
    /// of any live order while it is above (the close). That steering is about a tenth of the
    /// day, adds and deletes in equal measure, so the whole day keeps the published mix
    /// (adds 44%, deletes 43%, replaces 8%, executions and cancels 4%, others 1%).
    fn full_day_step(&mut self) -> Message {
        let live = self.orders.len() as f64;
        let target = self.live_target();
        // Slack, so the trading flow's own ups and downs are not answered one by one.
        let slack = (target / 100.0).max(64.0);
        if live + slack < target {
            if let Some(m) = self.gen_resting_add() {
                return m;
            }
        } else if live > target + slack && !self.all_live.is_empty() {
            let i = self.rng.below(self.all_live.len() as u64) as usize;
            let order_ref = self.all_live[i];
            return self.delete_message(order_ref);
        }
        loop {
            let stock = self.pick_stock();
            let roll = self.rng.below(1_000);
            let m = match roll {
                0..=435 => self.gen_add(stock),
                436..=860 => self.gen_delete(stock),
                861..=952 => self.gen_replace(stock),
                953..=976 => self.gen_executions(stock),
                977..=991 => self.gen_cancel(stock),
                _ => Some(self.gen_other(stock)),
            };
            if let Some(m) = m.or_else(|| self.gen_add(stock)) {
                return m;
            }
        }
    }

    /// The full day's live orders wanted before the message now being generated: from none
    /// at the first message, linearly up to the peak ([`FULL_DAY_PEAK_SHARE`] of the day's
    /// messages) at [`FULL_DAY_BUILD_END`] of the day, flat to [`FULL_DAY_DRAIN_START`], then
    /// linearly down to [`FULL_DAY_CLOSE_LEFT`] of the peak at the last message.
    fn live_target(&self) -> f64 {
        let day = self.config.messages.max(1) as f64;
        let at = self.emitted as f64 / day;
        let peak = FULL_DAY_PEAK_SHARE * day;
        let shape = if at < FULL_DAY_BUILD_END {
            at / FULL_DAY_BUILD_END
        } else if at < FULL_DAY_DRAIN_START {
            1.0
        } else {
            let drained = ((at - FULL_DAY_DRAIN_START) / (1.0 - FULL_DAY_DRAIN_START)).min(1.0);
            1.0 - drained * (1.0 - FULL_DAY_CLOSE_LEFT)
        };
        peak * shape
    }

    /// An order resting far from the touch (between [`RESTING_MIN_TICKS`] and
    /// [`RESTING_MAX_TICKS`] from its side's best price), on a stock picked by the flat
    /// resting weights. `None` if the side has no room below the touch (a price near 0).
    fn gen_resting_add(&mut self) -> Option<Message> {
        let total = *self.resting.last()?;
        let x = self.rng.below(total);
        let stock = self.resting.partition_point(|&c| c <= x);
        let bid = self.rng.chance(0.5);
        let s = &self.stocks[stock];
        let (own, other) = if bid {
            (s.best_bid(), s.best_ask())
        } else {
            (s.best_ask(), s.best_bid())
        };
        // Measured from the own touch, or from one tick inside the other side's, so the
        // order never crosses.
        let tick = i64::from(s.tick);
        let anchor = match (own, other) {
            (Some(o), _) => i64::from(o),
            (None, Some(o)) if bid => i64::from(o) - tick,
            (None, Some(o)) => i64::from(o) + tick,
            (None, None) => i64::from(s.reference),
        };
        let ticks = RESTING_MIN_TICKS + self.rng.below(RESTING_MAX_TICKS - RESTING_MIN_TICKS);
        let away = ticks as i64 * tick;
        let price = if bid { anchor - away } else { anchor + away };
        let max = i64::from(u32::MAX - u32::MAX % s.tick);
        if price < tick || price > max {
            return None;
        }
        let price = price as u32;
        let shares = self.share_count();
        let order_ref = self.new_ref();
        self.rest(stock, order_ref, bid, price, shares);
        Some(self.add_message(stock, order_ref, bid, price, shares))
    }
}

impl Iterator for Generator {
    type Item = Message;

    fn next(&mut self) -> Option<Message> {
        if self.emitted >= self.config.messages {
            return None;
        }
        let left = self.config.messages - self.emitted;
        if left <= 3 && !self.epilogue_started {
            // End of market hours, end of system hours, end of messages; pending work is
            // dropped rather than overrun the count.
            self.epilogue_started = true;
            self.pending.clear();
            for code in [b'M', b'E', b'C'].into_iter().skip(3 - left as usize) {
                let m = self.system_event(code);
                self.pending.push_back(m);
            }
        }
        let m = match self.pending.pop_front() {
            Some(m) => m,
            None => self.step(),
        };
        self.emitted += 1;
        Some(m)
    }
}

/// Cumulative weights `(i + 1)^-exponent` for `n` stocks, scaled to integers (the last is
/// the total), so a uniform draw below the total picks stock `i` with that weight.
fn zipf_cumulative(n: usize, exponent: f64) -> Vec<u64> {
    let mut total = 0u64;
    (0..n)
        .map(|i| {
            total += ((1u64 << 40) as f64 * ((i + 1) as f64).powf(-exponent)) as u64 + 1;
            total
        })
        .collect()
}

/// An 8-letter-or-shorter symbol for stock `i`: `AAA`, `AAB`, ...
fn symbol_for(i: usize) -> Stock {
    let mut raw = [b' '; 8];
    let mut n = i;
    for slot in raw[..4].iter_mut().rev() {
        *slot = b'A' + (n % 26) as u8;
        n /= 26;
    }
    Alpha(raw)
}

/// What [`write_itch50`] wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GenSummary {
    /// Messages written.
    pub messages: u64,
    /// Bytes written, length prefixes included.
    pub bytes: u64,
}

/// Writes the generated messages as a Nasdaq ITCH50 file: each message behind its 2-byte
/// big-endian length.
///
/// # Errors
///
/// Whatever `out` returns.
pub fn write_itch50<W: Write>(config: GenConfig, out: &mut W) -> io::Result<GenSummary> {
    write_itch50_profile(config, Profile::Small, out)
}

/// [`write_itch50`] in the shape of `profile`.
///
/// # Errors
///
/// Whatever `out` returns.
pub fn write_itch50_profile<W: Write>(
    config: GenConfig,
    profile: Profile,
    out: &mut W,
) -> io::Result<GenSummary> {
    let mut summary = GenSummary::default();
    let mut buf = [0u8; 66];
    for m in Generator::with_profile(config, profile) {
        let len = m.encode(&mut buf[2..]);
        buf[..2].copy_from_slice(&(len as u16).to_be_bytes());
        out.write_all(&buf[..len + 2])?;
        summary.messages += 1;
        summary.bytes += len as u64 + 2;
    }
    Ok(summary)
}

/// Writes the generated messages as an ITCH50 file at `path`, gzipped when its name ends in
/// `.gz` (fast compression: the generator, not the encoder, should set the pace).
///
/// # Errors
///
/// [`SimError::DayFile`] naming the file, if it cannot be created or written.
pub fn write_itch50_file(path: &Path, config: GenConfig) -> Result<GenSummary, SimError> {
    write_itch50_file_profile(path, config, Profile::Small)
}

/// [`write_itch50_file`] in the shape of `profile`.
///
/// # Errors
///
/// [`SimError::DayFile`] naming the file, if it cannot be created or written.
pub fn write_itch50_file_profile(
    path: &Path,
    config: GenConfig,
    profile: Profile,
) -> Result<GenSummary, SimError> {
    let failed = |error| SimError::DayFile {
        path: path.to_path_buf(),
        error,
    };
    let file = BufWriter::new(File::create(path).map_err(failed)?);
    if path.extension().is_some_and(|e| e == "gz") {
        let mut out = GzEncoder::new(file, Compression::fast());
        let summary = write_itch50_profile(config, profile, &mut out).map_err(failed)?;
        out.finish()
            .and_then(|mut file| file.flush())
            .map_err(failed)?;
        Ok(summary)
    } else {
        let mut out = file;
        let summary = write_itch50_profile(config, profile, &mut out).map_err(failed)?;
        out.flush().map_err(failed)?;
        Ok(summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklane_feed::itch::{self, ALL_TAGS};

    fn generate(config: GenConfig) -> Vec<u8> {
        let mut out = Vec::new();
        write_itch50(config, &mut out).expect("writing to a Vec");
        out
    }

    #[test]
    fn a_day_file_holds_the_same_bytes_plain_or_gzipped() {
        use std::io::Read;
        let config = GenConfig {
            messages: 3_000,
            seed: 7,
            ..Default::default()
        };
        let expected = generate(config);
        let dir = tempfile::tempdir().expect("tempdir");
        let plain = dir.path().join("day.itch50");
        let summary = write_itch50_file(&plain, config).expect("write plain");
        assert_eq!(summary.messages, 3_000);
        assert_eq!(summary.bytes, expected.len() as u64);
        assert_eq!(std::fs::read(&plain).expect("read plain"), expected);

        let gzipped = dir.path().join("day.itch50.gz");
        write_itch50_file(&gzipped, config).expect("write gz");
        let raw = std::fs::read(&gzipped).expect("read gz");
        assert_eq!(raw[..2], [0x1f, 0x8b], "a gzip member");
        let mut unzipped = Vec::new();
        flate2::read::GzDecoder::new(&raw[..])
            .read_to_end(&mut unzipped)
            .expect("gunzip");
        assert_eq!(unzipped, expected);

        let nowhere = dir.path().join("no-such-dir").join("day.itch50");
        let err = write_itch50_file(&nowhere, config).expect_err("no directory");
        assert!(err.to_string().contains("no-such-dir"), "{err}");
    }

    #[test]
    fn same_seed_same_bytes_and_exact_count() {
        let config = GenConfig {
            messages: 5_000,
            seed: 42,
            ..Default::default()
        };
        let a = generate(config);
        assert_eq!(a, generate(config));
        assert_ne!(a, generate(GenConfig { seed: 43, ..config }));
        let mut at = 0;
        let mut n = 0;
        while at < a.len() {
            let len = usize::from(u16::from_be_bytes([a[at], a[at + 1]]));
            itch::decode(&a[at + 2..at + 2 + len]).expect("valid message");
            at += 2 + len;
            n += 1;
        }
        assert_eq!(n, 5_000);
    }

    #[test]
    fn every_type_appears_and_day_is_framed() {
        let msgs: Vec<Message> = Generator::new(GenConfig {
            messages: 50_000,
            ..Default::default()
        })
        .collect();
        for tag in ALL_TAGS {
            assert!(
                msgs.iter().any(|m| m.tag() == *tag),
                "type {} never generated",
                *tag as char
            );
        }
        assert!(matches!(msgs[0], Message::SystemEvent(e) if e.event_code == b'O'));
        assert!(matches!(msgs[msgs.len() - 1], Message::SystemEvent(e) if e.event_code == b'C'));
        let mut last = 0;
        for m in &msgs {
            let mut buf = [0u8; 64];
            let len = m.encode(&mut buf);
            let t = itch::decode(&buf[..len]).expect("valid").timestamp().0;
            assert!(t >= last, "timestamps never go back");
            last = t;
        }
    }

    #[test]
    fn a_full_day_has_the_published_mix_and_skewed_activity() {
        let config = GenConfig {
            messages: 200_000,
            seed: 11,
            stocks: 400,
            hard_cases: false,
            crossing: false,
        };
        let day = {
            let mut out = Vec::new();
            write_itch50_profile(config, Profile::FullDay, &mut out).expect("writing to a Vec");
            out
        };
        // Counted off the wire bytes: the type byte and the locate (bytes 1..3).
        let mut by_type = [0u64; 256];
        let mut by_locate = vec![0u64; usize::from(config.stocks) + 1];
        let mut at = 0;
        while at < day.len() {
            let len = usize::from(u16::from_be_bytes([day[at], day[at + 1]]));
            let m = &day[at + 2..at + 2 + len];
            itch::decode(m).expect("valid message");
            by_type[usize::from(m[0])] += 1;
            by_locate[usize::from(u16::from_be_bytes([m[1], m[2]]))] += 1;
            at += 2 + len;
        }
        let share = |types: &[u8]| {
            types.iter().map(|&t| by_type[usize::from(t)]).sum::<u64>() as f64 / 200_000.0
        };
        // Nasdaq's published shares of a day, with room for the directory and sweeps.
        let (adds, deletes, replaces) = (share(b"AF"), share(b"D"), share(b"U"));
        let executions_cancels = share(b"ECX");
        assert!((0.41..=0.47).contains(&adds), "adds {adds}");
        assert!((0.40..=0.46).contains(&deletes), "deletes {deletes}");
        assert!((0.065..=0.095).contains(&replaces), "replaces {replaces}");
        assert!(
            (0.02..=0.08).contains(&executions_cancels),
            "executions and cancels {executions_cancels}"
        );
        // The busiest 5% of stocks (20 of 400) carry more than half of the messages.
        let mut per_stock = by_locate[1..].to_vec();
        per_stock.sort_unstable_by(|a, b| b.cmp(a));
        let top: u64 = per_stock[..20].iter().sum();
        let all: u64 = per_stock.iter().sum();
        assert!(top * 2 > all, "top 5% carry {top} of {all}");
        // And every stock is in the directory, so the tail of names is there to be quiet.
        assert!(per_stock.iter().all(|&n| n >= 2), "{per_stock:?}");
    }

    /// Live orders after each message of a full day, counted by a model apart from the
    /// generator's (reference to shares, off the wire bytes), and the day's type counts.
    fn full_day_live_curve(messages: u64, seed: u64) -> (Vec<u64>, [u64; 256]) {
        let config = GenConfig {
            messages,
            seed,
            stocks: FULL_DAY_STOCKS,
            hard_cases: false,
            crossing: false,
        };
        let mut day = Vec::new();
        write_itch50_profile(config, Profile::FullDay, &mut day).expect("writing to a Vec");
        let mut shares: HashMap<u64, u64> = HashMap::new();
        let mut by_type = [0u64; 256];
        let mut curve = Vec::with_capacity(messages as usize);
        let mut at = 0;
        let be = |b: &[u8]| b.iter().fold(0u64, |v, &x| v << 8 | u64::from(x));
        while at < day.len() {
            let len = usize::from(u16::from_be_bytes([day[at], day[at + 1]]));
            let m = &day[at + 2..at + 2 + len];
            itch::decode(m).expect("valid message");
            by_type[usize::from(m[0])] += 1;
            // Offsets from the ITCH 5.0 spec: reference at 11..19; A/F shares at 20..24;
            // E/C executed and X cancelled shares at 19..23; U new reference 19..27 and
            // shares 27..31.
            let take = |shares: &mut HashMap<u64, u64>, order_ref: u64, n: u64| {
                let left = shares.get_mut(&order_ref).expect("names a live order");
                assert!(n <= *left, "no more shares than the order has");
                *left -= n;
                if *left == 0 {
                    shares.remove(&order_ref);
                }
            };
            match m[0] {
                b'A' | b'F' => {
                    assert!(shares.insert(be(&m[11..19]), be(&m[20..24])).is_none());
                }
                b'D' => {
                    shares
                        .remove(&be(&m[11..19]))
                        .expect("deletes a live order");
                }
                b'E' | b'C' | b'X' => take(&mut shares, be(&m[11..19]), be(&m[19..23])),
                b'U' => {
                    shares
                        .remove(&be(&m[11..19]))
                        .expect("replaces a live order");
                    assert!(shares.insert(be(&m[19..27]), be(&m[27..31])).is_none());
                }
                _ => {}
            }
            curve.push(shares.len() as u64);
            at += 2 + len;
        }
        (curve, by_type)
    }

    #[test]
    fn a_full_day_peaks_near_a_twentieth_of_its_messages_and_keeps_the_published_mix() {
        let mut peaks = Vec::new();
        for (messages, seed) in [(1_000_000u64, 21), (2_000_000, 22)] {
            let (curve, by_type) = full_day_live_curve(messages, seed);
            let n = messages as f64;
            let (peak_at, &peak) = curve
                .iter()
                .enumerate()
                .max_by_key(|&(i, &v)| (v, std::cmp::Reverse(i)))
                .expect("a day");
            let peak = peak as f64;
            // The stated rule: about 5% of the day's messages at the peak, reached after the
            // morning's linear climb (to 30% of the day) and before the close's drain (from
            // 80%), down to about a tenth of the peak at the last message.
            assert!(
                (0.045..=0.06).contains(&(peak / n)),
                "peak {peak} of {messages}"
            );
            let peak_at = peak_at as f64 / n;
            assert!((0.25..=0.85).contains(&peak_at), "peak at {peak_at:.3}");
            let half_way = curve[(messages * 15 / 100) as usize] as f64 / peak;
            assert!(
                (0.35..=0.65).contains(&half_way),
                "at 15%: {half_way:.3} of the peak"
            );
            let left = curve[curve.len() - 1] as f64 / peak;
            assert!(
                (0.05..=0.2).contains(&left),
                "at the close: {left:.3} of the peak"
            );
            // Nasdaq's published mix, each within a point, over the day's messages less its
            // preamble (the directory: R and H, one each per stock, however long the day).
            let body = n - (by_type[usize::from(b'R')] + by_type[usize::from(b'H')]) as f64;
            let share =
                |t: &[u8]| t.iter().map(|&t| by_type[usize::from(t)]).sum::<u64>() as f64 / body;
            let (adds, deletes, replaces) = (share(b"AF"), share(b"D"), share(b"U"));
            assert!((0.43..=0.45).contains(&adds), "adds {adds:.4}");
            assert!((0.42..=0.44).contains(&deletes), "deletes {deletes:.4}");
            assert!((0.07..=0.09).contains(&replaces), "replaces {replaces:.4}");
            let rest = 1.0 - adds - deletes - replaces;
            assert!((0.04..=0.06).contains(&rest), "the rest {rest:.4}");
            assert!(
                share(b"ECX") > rest * 0.6,
                "executions and cancels are most of the rest"
            );
            peaks.push(peak);
        }
        // Twice the messages, about twice the live orders.
        let ratio = peaks[1] / peaks[0];
        assert!((1.8..=2.2).contains(&ratio), "peak ratio {ratio:.3}");
    }

    #[test]
    fn profile_names_parse_and_small_is_what_write_itch50_writes() {
        // Both sides run the same code: this proves the plumbing; that the small profile keeps
        // the bytes of before is what the oracle tests over generated files check.

        let config = GenConfig {
            messages: 20_000,
            seed: 5,
            ..Default::default()
        };
        let mut small = Vec::new();
        write_itch50_profile(config, Profile::Small, &mut small).expect("writing to a Vec");
        assert_eq!(small, generate(config));
        assert_eq!("full-day".parse::<Profile>(), Ok(Profile::FullDay));
        assert!("huge".parse::<Profile>().is_err());
    }

    #[test]
    fn symbols_are_distinct() {
        assert_eq!(symbol_for(0).trimmed(), b"AAAA");
        assert_eq!(symbol_for(27).trimmed(), b"AABB");
    }
}
