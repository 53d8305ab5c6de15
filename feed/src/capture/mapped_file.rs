//! Maps an uncompressed capture into memory, so messages are read where they lie.
#![allow(unsafe_code)]

use std::fs::File;
use std::io;

use memmap2::{Advice, Mmap};

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
