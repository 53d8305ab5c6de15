//! The exit statuses of `ticklane`, one type for every command and report, one meaning
//! each, so scripts can tell a mistake in the command or the configuration from a failure
//! while running, and a clean end from one that lost messages. Which error is which status
//! is decided where the errors are known (`views::exit_status`); what a report earns, by the
//! report (`ReplaySummary::exit_status`, `views::line_run_status`).

/// The exit status of a process whose drain did not finish within its bound
/// ([`ExitStatus::DrainTimedOut`]). Its snapshot is not marked `CLOSED` (a reader sees a
/// writer that stopped without a clean end) unless the books had drained and the snapshot
/// closed before what outlasted the bound; the message says which.
pub const DRAIN_TIMED_OUT: i32 = 4;

/// How a `ticklane` command ended.
///
/// When several apply, a runtime failure outranks declared loss: a line that failed and
/// also lost messages exits 1, since its loss count may be incomplete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    /// 0: a clean end.
    Success,
    /// 1: a runtime failure: an input that cannot be read or is corrupt, a feed that went
    /// silent, a socket, a thread, a result that is not what it should be.
    Failure,
    /// 2: a usage or configuration error: a bad argument (clap's own errors exit 2 too), or
    /// any configuration error. Nothing ran.
    Usage,
    /// 3: the command ran to its end, but messages were declared lost: a MoldUDP64 gap that
    /// retransmission did not fill (or no retransmission server to ask), or a capture whose
    /// sequencer found sequences missing. The summary lists how many and which ranges.
    /// (SoupBinTCP cannot declare loss: TCP delivers in order or fails.) Also an Aeron
    /// subscriber whose stream ended before it had every book, or with books flagged
    /// MAYBE_BAD: its summary says which.
    DeclaredLost,
    /// 4: `run --config` was told to stop (SIGTERM or SIGINT) and its drain (stop reading,
    /// drain the ring, close the snapshot) took longer than `engine.shutdown_timeout_s`; the
    /// snapshot is not marked `CLOSED` unless it was closed before what outlasted the bound
    /// (the message says which). Exited by the drain's watchdog
    /// ([`DRAIN_TIMED_OUT`]), so no command returns it.
    DrainTimedOut,
    /// 130: stopped by SIGINT or SIGTERM before the end (128 + SIGINT), as shells report it.
    Interrupted,
    /// 141: stdout was closed under us (`ticklane … | head`), as a SIGPIPE death reports it
    /// (128 + 13).
    ClosedStdout,
}

impl ExitStatus {
    /// The number the process exits with.
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Failure => 1,
            ExitStatus::Usage => 2,
            ExitStatus::DeclaredLost => 3,
            ExitStatus::DrainTimedOut => DRAIN_TIMED_OUT as u8,
            ExitStatus::Interrupted => 130,
            ExitStatus::ClosedStdout => 141,
        }
    }

    /// The status of a command that ran to its end: [`ExitStatus::DeclaredLost`] when
    /// `messages_lost` is not 0, [`ExitStatus::Success`] otherwise.
    pub fn of_loss(messages_lost: u64) -> ExitStatus {
        if messages_lost > 0 {
            ExitStatus::DeclaredLost
        } else {
            ExitStatus::Success
        }
    }
}
