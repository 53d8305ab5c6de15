//! A client's bounded write queue, in bytes, with high and low water marks.
//!
//! Frames are appended whole or not at all; the buffer is allocated once at its limit, so
//! queueing never allocates. Above the high mark the server conflates the client's state
//! updates; once the queue falls to the low mark it sends the latest state and streams again.
#![forbid(unsafe_code)]

use std::io::{self, Write};

use super::protocol::FrameOut;

/// Bytes queued for one client.
#[derive(Debug)]
pub struct WriteQueue {
    /// Bytes `start..` are unsent; capacity is `limit` and never grows.
    buf: Vec<u8>,
    start: usize,
    limit: usize,
}

impl WriteQueue {
    /// A queue that holds at most `limit` bytes (allocated here).
    pub fn new(limit: usize) -> Self {
        WriteQueue {
            buf: Vec::with_capacity(limit),
            start: 0,
            limit,
        }
    }

    /// Unsent bytes.
    pub fn len(&self) -> usize {
        self.buf.len() - self.start
    }

    /// Whether everything queued was sent.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `bytes` more would fit.
    pub fn fits(&self, bytes: usize) -> bool {
        self.len() + bytes <= self.limit
    }

    /// Drops everything unsent.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.start = 0;
    }

    /// Queues `frame` whole; `false` (nothing queued) if it does not fit.
    pub fn push(&mut self, frame: &[u8]) -> bool {
        if !self.fits(frame.len()) {
            return false;
        }
        if self.buf.len() + frame.len() > self.limit {
            // Move the unsent tail to the front: the capacity is never exceeded.
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(frame);
        true
    }

    /// Queues a frame encoded by `encode` of exactly `len` bytes; `false` if it does not fit.
    pub fn push_encoded(&mut self, len: usize, encode: impl FnOnce(&mut Appender<'_>)) -> bool {
        if !self.fits(len) {
            return false;
        }
        if self.buf.len() + len > self.limit {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        let before = self.buf.len();
        encode(&mut Appender(&mut self.buf));
        debug_assert_eq!(self.buf.len() - before, len, "frame length as promised");
        true
    }

    /// Writes queued bytes to `out` until it would block or the queue is empty; the bytes
    /// written.
    ///
    /// # Errors
    ///
    /// Any error of `out` but `WouldBlock` and `Interrupted`.
    pub fn flush_to(&mut self, out: &mut impl Write) -> io::Result<usize> {
        let mut written = 0;
        while self.start < self.buf.len() {
            match out.write(&self.buf[self.start..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.start += n;
                    written += n;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
        Ok(written)
    }
}

/// Appends to a [`WriteQueue`] whose room was checked.
pub struct Appender<'a>(&'a mut Vec<u8>);

impl FrameOut for Appender<'_> {
    fn put(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_go_whole_or_not_at_all_and_the_buffer_never_grows() {
        let mut q = WriteQueue::new(10);
        assert!(q.push(&[1; 6]));
        assert!(!q.push(&[2; 5]), "6 + 5 > 10");
        assert_eq!(q.len(), 6);
        let mut out = Vec::new();
        // A writer that takes 4 bytes at a time.
        struct Four<'a>(&'a mut Vec<u8>);
        impl Write for Four<'_> {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                let n = b.len().min(4);
                self.0.extend_from_slice(&b[..n]);
                if n == 0 {
                    return Err(io::ErrorKind::WouldBlock.into());
                }
                Ok(n)
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        assert!(q.push(&[3; 4]));
        assert_eq!(q.flush_to(&mut Four(&mut out)).unwrap(), 10);
        assert!(q.is_empty());
        assert_eq!(out, [[1u8; 6].as_slice(), &[3; 4]].concat());
        assert_eq!(q.buf.capacity(), 10);
    }
}
