//! The top-of-book rows handed to a consumer in the same process (the Python package) in
//! chunks, instead of written to a file: the writer thread fills a chunk of
//! [`RowChunks::rows`] rows and sends it on a bounded channel, so a consumer that stops
//! taking them stops the replay (memory stays at the channel's chunks), and a consumer
//! that goes away ends it with an error instead of filling memory.
#![forbid(unsafe_code)]

use std::io;
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, OnceLock};

use ticklane_book::BboRow;

/// Where a replay sends its top-of-book rows, and in chunks of how many.
#[derive(Clone, Debug)]
pub struct RowChunks {
    /// Rows a chunk holds (the last may hold fewer); at least 1.
    pub rows: usize,
    /// The consumer's end; each send waits while the channel is full.
    pub to: SyncSender<Vec<BboRow>>,
    /// Set by the replay, before its first rows, to the New York midnight (ns since the
    /// Unix epoch) its rows' `timestamp_ns` count from, where the input itself dates them
    /// (a DBN input: `--date`, its metadata or its first record); an ITCH input leaves it
    /// unset, its date being the caller's or the file name's.
    pub midnight_utc_ns: Arc<OnceLock<u64>>,
}

/// The writer's side: the chunk being filled.
#[derive(Debug)]
pub struct ChunkSink {
    chunks: RowChunks,
    chunk: Vec<BboRow>,
}

impl ChunkSink {
    /// An empty chunk for `chunks`.
    pub fn new(chunks: RowChunks) -> Self {
        let rows = chunks.rows.max(1);
        ChunkSink {
            chunk: Vec::with_capacity(rows),
            chunks: RowChunks { rows, ..chunks },
        }
    }

    /// Adds `row`; sends the chunk when it is full.
    ///
    /// # Errors
    ///
    /// If the consumer has gone ([`io::ErrorKind::BrokenPipe`]).
    #[inline]
    pub fn push(&mut self, row: &BboRow) -> io::Result<()> {
        self.chunk.push(*row);
        if self.chunk.len() == self.chunks.rows {
            self.send()?;
        }
        Ok(())
    }

    fn send(&mut self) -> io::Result<()> {
        let full = std::mem::replace(&mut self.chunk, Vec::with_capacity(self.chunks.rows));
        self.chunks.to.send(full).map_err(|_| {
            io::Error::new(
                io::ErrorKind::BrokenPipe,
                "the consumer of the top-of-book rows has gone",
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

    #[test]
    fn rows_arrive_in_order_in_full_chunks_then_the_rest() {
        let (to, from) = sync_channel(8);
        let mut sink = ChunkSink::new(RowChunks {
            rows: 3,
            to,
            midnight_utc_ns: Arc::default(),
        });
        for i in 0..7 {
            sink.push(&row(i)).unwrap();
        }
        sink.finish().unwrap();
        let chunks: Vec<Vec<u64>> = from
            .iter()
            .map(|c| c.iter().map(|r| r.msg_index).collect())
            .collect();
        assert_eq!(chunks, vec![vec![0, 1, 2], vec![3, 4, 5], vec![6]]);
    }

    #[test]
    fn a_consumer_that_went_away_is_an_error_not_a_growing_queue() {
        let (to, from) = sync_channel(1);
        drop(from);
        let mut sink = ChunkSink::new(RowChunks {
            rows: 1,
            to,
            midnight_utc_ns: Arc::default(),
        });
        let err = sink.push(&row(0)).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
    }
}
