//! Behaviour of the subscriber queues: a slow consumer is cut loose, with its reason,
//! while a fast one keeps every event; a consumer whose queue stands gets the latest
//! state, newest first, as refreshes; trades are never conflated.

use ticklane_engine::book::BookConfig;
use ticklane_engine::book::{Applier, NoBbo};
use ticklane_engine::overload::{
    CodelConfig, CutReason, Event, EventBody, EventDeriver, OverloadConfig, RecvError,
    SheddingPublisher, SubscriberConfig, SubscriberHub, Subscription,
};
use ticklane_engine::tail::NoSink;

use crate::util::overload::{add, directory, execute, Driver};

/// Small queues; the consumers' clocks out of the way (a test thread descheduled for a
/// millisecond must not look like a slow consumer: these tests are about queue room).
fn small_queues() -> SubscriberConfig {
    SubscriberConfig {
        queue_events: 64,
        reserved_events: 16,
        codel: CodelConfig {
            target_ns: u64::MAX / 4,
            interval_ns: u64::MAX / 4,
        },
        deadline_ns: u64::MAX,
        ..SubscriberConfig::default()
    }
}

fn drain(sub: &mut Subscription, into: &mut Vec<Event>) -> Result<(), RecvError> {
    loop {
        match sub.try_recv() {
            Ok(e) => into.push(e),
            Err(RecvError::Empty) => return Ok(()),
            Err(e) => return Err(e),
        }
    }
}

/// A day: names, then adds and executions over four instruments.
fn messages() -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = (1..=4).map(|l| directory(l, &format!("S{l}"))).collect();
    for i in 0..400u64 {
        let locate = (i % 4) as u16 + 1;
        out.push(add(
            locate,
            i + 1,
            if i % 2 == 0 { b'B' } else { b'S' },
            100,
            10_000 + i as u32,
        ));
        if i % 3 == 0 {
            out.push(execute(locate, i + 1, 10));
        }
    }
    out
}

/// Every event the day produces, derived without any queue in between.
fn expected(messages: &[Vec<u8>]) -> Vec<Event> {
    let mut r: Applier<NoBbo> = Applier::new(
        BookConfig {
            max_orders: 1 << 16,
            max_books: 64,
            levels_per_side: 256,
        },
        None,
    )
    .expect("books");
    let mut d = EventDeriver::new();
    let mut out = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let applied = r
            .step_with(i as u64 + 1, m, |b, m| d.before_apply(b, m))
            .expect("valid");
        d.after_apply(r.books(), &applied, i as u64 + 1, |e| out.push(e));
    }
    out
}

#[test]
fn a_slow_consumer_is_cut_loose_while_a_fast_one_keeps_every_event() {
    let (hub, fanout) = SubscriberHub::new(small_queues());
    let mut fast = hub.subscribe();
    let mut slow = hub.subscribe();
    let mut d = Driver::new(
        SheddingPublisher::new(NoSink, OverloadConfig::default()).with_subscribers(fanout),
    );
    let day = messages();
    let mut got = Vec::new();
    let mut t = 1_000;
    for m in &day {
        d.step(m, t, 0);
        d.batch_end(t);
        drain(&mut fast, &mut got).expect("the fast consumer stays");
        t += 1_000;
    }
    d.finish();
    assert_eq!(drain(&mut fast, &mut got), Err(RecvError::Closed));
    let want = expected(&day);
    let strip = |e: &Event| Event { queued_ns: 0, ..*e };
    assert_eq!(
        got.iter().map(strip).collect::<Vec<_>>(),
        want,
        "every event, in order"
    );
    // The slow one reads what was queued before the cut, then learns why.
    let mut slow_got = Vec::new();
    let end = drain(&mut slow, &mut slow_got);
    assert!(
        matches!(
            end,
            Err(RecvError::CutLoose(CutReason::TradeUndeliverable { .. }))
        ),
        "{end:?}"
    );
    assert!(slow_got.len() <= 64);
    assert!(slow_got
        .iter()
        .any(|e| matches!(e.body, EventBody::Trade { .. })));
    assert_eq!(d.publisher.counters().consumers_cut, 1);
    // It may subscribe again: the engine has closed, so it is told so.
    assert_eq!(hub.subscribe().try_recv(), Err(RecvError::Closed));
}

#[test]
fn a_standing_consumer_gets_the_latest_state_as_refreshes_and_every_trade() {
    let (hub, fanout) = SubscriberHub::new(SubscriberConfig {
        queue_events: 256,
        reserved_events: 128,
        ..small_queues()
    });
    let mut sub = hub.subscribe();
    let mut d = Driver::new(
        SheddingPublisher::new(NoSink, OverloadConfig::default()).with_subscribers(fanout),
    );
    let day = messages();
    let mut got = Vec::new();
    // The consumer reads only every 100 messages: its queue fills past the reserve and
    // state events are conflated; trades still go through.
    for (i, m) in day.iter().enumerate() {
        d.step(m, 1_000 + i as u64, 0);
        d.batch_end(1_000 + i as u64);
        if i % 100 == 99 {
            drain(&mut sub, &mut got).expect("still subscribed");
        }
    }
    d.finish();
    assert_eq!(drain(&mut sub, &mut got), Err(RecvError::Closed));
    let want = expected(&day);
    let trades = |events: &[Event]| {
        events
            .iter()
            .filter(|e| matches!(e.body, EventBody::Trade { .. }))
            .map(|e| e.feed_seq)
            .collect::<Vec<_>>()
    };
    assert_eq!(trades(&got), trades(&want), "every trade, in order");
    let c = d.publisher.counters();
    assert!(c.events_conflated > 0, "{c:?}");
    assert!(got.iter().any(|e| matches!(e.body, EventBody::Refresh(_))));
    // Conflation keeps exactly the latest state: the last thing the consumer learned of
    // each instrument's top of book is the book's final top.
    for locate in 1..=4u16 {
        let locate = ticklane_feed::itch::Locate(locate);
        let last_top = got.iter().rev().find_map(|e| match e.body {
            EventBody::Quote(top) if e.locate == locate => Some(top),
            EventBody::Refresh(r) if e.locate == locate => Some(r.top()),
            _ => None,
        });
        assert_eq!(last_top, Some(d.applier.books().top_of_book(locate)));
    }
}

#[test]
fn tail_prints_the_update_stream_of_a_capture_for_the_symbols_asked() {
    use ticklane_engine::pipeline::{Pace, PipelineConfig};
    use ticklane_engine::tail::{tail_capture, SymbolFilter};
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("day.itch50");
    let config = ticklane_sim::GenConfig {
        messages: 20_000,
        seed: 3,
        stocks: 4,
        hard_cases: false,
        crossing: false,
    };
    ticklane_sim::write_itch50(config, &mut std::fs::File::create(&path).expect("file"))
        .expect("write");
    let mut out = Vec::new();
    let all = tail_capture(
        &path,
        Pace::Max,
        PipelineConfig::default(),
        &SymbolFilter::default(),
        &mut out,
    )
    .expect("tail");
    assert_eq!(all.messages, 20_000);
    let text = String::from_utf8(out).expect("utf-8");
    assert_eq!(text.lines().count() as u64, all.printed);
    assert!(text.contains(" QUOTE ") && text.contains(" LEVEL ") && text.contains(" TRADE "));
    let first = text.lines().next().expect("a line");
    let symbol = first.split_whitespace().nth(2).expect("symbol").to_string();
    let mut only = Vec::new();
    let one = tail_capture(
        &path,
        Pace::Max,
        PipelineConfig::default(),
        &SymbolFilter::parse(&symbol),
        &mut only,
    )
    .expect("tail");
    let only = String::from_utf8(only).expect("utf-8");
    // At Pace::Max the printing consumer is conflated or cut loose depending on how the
    // two threads are scheduled, so line counts of two runs do not compare; what the filter
    // must do is print the asked symbol and nothing else, where the unfiltered stream had more.
    assert!(one.printed > 0);
    assert!(
        text.lines()
            .any(|l| l.split_whitespace().nth(2) != Some(symbol.as_str())),
        "the unfiltered stream has other symbols"
    );
    assert!(only
        .lines()
        .all(|l| l.split_whitespace().nth(2) == Some(symbol.as_str())));
}
