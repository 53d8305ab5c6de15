//! A CSV line builder over one buffer allocated at start-up.
//!
//! Rows are formatted straight into the buffer (integers with `itoa`, no `format!`), and
//! the buffer goes to the sink in large writes, so a row costs no allocation and no system
//! call.

use std::io::{self, Write};

/// Bytes kept before a flush; a row is far shorter than the slack left after it.
const CAPACITY: usize = 1 << 20;
/// Flush once fewer than this many bytes are free.
const SLACK: usize = 512;

/// Buffered CSV output to `W`.
pub struct CsvBuffer<W: Write> {
    sink: W,
    buf: Vec<u8>,
    ints: itoa::Buffer,
}

impl<W: Write> CsvBuffer<W> {
    /// A buffer in front of `sink`.
    pub fn new(sink: W) -> Self {
        CsvBuffer {
            sink,
            buf: Vec::with_capacity(CAPACITY),
            ints: itoa::Buffer::new(),
        }
    }

    /// Appends an unsigned integer in decimal.
    #[inline(always)]
    pub fn uint(&mut self, v: u64) {
        self.buf.extend_from_slice(self.ints.format(v).as_bytes());
    }

    /// Appends a field separator.
    #[inline(always)]
    pub fn comma(&mut self) {
        self.buf.push(b',');
    }

    /// Appends bytes as they are (a field the caller knows needs no quoting).
    #[inline(always)]
    pub fn raw(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Appends a single character field.
    #[inline(always)]
    pub fn byte(&mut self, b: u8) {
        self.buf.push(b);
    }

    /// Appends whole lines (a header), flushing if the buffer is nearly full.
    ///
    /// # Errors
    ///
    /// Whatever the sink returns.
    pub fn bytes(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.buf.extend_from_slice(bytes);
        self.flush_if_full()
    }

    /// Ends the row with `\n`, flushing if the buffer is nearly full.
    ///
    /// # Errors
    ///
    /// Whatever the sink returns.
    #[inline(always)]
    pub fn end_row(&mut self) -> io::Result<()> {
        self.buf.push(b'\n');
        self.flush_if_full()
    }

    #[inline(always)]
    fn flush_if_full(&mut self) -> io::Result<()> {
        if self.buf.len() + SLACK > CAPACITY {
            self.sink.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// Writes out what is buffered, flushes the sink and returns it.
    ///
    /// # Errors
    ///
    /// Whatever the sink returns.
    pub fn finish(mut self) -> io::Result<W> {
        self.sink.write_all(&self.buf)?;
        self.buf.clear();
        self.sink.flush()?;
        Ok(self.sink)
    }
}
