//! SoupBinTCP 4.1 frames laid out by hand from the specification: a u16 big-endian length
//! covering the packet type byte and the payload, then both.

#![forbid(unsafe_code)]

/// A frame of `packet_type` carrying `payload`.
pub fn frame(packet_type: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = ((payload.len() + 1) as u16).to_be_bytes().to_vec();
    f.push(packet_type);
    f.extend_from_slice(payload);
    f
}
