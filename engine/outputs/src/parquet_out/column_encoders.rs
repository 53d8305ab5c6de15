//! A row group's columns encoded and compressed on several threads.
//!
//! `ArrowWriter` encodes every column of a batch, then compresses every page, on the thread
//! that calls it: for MBP-10 (70 columns) that thread was the replay's bound, with the other
//! cores idle. Here each column belongs to one of a few encoder threads, for the whole file:
//! a batch (reference-counted, not copied) goes to every encoder, each builds and writes
//! its columns with the `parquet` crate's own [`ArrowColumnWriter`], and at the end of a
//! row group each hands back its finished column chunks, which are appended in column
//! order. The bytes are those `ArrowWriter` writes (tested), since the same column writers
//! do the same work; only where it runs changes.
//!
//! A batch is a [`ColumnSource`]: a `RecordBatch`, whose arrays are built already, or rows
//! that the encoders turn into their own columns (MBP-10: 70 columns gathered from rows on
//! the encoder threads, not on the one thread that receives the rows).

use std::ops::Range;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::Schema;
use parquet::arrow::arrow_writer::{
    compute_leaves, ArrowColumnChunk, ArrowColumnWriter, ArrowRowGroupWriterFactory,
};
use parquet::errors::ParquetError;
use parquet::file::writer::SerializedFileWriter;

/// Most encoder threads a file gets, however many cores there are: 70 columns split eight
/// ways already leave each thread a few hundred thousand values per row group.
const MOST_ENCODERS: usize = 8;

/// Batches queued for an encoder before the caller waits for it.
const QUEUED_BATCHES: usize = 2;

/// A batch of rows, as columns on demand: each encoder asks for its own.
pub(super) trait ColumnSource: Send + Sync + 'static {
    /// Rows in the batch.
    fn num_rows(&self) -> usize;
    /// Column `i` of the file's schema, every row of the batch.
    fn column(&self, i: usize) -> ArrayRef;
}

impl ColumnSource for RecordBatch {
    fn num_rows(&self) -> usize {
        RecordBatch::num_rows(self)
    }

    fn column(&self, i: usize) -> ArrayRef {
        Arc::clone(RecordBatch::column(self, i))
    }
}

/// One encoder thread's work.
enum Job {
    /// A new row group: the writers of this encoder's columns, with their column indices.
    Start(Vec<(usize, ArrowColumnWriter)>),
    /// These rows of a batch, for this encoder's columns.
    Write(Arc<dyn ColumnSource>, Range<usize>),
    /// End of the row group: close the writers, send back their chunks.
    Close,
}

type Chunks = Result<Vec<(usize, ArrowColumnChunk)>, ParquetError>;

/// An encoder thread and the way to it.
struct Encoder {
    /// `None` once the file is dropped: the thread's loop ends.
    jobs: Option<SyncSender<Job>>,
    chunks: Receiver<Chunks>,
    thread: Option<JoinHandle<()>>,
}

/// The encoder threads of one file, and the row group being filled.
pub(super) struct ColumnEncoders {
    schema: Arc<Schema>,
    factory: ArrowRowGroupWriterFactory,
    /// Column `i` is written by encoder `i % encoders.len()`.
    encoders: Vec<Encoder>,
    rows_per_group: usize,
    /// Rows in the row group being filled; 0 before its first batch.
    rows_in_group: usize,
    row_groups: usize,
}

/// How many encoder threads: one per core, at most [`MOST_ENCODERS`] (and
/// [`ColumnEncoders::start`] starts at most one per column).
pub(super) fn encoder_count() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    cores.clamp(1, MOST_ENCODERS)
}

impl ColumnEncoders {
    /// Starts `threads` encoder threads for the columns of `schema` (which must be flat: one
    /// leaf per field), writing row groups of at most `rows_per_group` rows.
    ///
    /// # Errors
    ///
    /// If a thread cannot be started; a nested schema.
    pub(super) fn start(
        schema: Arc<Schema>,
        factory: ArrowRowGroupWriterFactory,
        rows_per_group: usize,
        threads: usize,
    ) -> Result<Self, ParquetError> {
        let threads = threads.clamp(1, schema.fields().len().max(1));
        let mut encoders = Vec::with_capacity(threads);
        for i in 0..threads {
            let (jobs, inbox) = sync_channel(QUEUED_BATCHES);
            let (outbox, chunks) = sync_channel(1);
            let fields = Arc::clone(&schema);
            let thread = std::thread::Builder::new()
                .name(format!("parquet-enc-{i}"))
                .spawn(move || encode(&fields, &inbox, &outbox))
                .map_err(|e| ParquetError::External(Box::new(e)))?;
            encoders.push(Encoder {
                jobs: Some(jobs),
                chunks,
                thread: Some(thread),
            });
        }
        Ok(ColumnEncoders {
            schema,
            factory,
            encoders,
            rows_per_group: rows_per_group.max(1),
            rows_in_group: 0,
            row_groups: 0,
        })
    }

    /// Writes `batch`, ending a row group into `file` each time one is full.
    ///
    /// # Errors
    ///
    /// An encoder's error, or the file's.
    pub(super) fn write<W: std::io::Write + Send>(
        &mut self,
        batch: Arc<dyn ColumnSource>,
        file: &mut SerializedFileWriter<W>,
    ) -> Result<(), ParquetError> {
        let rows = batch.num_rows();
        let mut at = 0;
        while at < rows {
            if self.rows_in_group == 0 {
                self.start_row_group()?;
            }
            let n = (rows - at).min(self.rows_per_group - self.rows_in_group);
            for encoder in &self.encoders {
                encoder.send(Job::Write(Arc::clone(&batch), at..at + n))?;
            }
            self.rows_in_group += n;
            at += n;
            if self.rows_in_group == self.rows_per_group {
                self.end_row_group(file)?;
            }
        }
        Ok(())
    }

    /// Ends the row group being filled, if it has rows.
    ///
    /// # Errors
    ///
    /// An encoder's error, or the file's.
    pub(super) fn flush<W: std::io::Write + Send>(
        &mut self,
        file: &mut SerializedFileWriter<W>,
    ) -> Result<(), ParquetError> {
        if self.rows_in_group > 0 {
            self.end_row_group(file)?;
        }
        Ok(())
    }

    fn start_row_group(&mut self) -> Result<(), ParquetError> {
        let writers = self.factory.create_column_writers(self.row_groups)?;
        if writers.len() != self.schema.fields().len() {
            return Err(ParquetError::General(
                "a nested column: the encoders take one leaf per field".to_owned(),
            ));
        }
        let k = self.encoders.len();
        let mut shares: Vec<Vec<(usize, ArrowColumnWriter)>> = (0..k).map(|_| Vec::new()).collect();
        for (i, writer) in writers.into_iter().enumerate() {
            shares[i % k].push((i, writer));
        }
        for (encoder, share) in self.encoders.iter().zip(shares) {
            encoder.send(Job::Start(share))?;
        }
        Ok(())
    }

    /// Collects every encoder's chunks and appends them, in column order, as a row group.
    fn end_row_group<W: std::io::Write + Send>(
        &mut self,
        file: &mut SerializedFileWriter<W>,
    ) -> Result<(), ParquetError> {
        for encoder in &self.encoders {
            encoder.send(Job::Close)?;
        }
        let mut chunks = Vec::with_capacity(self.schema.fields().len());
        let mut failed = None;
        for encoder in &self.encoders {
            match encoder.chunks.recv() {
                Ok(Ok(mine)) => chunks.extend(mine),
                Ok(Err(e)) => failed = failed.or(Some(e)),
                Err(_) => failed = failed.or(Some(gone())),
            }
        }
        if let Some(e) = failed {
            return Err(e);
        }
        chunks.sort_unstable_by_key(|(i, _)| *i);
        let mut group = file.next_row_group()?;
        for (_, chunk) in chunks {
            chunk.append_to_row_group(&mut group)?;
        }
        group.close()?;
        self.rows_in_group = 0;
        self.row_groups += 1;
        Ok(())
    }
}

impl Encoder {
    fn send(&self, job: Job) -> Result<(), ParquetError> {
        match &self.jobs {
            Some(jobs) => jobs.send(job).map_err(|_| gone()),
            None => Err(gone()),
        }
    }
}

impl Drop for ColumnEncoders {
    fn drop(&mut self) {
        for encoder in &mut self.encoders {
            // Closing the queue ends the thread's loop.
            encoder.jobs = None;
            if let Some(thread) = encoder.thread.take() {
                // An encoder that panicked has already said so on stderr; its error
                // reached the caller as `gone`.
                let _ = thread.join();
            }
        }
    }
}

/// An encoder thread that stopped (it panicked): its columns are lost.
#[cold]
fn gone() -> ParquetError {
    ParquetError::General("a Parquet column encoder thread stopped".to_owned())
}

/// An encoder thread: writes its columns of each batch; at each `Close`, sends back their
/// chunks, or the first error since the row group started.
fn encode(schema: &Schema, jobs: &Receiver<Job>, chunks: &SyncSender<Chunks>) {
    let mut writers: Vec<(usize, ArrowColumnWriter)> = Vec::new();
    let mut failed: Option<ParquetError> = None;
    for job in jobs {
        match job {
            Job::Start(share) => {
                writers = share;
                failed = None;
            }
            Job::Write(batch, rows) => {
                if failed.is_none() {
                    failed = write_columns(schema, &mut writers, &*batch, rows).err();
                }
            }
            Job::Close => {
                let done = match failed.take() {
                    Some(e) => Err(e),
                    None => writers
                        .drain(..)
                        .map(|(i, w)| w.close().map(|chunk| (i, chunk)))
                        .collect(),
                };
                writers.clear();
                if chunks.send(done).is_err() {
                    return;
                }
            }
        }
    }
}

fn write_columns(
    schema: &Schema,
    writers: &mut [(usize, ArrowColumnWriter)],
    batch: &dyn ColumnSource,
    rows: Range<usize>,
) -> Result<(), ParquetError> {
    for (i, writer) in writers.iter_mut() {
        let mut array = batch.column(*i);
        if rows.len() < array.len() {
            array = array.slice(rows.start, rows.len());
        }
        for leaf in compute_leaves(schema.field(*i), &array)? {
            writer.write(&leaf)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::writer::{properties, ColumnChoices, ParquetFile};
    use super::*;
    use arrow_array::{Int64Array, StringArray, UInt32Array};
    use arrow_schema::{DataType, Field};
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::WriterProperties;

    fn schema() -> Arc<Schema> {
        Arc::new(Schema::new(vec![
            Field::new("seq", DataType::UInt32, false),
            Field::new("symbol", DataType::Utf8, false),
            Field::new("px", DataType::Int64, true),
            Field::new("sz", DataType::UInt32, false),
            Field::new("ct", DataType::UInt32, false),
        ]))
    }

    /// Rows `first..first + n`: a growing sequence, repeating symbols, prices with gaps.
    fn batch(first: u32, n: u32) -> RecordBatch {
        let rows = first..first + n;
        let symbols = ["AAPL", "MSFT", "ZVZZT"];
        RecordBatch::try_new(
            schema(),
            vec![
                Arc::new(UInt32Array::from_iter_values(rows.clone())),
                Arc::new(StringArray::from_iter_values(
                    rows.clone().map(|i| symbols[(i % 3) as usize]),
                )),
                Arc::new(Int64Array::from_iter(
                    rows.clone()
                        .map(|i| (i % 7 != 0).then_some(100_000 + i64::from(i % 13))),
                )),
                Arc::new(UInt32Array::from_iter_values(rows.clone().map(|i| i * 100))),
                Arc::new(UInt32Array::from_iter_values(rows.map(|i| i % 5))),
            ],
        )
        .expect("batch")
    }

    /// Small row groups and pages, so batches cross row groups; the real choices otherwise.
    fn props() -> WriterProperties {
        let choices = ColumnChoices {
            dictionary: vec!["symbol".to_owned(), "px".to_owned()],
            delta: vec!["seq".to_owned()],
            no_statistics: vec!["ct".to_owned()],
        };
        let props = properties(&[0], &choices);
        props
            .into_builder()
            .set_max_row_group_row_count(Some(1_000))
            .set_data_page_row_count_limit(300)
            .build()
    }

    /// Batches of 700 rows, 5,000 in all: row groups end inside batches and the last is
    /// short.
    fn batches() -> Vec<RecordBatch> {
        (0..8)
            .map(|b| batch(b * 700, 700.min(5_000 - b * 700)))
            .collect()
    }

    #[test]
    fn the_file_is_byte_for_byte_what_arrow_writer_writes_on_any_number_of_threads() {
        let dir = tempfile::tempdir().expect("temp dir");
        let reference = dir.path().join("arrow_writer.parquet");
        let file = std::fs::File::create(&reference).expect("create");
        let mut writer = ArrowWriter::try_new(file, schema(), Some(props())).expect("writer");
        for b in batches() {
            writer.write(&b).expect("write");
        }
        writer.append_key_value_metadata(parquet::file::metadata::KeyValue::new(
            "k".to_owned(),
            "v".to_owned(),
        ));
        writer.close().expect("close");
        let expected = std::fs::read(&reference).expect("read");

        for threads in [1, 2, 3, 5, 9] {
            let path = dir.path().join(format!("encoders-{threads}.parquet"));
            let mut file =
                ParquetFile::create_with(&path, schema(), props(), threads).expect("create");
            for b in batches() {
                file.write(&b).expect("write");
            }
            file.close(vec![("k".to_owned(), "v".to_owned())])
                .expect("close");
            let written = std::fs::read(&path).expect("read");
            assert!(written == expected, "{threads} threads: the bytes differ");
        }
        let groups = parquet::file::reader::SerializedFileReader::new(
            std::fs::File::open(&reference).expect("open"),
        )
        .map(|r| parquet::file::reader::FileReader::metadata(&r).num_row_groups())
        .expect("parquet");
        assert_eq!(groups, 5, "1,000-row groups, batches split across them");
    }

    #[test]
    fn a_file_takes_its_name_only_when_finished_and_an_unfinished_one_is_removed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("out.parquet");
        let partial = dir.path().join("out.parquet.partial");
        std::fs::write(&path, b"an earlier run's file").expect("write");
        // Dropped unfinished (a failed replay): the earlier file stands, nothing else is left.
        let mut file = ParquetFile::create_with(&path, schema(), props(), 2).expect("create");
        file.write(&batch(0, 10)).expect("write");
        assert!(partial.exists(), "written beside the output");
        drop(file);
        assert!(!partial.exists(), "an unfinished file is removed");
        assert_eq!(
            std::fs::read(&path).expect("read"),
            b"an earlier run's file"
        );
        // Finished: renamed over it, and a reader opens it.
        let mut file = ParquetFile::create_with(&path, schema(), props(), 2).expect("create");
        file.write(&batch(0, 10)).expect("write");
        file.close(Vec::new()).expect("close");
        assert!(!partial.exists());
        let rows = parquet::file::reader::SerializedFileReader::new(
            std::fs::File::open(&path).expect("open"),
        )
        .map(|r| {
            parquet::file::reader::FileReader::metadata(&r)
                .file_metadata()
                .num_rows()
        })
        .expect("parquet");
        assert_eq!(rows, 10);
    }

    #[test]
    fn an_encoder_error_is_returned_not_a_panic() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("bad.parquet");
        let mut file = ParquetFile::create_with(&path, schema(), props(), 2).expect("create");
        // A null in the non-nullable `seq` column: the column writer refuses it. The batch
        // is built without the schema's check, as a bug upstream might build it.
        let loose = Arc::new(Schema::new(vec![
            Field::new("seq", DataType::UInt32, true),
            Field::new("symbol", DataType::Utf8, false),
            Field::new("px", DataType::Int64, true),
            Field::new("sz", DataType::UInt32, false),
            Field::new("ct", DataType::UInt32, false),
        ]));
        let good = batch(0, 3);
        let mut columns = good.columns().to_vec();
        columns[0] = Arc::new(UInt32Array::from(vec![Some(1), None, Some(3)]));
        let bad = RecordBatch::try_new(loose, columns).expect("batch");
        let written = file.write(&bad);
        let closed = file.close(Vec::new());
        assert!(
            written.is_err() || closed.is_err(),
            "the null was refused: {written:?} {closed:?}"
        );
    }
}
