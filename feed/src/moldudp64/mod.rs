//! MoldUDP64 1.0: packet views and encoders, retransmission requests, and the sans-I/O
//! session sequencer that decides which messages to deliver.
//!
//! A packet is a 20-byte header (session: 10 ASCII bytes; sequence number of its first
//! message: u64; message count: u16, all big-endian) followed by `count` message blocks, each
//! a u16 length and that many bytes. Count 0 is a heartbeat and count `0xFFFF` the end of the
//! session; both carry the next expected sequence number and no blocks.
//!
//! [`MoldSession`] is fed packets, from a socket or a capture alike, and answers for each one
//! which of its messages are new and which were already applied, and whether a gap opened.
//! A gap is reported as the exact inclusive range a retransmission request needs
//! ([`GapRange::requests`]); sending requests and waiting for replies is left to the caller.
//! That is right for replay. [`MoldRecovery`] is the live counterpart: it holds later
//! packets in a bounded reorder store, requests each gap, delivers strictly in order once
//! the gap fills, and declares a gap lost (with its exact range) only after its retries.
//!
//! ```
//! use ticklane_feed::moldudp64::{MoldSession, Packet, PacketWriter, Session};
//!
//! let session = Session::new(b"000010059B").unwrap();
//! let mut buf = [0u8; 64];
//! let mut w = PacketWriter::new(&mut buf, session, 7).unwrap();
//! w.push(b"first").unwrap();
//! w.push(b"second").unwrap();
//! let len = w.finish();
//!
//! let packet = Packet::parse(&buf[..len]).unwrap();
//! let mut seq = MoldSession::new();
//! let outcome = seq.on_packet(&packet);
//! let delivered: Vec<_> = outcome.sequenced(&packet).map(|m| (m.seq, m.bytes)).collect();
//! assert_eq!(delivered, [(Some(7), &b"first"[..]), (Some(8), &b"second"[..])]);
//! assert_eq!(seq.next_expected(), Some(9));
//! ```

mod packet;
mod recovery;
mod request;
mod sequencer;
mod writer;

pub use packet::{
    Messages, MoldError, Packet, PacketKind, Session, END_OF_SESSION_COUNT, HEADER_LEN,
    HEARTBEAT_COUNT, MAX_MESSAGES, SESSION_LEN,
};
pub use recovery::{MoldRecovery, RecoveryConfig, RecoverySink, RecoveryStats};
pub use request::{GapRange, RetransmitRequest, RetransmitRequests};
pub use sequencer::{
    Decision, MoldSession, PacketOutcome, Sequenced, SequencedMessage, SessionEvent, SessionStats,
    DEFAULT_GAP_CAPACITY,
};
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
