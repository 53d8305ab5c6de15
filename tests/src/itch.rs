//! ITCH 5.0 messages laid out by hand from the specification, for packets and captures that
//! need a valid message to carry.

#![forbid(unsafe_code)]

/// A System Event (`S`, 12 bytes: type, stock locate 0 (u16), tracking number 0 (u16),
/// timestamp 1 ns (u48), event code `O`: start of messages), all big-endian.
pub const START_OF_MESSAGES: [u8; 12] = [b'S', 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, b'O'];
