//! Arbitrary bytes into every protocol machine: random datagrams and mutated valid packets
//! into the MoldUDP64 sequencer, random byte streams split at random points into the
//! SoupBinTCP client and server sessions. None may panic, and what each holds stays bounded:
//! the sequencer's store and gap table within their configured capacity, its deliveries and
//! declared losses tiling the sequence space without overlap, and the SoupBinTCP sessions
//! allocating nothing at all after construction, whatever length prefixes they are sent.
//!
//! Packets and frames are laid out here by hand from the MoldUDP64 1.0 and SoupBinTCP 4.1
//! specifications, not with the crate's writers, so a shared encoding mistake cannot hide.

use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use ticklane_feed::moldudp64::{
    Delivered, GapRange, LossReason, MoldRecovery, Packet, RecoveryConfig, RecoverySink,
    RetransmitRequest,
};
use ticklane_feed::soupbintcp::{
    ClientConfig, Credentials, FrameError, ProtocolError, ServerConfig, SoupClient,
    SoupServerSession,
};
use ticklane_testkit::counting_alloc::thread_allocations;
use ticklane_testkit::moldudp64::header as mold_header;
use ticklane_testkit::soupbintcp::frame as soup_frame;

fn config(cases: u32, seed: u64) -> ProptestConfig {
    ProptestConfig {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------------------
// MoldUDP64
// ---------------------------------------------------------------------------------------

/// One past the highest sequence a raw, well-formed packet carries or announces, read
/// straight from its header: `seq + count` for data, `seq` for a heartbeat or end of session.
fn announced_next(bytes: &[u8]) -> u64 {
    let seq = u64::from_be_bytes(bytes[10..18].try_into().expect("header is 20 bytes"));
    let count = u16::from_be_bytes([bytes[18], bytes[19]]);
    match count {
        0 | 0xFFFF => seq,
        n => seq + u64::from(n),
    }
}

/// What a datagram is made of before it is laid out.
#[derive(Clone, Debug)]
enum Datagram {
    /// Random bytes, usually not a packet at all.
    Random(Vec<u8>),
    /// A well-formed packet of the session under test, possibly damaged afterwards.
    Packet {
        seq: SeqChoice,
        kind: u8,
        messages: Vec<Vec<u8>>,
        /// `Some((at, byte))` overwrites one byte; `Some` length cuts the datagram.
        flip: Option<(usize, u8)>,
        cut: Option<usize>,
    },
}

/// Sequence numbers near the stream's current position, or anywhere at all.
#[derive(Clone, Copy, Debug)]
enum SeqChoice {
    Near(u64),
    Any(u64),
    NearMax(u64),
}

fn datagram() -> impl Strategy<Value = Datagram> {
    let seq = prop_oneof![
        6 => (1u64..40).prop_map(SeqChoice::Near),
        1 => any::<u64>().prop_map(SeqChoice::Any),
        1 => (0u64..8).prop_map(SeqChoice::NearMax),
    ];
    let packet = (
        seq,
        0u8..10,
        prop::collection::vec(prop::collection::vec(any::<u8>(), 0..48), 1..5),
        prop::option::weighted(0.15, (0usize..200, any::<u8>())),
        prop::option::weighted(0.1, 0usize..200),
    )
        .prop_map(|(seq, kind, messages, flip, cut)| Datagram::Packet {
            seq,
            kind,
            messages,
            flip,
            cut,
        });
    prop_oneof![
        1 => prop::collection::vec(any::<u8>(), 0..120).prop_map(Datagram::Random),
        5 => packet,
    ]
}

const SESSION: [u8; 10] = *b"SESSION001";

/// Lays out a datagram; the second value says whether it is an undamaged packet of
/// [`SESSION`].
fn lay_out(d: &Datagram) -> (Vec<u8>, bool) {
    match d {
        Datagram::Random(bytes) => (bytes.clone(), false),
        Datagram::Packet {
            seq,
            kind,
            messages,
            flip,
            cut,
        } => {
            let seq = match *seq {
                SeqChoice::Near(s) | SeqChoice::Any(s) => s,
                SeqChoice::NearMax(back) => u64::MAX - back,
            };
            // Mostly data; sometimes a heartbeat or an end of session.
            let (count, blocks): (u16, &[Vec<u8>]) = match kind {
                0 => (0, &[]),
                1 => (0xFFFF, &[]),
                _ => (messages.len() as u16, messages),
            };
            let mut out = mold_header(&SESSION, seq, count);
            for m in blocks {
                out.extend_from_slice(&(m.len() as u16).to_be_bytes());
                out.extend_from_slice(m);
            }
            let mut damaged = false;
            if let Some((at, byte)) = *flip {
                if let Some(b) = out.get_mut(at) {
                    damaged |= *b != byte;
                    *b = byte;
                }
            }
            if let Some(len) = *cut {
                if len < out.len() {
                    out.truncate(len);
                    damaged = true;
                }
            }
            (out, !damaged)
        }
    }
}

/// A sink that checks what the sequencer promises its sink, from the outside: sequenced
/// messages and declared losses tile the sequence space, each picking up exactly where the
/// last left off.
#[derive(Default)]
struct CheckingSink {
    /// The sequence the next message or loss must start at, once one was seen.
    cursor: Option<u64>,
    delivered: u64,
    lost_messages: u64,
    requests: u64,
    /// A broken promise, kept to be reported by the property (a sink cannot fail).
    broken: Option<String>,
}

impl RecoverySink for CheckingSink {
    fn message(&mut self, m: Delivered<'_>) {
        self.delivered += 1;
        if let Some(seq) = m.seq {
            if let Some(c) = self.cursor {
                if seq != c && self.broken.is_none() {
                    self.broken = Some(format!("message {seq} delivered, {c} expected"));
                }
            }
            self.cursor = seq.checked_add(1);
        }
    }

    fn lost(&mut self, gap: GapRange, _: LossReason) {
        self.lost_messages += gap.last - gap.first + 1;
        if gap.first > gap.last && self.broken.is_none() {
            self.broken = Some(format!("empty loss {gap:?}"));
        }
        if let Some(c) = self.cursor {
            if gap.first != c && self.broken.is_none() {
                self.broken = Some(format!("loss {gap:?} declared, {c} expected next"));
            }
        }
        self.cursor = gap.last.checked_add(1);
    }

    fn request(&mut self, _: RetransmitRequest) {
        self.requests += 1;
    }
}

/// Feeds `datagrams` with the clock stepping by `steps` (ms), firing timers as it goes,
/// and checks the bounds after every step. `tile` says whether the sink's tiling check
/// applies: only when every sequenced packet names the one session under test.
fn run_mold(
    datagrams: &[Datagram],
    steps: &[u16],
    store_packets: usize,
    max_packet_len: usize,
    retransmission: bool,
    start_at_one: bool,
    end: bool,
) -> Result<(), TestCaseError> {
    let config = RecoveryConfig {
        store_packets,
        max_packet_len,
        retransmission,
        start_sequence: start_at_one.then_some(1),
        max_per_request: 3,
        ..RecoveryConfig::default()
    };
    let mut mold = MoldRecovery::new(config);
    let mut sink = CheckingSink::default();
    let mut now = Duration::ZERO;
    // One past the highest sequence any accepted packet of SESSION carried or announced;
    // start_sequence 1 makes 1 the floor.
    let mut highest_next: u64 = 1;
    let mut first_seen: Option<u64> = start_at_one.then_some(1);
    let mut tile = true;
    for (i, d) in datagrams.iter().enumerate() {
        let (bytes, intact) = lay_out(d);
        now += Duration::from_millis(u64::from(steps[i % steps.len()]));
        mold.poll_timers(now, &mut sink);
        if let Ok(packet) = Packet::parse(&bytes) {
            if intact {
                highest_next = highest_next.max(announced_next(&bytes));
                first_seen.get_or_insert(u64::from_be_bytes(
                    bytes[10..18].try_into().expect("20-byte header"),
                ));
            } else if packet.session().0 != SESSION || packet.sequence() == 0 {
                // A damaged header may name another session (or be unsequenced): the
                // sequencer then starts over, and the tiling is per session.
                tile = false;
            } else {
                highest_next = highest_next.max(packet.next_sequence());
                first_seen.get_or_insert(packet.sequence());
            }
            mold.on_packet(&packet, now, &mut sink);
        }
        check_mold(&mold, &sink, store_packets, retransmission, tile)?;
        if tile {
            if let Some(c) = sink.cursor {
                prop_assert!(
                    c <= highest_next,
                    "delivered or lost up to {c}, but nothing past {highest_next} was announced"
                );
            }
        }
    }
    // Let every timer run out, then end the input.
    for _ in 0..64 {
        match mold.next_deadline() {
            Some(at) => {
                now = now.max(at);
                mold.poll_timers(now, &mut sink);
            }
            None => break,
        }
    }
    if end {
        mold.end_of_input(&mut sink);
        prop_assert_eq!(
            mold.stored_packets(),
            0,
            "end of input leaves nothing stored"
        );
    }
    check_mold(&mold, &sink, store_packets, retransmission, tile)?;
    if tile {
        if let (Some(c), Some(first)) = (sink.cursor, first_seen) {
            // Everything from the first sequence to the cursor was delivered or lost, once.
            prop_assert_eq!(
                sink.delivered + sink.lost_messages,
                c - first.min(c),
                "deliveries and losses tile {}..{}",
                first,
                c
            );
        }
    }
    Ok(())
}

fn check_mold(
    mold: &MoldRecovery,
    sink: &CheckingSink,
    store_packets: usize,
    retransmission: bool,
    tile: bool,
) -> Result<(), TestCaseError> {
    let stats = mold.stats();
    prop_assert!(mold.stored_packets() <= store_packets);
    prop_assert!(stats.store_high_water <= store_packets);
    // One gap record per stored packet at most, and the deferred tail.
    prop_assert!(mold.open_gaps() <= store_packets + 1);
    prop_assert_eq!(stats.delivered, sink.delivered);
    prop_assert_eq!(stats.messages_lost, sink.lost_messages);
    prop_assert_eq!(stats.requests_sent, sink.requests);
    prop_assert!(mold.lost_ranges().ranges().len() as u64 <= stats.gaps_lost);
    if !retransmission {
        prop_assert_eq!(sink.requests, 0, "no request with retransmission off");
        prop_assert_eq!(
            mold.next_deadline(),
            None,
            "no timer with retransmission off"
        );
    }
    if tile {
        if let Some(why) = &sink.broken {
            return Err(TestCaseError::fail(why.clone()));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(400, 0x4d6f_6c64))]

    #[test]
    fn mold_datagrams_never_panic_and_stay_bounded(
        datagrams in prop::collection::vec(datagram(), 1..60),
        steps in prop::collection::vec(0u16..300, 1..8),
        store_packets in 1usize..12,
        max_packet_len in 20usize..160,
        retransmission in any::<bool>(),
        start_at_one in any::<bool>(),
        end in any::<bool>(),
    ) {
        run_mold(&datagrams, &steps, store_packets, max_packet_len, retransmission, start_at_one, end)?;
    }

    #[test]
    fn mold_random_datagrams_never_panic(
        datagrams in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..80), 1..40),
        // Sessions and counts drawn from a few values so random headers do parse.
        headers in prop::collection::vec((0u8..3, any::<u64>(), 0u16..4), 1..40),
        retransmission in any::<bool>(),
    ) {
        let config = RecoveryConfig { store_packets: 4, max_packet_len: 64, retransmission, ..RecoveryConfig::default() };
        let mut mold = MoldRecovery::new(config);
        let mut sink = CheckingSink::default();
        let mut now = Duration::ZERO;
        for (body, (name, seq, count)) in datagrams.iter().zip(headers.iter().cycle()) {
            let session = [[b' '; 10], [0; 10], SESSION][usize::from(*name)];
            // Either a header with a random body behind it, or the bytes alone.
            let mut bytes = if body.first().is_some_and(|b| b % 2 == 0) {
                mold_header(&session, *seq % 64, *count)
            } else {
                Vec::new()
            };
            bytes.extend_from_slice(body);
            now += Duration::from_millis(37);
            mold.poll_timers(now, &mut sink);
            if let Ok(packet) = Packet::parse(&bytes) {
                mold.on_packet(&packet, now, &mut sink);
            }
            check_mold(&mold, &sink, 4, retransmission, false)?;
        }
        mold.end_of_input(&mut sink);
        check_mold(&mold, &sink, 4, retransmission, false)?;
    }
}

// ---------------------------------------------------------------------------------------
// SoupBinTCP
// ---------------------------------------------------------------------------------------

/// A piece of a stream: a frame of a known type with a random payload, a login answer
/// whose fields are plausible, a bare length prefix (any value, up to 0xFFFF), or noise.
fn chunk(types: &'static [u8]) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => (prop::sample::select(types), prop::collection::vec(any::<u8>(), 0..60))
            .prop_map(|(t, p)| soup_frame(t, &p)),
        2 => prop::collection::vec(prop::sample::select(b" 0123456789ABCDEFSESION".to_vec()), 25..50)
            .prop_map(|p| soup_frame(b'A', &p)),
        2 => prop::collection::vec(prop::sample::select(b" 0123456789userpwdU".to_vec()), 40..56)
            .prop_map(|p| soup_frame(b'L', &p)),
        1 => (any::<u16>(), prop::collection::vec(any::<u8>(), 0..200))
            .prop_map(|(len, tail)| { let mut v = len.to_be_bytes().to_vec(); v.extend(tail); v }),
        1 => prop::collection::vec(any::<u8>(), 0..100),
    ]
}

const SERVER_TYPES: &[u8] = b"+AJSHZ";
const CLIENT_TYPES: &[u8] = b"+LURO";

/// Splits `stream` at the given points (taken modulo its length, sorted).
fn split<'a>(stream: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut at: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
    at.sort_unstable();
    let mut out = Vec::new();
    let mut from = 0;
    for c in at.into_iter().chain([stream.len()]) {
        out.push(&stream[from..c]);
        from = c;
    }
    out
}

fn creds() -> Credentials {
    Credentials::new(b"user", b"pwd").expect("short credentials")
}

proptest! {
    #![proptest_config(config(400, 0x536f_7570))]

    #[test]
    fn soup_client_takes_any_stream_without_allocating(
        chunks in prop::collection::vec(chunk(SERVER_TYPES), 0..30),
        cuts in prop::collection::vec(any::<usize>(), 0..20),
        max_frame_len in prop_oneof![Just(u16::MAX), 1u16..200],
        step_ms in 0u64..3000,
        drain in any::<bool>(),
    ) {
        let stream: Vec<u8> = chunks.concat();
        let mut cfg = ClientConfig::new(creds());
        cfg.max_frame_len = max_frame_len;
        cfg.outbox_len = 256;
        let mut client = SoupClient::new(cfg);
        let mut now = Duration::ZERO;
        let pieces = split(&stream, &cuts);
        let before = thread_allocations();
        client.on_connected(now).expect("a new client connects");
        let mut events = 0u64;
        for piece in pieces {
            now += Duration::from_millis(step_ms);
            let result = client.on_bytes(piece, now, |_| events += 1);
            if let Err(ProtocolError::Frame(FrameError::TooLong { len, max })) = result {
                prop_assert!(len > max && max == max_frame_len);
            }
            while client.poll_timers(now).is_some() {}
            prop_assert!(client.output().len() <= 256, "the outbox stays within its size");
            if drain {
                client.consume_output(client.output().len());
            }
        }
        let _ = client.logout(now);
        prop_assert_eq!(thread_allocations() - before, 0, "the client allocates nothing after construction");
    }

    #[test]
    fn soup_server_takes_any_stream_without_allocating(
        chunks in prop::collection::vec(chunk(CLIENT_TYPES), 0..30),
        cuts in prop::collection::vec(any::<usize>(), 0..20),
        max_frame_len in prop_oneof![Just(1024u16), 1u16..200, Just(u16::MAX)],
        step_ms in 0u64..3000,
        sends in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..80), 0..4),
    ) {
        let stream: Vec<u8> = chunks.concat();
        let session = ticklane_feed::moldudp64::Session::new(b"SESSION").expect("short");
        let mut cfg = ServerConfig::new(creds(), session);
        cfg.max_frame_len = max_frame_len;
        cfg.outbox_len = 256;
        let mut now = Duration::ZERO;
        let mut server = SoupServerSession::new(cfg, 5, now);
        let pieces = split(&stream, &cuts);
        let before = thread_allocations();
        for piece in pieces {
            now += Duration::from_millis(step_ms);
            let result = server.on_bytes(piece, now, |_| {});
            if let Err(ProtocolError::Frame(FrameError::TooLong { len, max })) = result {
                prop_assert!(len > max && max == max_frame_len);
            }
            for payload in &sends {
                let _ = server.send_sequenced(payload, now);
            }
            while server.poll_timers(now).is_some() {}
            prop_assert!(server.output().len() <= 256, "the outbox stays within its size");
        }
        let _ = server.end_session(now);
        prop_assert_eq!(thread_allocations() - before, 0, "the server allocates nothing after construction");
    }
}

/// A length prefix larger than any frame the client accepts is refused at once with a typed
/// error, however many bytes follow: the client neither waits for the frame nor takes more
/// bytes than its one buffer holds.
#[test]
fn an_oversized_length_prefix_is_refused_not_buffered() {
    let mut cfg = ClientConfig::new(creds());
    cfg.max_frame_len = 100;
    let mut client = SoupClient::new(cfg);
    client.on_connected(Duration::ZERO).expect("connects");
    let mut stream = vec![0xFF, 0xFF];
    stream.extend(std::iter::repeat_n(b'x', 1 << 20));
    let before = thread_allocations();
    let result = client.on_bytes(&stream, Duration::ZERO, |_| {});
    assert_eq!(
        result,
        Err(ProtocolError::Frame(FrameError::TooLong {
            len: 0xFFFF,
            max: 100
        }))
    );
    assert_eq!(thread_allocations() - before, 0);
    // The buffer is one 100-byte frame plus its prefix: it cannot have taken 1 MiB.
    assert!(client.read_buf().len() <= 2 + 100);
}

/// Found by `mold_datagrams_never_panic_and_stay_bounded`: a heartbeat announcing a sequence
/// near 2^64 opened a gap of that width, and the first try asked for all of it, one request
/// datagram per `max_per_request` messages, which never finished. One try now sends a
/// bounded number of datagrams and the call returns.
#[test]
fn a_gap_of_absurd_width_sends_a_bounded_number_of_requests() {
    let config = RecoveryConfig {
        max_per_request: 1,
        ..RecoveryConfig::default()
    };
    let mut mold = MoldRecovery::new(config);
    let mut sink = CheckingSink::default();
    let first = mold_header(&SESSION, 1, 0);
    let far = mold_header(&SESSION, u64::MAX - 1, 0);
    mold.on_packet(
        &Packet::parse(&first).expect("heartbeat"),
        Duration::ZERO,
        &mut sink,
    );
    mold.on_packet(
        &Packet::parse(&far).expect("heartbeat"),
        Duration::ZERO,
        &mut sink,
    );
    assert!(sink.requests > 0, "the gap is asked for");
    assert!(sink.requests <= 64, "{} requests in one try", sink.requests);
}
