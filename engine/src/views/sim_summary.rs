//! What the exchange simulator (`ticklane sim`) sent, on one line per protocol.

use std::io::{self, Write};

use ticklane_sim::{SimCounts, SoupSimCounts};

use crate::digit_groups::group;

/// The MoldUDP64 stream: messages, packets, the faults injected, the retransmissions.
///
/// # Errors
///
/// Whatever `out` returns.
pub fn write_mold_sim_stats(out: &mut impl Write, s: &SimCounts) -> io::Result<()> {
    writeln!(
        out,
        "MoldUDP64: {} messages in {} packets; dropped {}, duplicated {}, reordered {}; resent {} on {} requests",
        group(s.messages_sent),
        group(s.packets_sent),
        s.packets_dropped,
        s.packets_duplicated,
        s.packets_reordered,
        group(s.messages_retransmitted),
        s.retransmit_requests
    )?;
    if s.b_packets_sent > 0 || s.b_packets_dropped > 0 {
        writeln!(
            out,
            "MoldUDP64 line B: {} messages in {} packets; dropped {}",
            group(s.b_messages_sent),
            group(s.b_packets_sent),
            s.b_packets_dropped
        )?;
    }
    Ok(())
}

/// The SoupBinTCP server: logins, messages, disconnects.
///
/// # Errors
///
/// Whatever `out` returns.
pub fn write_soup_sim_stats(out: &mut impl Write, s: &SoupSimCounts) -> io::Result<()> {
    writeln!(
        out,
        "SoupBinTCP: {} logins, {} messages sent, {} disconnects",
        s.logins,
        group(s.messages_sent),
        s.disconnects
    )
}

/// The GLIMPSE server: snapshots served (one a login) and the snapshot messages sent.
///
/// # Errors
///
/// Whatever `out` returns.
pub fn write_glimpse_sim_stats(out: &mut impl Write, s: &SoupSimCounts) -> io::Result<()> {
    writeln!(
        out,
        "GLIMPSE: {} snapshots, {} messages sent, {} logins refused",
        s.logins,
        group(s.messages_sent),
        s.rejected
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mold_and_soup_lines() {
        let mold = SimCounts {
            messages_sent: 150_000,
            packets_sent: 4_321,
            packets_dropped: 43,
            messages_retransmitted: 1_502,
            retransmit_requests: 40,
            ..SimCounts::default()
        };
        let mut out = Vec::new();
        write_mold_sim_stats(&mut out, &mold).expect("Vec");
        assert_eq!(
            String::from_utf8(out).expect("UTF-8"),
            "MoldUDP64: 150,000 messages in 4,321 packets; dropped 43, duplicated 0, reordered 0; resent 1,502 on 40 requests\n"
        );
        let soup = SoupSimCounts {
            logins: 2,
            messages_sent: 1_000,
            disconnects: 1,
            ..SoupSimCounts::default()
        };
        let mut out = Vec::new();
        write_soup_sim_stats(&mut out, &soup).expect("Vec");
        assert_eq!(
            String::from_utf8(out).expect("UTF-8"),
            "SoupBinTCP: 2 logins, 1,000 messages sent, 1 disconnects\n"
        );
    }
}
