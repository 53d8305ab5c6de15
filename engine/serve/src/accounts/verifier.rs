//! The thread that checks passwords, off the server's loop: an Argon2id verification costs
//! some 20 ms of one core at the default cost, by design, and the loop serves every other client
//! meanwhile. It also reloads the accounts file, on request (`SIGHUP`) or when the file
//! changed, checked at an interval.
//!
//! The server hands it logins through a bounded queue (`Verifier::submit` refuses when it
//! is full: the login is then told to come back later, the way any stage of the storm
//! defences refuses) and takes verdicts back each turn of its loop (the subscriber server
//! polls every millisecond, the browser view every turn, so no waker is needed). Each
//! server that takes logins runs one (the subscriber server and the browser view), each
//! with its own reload flag.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use crossbeam_queue::ArrayQueue;

use super::password::PasswordChecker;
use super::AccountTable;
use crate::protocol::{Secret, ACCOUNT_LEN};

/// Logins waiting for their verification, at most. At about 20 ms each (the default cost,
/// measured on the 2-core development VM), a full queue is some 1.3 s of work: a login
/// beyond it is better told to come back.
pub const QUEUE: usize = 64;

/// Where the accounts come from and how changes are picked up.
#[derive(Clone, Debug)]
pub struct AccountsSource {
    /// The accounts file.
    pub path: PathBuf,
    /// Check the file for a change this often (`None`: only when asked).
    pub reload_interval: Option<Duration>,
    /// Set (by the process's `SIGHUP` handler) to reload now; the verifier clears it.
    pub reload_requested: Arc<AtomicBool>,
}

/// A login to check.
#[derive(Clone, Copy, Debug)]
pub struct Login {
    /// The connection that sent it (a slot's unique number; a closed slot's verdict is
    /// dropped).
    pub ticket: u64,
    /// The account named (space padded).
    pub account: [u8; ACCOUNT_LEN],
    /// The secret it came with.
    pub secret: Secret,
}

/// A login checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// The login's ticket.
    pub ticket: u64,
    /// The account exists and the secret is its password.
    pub genuine: bool,
}

/// What happened to the accounts file, for the server's counters and log.
#[derive(Debug)]
pub enum Reload {
    /// A new table, in effect from now.
    Loaded(Arc<AccountTable>),
    /// The file changed but cannot be used; the table in effect stays.
    Failed(String),
}

/// The verifier thread and its queues.
pub struct Verifier {
    logins: Arc<ArrayQueue<Login>>,
    verdicts: Arc<ArrayQueue<Verdict>>,
    reloads: Arc<Mutex<Vec<Reload>>>,
    reload_count: Arc<AtomicU64>,
    seen_reloads: u64,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Verifier {
    /// Starts the thread with `table` (already loaded from `source.path`).
    ///
    /// # Errors
    ///
    /// The thread cannot be started.
    pub fn start(table: Arc<AccountTable>, source: AccountsSource) -> std::io::Result<Self> {
        let logins = Arc::new(ArrayQueue::new(QUEUE));
        let verdicts = Arc::new(ArrayQueue::new(QUEUE));
        let reloads = Arc::new(Mutex::new(Vec::with_capacity(4)));
        let reload_count = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let worker = Worker {
            table,
            checker: PasswordChecker::default(),
            stamp: file_stamp(&source.path),
            source,
            logins: Arc::clone(&logins),
            verdicts: Arc::clone(&verdicts),
            reloads: Arc::clone(&reloads),
            reload_count: Arc::clone(&reload_count),
            stop: Arc::clone(&stop),
        };
        let thread = std::thread::Builder::new()
            .name("ticklane-verify".into())
            .spawn(move || worker.run())?;
        Ok(Verifier {
            logins,
            verdicts,
            reloads,
            reload_count,
            seen_reloads: 0,
            stop,
            thread: Some(thread),
        })
    }

    /// Queues `login`; `false` if the queue is full.
    pub fn submit(&self, login: Login) -> bool {
        let queued = self.logins.push(login).is_ok();
        if queued {
            if let Some(thread) = &self.thread {
                thread.thread().unpark();
            }
        }
        queued
    }

    /// The next verdict ready, if any.
    pub fn verdict(&self) -> Option<Verdict> {
        self.verdicts.pop()
    }

    /// What happened to the accounts file since the last call, oldest first, or nothing
    /// (one atomic load when nothing did).
    pub fn reloads(&mut self, into: &mut Vec<Reload>) {
        let count = self.reload_count.load(Ordering::Acquire);
        if count == self.seen_reloads {
            return;
        }
        self.seen_reloads = count;
        into.append(&mut self.reloads.lock().unwrap_or_else(PoisonError::into_inner));
    }
}

impl Drop for Verifier {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

struct Worker {
    table: Arc<AccountTable>,
    /// Argon2's memory, kept from one login to the next.
    checker: PasswordChecker,
    source: AccountsSource,
    /// The file's modification time and length when last loaded.
    stamp: Option<(SystemTime, u64)>,
    logins: Arc<ArrayQueue<Login>>,
    verdicts: Arc<ArrayQueue<Verdict>>,
    reloads: Arc<Mutex<Vec<Reload>>>,
    reload_count: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

/// How long the thread sleeps when it has nothing to do (a reload request waits at most
/// this long).
const IDLE: Duration = Duration::from_millis(100);

impl Worker {
    fn run(mut self) {
        let mut next_check = self.source.reload_interval.map(|i| Instant::now() + i);
        while !self.stop.load(Ordering::Acquire) {
            while let Some(login) = self.logins.pop() {
                let genuine = self.table.verify_with(
                    &mut self.checker,
                    &login.account,
                    login.secret.as_bytes(),
                );
                let mut verdict = Verdict {
                    ticket: login.ticket,
                    genuine,
                };
                // As many verdicts fit as logins can wait, so this only waits for a
                // server that has stopped taking them.
                while let Err(back) = self.verdicts.push(verdict) {
                    if self.stop.load(Ordering::Acquire) {
                        return;
                    }
                    verdict = back;
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            let asked = self.source.reload_requested.swap(false, Ordering::AcqRel);
            let due = next_check.is_some_and(|at| Instant::now() >= at);
            if due {
                next_check = self.source.reload_interval.map(|i| Instant::now() + i);
            }
            if asked || (due && file_stamp(&self.source.path) != self.stamp) {
                self.reload();
            }
            std::thread::park_timeout(IDLE);
        }
    }

    fn reload(&mut self) {
        let stamp = file_stamp(&self.source.path);
        let outcome = match AccountTable::load(&self.source.path) {
            Ok(table) => {
                self.table = Arc::new(table);
                Reload::Loaded(Arc::clone(&self.table))
            }
            Err(e) => Reload::Failed(e.to_string()),
        };
        // A file that failed is not tried again until it changes once more.
        self.stamp = stamp;
        self.reloads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(outcome);
        self.reload_count.fetch_add(1, Ordering::Release);
    }
}

/// The file's modification time and length, to notice a change without reading it.
fn file_stamp(path: &std::path::Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}
