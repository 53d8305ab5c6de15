//! `ticklane top --snapshot PATH`: frames of the busiest books, following a restarted
//! writer's new file.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;

use crate::snapshot::{wall_clock_ns, SnapshotReader};
use crate::views::{write_top_frame, ExitStatus, TopFrames};

/// What `top` shows, and how often.
#[derive(Clone, Debug)]
pub struct TopRequest {
    /// The snapshot file the engine writes.
    pub snapshot: PathBuf,
    /// Time between frames.
    pub interval: Duration,
    /// Stop after this many frames (`None`: until the process is stopped).
    pub frames: Option<u64>,
    /// Books per frame.
    pub rows: usize,
    /// Clear the screen before each frame (a terminal; piped frames follow each other).
    pub clear: bool,
}

/// Prints frames to `out` (each written whole through a buffer) until `request.frames`.
///
/// # Errors
///
/// The snapshot cannot be opened, or `out` fails.
pub fn print_top(request: &TopRequest, mut out: impl Write) -> Result<ExitStatus> {
    let mut reader = SnapshotReader::open(&request.snapshot)?;
    let mut top = TopFrames::new();
    let mut shown = 0u64;
    loop {
        // A restarted writer renames a new file over the path: follow it, or the frames
        // would show the dead writer's books for good.
        let mut notice = None;
        let old_pid = reader.header().writer_pid;
        match reader.reopen_if_replaced() {
            Ok(false) => {}
            Ok(true) => {
                // Publication counts start again in the new file.
                top = TopFrames::new();
                notice = Some(format!(
                    "reopened: a new writer (pid {}, was {old_pid}) replaced the file",
                    reader.header().writer_pid
                ));
            }
            Err(e) => {
                notice = Some(format!(
                    "the file was replaced but cannot be opened ({e}); showing the old one"
                ));
            }
        }
        let first = top.frames() == 0;
        let rows = top.read(&reader);
        shown += 1;
        let mut frame = BufWriter::new(&mut out);
        if request.clear {
            write!(frame, "\x1b[H\x1b[2J")?;
        }
        if let Some(notice) = notice {
            writeln!(frame, "ticklane top: {notice}")?;
        }
        let (path, header) = (reader.path(), reader.header());
        write_top_frame(
            &mut frame,
            path,
            &header,
            &rows,
            request.rows,
            !first,
            wall_clock_ns(),
        )?;
        frame.flush()?;
        if request.frames.is_some_and(|n| shown >= n) {
            return Ok(ExitStatus::Success);
        }
        std::thread::sleep(request.interval);
    }
}
