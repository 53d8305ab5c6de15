//! The browser view over HTTPS with accounts, on loopback, with certificates made in the
//! test: a browser without a session gets the login page and nothing else (no socket, no
//! books), a forged cookie and another site's page are refused, failed logins are refused
//! after the delay whatever failed, an entitled login gets a secure cookie and only its
//! books at its depth, its session limit holds, a logout or a reload ends what it must at
//! once, a session ends at its length; every refusal is counted and the audit file has a
//! line for each login, refusal and logout.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use ticklane_engine::book::{BookConfig, Books};
use ticklane_engine::health::Health;
use ticklane_engine::serve::accounts::password::hash_password_with_cost;
use ticklane_engine::serve::accounts::verifier::AccountsSource;
use ticklane_engine::serve::accounts::AccountTable;
use ticklane_engine::serve::audit::AuditLog;
use ticklane_engine::serve::tls::rustls::{ClientConnection, StreamOwned};
use ticklane_engine::serve::tls::{client_config, rustls, server_config, server_name};
use ticklane_engine::serve::AccountsConfig;
use ticklane_engine::snapshot::{SnapshotReader, SnapshotWriter};
use ticklane_engine::web::{WebCounts, WebLimits, WebSecurity, WebServer, WebState};
use ticklane_feed::itch::{self, owned, Locate, Nanos, OrderRef, Price, Stock};
use ticklane_testkit::certs::TestCa;
use ticklane_testkit::poll_until;
use tungstenite::client::IntoClientRequest;
use tungstenite::{Message, WebSocket};

const DELAY: Duration = Duration::from_millis(300);

type Tls = StreamOwned<ClientConnection, TcpStream>;
type Socket = WebSocket<Tls>;

struct View {
    server: Option<WebServer>,
    client: Arc<rustls::ClientConfig>,
    dir: tempfile::TempDir,
    accounts: PathBuf,
    reload: Arc<AtomicBool>,
    audit: Option<Arc<AuditLog>>,
    _books: (Books, SnapshotWriter),
}

/// What one HTTP request got.
struct Answer {
    status: u16,
    head: String,
    body: String,
}

impl Answer {
    /// The session cookie's value `Set-Cookie` gave, if any.
    fn cookie(&self) -> Option<String> {
        let line = self
            .head
            .lines()
            .find(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))?;
        let value = line.split_once(':')?.1.trim();
        let pair = value.split(';').next()?;
        let token = pair.strip_prefix("ticklane_session=")?;
        (!token.is_empty()).then(|| token.to_owned())
    }
}

fn hash(password: &str) -> String {
    hash_password_with_cost(password.as_bytes(), 8, 1).unwrap()
}

/// alice: AAAA only, top of book, one session; bob: every symbol, one book at a time.
fn accounts_text(bob_symbols: &str) -> String {
    format!(
        "[[account]]\nname = \"alice\"\npassword = \"{}\"\nsymbols = [\"AAAA\"]\n\
         depth = \"top\"\n\n[[account]]\nname = \"bob\"\npassword = \"{}\"\n\
         symbols = [{bob_symbols}]\nmax_subscriptions = 1\nmax_sessions = 2\n",
        hash("alice-secret"),
        hash("bob-secret")
    )
}

fn write(path: &Path, text: &str) {
    let temp = path.with_extension("new");
    std::fs::write(&temp, text).unwrap();
    std::fs::rename(&temp, path).unwrap();
}

fn apply(books: &mut Books, message: owned::Message) {
    let mut buf = [0u8; 64];
    let n = message.encode(&mut buf);
    let view = itch::decode(&buf[..n]).expect("valid");
    let _ = books.apply(&view);
}

/// AAAA (locate 1) and BBBB (locate 2), each with two bid levels, published.
fn books(path: &Path) -> (Books, SnapshotWriter) {
    let mut books = Books::new(BookConfig {
        max_orders: 64,
        max_books: 4,
        levels_per_side: 16,
    })
    .expect("books");
    let mut writer = SnapshotWriter::create(path, 8, 5).expect("snapshot");
    for (locate, symbol) in [(1u16, b"AAAA"), (2, b"BBBB")] {
        apply(
            &mut books,
            owned::Message::StockDirectory(owned::StockDirectory {
                locate: Locate(locate),
                stock: Stock::new(symbol).expect("fits"),
                ..Default::default()
            }),
        );
        for (i, price) in [100_0000u32, 99_0000].into_iter().enumerate() {
            apply(
                &mut books,
                owned::Message::AddOrder(owned::AddOrder {
                    locate: Locate(locate),
                    order_ref: OrderRef(u64::from(locate) * 10 + i as u64),
                    side: b'B',
                    shares: 100,
                    price: Price(price),
                    ..Default::default()
                }),
            );
        }
        writer
            .publish(&books, Locate(locate), 1, Nanos(1))
            .expect("room");
    }
    (books, writer)
}

fn view(session_length: Duration) -> View {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("ticklane test CA");
    let files = ca.issue(dir.path(), "web", &["localhost", "127.0.0.1"]);
    let client = client_config(Some(&ca.write(dir.path(), "ca.pem"))).expect("the CA");
    let accounts = dir.path().join("accounts.toml");
    write(&accounts, &accounts_text("\"*\""));
    let reload = Arc::new(AtomicBool::new(false));
    let audit = Arc::new(AuditLog::open(&dir.path().join("audit.log")).unwrap());
    let snapshot = dir.path().join("books.snap");
    let books = books(&snapshot);
    let security = WebSecurity {
        tls: Some(server_config(&files.cert, &files.key).expect("a good certificate")),
        accounts: Some(AccountsConfig {
            table: Arc::new(AccountTable::load(&accounts).unwrap()),
            source: AccountsSource {
                path: accounts.clone(),
                reload_interval: None,
                reload_requested: Arc::clone(&reload),
            },
            failure_delay: DELAY,
        }),
        session_length,
        audit: Some(Arc::clone(&audit)),
    };
    let state = WebState {
        health: Arc::new(Health::new()),
        snapshot: SnapshotReader::open(&snapshot).expect("reader"),
        hub: None,
    };
    let limits = WebLimits {
        sweep_every: Duration::from_millis(50),
        ..WebLimits::default()
    };
    let server = WebServer::start_secure("127.0.0.1:0".parse().unwrap(), state, limits, security)
        .expect("the view starts");
    View {
        server: Some(server),
        client,
        dir,
        accounts,
        reload,
        audit: Some(audit),
        _books: books,
    }
}

impl View {
    fn addr(&self) -> SocketAddr {
        self.server.as_ref().unwrap().local_addr()
    }

    fn counts(&self) -> WebCounts {
        self.server.as_ref().unwrap().counters().load()
    }

    fn counts_when(&self, done: impl Fn(&WebCounts) -> bool) -> WebCounts {
        assert!(
            poll_until(Duration::from_secs(10), || done(&self.counts())),
            "counts never got there: {:?}",
            self.counts()
        );
        self.counts()
    }

    fn tls(&self) -> Tls {
        let socket = TcpStream::connect(self.addr()).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let conn =
            ClientConnection::new(Arc::clone(&self.client), server_name("localhost").unwrap())
                .unwrap();
        StreamOwned::new(conn, socket)
    }

    /// Sends `request` (a whole request, head and body) over HTTPS; the answer.
    fn https(&self, request: &str) -> Answer {
        let mut tls = self.tls();
        tls.write_all(request.as_bytes()).unwrap();
        let mut answer = Vec::new();
        tls.read_to_end(&mut answer)
            .expect("a whole answer, then close_notify");
        let answer = String::from_utf8(answer).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").expect("a head");
        Answer {
            status: head[9..12].parse().unwrap(),
            head: head.to_owned(),
            body: body.to_owned(),
        }
    }

    fn get(&self, path: &str, cookie: Option<&str>) -> Answer {
        let cookie = cookie.map_or(String::new(), |c| {
            format!("Cookie: ticklane_session={c}\r\n")
        });
        self.https(&format!(
            "GET {path} HTTP/1.1\r\nHost: localhost\r\n{cookie}\r\n"
        ))
    }

    fn login(&self, form: &str) -> Answer {
        self.https(&format!(
            "POST /login?symbols=AAAA HTTP/1.1\r\nHost: localhost\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{form}",
            form.len()
        ))
    }

    /// The socket with this cookie and `Origin`; the refusal's status if refused.
    fn socket(&self, cookie: Option<&str>, origin: Option<&str>) -> Result<Socket, u16> {
        let addr = self.addr();
        let mut request = format!("wss://localhost:{}/ws", addr.port())
            .into_client_request()
            .unwrap();
        let headers = request.headers_mut();
        if let Some(cookie) = cookie {
            let value = format!("ticklane_session={cookie}").parse().unwrap();
            headers.insert("Cookie", value);
        }
        if let Some(origin) = origin {
            headers.insert("Origin", origin.parse().unwrap());
        }
        match tungstenite::client::client(request, self.tls()) {
            Ok((ws, _)) => Ok(ws),
            Err(tungstenite::HandshakeError::Failure(tungstenite::Error::Http(r))) => {
                Err(r.status().as_u16())
            }
            Err(e) => panic!("the socket's handshake failed: {e}"),
        }
    }

    fn reload_with(&self, text: &str) {
        write(&self.accounts, text);
        self.reload.store(true, Ordering::Release);
    }

    /// Stops the server and the audit writer; the audit file's lines.
    fn stop(mut self) -> Vec<Value> {
        self.server.take().unwrap().stop();
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

/// The next message that is not `health`.
fn next(ws: &mut Socket) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        assert!(Instant::now() < deadline, "no message but health");
        let m = ws.read().expect("a message");
        if let Message::Close(frame) = &m {
            return serde_json::json!({"type": "close", "code": frame.as_ref().map(|f| u16::from(f.code))});
        }
        let v: Value = serde_json::from_str(m.to_text().expect("text")).expect("json");
        if v["type"] != "health" {
            return v;
        }
    }
}

fn subscribe(ws: &mut Socket, symbols: &[&str]) {
    let text = serde_json::json!({ "subscribe": symbols }).to_string();
    ws.send(Message::text(text)).unwrap();
}

fn lines_with<'a>(audit: &'a [Value], event: &str) -> Vec<&'a Value> {
    audit.iter().filter(|l| l["event"] == event).collect()
}

#[test]
fn without_a_session_only_the_login_page_is_served_and_a_forged_cookie_is_refused() {
    let view = view(Duration::from_secs(600));
    let page = view.get("/", None);
    assert_eq!(page.status, 200);
    assert!(page.body.contains("action=\"/login\""), "{}", page.body);
    assert!(!page.body.contains("id=\"tops\""), "the books' page leaked");
    assert_eq!(view.get("/session", None).status, 403);
    assert_eq!(view.socket(None, None).err(), Some(403));
    let forged = "ab".repeat(32);
    assert_eq!(view.socket(Some(&forged), None).err(), Some(403));
    assert_eq!(view.get("/session", Some(&forged)).status, 403);
    assert_eq!(view.socket(Some("not-hex"), None).err(), Some(403));
    // A client that does not speak TLS gets no answer at all, and is counted.
    let mut plain = TcpStream::connect(view.addr()).unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    plain
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    assert!(!answer.starts_with(b"HTTP/"), "plain HTTP was answered");
    let counts = view.counts_when(|c| c.tls_failed >= 1);
    assert_eq!((counts.no_session, counts.unknown_session), (2, 3));
    assert_eq!(counts.sockets, 0);
    assert!(counts.tls_established >= 6);
    view.stop();
}

#[test]
fn failed_logins_are_refused_after_the_same_delay_counted_and_audited() {
    let view = view(Duration::from_secs(600));
    for form in [
        "account=alice&password=wrong",
        "account=mallory&password=alice-secret",
        "account=alice",
        "account=a%20very%20long%20account%20name&password=x",
    ] {
        let started = Instant::now();
        let answer = view.login(form);
        assert_eq!(answer.status, 403, "{form}");
        assert!(started.elapsed() >= DELAY, "{form} answered early");
        assert!(answer.body.contains("Login failed"), "{}", answer.body);
        assert_eq!(answer.cookie(), None);
    }
    assert_eq!(view.counts().logins_not_authorised, 4);
    assert_eq!(view.counts().logins_accepted, 0);
    let audit = view.stop();
    let refused = lines_with(&audit, "login");
    assert_eq!(refused.len(), 4, "{audit:?}");
    assert!(refused
        .iter()
        .all(|l| l["result"] == "refused" && l["via"] == "web"));
    assert!(refused.iter().any(|l| l["account"] == "mallory"));
}

#[test]
fn an_entitled_login_gets_a_secure_cookie_and_only_its_books_until_it_logs_out() {
    let view = view(Duration::from_secs(600));
    let login = view.login("account=alice&password=alice-secret");
    assert_eq!(login.status, 303, "{}", login.head);
    assert!(
        login.head.contains("Location: /?symbols=AAAA\r\n"),
        "{}",
        login.head
    );
    for attribute in [
        "HttpOnly",
        "Secure",
        "SameSite=Strict",
        "Max-Age=600",
        "Path=/",
    ] {
        assert!(
            login.head.contains(attribute),
            "no {attribute}: {}",
            login.head
        );
    }
    let cookie = login.cookie().expect("a session cookie");
    assert_eq!(cookie.len(), 64);
    let page = view.get("/", Some(&cookie));
    assert!(page.body.contains("id=\"tops\"") && page.body.contains("action=\"/logout\""));
    assert_eq!(view.get("/session", Some(&cookie)).status, 204);
    // Another site's page cannot open the socket in alice's name.
    let evil = view.socket(Some(&cookie), Some("https://evil.example"));
    assert_eq!(evil.err(), Some(403));
    let origin = format!("https://localhost:{}", view.addr().port());
    let mut ws = view
        .socket(Some(&cookie), Some(&origin))
        .expect("the socket");
    subscribe(&mut ws, &["AAAA", "BBBB"]);
    let refused = next(&mut ws);
    assert_eq!(refused["type"], "refused", "{refused}");
    assert_eq!(refused["symbols"], serde_json::json!(["BBBB"]));
    assert_eq!(refused["reason"], "not entitled");
    let book = next(&mut ws);
    assert_eq!(book["symbol"], "AAAA", "{book}");
    // Top of book only: one of the two bid levels.
    assert_eq!(
        book["bids"],
        serde_json::json!([{"price": 100_0000, "qty": 100, "orders": 1}])
    );
    // Every book: the ones alice may see, no other.
    subscribe(&mut ws, &[]);
    assert_eq!(next(&mut ws)["symbol"], "AAAA");
    // One session at a time.
    let second = view.login("account=alice&password=alice-secret");
    assert_eq!(second.status, 403);
    assert!(second.body.contains("sessions are all in use"));
    // Logging out ends the session and its socket at once.
    let logout = view.https(&format!(
        "POST /logout HTTP/1.1\r\nHost: localhost\r\nCookie: ticklane_session={cookie}\r\n\
         Content-Length: 0\r\n\r\n"
    ));
    assert_eq!(logout.status, 303);
    assert!(logout.head.contains("Max-Age=0"));
    assert_eq!(next(&mut ws)["code"], 4001);
    assert_eq!(view.get("/session", Some(&cookie)).status, 403);
    assert_eq!(view.socket(Some(&cookie), None).err(), Some(403));
    let counts = view.counts();
    assert_eq!(counts.logins_accepted, 1);
    assert_eq!(counts.logins_session_limit, 1);
    assert_eq!(counts.cross_origin, 1);
    assert_eq!(counts.entitlement_refused, 1);
    assert_eq!(counts.logouts, 1);
    let audit = view.stop();
    let logins = lines_with(&audit, "login");
    assert_eq!(logins[0]["result"], "accepted");
    assert_eq!(
        logins[1]["reason"],
        "the account's concurrent sessions are all in use"
    );
    let entitlement = lines_with(&audit, "entitlement");
    assert_eq!(entitlement.len(), 1);
    assert_eq!(entitlement[0]["symbol"], "BBBB");
    let logout = lines_with(&audit, "logout");
    assert_eq!(logout[0]["reason"], "client logged out");
    assert!(logout[0]["session_ms"].as_u64().is_some());
}

#[test]
fn a_reload_withdraws_symbols_at_once_and_an_account_removed_loses_its_session() {
    let view = view(Duration::from_secs(600));
    let cookie = view
        .login("account=bob&password=bob-secret")
        .cookie()
        .expect("bob logs in");
    let mut ws = view.socket(Some(&cookie), None).expect("the socket");
    // Every book, for an account limited to one: it must name its book.
    subscribe(&mut ws, &[]);
    let refused = next(&mut ws);
    assert_eq!(refused["reason"], "too many subscriptions", "{refused}");
    assert_eq!(refused["max_subscriptions"], 1);
    subscribe(&mut ws, &["AAAA", "BBBB"]);
    assert_eq!(next(&mut ws)["symbols"], serde_json::json!(["BBBB"]));
    let book = next(&mut ws);
    assert_eq!(book["symbol"], "AAAA");
    assert_eq!(book["bids"].as_array().map(Vec::len), Some(2), "full depth");
    view.reload_with(&accounts_text("\"BBBB\""));
    let withdrawn = next(&mut ws);
    assert_eq!(withdrawn["reason"], "entitlement withdrawn", "{withdrawn}");
    assert_eq!(withdrawn["symbols"], serde_json::json!(["AAAA"]));
    // Alice alone now: bob's session ends, and its socket with it.
    let alice_only = accounts_text("\"BBBB\"");
    let alice_only = &alice_only[..alice_only.find("\n\n[[account]]").unwrap() + 1];
    view.reload_with(alice_only);
    assert_eq!(next(&mut ws)["code"], 4001);
    assert_eq!(view.get("/session", Some(&cookie)).status, 403);
    let counts = view.counts();
    assert_eq!(counts.sessions_withdrawn, 1);
    assert_eq!(counts.sessions, 0);
    let audit = view.stop();
    assert!(audit.iter().any(|l| l["event"] == "entitlement"
        && l["result"] == "withdrawn"
        && l["symbol"] == "AAAA"));
    assert!(audit
        .iter()
        .any(|l| l["event"] == "logout" && l["reason"] == "entitlement withdrawn"));
    assert_eq!(lines_with(&audit, "accounts").len(), 2);
}

#[test]
fn a_session_ends_at_its_length() {
    let view = view(Duration::from_secs(1));
    let login = view.login("account=alice&password=alice-secret");
    assert!(login.head.contains("Max-Age=1"));
    let cookie = login.cookie().expect("alice logs in");
    assert_eq!(view.get("/session", Some(&cookie)).status, 204);
    view.counts_when(|c| c.sessions_expired == 1);
    assert_eq!(view.get("/session", Some(&cookie)).status, 403);
    assert_eq!(view.counts().sessions, 0);
    let audit = view.stop();
    let logout = lines_with(&audit, "logout");
    assert_eq!(logout.len(), 1);
    assert_eq!(logout[0]["reason"], "session expired");
    assert!(logout[0]["session_ms"].as_u64() >= Some(1000));
}
