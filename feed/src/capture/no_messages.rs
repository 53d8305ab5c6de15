//! Why a capture that read to its end without an error yielded no message.
//!
//! Zero messages is never a result to pass over in silence: an empty file, a capture of
//! other traffic (another link type, no UDP, UDP that is not MoldUDP64) and a session that
//! carried only heartbeats each mean something different to the person replaying it.

use std::fmt;

use super::link::LinkType;
use super::CaptureCounts;

/// Frames on a link type the reader does not unwrap (pcapng interfaces; a pcap file with one
/// fails to open instead).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnsupportedLink {
    /// The first such link type seen.
    pub linktype: u32,
    /// Frames skipped because of their link type, all such types together.
    pub frames: u64,
}

impl UnsupportedLink {
    /// The unsupported-link part of `stats`, if any frame was skipped for its link type.
    pub fn of(stats: &CaptureCounts<'_>) -> Option<Self> {
        let linktype = stats.unsupported_link_type?;
        Some(UnsupportedLink {
            linktype,
            frames: stats.unsupported_link_frames,
        })
    }
}

impl fmt::Display for UnsupportedLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "link type {} is not supported (Ethernet 1, raw IP 101/228, Linux cooked 113); \
             frames skipped: {}",
            LinkType(self.linktype),
            self.frames
        )
    }
}

/// Why a read ended cleanly with no message (see `CaptureReader::no_messages`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoMessages {
    /// The input holds no bytes (for gzip: decompresses to none).
    EmptyInput,
    /// A pcap or pcapng with its headers and not one packet.
    NoPackets,
    /// Packets, none of which carried a MoldUDP64 packet: a capture of something else.
    NoMoldUdp64 {
        /// Frames read.
        packets: u64,
        /// Frames with no whole IPv4/UDP datagram (link type, not IPv4, not UDP, fragment).
        non_udp_frames: u64,
        /// UDP datagrams that were not MoldUDP64.
        non_mold_datagrams: u64,
        /// Of `non_udp_frames`, those on a link type the reader does not unwrap.
        unsupported_link: Option<UnsupportedLink>,
    },
    /// MoldUDP64 packets, but every one was a heartbeat, an end of session, or repeated
    /// messages already delivered.
    NoMessageInMold {
        /// MoldUDP64 packets read.
        mold_packets: u64,
        /// Of them, heartbeats.
        heartbeats: u64,
        /// Of them, end-of-session packets.
        end_of_session: u64,
        /// Messages skipped as duplicates.
        duplicates: u64,
    },
}

impl NoMessages {
    /// Which case `stats` (of a read that ended cleanly with no message) is.
    pub(crate) fn of(stats: &CaptureCounts<'_>) -> Self {
        if stats.bytes_consumed == 0 {
            NoMessages::EmptyInput
        } else if stats.packets == 0 {
            NoMessages::NoPackets
        } else if stats.mold_packets == 0 {
            NoMessages::NoMoldUdp64 {
                packets: stats.packets,
                non_udp_frames: stats.non_udp_frames,
                non_mold_datagrams: stats.non_mold_datagrams,
                unsupported_link: UnsupportedLink::of(stats),
            }
        } else {
            NoMessages::NoMessageInMold {
                mold_packets: stats.mold_packets,
                heartbeats: stats.heartbeats,
                end_of_session: stats.end_of_session,
                duplicates: stats.duplicates,
            }
        }
    }

    /// True when the input held no MoldUDP64 or ITCH data at all, as opposed to a session
    /// that simply carried no message: what a replay should treat as a failure.
    pub fn held_no_feed_data(&self) -> bool {
        !matches!(self, NoMessages::NoMessageInMold { .. })
    }
}

impl fmt::Display for NoMessages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("no messages: ")?;
        match self {
            NoMessages::EmptyInput => f.write_str("the input is empty"),
            NoMessages::NoPackets => f.write_str("the capture holds no packets"),
            NoMessages::NoMoldUdp64 {
                packets,
                non_udp_frames,
                non_mold_datagrams,
                unsupported_link,
            } => {
                write!(f, "none of the {packets} packets carried MoldUDP64")?;
                if let Some(link) = unsupported_link {
                    write!(f, "; {link}")?;
                }
                let other_non_udp = non_udp_frames - unsupported_link.map_or(0, |link| link.frames);
                if other_non_udp > 0 {
                    write!(f, "; {other_non_udp} carried no IPv4/UDP datagram")?;
                }
                if *non_mold_datagrams > 0 {
                    write!(f, "; {non_mold_datagrams} UDP datagrams were not MoldUDP64")?;
                }
                Ok(())
            }
            NoMessages::NoMessageInMold {
                mold_packets,
                heartbeats,
                end_of_session,
                duplicates,
            } => write!(
                f,
                "the {mold_packets} MoldUDP64 packets carried none to deliver \
                 ({heartbeats} heartbeats, {end_of_session} end of session, \
                 {duplicates} duplicate messages)"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_case_reads_as_a_sentence() {
        let cases = [
            (NoMessages::EmptyInput, "no messages: the input is empty"),
            (
                NoMessages::NoPackets,
                "no messages: the capture holds no packets",
            ),
            (
                NoMessages::NoMoldUdp64 {
                    packets: 5,
                    non_udp_frames: 3,
                    non_mold_datagrams: 2,
                    unsupported_link: Some(UnsupportedLink {
                        linktype: 105,
                        frames: 2,
                    }),
                },
                "no messages: none of the 5 packets carried MoldUDP64; link type 105 \
                 (IEEE 802.11) is not supported (Ethernet 1, raw IP 101/228, Linux cooked \
                 113); frames skipped: 2; 1 carried no IPv4/UDP datagram; 2 UDP datagrams \
                 were not MoldUDP64",
            ),
            (
                NoMessages::NoMessageInMold {
                    mold_packets: 4,
                    heartbeats: 3,
                    end_of_session: 1,
                    duplicates: 0,
                },
                "no messages: the 4 MoldUDP64 packets carried none to deliver (3 heartbeats, \
                 1 end of session, 0 duplicate messages)",
            ),
        ];
        for (case, text) in cases {
            assert_eq!(case.to_string(), text);
        }
    }

    #[test]
    fn only_a_session_without_messages_held_feed_data() {
        assert!(NoMessages::EmptyInput.held_no_feed_data());
        assert!(NoMessages::NoPackets.held_no_feed_data());
        let quiet = NoMessages::NoMessageInMold {
            mold_packets: 1,
            heartbeats: 1,
            end_of_session: 0,
            duplicates: 0,
        };
        assert!(!quiet.held_no_feed_data());
    }
}
