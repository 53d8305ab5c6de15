//! The client's reconnect policy against real sockets: exponential backoff with full jitter
//! and a floor, so that a server closing every connection at once never gets an immediate
//! reconnect loop; the server's retry-after honoured, a longer one than the cap reported as
//! maintenance; a reconnect after a graceful restart resubscribes and gets a fresh image; and
//! a symbol not there yet is asked for again until it is.
//! Pauses are recorded instead of slept, so nothing here waits on the wall clock.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::ops::ControlFlow;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use ticklane_engine::serve::client::{run_subscriber, ClientConfig, ClientError, SubscriberEvent};
use ticklane_engine::serve::protocol::{encode_server, Reason, ServerMessage};
use ticklane_engine::serve::{start_server, AdmitAll, ServeConfig};
use ticklane_engine::views::write_subscriber_event;
use ticklane_feed::resilience::{Backoff, BackoffConfig};

use crate::util::serve::SharedModel;

fn config(addr: SocketAddr) -> ClientConfig {
    ClientConfig {
        backoff: BackoffConfig {
            base: Duration::from_millis(100),
            cap: Duration::from_secs(30),
        },
        min_delay: Duration::from_millis(50),
        timeout: Duration::from_secs(5),
        ..ClientConfig::new(addr, vec!["AAPL".into()])
    }
}

/// A server that accepts `n` connections and answers each with `reply` (maybe nothing),
/// then closes it at once.
fn closing_server(n: usize, reply: Vec<u8>) -> (SocketAddr, std::thread::JoinHandle<usize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let thread = std::thread::spawn(move || {
        for _ in 0..n {
            let (mut s, _) = listener.accept().unwrap();
            if !reply.is_empty() {
                let mut login = [0u8; 21];
                let _ = s.read_exact(&mut login);
                let _ = s.write_all(&reply);
            }
        }
        n
    });
    (addr, thread)
}

#[test]
fn a_server_that_closes_at_once_never_gets_an_immediate_reconnect_loop() {
    let (addr, server) = closing_server(6, Vec::new());
    let config = ClientConfig {
        max_attempts: Some(6),
        ..config(addr)
    };
    let mut pauses = Vec::new();
    let result = run_subscriber(
        &config,
        &AtomicBool::new(false),
        &mut |d| pauses.push(d),
        &mut |_| ControlFlow::Continue(()),
    );
    assert!(
        matches!(result, Err(ClientError::GaveUp { attempts: 6 })),
        "{result:?}"
    );
    assert_eq!(server.join().unwrap(), 6);
    assert_eq!(pauses.len(), 5);
    let backoff = Backoff::new(config.backoff);
    for (n, d) in pauses.iter().enumerate() {
        assert!(
            *d >= config.min_delay,
            "pause {n} is {d:?}: below the floor"
        );
        assert!(
            *d <= backoff.ceiling(n as u32).max(config.min_delay),
            "pause {n} is {d:?}: above its ceiling"
        );
    }
    let total: Duration = pauses.iter().sum();
    assert!(total >= 5 * config.min_delay);
}

fn reply(message: ServerMessage<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    encode_server(&message, &mut out);
    out
}

#[test]
fn the_servers_retry_after_is_honoured_and_a_long_one_is_maintenance() {
    let busy = reply(ServerMessage::LoginRejected {
        reason: Reason::Busy,
        retry_after_ms: 300,
    });
    let (addr, server) = closing_server(2, busy);
    let twice = ClientConfig {
        max_attempts: Some(2),
        ..config(addr)
    };
    let mut pauses = Vec::new();
    let result = run_subscriber(
        &twice,
        &AtomicBool::new(false),
        &mut |d| pauses.push(d),
        &mut |_| ControlFlow::Continue(()),
    );
    assert!(matches!(result, Err(ClientError::GaveUp { attempts: 2 })));
    assert_eq!(pauses, [Duration::from_millis(300)]);
    server.join().unwrap();

    let maintenance = reply(ServerMessage::LoginRejected {
        reason: Reason::Busy,
        retry_after_ms: 60_000,
    });
    let (addr, server) = closing_server(1, maintenance);
    let mut pauses = Vec::new();
    let result = run_subscriber(
        &config(addr),
        &AtomicBool::new(false),
        &mut |d| pauses.push(d),
        &mut |_| ControlFlow::Continue(()),
    );
    match result {
        Err(ClientError::Maintenance { requested, cap, .. }) => {
            assert_eq!(requested, Duration::from_secs(60));
            assert_eq!(cap, Duration::from_secs(30));
        }
        other => panic!("{other:?}"),
    }
    assert!(pauses.is_empty(), "never slept on");
    server.join().unwrap();
}

#[test]
fn after_a_graceful_restart_the_client_resubscribes_and_gets_a_fresh_image() {
    let model = SharedModel::default();
    model.add_symbol(b"AAPL    ", 1);
    let start = |addr: SocketAddr| {
        start_server(
            ServeConfig::new(addr),
            None,
            Box::new(model.clone()),
            Box::new(AdmitAll),
        )
        .unwrap()
    };
    let first = start("127.0.0.1:0".parse().unwrap());
    let addr = first.local_addr();
    let mut first = Some(first);
    let mut second = None;
    let mut images = 0;
    let mut told = Vec::new();
    let mut pauses = Vec::new();
    let mut connected = Vec::new();
    let result = run_subscriber(
        &config(addr),
        &AtomicBool::new(false),
        &mut |d| {
            pauses.push(d);
            // The restarted server comes up on the same address while the client waits.
            second = Some(start(addr));
        },
        &mut |event| {
            match event {
                SubscriberEvent::Connected { .. } => {
                    let mut line = Vec::new();
                    write_subscriber_event(&mut line, &event).unwrap();
                    connected.push(String::from_utf8(line).unwrap());
                }
                SubscriberEvent::Message(ServerMessage::BookImage { header, .. }) => {
                    assert_eq!(&header.symbol, b"AAPL    ");
                    images += 1;
                    if images == 2 {
                        return ControlFlow::Break(());
                    }
                    // Restart: the first server stops and tells the client to come back.
                    first.take().unwrap().stop().unwrap();
                }
                SubscriberEvent::Reconnecting {
                    why,
                    delay,
                    server_asked,
                } => told.push((why, delay, server_asked)),
                _ => {}
            }
            ControlFlow::Continue(())
        },
    );
    result.unwrap();
    assert_eq!(images, 2, "an image on each connection");
    assert_eq!(told.len(), 1);
    let (why, delay, server_asked) = told[0];
    assert!(server_asked);
    assert!(matches!(
        why,
        Some(ticklane_engine::serve::client::Ended::ComeBackLater(Reason::Restarting, d)) if d == delay
    ));
    assert!((2000..=5000).contains(&delay.as_millis()));
    assert_eq!(pauses, [delay]);
    // Neither connection came after a failed attempt: the first session ended, cleanly.
    assert_eq!(connected, ["connected\n", "connected\n"]);
    drop(second);
}

#[test]
fn a_symbol_the_server_does_not_know_yet_is_asked_for_again_until_it_exists() {
    // A client started before the session's stock directory: told `N` once, it asks again
    // each second, and gets the image once the symbol exists.
    let model = SharedModel::default();
    let server = start_server(
        ServeConfig {
            heartbeat_ms: 200,
            ..ServeConfig::new("127.0.0.1:0".parse().unwrap())
        },
        None,
        Box::new(model.clone()),
        Box::new(AdmitAll),
    )
    .unwrap();
    let mut unknown = 0;
    let mut imaged = false;
    // Bounded: without the asking again the client would wait for ever.
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let stopper = std::sync::Arc::clone(&stop);
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(10));
        stopper.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let result = run_subscriber(
        &config(server.local_addr()),
        &stop,
        &mut |_| panic!("no reconnect"),
        &mut |event| match event {
            SubscriberEvent::Message(ServerMessage::UnknownSymbol { symbol, .. }) => {
                assert_eq!(&symbol, b"AAPL    ");
                unknown += 1;
                model.add_symbol(b"AAPL    ", 1);
                ControlFlow::Continue(())
            }
            SubscriberEvent::Message(ServerMessage::BookImage { header, .. }) => {
                assert_eq!(&header.symbol, b"AAPL    ");
                imaged = true;
                ControlFlow::Break(())
            }
            _ => ControlFlow::Continue(()),
        },
    );
    result.unwrap();
    assert!(imaged, "the image came once the symbol existed");
    assert_eq!(unknown, 1, "the caller hears of a missing symbol once");
    drop(server);
}
