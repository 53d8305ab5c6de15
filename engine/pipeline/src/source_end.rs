//! Why a reader stage ended. `Copy` enums all the way down: the normal endings and the
//! errors alike allocate nothing, and each error keeps its cause as a typed `source()` until
//! [`SourceEnd`]'s `Display`, the edge, formats the chain once.

use std::error::Error;
use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use ticklane_feed::net::OsError;
use ticklane_feed::soupbintcp::{ProtocolError, RejectReason, SendError};

/// Why a reader stage ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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
    /// Something failed.
    Error(SourceError),
}

impl SourceEnd {
    /// True for the endings an operator must look at (silence, errors).
    pub fn is_error(&self) -> bool {
        matches!(self, SourceEnd::Silent(_) | SourceEnd::Error(_))
    }
}

impl fmt::Display for SourceEnd {
    /// The ending; an error with each of its causes once (`error: a: b: c`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SourceEnd::Running => write!(f, "running"),
            SourceEnd::EndOfSession => write!(f, "end of session"),
            SourceEnd::Stopped => write!(f, "stopped"),
            SourceEnd::TimeLimit(d) => write!(f, "time limit of {d:?} reached"),
            SourceEnd::BookThreadGone => write!(f, "the book thread stopped"),
            SourceEnd::Silent(d) => write!(f, "error: feed silent for {d:?}"),
            SourceEnd::Error(e) => write!(f, "error: {}", Chain(e)),
        }
    }
}

/// An error and its `source()`s, each once, joined by `: `.
pub struct Chain<'a>(pub &'a (dyn Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut cause = self.0.source();
        while let Some(e) = cause {
            write!(f, ": {e}")?;
            cause = e.source();
        }
        Ok(())
    }
}

/// Which step of the event loop failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollStep {
    /// Creating the `mio::Poll`.
    Create,
    /// Registering a socket with it.
    Register,
    /// Waiting on it.
    Wait,
}

impl fmt::Display for PollStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PollStep::Create => "cannot create the event poll",
            PollStep::Register => "cannot register the socket with the event poll",
            PollStep::Wait => "waiting on the event poll failed",
        })
    }
}

/// A reader stage's fatal error. `Copy`; the cause is its `source()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    /// The event loop failed.
    #[error("{step}")]
    Poll {
        /// Which step.
        step: PollStep,
        /// The OS error.
        #[source]
        error: OsError,
    },
    /// The SoupBinTCP server refused the login; reconnecting would be refused again.
    #[error("the SoupBinTCP server rejected the login: {}", reject_text(*.0))]
    LoginRejected(RejectReason),
    /// The SoupBinTCP server broke the protocol: a contract violation, never retried (a
    /// reconnect would resume into the same bytes, or mask them).
    #[error("the SoupBinTCP server broke the protocol; not retried")]
    Protocol(#[source] ProtocolError),
    /// The login request could not be queued.
    #[error("cannot send the SoupBinTCP login")]
    Login(#[source] SendError),
    /// The GLIMPSE snapshot a line starts from could not be loaded (the last attempt's
    /// reason; the report's `glimpse` counts every attempt).
    #[error("no snapshot to start from: {0}")]
    Snapshot(#[source] super::SnapshotFailure),
    /// The connection dropped more often than the line allows.
    #[error("gave up after {reconnects} reconnects; the last connection ended")]
    ReconnectsExhausted {
        /// Reconnects made.
        reconnects: u32,
        /// Why the last connection ended.
        #[source]
        last: DropReason,
    },
}

/// What a SoupBinTCP reject code means.
fn reject_text(reason: RejectReason) -> String {
    match reason {
        RejectReason::NotAuthorized => "not authorised (A)".into(),
        RejectReason::SessionNotAvailable => "session not available (S)".into(),
        RejectReason::Other(code) => format!("code {:?}", code as char),
    }
}

/// Why a SoupBinTCP connection ended, so that the source reconnected. `Copy`; the OS error or
/// protocol error is its `source()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DropReason {
    /// The connection could not be made.
    #[error("cannot connect to {addr}{}", key_text(*.key))]
    Connect {
        /// The server.
        addr: SocketAddr,
        /// The configuration key the address came from, if any.
        key: Option<&'static str>,
        /// The OS error (refused, unreachable).
        #[source]
        error: OsError,
    },
    /// The connection was not up within the connect timeout.
    #[error("connecting to {addr} took longer than {timeout:?}")]
    ConnectTimedOut {
        /// The server.
        addr: SocketAddr,
        /// The timeout.
        timeout: Duration,
    },
    /// The server closed the connection.
    #[error("the server closed the connection")]
    Closed,
    /// Reading from the connection failed.
    #[error("reading from the server failed")]
    Read(#[source] OsError),
    /// Writing to the connection failed.
    #[error("writing to the server failed")]
    Write(#[source] OsError),
    /// Nothing arrived from the server for its timeout.
    #[error("the server was silent for {silent_for:?}")]
    ServerSilent {
        /// How long.
        silent_for: Duration,
    },
    /// The server broke the protocol.
    #[error("the server broke the SoupBinTCP protocol")]
    Protocol(#[source] ProtocolError),
    /// The server refused the login for a reason that may pass (`J` `S`: the session is not
    /// available yet); a login that is not authorised is never retried and ends the source
    /// with [`SourceError::LoginRejected`] instead.
    #[error("the SoupBinTCP server rejected the login: {}", reject_text(*.0))]
    Rejected(RejectReason),
}

/// ` (config key K)`, or nothing.
fn key_text(key: Option<&'static str>) -> String {
    key.map(|k| format!(" (config key {k})"))
        .unwrap_or_default()
}

impl DropReason {
    /// This reason's bucket in [`DropCounts`].
    pub fn kind(&self) -> DropKind {
        match self {
            DropReason::Connect { .. } => DropKind::Connect,
            DropReason::ConnectTimedOut { .. } => DropKind::ConnectTimedOut,
            DropReason::Closed => DropKind::Closed,
            DropReason::Read(_) => DropKind::Read,
            DropReason::Write(_) => DropKind::Write,
            DropReason::ServerSilent { .. } => DropKind::ServerSilent,
            DropReason::Protocol(_) => DropKind::Protocol,
            DropReason::Rejected(_) => DropKind::Rejected,
        }
    }
}

/// The kinds of [`DropReason`], for counting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropKind {
    /// [`DropReason::Connect`].
    Connect,
    /// [`DropReason::ConnectTimedOut`].
    ConnectTimedOut,
    /// [`DropReason::Closed`].
    Closed,
    /// [`DropReason::Read`].
    Read,
    /// [`DropReason::Write`].
    Write,
    /// [`DropReason::ServerSilent`].
    ServerSilent,
    /// [`DropReason::Protocol`].
    Protocol,
    /// [`DropReason::Rejected`].
    Rejected,
}

/// Dropped connections counted by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DropCounts {
    /// Connects that failed.
    pub connect: u64,
    /// Connects that timed out.
    pub connect_timed_out: u64,
    /// Connections the server closed.
    pub closed: u64,
    /// Read errors.
    pub read: u64,
    /// Write errors.
    pub write: u64,
    /// Servers declared silent.
    pub server_silent: u64,
    /// Protocol violations.
    pub protocol: u64,
    /// Logins refused for a reason that may pass (session not available).
    pub rejected: u64,
}

impl DropCounts {
    /// Counts `reason` in its bucket.
    pub fn count(&mut self, reason: &DropReason) {
        *match reason.kind() {
            DropKind::Connect => &mut self.connect,
            DropKind::ConnectTimedOut => &mut self.connect_timed_out,
            DropKind::Closed => &mut self.closed,
            DropKind::Read => &mut self.read,
            DropKind::Write => &mut self.write,
            DropKind::ServerSilent => &mut self.server_silent,
            DropKind::Protocol => &mut self.protocol,
            DropKind::Rejected => &mut self.rejected,
        } += 1;
    }

    /// All drops counted.
    pub fn total(&self) -> u64 {
        self.connect
            + self.connect_timed_out
            + self.closed
            + self.read
            + self.write
            + self.server_silent
            + self.protocol
            + self.rejected
    }
}

impl fmt::Display for DropCounts {
    /// The buckets that are not zero, `closed 2, server silent 1`, or `none`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let buckets = [
            ("connect failed", self.connect),
            ("connect timed out", self.connect_timed_out),
            ("closed", self.closed),
            ("read error", self.read),
            ("write error", self.write),
            ("server silent", self.server_silent),
            ("protocol error", self.protocol),
            ("login rejected", self.rejected),
        ];
        let mut first = true;
        for (name, n) in buckets.into_iter().filter(|&(_, n)| n > 0) {
            write!(f, "{}{name} {n}", if first { "" } else { ", " })?;
            first = false;
        }
        if first {
            write!(f, "none")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    #[test]
    fn an_error_end_prints_each_cause_once() {
        let refused = OsError::of(&io::Error::from(io::ErrorKind::ConnectionRefused));
        let end = SourceEnd::Error(SourceError::ReconnectsExhausted {
            reconnects: 2,
            last: DropReason::Connect {
                addr: "127.0.0.1:9".parse().expect("address"),
                key: Some("feed.server"),
                error: refused,
            },
        });
        assert_eq!(
            end.to_string(),
            "error: gave up after 2 reconnects; the last connection ended: \
             cannot connect to 127.0.0.1:9 (config key feed.server): connection refused"
        );
    }

    #[test]
    fn drops_are_counted_by_reason() {
        let mut counts = DropCounts::default();
        counts.count(&DropReason::Closed);
        counts.count(&DropReason::Closed);
        counts.count(&DropReason::ServerSilent {
            silent_for: Duration::from_secs(15),
        });
        assert_eq!(
            (counts.closed, counts.server_silent, counts.total()),
            (2, 1, 3)
        );
        assert_eq!(counts.to_string(), "closed 2, server silent 1");
        assert_eq!(DropCounts::default().to_string(), "none");
    }
}
