//! Derived output written by a thread of its own: the book thread writes each row straight
//! into an SPSC ring's next slot and publishes the rows a batch at a time, and never waits on a disk or an encoder; a
//! writer thread takes the rows out and does whatever its [`RowWriter`] does with them
//! (format CSV, fill Arrow columns). With two cores the two halves run side by side.
//!
//! One hand-off for every such output (the top-of-book CSV, the Parquet views), generic over
//! the row and over what is done with it.
//!
//! ```
//! use ticklane_outputs::writer_thread::{RowWriter, WriterThread};
//!
//! struct Sum(u64);
//! impl RowWriter<u64> for Sum {
//!     type Output = u64;
//!     type Error = std::io::Error;
//!     fn write_row(&mut self, row: &u64) -> Result<(), Self::Error> {
//!         self.0 += row;
//!         Ok(())
//!     }
//!     fn finish(self) -> Result<u64, Self::Error> {
//!         Ok(self.0)
//!     }
//! }
//!
//! let mut thread = WriterThread::spawn("sum", 1024, Sum(0)).expect("spawned");
//! for i in 1..=100 {
//!     thread.push(i).expect("the writer runs");
//! }
//! assert_eq!(thread.finish().expect("finished"), 5050);
//! ```

use std::io;
use std::thread::{self, JoinHandle};

use ticklane_ring::ring::{Consumer, Producer, Ring};

/// Rows staged in the ring before one publish (one release store per batch, not per row).
const BATCH: usize = 64;
/// Rows the writer takes per read, so it releases slots to the producer as it goes.
const READ_BATCH: usize = 1024;
/// Empty or full polls that spin before the thread yields its core.
const SPINS_BEFORE_YIELD: u32 = 64;
/// Polls that yield before the thread sleeps between polls: a side that waits longer is
/// waiting for the other side's disk or encoders, and a yielding loop would take a core
/// from them where threads outnumber cores.
const YIELDS_BEFORE_SLEEP: u32 = 64;
/// The sleep between polls after that: far shorter than the ring takes to fill or drain
/// (thousands of rows at a few million a second), so neither side ever runs dry for it.
const SLEEP: std::time::Duration = std::time::Duration::from_micros(50);

/// What the writer thread does with each row, and what it hands back at the end.
///
/// It is moved to the writer thread, so it is `Send`; `finish` runs there too, after the
/// last row.
pub trait RowWriter<T>: Send + 'static {
    /// What [`RowWriter::finish`] hands back to the thread that calls
    /// [`WriterThread::finish`] (a file whose footer waits for the replay's summary, say).
    type Output: Send + 'static;
    /// Why a row or the end could not be written.
    type Error: From<WriterThreadPanicked> + Send + 'static;

    /// Takes one row.
    ///
    /// # Errors
    ///
    /// Whatever writing it returns; the thread then stops and [`WriterThread::finish`]
    /// returns this error.
    fn write_row(&mut self, row: &T) -> Result<(), Self::Error>;

    /// Writes out what is buffered, after the last row.
    ///
    /// # Errors
    ///
    /// Whatever writing returns.
    fn finish(self) -> Result<Self::Output, Self::Error>;
}

/// The writer thread stopped before the book thread did: its error is returned by
/// [`WriterThread::finish`]. `Copy`, so the hot path never allocates to say it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the {name} writer thread stopped early (its error comes when the output is finished)")]
pub struct WriterStopped {
    /// The thread's name.
    pub name: &'static str,
}

impl From<WriterStopped> for io::Error {
    fn from(e: WriterStopped) -> Self {
        io::Error::other(e)
    }
}

/// The writer thread panicked (a bug: writers return errors, never panic on input).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the {name} writer thread panicked")]
pub struct WriterThreadPanicked {
    /// The thread's name.
    pub name: &'static str,
}

impl From<WriterThreadPanicked> for io::Error {
    fn from(e: WriterThreadPanicked) -> Self {
        io::Error::other(e)
    }
}

/// The producing half: rows go to the writer thread in batches of 64.
///
/// `Send` (it may be built on one thread and used on another) but not meant to be shared.
pub struct WriterThread<T, W: RowWriter<T>> {
    name: &'static str,
    /// Rows are staged in the ring's slots ([`Producer::stage`]) and published every
    /// [`BATCH`]: each row is copied once, into the slot the writer reads.
    producer: Producer<T>,
    /// Rows staged since the last publish.
    staged: usize,
    writer: JoinHandle<Result<W::Output, W::Error>>,
}

impl<T: Copy + Send + 'static, W: RowWriter<T>> WriterThread<T, W> {
    /// Starts a thread named `name` that hands every row pushed to `writer`, through a ring
    /// of `slots` rows (rounded up to a power of two by the ring).
    ///
    /// # Errors
    ///
    /// If the thread cannot be started.
    pub fn spawn(name: &'static str, slots: usize, writer: W) -> io::Result<Self> {
        let (producer, consumer) = Ring::new(slots);
        let writer = thread::Builder::new()
            .name(name.into())
            .spawn(move || drain(consumer, writer))?;
        Ok(WriterThread {
            name,
            producer,
            staged: 0,
            writer,
        })
    }

    /// Takes one row; publishes a batch every 64.
    ///
    /// # Errors
    ///
    /// [`WriterStopped`] if the writer thread has stopped (on an error of its own, which
    /// [`WriterThread::finish`] returns).
    #[inline(always)]
    pub fn push(&mut self, row: T) -> Result<(), WriterStopped> {
        if let Err(full) = self.producer.stage(row) {
            return self.push_into_full(full.into_inner());
        }
        self.staged += 1;
        if self.staged == BATCH {
            self.publish();
        }
        Ok(())
    }

    #[inline(always)]
    fn publish(&mut self) {
        self.producer.publish_staged();
        self.staged = 0;
    }

    /// The ring is full: publishes what is staged and waits for the writer to free a slot.
    #[cold]
    fn push_into_full(&mut self, mut row: T) -> Result<(), WriterStopped> {
        self.publish();
        let mut idle = 0u32;
        loop {
            match self.producer.stage(row) {
                Ok(()) => {
                    self.staged = 1;
                    return Ok(());
                }
                Err(full) => row = full.into_inner(),
            }
            if self.writer.is_finished() {
                return Err(WriterStopped { name: self.name });
            }
            wait(&mut idle);
        }
    }

    /// Publishes the last rows, waits for the writer to write them and finish, and returns
    /// what it handed back.
    ///
    /// # Errors
    ///
    /// The writer's own error if it stopped on one, or [`WriterThreadPanicked`] as
    /// `W::Error`.
    pub fn finish(mut self) -> Result<W::Output, W::Error> {
        self.publish();
        // Dropping the producer tells the writer that no more rows come.
        drop(self.producer);
        let name = self.name;
        // Every row is in the ring by now (a row is staged or refused, never held here), so
        // the writer's own result is the whole answer.
        self.writer
            .join()
            .unwrap_or_else(|_| Err(WriterThreadPanicked { name }.into()))
    }
}

/// Spin a little, then yield the core, then sleep between polls: the default must behave on
/// a 2-core machine.
fn wait(idle: &mut u32) {
    if *idle < SPINS_BEFORE_YIELD {
        *idle += 1;
        std::hint::spin_loop();
    } else if *idle < SPINS_BEFORE_YIELD + YIELDS_BEFORE_SLEEP {
        *idle += 1;
        thread::yield_now();
    } else {
        thread::sleep(SLEEP);
    }
}

/// The writer thread: hands rows to `writer` until the producer is gone and the ring is
/// empty, then finishes it.
fn drain<T, W: RowWriter<T>>(
    mut consumer: Consumer<T>,
    mut writer: W,
) -> Result<W::Output, W::Error> {
    let mut idle = 0u32;
    loop {
        // Read before looking at the ring: rows published before the producer left are
        // then seen by the read below.
        let abandoned = consumer.is_abandoned();
        let mut batch = consumer.read_batch(READ_BATCH);
        if batch.len() == 0 {
            drop(batch);
            if abandoned {
                return writer.finish();
            }
            wait(&mut idle);
            continue;
        }
        idle = 0;
        while let Some(written) = batch.next_with(|row| writer.write_row(row)) {
            written?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keeps every row, in order; fails on the row `fail_at` if given.
    struct Keep {
        rows: Vec<u32>,
        fail_at: Option<u32>,
    }

    impl RowWriter<u32> for Keep {
        type Output = Vec<u32>;
        type Error = io::Error;
        fn write_row(&mut self, row: &u32) -> io::Result<()> {
            if Some(*row) == self.fail_at {
                return Err(io::Error::other(format!("refused row {row}")));
            }
            self.rows.push(*row);
            Ok(())
        }
        fn finish(self) -> io::Result<Vec<u32>> {
            Ok(self.rows)
        }
    }

    #[test]
    fn every_row_arrives_in_order_through_a_small_ring() {
        // 10,007 rows (not a multiple of the batch) through 16 slots: the producer waits on
        // a full ring many times, and the last partial batch is published by `finish`.
        let writer = Keep {
            rows: Vec::new(),
            fail_at: None,
        };
        let mut thread = WriterThread::spawn("keep", 16, writer).expect("spawn");
        for i in 0..10_007u32 {
            thread.push(i).expect("running");
        }
        let rows = thread.finish().expect("finish");
        assert_eq!(rows, (0..10_007).collect::<Vec<_>>());
    }

    #[test]
    fn the_writers_own_error_is_what_finish_returns() {
        let writer = Keep {
            rows: Vec::new(),
            fail_at: Some(100),
        };
        let mut thread = WriterThread::spawn("failing", 16, writer).expect("spawn");
        let mut stopped = None;
        for i in 0..100_000u32 {
            if let Err(e) = thread.push(i) {
                stopped = Some(e);
                break;
            }
        }
        // The push that found the thread gone says so, without the error (it is Copy) ...
        assert_eq!(stopped, Some(WriterStopped { name: "failing" }));
        // ... and finish returns the writer's own.
        let error = thread.finish().expect_err("the writer failed");
        assert_eq!(error.to_string(), "refused row 100");
    }
}
