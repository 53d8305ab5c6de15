//! The replay sequencer: decides per message deliver or duplicate and declares gaps.

use super::packet::{Messages, Packet, PacketKind, Session};
use super::request::GapRange;

/// How many gap ranges [`MoldSession::new`] keeps; later gaps are only counted.
pub const DEFAULT_GAP_CAPACITY: usize = 1024;

/// A change of session seen by [`MoldSession`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionEvent {
    /// The first sequenced packet: it names the session and sets the expected sequence
    /// (a capture or a join that starts mid-session is not a gap).
    Started(Session),
    /// A packet names another session: the old one is left behind and the new one starts
    /// fresh, as on a first packet.
    Changed {
        /// The session until now.
        from: Session,
        /// The session from this packet on.
        to: Session,
    },
}

/// What to do with one message of a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Apply it. `seq` is `None` for an unsequenced (sanitized) packet.
    Deliver {
        /// The message's sequence number.
        seq: Option<u64>,
    },
    /// Skip it: its sequence number was applied already.
    Duplicate {
        /// The message's sequence number.
        seq: u64,
    },
}

/// [`MoldSession`]'s verdict on one packet. `Copy`: it holds no borrow, so the caller may
/// keep the packet's bytes wherever they are and walk them later.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketOutcome {
    /// Data, heartbeat or end of session.
    pub kind: PacketKind,
    /// Set when this packet started the session or switched to another one.
    pub session_event: Option<SessionEvent>,
    /// Set when this packet revealed missing messages (its sequence ran past the expected
    /// one).
    pub gap: Option<GapRange>,
    /// Sequence number of the packet's first message; `None` when it is unsequenced.
    pub first_seq: Option<u64>,
    /// Leading messages already applied: duplicates are always a prefix of a packet.
    pub duplicates: u16,
    /// Messages in the packet.
    pub count: u16,
}

impl PacketOutcome {
    /// Messages to deliver: those after the duplicates.
    pub fn delivered(&self) -> u16 {
        self.count - self.duplicates
    }

    /// The decision for the packet's `i`-th message (0-based, `i < count`).
    pub fn decide(&self, i: u16) -> Decision {
        // Saturating: `i` past the packet's count is a caller error, not a reason to panic.
        let seq = self
            .first_seq
            .map(|first| first.saturating_add(u64::from(i)));
        match seq {
            Some(seq) if i < self.duplicates => Decision::Duplicate { seq },
            seq => Decision::Deliver { seq },
        }
    }

    /// Walks `packet` (the one this outcome is for) message by message with its decision.
    pub fn sequenced<'a>(&self, packet: &Packet<'a>) -> Sequenced<'a> {
        Sequenced {
            outcome: *self,
            messages: packet.messages(),
            i: 0,
        }
    }
}

/// One message of a packet and what to do with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SequencedMessage<'a> {
    /// The message's bytes (no length field).
    pub bytes: &'a [u8],
    /// Its sequence number; `None` when the packet is unsequenced.
    pub seq: Option<u64>,
    /// Deliver or skip.
    pub decision: Decision,
}

/// The messages of a packet with their decisions; see [`PacketOutcome::sequenced`].
#[derive(Clone, Debug)]
pub struct Sequenced<'a> {
    outcome: PacketOutcome,
    messages: Messages<'a>,
    i: u16,
}

impl<'a> Iterator for Sequenced<'a> {
    type Item = SequencedMessage<'a>;

    fn next(&mut self) -> Option<SequencedMessage<'a>> {
        let bytes = self.messages.next()?;
        let decision = self.outcome.decide(self.i);
        self.i += 1;
        let seq = match decision {
            Decision::Deliver { seq } => seq,
            Decision::Duplicate { seq } => Some(seq),
        };
        Some(SequencedMessage {
            bytes,
            seq,
            decision,
        })
    }
}

/// Counters kept by [`MoldSession`]. All totals since it was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SessionStats {
    /// Packets fed, of every kind.
    pub packets: u64,
    /// Heartbeats fed.
    pub heartbeats: u64,
    /// End-of-session packets fed.
    pub end_of_session: u64,
    /// Packets replayed unsequenced (blank session and sequence 0).
    pub unsequenced_packets: u64,
    /// Messages decided `Deliver`.
    pub delivered: u64,
    /// Messages decided `Duplicate`.
    pub duplicates: u64,
    /// Gaps detected.
    pub gaps: u64,
    /// Messages missing in all gaps together.
    pub missing_messages: u64,
    /// Times a packet named a different session from the current one.
    pub session_changes: u64,
}

/// The sans-I/O MoldUDP64 sequencer: fed packets in arrival order, it decides per message
/// deliver or duplicate and detects gaps and session changes.
///
/// Rules, in order, for each packet:
/// - A blank session (zeros or spaces) with sequence 0 is a sanitized capture: its messages
///   are delivered unsequenced and the state is left alone.
/// - The first sequenced packet, or one naming another session, (re)starts the state: the
///   packet's sequence becomes the expected one, so joining mid-session is not a gap.
/// - A sequence past the expected one is a gap `expected ..= sequence - 1`; the packet is
///   then delivered (replay declares gaps and goes on; a live feed requests the range).
/// - Messages below the expected sequence are duplicates, skipped; the rest are delivered.
/// - Heartbeats and end of session carry the next expected sequence, so they reveal gaps
///   the same way; they never move the expectation backwards.
///
/// State is updated once per packet, so the verdict is a small `Copy` value and the
/// sequencer never holds the packet's bytes. The gap list is allocated at construction and
/// never grows past its capacity: a bad feed cannot make it use more memory.
#[derive(Clone, Debug)]
pub struct MoldSession {
    session: Option<Session>,
    /// Invariant: `Some` exactly when `session` is.
    next_expected: Option<u64>,
    ended: bool,
    stats: SessionStats,
    /// Invariant: `gap_ranges.len() <= gap_capacity`, so pushing never reallocates.
    gap_ranges: Vec<GapRange>,
    gap_capacity: usize,
}

impl Default for MoldSession {
    fn default() -> Self {
        Self::new()
    }
}

impl MoldSession {
    /// A sequencer that keeps the first [`DEFAULT_GAP_CAPACITY`] gap ranges.
    pub fn new() -> Self {
        Self::with_gap_capacity(DEFAULT_GAP_CAPACITY)
    }

    /// A sequencer that keeps the first `capacity` gap ranges; later gaps are only counted.
    pub fn with_gap_capacity(capacity: usize) -> Self {
        MoldSession {
            session: None,
            next_expected: None,
            ended: false,
            stats: SessionStats::default(),
            gap_ranges: Vec::with_capacity(capacity),
            gap_capacity: capacity,
        }
    }

    /// Decides what to do with `packet`'s messages and updates the state.
    pub fn on_packet(&mut self, packet: &Packet<'_>) -> PacketOutcome {
        self.stats.packets += 1;
        let kind = packet.kind();
        match kind {
            PacketKind::Heartbeat => self.stats.heartbeats += 1,
            PacketKind::EndOfSession => self.stats.end_of_session += 1,
            PacketKind::Data { .. } => {}
        }
        let count = packet.message_count();
        let mut outcome = PacketOutcome {
            kind,
            session_event: None,
            gap: None,
            first_seq: None,
            duplicates: 0,
            count,
        };

        if packet.session().is_blank() && packet.sequence() == 0 {
            self.stats.unsequenced_packets += 1;
            self.stats.delivered += u64::from(count);
            return outcome;
        }

        let seq = packet.sequence();
        outcome.first_seq = Some(seq);
        let expected = match (self.session, self.next_expected) {
            (Some(current), Some(expected)) if current == packet.session() => expected,
            (current, _) => {
                outcome.session_event = Some(match current {
                    None => SessionEvent::Started(packet.session()),
                    Some(from) => {
                        self.stats.session_changes += 1;
                        SessionEvent::Changed {
                            from,
                            to: packet.session(),
                        }
                    }
                });
                self.session = Some(packet.session());
                self.ended = false;
                seq
            }
        };

        if seq > expected {
            let gap = GapRange {
                first: expected,
                last: seq - 1,
            };
            self.record_gap(gap);
            outcome.gap = Some(gap);
        } else {
            let behind = expected - seq;
            outcome.duplicates = u16::try_from(behind).map_or(count, |b| b.min(count));
        }
        self.stats.duplicates += u64::from(outcome.duplicates);
        self.stats.delivered += u64::from(outcome.delivered());
        self.next_expected = Some(expected.max(packet.next_sequence()));
        if kind == PacketKind::EndOfSession {
            self.ended = true;
        }
        outcome
    }

    fn record_gap(&mut self, gap: GapRange) {
        self.stats.gaps += 1;
        self.stats.missing_messages += gap.len();
        if self.gap_ranges.len() < self.gap_capacity {
            self.gap_ranges.push(gap);
        }
    }

    /// The current session, once a sequenced packet has been seen.
    pub fn session(&self) -> Option<Session> {
        self.session
    }

    /// The sequence number expected next, once a sequenced packet has been seen.
    pub fn next_expected(&self) -> Option<u64> {
        self.next_expected
    }

    /// True once the current session has sent its end-of-session packet.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// The counters.
    pub fn stats(&self) -> SessionStats {
        self.stats
    }

    /// The first gaps detected, in order, at most the capacity given at construction.
    /// `stats().gaps` counts them all.
    pub fn gap_ranges(&self) -> &[GapRange] {
        &self.gap_ranges
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::moldudp64::encode_end_of_session;
    use crate::moldudp64::test_packets::{heartbeat, packet_bytes, session};
    use proptest::prelude::*;

    #[test]
    fn first_packet_sets_expectation_and_gap_is_exact() {
        let s = session(b"000010059B");
        let mut seq = MoldSession::new();
        let one = packet_bytes(s, 14_764_496, &[b"a"]);
        let p = Packet::parse(&one).expect("valid");
        let o = seq.on_packet(&p);
        assert_eq!(o.session_event, Some(SessionEvent::Started(s)));
        assert_eq!(o.gap, None);
        assert_eq!(
            o.decide(0),
            Decision::Deliver {
                seq: Some(14_764_496)
            }
        );

        let two = packet_bytes(s, 19_009_117, &[b"b", b"c"]);
        let p = Packet::parse(&two).expect("valid");
        let o = seq.on_packet(&p);
        let gap = GapRange {
            first: 14_764_497,
            last: 19_009_116,
        };
        assert_eq!(o.gap, Some(gap));
        assert_eq!(o.delivered(), 2);
        assert_eq!(seq.gap_ranges(), [gap]);
        assert_eq!(seq.stats().missing_messages, 4_244_620);
        assert_eq!(seq.next_expected(), Some(19_009_119));
    }

    #[test]
    fn overlap_delivers_only_the_new_tail() {
        let s = session(b"S");
        let mut seq = MoldSession::new();
        let a = packet_bytes(s, 1, &[b"1", b"2", b"3"]);
        seq.on_packet(&Packet::parse(&a).expect("valid"));
        let b = packet_bytes(s, 2, &[b"2", b"3", b"4"]);
        let p = Packet::parse(&b).expect("valid");
        let o = seq.on_packet(&p);
        let got: Vec<_> = o.sequenced(&p).map(|m| (m.bytes[0], m.decision)).collect();
        assert_eq!(
            got,
            [
                (b'2', Decision::Duplicate { seq: 2 }),
                (b'3', Decision::Duplicate { seq: 3 }),
                (b'4', Decision::Deliver { seq: Some(4) }),
            ]
        );
        assert_eq!(seq.stats().duplicates, 2);
    }

    #[test]
    fn heartbeat_reveals_a_gap_and_never_moves_back() {
        let s = session(b"S");
        let mut seq = MoldSession::new();
        seq.on_packet(&Packet::parse(&packet_bytes(s, 1, &[b"x"])).expect("valid"));
        let o = seq.on_packet(&Packet::parse(&heartbeat(s, 5)).expect("valid"));
        assert_eq!(o.gap, Some(GapRange { first: 2, last: 4 }));
        let o = seq.on_packet(&Packet::parse(&heartbeat(s, 3)).expect("valid"));
        assert_eq!(o.gap, None);
        assert_eq!(seq.next_expected(), Some(5));
        let mut eos = [0u8; 20];
        encode_end_of_session(&mut eos, s, 5).expect("fits");
        seq.on_packet(&Packet::parse(&eos).expect("valid"));
        assert!(seq.ended());
    }

    #[test]
    fn session_change_starts_fresh() {
        let mut seq = MoldSession::new();
        let a = session(b"A");
        let b = session(b"B");
        seq.on_packet(&Packet::parse(&packet_bytes(a, 100, &[b"x"])).expect("valid"));
        let o = seq.on_packet(&Packet::parse(&packet_bytes(b, 1, &[b"y"])).expect("valid"));
        assert_eq!(
            o.session_event,
            Some(SessionEvent::Changed { from: a, to: b })
        );
        assert_eq!(o.gap, None);
        assert_eq!(o.duplicates, 0);
        assert_eq!(seq.stats().session_changes, 1);
        assert_eq!(seq.next_expected(), Some(2));
    }

    #[test]
    fn sanitized_packets_are_unsequenced_and_leave_state_alone() {
        let mut seq = MoldSession::new();
        for blank in [Session([0; 10]), Session([b' '; 10])] {
            let bytes = packet_bytes(blank, 0, &[b"x", b"y"]);
            let p = Packet::parse(&bytes).expect("valid");
            let o = seq.on_packet(&p);
            assert_eq!(o.first_seq, None);
            assert!(o
                .sequenced(&p)
                .all(|m| m.decision == Decision::Deliver { seq: None }));
        }
        assert_eq!(seq.session(), None);
        assert_eq!(seq.stats().unsequenced_packets, 2);
        assert_eq!(seq.stats().delivered, 4);
    }

    #[test]
    fn gap_list_is_bounded_but_totals_are_not() {
        let s = session(b"S");
        let mut seq = MoldSession::with_gap_capacity(2);
        for i in 0..5u64 {
            seq.on_packet(&Packet::parse(&heartbeat(s, 1 + 2 * i)).expect("valid"));
        }
        assert_eq!(seq.stats().gaps, 4);
        // Heartbeat 1 sets the expectation; 3, 5, 7, 9 each reveal two missing messages.
        assert_eq!(seq.stats().missing_messages, 8);
        assert_eq!(seq.gap_ranges().len(), 2);
        assert_eq!(seq.gap_ranges()[1], GapRange { first: 3, last: 4 });
    }

    /// One packet of the model tests: session index, sequence, count (0 = heartbeat,
    /// `None` = end of session).
    #[derive(Clone, Debug)]
    struct ModelPacket {
        session: u8,
        seq: u64,
        count: Option<u16>,
    }

    fn model_packet() -> impl Strategy<Value = ModelPacket> {
        (
            0u8..2,
            1u64..40,
            prop_oneof![8 => (0u16..6).prop_map(Some), 1 => Just(None)],
        )
            .prop_map(|(session, seq, count)| ModelPacket {
                session,
                seq,
                count,
            })
    }

    /// The reference: decides message by message, knowing nothing about packets.
    #[derive(Default)]
    struct Model {
        state: Option<(u8, u64)>,
        delivered: Vec<u64>,
        duplicates: u64,
        gaps: Vec<GapRange>,
        changes: u64,
    }

    impl Model {
        fn expect(&mut self, session: u8, seq: u64) -> u64 {
            match self.state {
                Some((s, next)) if s == session => next,
                other => {
                    if other.is_some() {
                        self.changes += 1;
                    }
                    self.state = Some((session, seq));
                    seq
                }
            }
        }

        fn packet(&mut self, p: &ModelPacket) {
            let mut next = self.expect(p.session, p.seq);
            if p.seq > next {
                self.gaps.push(GapRange {
                    first: next,
                    last: p.seq - 1,
                });
                next = p.seq;
            }
            for s in p.seq..p.seq + u64::from(p.count.unwrap_or(0)) {
                if s < next {
                    self.duplicates += 1;
                } else {
                    self.delivered.push(s);
                    next = s + 1;
                }
            }
            self.state = Some((p.session, next));
        }
    }
    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, rng_seed: proptest::test_runner::RngSeed::Fixed(7), ..ProptestConfig::default() })]


        #[test]
        fn sequencer_matches_per_message_model(packets in proptest::collection::vec(model_packet(), 1..30)) {
            let names = [session(b"A"), session(b"B")];
            let mut seq = MoldSession::new();
            let mut model = Model::default();
            let mut delivered = Vec::new();
            for mp in &packets {
                let s = names[usize::from(mp.session)];
                let bytes = match mp.count {
                    Some(n) => {
                        let payload: Vec<Vec<u8>> = (0..n).map(|i| vec![i as u8]).collect();
                        let refs: Vec<&[u8]> = payload.iter().map(Vec::as_slice).collect();
                        packet_bytes(s, mp.seq, &refs)
                    }
                    None => {
                        let mut b = vec![0u8; 20];
                        encode_end_of_session(&mut b, s, mp.seq).expect("fits");
                        b
                    }
                };
                let p = Packet::parse(&bytes).expect("valid");
                let o = seq.on_packet(&p);
                for m in o.sequenced(&p) {
                    if let Decision::Deliver { seq: Some(s) } = m.decision {
                        delivered.push(s);
                    }
                }
                model.packet(mp);
            }
            prop_assert_eq!(&delivered, &model.delivered);
            prop_assert_eq!(seq.stats().duplicates, model.duplicates);
            prop_assert_eq!(seq.gap_ranges(), model.gaps.as_slice());
            prop_assert_eq!(seq.stats().session_changes, model.changes);
            prop_assert_eq!(seq.stats().missing_messages, model.gaps.iter().map(GapRange::len).sum::<u64>());
        }
    }
}
