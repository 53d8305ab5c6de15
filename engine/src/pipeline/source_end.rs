//! Why a reader stage ended. A plain enum, so the normal endings allocate nothing.

use std::fmt;
use std::time::Duration;

/// Why a reader stage ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum SourceEnd {
    /// Not ended (the report of a source still running).
    #[default]
    Running,
    /// The feed's session ended (MoldUDP64 end of session, SoupBinTCP `Z`).
    EndOfSession,
    /// A stop was requested (a signal, a test).
    Stopped,
    /// The configured time limit passed.
    TimeLimit(Duration),
    /// The book thread went away.
    BookThreadGone,
    /// Nothing arrived for this long: a silent feed is a dead feed.
    Silent(Duration),
    /// Something failed; the text says what.
    Error(String),
}

impl SourceEnd {
    /// True for the endings an operator must look at (silence, errors).
    pub fn is_error(&self) -> bool {
        matches!(self, SourceEnd::Silent(_) | SourceEnd::Error(_))
    }
}

impl fmt::Display for SourceEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SourceEnd::Running => write!(f, "running"),
            SourceEnd::EndOfSession => write!(f, "end of session"),
            SourceEnd::Stopped => write!(f, "stopped"),
            SourceEnd::TimeLimit(d) => write!(f, "time limit of {d:?} reached"),
            SourceEnd::BookThreadGone => write!(f, "the book thread stopped"),
            SourceEnd::Silent(d) => write!(f, "error: feed silent for {d:?}"),
            SourceEnd::Error(e) => write!(f, "error: {e}"),
        }
    }
}
