//! `ticklane subscribe`: follow symbols on a subscriber server and print every update,
//! until a signal, maintenance, or the attempts run out.

use std::io::{self, Write};
use std::ops::ControlFlow;
use std::path::PathBuf;

use anyhow::{Context, Result};
use ticklane_book::Side;
use ticklane_feed::itch::{Alpha, Locate};

use crate::csv::{write_level_row, CsvBuffer, BOOK_HEADER};
use crate::live::install_shutdown;
use crate::serve::client::{
    pause_unless_stopped, run_subscriber, ClientConfig, ClientError, SubscriberEvent,
};
use crate::serve::client_books::ClientBooks;
use crate::views::{write_subscriber_event, ExitStatus};

/// Where `ticklane subscribe --book-out` writes the final books, and how deep.
#[derive(Clone, Debug)]
pub struct BookOut {
    /// The CSV file (the `replay --book-out` format).
    pub path: PathBuf,
    /// Levels per side.
    pub depth: usize,
}

/// Runs the client `config` describes, printing each update to `out` as it comes (flushed
/// each time), maintenance to `err`. A signal ends it (exit 130), at once even during a
/// backoff; so does a closed `out` (141), as for the other commands. With `book_out`, the
/// books are rebuilt from the images and level updates as they come, and written when it
/// ends, however it ends; what the file may lack is said on `err`.
///
/// # Errors
///
/// The signal handler cannot be installed, `out` fails otherwise, or the client gives up.
pub fn print_subscriber_updates(
    config: &ClientConfig,
    out: impl Write,
    err: &mut impl Write,
    book_out: Option<&BookOut>,
) -> Result<ExitStatus> {
    let stop = install_shutdown()?;
    let mut out = io::BufWriter::new(out);
    let mut failed = None;
    let mut books = ClientBooks::new();
    let result = run_subscriber(
        config,
        &stop,
        // A signal during a backoff ends the pause at once, not when the backoff ends.
        &mut |delay| {
            pause_unless_stopped(delay, &stop);
        },
        &mut |event| {
            if book_out.is_some() {
                match &event {
                    SubscriberEvent::Message(message) => books.apply(message),
                    SubscriberEvent::Gap { .. } => books.messages_lost(),
                    _ => {}
                }
            }
            let written = write_subscriber_event(&mut out, &event).and_then(|()| out.flush());
            match written {
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => {
                    failed = Some(e);
                    ControlFlow::Break(())
                }
            }
        },
    );
    let flushed = out.flush();
    if let Some(book_out) = book_out {
        write_followed_books(&books, book_out, err)?;
    }
    // `… | head` closed stdout: end as the other commands do (141), not as a failure.
    match failed.map_or(flushed, Err) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(ExitStatus::ClosedStdout),
        Err(e) => return Err(e.into()),
        Ok(()) => {}
    }
    match result {
        Ok(()) => Ok(ExitStatus::Interrupted),
        Err(e @ ClientError::Maintenance { .. }) => {
            writeln!(err, "ticklane subscribe: {e}")?;
            Ok(ExitStatus::Failure)
        }
        Err(e) => Err(e.into()),
    }
}

/// Writes `books` to `book_out` and says on `err` what the file may lack.
fn write_followed_books(
    books: &ClientBooks,
    book_out: &BookOut,
    err: &mut impl Write,
) -> Result<()> {
    let path = book_out.path.display();
    let file =
        std::fs::File::create(&book_out.path).with_context(|| format!("--book-out {path}"))?;
    let mut csv = CsvBuffer::new(io::BufWriter::new(file));
    csv.raw(BOOK_HEADER.as_bytes());
    let (mut short, mut flagged, mut behind) = (0usize, 0usize, 0usize);
    for book in books.books() {
        let symbol = Alpha::<8>::trim(&book.symbol);
        for side in [Side::Bid, Side::Ask] {
            for (i, level) in book.levels(side, book_out.depth).enumerate() {
                write_level_row(&mut csv, Locate(book.locate), symbol, side, i + 1, level)
                    .with_context(|| format!("--book-out {path}"))?;
            }
        }
        short += usize::from(book.may_be_short(book_out.depth));
        flagged += usize::from(book.is_maybe_bad());
        behind += usize::from(book.behind);
    }
    csv.finish()
        .and_then(|mut sink| sink.flush())
        .with_context(|| format!("--book-out {path}"))?;
    writeln!(
        err,
        "ticklane subscribe: --book-out {path}: {} books; {short} may be short of depth {} \
         (their image filled snapshot.depth and levels have gone since); {flagged} MAYBE_BAD \
         in their latest image; {behind} behind a sequence gap; {} updates before any image",
        books.books().count(),
        book_out.depth,
        books.orphans()
    )?;
    Ok(())
}
