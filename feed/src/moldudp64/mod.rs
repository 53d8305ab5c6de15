//! MoldUDP64 1.0: packet views and encoders, retransmission requests, and the one sans-I/O
//! sequencer that decides which messages to deliver.
//!
//! A packet is a 20-byte header (session: 10 ASCII bytes; sequence number of its first
//! message: u64; message count: u16, all big-endian) followed by `count` message blocks, each
//! a u16 length and that many bytes. Count 0 is a heartbeat and count `0xFFFF` the end of the
//! session; both carry the next expected sequence number and no blocks.
//!
//! [`MoldRecovery`] is the sequencer, and live traffic and capture replay both drive it, so
//! one set of rules decides what is delivered, skipped as a duplicate, or declared lost.
//! Live, it requests each gap from the retransmission server (timeouts from measured
//! reply latency, retries with jittered backoff under a retry budget, requests in flight
//! under an adaptive limit: see `crate::resilience`) and declares it lost after its
//! retries or its deadline; replaying a capture, retransmission is off
//! ([`RecoveryConfig::retransmission`]): a gap waits while later packets fit the reorder
//! store (so a capture of reordered packets still replays in order) and is declared lost,
//! with its exact range, when the store would overflow or at the end of input
//! ([`MoldRecovery::end_of_input`]).
//!
//! # The blank-session rule
//!
//! A packet whose session is blank (all ten bytes zero or space) **and** whose sequence
//! number is 0 is *unsequenced*: sanitized captures zero both fields, and no real session
//! numbers a message 0. Its messages are delivered at once, in arrival order, with no
//! sequence number (`seq: None`), and the sequencer's state is left alone: such a packet
//! neither starts nor changes a session, opens no gap, and is never a duplicate. The rule
//! is the same live and in replay. Any other packet is sequenced, including a blank name
//! with a non-zero sequence, which is an ordinary (if odd) session name.
//!
//! ```
//! use std::time::Duration;
//! use ticklane_feed::moldudp64::*;
//!
//! let session = Session::new(b"000010059B").unwrap();
//! let mut buf = [0u8; 64];
//! let mut w = PacketWriter::new(&mut buf, session, 7).unwrap();
//! w.push(b"first").unwrap();
//! w.push(b"second").unwrap();
//! let len = w.finish();
//!
//! #[derive(Default)]
//! struct Got(Vec<(Option<u64>, Vec<u8>)>);
//! impl RecoverySink for Got {
//!     fn message(&mut self, m: Delivered<'_>) { self.0.push((m.seq, m.bytes.to_vec())) }
//!     fn lost(&mut self, _: GapRange, _: LossReason) {}
//!     fn request(&mut self, _: RetransmitRequest) {}
//! }
//! let packet = Packet::parse(&buf[..len]).unwrap();
//! let mut seq = MoldRecovery::new(RecoveryConfig::default());
//! let mut got = Got::default();
//! seq.on_packet(&packet, Duration::ZERO, &mut got);
//! assert_eq!(got.0, [(Some(7), b"first".to_vec()), (Some(8), b"second".to_vec())]);
//! assert_eq!(seq.next_expected(), Some(9));
//! ```

mod lost;
mod packet;
mod recovery;
mod recovery_times;
mod request;
mod writer;

pub use lost::{LossReason, LostRange, LostRanges};
pub use packet::{
    Messages, MoldError, Packet, PacketKind, Session, END_OF_SESSION_COUNT, HEADER_LEN,
    HEARTBEAT_COUNT, MAX_MESSAGES, SESSION_LEN,
};
pub use recovery::{
    Delivered, MoldRecovery, Origin, RecoveryConfig, RecoveryCounts, RecoverySink,
    DEFAULT_STORE_PACKETS,
};
pub use request::{GapRange, RetransmitRequest, RetransmitRequests};
pub use writer::{encode_end_of_session, encode_heartbeat, EncodeError, PacketWriter};

/// Packets laid out for the tests of every file in this module.
#[cfg(test)]
pub(crate) mod test_packets {
    use super::*;

    pub(crate) fn session(name: &[u8]) -> Session {
        Session::new(name).expect("short name")
    }

    pub(crate) fn packet_bytes(s: Session, seq: u64, messages: &[&[u8]]) -> Vec<u8> {
        let mut buf = vec![0u8; 2048];
        let mut w = PacketWriter::new(&mut buf, s, seq).expect("header fits");
        for m in messages {
            w.push(m).expect("fits");
        }
        let len = w.finish();
        buf.truncate(len);
        buf
    }

    pub(crate) fn heartbeat(s: Session, next: u64) -> Vec<u8> {
        let mut buf = vec![0u8; HEADER_LEN];
        encode_heartbeat(&mut buf, s, next).expect("fits");
        buf
    }
}
