//! What `ticklane run`, `ticklane sim` and `ticklane record` print as they go and when they
//! end, around the reports the other views render.

use std::io::{self, Write};
use std::path::Path;
use std::time::Duration;

use super::{line_run_status, ready_line, write_line_run, write_serve_counts, ExitStatus};
use super::{
    write_glimpse_sim_stats, write_mold_sim_stats, write_soup_sim_stats, NO_REQUEST_SERVER,
};
use crate::digit_groups::group;
use crate::live::{ConfiguredLineRun, ExchangeSim, ExchangeSimReport, RecordReport, RunNotice};

/// One notice of `ticklane run --config FILE`, on stdout, but for the missing request
/// server's warning, on stderr.
///
/// # Errors
///
/// A stream fails, or the ready line's bound address cannot be read back.
pub fn write_run_notice(
    out: &mut impl Write,
    err: &mut impl Write,
    config: &Path,
    notice: RunNotice<'_>,
) -> io::Result<()> {
    match notice {
        RunNotice::NoRequestServer => {
            writeln!(
                err,
                "ticklane run: {}: {NO_REQUEST_SERVER}",
                config.display()
            )
        }
        RunNotice::Admin { addr, token } => {
            let calls = if token {
                "admin calls need the token"
            } else {
                "admin calls off: no token"
            };
            writeln!(
                out,
                "ticklane run: admin on http://{addr} (/health, /metrics; {calls})"
            )
        }
        RunNotice::Web { addr, tls, logins } => {
            let scheme = if tls { "https" } else { "http" };
            let login = if logins {
                " (log in with an account)"
            } else {
                ""
            };
            writeln!(
                out,
                "ticklane run: browser view on {scheme}://{addr}/{login}"
            )
        }
        RunNotice::Staggered { instance, delay } => writeln!(
            out,
            "staggered start: instance {instance} waits {} ms before it connects",
            delay.as_millis()
        ),
        RunNotice::Serve(addr) => writeln!(out, "ticklane run: subscribers on {addr}"),
        RunNotice::Ready(source) => writeln!(out, "{}", ready_line(config, source)?),
    }
}

/// The end of `ticklane run --config FILE`: the line's summary and the subscriber server's
/// counts on `out`, why a failed line ended on `err` as well (for a caller that keeps only
/// that); returns the exit status the run earns.
///
/// # Errors
///
/// A stream fails.
pub fn write_line_end(
    out: &mut impl Write,
    err: &mut impl Write,
    config: &Path,
    ended: &ConfiguredLineRun,
) -> io::Result<ExitStatus> {
    write_line_run(out, &ended.run, ended.unrecoverable)?;
    if let Some((counts, admission)) = &ended.served {
        write_serve_counts(out, counts, Some(admission))?;
    }
    let status = line_run_status(&ended.run);
    if status == ExitStatus::Failure {
        writeln!(
            err,
            "ticklane run: {}: the line ended: {}",
            config.display(),
            ended.run.report.source.end()
        )?;
    }
    Ok(status)
}

/// What `ticklane sim` serves, once its servers are up: the MoldUDP64 destinations (line B
/// too) and the retransmission server, the SoupBinTCP address, and when it stops.
///
/// # Errors
///
/// `out` fails.
pub fn write_sim_banner(
    out: &mut impl Write,
    sim: &ExchangeSim,
    udp: Option<(std::net::SocketAddr, Option<std::net::SocketAddr>)>,
    unpaced: bool,
    messages: usize,
    linger: Duration,
) -> io::Result<()> {
    if unpaced {
        writeln!(
            out,
            "unpaced (--rate max): a reader may be overrun; its kernel drops what its socket \
             buffer cannot hold (ticklane run reports them as OVERRUN)"
        )?;
    }
    if let (Some((udp, line_b)), Some(request)) = (udp, sim.request_addr()) {
        match line_b {
            Some(b) => writeln!(
                out,
                "MoldUDP64 to {udp} (line A) and {b} (line B), retransmissions on {request}"
            )?,
            None => writeln!(out, "MoldUDP64 to {udp}, retransmissions on {request}")?,
        }
    }
    if let Some(tcp) = sim.soup_addr() {
        writeln!(out, "SoupBinTCP on {tcp}")?;
    }
    if let Some(glimpse) = sim.glimpse_addr() {
        writeln!(out, "GLIMPSE 5.0 snapshots on {glimpse}")?;
    }
    if udp.is_some() {
        writeln!(
            out,
            "serving {} messages; retransmissions answered until {:.1} s after the end of \
             session; Ctrl-C stops",
            group(messages as u64),
            linger.as_secs_f64()
        )
    } else {
        writeln!(
            out,
            "serving {} messages; Ctrl-C stops",
            group(messages as u64)
        )
    }
}

/// What `ticklane sim` sent, one line per protocol.
///
/// # Errors
///
/// `out` fails.
pub fn write_sim_report(out: &mut impl Write, report: &ExchangeSimReport) -> io::Result<()> {
    if let Some(s) = &report.mold {
        write_mold_sim_stats(out, s)?;
    }
    if let Some(s) = &report.soup {
        write_soup_sim_stats(out, s)?;
    }
    if let Some(s) = &report.glimpse {
        write_glimpse_sim_stats(out, s)?;
    }
    Ok(())
}

/// The end of `ticklane record`: what was written on `out`; on `err`, a late join (the
/// messages before it are not in the file) and any messages missing from it, for a script
/// that keeps only stderr. Returns the exit status: 3 when messages are missing.
///
/// # Errors
///
/// A stream fails.
pub fn write_record_end(
    out: &mut impl Write,
    err: &mut impl Write,
    file: &Path,
    r: &RecordReport,
) -> io::Result<ExitStatus> {
    writeln!(out, "wrote {} packets; {}", group(r.packets), r.end)?;
    if let Some(at) = r.joined_at.filter(|&at| at > 1) {
        writeln!(
            err,
            "ticklane: warning: the recording joined the line at sequence {at}: messages 1 ..= {} \
             (the stock directory among them) are not in {}",
            at - 1,
            file.display()
        )?;
    }
    if let Some(at) = r.joined_at {
        writeln!(
            out,
            "joined at sequence {at}; gaps {} ({} messages missing from the file)",
            r.gaps,
            group(r.missing)
        )?;
    }
    if r.missing > 0 {
        writeln!(
            err,
            "ticklane: {} messages in {} gaps never reached {}",
            group(r.missing),
            r.gaps,
            file.display()
        )?;
    }
    Ok(ExitStatus::of_loss(r.missing))
}
