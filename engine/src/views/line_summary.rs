//! The closing summary of a live line (`ticklane run`, the live demo): what the reader
//! received, recovered and lost, why it ended, the stage latencies and overload control.

use std::io::{self, Write};

use crate::overload::OverloadCounters;
use crate::pipeline::{MoldSourceReport, Percentiles, SoupSourceReport};

use crate::digit_groups::group;

/// One latency line (`  name   p50 … max (n=…)`); nothing when nothing was recorded.
///
/// # Errors
///
/// Whatever `out` returns.
pub fn write_latency(out: &mut impl Write, name: &str, p: &Percentiles) -> io::Result<()> {
    if p.count > 0 {
        writeln!(out, "  {name:<22} {}", p.to_line())?;
    }
    Ok(())
}

/// The overload counters on one line, when there was a snapshot to publish into.
///
/// # Errors
///
/// Whatever `out` returns.
pub fn write_overload(out: &mut impl Write, counters: Option<&OverloadCounters>) -> io::Result<()> {
    if let Some(c) = counters {
        writeln!(out, "  overload     {}", c.to_text())?;
    }
    Ok(())
}

/// A MoldUDP64 reader's counters, each range declared lost, and why it ended.
///
/// # Errors
///
/// Whatever `out` returns.
pub fn write_mold_source(out: &mut impl Write, r: &MoldSourceReport) -> io::Result<()> {
    let s = &r.recovery;
    writeln!(
        out,
        "  packets      {:>14}   gaps {}   recovered {}   lost {}   duplicates {}   requests {}",
        group(s.packets),
        s.gaps,
        group(s.recovered),
        group(s.messages_lost),
        group(s.duplicates),
        s.requests_sent
    )?;
    if r.recv_errors.total() > 0 || r.request_send_errors.total() > 0 {
        writeln!(
            out,
            "  recv errors  {}   request send errors {}",
            r.recv_errors, r.request_send_errors
        )?;
    }
    if r.bad_packets > 0 {
        writeln!(out, "  not MoldUDP64 {:>13}", group(r.bad_packets))?;
    }
    for gap in &r.lost {
        writeln!(
            out,
            "  LOST         sequences {} ..= {}",
            gap.first, gap.last
        )?;
    }
    writeln!(out, "  ended        {}", r.end)
}

/// A SoupBinTCP reader's connections, and why it ended.
///
/// # Errors
///
/// Whatever `out` returns.
pub fn write_soup_source(out: &mut impl Write, r: &SoupSourceReport) -> io::Result<()> {
    writeln!(out, "  connections  {:>14}", r.connections)?;
    if r.drops.by_reason.total() > 0 {
        writeln!(out, "  drops        {}", r.drops)?;
    }
    writeln!(out, "  ended        {}", r.end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::SourceEnd;
    use ticklane_feed::moldudp64::{GapRange, RecoveryStats};

    fn text(write: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> String {
        let mut out = Vec::new();
        write(&mut out).expect("Vec");
        String::from_utf8(out).expect("UTF-8")
    }

    #[test]
    fn a_lossy_mold_line_names_each_lost_range() {
        let report = MoldSourceReport {
            recovery: RecoveryStats {
                packets: 12_345,
                gaps: 3,
                recovered: 1_000,
                messages_lost: 7,
                duplicates: 2,
                requests_sent: 4,
                ..RecoveryStats::default()
            },
            messages: 99_000,
            lost: vec![
                GapRange {
                    first: 10,
                    last: 12,
                },
                GapRange {
                    first: 50,
                    last: 53,
                },
            ],
            bad_packets: 0,
            recv_errors: Default::default(),
            request_send_errors: Default::default(),
            end: SourceEnd::EndOfSession,
        };
        assert_eq!(
            text(|out| write_mold_source(out, &report)),
            "  packets              12,345   gaps 3   recovered 1,000   lost 7   duplicates 2   requests 4\n\
             \x20 LOST         sequences 10 ..= 12\n\
             \x20 LOST         sequences 50 ..= 53\n\
             \x20 ended        end of session\n"
        );
    }

    #[test]
    fn soup_latency_and_overload() {
        let report = SoupSourceReport {
            messages: 5,
            connections: 2,
            drops: Default::default(),
            end: SourceEnd::Stopped,
        };
        assert_eq!(
            text(|out| write_soup_source(out, &report)),
            "  connections               2\n  ended        stopped\n"
        );
        assert_eq!(
            text(|out| write_latency(out, "receive -> applied", &Percentiles::default())),
            "",
            "an empty histogram prints nothing"
        );
        let p = Percentiles {
            count: 3,
            p50: 850,
            ..Percentiles::default()
        };
        let line = text(|out| write_latency(out, "receive -> applied", &p));
        assert!(
            line.starts_with("  receive -> applied     p50 850 ns"),
            "{line}"
        );
        assert_eq!(text(|out| write_overload(out, None)), "");
        let c = OverloadCounters::default();
        assert!(text(|out| write_overload(out, Some(&c))).starts_with("  overload     published=0"));
    }
}
