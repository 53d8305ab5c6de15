//! The closing summary of a live line (`ticklane run`, the live demo): what the reader
//! received, recovered and lost, why it ended, the stage latencies and overload control.
//!
//! # Reading it
//!
//! - **packets**: `gaps` counts the gaps still missing once the A/B arbitration wait (or,
//!   on one line, the wait for a reordered packet) was over; a gap filled within the wait is
//!   no gap. `recovered` counts the messages that filled a counted gap, whatever carried
//!   them (with a full store, that includes messages it let go and asked for again); on an
//!   A/B line it says how many came in retransmission replies and how many as the other
//!   line's late copy. Each gap ends filled (`N gaps filled`), merged into another gap
//!   before either ended (filled or lost with it), or given up (declared lost in whole or in
//!   part; `lost` counts its messages): at the end those three add up to `gaps`.
//! - **A/B lines** (`views::ab_lines`): per line, packets, messages carried, messages won,
//!   its own gaps, its longest and current silence, and how often it was silent past the
//!   stale threshold while the other flowed (reported, not `STALE`: the books stay live);
//!   `won A + won B + retransmitted = delivered`. Once the session is over the reader reads
//!   on, for at most the arbitration wait, until both lines have sent their end of session,
//!   so the trailing line is counted whole.
//! - **store**: a full reorder store declares nothing lost; its packets farthest ahead are
//!   let go and asked for again (`store ... let go and asked for again`).
//! - **joined at**: the sequence the line started at (`feed.start_sequence`); with the
//!   default `1`, a late join is a gap from 1, recovered or declared.
//! - **OVERRUN**: datagrams the kernel dropped because the socket's receive buffer was full
//!   (`ticklane_feed::net::ReceiveOverruns`), with when; the gaps they leave are recovered or
//!   declared like any other.
//! - **DECLARED LOST N messages in K ranges**: every range with its reason when there are at
//!   most 8 (the first and last three, and a count of the rest, past that). A range is
//!   declared lost only when its last retry went unanswered, its gap deadline passed (while
//!   asked for, or while the breaker or the retry budget refused), there is no
//!   retransmission server, a packet behind it was too long for a store slot, the line
//!   ended, or a new session began. Whatever way a line ends, the packets held behind a gap
//!   are delivered and the open gaps declared, so the summary accounts for every sequence up
//!   to the highest seen and the books hold everything received, flagged `MAYBE_BAD`. The
//!   line then exits 3.
//!
//! A try the retransmission server answered in part (a server sends so many messages a
//! reply) is not a failure: once its replies stop for a reply timeout the rest is asked for
//! at once as a *continuation*, with no backoff and no retry budget, so a gap of any size is
//! recovered while the server answers. One try sends at most 64 request datagrams, so a
//! header announcing a sequence near 2^64 cannot make the line send forever; the rest is
//! asked for on later tries.

use std::io::{self, Write};

use crate::overload::OverloadCounts;
use ticklane_feed::moldudp64::{LostRange, LostRanges};

use crate::pipeline::{
    human_ns, GlimpseReport, KernelOverruns, MoldSourceReport, Percentiles, SoupSourceReport,
};

use crate::digit_groups::group;

/// Declared-lost ranges listed one by one when there are at most this many.
const LOST_LISTED_IN_FULL: usize = 8;
/// When there are more, this many from each end are listed, and the rest counted.
const LOST_LISTED_AT_EACH_END: usize = 3;

pub use crate::config::NO_REQUEST_SERVER;

/// Percentiles on one line: `p50 … p90 … p99 … p99.9 … p99.99 … max …  (n=…)`, in units a
/// person reads.
pub fn latency_line(p: &Percentiles) -> String {
    format!(
        "p50 {}  p90 {}  p99 {}  p99.9 {}  p99.99 {}  max {}  (n={})",
        human_ns(p.p50),
        human_ns(p.p90),
        human_ns(p.p99),
        human_ns(p.p999),
        human_ns(p.p9999),
        human_ns(p.max),
        p.count
    )
}

/// The overload counters as `key=value` pairs on one line.
pub fn overload_text(c: &OverloadCounts) -> String {
    let pairs: Vec<String> = c.fields().iter().map(|(k, v)| format!("{k}={v}")).collect();
    pairs.join(" ")
}

/// One latency line (`  name   p50 … max (n=…)`); nothing when nothing was recorded.
///
/// # Errors
///
/// Whatever `out` returns.
pub fn write_latency(out: &mut impl Write, name: &str, p: &Percentiles) -> io::Result<()> {
    if p.count > 0 {
        writeln!(out, "  {name:<22} {}", latency_line(p))?;
    }
    Ok(())
}

/// The overload counters on one line, when there was a snapshot to publish into.
///
/// # Errors
///
/// Whatever `out` returns.
pub fn write_overload(out: &mut impl Write, counters: Option<&OverloadCounts>) -> io::Result<()> {
    if let Some(c) = counters {
        writeln!(out, "  overload     {}", overload_text(c))?;
    }
    Ok(())
}

/// How a line started from a GLIMPSE snapshot: where the live stream took over, what the
/// snapshot held, how long it took, and what was held or refused meanwhile.
///
/// # Errors
///
/// Whatever `out` returns.
pub fn write_snapshot_start(out: &mut impl Write, g: &GlimpseReport) -> io::Result<()> {
    let [connect, refused, cut, stalled, malformed] = g.failures;
    match g.next_sequence {
        Some(next) => writeln!(
            out,
            "  snapshot     GLIMPSE to sequence {}: {} messages in {} ({} attempts), {} live \
             packets held, {} not held",
            group(next - 1),
            group(g.messages),
            human_ns(g.load_ns),
            g.attempts,
            group(g.held_packets),
            group(g.unheld_packets)
        )?,
        None => writeln!(
            out,
            "  snapshot     GLIMPSE: none loaded ({} attempts)",
            g.attempts
        )?,
    }
    if g.rebuilds > 0 || g.rebuild_failures > 0 {
        writeln!(
            out,
            "               rebuilt from a snapshot {} times for gaps past the retransmission \
             server, {} rebuilds failed",
            g.rebuilds, g.rebuild_failures
        )?;
    }
    if g.failures.iter().sum::<u64>() > 0 || g.violations > 0 {
        writeln!(
            out,
            "               failed: connect {connect}, refused {refused}, cut {cut}, stalled \
             {stalled}, malformed or missing end {malformed}; violations {}",
            g.violations
        )?;
    }
    Ok(())
}

/// A MoldUDP64 reader's counters, each range declared lost, and why it ended.
///
/// # Errors
///
/// Whatever `out` returns.
pub fn write_mold_source(out: &mut impl Write, r: &MoldSourceReport) -> io::Result<()> {
    if let Some(g) = &r.glimpse {
        write_snapshot_start(out, g)?;
    }
    let s = &r.recovery;
    // `recovered` counts what filled a gap whatever carried it; on an A/B line the
    // arbitration counts by carrier, so the part that came from the lines is said here
    // rather than left as a disagreement with its `retransmitted`.
    let carriers = match &r.lines {
        Some(l) => format!(
            " ({} retransmitted, {} from the lines' late copies)",
            group(l.retransmitted_won),
            group(s.recovered.saturating_sub(l.retransmitted_won))
        ),
        None => String::new(),
    };
    writeln!(
        out,
        "  packets      {:>14}   gaps {}   recovered {}{carriers}   lost {}   duplicates {}   \
         requests {}",
        group(s.packets),
        s.gaps,
        group(s.recovered),
        group(s.messages_lost),
        group(s.duplicates),
        s.requests_sent
    )?;
    if s.gaps_recovered > 0 {
        writeln!(
            out,
            "  recovery     {} gaps filled in p50 {:.1} ms, max {:.1} ms (detection to fill)",
            group(s.gaps_recovered),
            s.recover_p50.as_secs_f64() * 1e3,
            s.recover_max.as_secs_f64() * 1e3
        )?;
    }
    if s.gaps_merged > 0 || s.gaps_given_up > 0 || s.gaps_rebuilt > 0 {
        // Every gap is filled, merged into another, given up, rebuilt from a snapshot, or
        // still open: say the rest, so that the counts add up to `gaps`.
        writeln!(
            out,
            "               {} gaps merged into another (filled or lost with it), {} given up, \
             {} filled by a snapshot",
            group(s.gaps_merged),
            group(s.gaps_given_up),
            group(s.gaps_rebuilt)
        )?;
    }
    if s.packets_deferred > 0 {
        writeln!(
            out,
            "  store        full ({} packets): {} packets ({} messages) let go and asked for again",
            group(s.store_capacity as u64),
            group(s.packets_deferred),
            group(s.messages_deferred)
        )?;
    }
    if r.recv_errors.total() > 0 || r.request_send_errors.total() > 0 {
        writeln!(
            out,
            "  recv errors  {}   request send errors {}",
            r.recv_errors, r.request_send_errors
        )?;
    }
    if let Some(lines) = &r.lines {
        super::write_ab_lines(out, lines)?;
    }
    if r.bad_packets > 0 {
        writeln!(out, "  not MoldUDP64 {:>13}", group(r.bad_packets))?;
    }
    if let Some(at) = s.joined_at {
        writeln!(out, "  joined at    sequence {at}")?;
    }
    if r.ignored_packets > 0 {
        writeln!(
            out,
            "  isolated     {} packets ignored",
            group(r.ignored_packets)
        )?;
    }
    write_kernel_overruns(out, r.kernel_overruns.as_ref())?;
    if let Some(b) = &r.kernel_overruns_b {
        write_overrun(out, b, " on line B")?;
    }
    write_lost_ranges(out, &r.lost)?;
    writeln!(out, "  ended        {}", r.end)
}

/// The kernel's receive-buffer drops on the data socket: nothing when there were none,
/// `unknown` where the kernel does not report them, else how many, in how many one-second
/// checks, from when, and what that means.
///
/// # Errors
///
/// Whatever `out` returns.
pub fn write_kernel_overruns(
    out: &mut impl Write,
    overruns: Option<&KernelOverruns>,
) -> io::Result<()> {
    match overruns {
        None => writeln!(
            out,
            "  overruns     unknown (the kernel does not report drops here)"
        ),
        Some(o) => write_overrun(out, o, ""),
    }
}

/// One socket's drops (`on` names its line, or is empty); nothing when there were none.
fn write_overrun(out: &mut impl Write, o: &KernelOverruns, on: &str) -> io::Result<()> {
    if o.dropped == 0 {
        return Ok(());
    }
    writeln!(
        out,
        "  OVERRUN      the kernel dropped {} datagrams{on} (receive buffer full) in {} \
         one-second checks from {:.3} s: the reader could not keep up; their gaps were \
         recovered or declared lost",
        group(o.dropped),
        o.grew,
        o.first_grew_ns as f64 / 1e9
    )
}

/// Every range declared lost, compactly: how many messages in how many ranges, then each
/// range when there are few; when there are many, the first and last few and a line that
/// says how many ranges and messages lie between them, unlisted. Nothing when nothing was
/// lost.
///
/// # Errors
///
/// Whatever `out` returns.
pub fn write_lost_ranges(out: &mut impl Write, lost: &LostRanges) -> io::Result<()> {
    let ranges = lost.ranges();
    if ranges.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "  DECLARED LOST {} messages in {} ranges",
        group(lost.messages()),
        group(ranges.len() as u64)
    )?;
    let write_range = |out: &mut dyn Write, g: &LostRange| {
        writeln!(
            out,
            "  LOST         sequences {} ..= {} ({}): {}",
            g.range.first,
            g.range.last,
            group(g.range.len()),
            g.reason
        )
    };
    if ranges.len() <= LOST_LISTED_IN_FULL {
        for g in ranges {
            write_range(out, g)?;
        }
        return Ok(());
    }
    let (head, rest) = ranges.split_at(LOST_LISTED_AT_EACH_END);
    let (middle, tail) = rest.split_at(rest.len() - LOST_LISTED_AT_EACH_END);
    for g in head {
        write_range(out, g)?;
    }
    let unlisted: u64 = middle.iter().map(|g| g.range.len()).sum();
    writeln!(
        out,
        "  LOST         ... {} more ranges ({} messages) not listed ...",
        group(middle.len() as u64),
        group(unlisted)
    )?;
    for g in tail {
        write_range(out, g)?;
    }
    Ok(())
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
    use ticklane_feed::moldudp64::{GapRange, LossReason, RecoveryCounts};

    #[test]
    fn a_snapshot_start_says_where_the_live_stream_took_over_and_what_failed() {
        let mut g = GlimpseReport {
            attempts: 2,
            next_sequence: Some(250_001),
            messages: 41_234,
            failures: [0, 0, 1, 0, 0],
            held_packets: 900,
            load_ns: 35_000_000,
            ..GlimpseReport::default()
        };
        let mut out = Vec::new();
        write_snapshot_start(&mut out, &g).expect("Vec");
        assert_eq!(
            String::from_utf8(out).expect("UTF-8"),
            "  snapshot     GLIMPSE to sequence 250,000: 41,234 messages in 35.00 ms (2 \
             attempts), 900 live packets held, 0 not held\n               failed: connect 0, \
             refused 0, cut 1, stalled 0, malformed or missing end 0; violations 0\n"
        );
        g.next_sequence = None;
        let mut out = Vec::new();
        write_snapshot_start(&mut out, &g).expect("Vec");
        assert!(String::from_utf8(out)
            .expect("UTF-8")
            .starts_with("  snapshot     GLIMPSE: none loaded (2 attempts)\n"));
    }

    fn lost(ranges: &[(u64, u64)]) -> LostRanges {
        let mut l = LostRanges::default();
        for &(first, last) in ranges {
            l.push(GapRange { first, last }, LossReason::Deadline);
        }
        l
    }

    fn text(write: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> String {
        let mut out = Vec::new();
        write(&mut out).expect("Vec");
        String::from_utf8(out).expect("UTF-8")
    }

    #[test]
    fn a_lossy_mold_line_names_each_lost_range() {
        let report = MoldSourceReport {
            recovery: RecoveryCounts {
                packets: 12_345,
                gaps: 3,
                recovered: 1_000,
                messages_lost: 7,
                duplicates: 2,
                requests_sent: 4,
                gaps_recovered: 2,
                recover_p50: std::time::Duration::from_micros(1_500),
                recover_max: std::time::Duration::from_millis(40),
                ..RecoveryCounts::default()
            },
            messages: 99_000,
            lost: lost(&[(10, 12), (50, 53)]),
            bad_packets: 0,
            recv_errors: Default::default(),
            request_send_errors: Default::default(),
            lines: None,
            kernel_overruns: Some(KernelOverruns {
                dropped: 1_500,
                grew: 2,
                first_grew_ns: 1_250_000_000,
            }),
            kernel_overruns_b: Some(KernelOverruns {
                dropped: 3,
                grew: 1,
                first_grew_ns: 2_000_000_000,
            }),
            end: SourceEnd::EndOfSession,
            ..MoldSourceReport::default()
        };
        assert_eq!(
            text(|out| write_mold_source(out, &report)),
            "  packets              12,345   gaps 3   recovered 1,000   lost 7   duplicates 2   requests 4\n\
             \x20 recovery     2 gaps filled in p50 1.5 ms, max 40.0 ms (detection to fill)\n\
             \x20 OVERRUN      the kernel dropped 1,500 datagrams (receive buffer full) in 2 \
             one-second checks from 1.250 s: the reader could not keep up; their gaps were \
             recovered or declared lost\n\
             \x20 OVERRUN      the kernel dropped 3 datagrams on line B (receive buffer full) \
             in 1 one-second checks from 2.000 s: the reader could not keep up; their gaps \
             were recovered or declared lost\n\
             \x20 DECLARED LOST 7 messages in 2 ranges\n\
             \x20 LOST         sequences 10 ..= 12 (3): its gap deadline passed\n\
             \x20 LOST         sequences 50 ..= 53 (4): its gap deadline passed\n\
             \x20 ended        end of session\n"
        );
    }

    #[test]
    fn an_ab_line_says_which_recovered_messages_were_retransmitted() {
        let report = MoldSourceReport {
            recovery: RecoveryCounts {
                packets: 9_000,
                gaps: 50,
                recovered: 2_076,
                requests_sent: 50,
                ..RecoveryCounts::default()
            },
            lines: Some(crate::pipeline::ArbitrationReport {
                retransmitted_won: 2_034,
                ..Default::default()
            }),
            end: SourceEnd::EndOfSession,
            ..MoldSourceReport::default()
        };
        let text = text(|out| write_mold_source(out, &report));
        assert!(
            text.starts_with(
                "  packets               9,000   gaps 50   recovered 2,076 (2,034 retransmitted, \
                 42 from the lines' late copies)   lost 0   duplicates 0   requests 50\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("retransmitted 2,034 = delivered"),
            "the arbitration line's figure is the same: {text}"
        );
    }

    #[test]
    fn many_lost_ranges_list_both_ends_and_count_the_rest() {
        // 20 ranges of 2 messages each, 10 apart: 3 listed at each end, 14 counted.
        let ranges: Vec<(u64, u64)> = (0..20).map(|i| (10 * i + 1, 10 * i + 2)).collect();
        let text = text(|out| write_lost_ranges(out, &lost(&ranges)));
        assert_eq!(
            text,
            "  DECLARED LOST 40 messages in 20 ranges\n\
             \x20 LOST         sequences 1 ..= 2 (2): its gap deadline passed\n\
             \x20 LOST         sequences 11 ..= 12 (2): its gap deadline passed\n\
             \x20 LOST         sequences 21 ..= 22 (2): its gap deadline passed\n\
             \x20 LOST         ... 14 more ranges (28 messages) not listed ...\n\
             \x20 LOST         sequences 171 ..= 172 (2): its gap deadline passed\n\
             \x20 LOST         sequences 181 ..= 182 (2): its gap deadline passed\n\
             \x20 LOST         sequences 191 ..= 192 (2): its gap deadline passed\n"
        );
    }

    #[test]
    fn eight_lost_ranges_are_all_listed_and_none_print_nothing() {
        let ranges: Vec<(u64, u64)> = (0..8).map(|i| (5 * i + 1, 5 * i + 1)).collect();
        let text8 = text(|out| write_lost_ranges(out, &lost(&ranges)));
        assert_eq!(text8.lines().count(), 9, "{text8}");
        assert!(!text8.contains("not listed"), "{text8}");
        assert_eq!(
            text(|out| write_lost_ranges(out, &LostRanges::default())),
            ""
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
        let c = OverloadCounts::default();
        assert!(text(|out| write_overload(out, Some(&c))).starts_with("  overload     published=0"));
    }
}
