//! The warning a MoldUDP64 line gives once, when it joins the line past sequence 1: a
//! demanding user must not lose the stock directory without a word.

use ticklane_feed::moldudp64::MoldRecovery;

/// Says once where the line joined, if that was past sequence 1.
#[derive(Debug, Default)]
pub struct JoinNotice {
    said: bool,
}

impl JoinNotice {
    /// For a line started from a snapshot: where it joins is the snapshot's business (a gap
    /// after it is an ordinary gap), so nothing is said.
    pub fn after_snapshot() -> Self {
        JoinNotice { said: true }
    }

    /// Checks (cheaply, once per poll loop) whether the machine joined, and warns on stderr
    /// the first time it joined past 1; `recoverable` says whether a retransmission server
    /// is configured to ask for the messages before. Returns the first sequence seen, once,
    /// when the line joined past 1 without treating what came before as a gap
    /// (`feed.start_sequence = "join"`): the caller flags the books, since nothing will ever
    /// fill them in.
    pub fn check(&mut self, recovery: &MoldRecovery, recoverable: bool) -> Option<u64> {
        if self.said {
            return None;
        }
        let at = recovery.joined_at()?;
        self.said = true;
        if at <= 1 {
            return None;
        }
        let start_sequence = recovery.start_sequence();
        eprintln!(
            "ticklane: warning: {}",
            message(at, start_sequence, recoverable)
        );
        start_sequence.is_none().then_some(at)
    }
}

/// The warning's text for a line joined at `at` (> 1).
pub fn message(at: u64, start_sequence: Option<u64>, recoverable: bool) -> String {
    let missed = format!("messages 1 ..= {} (the stock directory among them)", at - 1);
    match (start_sequence, recoverable) {
        (None, _) => format!(
            "joined the line at sequence {at} (feed.start_sequence = \"join\"): {missed} were \
             never seen, so books may lack their symbols and orders and are flagged MAYBE_BAD; \
             feed.start_sequence = 1 asks for them"
        ),
        (Some(_), true) => format!(
            "joined the line at sequence {at}: {missed} are a gap, asked for from the \
             retransmission server"
        ),
        (Some(_), false) => format!(
            "joined the line at sequence {at}: {missed} are a gap that no retransmission \
             server can fill: declared lost"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_warning_names_the_sequence_and_what_happens_to_the_messages_before() {
        assert!(message(30, None, true).contains("sequence 30"));
        assert!(message(30, None, true).contains("1 ..= 29"));
        assert!(message(30, Some(1), true).contains("asked for"));
        assert!(message(30, Some(1), false).contains("declared lost"));
    }
}
