//! The subscriber server's line in the run summary.

use std::io::{self, Write};

use crate::digit_groups::group;
use crate::serve::ServeCounts;
use crate::serve_guard::{AdmissionCounts, RejectReason, Stage};

/// Writes the server's counters: clients accepted and rejected, cut loose and shed, updates
/// conflated, requests served and dropped for budget, bytes sent, the TLS handshakes (when
/// there were any); then, when the storm
/// defences were on, what admission admitted and refused at each stage, with the reasons.
///
/// # Errors
///
/// If `out` fails.
pub fn write_serve_counts(
    out: &mut impl Write,
    c: &ServeCounts,
    admission: Option<&AdmissionCounts>,
) -> io::Result<()> {
    write!(
        out,
        "subscribers: {} accepted, {} rejected, {} cut loose, {} cut idle, {} shed, {} updates conflated, {} requests ({} dropped: budget ran out), {} bytes sent",
        group(c.accepted),
        group(c.rejected),
        group(c.cut_loose),
        group(c.cut_idle),
        group(c.shed),
        group(c.conflated),
        group(c.requests),
        group(c.expired_requests),
        group(c.bytes)
    )?;
    if c.tls_established + c.tls_failed + c.tls_timed_out > 0 {
        write!(
            out,
            "; TLS handshakes: {} established, {} failed, {} timed out",
            group(c.tls_established),
            group(c.tls_failed),
            group(c.tls_timed_out)
        )?;
    }
    let refused = c.logins_not_authorised
        + c.logins_wrong_version
        + c.logins_session_limit
        + c.logins_verifier_busy;
    if refused + c.entitlement_refused + c.entitlement_withdrawn + c.accounts_reloaded > 0 {
        write!(
            out,
            "; accounts: {} logins not authorised, {} without a secret (version 1), {} past \
             the session limit, {} verifier busy; {} subscribes not entitled, {} withdrawn; \
             {} reloads ({} failed)",
            group(c.logins_not_authorised),
            group(c.logins_wrong_version),
            group(c.logins_session_limit),
            group(c.logins_verifier_busy),
            group(c.entitlement_refused),
            group(c.entitlement_withdrawn),
            group(c.accounts_reloaded + c.accounts_reload_failed),
            group(c.accounts_reload_failed)
        )?;
    }
    if let Some(a) = admission {
        write_admission(out, a)?;
    }
    writeln!(out)
}

/// `; admission: connect 3 admitted, 2 rejected (rate 2), ...`: every stage, and the
/// reasons that refused anything.
fn write_admission(out: &mut impl Write, a: &AdmissionCounts) -> io::Result<()> {
    write!(out, "; admission:")?;
    for (n, stage) in Stage::ALL.into_iter().enumerate() {
        let sep = if n == 0 { "" } else { "," };
        write!(
            out,
            "{sep} {} {} admitted, {} rejected",
            stage.as_str(),
            group(a.admitted_at(stage)),
            group(a.rejected_total(stage))
        )?;
        let mut first = true;
        for reason in RejectReason::ALL {
            let n = a.rejected_at(stage, reason);
            if n == 0 {
                continue;
            }
            let open = if first { " (" } else { ", " };
            write!(out, "{open}{} {}", reason.as_str(), group(n))?;
            first = false;
        }
        if !first {
            write!(out, ")")?;
        }
    }
    Ok(())
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
            cut_idle: 4,
            conflated: 12_345,
            requests: 7,
            expired_requests: 2,
            bytes: 1_000_000,
            ..ServeCounts::default()
        };
        write_serve_counts(&mut out, &counts, None).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "subscribers: 3 accepted, 1 rejected, 1 cut loose, 4 cut idle, 0 shed, 12,345 updates conflated, 7 requests (2 dropped: budget ran out), 1,000,000 bytes sent\n"
        );
        let tls = ServeCounts {
            tls_established: 3,
            tls_failed: 2,
            tls_timed_out: 1,
            ..ServeCounts::default()
        };
        let mut out = Vec::new();
        write_serve_counts(&mut out, &tls, None).unwrap();
        assert!(String::from_utf8(out)
            .unwrap()
            .ends_with("bytes sent; TLS handshakes: 3 established, 2 failed, 1 timed out\n"));
    }

    #[test]
    fn says_what_the_accounts_refused_when_they_refused_anything() {
        let counts = ServeCounts {
            logins_not_authorised: 4,
            logins_wrong_version: 1,
            entitlement_refused: 2,
            accounts_reloaded: 1,
            ..ServeCounts::default()
        };
        let mut out = Vec::new();
        write_serve_counts(&mut out, &counts, None).unwrap();
        assert!(String::from_utf8(out).unwrap().ends_with(
            "bytes sent; accounts: 4 logins not authorised, 1 without a secret (version 1), 0 \
             past the session limit, 0 verifier busy; 2 subscribes not entitled, 0 withdrawn; \
             1 reloads (0 failed)\n"
        ));
    }

    #[test]
    fn prints_admission_per_stage_with_the_reasons_that_refused() {
        let mut admission = AdmissionCounts {
            admitted: [300, 300, 290, 1_200, 0],
            ..AdmissionCounts::default()
        };
        admission.rejected[0][0] = 1_500; // connect, rate
        admission.rejected[0][3] = 4; // connect, ip_connections
        admission.rejected[2][5] = 10; // login, account_sessions
        let mut out = Vec::new();
        write_serve_counts(&mut out, &ServeCounts::default(), Some(&admission)).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "subscribers: 0 accepted, 0 rejected, 0 cut loose, 0 cut idle, 0 shed, 0 updates conflated, 0 requests (0 dropped: budget ran out), 0 bytes sent; \
             admission: connect 300 admitted, 1,504 rejected (rate 1,500, ip_connections 4), \
             handshake 300 admitted, 0 rejected, login 290 admitted, 10 rejected (account_sessions 10), \
             subscribe 1,200 admitted, 0 rejected, symbol_list 0 admitted, 0 rejected\n"
        );
    }
}
