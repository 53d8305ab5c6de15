//! What `ticklane replay` and `ticklane demo` print around the summary: a paced replay's
//! stage latencies and overload line before it, the demo's ladders and next step after it.

use std::io::{self, Write};

use super::{latency_line, overload_text, write_tops};
use crate::replay::{ReplayOutcome, ReplayRun};

/// `replay`'s screen: with a pace, each stage's latency and what overload control did,
/// then the summary (which ends with the fault, if any).
pub fn write_replay_run(out: &mut impl Write, run: &ReplayRun) -> io::Result<()> {
    if let Some(paced) = &run.paced {
        for (name, p) in &paced.latency {
            writeln!(out, "  {name:<22} {}", latency_line(p))?;
        }
        if let Some(c) = &paced.overload {
            writeln!(out, "  overload               {}", overload_text(c))?;
        }
    }
    write!(out, "{}", run.summary.to_text())
}

/// The replay demo's opening line, printed before the day is generated.
pub fn write_replay_demo_intro(out: &mut impl Write, messages: u64, stocks: u16) -> io::Result<()> {
    writeln!(
        out,
        "ticklane demo: generating a synthetic ITCH 5.0 day ({} messages, {} stocks, seed 1)",
        super::group(messages),
        stocks
    )
}

/// The replay demo's screen: the summary, the busiest books' tops, and what to try next.
pub fn write_replay_demo(out: &mut impl Write, outcome: &ReplayOutcome) -> io::Result<()> {
    write!(out, "{}", outcome.summary.to_text())?;
    write_tops(out, &outcome.books, 4, 3)?;
    writeln!(
        out,
        "\nNext: `ticklane replay FILE --bbo-out bbo.csv --book-out book.csv` on your own capture."
    )
}
