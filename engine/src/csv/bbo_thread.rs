//! The top-of-book stream written by a thread of its own.
//!
//! Formatting text is derived work: the book thread only copies each changed top of book
//! (one cache line) into a ring, in batches, and a writer thread formats and writes it. The
//! book thread never waits on the disk, and with two cores the two halves run side by side.

use std::io::{self, Write};
use std::thread::{self, JoinHandle};

use bytemuck::Zeroable;

use super::bbo_csv::BboCsvWriter;
use crate::book::{BboRow, BboSink};
use crate::output_filter::OutputFilter;
use crate::ring::{Consumer, Producer, Ring};

/// Rows gathered before one publish into the ring.
const BATCH: usize = 64;
/// Ring slots (64 bytes each: 4 MiB).
const RING_SLOTS: usize = 1 << 16;
/// Rows the writer takes per batch, so it releases slots to the producer as it goes.
const READ_BATCH: usize = 1024;
/// Empty or full polls that spin before the thread yields its core.
const SPINS_BEFORE_YIELD: u32 = 64;

/// The book thread's half: rows go to the writer thread in batches.
pub struct ThreadedBboSink {
    producer: Producer<BboRow>,
    batch: [BboRow; BATCH],
    len: usize,
    writer: JoinHandle<io::Result<()>>,
}

impl ThreadedBboSink {
    /// Starts the writer thread, which writes the header and then every row to `sink` as CSV.
    ///
    /// # Errors
    ///
    /// If the thread cannot be started.
    pub fn spawn<W: Write + Send + 'static>(sink: W) -> io::Result<Self> {
        Self::spawn_filtered(sink, OutputFilter::default())
    }

    /// [`ThreadedBboSink::spawn`] writing only the rows `filter` keeps (`--symbols`,
    /// `--between`): the writer thread filters, so the book thread pays nothing for it.
    ///
    /// # Errors
    ///
    /// If the thread cannot be started.
    pub fn spawn_filtered<W: Write + Send + 'static>(
        sink: W,
        filter: OutputFilter,
    ) -> io::Result<Self> {
        let (producer, consumer) = Ring::new(RING_SLOTS);
        let writer = thread::Builder::new()
            .name("bbo-writer".into())
            .spawn(move || write_rows(consumer, BboCsvWriter::new(sink)?, &filter))?;
        Ok(ThreadedBboSink {
            producer,
            batch: [BboRow::zeroed(); BATCH],
            len: 0,
            writer,
        })
    }

    fn publish(&mut self) -> io::Result<()> {
        let mut sent = 0;
        let mut idle = 0u32;
        while sent < self.len {
            let n = self.producer.push_slice(&self.batch[sent..self.len]);
            sent += n;
            if n == 0 {
                if self.writer.is_finished() {
                    return Err(io::Error::other(
                        "the top-of-book writer thread stopped early",
                    ));
                }
                wait(&mut idle);
            }
        }
        self.len = 0;
        Ok(())
    }
}

impl BboSink for ThreadedBboSink {
    #[inline]
    fn write_row(&mut self, row: &BboRow) -> io::Result<()> {
        self.batch[self.len] = *row;
        self.len += 1;
        if self.len == BATCH {
            self.publish()?;
        }
        Ok(())
    }

    fn finish(mut self) -> io::Result<()> {
        let published = self.publish();
        // Dropping the producer tells the writer that no more rows come.
        drop(self.producer);
        let written = self
            .writer
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the top-of-book writer thread panicked")));
        published.and(written)
    }
}

/// Spin a little, then give the core away: the default must behave on a 2-core machine.
fn wait(idle: &mut u32) {
    if *idle < SPINS_BEFORE_YIELD {
        *idle += 1;
        std::hint::spin_loop();
    } else {
        thread::yield_now();
    }
}

/// The writer thread: formats rows until the producer is gone and the ring is empty.
fn write_rows<W: Write>(
    mut consumer: Consumer<BboRow>,
    mut csv: BboCsvWriter<W>,
    filter: &OutputFilter,
) -> io::Result<()> {
    let mut idle = 0u32;
    loop {
        // Read before looking at the ring: rows published before the producer left are
        // then seen by the read below.
        let abandoned = consumer.is_abandoned();
        let mut batch = consumer.read_batch(READ_BATCH);
        if batch.len() == 0 {
            drop(batch);
            if abandoned {
                return csv.finish();
            }
            wait(&mut idle);
            continue;
        }
        idle = 0;
        let keep_all = filter.keeps_all();
        for row in &mut batch {
            if keep_all
                || filter.keeps(
                    row.symbol_trimmed(),
                    ticklane_feed::itch::Nanos(row.timestamp_ns),
                )
            {
                csv.write_row(&row)?;
            }
        }
    }
}
