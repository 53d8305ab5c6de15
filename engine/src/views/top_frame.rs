//! `ticklane top`: frames of the busiest books in a snapshot, busiest first, where "busiest"
//! is the most publications since the previous frame.

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::Path;

use crate::snapshot::{InstrumentState, ReadError, SnapshotHeader, SnapshotReader};

use super::snapshot_status::{header_status, slot_flags};
use crate::digit_groups::group;

/// A row of `top`: one slot, with its publications since the previous frame.
#[derive(Debug)]
pub struct TopRow {
    /// The slot's index in the file.
    pub slot: usize,
    /// What the slot held, or why it could not be read (a torn slot is a row too).
    pub state: Result<InstrumentState, ReadError>,
    /// Publications since the previous frame (all of them on the first frame).
    pub recent: u64,
}

/// The state `top` keeps between frames: each instrument's publication count at the last
/// frame.
#[derive(Debug, Default)]
pub struct TopFrames {
    previous: HashMap<u16, u64>,
    frames: u64,
}

impl TopFrames {
    /// Before the first frame.
    pub fn new() -> Self {
        TopFrames::default()
    }

    /// Frames ranked so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Reads every slot of `reader` and ranks them (see [`TopFrames::rank`]).
    pub fn read(&mut self, reader: &SnapshotReader) -> Vec<TopRow> {
        self.rank(reader.slots().map(|slot| (slot, reader.read(slot))))
    }

    /// Ranks one frame's slots: most publications since the previous frame first, then
    /// lowest locate; unreadable slots last. Remembers the counts for the next frame.
    pub fn rank(
        &mut self,
        slots: impl IntoIterator<Item = (usize, Result<InstrumentState, ReadError>)>,
    ) -> Vec<TopRow> {
        let mut rows: Vec<TopRow> = slots
            .into_iter()
            .map(|(slot, state)| {
                let recent = state.as_ref().map_or(0, |s| {
                    s.publishes
                        .saturating_sub(self.previous.get(&s.locate.0).copied().unwrap_or(0))
                });
                TopRow {
                    slot,
                    state,
                    recent,
                }
            })
            .collect();
        rows.sort_by_key(|r| {
            (
                std::cmp::Reverse(r.recent),
                r.state.as_ref().map_or(u32::MAX, |s| u32::from(s.locate.0)),
                r.slot,
            )
        });
        // Unreadable slots keep their last count, so they do not look busy when they heal.
        for row in &rows {
            if let Ok(s) = &row.state {
                self.previous.insert(s.locate.0, s.publishes);
            }
        }
        self.frames += 1;
        rows
    }
}

/// Writes one frame: a title with the snapshot's status, a column header, the first `limit`
/// rows. `since_last_frame` is false on the first frame, whose counts run from the start.
///
/// # Errors
///
/// Whatever `out` returns.
pub fn write_top_frame(
    out: &mut impl Write,
    path: &Path,
    header: &SnapshotHeader,
    rows: &[TopRow],
    limit: usize,
    since_last_frame: bool,
    now_ns: u64,
) -> io::Result<()> {
    writeln!(
        out,
        "ticklane top  {}  {}",
        path.display(),
        header_status(header, now_ns)
    )?;
    writeln!(
        out,
        "{:<8} {:>6} {:>12} {:>12} {:>12} {:>12} {:>24} {:>10}  flags",
        "stock",
        "locate",
        "bid qty",
        "bid",
        "ask",
        "ask qty",
        "last trade",
        if since_last_frame {
            "updates"
        } else {
            "updates*"
        }
    )?;
    for row in rows.iter().take(limit) {
        match &row.state {
            Ok(s) => {
                let (bid, ask) = (s.best_bid(), s.best_ask());
                let last = s.last_trade.map_or(String::new(), |t| {
                    format!("{} @ {}", group(u64::from(t.shares)), t.price)
                });
                writeln!(
                    out,
                    "{:<8} {:>6} {:>12} {:>12} {:>12} {:>12} {:>24} {:>10}  {}",
                    String::from_utf8_lossy(s.symbol()),
                    s.locate.0,
                    bid.map_or(String::new(), |l| group(l.qty)),
                    bid.map_or(String::new(), |l| l.price.to_string()),
                    ask.map_or(String::new(), |l| l.price.to_string()),
                    ask.map_or(String::new(), |l| group(l.qty)),
                    last,
                    group(row.recent),
                    slot_flags(s, now_ns)
                )?;
            }
            Err(e) => writeln!(out, "(slot {}) unreadable: {e}", row.slot)?,
        }
    }
    if !since_last_frame {
        writeln!(
            out,
            "* since the engine started; later frames count since the last frame"
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::snapshot_status::tests::{header, state, NOW};

    fn published(symbol: &[u8; 8], locate: u16, publishes: u64) -> InstrumentState {
        let mut s = state(symbol, locate);
        s.publishes = publishes;
        s
    }

    fn symbols(rows: &[TopRow]) -> Vec<u16> {
        rows.iter()
            .map(|r| r.state.as_ref().map_or(0, |s| s.locate.0))
            .collect()
    }

    #[test]
    fn busiest_since_the_previous_frame_first() {
        let mut top = TopFrames::new();
        let first = top.rank([
            (0, Ok(published(b"AAA     ", 1, 10))),
            (1, Ok(published(b"BBB     ", 2, 30))),
            (2, Ok(published(b"CCC     ", 3, 10))),
        ]);
        assert_eq!(
            symbols(&first),
            [2, 1, 3],
            "30 first; a tie goes to the lower locate"
        );
        assert_eq!(first[0].recent, 30);
        let second = top.rank([
            (0, Ok(published(b"AAA     ", 1, 15))),
            (1, Ok(published(b"BBB     ", 2, 31))),
            (2, Ok(published(b"CCC     ", 3, 22))),
        ]);
        assert_eq!(symbols(&second), [3, 1, 2]);
        assert_eq!(
            second.iter().map(|r| r.recent).collect::<Vec<_>>(),
            [12, 5, 1]
        );
        assert_eq!(top.frames(), 2);
    }

    #[test]
    fn a_torn_slot_is_a_row_of_its_own_and_the_rest_still_print() {
        let mut top = TopFrames::new();
        let rows = top.rank([
            (
                0,
                Err(ReadError::WriteInProgress {
                    sequence: 7,
                    attempts: 3,
                }),
            ),
            (1, Ok(published(b"BBB     ", 2, 4))),
        ]);
        let mut out = Vec::new();
        write_top_frame(
            &mut out,
            Path::new("day.snap"),
            &header(0, NOW),
            &rows,
            10,
            false,
            NOW,
        )
        .expect("Vec");
        let text = String::from_utf8(out).expect("UTF-8");
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("ticklane top  day.snap  pid 4242"),
            "{text}"
        );
        assert!(lines[1].ends_with("  updates*  flags"), "{text}");
        assert!(lines[2].starts_with("BBB           2 "), "{text}");
        assert!(lines[3].starts_with("(slot 0) unreadable: "), "{text}");
        assert!(lines[4].starts_with("* since the engine started"), "{text}");
        assert_eq!(lines.len(), 5, "{text}");
    }

    #[test]
    fn limit_cuts_rows_and_later_frames_drop_the_footnote() {
        let rows: Vec<TopRow> =
            TopFrames::new().rank((0..5).map(|i| (i, Ok(published(b"XYZ     ", i as u16 + 1, 1)))));
        let mut out = Vec::new();
        write_top_frame(
            &mut out,
            Path::new("p"),
            &header(0, NOW),
            &rows,
            2,
            true,
            NOW,
        )
        .expect("Vec");
        let text = String::from_utf8(out).expect("UTF-8");
        assert_eq!(text.lines().count(), 4, "title, columns, 2 rows:\n{text}");
        assert!(!text.contains("updates*"), "{text}");
    }
}
