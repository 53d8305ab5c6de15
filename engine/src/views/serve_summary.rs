//! The subscriber server's line in the run summary.

use std::io::{self, Write};

use crate::digit_groups::group;
use crate::serve::ServeCounts;

/// Writes the server's counters: clients accepted and rejected, cut loose and shed, updates
/// conflated, requests served and dropped for budget, bytes sent.
///
/// # Errors
///
/// If `out` fails.
pub fn write_serve_counts(out: &mut impl Write, c: &ServeCounts) -> io::Result<()> {
    writeln!(
        out,
        "subscribers: {} accepted, {} rejected, {} cut loose, {} shed, {} updates conflated, {} requests ({} dropped: budget ran out), {} bytes sent",
        group(c.accepted),
        group(c.rejected),
        group(c.cut_loose),
        group(c.shed),
        group(c.conflated),
        group(c.requests),
        group(c.expired_requests),
        group(c.bytes)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_every_counter() {
        let mut out = Vec::new();
        let counts = ServeCounts {
            accepted: 3,
            rejected: 1,
            cut_loose: 1,
            conflated: 12_345,
            requests: 7,
            expired_requests: 2,
            bytes: 1_000_000,
            ..ServeCounts::default()
        };
        write_serve_counts(&mut out, &counts).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "subscribers: 3 accepted, 1 rejected, 1 cut loose, 0 shed, 12,345 updates conflated, 7 requests (2 dropped: budget ran out), 1,000,000 bytes sent\n"
        );
    }
}
