//! Maps an uncompressed capture into memory, so messages are read where they lie.
#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::sync::Arc;

use memmap2::{Advice, Mmap};

/// A reader's whole mapped input, shared: another thread can read messages where they lie
/// (`replay --threads` routes their positions instead of copying their bytes). Cloning it
/// clones a reference; the mapping lives as long as any clone.
#[derive(Clone, Debug)]
pub struct MappedInput(Arc<Mmap>);

impl MappedInput {
    /// Shares `map` and starts populating its page tables on a helper thread.
    pub(crate) fn new(map: Mmap) -> Self {
        let input = MappedInput(Arc::new(map));
        input.populate_ahead();
        input
    }

    /// Maps the input's pages into the page tables ahead of the reader, on a short-lived
    /// thread that holds a clone (so the mapping outlives it). Without it the reader takes
    /// a page fault every 64 KiB (the kernel's fault-around); with it those faults mostly
    /// become one populate call per chunk on another core, and a file not yet in the page
    /// cache is read ahead of the reader as well. Only for an input of at most a quarter of
    /// the machine's memory: a larger one, read in ahead of a reader that cannot keep up,
    /// could push its own unread pages out of the page cache. Only a hint: an older kernel
    /// that lacks `MADV_POPULATE_READ`, or a thread that cannot be started, changes
    /// nothing but speed.
    fn populate_ahead(&self) {
        #[cfg(target_os = "linux")]
        {
            const CHUNK: usize = 4 << 20;
            let len = self.0.len();
            if memory_total().is_none_or(|total| len as u64 > total / 4) {
                return;
            }
            let input = self.clone();
            let _ = std::thread::Builder::new()
                .name("populate".into())
                .spawn(move || {
                    let mut offset = 0;
                    while offset < len {
                        let chunk = CHUNK.min(len - offset);
                        if input
                            .0
                            .advise_range(Advice::PopulateRead, offset, chunk)
                            .is_err()
                        {
                            return;
                        }
                        offset += chunk;
                    }
                });
        }
    }

    /// The input's bytes.
    #[inline(always)]
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    /// Where `part` starts in the input, if it is a slice of it (a message handed out by
    /// the reader that owns this mapping, not a copy of one); `None` otherwise.
    #[inline]
    pub fn position(&self, part: &[u8]) -> Option<usize> {
        let base = self.0.as_ptr() as usize;
        let start = (part.as_ptr() as usize).checked_sub(base)?;
        (start.checked_add(part.len())? <= self.0.len()).then_some(start)
    }
}

/// The machine's memory in bytes (`MemTotal` in `/proc/meminfo`), if it can be read.
#[cfg(target_os = "linux")]
fn memory_total() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Maps `file` read-only and tells the kernel it will be read front to back.
///
/// # Errors
///
/// If the kernel refuses the mapping.
pub(crate) fn map(file: &File) -> io::Result<Mmap> {
    // SAFETY: the mapping is read-only and private to this reader, and every access goes
    // through bounds-checked slices of it. What memmap2 cannot rule out is another process
    // truncating or rewriting the file while it is mapped; a capture under replay is not
    // being written (a truncation would end the process with SIGBUS, not corrupt a book
    // silently), and `ticklane replay` documents that it maps its input.
    let map = unsafe { Mmap::map(file)? };
    // Only a hint: read-ahead sized for a sequential scan.
    let _ = map.advise(Advice::Sequential);
    Ok(map)
}
