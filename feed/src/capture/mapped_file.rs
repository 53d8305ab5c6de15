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
    pub(crate) fn new(map: Mmap) -> Self {
        MappedInput(Arc::new(map))
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
