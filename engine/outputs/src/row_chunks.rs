//! The rows of a replay handed to a consumer in the same process (the Python package) in
//! chunks, instead of written to files: each table's rows are gathered into chunks of
//! [`RowChunks::rows`] and sent, every table on the one bounded channel, so a consumer
//! that stops taking them stops the replay (memory stays at the channel's chunks), one
//! that goes away ends it with an error instead of filling memory, and a consumer taking
//! from one channel can never wait on one table while the replay waits on another.
//!
//! The top-of-book rows come from the top-of-book writer thread, the others
//! ([`crate::table_tap`]) from the book thread, each table's chunks in the order made.
#![forbid(unsafe_code)]

use std::io;
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, OnceLock};

use ticklane_book::BboRow;

use crate::table_rows::{OrderRow, StatusRow, TradeRow};

/// One table's rows, in the order the replay made them.
#[derive(Debug)]
pub enum Chunk {
    /// Top-of-book rows, as `--bbo-out` writes them.
    Bbo(Vec<BboRow>),
    /// Trades.
    Trades(Vec<TradeRow>),
    /// Order events, as DBN MBO records.
    Orders(Vec<OrderRow>),
    /// Status messages.
    Status(Vec<StatusRow>),
}

/// The tables a consumer asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tables {
    /// Top of book.
    pub bbo: bool,
    /// Trades.
    pub trades: bool,
    /// Order events.
    pub orders: bool,
    /// Status messages.
    pub status: bool,
}

impl Tables {
    /// Whether any table the book thread makes ([`crate::table_tap`]) is asked for.
    pub fn any_tapped(self) -> bool {
        self.trades || self.orders || self.status
    }
}

/// Where a replay sends its rows, in chunks of how many, and which tables.
#[derive(Clone, Debug)]
pub struct RowChunks {
    /// Rows a chunk holds (the last of a table may hold fewer); at least 1.
    pub rows: usize,
    /// The consumer's end; each send waits while the channel is full.
    pub to: SyncSender<Chunk>,
    /// The tables to send.
    pub tables: Tables,
    /// Set by the replay, before its first rows, to the New York midnight (ns since the
    /// Unix epoch) its rows' `timestamp_ns` count from, where the input itself dates them
    /// (a DBN input: `--date`, its metadata or its first record); an ITCH input leaves it
    /// unset, its date being the caller's or the file name's.
    pub midnight_utc_ns: Arc<OnceLock<u64>>,
}

/// One table's side: the chunk being filled.
#[derive(Debug)]
pub struct ChunkSink<R> {
    to: SyncSender<Chunk>,
    rows: usize,
    chunk: Vec<R>,
    wrap: fn(Vec<R>) -> Chunk,
}

impl ChunkSink<BboRow> {
    /// The top-of-book rows' sink.
    pub fn bbo(chunks: &RowChunks) -> Self {
        ChunkSink::new(chunks, Chunk::Bbo)
    }
}

impl<R> ChunkSink<R> {
    /// An empty chunk of the table that `wrap` makes chunks of.
    pub fn new(chunks: &RowChunks, wrap: fn(Vec<R>) -> Chunk) -> Self {
        let rows = chunks.rows.max(1);
        ChunkSink {
            to: chunks.to.clone(),
            rows,
            chunk: Vec::with_capacity(rows),
            wrap,
        }
    }

    /// Adds `row`; sends the chunk when it is full.
    ///
    /// # Errors
    ///
    /// If the consumer has gone ([`io::ErrorKind::BrokenPipe`]).
    #[inline]
    pub fn push(&mut self, row: R) -> io::Result<()> {
        self.chunk.push(row);
        if self.chunk.len() == self.rows {
            self.send()?;
        }
        Ok(())
    }

    fn send(&mut self) -> io::Result<()> {
        let full = std::mem::replace(&mut self.chunk, Vec::with_capacity(self.rows));
        self.to.send((self.wrap)(full)).map_err(|_| {
            io::Error::new(
                io::ErrorKind::BrokenPipe,
                "the consumer of the replay's rows has gone",
            )
        })
    }

    /// Sends what is left.
    ///
    /// # Errors
    ///
    /// If the consumer has gone.
    pub fn finish(mut self) -> io::Result<()> {
        if self.chunk.is_empty() {
            return Ok(());
        }
        self.send()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::sync_channel;

    fn row(i: u64) -> BboRow {
        let mut row: BboRow = bytemuck::Zeroable::zeroed();
        row.msg_index = i;
        row
    }

    fn chunks(rows: usize, to: SyncSender<Chunk>) -> RowChunks {
        RowChunks {
            rows,
            to,
            tables: Tables::default(),
            midnight_utc_ns: Arc::default(),
        }
    }

    #[test]
    fn rows_arrive_in_order_in_full_chunks_then_the_rest() {
        let (to, from) = sync_channel(8);
        let mut sink = ChunkSink::bbo(&chunks(3, to));
        for i in 0..7 {
            sink.push(row(i)).unwrap();
        }
        sink.finish().unwrap();
        let chunks: Vec<Vec<u64>> = from
            .iter()
            .map(|c| match c {
                Chunk::Bbo(rows) => rows.iter().map(|r| r.msg_index).collect(),
                other => panic!("not a bbo chunk: {other:?}"),
            })
            .collect();
        assert_eq!(chunks, vec![vec![0, 1, 2], vec![3, 4, 5], vec![6]]);
    }

    #[test]
    fn a_consumer_that_went_away_is_an_error_not_a_growing_queue() {
        let (to, from) = sync_channel(1);
        drop(from);
        let mut sink = ChunkSink::bbo(&chunks(1, to));
        let err = sink.push(row(0)).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
    }
}
