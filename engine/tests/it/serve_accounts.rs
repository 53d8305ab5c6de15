//! The subscriber server with an accounts file, on loopback: every login and request that
//! must be refused is refused with its reason and counted, the failed-login delay is the
//! same for an unknown account and a wrong password, an entitled account gets only what it
//! may see (its symbols, its depth, its limits), a reload withdraws at once, and the audit
//! file has a line for each of these. Hashes are made in the test at a cheap cost.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ticklane_engine::book::{LevelView, Side};
use ticklane_engine::overload::{EventFanout, SubscriberHub};
use ticklane_engine::serve::accounts::password::hash_password_with_cost;
use ticklane_engine::serve::accounts::verifier::AccountsSource;
use ticklane_engine::serve::accounts::AccountTable;
use ticklane_engine::serve::audit::AuditLog;
use ticklane_engine::serve::client::{ClientError, Ended, Received, Session};
use ticklane_engine::serve::protocol::{Reason, Secret, ServerMessage};
use ticklane_engine::serve::{
    start_secure_server, AccountsConfig, AdmitAll, ServeConfig, ServeCounts, ServeHandle,
    ServeSecurity,
};
use ticklane_feed::itch::Price;
use ticklane_testkit::{loopback, poll_until};

use crate::util::serve::{hub_config, SharedModel};

const TIMEOUT: Duration = Duration::from_secs(5);
const DELAY: Duration = Duration::from_millis(300);

struct Server {
    server: Option<ServeHandle>,
    fanout: EventFanout,
    model: SharedModel,
    dir: tempfile::TempDir,
    accounts: PathBuf,
    reload: Arc<AtomicBool>,
    audit: Option<Arc<AuditLog>>,
}

impl Server {
    fn addr(&self) -> SocketAddr {
        self.server.as_ref().unwrap().local_addr()
    }

    fn counts_when(&self, done: impl Fn(&ServeCounts) -> bool) -> ServeCounts {
        let counters = self.server.as_ref().unwrap().counters();
        assert!(
            poll_until(Duration::from_secs(10), || done(&counters.load())),
            "counts never got there: {:?}",
            counters.load()
        );
        counters.load()
    }

    /// Stops the server and the audit writer; the audit file's lines.
    fn stop(mut self) -> Vec<serde_json::Value> {
        self.server.take().unwrap().stop().unwrap();
        Arc::into_inner(self.audit.take().unwrap())
            .expect("the server let go of the audit log")
            .close()
            .unwrap();
        std::fs::read_to_string(self.dir.path().join("audit.log"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect()
    }
}

fn hash(password: &str) -> String {
    hash_password_with_cost(password.as_bytes(), 8, 1).unwrap()
}

/// alice: AAPL and Q*, full depth, 2 subscriptions, 1 session; bob: everything, top of
/// book, 2 sessions.
fn accounts_text(alice_symbols: &str) -> String {
    format!(
        "[[account]]\nname = \"alice\"\npassword = \"{}\"\nsymbols = [{alice_symbols}]\n\
         max_subscriptions = 2\n\n[[account]]\nname = \"bob\"\npassword = \"{}\"\n\
         symbols = [\"*\"]\ndepth = \"top\"\nmax_sessions = 2\n",
        hash("alice-secret"),
        hash("bob-secret")
    )
}

fn write(path: &Path, text: &str) {
    let temp = path.with_extension("new");
    std::fs::write(&temp, text).unwrap();
    std::fs::rename(&temp, path).unwrap();
}

fn server() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let accounts = dir.path().join("accounts.toml");
    write(&accounts, &accounts_text("\"AAPL\", \"Q*\""));
    let table = Arc::new(AccountTable::load(&accounts).unwrap());
    let reload = Arc::new(AtomicBool::new(false));
    let audit = Arc::new(AuditLog::open(&dir.path().join("audit.log")).unwrap());
    let model = SharedModel::default();
    for (i, s) in [b"AAPL    ", b"MSFT    ", b"QQQ     ", b"QCOM    "]
        .into_iter()
        .enumerate()
    {
        model.add_symbol(s, i as u16 + 1);
    }
    let (hub, mut fanout) = SubscriberHub::new(hub_config());
    let security = ServeSecurity {
        accounts: Some(AccountsConfig {
            table,
            source: AccountsSource {
                path: accounts.clone(),
                reload_interval: None,
                reload_requested: Arc::clone(&reload),
            },
            failure_delay: DELAY,
        }),
        audit: Some(Arc::clone(&audit)),
        ..ServeSecurity::default()
    };
    let server = start_secure_server(
        ServeConfig::new(loopback(0)),
        security,
        Some(hub),
        Box::new(model.clone()),
        Box::new(AdmitAll),
        Arc::default(),
    )
    .unwrap();
    fanout.accept_subscribers();
    Server {
        server: Some(server),
        fanout,
        model,
        dir,
        accounts,
        reload,
        audit: Some(audit),
    }
}

fn login(s: &Server, account: &str, secret: &str) -> Result<Session, ClientError> {
    let secret = Secret::new(secret.as_bytes()).unwrap();
    Session::connect_over(s.addr(), None, account, &secret, TIMEOUT)
}

/// The next message that is not a heartbeat, as an owned summary.
fn next(session: &mut Session) -> String {
    loop {
        match session.recv().expect("session up") {
            Received::Message(ServerMessage::Heartbeat) => {}
            Received::Message(ServerMessage::BookImage { header, .. }) => {
                return format!(
                    "image {} bids {} asks {} flags {}",
                    String::from_utf8_lossy(&header.symbol).trim_end(),
                    header.bid_levels,
                    header.ask_levels,
                    header.flags
                );
            }
            Received::Message(ServerMessage::NotEntitled {
                symbol,
                reason,
                request_id,
                ..
            }) => {
                return format!(
                    "not entitled {} {reason:?} request {}",
                    String::from_utf8_lossy(&symbol).trim_end(),
                    u32::from(request_id != 0)
                );
            }
            Received::Message(ServerMessage::Quote { symbol, .. }) => {
                return format!("quote {}", String::from_utf8_lossy(&symbol).trim_end());
            }
            Received::Message(ServerMessage::Level { symbol, .. }) => {
                return format!("level {}", String::from_utf8_lossy(&symbol).trim_end());
            }
            Received::Message(ServerMessage::SymbolList { symbols, last, .. }) => {
                assert!(last);
                let names: Vec<_> = symbols
                    .chunks(8)
                    .map(|s| String::from_utf8_lossy(s).trim_end().to_owned())
                    .collect();
                return format!("symbols {}", names.join(","));
            }
            Received::Message(other) => return format!("{other:?}"),
            Received::Gap { expected, got } => panic!("gap: {expected} then {got}"),
        }
    }
}

fn levels(s: &mut Server, symbol: &[u8; 8], feed_seq: u64) {
    for (i, side) in [Side::Bid, Side::Bid, Side::Ask, Side::Ask]
        .into_iter()
        .enumerate()
    {
        let level = LevelView {
            price: Price(100_0000 + i as u32 * 100),
            qty: 100,
            orders: 1,
        };
        s.model
            .level(&mut s.fanout, symbol, feed_seq + i as u64, side, level);
    }
}

#[test]
fn logins_that_prove_nothing_are_refused_after_one_delay_and_counted() {
    let s = server();
    let refused = |account: &str, secret: &str| {
        let started = Instant::now();
        let outcome = login(&s, account, secret);
        (outcome.map(|_| ()), started.elapsed())
    };
    let (unknown, unknown_took) = refused("mallory", "alice-secret");
    let (wrong, wrong_took) = refused("alice", "alice-secreT");
    for (outcome, took) in [(&unknown, unknown_took), (&wrong, wrong_took)] {
        assert!(
            matches!(
                outcome,
                Err(ClientError::Rejected {
                    reason: Reason::NotAuthorised,
                    ..
                })
            ),
            "{outcome:?}"
        );
        assert!(took >= DELAY, "answered after {took:?}, before the delay");
        assert!(took < DELAY + Duration::from_secs(2), "{took:?}");
    }
    // A version-1 login (no secret) is told the version is not served, for good.
    let v1 = Session::connect_over(s.addr(), None, "alice", &Secret::NONE, TIMEOUT);
    assert!(
        matches!(
            v1,
            Err(ClientError::Rejected {
                reason: Reason::BadVersion,
                ..
            })
        ),
        "{v1:?}"
    );
    // The right password gets in; a second session of a one-session account does not.
    let alice = login(&s, "alice", "alice-secret").expect("alice logs in");
    let second = login(&s, "alice", "alice-secret");
    assert!(
        matches!(
            second,
            Err(ClientError::Ended {
                why: Ended::LoginRejected(Reason::SessionLimit, _),
                ..
            })
        ),
        "{second:?}"
    );
    let counts = s.counts_when(|c| c.logins_session_limit == 1);
    assert_eq!(counts.logins_not_authorised, 2);
    assert_eq!(counts.logins_wrong_version, 1);
    assert_eq!(counts.accepted, 1);
    drop(alice);
    s.counts_when(|c| c.clients == 0);
    let audit = s.stop();
    let logins: Vec<_> = audit
        .iter()
        .filter(|l| l["event"] == "login")
        .map(|l| {
            format!(
                "{} {} {}",
                l["account"].as_str().unwrap(),
                l["result"].as_str().unwrap(),
                l["reason"].as_str().unwrap_or("-")
            )
        })
        .collect();
    assert_eq!(
        logins,
        [
            "mallory refused not authorised: unknown account or wrong secret",
            "alice refused not authorised: unknown account or wrong secret",
            "alice refused protocol version not supported",
            "alice accepted -",
            "alice refused the account's concurrent sessions are all in use",
        ],
        "{audit:?}"
    );
    let logout = audit
        .iter()
        .find(|l| l["event"] == "logout")
        .expect("a logout line");
    assert_eq!(logout["account"], "alice");
    assert!(logout["session_ms"].as_u64().is_some(), "{logout}");
    assert!(audit.iter().all(|l| l["peer"]
        .as_str()
        .is_none_or(|p| p.starts_with("127.0.0.1:"))));
}

#[test]
fn an_account_gets_its_symbols_its_depth_and_its_limits() {
    let mut s = server();
    levels(&mut s, b"AAPL    ", 1);
    levels(&mut s, b"QQQ     ", 10);
    let mut alice = login(&s, "alice", "alice-secret").unwrap();
    alice.subscribe("MSFT", TIMEOUT).unwrap();
    assert_eq!(next(&mut alice), "not entitled MSFT NotEntitled request 1");
    alice.subscribe("AAPL", TIMEOUT).unwrap();
    assert_eq!(next(&mut alice), "image AAPL bids 2 asks 2 flags 0");
    alice.subscribe("QQQ", TIMEOUT).unwrap();
    assert_eq!(next(&mut alice), "image QQQ bids 2 asks 2 flags 0");
    // Past the account's two subscriptions: refused, the session kept.
    alice.subscribe("QCOM", TIMEOUT).unwrap();
    assert_eq!(
        next(&mut alice),
        "not entitled QCOM TooManySymbols request 1"
    );
    alice.symbol_list(TIMEOUT).unwrap();
    assert_eq!(next(&mut alice), "symbols AAPL,QCOM,QQQ");
    // Bob sees everything at the top of book: one level a side, no level updates.
    let mut bob = login(&s, "bob", "bob-secret").unwrap();
    bob.subscribe("AAPL", TIMEOUT).unwrap();
    assert_eq!(next(&mut bob), "image AAPL bids 1 asks 1 flags 4");
    levels(&mut s, b"AAPL    ", 100);
    assert_eq!(next(&mut alice), "level AAPL");
    let counts = s.counts_when(|c| c.entitlement_refused == 2);
    assert_eq!(counts.accepted, 2);
    // Bob got none of those levels: the answer to his next request comes next.
    bob.subscribe("QQQ", TIMEOUT).unwrap();
    assert_eq!(next(&mut bob), "image QQQ bids 1 asks 1 flags 4");
    drop(alice);
    drop(bob);
    let audit = s.stop();
    let refused: Vec<_> = audit
        .iter()
        .filter(|l| l["event"] == "entitlement")
        .map(|l| {
            format!(
                "{} {}",
                l["symbol"].as_str().unwrap(),
                l["reason"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        refused,
        ["MSFT not entitled", "QCOM too many subscriptions"]
    );
}

#[test]
fn a_reload_withdraws_what_the_file_no_longer_grants_at_once() {
    let mut s = server();
    levels(&mut s, b"AAPL    ", 1);
    levels(&mut s, b"QQQ     ", 10);
    let mut alice = login(&s, "alice", "alice-secret").unwrap();
    let mut bob = login(&s, "bob", "bob-secret").unwrap();
    alice.subscribe("AAPL", TIMEOUT).unwrap();
    assert!(next(&mut alice).starts_with("image AAPL"));
    alice.subscribe("QQQ", TIMEOUT).unwrap();
    assert!(next(&mut alice).starts_with("image QQQ"));
    // Alice keeps AAPL only; bob is removed.
    let text = accounts_text("\"AAPL\"");
    let alice_only = text[..text.find("\n\n[[account]]").unwrap() + 1].to_owned();
    write(&s.accounts, &alice_only);
    s.reload.store(true, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(next(&mut alice), "not entitled QQQ Withdrawn request 0");
    let bob_ended = loop {
        match bob.recv() {
            Ok(_) => {}
            Err(e) => break e,
        }
    };
    assert!(
        matches!(
            bob_ended,
            ClientError::Ended {
                why: Ended::CutLoose(Reason::Withdrawn),
                ..
            }
        ),
        "{bob_ended:?}"
    );
    // Updates to the withdrawn symbol no longer reach her; AAPL's still do.
    levels(&mut s, b"QQQ     ", 100);
    levels(&mut s, b"AAPL    ", 200);
    assert_eq!(next(&mut alice), "level AAPL");
    // A file that does not parse changes nothing and is counted.
    write(&s.accounts, "[[account]]\nname = 1\n");
    s.reload.store(true, std::sync::atomic::Ordering::SeqCst);
    let counts = s.counts_when(|c| c.accounts_reload_failed == 1);
    assert_eq!(counts.accounts_reloaded, 1);
    assert_eq!(counts.entitlement_withdrawn, 1);
    let again = login(&s, "bob", "bob-secret");
    assert!(
        matches!(
            again,
            Err(ClientError::Rejected {
                reason: Reason::NotAuthorised,
                ..
            })
        ),
        "{again:?}"
    );
    drop(alice);
    let audit = s.stop();
    let events: Vec<_> = audit
        .iter()
        .filter(|l| l["event"] == "accounts" || l["result"] == "withdrawn")
        .map(|l| {
            format!(
                "{} {}",
                l["event"].as_str().unwrap(),
                l["result"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        events,
        [
            "accounts reloaded",
            "entitlement withdrawn",
            "accounts failed"
        ]
    );
}
