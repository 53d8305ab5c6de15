//! Seeded, deterministic network faults for the exchange simulator.
//!
//! A [`FaultInjector`] decides the fate of each data packet in turn: send, drop, send twice,
//! or hold back to swap with the next. It draws the same four random numbers for every
//! packet whatever it decides, so a seed gives the same drop pattern whatever the other
//! ratios are, and changing the duplicate ratio does not move the drops. Heartbeats and
//! end-of-session packets are never faulted: their timing depends on the clock, and
//! faulting them would make the pattern of the data packets depend on it too.
//!
//! Faults added later draw from streams of their own ([`FaultInjector::fate_of`]), so that
//! setting them moves none of the four above: truncation, the loss of chosen sequence
//! numbers, and how the retransmission server answers ([`ReplyFault`]).

use std::time::Duration;

use crate::{SimError, SplitMix64};

/// Drops several consecutive packets at once, as a congested switch does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BurstLoss {
    /// Chance, per packet, that a burst starts with it (0.0 ..= 1.0).
    pub probability: f64,
    /// Packets lost in each burst, the first included (at least 1).
    pub packets: u32,
}

/// A silence of `duration` once `after_messages` messages have gone out on the live stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interruption {
    /// Messages released on the live stream before it starts.
    pub after_messages: u64,
    /// How long it lasts.
    pub duration: Duration,
}

/// How the retransmission server answers a request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReplyFault {
    /// With every message asked for (up to the per-reply bound), at once.
    #[default]
    Answer,
    /// Not at all: requests are read, counted and ignored.
    Silent,
    /// In full, but this long after the request came.
    Slow(Duration),
    /// With the first half of the range asked for (at least one message): the requester
    /// must ask again for the rest.
    Partial,
}

/// The faults the simulator injects, all seeded: the same seed and settings give the same
/// faults on the same packets.
///
/// The default injects nothing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Faults {
    /// Seed of the fault pattern.
    pub seed: u64,
    /// Chance that a packet is lost, independently of every other (0.0 ..= 1.0).
    pub drop_ratio: f64,
    /// Bursts of consecutive losses.
    pub burst_loss: Option<BurstLoss>,
    /// Chance that a packet is sent twice in a row (0.0 ..= 1.0).
    pub duplicate_ratio: f64,
    /// Chance that a packet is held back and sent after the next one (0.0 ..= 1.0).
    pub reorder_ratio: f64,
    /// The live stream stops sending data for a while but keeps its heartbeats: a quiet
    /// market, the line alive.
    pub stall: Option<Interruption>,
    /// The live stream goes silent, heartbeats included, then resumes where it stopped. For
    /// MoldUDP64 that is a line outage: nothing is lost or renumbered, the receiver only
    /// hears nothing for a while (and should call the feed dead). For SoupBinTCP the
    /// connection is closed.
    pub disconnect: Option<Interruption>,
    /// Apply the per-packet faults to retransmission replies too. Off by default, so a gap
    /// can always be filled.
    pub on_retransmissions: bool,
    /// Chance that a data packet goes out cut short, at a seeded length shorter than its
    /// own (0.0 ..= 1.0): its last message's length, or the header's count, then says more
    /// than the datagram holds.
    pub truncate_ratio: f64,
    /// Lose every live data packet that carries any of the sequence numbers
    /// `first ..= last` (never a retransmission): a lost first packet, a gap still open at
    /// end of session.
    pub lose_sequences: Option<(u64, u64)>,
    /// How the retransmission server answers.
    pub replies: ReplyFault,
}

impl Default for Faults {
    fn default() -> Self {
        Faults {
            seed: 1,
            drop_ratio: 0.0,
            burst_loss: None,
            duplicate_ratio: 0.0,
            reorder_ratio: 0.0,
            stall: None,
            disconnect: None,
            on_retransmissions: false,
            truncate_ratio: 0.0,
            lose_sequences: None,
            replies: ReplyFault::Answer,
        }
    }
}

impl Faults {
    /// True when some per-packet fault (drop, burst, duplicate, reorder) can happen.
    pub fn affects_packets(&self) -> bool {
        self.truncate_ratio > 0.0
            || self.lose_sequences.is_some()
            || self.drop_ratio > 0.0
            || self.burst_loss.is_some_and(|b| b.probability > 0.0)
            || self.duplicate_ratio > 0.0
            || self.reorder_ratio > 0.0
    }

    /// Checks that every ratio is a probability and every burst loses at least one packet.
    ///
    /// # Errors
    ///
    /// [`SimError::InvalidConfig`] naming the first value out of range.
    pub fn validate(&self) -> Result<(), SimError> {
        let ratio = |p: f64, what| {
            if (0.0..=1.0).contains(&p) {
                Ok(())
            } else {
                Err(SimError::InvalidConfig { what })
            }
        };
        ratio(self.drop_ratio, "faults.drop_ratio must be in 0.0 ..= 1.0")?;
        ratio(
            self.duplicate_ratio,
            "faults.duplicate_ratio must be in 0.0 ..= 1.0",
        )?;
        ratio(
            self.reorder_ratio,
            "faults.reorder_ratio must be in 0.0 ..= 1.0",
        )?;
        ratio(
            self.truncate_ratio,
            "faults.truncate_ratio must be in 0.0 ..= 1.0",
        )?;
        if self
            .lose_sequences
            .is_some_and(|(first, last)| first > last)
        {
            return Err(SimError::InvalidConfig {
                what: "faults.lose_sequences must be first ..= last with first <= last",
            });
        }
        if let Some(burst) = self.burst_loss {
            ratio(
                burst.probability,
                "faults.burst_loss.probability must be in 0.0 ..= 1.0",
            )?;
            if burst.packets == 0 {
                return Err(SimError::InvalidConfig {
                    what: "faults.burst_loss.packets must be at least 1",
                });
            }
        }
        Ok(())
    }
}

/// What happens to one data packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketFate {
    /// Send it once.
    Send,
    /// Lose it (independent loss or part of a burst).
    Drop,
    /// Send it twice in a row.
    Duplicate,
    /// Keep it back and send it right after the next packet.
    HoldBack,
    /// Send only its first `keep` bytes.
    Truncate {
        /// Bytes sent, fewer than the packet's.
        keep: usize,
    },
}

/// Decides, packet by packet, which faults hit a stream. Deterministic for a seed.
#[derive(Clone, Debug)]
pub struct FaultInjector {
    rng: SplitMix64,
    /// Truncation's own stream (see the module docs).
    cuts: SplitMix64,
    faults: Faults,
    /// Packets still to lose in the current burst.
    burst_left: u32,
}

impl FaultInjector {
    /// The injector of the live stream.
    pub fn new(faults: &Faults) -> Self {
        Self::for_stream(faults, 0)
    }

    /// An injector for another stream of the same simulator (retransmission replies, a
    /// second client): its pattern is its own, yet still fixed by the seed.
    pub fn for_stream(faults: &Faults, stream: u64) -> Self {
        let mut mix = SplitMix64::new(stream);
        FaultInjector {
            rng: SplitMix64::new(faults.seed ^ mix.next_u64()),
            cuts: SplitMix64::new(faults.seed ^ mix.next_u64()),
            faults: *faults,
            burst_left: 0,
        }
    }

    /// The fate of the next packet.
    pub fn next_fate(&mut self) -> PacketFate {
        // Four draws every time, used or not: see the module docs.
        let drop = self.rng.chance(self.faults.drop_ratio);
        let burst = self
            .rng
            .chance(self.faults.burst_loss.map_or(0.0, |b| b.probability));
        let duplicate = self.rng.chance(self.faults.duplicate_ratio);
        let hold = self.rng.chance(self.faults.reorder_ratio);
        if self.burst_left > 0 {
            self.burst_left -= 1;
            return PacketFate::Drop;
        }
        if burst {
            self.burst_left = self.faults.burst_loss.map_or(1, |b| b.packets.max(1)) - 1;
            return PacketFate::Drop;
        }
        if drop {
            PacketFate::Drop
        } else if duplicate {
            PacketFate::Duplicate
        } else if hold {
            PacketFate::HoldBack
        } else {
            PacketFate::Send
        }
    }
}

impl FaultInjector {
    /// The fate of the next data packet, of `len` bytes, carrying `messages` messages from
    /// `first_seq`; `live` is false for retransmission replies, which never lose chosen
    /// sequence numbers. The four draws of [`FaultInjector::next_fate`] are made first, so
    /// the other faults keep their pattern.
    pub fn fate_of(&mut self, first_seq: u64, messages: u16, len: usize, live: bool) -> PacketFate {
        let fate = self.next_fate();
        let cut = self.cuts.chance(self.faults.truncate_ratio);
        let keep = 1 + self.cuts.below(len.max(2) as u64 - 1) as usize;
        let end = first_seq.saturating_add(u64::from(messages));
        let chosen = self
            .faults
            .lose_sequences
            .is_some_and(|(first, last)| first_seq <= last && end > first);
        if live && messages > 0 && chosen {
            return PacketFate::Drop;
        }
        if cut && fate == PacketFate::Send && len > 1 {
            return PacketFate::Truncate { keep };
        }
        fate
    }
}

/// Which silence is due.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SilenceKind {
    /// Data stops, heartbeats go on.
    Stall,
    /// Everything stops.
    Disconnect,
}

/// Fires the stall and the disconnect of [`Faults`] once each, at their message counts.
#[derive(Clone, Debug)]
pub(crate) struct Interruptions {
    stall: Option<Interruption>,
    disconnect: Option<Interruption>,
}

impl Interruptions {
    pub(crate) fn new(faults: &Faults) -> Self {
        Interruptions {
            stall: faults.stall,
            disconnect: faults.disconnect,
        }
    }

    /// The silence due now that `released` messages went out, if any; each fires once.
    /// When both are due the stall comes first.
    pub(crate) fn due(&mut self, released: u64) -> Option<(SilenceKind, Duration)> {
        if let Some(stall) = self.stall.filter(|s| released >= s.after_messages) {
            self.stall = None;
            return Some((SilenceKind::Stall, stall.duration));
        }
        if let Some(cut) = self.disconnect.filter(|d| released >= d.after_messages) {
            self.disconnect = None;
            return Some((SilenceKind::Disconnect, cut.duration));
        }
        None
    }

    /// Messages that may still go out before the next silence is due, so a packet never
    /// straddles one; `None` when no silence is pending.
    pub(crate) fn messages_before_next(&self, released: u64) -> Option<u64> {
        [self.stall, self.disconnect]
            .into_iter()
            .flatten()
            .map(|i| i.after_messages.saturating_sub(released))
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fates(faults: &Faults, n: usize) -> Vec<PacketFate> {
        let mut injector = FaultInjector::new(faults);
        (0..n).map(|_| injector.next_fate()).collect()
    }

    #[test]
    fn no_faults_sends_everything() {
        assert!(fates(&Faults::default(), 10_000)
            .iter()
            .all(|&f| f == PacketFate::Send));
        assert!(!Faults::default().affects_packets());
    }

    #[test]
    fn same_seed_same_pattern_other_seed_another() {
        let faults = Faults {
            seed: 77,
            drop_ratio: 0.05,
            duplicate_ratio: 0.02,
            reorder_ratio: 0.02,
            burst_loss: Some(BurstLoss {
                probability: 0.01,
                packets: 4,
            }),
            ..Faults::default()
        };
        let a = fates(&faults, 20_000);
        assert_eq!(a, fates(&faults, 20_000));
        assert_ne!(a, fates(&Faults { seed: 78, ..faults }, 20_000));
        let dropped = a.iter().filter(|&&f| f == PacketFate::Drop).count();
        // About 5% independent plus 1% x 4 in bursts.
        assert!((1_200..=2_400).contains(&dropped), "dropped {dropped}");
        let replies = FaultInjector::for_stream(&faults, 1);
        let mut replies = replies;
        let b: Vec<_> = (0..20_000).map(|_| replies.next_fate()).collect();
        assert_ne!(a, b, "each stream has its own pattern");
    }

    #[test]
    fn drops_do_not_move_when_other_ratios_change() {
        let drops_only = Faults {
            seed: 5,
            drop_ratio: 0.1,
            ..Faults::default()
        };
        let with_dups = Faults {
            duplicate_ratio: 0.3,
            reorder_ratio: 0.3,
            ..drops_only
        };
        let dropped = |f: &Faults| -> Vec<usize> {
            fates(f, 5_000)
                .iter()
                .enumerate()
                .filter(|(_, &fate)| fate == PacketFate::Drop)
                .map(|(i, _)| i)
                .collect()
        };
        assert_eq!(dropped(&drops_only), dropped(&with_dups));
    }

    #[test]
    fn bursts_lose_consecutive_packets() {
        let faults = Faults {
            burst_loss: Some(BurstLoss {
                probability: 1.0,
                packets: 3,
            }),
            ..Faults::default()
        };
        assert!(fates(&faults, 9).iter().all(|&f| f == PacketFate::Drop));
        let faults = Faults {
            seed: 11,
            burst_loss: Some(BurstLoss {
                probability: 0.02,
                packets: 5,
            }),
            ..Faults::default()
        };
        let a = fates(&faults, 10_000);
        // Every run of drops is a multiple of the burst length, unless bursts overlap
        // (a burst starting inside another is swallowed), so runs are at least 5 long.
        let mut run = 0;
        for (i, f) in a.iter().enumerate() {
            if *f == PacketFate::Drop {
                run += 1;
            } else {
                assert!(run == 0 || run >= 5, "run of {run} ending at {i}");
                run = 0;
            }
        }
    }

    #[test]
    fn chosen_sequences_are_lost_live_only_and_truncation_moves_no_other_fault() {
        let faults = Faults {
            seed: 9,
            drop_ratio: 0.1,
            lose_sequences: Some((10, 12)),
            ..Faults::default()
        };
        let mut live = FaultInjector::new(&faults);
        // Packets of 5 messages: 1..=5, 6..=10, 11..=15, 16..=20.
        let live_fates: Vec<_> = (0..4)
            .map(|i| live.fate_of(1 + 5 * i, 5, 100, true))
            .collect();
        assert_eq!(
            (live_fates[1], live_fates[2]),
            (PacketFate::Drop, PacketFate::Drop)
        );
        let mut replies = FaultInjector::new(&faults);
        let _ = replies.fate_of(1, 5, 100, false);
        let reply = replies.fate_of(6, 5, 100, false);
        assert_eq!(reply, fates(&faults, 2)[1], "a reply keeps its own fate");

        let cut = Faults {
            truncate_ratio: 0.2,
            ..faults
        };
        let mut a = FaultInjector::new(&faults);
        let mut b = FaultInjector::new(&cut);
        let (mut truncated, mut others_alike) = (0, true);
        for i in 0..5_000u64 {
            let (x, y) = (
                a.fate_of(100 + i, 1, 50, true),
                b.fate_of(100 + i, 1, 50, true),
            );
            if let PacketFate::Truncate { keep } = y {
                assert!((1..50).contains(&keep));
                assert_eq!(x, PacketFate::Send, "only a packet sent whole is cut");
                truncated += 1;
            } else {
                others_alike &= x == y;
            }
        }
        assert!(others_alike, "every other fate is unchanged");
        // About 20% of the 90% sent whole.
        assert!((700..=1_100).contains(&truncated), "truncated {truncated}");
    }

    #[test]
    fn out_of_range_ratios_are_rejected() {
        assert!(Faults::default().validate().is_ok());
        let bad = Faults {
            drop_ratio: 1.5,
            ..Faults::default()
        };
        assert!(matches!(
            bad.validate(),
            Err(SimError::InvalidConfig { .. })
        ));
        let nan = Faults {
            reorder_ratio: f64::NAN,
            ..Faults::default()
        };
        assert!(nan.validate().is_err());
        let empty_burst = Faults {
            burst_loss: Some(BurstLoss {
                probability: 0.1,
                packets: 0,
            }),
            ..Faults::default()
        };
        assert!(empty_burst.validate().is_err());
    }

    #[test]
    fn interruptions_fire_once_each_stall_first() {
        let second = Duration::from_secs(1);
        let faults = Faults {
            stall: Some(Interruption {
                after_messages: 10,
                duration: second,
            }),
            disconnect: Some(Interruption {
                after_messages: 10,
                duration: second,
            }),
            ..Faults::default()
        };
        let mut due = Interruptions::new(&faults);
        assert_eq!(due.messages_before_next(4), Some(6));
        assert_eq!(due.due(9), None);
        assert_eq!(due.due(10), Some((SilenceKind::Stall, second)));
        assert_eq!(due.due(10), Some((SilenceKind::Disconnect, second)));
        assert_eq!(due.due(11), None);
        assert_eq!(due.messages_before_next(11), None);
    }
}
