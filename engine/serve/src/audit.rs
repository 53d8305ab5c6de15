//! The audit trail: one JSON line per login, refusal, entitlement refusal or withdrawal,
//! logout and accounts reload, to the file `[serve] audit_log` names, appended to.
//!
//! ```text
//! {"time":"2026-12-04T14:30:00.123456Z","via":"serve","event":"login","result":"accepted","account":"alice","peer":"10.0.0.7:51012"}
//! {"time":"2026-12-04T14:30:01.500000Z","via":"web","event":"login","result":"refused","reason":"not authorised","account":"mallory","peer":"10.0.0.9:40110"}
//! {"time":"2026-12-04T14:30:02.000000Z","via":"serve","event":"entitlement","result":"refused","reason":"not entitled","account":"alice","peer":"10.0.0.7:51012","symbol":"MSFT"}
//! {"time":"2026-12-04T14:31:00.000000Z","via":"serve","event":"entitlement","result":"withdrawn","reason":"entitlement withdrawn","account":"alice","peer":"10.0.0.7:51012","symbol":"QQQ"}
//! {"time":"2026-12-04T15:00:00.000000Z","via":"serve","event":"logout","reason":"client logged out","account":"alice","peer":"10.0.0.7:51012","session_ms":1799877}
//! {"time":"2026-12-04T16:00:00.000000Z","via":"web","event":"logout","reason":"session expired","account":"alice","peer":"10.0.0.7:51020","session_ms":28800000}
//! {"time":"2026-12-04T15:00:05.000000Z","via":"serve","event":"accounts","result":"reloaded","accounts":12}
//! ```
//!
//! `time` is UTC (RFC 3339, microseconds); `via` is the server that wrote it (`serve`, the
//! subscriber server; `web`, the browser view; the two share one trail); `account` is what
//! the login named (also for an account that does not exist: the record of who tried);
//! `reason` is the protocol's reason text; a logout's `session_ms` runs from the login to
//! the close (for the browser view, from the login to the logout or the session's expiry).
//! `result` of a login is `accepted` or `refused`; of `accounts`, `reloaded` (with the
//! count) or `failed` (the old table stays; the run's stderr says why).
//!
//! The server never waits on the file: it hands each record to a writer thread through a
//! bounded queue ([`QUEUE`] records, preallocated), and a record that finds the queue full
//! is dropped and counted ([`AuditLog::dropped`], in `/metrics` and the run summary).
#![forbid(unsafe_code)]

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use crossbeam_queue::ArrayQueue;

use super::protocol::{Reason, ACCOUNT_LEN};

/// Records waiting for the writer, at most.
pub const QUEUE: usize = 4096;

/// What a record says happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuditEvent {
    /// A login accepted.
    LoginAccepted,
    /// A login refused, for `reason`.
    LoginRefused(Reason),
    /// A subscribe refused (not entitled, or past the account's limit).
    EntitlementRefused {
        /// The symbol asked for.
        symbol: [u8; 8],
        /// Why.
        reason: Reason,
    },
    /// A subscription taken away by a change of the accounts file.
    EntitlementWithdrawn {
        /// The symbol.
        symbol: [u8; 8],
    },
    /// A browser's session reached its configured length and ended.
    SessionExpired {
        /// From the login to the expiry.
        session: Duration,
    },
    /// A logged-in session ended.
    Logout {
        /// How it ended (`None`: the client logged out or closed).
        reason: Option<Reason>,
        /// From the login to the close.
        session: Duration,
    },
    /// The accounts file was loaded again: this many accounts now.
    AccountsReloaded(usize),
    /// The accounts file changed but could not be used.
    AccountsReloadFailed,
}

/// Which server wrote a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// The subscriber server (`"serve"`).
    Serve,
    /// The browser view (`"web"`).
    Web,
}

/// One line of the trail.
#[derive(Clone, Copy, Debug)]
pub struct AuditRecord {
    /// When.
    pub at: SystemTime,
    /// Which server.
    pub via: Via,
    /// What.
    pub event: AuditEvent,
    /// The account named (space padded), for the events that have one.
    pub account: [u8; ACCOUNT_LEN],
    /// The client's address, for the events that have one.
    pub peer: Option<SocketAddr>,
}

/// The writer thread and its queue.
pub struct AuditLog {
    queue: Arc<ArrayQueue<AuditRecord>>,
    dropped: AtomicU64,
    written: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl AuditLog {
    /// Opens `path` for appending (creating it, readable by its owner only) and starts the
    /// writer.
    ///
    /// # Errors
    ///
    /// The file cannot be opened, or the thread started.
    pub fn open(path: &Path) -> io::Result<AuditLog> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = File::options()
            .append(true)
            .create(true)
            .mode(0o600)
            .open(path)?;
        let queue = Arc::new(ArrayQueue::new(QUEUE));
        let stop = Arc::new(AtomicBool::new(false));
        let written = Arc::new(AtomicU64::new(0));
        let thread = {
            let (queue, stop, written) =
                (Arc::clone(&queue), Arc::clone(&stop), Arc::clone(&written));
            std::thread::Builder::new()
                .name("ticklane-audit".into())
                .spawn(move || write_records(&queue, &stop, &written, file))?
        };
        Ok(AuditLog {
            queue,
            dropped: AtomicU64::new(0),
            written,
            stop,
            thread: Some(thread),
        })
    }

    /// Hands `record` to the writer; never waits. A full queue drops it, counted.
    pub fn record(&self, record: AuditRecord) {
        if self.queue.push(record).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Records dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Records written to the file so far.
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }

    /// Writes what is queued, flushes and stops the writer.
    ///
    /// # Errors
    ///
    /// The first write error the writer met.
    pub fn close(mut self) -> io::Result<()> {
        self.finish()
    }

    fn finish(&mut self) -> io::Result<()> {
        self.stop.store(true, Ordering::Release);
        match self.thread.take() {
            Some(thread) => {
                thread.thread().unpark();
                thread
                    .join()
                    .unwrap_or_else(|_| Err(io::Error::other("the audit writer panicked")))
            }
            None => Ok(()),
        }
    }
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("written", &self.written())
            .field("dropped", &self.dropped())
            .finish_non_exhaustive()
    }
}

impl Drop for AuditLog {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

/// The writer: takes records as they come, writes each as a line, flushes whenever the
/// queue is empty (a record reaches the file within a few milliseconds), and at the end.
fn write_records(
    queue: &ArrayQueue<AuditRecord>,
    stop: &AtomicBool,
    written: &AtomicU64,
    file: File,
) -> io::Result<()> {
    let mut out = BufWriter::new(file);
    let mut line = String::with_capacity(256);
    loop {
        let stopping = stop.load(Ordering::Acquire);
        let mut any = false;
        while let Some(record) = queue.pop() {
            line.clear();
            format_record(&record, &mut line);
            out.write_all(line.as_bytes())?;
            written.fetch_add(1, Ordering::Relaxed);
            any = true;
        }
        if any {
            out.flush()?;
        }
        if stopping {
            return out.flush();
        }
        std::thread::park_timeout(Duration::from_millis(5));
    }
}

/// `record` as one JSON line.
pub fn format_record(record: &AuditRecord, out: &mut String) {
    use std::fmt::Write as _;
    let time = time::OffsetDateTime::from(record.at);
    let _ = write!(
        out,
        "{{\"time\":\"{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z\"",
        time.year(),
        u8::from(time.month()),
        time.day(),
        time.hour(),
        time.minute(),
        time.second(),
        time.microsecond()
    );
    let via = match record.via {
        Via::Serve => "serve",
        Via::Web => "web",
    };
    let _ = write!(out, ",\"via\":\"{via}\"");
    let (event, result, reason) = match record.event {
        AuditEvent::LoginAccepted => ("login", Some("accepted"), None),
        AuditEvent::LoginRefused(reason) => ("login", Some("refused"), Some(reason)),
        AuditEvent::EntitlementRefused { reason, .. } => {
            ("entitlement", Some("refused"), Some(reason))
        }
        AuditEvent::EntitlementWithdrawn { .. } => {
            ("entitlement", Some("withdrawn"), Some(Reason::Withdrawn))
        }
        AuditEvent::Logout { reason, .. } => ("logout", None, reason),
        AuditEvent::SessionExpired { .. } => ("logout", None, None),
        AuditEvent::AccountsReloaded(_) => ("accounts", Some("reloaded"), None),
        AuditEvent::AccountsReloadFailed => ("accounts", Some("failed"), None),
    };
    let _ = write!(out, ",\"event\":\"{event}\"");
    if let Some(result) = result {
        let _ = write!(out, ",\"result\":\"{result}\"");
    }
    match (record.event, reason) {
        (AuditEvent::Logout { .. }, None) => out.push_str(",\"reason\":\"client logged out\""),
        (AuditEvent::SessionExpired { .. }, _) => out.push_str(",\"reason\":\"session expired\""),
        (_, Some(reason)) => {
            out.push_str(",\"reason\":");
            json_string(&reason.to_string(), out);
        }
        _ => {}
    }
    if record.account.iter().any(|&b| b != b' ' && b != 0) {
        out.push_str(",\"account\":");
        json_string(trimmed(&record.account), out);
    }
    if let Some(peer) = record.peer {
        let _ = write!(out, ",\"peer\":\"{peer}\"");
    }
    match record.event {
        AuditEvent::EntitlementRefused { symbol, .. }
        | AuditEvent::EntitlementWithdrawn { symbol } => {
            out.push_str(",\"symbol\":");
            json_string(trimmed(&symbol), out);
        }
        AuditEvent::Logout { session, .. } | AuditEvent::SessionExpired { session } => {
            let _ = write!(out, ",\"session_ms\":{}", session.as_millis());
        }
        AuditEvent::AccountsReloaded(n) => {
            let _ = write!(out, ",\"accounts\":{n}");
        }
        _ => {}
    }
    out.push_str("}\n");
}

/// A padded field without its padding, as text (the protocol keeps these printable ASCII).
fn trimmed(field: &[u8]) -> &str {
    let end = field.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1);
    std::str::from_utf8(&field[..end]).unwrap_or("?")
}

/// `text` as a JSON string (quotes, backslashes and control characters escaped).
fn json_string(text: &str, out: &mut String) {
    use std::fmt::Write as _;
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: u64, micros: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(seconds) + Duration::from_micros(micros)
    }

    fn account(name: &str) -> [u8; 16] {
        let mut out = [b' '; 16];
        out[..name.len()].copy_from_slice(name.as_bytes());
        out
    }

    #[test]
    fn each_event_is_one_json_line() {
        let peer: SocketAddr = "10.0.0.7:51012".parse().unwrap();
        let line = |event, name: &str| {
            let mut out = String::new();
            format_record(
                &AuditRecord {
                    at: at(1_796_394_600, 123_456),
                    via: Via::Serve,
                    event,
                    account: account(name),
                    peer: (!name.is_empty()).then_some(peer),
                },
                &mut out,
            );
            out
        };
        assert_eq!(
            line(AuditEvent::LoginAccepted, "alice"),
            "{\"time\":\"2026-12-04T14:30:00.123456Z\",\"via\":\"serve\",\"event\":\"login\",\"result\":\"accepted\",\
             \"account\":\"alice\",\"peer\":\"10.0.0.7:51012\"}\n"
        );
        assert_eq!(
            line(AuditEvent::LoginRefused(Reason::NotAuthorised), "a\"b\\c"),
            "{\"time\":\"2026-12-04T14:30:00.123456Z\",\"via\":\"serve\",\"event\":\"login\",\"result\":\"refused\",\
             \"reason\":\"not authorised: unknown account or wrong secret\",\
             \"account\":\"a\\\"b\\\\c\",\"peer\":\"10.0.0.7:51012\"}\n"
        );
        assert!(line(
            AuditEvent::EntitlementRefused {
                symbol: *b"MSFT    ",
                reason: Reason::NotEntitled
            },
            "alice"
        )
        .ends_with("\"reason\":\"not entitled\",\"account\":\"alice\",\"peer\":\"10.0.0.7:51012\",\"symbol\":\"MSFT\"}\n"));
        assert!(line(
            AuditEvent::Logout {
                reason: None,
                session: Duration::from_millis(1_799_877)
            },
            "alice"
        )
        .contains("\"event\":\"logout\",\"reason\":\"client logged out\",\"account\":\"alice\",\"peer\":\"10.0.0.7:51012\",\"session_ms\":1799877}"));
        assert!(line(
            AuditEvent::SessionExpired {
                session: Duration::from_secs(60)
            },
            "alice"
        )
        .contains("\"event\":\"logout\",\"reason\":\"session expired\",\"account\":\"alice\",\"peer\":\"10.0.0.7:51012\",\"session_ms\":60000}"));
        assert_eq!(
            line(AuditEvent::AccountsReloaded(12), ""),
            "{\"time\":\"2026-12-04T14:30:00.123456Z\",\"via\":\"serve\",\"event\":\"accounts\",\"result\":\"reloaded\",\"accounts\":12}\n"
        );
        for text in [
            line(AuditEvent::LoginAccepted, "alice"),
            line(AuditEvent::AccountsReloadFailed, ""),
        ] {
            serde_json::from_str::<serde_json::Value>(&text).expect("valid JSON");
        }
    }

    #[test]
    fn records_reach_the_file_and_a_full_queue_drops_counted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let log = AuditLog::open(&path).unwrap();
        let record = AuditRecord {
            at: SystemTime::now(),
            via: Via::Web,
            event: AuditEvent::LoginAccepted,
            account: account("alice"),
            peer: None,
        };
        for _ in 0..3 * QUEUE {
            log.record(record);
        }
        let dropped = log.dropped();
        let written_or_queued = 3 * QUEUE as u64 - dropped;
        log.close().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count() as u64, written_or_queued);
        assert!(written_or_queued >= QUEUE as u64);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
