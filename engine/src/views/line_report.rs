//! What `ticklane run` and the live demo print about a finished line, and the exit status
//! each report earns: the ready line a parent process waits for, the closing summary, the
//! demo's transport check.

use std::io::{self, Write};
use std::path::Path;

use crate::digit_groups::group;
use crate::live::{DemoReport, LineRun, LineSource, LineSourceReport, TransportCheck};
use crate::pipeline::{human_ns, Percentiles, ViolationCounts, ViolationKind};

use super::exit_status::ExitStatus;
use super::line_summary::{
    write_latency, write_mold_source, write_overload, write_soup_source, NO_REQUEST_SERVER,
};

/// The line a parent process waits for: printed once the signal handlers are installed and
/// a MoldUDP64 line's sockets are bound (a SoupBinTCP line connects when it runs).
///
/// # Errors
///
/// If the bound address cannot be read back from the socket.
pub fn ready_line(config: &Path, source: &LineSource) -> io::Result<String> {
    let listening = match source {
        LineSource::Mold(s) => format!("MoldUDP64 bound on {}", s.local_addr()?),
        LineSource::Soup(_) => "SoupBinTCP connecting".to_string(),
    };
    Ok(format!(
        "ticklane run: ready ({}; {listening}; Ctrl-C stops, drains and flushes)",
        config.display()
    ))
}

/// Messages the line declared lost: a MoldUDP64 line's lost ranges; SoupBinTCP cannot
/// declare loss (TCP delivers in order or the session fails).
pub fn declared_lost(source: &LineSourceReport) -> u64 {
    match source {
        LineSourceReport::Mold(r) => r.lost.messages(),
        LineSourceReport::Soup(_) => 0,
    }
}

/// The reader's part of a summary, whichever protocol it spoke.
///
/// # Errors
///
/// Whatever `out` returns.
pub fn write_source(out: &mut impl Write, source: &LineSourceReport) -> io::Result<()> {
    match source {
        LineSourceReport::Mold(r) => write_mold_source(out, r),
        LineSourceReport::Soup(r) => write_soup_source(out, r),
    }
}

/// `ticklane run --config`'s closing summary. `unrecoverable` says the line had no
/// retransmission server.
///
/// # Errors
///
/// Whatever `out` returns.
pub fn write_line_run(out: &mut impl Write, run: &LineRun, unrecoverable: bool) -> io::Result<()> {
    let report = &run.report;
    writeln!(
        out,
        "  messages     {:>14}   in {:.3} s",
        group(report.book.messages),
        report.elapsed.as_secs_f64()
    )?;
    if unrecoverable {
        writeln!(out, "  retransmit   {NO_REQUEST_SERVER}")?;
    }
    write_source(out, &report.source)?;
    let counts = report.book.books.counters();
    if counts.snapshot_orders_parked > 0 {
        let (symbols, orders) = report.book.books.parked();
        writeln!(
            out,
            "  locate 0     {} snapshot orders kept by symbol, {} placed when the live stream \
             named their locate; {} orders of {} symbols still waiting (in no book)",
            group(counts.snapshot_orders_parked),
            group(counts.snapshot_orders_placed),
            group(orders as u64),
            group(symbols as u64)
        )?;
    }
    let latency = &report.book.latency;
    write_latency(
        out,
        "receive -> applied",
        &Percentiles::of(&latency.receive_to_applied),
    )?;
    write_latency(
        out,
        "receive -> published",
        &Percentiles::of(&latency.receive_to_published),
    )?;
    write_overload(out, run.overload.as_ref())?;
    write_violations(out, &run.violations)?;
    if declared_lost(&report.source) > 0 && run.overload.is_some() {
        writeln!(
            out,
            "  snapshot     every book flagged MAYBE_BAD since the first declared loss; the flags stay set to the end (nothing rebuilds a book yet)"
        )?;
    }
    Ok(())
}

/// The contract violations by kind, when there were any (each kind's first is in the log,
/// with its position): the input broke the protocol, and health said Degraded.
pub fn write_violations(out: &mut impl Write, violations: &ViolationCounts) -> io::Result<()> {
    if violations.total() == 0 {
        return Ok(());
    }
    write!(out, "  violations  ")?;
    for kind in ViolationKind::ALL {
        write!(out, " {}={}", kind.name(), group(violations.of(kind)))?;
    }
    writeln!(out, " (never retried; health Degraded)")
}

/// The status a finished line earns: a failure outranks loss (the loss count of a line that
/// failed may be incomplete), loss outranks a clean end.
pub fn line_run_status(run: &LineRun) -> ExitStatus {
    let source = &run.report.source;
    if source.end().is_error() {
        ExitStatus::Failure
    } else {
        ExitStatus::of_loss(declared_lost(source))
    }
}

/// The live demo's opening paragraph.
///
/// # Errors
///
/// Whatever `out` returns.
pub fn write_demo_intro(
    out: &mut impl Write,
    messages: u64,
    rate: u64,
    drop: f64,
) -> io::Result<()> {
    writeln!(
        out,
        "ticklane live demo: a simulated exchange sends {} messages as MoldUDP64 over loopback UDP at {} msg/s,\n\
         dropping {:.1}% of packets; the pipeline (reader thread -> SPSC ring -> book thread -> snapshot)\n\
         recovers them from the retransmission server.\n",
        group(messages),
        group(rate),
        drop * 100.0
    )
}

/// The live demo's closing summary, with its transport check.
///
/// # Errors
///
/// Whatever `out` returns.
pub fn write_demo_report(out: &mut impl Write, r: &DemoReport) -> io::Result<()> {
    writeln!(
        out,
        "  messages     {:>14}   in {:.3} s = {:.2} M msg/s",
        group(r.messages),
        r.elapsed.as_secs_f64(),
        r.messages as f64 / r.elapsed.as_secs_f64() / 1e6
    )?;
    write_source(out, &r.source)?;
    write_latency(out, "receive -> applied", &r.receive_to_applied)?;
    write_latency(out, "receive -> published", &r.receive_to_published)?;
    write_overload(out, r.overload.as_ref())?;
    if r.interrupted {
        writeln!(
            out,
            "  interrupted  by a signal, after {} messages",
            group(r.messages)
        )?;
    }
    writeln!(out, "  snapshot     {}", transport_text(r.transport))?;
    writeln!(
        out,
        "\n  (latency from the reader's receive stamp to the snapshot slot published; p50 {} here on a\n   shared 2-core machine with spin-yield waits. Next: `ticklane run --config FILE` for a real line.)",
        human_ns(r.receive_to_published.p50)
    )
}

fn transport_text(check: TransportCheck) -> String {
    match check {
        TransportCheck::Same { messages } => format!(
            "books equal a replay of the {} messages received (the transport check: same messages, same books)",
            group(messages)
        ),
        TransportCheck::Differs { messages } => format!(
            "books DIFFER FROM a replay of the {} messages received: the transport changed them",
            group(messages)
        ),
        TransportCheck::Unknown => {
            "not compared: the line was not MoldUDP64, so what it delivered is not known by sequence".to_string()
        }
    }
}

/// The status the live demo earns for a day of `asked` messages: a transport that changed
/// the books fails; a stop by signal is an interruption; the day is accounted for when every
/// message was applied or declared lost, and loss is a status of its own.
pub fn demo_status(r: &DemoReport, asked: u64, stopped: bool) -> ExitStatus {
    let lost = declared_lost(&r.source);
    if !r.transport.is_same() {
        ExitStatus::Failure
    } else if r.interrupted || stopped {
        ExitStatus::Interrupted
    } else if r.messages + lost == asked {
        ExitStatus::of_loss(lost)
    } else {
        ExitStatus::Failure
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_transport_check_says_what_it_compared() {
        assert_eq!(
            transport_text(TransportCheck::Same { messages: 1_000 }),
            "books equal a replay of the 1,000 messages received (the transport check: same messages, same books)"
        );
        assert!(transport_text(TransportCheck::Differs { messages: 5 })
            .starts_with("books DIFFER FROM a replay of the 5 messages"));
        assert!(transport_text(TransportCheck::Unknown).starts_with("not compared"));
    }

    #[test]
    fn the_demo_intro_states_the_offered_load() {
        let mut out = Vec::new();
        write_demo_intro(&mut out, 1_000_000, 500_000, 0.002).expect("Vec");
        let text = String::from_utf8(out).expect("UTF-8");
        assert!(text.contains("sends 1,000,000 messages"), "{text}");
        assert!(text.contains("at 500,000 msg/s"), "{text}");
        assert!(text.contains("dropping 0.2% of packets"), "{text}");
    }

    #[test]
    fn violations_are_listed_by_kind_only_when_there_are_any() {
        let mut out = Vec::new();
        write_violations(&mut out, &ViolationCounts::default()).expect("Vec");
        assert!(out.is_empty());
        let counts = ViolationCounts {
            by_kind: [1_200, 3, 0, 0],
        };
        write_violations(&mut out, &counts).expect("Vec");
        assert_eq!(
            String::from_utf8(out).expect("UTF-8"),
            "  violations   malformed_packet=1,200 message_length=3 malformed_frame=0 malformed_snapshot=0 \
             (never retried; health Degraded)\n"
        );
    }
}
