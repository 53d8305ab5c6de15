//! GLIMPSE 5.0: Nasdaq's point-in-time snapshot of TotalView-ITCH 5.0, sent over SoupBinTCP
//! to a client that logs in for sequence 1, so that a feed handler started mid-day builds
//! its books from the current state instead of asking a retransmission server for the
//! whole morning. Sans-I/O: the payloads of the session's sequenced packets go in, one at a
//! time; what to apply, and where the live stream takes over, come out.
//!
//! # The facts this relies on (GLIMPSE 5.0 specification, section 1)
//!
//! - Every snapshot message is an ITCH 5.0 message in a sequenced packet of its own: stock
//!   directory `R`, trading action `H`, Reg SHO `Y`, system event `S`, operational halt `h`,
//!   retail interest `N`, and every live displayable order as an add `A` or `F` carrying the
//!   shares it still has open, under its live order reference. No execution, cancel,
//!   delete, replace or trade is part of a snapshot: one here is a contract violation,
//!   counted and not applied.
//! - The order of the messages before the end is not specified, so none is assumed. The
//!   books need none: a level keeps its shares and order count, not queue positions.
//! - The snapshot ends with End of Snapshot, type `G`, 21 bytes: the type, then a 20-byte
//!   ASCII sequence number (no locate, tracking number or timestamp). In the
//!   specification's words, firms "should begin to process real-time TotalView-ITCH
//!   messages beginning with the sequence number stated in this GLIMPSE snapshot message".
//!   So `G`'s number is the **first live message to apply**; every live message below it
//!   is already in the snapshot. The field's padding is not specified: spaces and NULs on
//!   either side are trimmed, and leading zeros accepted.
//! - Stock locates are Nasdaq's day's locates on the symbol messages, and 0 on those that
//!   name no stock (`S`); every message is taken with the locate it carries. Some venues'
//!   definitions send the symbol messages and the adds at locate 0 too, naming each stock
//!   by symbol only. Those wait in the books by symbol (and each order by its reference)
//!   until a live message names the locate: an add carries its stock and locate, an
//!   execution, cancel, delete or replace of a waiting order its locate (the book crate's
//!   `parked` module). A stock the live stream never names stays out of the books, counted
//!   and said.

mod load;

pub use load::{SnapshotItem, SnapshotLoad, SnapshotViolation};

/// The End of Snapshot message's type.
pub const END_OF_SNAPSHOT: u8 = b'G';
/// The End of Snapshot message's length: the type and a 20-byte ASCII sequence number.
pub const END_OF_SNAPSHOT_LEN: usize = 21;

/// The End of Snapshot message of a snapshot whose first live message to apply is
/// `next_sequence`: the number right-justified, zero-filled.
pub fn end_of_snapshot(next_sequence: u64) -> [u8; END_OF_SNAPSHOT_LEN] {
    let mut message = [b'0'; END_OF_SNAPSHOT_LEN];
    message[0] = END_OF_SNAPSHOT;
    let digits = next_sequence.to_string();
    message[END_OF_SNAPSHOT_LEN - digits.len()..].copy_from_slice(digits.as_bytes());
    message
}

/// The first live sequence an End of Snapshot message names, or `None` if `message` is
/// not a well-formed one: the wrong length, or a field that is not a number from 1 up once
/// spaces and NULs are trimmed from both ends (MoldUDP64 sequences start at 1).
pub fn parse_end_of_snapshot(message: &[u8]) -> Option<u64> {
    if message.len() != END_OF_SNAPSHOT_LEN || message[0] != END_OF_SNAPSHOT {
        return None;
    }
    let field = &message[1..];
    let is_pad = |b: &u8| *b == b' ' || *b == 0;
    let start = field.iter().position(|b| !is_pad(b))?;
    let end = field.iter().rposition(|b| !is_pad(b))? + 1;
    let digits = &field[start..end];
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits)
        .ok()?
        .parse()
        .ok()
        .filter(|&n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn end_of_snapshot_round_trips_and_tolerates_padding() {
        for n in [1, 42, 1_000_001, u64::MAX] {
            assert_eq!(parse_end_of_snapshot(&end_of_snapshot(n)), Some(n));
        }
        let mut spaced = *b"G                 123";
        assert_eq!(parse_end_of_snapshot(&spaced), Some(123));
        spaced = *b"G123                 ";
        assert_eq!(parse_end_of_snapshot(&spaced), Some(123));
        let mut nul = [0u8; END_OF_SNAPSHOT_LEN];
        nul[0] = b'G';
        nul[1..4].copy_from_slice(b"977");
        assert_eq!(parse_end_of_snapshot(&nul), Some(977));
    }

    #[test]
    fn a_malformed_end_of_snapshot_names_no_sequence() {
        assert_eq!(parse_end_of_snapshot(&end_of_snapshot(0)), None);
        assert_eq!(parse_end_of_snapshot(b"G                    "), None);
        assert_eq!(parse_end_of_snapshot(b"G0000000000000000012x"), None);
        assert_eq!(parse_end_of_snapshot(b"G 12 34              "), None);
        assert_eq!(parse_end_of_snapshot(b"G99999999999999999999"), None);
        assert_eq!(parse_end_of_snapshot(b"G123"), None);
        assert_eq!(parse_end_of_snapshot(b"H00000000000000000123"), None);
    }
}
