//! A CSV output over one buffer allocated at start-up.
//!
//! Rows are formatted into a fixed buffer ([`CsvBytes`], which holds the field formatting)
//! and the buffer goes to the sink in large writes: a row costs no allocation and no system
//! call.

use std::io::{self, Write};

use super::csv_bytes::{CsvBytes, ROW_ROOM};

/// Bytes buffered before a flush.
const CAPACITY: usize = 1 << 20;

/// Buffered CSV output to `W`.
pub struct CsvBuffer<W: Write> {
    sink: W,
    /// `CAPACITY` bytes, never grown. Invariant: at least `ROW_ROOM` bytes free between
    /// rows (`end_row` flushes before fewer are).
    out: CsvBytes,
}

impl<W: Write> CsvBuffer<W> {
    /// A buffer in front of `sink`.
    pub fn new(sink: W) -> Self {
        CsvBuffer {
            sink,
            out: CsvBytes::with_capacity(CAPACITY),
        }
    }

    /// The buffer the current row's fields go into (it has room for one row).
    #[inline(always)]
    pub fn fields(&mut self) -> &mut CsvBytes {
        &mut self.out
    }

    /// Appends an unsigned integer in decimal.
    #[inline(always)]
    pub fn uint(&mut self, v: u64) {
        self.out.uint(v);
    }

    /// Appends a space-padded 8-byte field with its trailing spaces removed (a stock
    /// symbol).
    #[inline(always)]
    pub fn padded8(&mut self, raw: &[u8; 8]) {
        self.out.padded8(raw);
    }

    /// Appends a field separator.
    #[inline(always)]
    pub fn comma(&mut self) {
        self.out.comma();
    }

    /// Appends bytes as they are (a field the caller knows needs no quoting). At most 256
    /// bytes per call: fields here are symbols and letters.
    #[inline(always)]
    pub fn raw(&mut self, bytes: &[u8]) {
        self.out.raw(bytes);
    }

    /// Appends a single character.
    #[inline(always)]
    pub fn byte(&mut self, b: u8) {
        self.out.byte(b);
    }

    /// Appends whole lines (a header, or rows formatted elsewhere), writing through if they
    /// do not fit.
    ///
    /// # Errors
    ///
    /// Whatever the sink returns.
    #[inline]
    pub fn bytes(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.out.len() + bytes.len() + ROW_ROOM > self.out.capacity() {
            self.flush_buffer()?;
            if bytes.len() + ROW_ROOM > self.out.capacity() {
                return self.sink.write_all(bytes);
            }
        }
        self.out.append(bytes);
        Ok(())
    }

    /// Ends the row with `\n`, flushing if the buffer is nearly full.
    ///
    /// # Errors
    ///
    /// Whatever the sink returns.
    #[inline(always)]
    pub fn end_row(&mut self) -> io::Result<()> {
        self.out.byte(b'\n');
        self.row_done()
    }

    /// Flushes if the buffer is nearly full: call after each row written through
    /// [`CsvBuffer::fields`], its `\n` included.
    ///
    /// # Errors
    ///
    /// Whatever the sink returns.
    #[inline(always)]
    pub fn row_done(&mut self) -> io::Result<()> {
        if self.out.len() + ROW_ROOM > self.out.capacity() {
            self.flush_buffer()?;
        }
        Ok(())
    }

    #[cold]
    fn flush_buffer(&mut self) -> io::Result<()> {
        self.sink.write_all(self.out.as_bytes())?;
        self.out.clear();
        Ok(())
    }

    /// Writes out what is buffered, flushes the sink and returns it.
    ///
    /// # Errors
    ///
    /// Whatever the sink returns.
    pub fn finish(mut self) -> io::Result<W> {
        self.flush_buffer()?;
        self.sink.flush()?;
        Ok(self.sink)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flushes_across_the_buffer_boundary() {
        let mut csv = CsvBuffer::new(Vec::new());
        let rows = 3 * CAPACITY / 20;
        for i in 0..rows {
            csv.uint(i as u64);
            csv.raw(b",ABCDEFGH");
            csv.end_row().expect("vec");
        }
        let out = csv.finish().expect("vec");
        let text = String::from_utf8(out).expect("ascii");
        assert_eq!(text.lines().count(), rows);
        assert!(text
            .lines()
            .enumerate()
            .all(|(i, l)| l == format!("{i},ABCDEFGH")));
    }

    #[test]
    fn whole_rows_spliced_in_come_out_in_order_across_flushes() {
        let mut csv = CsvBuffer::new(Vec::new());
        let mut expected = Vec::new();
        let rows = 3 * CAPACITY / 20;
        for i in 0..rows {
            let row = format!("{i},ABCDEFGH\n");
            csv.bytes(row.as_bytes()).expect("vec");
            expected.extend_from_slice(row.as_bytes());
        }
        let big = vec![b'x'; CAPACITY];
        csv.bytes(&big).expect("vec");
        expected.extend_from_slice(&big);
        assert!(csv.finish().expect("vec") == expected);
    }
}
