//! The subscriber server allocates nothing per request once warm: under a steady stream of
//! subscribe (each answered by a 20-level book image, encoded in the per-request arena),
//! unsubscribe and symbol-list requests, a counting global allocator sees no allocation in
//! the whole process (but libtest's main thread, which only reports results). The client side here writes from a reused buffer and decodes in
//! place, so that its own work allocates nothing either; the test proves its counter counts.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use ticklane_engine::book::LevelView;
use ticklane_engine::serve::protocol::{
    decode_server, encode_client, ClientMessage, Secret, ServerMessage, MAX_FRAME,
};
use ticklane_engine::serve::{start_server, AdmitAll, BookImage, ImageSource, ServeConfig};
use ticklane_feed::itch::Price;
use ticklane_testkit::counting_alloc::{
    close_window, first_window_allocation, open_window, take_window_allocations,
    window_allocations, EveryThread,
};

/// Fixed books for a few symbols: the image source allocates nothing per image.
struct FixedBooks {
    symbols: [[u8; 8]; 3],
    levels: Vec<LevelView>,
}

impl ImageSource for FixedBooks {
    fn image(&mut self, symbol: &[u8; 8], view: &mut dyn FnMut(&BookImage<'_>)) -> bool {
        let Some(locate) = self.symbols.iter().position(|s| s == symbol) else {
            return false;
        };
        view(&BookImage {
            symbol: *symbol,
            locate: locate as u16 + 1,
            flags: 0,
            trading_state: b'T',
            feed_seq: 1,
            bids: &self.levels[..20],
            asks: &self.levels[20..],
        });
        true
    }

    fn symbols(&mut self, each: &mut dyn FnMut(&[u8; 8])) {
        for s in &self.symbols {
            each(s);
        }
    }
}

/// The client's side, allocation-free once built.
struct RawClient {
    stream: TcpStream,
    out: Vec<u8>,
    buf: Vec<u8>,
    len: usize,
}

impl RawClient {
    fn send(&mut self, message: &ClientMessage) {
        self.out.clear();
        encode_client(message, &mut self.out);
        self.stream.write_all(&self.out).unwrap();
    }

    /// Reads until a message `want` accepts; the number of messages read.
    fn until(&mut self, want: impl Fn(&ServerMessage<'_>) -> bool) -> u32 {
        let mut read = 0;
        loop {
            let mut at = 0;
            let mut found = false;
            while let Some((m, used)) = decode_server(&self.buf[at..self.len]).unwrap() {
                at += used;
                read += 1;
                if want(&m) {
                    found = true;
                    break;
                }
            }
            self.buf.copy_within(at..self.len, 0);
            self.len -= at;
            if found {
                return read;
            }
            let n = self.stream.read(&mut self.buf[self.len..]).unwrap();
            assert!(n > 0, "server closed");
            self.len += n;
        }
    }
}

const WARM_UP: u32 = 200;
const MEASURED: u32 = 5_000;

pub fn serving_requests_allocates_nothing_once_warm() {
    let _turn = EveryThread::turn();
    let levels = (0..40)
        .map(|i| LevelView {
            price: Price(100_0000 + i * 100),
            qty: 100,
            orders: 1,
        })
        .collect();
    let images = FixedBooks {
        symbols: [*b"AAPL    ", *b"MSFT    ", *b"QQQ     "],
        levels,
    };
    let server = start_server(
        ServeConfig::new("127.0.0.1:0".parse().unwrap()),
        None,
        Box::new(images),
        Box::new(AdmitAll),
    )
    .unwrap();
    let stream = TcpStream::connect(server.local_addr()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.set_nodelay(true).unwrap();
    let mut client = RawClient {
        stream,
        out: Vec::with_capacity(64),
        buf: vec![0; 2 * MAX_FRAME],
        len: 0,
    };
    client.send(&ClientMessage::Login {
        version: 1,
        account: *b"alloc           ",
        secret: Secret::NONE,
    });
    client.until(|m| matches!(m, ServerMessage::LoginAccepted { .. }));
    let symbols = [*b"AAPL    ", *b"MSFT    ", *b"QQQ     "];
    let mut cycle = |i: u32| {
        let symbol = symbols[(i % 3) as usize];
        client.send(&ClientMessage::Subscribe {
            request_id: i,
            budget_ms: 10_000,
            symbol,
        });
        client.until(|m| {
            matches!(m, ServerMessage::BookImage { header, levels }
                if header.request_id == i && levels.len() == 40 * 16)
        });
        client.send(&ClientMessage::Unsubscribe { symbol });
        if i.is_multiple_of(10) {
            client.send(&ClientMessage::SymbolList {
                request_id: i,
                budget_ms: 10_000,
            });
            client.until(
                |m| matches!(m, ServerMessage::SymbolList { request_id, .. } if *request_id == i),
            );
        }
    };
    for i in 1..=WARM_UP {
        cycle(i);
    }
    // The counter counts: a probe allocation inside the window is seen.
    open_window();
    drop(std::hint::black_box(Vec::<u8>::with_capacity(8)));
    let probe = take_window_allocations();
    for i in WARM_UP + 1..=WARM_UP + MEASURED {
        cycle(i);
    }
    close_window();
    let allocations = window_allocations();
    assert_eq!(probe, 1, "the counting allocator counts");
    assert_eq!(
        allocations,
        0,
        "{allocations} allocations over {MEASURED} subscribe/unsubscribe cycles; {}",
        first_window_allocation()
    );
    let counts = server.stop().unwrap();
    assert_eq!(
        counts.requests,
        u64::from(WARM_UP + MEASURED) + u64::from((WARM_UP + MEASURED) / 10)
    );
}
