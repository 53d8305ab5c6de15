//! What `ticklane tail` prints on stderr at the end of a run.

use std::fmt::{self, Write as _};

use crate::tail::TailReport;

impl TailReport {
    /// The lines `ticklane tail` prints on stderr at the end: the counts, then one line per
    /// symbol never seen, per capture error or reason for no messages.
    pub fn to_text(&self) -> String {
        let mut t = String::new();
        let _ = writeln!(t, "{self}");
        for symbol in &self.unseen_symbols {
            let _ = writeln!(
                t,
                "ticklane tail: symbol {symbol} never appeared in the feed"
            );
        }
        if let Some(why) = &self.no_messages {
            let _ = writeln!(t, "ticklane tail: {why}");
        }
        if let Some(error) = &self.input_error {
            let _ = writeln!(t, "ticklane tail: stopped early: {error}");
        }
        if self.declared_lost > 0 {
            let _ = writeln!(
                t,
                "ticklane tail: {} messages declared lost: the books are flagged MAYBE_BAD \
                 from the first loss on",
                self.declared_lost
            );
        }
        t
    }
}

impl fmt::Display for TailReport {
    /// The counts, one line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ticklane tail: {} messages, {} lines, resubscribed {}; overload: {}",
            self.messages,
            self.printed,
            self.resubscribed,
            super::overload_text(&self.counters)
        )
    }
}
