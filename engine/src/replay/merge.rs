//! The merge of `replay --threads N`, on the calling thread: every message in input order,
//! by the first book thread's route (which book thread owns it), each book thread's answer
//! placed in the outputs where one thread would have written it: a row's `--bbo-out` line and its typed Parquet row,
//! a message's DBN records, tickers and metadata request, its MBP-10 records for Parquet;
//! and after each epoch, the sampled depth of its sample points: at each boundary, every
//! thread's stocks in locate order, as one thread writes them. It also keeps the
//! live-order count of all books together, whose maximum is the summary's
//! `live_orders_peak` (a per-thread peak would not add up to it).
//!
//! Each placement is a copy: the work of making rows and records (formatting, the MBP
//! levels) was spread over the book threads.

use std::fs::File;
use std::io::{self, BufWriter};
use std::mem;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, SyncSender};

use ticklane_feed::itch::Nanos;

use super::book_thread::OutBatch;
use super::run::{mbp10_failed, ReplayError};
use crate::book::BboRow;
use crate::csv::CsvBuffer;
use crate::dbn_out::{BatchCursor, MergedDbnOut};
use crate::parquet_out::{BboParquet, Mbp10Parquet};
use crate::row_chunks::ChunkSink;
use crate::sample::{CapturedStock, SampleWriter};

/// The outputs the merge writes; the files that wait for the summary (DBN's
/// metadata end, Parquet's footer) come back unfinished in [`Merged`].
#[derive(Default)]
pub(super) struct MergeOutputs {
    /// `--bbo-out` and its path (for errors).
    pub csv: Option<(CsvBuffer<BufWriter<File>>, PathBuf)>,
    pub dbn: Option<MergedDbnOut>,
    pub parquet_bbo: Option<BboParquet>,
    /// The typed rows in chunks, for a consumer in this process.
    pub chunks: Option<ChunkSink<BboRow>>,
    pub mbp10: Option<Mbp10Parquet>,
    /// `--sample-out`.
    pub sample: Option<SampleWriter>,
}

/// What the merge hands back at the end.
pub(super) struct Merged {
    pub live_orders_peak: u64,
    /// The outputs still to finish (the CSV is finished).
    pub outputs: MergeOutputs,
}

/// Per book thread, where the merge is in its batch.
#[derive(Clone, Copy, Default)]
struct At {
    effect: usize,
    row: usize,
    records: BatchCursor,
    mbp10: BatchCursor,
}

/// Walks every epoch's route (the first book thread's answer carries it); ends when the
/// book threads hang up, or at an output's error.
pub(super) fn merge(
    answers: Vec<Receiver<OutBatch>>,
    recycle_out: Vec<SyncSender<OutBatch>>,
    mut outputs: MergeOutputs,
) -> Result<Merged, ReplayError> {
    let threads = answers.len();
    let mut batches: Vec<OutBatch> = (0..threads).map(|_| OutBatch::default()).collect();
    let mut at = vec![At::default(); threads];
    // Every thread's stocks at one sample point, (thread, stock), and where each thread's
    // next point starts: reused epoch after epoch.
    let mut stocks: Vec<(usize, CapturedStock)> = Vec::new();
    let mut cursors = vec![0usize; threads];
    let (mut live, mut peak) = (0i64, 0i64);
    'epochs: loop {
        for (t, answer) in answers.iter().enumerate() {
            batches[t] = match answer.recv() {
                Ok(batch) => batch,
                // Every thread answers every epoch: the first one's end is the input's.
                Err(_) if t == 0 => break 'epochs,
                Err(_) => {
                    return Err(ReplayError::Output {
                        path: "(merge)".into(),
                        source: io::Error::other("a book thread stopped early"),
                    })
                }
            };
        }
        at.fill(At::default());
        for &t in &batches[0].route {
            let t = usize::from(t);
            let (at, batch) = (&mut at[t], &batches[t]);
            let k = at.effect;
            let effect = batch.effects[k];
            at.effect += 1;
            live += effect.live_change();
            peak = peak.max(live);
            if effect.row() {
                place_row(&mut outputs, batch, at.row)?;
                at.row += 1;
            }
            if let Some(dbn) = &mut outputs.dbn {
                dbn.place(batch.records.message(k, &mut at.records))?;
            }
            if let Some(mbp10) = &mut outputs.mbp10 {
                let placed = batch.mbp10.message(k, &mut at.mbp10).push_into(mbp10);
                if let Err(e) = placed {
                    return Err(mbp10_failed(outputs.mbp10.take(), e));
                }
            }
        }
        if let Some(sample) = &mut outputs.sample {
            write_samples(sample, &batches, &mut stocks, &mut cursors);
        }
        for (t, batch) in batches.iter_mut().enumerate() {
            let _ = recycle_out[t].try_send(mem::take(batch));
        }
    }
    if let Some((csv, path)) = outputs.csv.take() {
        csv.finish()
            .map_err(|source| ReplayError::Output { path, source })?;
    }
    if let Some(chunks) = outputs.chunks.take() {
        chunks.finish().map_err(ReplayError::Consumer)?;
    }
    Ok(Merged {
        live_orders_peak: peak.max(0) as u64,
        outputs,
    })
}

/// Writes the epoch's sample points: at each boundary, every thread's stocks in locate
/// order (the stocks' depths are the same at every boundary of a point: forward fill).
#[cold]
fn write_samples(
    sample: &mut SampleWriter,
    batches: &[OutBatch],
    stocks: &mut Vec<(usize, CapturedStock)>,
    cursors: &mut [usize],
) {
    // Every book thread got the same points.
    let Some(first) = batches.first() else {
        return;
    };
    cursors.fill(0);
    for (p, point) in first.points.iter().enumerate() {
        stocks.clear();
        for (t, batch) in batches.iter().enumerate() {
            let here = batch.depths.at_point(p as u32, &mut cursors[t]);
            stocks.extend(here.iter().map(|s| (t, *s)));
        }
        // A locate's book is in one thread only.
        stocks.sort_unstable_by_key(|(_, s)| s.locate());
        if stocks.is_empty() {
            continue;
        }
        for boundary in point.boundaries.iter() {
            if sample.failed() {
                return;
            }
            for (t, stock) in stocks.iter() {
                let depth = batches[*t].depths.depth(stock);
                sample.row(Nanos(boundary), point.before - 1, &depth);
            }
        }
    }
}

/// Places row `row` of `batch` in the top-of-book outputs.
#[inline]
fn place_row(outputs: &mut MergeOutputs, batch: &OutBatch, row: usize) -> Result<(), ReplayError> {
    if let Some((csv, path)) = &mut outputs.csv {
        csv.bytes(batch.rows.row(row))
            .map_err(|source| ReplayError::Output {
                path: path.clone(),
                source,
            })?;
    }
    if let Some(parquet) = &mut outputs.parquet_bbo {
        parquet.push(&batch.typed_rows[row])?;
    }
    if let Some(chunks) = &mut outputs.chunks {
        chunks
            .push(batch.typed_rows[row])
            .map_err(ReplayError::Consumer)?;
    }
    Ok(())
}
