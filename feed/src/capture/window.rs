//! A sliding window over a byte stream, in one buffer allocated when the reader opens.
//!
//! Every capture format reads through it, so a message or packet is always handed out as a
//! borrowed slice of this buffer. A frame split across two reads is moved to the front of
//! the buffer (a `memmove` of the unread tail, at most once per buffer's worth of input),
//! never copied into a fresh allocation.
//!
//! An uncompressed file is not read at all: the window is then the whole file, mapped into
//! memory, and every message is a slice of the mapping (no copy, no system call per chunk).

use std::io::{self, Read};

use super::error::IoOp;
use super::mapped_file::MappedInput;

/// Where the window's bytes live.
enum Storage {
    /// Read from a stream into a buffer allocated at open; it grows only for a single frame
    /// larger than it (cold, bounded by the formats' own limits), never per message.
    Buffered {
        src: Box<dyn Read + Send>,
        buf: Vec<u8>,
    },
    /// The whole input, mapped.
    Mapped(MappedInput),
}

/// The unread part of a stream, `buf[start..end]`, and where it sits in the input.
pub(crate) struct Window {
    storage: Storage,
    /// Invariant: `start <= end <= buf.len()`.
    start: usize,
    end: usize,
    /// Input offset of `buf[0]`.
    base: u64,
    eof: bool,
    /// What a failed read of `src` was doing, for the error: reading or decompressing.
    read_op: IoOp,
}

impl Window {
    /// A window reading `src` in chunks of up to `capacity` bytes; a failed read of `src`
    /// is reported as `read_op`.
    pub(crate) fn new(src: Box<dyn Read + Send>, capacity: usize, read_op: IoOp) -> Self {
        Window {
            storage: Storage::Buffered {
                src,
                buf: vec![0; capacity.max(1)],
            },
            start: 0,
            end: 0,
            base: 0,
            eof: false,
            read_op,
        }
    }

    /// A window over a whole mapped input: everything is available from the start.
    pub(crate) fn mapped(map: MappedInput) -> Self {
        let end = map.bytes().len();
        Window {
            storage: Storage::Mapped(map),
            start: 0,
            end,
            base: 0,
            eof: true,
            read_op: IoOp::Read,
        }
    }

    /// What a failed [`Window::fill`] was doing, for the error.
    pub(crate) fn read_op(&self) -> IoOp {
        self.read_op
    }

    /// Input offset of the first unread byte.
    pub(crate) fn pos(&self) -> u64 {
        self.base + self.start as u64
    }

    /// Input offset of `buf[index]`.
    pub(crate) fn offset_of(&self, index: usize) -> u64 {
        self.base + index as u64
    }

    /// Index in [`Window::buf`] of the first unread byte.
    pub(crate) fn start(&self) -> usize {
        self.start
    }

    /// The whole buffer; indices from [`Window::start`] on stay valid until the next
    /// [`Window::fill`] or [`Window::consume`].
    #[inline(always)]
    pub(crate) fn buf(&self) -> &[u8] {
        match &self.storage {
            Storage::Buffered { buf, .. } => buf,
            Storage::Mapped(map) => map.bytes(),
        }
    }

    /// The whole input, when it is mapped rather than read.
    pub(crate) fn mapped_input(&self) -> Option<&MappedInput> {
        match &self.storage {
            Storage::Buffered { .. } => None,
            Storage::Mapped(map) => Some(map),
        }
    }

    /// The unread bytes held now.
    #[inline(always)]
    pub(crate) fn available(&self) -> &[u8] {
        &self.buf()[self.start..self.end]
    }

    /// Makes at least `n` unread bytes available, reading as much as the buffer holds; returns
    /// how many are available, fewer than `n` only at the end of the input.
    ///
    /// May move the unread bytes to the front of the buffer, so indices taken before it are
    /// stale afterwards.
    #[inline]
    pub(crate) fn fill(&mut self, n: usize) -> io::Result<usize> {
        if self.end - self.start >= n || self.eof {
            return Ok(self.end - self.start);
        }
        let Storage::Buffered { src, buf } = &mut self.storage else {
            // A mapped window is at end of input from the start (`eof`).
            return Ok(self.end - self.start);
        };
        if self.start + n > buf.len() {
            buf.copy_within(self.start..self.end, 0);
            self.base += self.start as u64;
            self.end -= self.start;
            self.start = 0;
            if n > buf.len() {
                buf.resize(n, 0);
            }
        }
        while self.end - self.start < n {
            match src.read(&mut buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(k) => self.end += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(self.end - self.start)
    }

    /// Marks `n` bytes read.
    #[inline(always)]
    pub(crate) fn consume(&mut self, n: usize) {
        debug_assert!(n <= self.end - self.start, "consume past the data held");
        self.start = (self.start + n).min(self.end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands out at most `step` bytes per read, like a decompressor or a socket would.
    pub(crate) struct Trickle {
        data: Vec<u8>,
        at: usize,
        step: usize,
    }

    impl Read for Trickle {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(out.len()).min(self.data.len() - self.at);
            out[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    #[test]
    fn frames_split_across_reads_are_moved_to_the_front_without_reallocating() {
        let data: Vec<u8> = (0..=255u8).collect();
        let src = Trickle {
            data: data.clone(),
            at: 0,
            step: 7,
        };
        let mut w = Window::new(Box::new(src), 16, IoOp::Read);
        let ptr = w.buf().as_ptr();
        let mut next = 0usize;
        while w.fill(10).expect("in memory") >= 10 {
            assert_eq!(w.pos(), next as u64);
            assert_eq!(w.available()[..10], data[next..next + 10]);
            w.consume(10);
            next += 10;
        }
        assert_eq!(next, 250);
        assert_eq!(w.available(), &data[250..]);
        assert_eq!(w.buf().as_ptr(), ptr, "the buffer was reallocated");
    }

    #[test]
    fn grows_once_for_a_frame_larger_than_the_buffer() {
        let src = Trickle {
            data: vec![1; 100],
            at: 0,
            step: 100,
        };
        let mut w = Window::new(Box::new(src), 8, IoOp::Read);
        assert_eq!(w.fill(40).expect("in memory"), 40);
        assert!(w.buf().len() >= 40);
        w.consume(40);
        assert_eq!(w.fill(1000).expect("in memory"), 60);
    }
}
