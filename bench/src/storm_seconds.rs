//! The storm's per-second table: what the storm clients saw, second by second since the storm
//! began, tallied on each client thread and merged; and the two policies' tables printed side
//! by side.

use std::fmt::Write as _;
use std::time::Duration;

/// One thing a storm client saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    /// A connection attempt began.
    Attempt,
    /// The server accepted the login.
    Accepted,
    /// Refused with a retry-after (a `LoginRejected` frame).
    Told,
    /// Closed or reset before any answer: a refusal whose reason was lost, or a failed
    /// connect.
    Closed,
    /// The initial image arrived: the client is served.
    Served,
}

/// The counts of one second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SecondCounts {
    /// Connection attempts begun.
    pub attempts: u64,
    /// Logins accepted.
    pub accepted: u64,
    /// Refusals with a retry-after.
    pub told: u64,
    /// Attempts that ended without an answer.
    pub closed: u64,
    /// Clients served (image received).
    pub served: u64,
}

impl SecondCounts {
    /// Refused, however it was said: told a retry-after, or closed without one.
    pub fn rejected(&self) -> u64 {
        self.told + self.closed
    }
}

/// Counts per whole second since the storm began.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StormSeconds {
    rows: Vec<SecondCounts>,
}

impl StormSeconds {
    /// Counts `seen` in the second `at` (since the storm began) falls in.
    pub fn add(&mut self, at: Duration, seen: Seen) {
        let second = usize::try_from(at.as_secs()).unwrap_or(usize::MAX - 1);
        if self.rows.len() <= second {
            self.rows.resize(second + 1, SecondCounts::default());
        }
        let row = &mut self.rows[second];
        match seen {
            Seen::Attempt => row.attempts += 1,
            Seen::Accepted => row.accepted += 1,
            Seen::Told => row.told += 1,
            Seen::Closed => row.closed += 1,
            Seen::Served => row.served += 1,
        }
    }

    /// Adds another thread's counts, second by second.
    pub fn merge(&mut self, other: &StormSeconds) {
        if self.rows.len() < other.rows.len() {
            self.rows.resize(other.rows.len(), SecondCounts::default());
        }
        for (mine, theirs) in self.rows.iter_mut().zip(&other.rows) {
            mine.attempts += theirs.attempts;
            mine.accepted += theirs.accepted;
            mine.told += theirs.told;
            mine.closed += theirs.closed;
            mine.served += theirs.served;
        }
    }

    /// The rows, second 0 first.
    pub fn rows(&self) -> &[SecondCounts] {
        &self.rows
    }

    /// All seconds together.
    pub fn total(&self) -> SecondCounts {
        let mut all = StormSeconds::default();
        for row in &self.rows {
            all.merge(&StormSeconds { rows: vec![*row] });
        }
        all.rows.first().copied().unwrap_or_default()
    }
}

/// One policy's column block: its name, its table, and the server's resident memory at the
/// end of each second (KiB; `None` where it was not sampled).
pub struct Column<'a> {
    /// The policy, as the header says it.
    pub name: &'a str,
    /// What its clients saw.
    pub seconds: &'a StormSeconds,
    /// The server's VmRSS at the end of each second.
    pub rss_kib: &'a [Option<u64>],
}

/// The per-second table, one block of columns per policy, side by side.
pub fn side_by_side(columns: &[Column<'_>]) -> String {
    const CELLS: [&str; 5] = ["tries", "accept", "reject", "served", "rss MiB"];
    const WIDTH: usize = 7 * 5 + 4;
    let mut out = String::new();
    let _ = write!(out, "{:>6}", "");
    for c in columns {
        let _ = write!(out, " | {:>WIDTH$}", c.name);
    }
    out.push('\n');
    let _ = write!(out, "{:>6}", "second");
    for _ in columns {
        out.push_str(" |");
        for cell in CELLS {
            let _ = write!(out, " {cell:>7}");
        }
    }
    out.push('\n');
    let rows = columns
        .iter()
        .map(|c| c.seconds.rows().len().max(c.rss_kib.len()))
        .max()
        .unwrap_or(0);
    for s in 0..rows {
        let _ = write!(out, "{s:>6}");
        for c in columns {
            let row = c.seconds.rows().get(s).copied().unwrap_or_default();
            let rss = c.rss_kib.get(s).copied().flatten().map_or_else(
                || "-".to_string(),
                |kib| format!("{:.1}", kib as f64 / 1024.0),
            );
            let _ = write!(
                out,
                " | {:>7} {:>7} {:>7} {:>7} {:>7}",
                row.attempts,
                row.accepted,
                row.rejected(),
                row.served,
                rss
            );
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn events_fall_in_their_whole_second_and_threads_merge() {
        let mut a = StormSeconds::default();
        a.add(Duration::ZERO, Seen::Attempt);
        a.add(999 * MS, Seen::Told);
        a.add(1_000 * MS, Seen::Attempt);
        a.add(2_500 * MS, Seen::Served);
        let mut b = StormSeconds::default();
        b.add(5 * MS, Seen::Attempt);
        b.add(10 * MS, Seen::Closed);
        b.add(4_000 * MS, Seen::Accepted);
        a.merge(&b);
        let expected = [
            SecondCounts {
                attempts: 2,
                told: 1,
                closed: 1,
                ..SecondCounts::default()
            },
            SecondCounts {
                attempts: 1,
                ..SecondCounts::default()
            },
            SecondCounts {
                served: 1,
                ..SecondCounts::default()
            },
            SecondCounts::default(),
            SecondCounts {
                accepted: 1,
                ..SecondCounts::default()
            },
        ];
        assert_eq!(a.rows(), expected);
        assert_eq!(a.rows()[0].rejected(), 2);
        assert_eq!(
            a.total(),
            SecondCounts {
                attempts: 3,
                accepted: 1,
                told: 1,
                closed: 1,
                served: 1
            }
        );
    }

    #[test]
    fn the_table_has_a_row_per_second_of_the_longer_run() {
        let mut short = StormSeconds::default();
        short.add(Duration::ZERO, Seen::Served);
        let mut long = StormSeconds::default();
        long.add(2_100 * MS, Seen::Served);
        let table = side_by_side(&[
            Column {
                name: "fixed",
                seconds: &long,
                rss_kib: &[Some(2048)],
            },
            Column {
                name: "jittered",
                seconds: &short,
                rss_kib: &[],
            },
        ]);
        let lines: Vec<&str> = table.lines().collect();
        // Two header lines, then seconds 0, 1 and 2.
        assert_eq!(lines.len(), 5, "{table}");
        assert!(lines[0].contains("fixed") && lines[0].contains("jittered"));
        let cells = |line: &str| {
            line.split(|c: char| c == '|' || c.is_whitespace())
                .filter(|c| !c.is_empty())
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            cells(lines[2]),
            ["0", "0", "0", "0", "0", "2.0", "0", "0", "0", "1", "-"]
        );
        assert_eq!(
            cells(lines[4]),
            ["2", "0", "0", "0", "1", "-", "0", "0", "0", "0", "-"]
        );
    }
}
