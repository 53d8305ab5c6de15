//! Retransmission requests and the gap ranges they cover.

use core::fmt;

use super::packet::{read_header, MoldError, Session, HEADER_LEN, SESSION_LEN};

/// A request to the retransmission server: `count` messages from `first_seq` on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetransmitRequest {
    /// The session whose messages are wanted.
    pub session: Session,
    /// The first sequence number wanted.
    pub first_seq: u64,
    /// How many messages are wanted.
    pub count: u16,
}

impl RetransmitRequest {
    /// Bytes on the wire: the same layout as a packet header.
    pub const LEN: usize = HEADER_LEN;

    /// The 20 bytes to send.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut out = [0u8; HEADER_LEN];
        out[..SESSION_LEN].copy_from_slice(&self.session.0);
        out[10..18].copy_from_slice(&self.first_seq.to_be_bytes());
        out[18..20].copy_from_slice(&self.count.to_be_bytes());
        out
    }

    /// Reads a request (as a retransmission server would).
    ///
    /// # Errors
    ///
    /// [`MoldError::RequestLength`] unless `bytes` is exactly 20 bytes long.
    pub fn decode(bytes: &[u8]) -> Result<Self, MoldError> {
        if bytes.len() != HEADER_LEN {
            return Err(MoldError::RequestLength { have: bytes.len() });
        }
        let (session, first_seq, count) =
            read_header(bytes).ok_or(MoldError::RequestLength { have: bytes.len() })?;
        Ok(RetransmitRequest {
            session,
            first_seq,
            count,
        })
    }
}

/// Missing sequence numbers `first ..= last` (never empty: `first <= last`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GapRange {
    /// The first sequence number missing.
    pub first: u64,
    /// The last sequence number missing.
    pub last: u64,
}

impl GapRange {
    /// How many messages are missing.
    pub fn len(&self) -> u64 {
        // Saturating: the fields are public, so an inverted or full-width range must not panic.
        self.last.saturating_sub(self.first).saturating_add(1)
    }

    /// Always false: a gap misses at least one message. Present for clippy's
    /// `len_without_is_empty`.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The retransmission requests that cover the gap, each asking for at most
    /// `max_per_request` messages (at least 1).
    pub fn requests(&self, session: Session, max_per_request: u16) -> RetransmitRequests {
        RetransmitRequests {
            session,
            next: self.first,
            last: self.last,
            max: max_per_request.max(1),
            done: self.first > self.last,
        }
    }
}

impl fmt::Display for GapRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..={}", self.first, self.last)
    }
}

/// The requests that cover one [`GapRange`], in order; see [`GapRange::requests`].
#[derive(Clone, Debug)]
pub struct RetransmitRequests {
    session: Session,
    next: u64,
    last: u64,
    max: u16,
    done: bool,
}

impl Iterator for RetransmitRequests {
    type Item = RetransmitRequest;

    fn next(&mut self) -> Option<RetransmitRequest> {
        if self.done {
            return None;
        }
        let left = self.last - self.next + 1;
        let count = u16::try_from(left.min(u64::from(self.max))).unwrap_or(self.max);
        let request = RetransmitRequest {
            session: self.session,
            first_seq: self.next,
            count,
        };
        match self.next.checked_add(u64::from(count)) {
            Some(next) if next <= self.last => self.next = next,
            _ => self.done = true,
        }
        Some(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::moldudp64::test_packets::session;

    #[test]
    fn retransmit_request_round_trips() {
        let r = RetransmitRequest {
            session: session(b"000010059B"),
            first_seq: 14_764_497,
            count: 3,
        };
        let bytes = r.to_bytes();
        assert_eq!(RetransmitRequest::decode(&bytes), Ok(r));
        assert_eq!(
            RetransmitRequest::decode(&bytes[..19]),
            Err(MoldError::RequestLength { have: 19 })
        );
    }

    #[test]
    fn gap_splits_into_requests() {
        let s = session(b"S");
        let gap = GapRange {
            first: 10,
            last: 24,
        };
        let reqs: Vec<_> = gap.requests(s, 6).map(|r| (r.first_seq, r.count)).collect();
        assert_eq!(reqs, [(10, 6), (16, 6), (22, 3)]);
        let top = GapRange {
            first: u64::MAX - 1,
            last: u64::MAX,
        };
        let reqs: Vec<_> = top.requests(s, 0).map(|r| r.first_seq).collect();
        assert_eq!(reqs, [u64::MAX - 1, u64::MAX]);
    }
}
