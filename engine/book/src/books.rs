//! Every stock's order-by-order book, kept exactly as the feed says, in memory fixed at
//! start-up.
//!
//! The rules are listed once, in the `book` module's documentation ("The book rules"): an
//! order leaves at 0 shares; over-sized E, C or X are clamped and counted; unknown references
//! are counted and change nothing; adds with 0 shares, an unknown side or a live reference
//! are rejected and counted; reference 0 is ordinary; crossing adds are applied and flagged.

use std::io;

use ticklane_itch::{Locate, Message, OrderRef, Price, Stock};

use super::ladder::{LadderFull, LadderView, Level, PriceLadder, Touched};
use super::order_table::{InsertError, Order, OrderTable, Side};
use super::parked::{Parked, ParkedOrder};
use super::prefetch::{prefetch, Touches, TouchesAhead};
use super::top_of_book::TopOfBook;
use super::zeroed_pages::ZeroedPages;

/// Every locate a 16-bit field can name.
pub(super) const LOCATES: usize = 1 << 16;

/// A table with one `value` per locate. Its length is in its type, so an index made from a
/// locate (`usize::from(locate.0)`) needs no bounds check: there are several a message.
pub(super) fn per_locate<T: Clone>(value: T) -> Box<[T; LOCATES]> {
    match vec![value; LOCATES].into_boxed_slice().try_into() {
        Ok(table) => table,
        Err(_) => unreachable!("the vector has LOCATES values"),
    }
}
/// `book_of` entry of a locate that has no book yet.
const NO_BOOK: u32 = u32::MAX;

/// Capacities fixed at start-up. The defaults fit a full Nasdaq day.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BookConfig {
    /// Most orders live at once, over all books.
    pub max_orders: usize,
    /// Most stocks with a book (a book is opened at its stock's first add).
    pub max_books: usize,
    /// Most price levels on one side of one book.
    pub levels_per_side: usize,
}

impl Default for BookConfig {
    /// 8 Mi live orders, 16 Ki books, 1,024 levels per side. Memory is reserved as zeroed
    /// pages that become resident only when touched.
    fn default() -> Self {
        BookConfig {
            max_orders: 8 << 20,
            max_books: 16 << 10,
            levels_per_side: 1024,
        }
    }
}

/// What the books counted: every message that could not be applied as sent is here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BookCounts {
    /// E, C, X, D or U naming a reference that is not live (a capture that starts mid-day).
    pub unknown_refs: u64,
    /// Adds (A, F, and the new half of U) rejected, for any of the reasons below.
    pub rejected: u64,
    /// ... because they had 0 shares.
    pub rejected_zero_shares: u64,
    /// ... because their reference was already live.
    pub rejected_live_ref: u64,
    /// ... because their side byte was neither `B` nor `S`.
    pub rejected_bad_side: u64,
    /// ... because the order table was full (`max_orders`).
    pub rejected_order_capacity: u64,
    /// ... because their book's side had no room for a new level (`levels_per_side`).
    pub rejected_level_capacity: u64,
    /// ... because no book could be opened for their stock (`max_books`).
    pub rejected_book_capacity: u64,
    /// E, C or X for more shares than the order had left (clamped to what was left).
    pub clamped: u64,
    /// Times a book went from uncrossed to crossed (bid at or above ask).
    pub crossed_events: u64,
    /// Most orders live at once.
    pub live_orders_peak: u64,
    /// Symbols (`R`, or a DBN input's metadata) holding a byte no output carries as is: a
    /// control or non-ASCII byte, a comma or a double quote. Each such byte is kept as `?`,
    /// so every CSV, DBN and Parquet output stays readable.
    pub symbols_replaced: u64,
    /// Resting orders a snapshot sent at stock locate 0, kept by symbol until the live
    /// stream named their locate (`parked`).
    pub snapshot_orders_parked: u64,
    /// ... of which joined their books when it did.
    pub snapshot_orders_placed: u64,
}

/// `symbol` as the books keep it: printable ASCII other than `,` and `"` as sent, any other
/// byte `?`; and whether any byte was replaced.
fn clean_symbol(mut symbol: Stock) -> (Stock, bool) {
    let mut replaced = false;
    for b in &mut symbol.0 {
        if !(*b == b' ' || b.is_ascii_graphic()) || *b == b',' || *b == b'"' {
            *b = b'?';
            replaced = true;
        }
    }
    (symbol, replaced)
}

/// What one message did to the books.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BookChange {
    /// The locate whose book changed (for E, C, X, D and U, the order's own locate).
    pub locate: Locate,
    /// False when every change was behind the best levels, so the book's top of book is
    /// exactly what it was before the message; true when it may have moved.
    pub top_moved: bool,
}

/// Per-book state besides the levels. 32 bytes, aligned, so a prefetch of it is one line.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(32))]
struct BookState {
    /// Live levels per side: `[bid, ask]`, each at most `capacity`.
    depth: [u32; 2],
    /// Where each side's window starts in the level arena.
    start: [u32; 2],
    /// Levels each side's window holds: 0 until the side's first level, then
    /// [`FIRST_WINDOW`] doubling up to `levels_per_side` (see [`Books::grow_window`]).
    capacity: [u32; 2],
    locate: Locate,
    crossed: bool,
}

const _: () = assert!(core::mem::size_of::<BookState>() == 32);

/// Levels in a side's first window: 16 levels, 256 bytes, so sixteen sides share a page.
const FIRST_WINDOW: u32 = 16;

/// The window a side of `now` levels (0 before its first) moves into: `FIRST_WINDOW`, then
/// doubling, the last one `levels_per_side` itself; `None` once it holds `levels_per_side`.
fn next_window(now: u32, levels_per_side: u32) -> Option<u32> {
    match now {
        0 => Some(FIRST_WINDOW.min(levels_per_side)),
        full if full >= levels_per_side => None,
        now => Some(now.saturating_mul(2).min(levels_per_side)),
    }
}

/// Every window size one side takes in turn, smallest first.
fn window_sizes(levels_per_side: u32) -> impl Iterator<Item = u32> {
    std::iter::successors(next_window(0, levels_per_side), move |&size| {
        next_window(size, levels_per_side)
    })
}

/// All books, the live-order table, each locate's symbol and trading state.
///
/// Applying a message allocates nothing.
pub struct Books {
    config: BookConfig,
    orders: OrderTable,
    /// Book index of each locate, or `NO_BOOK`.
    book_of: Box<[u32; LOCATES]>,
    /// Opened books; capacity `max_books`, never reallocated.
    books: Vec<BookState>,
    /// The level arena: each side's window of levels, handed out from the front as sides
    /// open and grow (`grow_window`), so the levels of a day's books lie together in as
    /// many pages as they fill, not one page or more per side.
    levels: ZeroedPages<Level>,
    /// Levels handed out so far.
    levels_used: usize,
    /// Latest `R` symbol per locate (spaces when none seen).
    symbols: Box<[Stock; LOCATES]>,
    /// Latest `H` trading state per locate (0 when none seen).
    trading_states: Box<[u8; LOCATES]>,
    counters: BookCounts,
    /// A locate-0 snapshot's state, waiting for its locates; `None` (the rule) while
    /// nothing waits.
    parked: Option<Box<Parked>>,
    /// Whether the messages applied now are a snapshot's (between the line's "loading
    /// snapshot" and "live"): only a snapshot's locate-0 messages are kept by symbol.
    loading_snapshot: bool,
    /// Whether waiting orders joined a book while the latest message was applied.
    placed: bool,
}

#[inline(always)]
fn side_index(side: Side) -> usize {
    match side {
        Side::Bid => 0,
        Side::Ask => 1,
    }
}

impl Books {
    /// Allocates every table once, at the configured capacities (each at least 1).
    ///
    /// # Errors
    ///
    /// If the tables do not fit the address space or cannot be mapped.
    pub fn new(config: BookConfig) -> io::Result<Self> {
        let config = BookConfig {
            max_orders: config.max_orders.max(1),
            max_books: config.max_books.clamp(1, LOCATES),
            levels_per_side: config.levels_per_side.clamp(1, u32::MAX as usize / 2),
        };
        // Every side may grow through every window size; a window it grew out of is not
        // reused, so each side needs at most the sum of the sizes (about twice
        // `levels_per_side`). A day fills a small part of that, so the arena is mapped
        // sparse: the configured limit on the level table, not this bound, decides what
        // starts.
        let per_side: u64 = window_sizes(config.levels_per_side as u32)
            .map(u64::from)
            .sum();
        let level_count = (config.max_books as u64)
            .checked_mul(2 * per_side)
            .filter(|&n| n <= u64::from(u32::MAX))
            .ok_or_else(|| io::Error::other("level capacity overflows the level arena"))?;
        Ok(Books {
            config,
            orders: OrderTable::with_capacity(config.max_orders)?,
            book_of: per_locate(NO_BOOK),
            books: Vec::with_capacity(config.max_books),
            levels: ZeroedPages::sparse(level_count as usize)?,
            levels_used: 0,
            symbols: per_locate(Stock::default()),
            trading_states: per_locate(0),
            counters: BookCounts::default(),
            parked: None,
            loading_snapshot: false,
            placed: false,
        })
    }

    /// The capacities in force.
    pub fn config(&self) -> BookConfig {
        self.config
    }

    /// What was counted so far.
    pub fn counters(&self) -> BookCounts {
        self.counters
    }

    /// Orders live now.
    pub fn live_orders(&self) -> usize {
        self.orders.len()
    }

    /// The live order with this reference.
    pub fn order(&self, order_ref: OrderRef) -> Option<Order> {
        self.orders.get(order_ref)
    }

    /// Symbol of the latest `R` for the locate, trailing spaces removed (empty if none).
    pub fn symbol(&self, locate: Locate) -> &[u8] {
        self.symbols[usize::from(locate.0)].trimmed()
    }

    /// Symbol of the latest `R` for the locate, space padded (all spaces if none).
    #[inline]
    pub fn symbol_raw(&self, locate: Locate) -> Stock {
        self.symbols[usize::from(locate.0)]
    }

    /// Latest `H` trading state of the locate (`T`, `H`, `P`, `Q`), if one was seen.
    pub fn trading_state(&self, locate: Locate) -> Option<u8> {
        let s = self.trading_states[usize::from(locate.0)];
        (s != 0).then_some(s)
    }

    /// Applies one message. Returns the locate whose book it changed, if it changed one
    /// (for E, C, X, D and U, the locate the order was added under).
    #[inline]
    pub fn apply(&mut self, message: &Message<'_>) -> Option<Locate> {
        self.apply_change(message).map(|c| c.locate)
    }

    /// [`Books::apply`], also saying whether the changed book's top of book may have moved,
    /// so a top-of-book stream re-reads it only when it can differ.
    #[inline]
    pub fn apply_change(&mut self, message: &Message<'_>) -> Option<BookChange> {
        match message {
            Message::AddOrder(m) => self.add_or_park(
                m.locate(),
                m.stock(),
                m.side(),
                m.order_ref(),
                m.shares(),
                m.price(),
            ),
            Message::AddOrderMpid(m) => self.add_or_park(
                m.locate(),
                m.stock(),
                m.side(),
                m.order_ref(),
                m.shares(),
                m.price(),
            ),
            Message::OrderExecuted(m) => {
                let (r, shares) = (m.order_ref(), m.executed_shares());
                let change = self.reduce(r, shares);
                self.or_placed(change, r, m.locate(), |b| b.reduce(r, shares))
            }
            Message::OrderExecutedWithPrice(m) => {
                let (r, shares) = (m.order_ref(), m.executed_shares());
                let change = self.reduce(r, shares);
                self.or_placed(change, r, m.locate(), |b| b.reduce(r, shares))
            }
            Message::OrderCancel(m) => {
                let (r, shares) = (m.order_ref(), m.cancelled_shares());
                let change = self.reduce(r, shares);
                self.or_placed(change, r, m.locate(), |b| b.reduce(r, shares))
            }
            Message::OrderDelete(m) => {
                let r = m.order_ref();
                let change = self.delete(r);
                self.or_placed(change, r, m.locate(), |b| b.delete(r))
            }
            Message::OrderReplace(m) => {
                let (r, new, shares, price) = (
                    m.original_order_ref(),
                    m.new_order_ref(),
                    m.shares(),
                    m.price(),
                );
                let change = self.replace(r, new, shares, price);
                self.or_placed(change, r, m.locate(), |b| b.replace(r, new, shares, price))
            }
            Message::StockDirectory(m) if m.locate().0 == 0 => {
                self.park_symbol(m.stock(), None);
                None
            }
            Message::StockDirectory(m) => {
                self.set_symbol(m.locate(), m.stock());
                None
            }
            Message::StockTradingAction(m) if m.locate().0 == 0 => {
                self.park_symbol(m.stock(), Some(m.trading_state()));
                None
            }
            Message::StockTradingAction(m) => {
                self.trading_states[usize::from(m.locate().0)] = m.trading_state();
                None
            }
            _ => None,
        }
    }

    /// Sets the symbol of a locate, as an `R` message does: for inputs whose stock
    /// directory comes from elsewhere (DBN metadata).
    pub fn set_symbol(&mut self, locate: Locate, symbol: Stock) {
        let (symbol, replaced) = clean_symbol(symbol);
        self.counters.symbols_replaced += u64::from(replaced);
        self.symbols[usize::from(locate.0)] = symbol;
    }

    /// Adds an order under the add rules (as `A`; `side` is the ITCH byte, `B` or `S`, any
    /// other is rejected and counted). Returns the locate if the book changed.
    pub fn add_order(
        &mut self,
        locate: Locate,
        side: u8,
        order_ref: OrderRef,
        shares: u32,
        price: Price,
    ) -> Option<Locate> {
        self.add(locate, side, order_ref, shares, price)
            .map(|c| c.locate)
    }

    /// Takes `shares` off a live order (as `X`): clamped and counted when more than it has,
    /// counted when the reference is not live. Returns the order's locate if it was live.
    pub fn reduce_order(&mut self, order_ref: OrderRef, shares: u32) -> Option<Locate> {
        self.reduce(order_ref, shares).map(|c| c.locate)
    }

    /// Removes a live order (as `D`); an unknown reference is counted.
    pub fn delete_order(&mut self, order_ref: OrderRef) -> Option<Locate> {
        self.delete(order_ref).map(|c| c.locate)
    }

    /// Gives a live order a new price and size in place, keeping its reference, stock and
    /// side (a DBN Modify; ITCH has no such message). The order leaves its level and rejoins
    /// under the add rules, so a size of 0 removes it (counted as a rejected add). Queue
    /// priority is not kept by these books, so whether a venue keeps it (Databento: a size
    /// decrease at the same price does) changes no output. `None` if the reference is not
    /// live (not counted here: the caller decides what an unknown modify means).
    pub fn modify_order(
        &mut self,
        order_ref: OrderRef,
        shares: u32,
        price: Price,
    ) -> Option<Locate> {
        let order = self.orders.remove(order_ref)?;
        self.take_from_level(order, order.shares, true);
        self.add(order.locate, order.side.wire(), order_ref, shares, price);
        Some(order.locate)
    }

    /// Removes every order of a locate's book (a DBN Clear). `None` if it has no book.
    ///
    /// An empty book costs nothing; a book with orders costs a scan of the whole order
    /// table and one allocation, which is acceptable for an event a venue sends at a
    /// session start or a recovery, not per message.
    pub fn clear_book(&mut self, locate: Locate) -> Option<Locate> {
        let book = match self.book_of[usize::from(locate.0)] {
            NO_BOOK => return None,
            book => book as usize,
        };
        if self.books[book].depth != [0, 0] {
            let refs: Vec<OrderRef> = self
                .orders
                .iter()
                .filter(|(_, order)| order.locate == locate)
                .map(|(order_ref, _)| order_ref)
                .collect();
            for order_ref in refs {
                self.delete(order_ref);
            }
        }
        Some(locate)
    }

    /// Removes every live order of every book, keeping each locate's symbol and trading
    /// state and every book (empty): the state before a snapshot rebuilds them. Returns the
    /// orders removed.
    ///
    /// Cold: a scan of the whole order table and one allocation, for a rebuild, never per
    /// message.
    pub fn clear_orders(&mut self) -> usize {
        let refs: Vec<OrderRef> = self.orders.iter().map(|(order_ref, _)| order_ref).collect();
        for &order_ref in &refs {
            self.delete(order_ref);
        }
        for book in &mut self.books {
            book.crossed = false;
        }
        // What an earlier snapshot left waiting is the next snapshot's to say.
        self.parked = None;
        refs.len()
    }

    /// Says whether the messages applied from now on are a snapshot's: a snapshot's
    /// locate-0 messages are kept by symbol until the live stream names their locates.
    pub fn set_loading_snapshot(&mut self, loading: bool) {
        self.loading_snapshot = loading;
    }

    /// Whether waiting orders of a locate-0 snapshot joined a book while the latest message
    /// was applied (that book changed beyond the levels the message touched); clears it.
    #[inline(always)]
    pub(crate) fn take_placed(&mut self) -> bool {
        std::mem::take(&mut self.placed)
    }

    /// Adds an order (as `A`, `F`): a snapshot's at locate 0 waits under its symbol; a live
    /// one at a locate with no symbol yet first places what waits for its symbol.
    #[inline(always)]
    pub(super) fn add_or_park(
        &mut self,
        locate: Locate,
        symbol: Stock,
        side: u8,
        order_ref: OrderRef,
        shares: u32,
        price: Price,
    ) -> Option<BookChange> {
        if locate.0 == 0 && self.loading_snapshot {
            self.park_order(symbol, side, order_ref, shares, price);
            return None;
        }
        if self.waits_for(locate) && self.place(symbol, locate) {
            let _ = self.add(locate, side, order_ref, shares, price);
            return Some(BookChange {
                locate,
                top_moved: true,
            });
        }
        self.add(locate, side, order_ref, shares, price)
    }

    /// `change`, or, when it found `order_ref` unknown and the reference waits in a
    /// locate-0 snapshot, `again` after its symbol's orders joined the book at `locate`.
    #[inline(always)]
    pub(super) fn or_placed(
        &mut self,
        change: Option<BookChange>,
        order_ref: OrderRef,
        locate: Locate,
        again: impl FnOnce(&mut Self) -> Option<BookChange>,
    ) -> Option<BookChange> {
        if change.is_some() || self.parked.is_none() || !self.place_order(order_ref, locate) {
            return change;
        }
        again(self).map(|c| BookChange {
            top_moved: true,
            ..c
        })
    }

    /// Keeps a resting order a snapshot sent at stock locate 0, under its symbol, until a
    /// live message names the symbol's locate (`parked`).
    #[cold]
    pub(crate) fn park_order(
        &mut self,
        symbol: Stock,
        side: u8,
        order_ref: OrderRef,
        shares: u32,
        price: Price,
    ) {
        self.counters.snapshot_orders_parked += 1;
        let order = ParkedOrder {
            side,
            order_ref,
            shares,
            price,
        };
        self.parked.get_or_insert_default().order(symbol, order);
    }

    /// Keeps a locate-0 snapshot's directory entry or trading state for `symbol`.
    #[cold]
    pub(crate) fn park_symbol(&mut self, symbol: Stock, trading_state: Option<u8>) {
        if !self.loading_snapshot {
            return;
        }
        let parked = self.parked.get_or_insert_default();
        match trading_state {
            Some(state) => parked.trading_state(symbol, state),
            None => parked.directory(symbol),
        }
    }

    /// Whether a locate-0 snapshot's state waits for a live add at `locate` to name its
    /// symbol: only while something waits and the locate has no symbol yet.
    #[inline(always)]
    pub(crate) fn waits_for(&self, locate: Locate) -> bool {
        self.parked.is_some() && self.symbols[usize::from(locate.0)] == Stock::default()
    }

    /// A live message says `symbol` is `locate`: the symbol is set, and what waited for it
    /// (its trading state, its orders in the snapshot's priority) joins the book. Returns
    /// whether any order joined.
    #[cold]
    pub(crate) fn place(&mut self, symbol: Stock, locate: Locate) -> bool {
        self.set_symbol(locate, symbol);
        let Some(parked) = self.parked.as_mut() else {
            return false;
        };
        let waiting = parked.take(symbol);
        if parked.waiting() == (0, 0) {
            self.parked = None;
        }
        let Some(waiting) = waiting else {
            return false;
        };
        if let Some(state) = waiting.trading_state {
            self.trading_states[usize::from(locate.0)] = state;
        }
        self.placed = true;
        for o in &waiting.orders {
            if self
                .add(locate, o.side, o.order_ref, o.shares, o.price)
                .is_some()
            {
                self.counters.snapshot_orders_placed += 1;
            }
        }
        !waiting.orders.is_empty()
    }

    /// A live execution, cancel, delete or replace at `locate` named `order_ref`, which the
    /// books do not hold: if it waits in a locate-0 snapshot, its symbol's state joins the
    /// book at `locate` (and the reference is no longer unknown). Returns whether it did.
    #[cold]
    pub(crate) fn place_order(&mut self, order_ref: OrderRef, locate: Locate) -> bool {
        let symbol = self.parked.as_ref().and_then(|p| p.symbol_of(order_ref));
        let placed = symbol.is_some_and(|symbol| self.place(symbol, locate));
        if placed {
            // Counted unknown by the attempt before; it is not.
            self.counters.unknown_refs -= 1;
        }
        placed
    }

    /// Symbols and orders of a locate-0 snapshot still waiting for their locates.
    pub fn parked(&self) -> (usize, usize) {
        self.parked.as_ref().map_or((0, 0), |p| p.waiting())
    }

    /// The book of a locate, opening it on first use.
    #[inline(always)]
    fn book_index_or_open(&mut self, locate: Locate) -> Option<usize> {
        let slot = &mut self.book_of[usize::from(locate.0)];
        if *slot != NO_BOOK {
            return Some(*slot as usize);
        }
        if self.books.len() == self.config.max_books {
            return None;
        }
        let index = self.books.len();
        self.books.push(BookState {
            depth: [0, 0],
            start: [0, 0],
            capacity: [0, 0],
            locate,
            crossed: false,
        });
        *slot = index as u32;
        Some(index)
    }

    #[inline(always)]
    fn ladder(&mut self, book: usize, side: Side) -> PriceLadder<'_> {
        let s = side_index(side);
        let state = &mut self.books[book];
        let start = state.start[s] as usize;
        let capacity = state.capacity[s] as usize;
        PriceLadder::new(
            side,
            &mut self.levels.as_mut_slice()[start..start + capacity],
            &mut state.depth[s],
        )
    }

    #[inline(always)]
    fn view(&self, book: usize, side: Side) -> LadderView<'_> {
        let s = side_index(side);
        let state = &self.books[book];
        let start = state.start[s] as usize;
        let depth = state.depth[s] as usize;
        LadderView::new(side, &self.levels.as_slice()[start..start + depth])
    }

    /// Moves a full side into the next window size from the arena's front; false if it
    /// already has `levels_per_side` levels (the side is full). The arena is sized for
    /// every side growing through every size, so it cannot run out.
    #[cold]
    #[inline(never)]
    fn grow_window(&mut self, book: usize, side: Side) -> bool {
        let s = side_index(side);
        let state = self.books[book];
        let Some(size) = next_window(state.capacity[s], self.config.levels_per_side as u32) else {
            return false;
        };
        let start = self.levels_used;
        let Some(end) = start
            .checked_add(size as usize)
            .filter(|&end| end <= self.levels.len())
        else {
            debug_assert!(false, "invariant: the arena holds every window");
            return false;
        };
        let (from, depth) = (state.start[s] as usize, state.depth[s] as usize);
        self.levels
            .as_mut_slice()
            .copy_within(from..from + depth, start);
        self.levels_used = end;
        let state = &mut self.books[book];
        state.start[s] = start as u32;
        state.capacity[s] = size;
        true
    }

    #[inline(always)]
    pub(super) fn add(
        &mut self,
        locate: Locate,
        side: u8,
        order_ref: OrderRef,
        shares: u32,
        price: Price,
    ) -> Option<BookChange> {
        let Some(side) = Side::from_wire(side) else {
            self.reject(|c| &mut c.rejected_bad_side);
            return None;
        };
        if shares == 0 {
            self.reject(|c| &mut c.rejected_zero_shares);
            return None;
        }
        let Some(book) = self.book_index_or_open(locate) else {
            self.reject(|c| &mut c.rejected_book_capacity);
            return None;
        };
        match self.orders.insert(
            order_ref,
            Order {
                locate,
                side,
                price,
                shares,
            },
        ) {
            Ok(()) => {}
            Err(InsertError::AlreadyLive) => {
                self.reject(|c| &mut c.rejected_live_ref);
                return None;
            }
            Err(InsertError::Full) => {
                self.reject(|c| &mut c.rejected_order_capacity);
                return None;
            }
        }
        let touched = match self.ladder(book, side).add(price, shares) {
            Ok(touched) => Some(touched),
            Err(LadderFull) if self.grow_window(book, side) => {
                self.ladder(book, side).add(price, shares).ok()
            }
            Err(LadderFull) => None,
        };
        let Some(touched) = touched else {
            self.orders.remove(order_ref);
            self.reject(|c| &mut c.rejected_level_capacity);
            return None;
        };
        let live = self.orders.len() as u64;
        if live > self.counters.live_orders_peak {
            self.counters.live_orders_peak = live;
        }
        let top_moved = touched == Touched::Best;
        if top_moved {
            self.note_crossing(book);
        }
        Some(BookChange { locate, top_moved })
    }

    #[inline(always)]
    fn reject(&mut self, reason: impl FnOnce(&mut BookCounts) -> &mut u64) {
        self.counters.rejected += 1;
        *reason(&mut self.counters) += 1;
    }

    #[inline(always)]
    pub(super) fn reduce(&mut self, order_ref: OrderRef, shares: u32) -> Option<BookChange> {
        let Some((order, taken)) = self.orders.reduce(order_ref, shares) else {
            self.counters.unknown_refs += 1;
            return None;
        };
        if taken < shares {
            self.counters.clamped += 1;
        }
        Some(BookChange {
            locate: order.locate,
            top_moved: self.take_from_level(order, taken, taken == order.shares),
        })
    }

    #[inline(always)]
    pub(super) fn delete(&mut self, order_ref: OrderRef) -> Option<BookChange> {
        let Some(order) = self.orders.remove(order_ref) else {
            self.counters.unknown_refs += 1;
            return None;
        };
        Some(BookChange {
            locate: order.locate,
            top_moved: self.take_from_level(order, order.shares, true),
        })
    }

    /// The original order leaves; the new reference joins the back of its level with the
    /// original's stock and side, under the add rules.
    #[inline(always)]
    pub(super) fn replace(
        &mut self,
        original: OrderRef,
        new: OrderRef,
        shares: u32,
        price: Price,
    ) -> Option<BookChange> {
        let Some(order) = self.orders.remove(original) else {
            self.counters.unknown_refs += 1;
            return None;
        };
        let left_top = self.take_from_level(order, order.shares, true);
        // A rejected new half changed nothing more.
        let joined_top = self
            .add(order.locate, order.side.wire(), new, shares, price)
            .is_some_and(|c| c.top_moved);
        Some(BookChange {
            locate: order.locate,
            top_moved: left_top || joined_top,
        })
    }

    /// Takes shares off a live order's level; true if that was the best level (the top
    /// of book may have moved, and the crossing state is brought up to date).
    #[inline(always)]
    fn take_from_level(&mut self, order: Order, shares: u32, order_left: bool) -> bool {
        let book = self.book_of[usize::from(order.locate.0)] as usize;
        let touched = self
            .ladder(book, order.side)
            .reduce(order.price, shares, order_left);
        let top_moved = touched == Some(Touched::Best);
        if top_moved {
            self.note_crossing(book);
        }
        top_moved
    }

    /// Asks for the memory three upcoming messages or records will touch, so that their
    /// cache misses overlap with the messages applied before them: those
    /// [`PREFETCH_FAR`](super::PREFETCH_FAR), [`PREFETCH_MID`](super::PREFETCH_MID) and
    /// [`PREFETCH_NEAR`](super::PREFETCH_NEAR) places on, in three stages that each read only
    /// lines the stage before asked for (a message is in the far stage, then the middle one,
    /// then the near one): an order gets its bucket head, then its record, then the best
    /// levels of its side; an add gets its book's state, then the best levels of its side.
    /// Only a hint: what it reads decides nothing.
    #[inline(always)]
    pub fn prefetch(&self, ahead: TouchesAhead) {
        match ahead.far {
            Touches::Order(order_ref) => self.orders.prefetch_bucket(order_ref),
            Touches::Add(locate, _) => {
                if let Some(book) = self.book_of_locate(locate) {
                    prefetch(self.books.as_ptr().wrapping_add(book));
                }
            }
            Touches::Nothing => {}
        }
        match ahead.mid {
            Touches::Order(order_ref) => {
                self.orders.prefetch_record(self.orders.head_of(order_ref));
            }
            Touches::Add(locate, Some(side)) => {
                if let Some(book) = self.book_of_locate(locate) {
                    self.prefetch_touch(book, side);
                }
            }
            Touches::Add(_, None) | Touches::Nothing => {}
        }
        if let Touches::Order(order_ref) = ahead.near {
            let head = self.orders.head_of(order_ref);
            if let Some(order) = self.orders.order_at(head, order_ref) {
                if let Some(book) = self.book_of_locate(order.locate) {
                    self.prefetch_touch(book, order.side);
                }
            }
        }
    }

    /// Whether [`Books::prefetch`] pays now: once the live orders reach
    /// [`PREFETCH_FROM_ORDERS`](super::PREFETCH_FROM_ORDERS) or the open books
    /// [`PREFETCH_FROM_BOOKS`](super::PREFETCH_FROM_BOOKS), that is once the lines messages
    /// touch no longer sit in a core's own caches. A replay asks it now and then (each block
    /// or batch) and looks ahead only while it says yes: a small day runs without the
    /// stages' instructions, a day that grows turns them on as it grows.
    #[inline]
    pub fn worth_prefetching(&self) -> bool {
        self.orders.len() >= super::PREFETCH_FROM_ORDERS
            || self.books.len() >= super::PREFETCH_FROM_BOOKS
    }

    #[inline(always)]
    fn book_of_locate(&self, locate: Locate) -> Option<usize> {
        match self.book_of[usize::from(locate.0)] {
            NO_BOOK => None,
            book => Some(book as usize),
        }
    }

    /// The lines of a side's best levels: where the search for a level starts.
    #[inline(always)]
    fn prefetch_touch(&self, book: usize, side: Side) {
        let s = side_index(side);
        let Some(state) = self.books.get(book) else {
            return;
        };
        let best = state.start[s] as usize + state.depth[s] as usize;
        // The walk from the touch reads up to 16 levels: 256 bytes, four or five lines.
        for behind in [1, 5, 9, 13] {
            prefetch(self.levels.address_of(best.wrapping_sub(behind)));
        }
    }

    #[inline(always)]
    fn note_crossing(&mut self, book: usize) {
        let crossed = self.top_of_book_at(book).is_crossed();
        let state = &mut self.books[book];
        if crossed && !state.crossed {
            self.counters.crossed_events += 1;
        }
        state.crossed = crossed;
    }

    #[inline(always)]
    fn top_of_book_at(&self, book: usize) -> TopOfBook {
        TopOfBook::new(
            self.view(book, Side::Bid).best(),
            self.view(book, Side::Ask).best(),
        )
    }

    /// Best bid and offer of a locate's book (all zero if it has none).
    #[inline(always)]
    pub fn top_of_book(&self, locate: Locate) -> TopOfBook {
        match self.book_of[usize::from(locate.0)] {
            NO_BOOK => TopOfBook::default(),
            book => self.top_of_book_at(book as usize),
        }
    }

    /// One side of a locate's book, if it has a book.
    pub fn side(&self, locate: Locate, side: Side) -> Option<LadderView<'_>> {
        match self.book_of[usize::from(locate.0)] {
            NO_BOOK => None,
            book => Some(self.view(book as usize, side)),
        }
    }

    /// Locates with a book, ascending.
    pub fn locates(&self) -> Vec<Locate> {
        let mut locates: Vec<Locate> = self.books.iter().map(|b| b.locate).collect();
        locates.sort_unstable();
        locates
    }

    /// Books crossed now.
    pub fn crossed_books(&self) -> usize {
        self.books.iter().filter(|b| b.crossed).count()
    }

    /// Rebuilds every level from the live orders and compares: a check for tests and
    /// debugging, not for the hot path.
    ///
    /// # Errors
    ///
    /// A description of the first level whose aggregate disagrees with its orders.
    pub fn check_invariants(&self) -> Result<(), String> {
        use std::collections::BTreeMap;
        let mut expected: BTreeMap<(u16, u8, u32), (u64, u32)> = BTreeMap::new();
        for (_, order) in self.orders.iter() {
            let e = expected.entry((order.locate.0, order.side.letter() as u8, order.price.0));
            let (qty, n) = e.or_default();
            *qty += u64::from(order.shares);
            *n += 1;
        }
        let mut windows: Vec<(usize, usize)> = Vec::new();
        for state in &self.books {
            for s in 0..2 {
                let (start, capacity) = (state.start[s] as usize, state.capacity[s] as usize);
                if state.depth[s] as usize > capacity
                    || capacity > self.config.levels_per_side
                    || start + capacity > self.levels_used
                {
                    return Err(format!(
                        "book at {:?}: side {s} outgrew its window",
                        state.locate
                    ));
                }
                windows.push((start, start + capacity));
            }
        }
        windows.sort_unstable();
        if windows.windows(2).any(|w| w[0].1 > w[1].0) {
            return Err("two sides' level windows overlap".to_string());
        }
        let mut actual = BTreeMap::new();
        for locate in self.locates() {
            for side in [Side::Bid, Side::Ask] {
                let ladder = self
                    .side(locate, side)
                    .expect("invariant: listed locates have books");
                for level in ladder.best_first() {
                    actual.insert(
                        (locate.0, side.letter() as u8, level.price.0),
                        (level.qty, level.orders),
                    );
                }
            }
        }
        if expected == actual {
            Ok(())
        } else {
            let diff = expected
                .iter()
                .find(|(k, v)| actual.get(k) != Some(v))
                .map(|(k, v)| format!("level {k:?}: orders say {v:?}, ladder {:?}", actual.get(k)))
                .unwrap_or_else(|| "the ladder has a level with no orders".to_string());
            Err(diff)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A message for the prefetch stages: any length and bytes, often a type they act on,
    /// often naming a live order or an opened book so the later stages are reached.
    fn upcoming_message() -> impl Strategy<Value = Vec<u8>> {
        let tag = prop::sample::select(b"ADEFCXUSa\0".to_vec());
        (
            tag,
            prop::collection::vec(any::<u8>(), 0..48),
            0..4u64,
            any::<bool>(),
        )
            .prop_map(|(tag, mut bytes, order, known)| {
                if let Some(first) = bytes.first_mut() {
                    *first = tag;
                }
                if known && bytes.len() >= 20 {
                    bytes[1..3].copy_from_slice(&7u16.to_be_bytes());
                    bytes[11..19].copy_from_slice(&(100 + order).to_be_bytes());
                    bytes[19] = if order % 2 == 0 { b'B' } else { b'S' };
                }
                bytes
            })
    }

    proptest! {
        /// Prefetching reads bytes nobody checked (the framing ahead is not validated): no
        /// bytes make it panic, and the books are as they were.
        #[test]
        fn prefetch_takes_any_bytes(
            far in upcoming_message(),
            mid in upcoming_message(),
            near in upcoming_message(),
        ) {
            let config = BookConfig { max_orders: 64, max_books: 4, levels_per_side: 8 };
            let mut books = Books::new(config).expect("small tables");
            for (i, side) in [b'B', b'S', b'B'].into_iter().enumerate() {
                let price = Price(1_000 + 100 * i as u32);
                books.add(Locate(7), side, OrderRef(100 + i as u64), 10, price);
            }
            let before = books.top_of_book(Locate(7));
            books.prefetch(TouchesAhead {
                far: Touches::of_itch(&far),
                mid: Touches::of_itch(&mid),
                near: Touches::of_itch(&near),
            });
            prop_assert_eq!(books.top_of_book(Locate(7)), before);
            prop_assert!(books.check_invariants().is_ok());
        }
    }

    #[test]
    fn clearing_the_orders_empties_every_book_and_keeps_symbols_and_states() {
        let config = BookConfig {
            max_orders: 64,
            max_books: 4,
            levels_per_side: 8,
        };
        let mut books = Books::new(config).expect("small tables");
        books.set_symbol(Locate(3), ticklane_itch::Alpha(*b"AAPL    "));
        for (i, locate) in [3u16, 3, 5].into_iter().enumerate() {
            let side = if i % 2 == 0 { b'B' } else { b'S' };
            books.add(Locate(locate), side, OrderRef(i as u64), 10, Price(1_000));
        }
        assert!(books.top_of_book(Locate(3)).is_crossed());
        assert_eq!(books.clear_orders(), 3);
        for locate in [Locate(3), Locate(5)] {
            assert_eq!(
                books.top_of_book(locate),
                TopOfBook::default(),
                "{locate:?}"
            );
            assert!(
                books.side(locate, Side::Bid).is_some(),
                "the book stays open"
            );
        }
        assert_eq!(books.symbol(Locate(3)), b"AAPL");
        assert_eq!(books.crossed_books(), 0);
        assert!(books.check_invariants().is_ok());
        // The references are free again: a snapshot's adds reuse them.
        assert!(books
            .add(Locate(3), b'B', OrderRef(0), 5, Price(900))
            .is_some());
    }

    #[test]
    fn prefetching_pays_from_enough_books_or_enough_live_orders() {
        let config = BookConfig {
            max_orders: 64 << 10,
            max_books: 1024,
            levels_per_side: 8,
        };
        let mut books = Books::new(config).expect("tables");
        for locate in 0..crate::PREFETCH_FROM_BOOKS as u16 {
            assert!(!books.worth_prefetching(), "{locate} books");
            books.add(
                Locate(locate),
                b'B',
                OrderRef(u64::from(locate)),
                1,
                Price(100),
            );
        }
        assert!(books.worth_prefetching(), "as many books as the threshold");

        let mut books = Books::new(config).expect("tables");
        for r in 0..crate::PREFETCH_FROM_ORDERS as u64 {
            assert!(!books.worth_prefetching(), "{r} orders");
            books.add(Locate(1), b'S', OrderRef(r), 1, Price(100 + (r % 8) as u32));
        }
        assert!(
            books.worth_prefetching(),
            "as many live orders as the threshold"
        );
        books.delete(OrderRef(0));
        assert!(!books.worth_prefetching(), "one fewer");
    }

    #[test]
    fn a_symbol_no_output_carries_as_is_is_kept_with_question_marks_and_counted() {
        let config = BookConfig {
            max_orders: 16,
            max_books: 4,
            levels_per_side: 4,
        };
        let mut books = Books::new(config).expect("tables");
        books.set_symbol(Locate(3), ticklane_itch::Alpha(*b"A,B\"\n\xffC "));
        assert_eq!(books.symbol(Locate(3)), b"A?B???C");
        assert_eq!(books.counters().symbols_replaced, 1);
        books.set_symbol(Locate(3), ticklane_itch::Alpha(*b"BRK.A   "));
        assert_eq!(books.symbol(Locate(3)), b"BRK.A");
        assert_eq!(
            books.counters().symbols_replaced,
            1,
            "a clean symbol counts nothing"
        );
    }

    #[test]
    fn sides_grow_through_their_windows_and_keep_their_levels() {
        // 100 levels per side: windows of 16, 32, 64 and then 100. Two books' sides grow
        // in turns, so each window lands after the other book's and every move copies.
        let config = BookConfig {
            max_orders: 512,
            max_books: 2,
            levels_per_side: 100,
        };
        let mut books = Books::new(config).expect("tables");
        for k in 0..100u32 {
            for (i, (locate, side)) in [(1, b'B'), (2, b'S'), (1, b'S')].into_iter().enumerate() {
                let order_ref = OrderRef(u64::from(k) * 3 + i as u64);
                // Prices that arrive out of order, so new levels open inside the ladder.
                let price = Price(1_000 + (k * 37) % 100);
                assert!(books
                    .add(Locate(locate), side, order_ref, k + 1, price)
                    .is_some());
            }
        }
        for (locate, side) in [(1, Side::Bid), (2, Side::Ask), (1, Side::Ask)] {
            let view = books.side(Locate(locate), side).expect("a book");
            let prices: Vec<u32> = view.best_first().map(|l| l.price.0).collect();
            let mut expect: Vec<u32> = (1_000..1_100).collect();
            if side == Side::Bid {
                expect.reverse();
            }
            assert_eq!(prices, expect, "{locate} {side:?}");
            let k_at = |price: u32| (0..100u32).find(|k| 1_000 + (k * 37) % 100 == price);
            for level in view.best_first() {
                let k = k_at(level.price.0).expect("a price added");
                assert_eq!((level.qty, level.orders), (u64::from(k + 1), 1));
            }
        }
        let before = books.counters().rejected_level_capacity;
        assert!(books
            .add(Locate(1), b'B', OrderRef(9_999), 1, Price(5))
            .is_none());
        assert_eq!(
            books.counters().rejected_level_capacity,
            before + 1,
            "a full side"
        );
        assert!(
            books
                .add(Locate(1), b'B', OrderRef(9_999), 1, Price(1_050))
                .is_some(),
            "a full side still takes orders at its levels"
        );
        assert_eq!(books.check_invariants(), Ok(()));
    }
}
