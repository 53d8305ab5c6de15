//! The fault-injection suite: each row runs the exchange simulator with one fault against a
//! real line over loopback (sockets, reader thread, ring, book thread, snapshot file) and
//! prints what was sent, received, applied, dropped as duplicate, detected as a gap,
//! recovered and declared lost, and how long recovery took (p50, max, from a gap's
//! detection to its fill). Every row asserts:
//!
//! - applied + declared lost = the last sequence (nothing vanishes unaccounted);
//! - every declared loss left the books flagged (`MAYBE_BAD` in the snapshot's header, with
//!   the count, and in every slot);
//! - where nothing was lost, the snapshot's books equal itch-book's (PyPI; an independent
//!   implementation reading the same day from a file) and a plain replay's;
//! - the fault really happened and the line did what it should about it (its own check).
//!
//! The table goes to stderr (libtest does not capture it: see `util::skip`) and to
//! `target/fault_table.txt`. `FAULT_ROWS=late,flood` runs only the rows whose names
//! contain one of those words.
//!
//! A/B rows serve the session on two lines (the simulator's line B, the line's second
//! socket) and also check the arbitration's own account: won on A + won on B +
//! retransmitted = delivered; their second line in the table is each line's sends, drops,
//! gaps and wins. The silent-server rows run with and without the retransmission server's
//! circuit breaker (`reqs`: request datagrams sent; `refused`: tries the breaker refused),
//! and the suite checks that the breaker's row sent fewer requests.
//!
//! The GLIMPSE rows join half way through the day with no retransmission server and start
//! from a snapshot of the simulator's stream, its first connection cut, stalled, or its
//! login refused; a cut or stalled snapshot is asked for again and the line ends exact.
//!
//! Bounded: one day of 40,000 messages, paced at 400,000 a second (the simulator's
//! default); each line gives up after 30 s; the whole suite takes seconds.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use fault_suite::{recovering, Expect, GlimpseCase, Line, MoldCase, Outcome, Scenario, SoupCase};
use ticklane_engine::live::LineSourceReport;
use ticklane_engine::pipeline::{
    ArbitrationReport, GlimpseReport, SnapshotFailure, SourceEnd, SourceError, DEFAULT_LINE_BREAKER,
};
use ticklane_feed::moldudp64::RecoveryConfig;
use ticklane_feed::resilience::BreakerConfig;
use ticklane_feed::soupbintcp::RejectReason;
use ticklane_sim::{BurstLoss, Faults, GenConfig, Interruption, MessageLog, Rate, ReplyFault};

use crate::util;
use crate::util::fault_suite;

/// A line that joins half way through the day with no retransmission server and starts
/// from a GLIMPSE snapshot, with `faults` on the snapshot server's first connection.
fn glimpse_case(faults: GlimpseCase) -> MoldCase {
    MoldCase {
        request_server: false,
        join_after: Some(MESSAGES / 2),
        glimpse: Some(faults),
        ..MoldCase::with(Faults::default())
    }
}

/// What a GLIMPSE row's snapshot start did.
fn glimpse(r: &Outcome) -> Result<&GlimpseReport, String> {
    mold(r)
        .glimpse
        .as_ref()
        .ok_or_else(|| "the line did not start from a snapshot".to_string())
}

/// Messages in the day every row serves.
const MESSAGES: u64 = 40_000;

fn mold(r: &Outcome) -> &ticklane_engine::pipeline::MoldSourceReport {
    match &r.source {
        LineSourceReport::Mold(m) => m,
        LineSourceReport::Soup(_) => panic!("a MoldUDP64 row"),
    }
}

fn soup(r: &Outcome) -> &ticklane_engine::pipeline::SoupSourceReport {
    match &r.source {
        LineSourceReport::Soup(s) => s,
        LineSourceReport::Mold(_) => panic!("a SoupBinTCP row"),
    }
}

fn need(ok: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(what())
    }
}

fn faults(seed: u64) -> Faults {
    Faults {
        seed,
        ..Faults::default()
    }
}

/// Gaps were seen and every one filled by retransmission.
fn filled(r: &Outcome) -> Result<(), String> {
    let st = mold(r).recovery;
    need(
        st.gaps > 0 && st.recovered > 0 && st.gaps_recovered > 0,
        || format!("no gap seen and filled: {st:?}"),
    )
}

/// The per-line counters of an A/B row.
fn ab(r: &Outcome) -> Result<ArbitrationReport, String> {
    mold(r)
        .lines
        .ok_or_else(|| "no per-line counters: not an A/B line".to_owned())
}

/// The loss of the two silent-server rows: 5 % of packets (the same seed for both, so the
/// same packets), and a retransmission server that never answers.
fn silent_server_faults() -> Faults {
    Faults {
        drop_ratio: 0.05,
        replies: ReplyFault::Silent,
        ..faults(6)
    }
}

/// The recovery of the two silent-server rows: two retries, gaps given up after 300 ms;
/// with or without the retransmission server's breaker.
fn silent_server_recovery(breaker: Option<BreakerConfig>) -> RecoveryConfig {
    RecoveryConfig {
        max_retries: 2,
        gap_deadline: Duration::from_millis(300),
        breaker,
        ..recovering()
    }
}

/// The retransmission server's breaker as `ticklane run`'s config sets it by default: the
/// line breaker's defaults (30 s window, 5 calls before a decision, opens at 50 % faults,
/// open 5 s, 1 probe) with the slow threshold at half the reply timeout (`recovering()`'s
/// 20 ms), as the config does when `feed.breaker_slow_ms` is not given.
fn server_breaker() -> BreakerConfig {
    BreakerConfig {
        slow_threshold: recovering().retransmit_timeout / 2,
        ..DEFAULT_LINE_BREAKER
    }
}

fn scenarios() -> Vec<Scenario> {
    let ms = Duration::from_millis;
    vec![
        Scenario {
            name: "random loss 1%",
            line: Line::mold(MoldCase::with(Faults {
                drop_ratio: 0.01,
                ..faults(1)
            })),
            expect: Expect::Recovered,
            check: |r| {
                need(r.mold_sim().packets_dropped > 0, || {
                    "nothing dropped".into()
                })?;
                filled(r)
            },
        },
        Scenario {
            name: "random loss 20%",
            line: Line::mold(MoldCase::with(Faults {
                drop_ratio: 0.20,
                ..faults(2)
            })),
            expect: Expect::Recovered,
            check: filled,
        },
        Scenario {
            name: "burst loss",
            line: Line::mold(MoldCase::with(Faults {
                burst_loss: Some(BurstLoss {
                    probability: 0.005,
                    packets: 20,
                }),
                ..faults(3)
            })),
            expect: Expect::Recovered,
            check: |r| {
                // Bursts of 20 packets: some gap is wider than 20 single-message packets.
                need(mold(r).recovery.gaps > 0, || "no burst".into())?;
                filled(r)
            },
        },
        Scenario {
            name: "duplicates",
            line: Line::mold(MoldCase::with(Faults {
                duplicate_ratio: 0.05,
                ..faults(4)
            })),
            expect: Expect::Recovered,
            check: |r| {
                let (sent, dups) = (r.mold_sim().packets_duplicated, mold(r).recovery.duplicates);
                need(sent > 0 && dups > 0, || {
                    format!("{sent} packets duplicated, {dups} duplicates dropped")
                })
            },
        },
        Scenario {
            name: "reordering",
            line: Line::mold(MoldCase::with(Faults {
                reorder_ratio: 0.05,
                ..faults(5)
            })),
            expect: Expect::Recovered,
            check: |r| {
                let st = mold(r).recovery;
                need(r.mold_sim().packets_reordered > 0 && st.gaps > 0, || {
                    format!("no reordering seen: {st:?}")
                })
            },
        },
        Scenario {
            name: "A/B: loss on A only",
            line: Line::mold(MoldCase::ab(
                Faults {
                    drop_ratio: 0.2,
                    ..faults(16)
                },
                Faults::default(),
            )),
            expect: Expect::Recovered,
            check: |r| {
                let (m, sim) = (mold(r), r.mold_sim());
                let l = ab(r)?;
                need(
                    sim.packets_dropped > 0 && sim.b_packets_dropped == 0,
                    || format!("not A only: {sim:?}"),
                )?;
                need(l.a.gaps > 0 && l.b.gaps == 0 && l.b.won > 0, || {
                    format!("B did not fill A's gaps: {l:?}")
                })?;
                // A gap the other line filled is no gap: nothing asked, nothing retransmitted.
                need(
                    m.recovery.gaps == 0
                        && m.recovery.requests_sent == 0
                        && l.retransmitted_won == 0,
                    || format!("gaps B filled were asked for: {:?}", m.recovery),
                )
            },
        },
        Scenario {
            name: "A/B: loss on B only",
            line: Line::mold(MoldCase::ab(
                Faults::default(),
                Faults {
                    drop_ratio: 0.2,
                    ..faults(17)
                },
            )),
            expect: Expect::Recovered,
            check: |r| {
                let (m, sim) = (mold(r), r.mold_sim());
                let l = ab(r)?;
                need(
                    sim.packets_dropped == 0 && sim.b_packets_dropped > 0,
                    || format!("not B only: {sim:?}"),
                )?;
                need(l.b.gaps > 0 && l.a.gaps == 0, || format!("{l:?}"))?;
                need(
                    m.recovery.gaps == 0
                        && m.recovery.requests_sent == 0
                        && l.retransmitted_won == 0,
                    || format!("B's gaps were asked for: {:?}", m.recovery),
                )
            },
        },
        Scenario {
            name: "A/B: loss on both",
            // 20 % on each line, drawn independently: about 4 % of packets are lost on
            // both, and only those are gaps, filled by retransmission.
            line: Line::mold(MoldCase::ab(
                Faults {
                    drop_ratio: 0.2,
                    ..faults(18)
                },
                Faults {
                    drop_ratio: 0.2,
                    ..faults(19)
                },
            )),
            expect: Expect::Recovered,
            check: |r| {
                let st = mold(r).recovery;
                let l = ab(r)?;
                need(
                    l.a.gaps > 0 && l.b.gaps > 0 && l.a.won > 0 && l.b.won > 0,
                    || format!("{l:?}"),
                )?;
                need(st.gaps > 0 && st.gaps < l.a.gaps + l.b.gaps, || {
                    format!("gaps one line filled were counted: {st:?} {l:?}")
                })?;
                need(l.retransmitted_won > 0, || {
                    format!("nothing lost on both lines was retransmitted: {l:?}")
                })?;
                filled(r)
            },
        },
        Scenario {
            name: "retransmitter silent",
            line: Line::mold(MoldCase {
                recovery: silent_server_recovery(None),
                ..MoldCase::with(silent_server_faults())
            }),
            expect: Expect::Declared,
            check: |r| {
                let st = mold(r).recovery;
                need(
                    r.mold_sim().requests_ignored > 0 && st.recovered == 0 && st.timeouts > 0,
                    || format!("the server was not silent, or nobody asked: {st:?}"),
                )
            },
        },
        Scenario {
            name: "silent, server breaker",
            line: Line::mold(MoldCase {
                recovery: silent_server_recovery(Some(server_breaker())),
                ..MoldCase::with(silent_server_faults())
            }),
            expect: Expect::Declared,
            check: |r| {
                let st = mold(r).recovery;
                need(
                    r.mold_sim().requests_ignored > 0 && st.recovered == 0 && st.unanswered > 0,
                    || format!("the server was not silent, or nobody asked: {st:?}"),
                )?;
                // It opened once and, open for 5 s, never went half-open in this run; what it
                // refused was never sent: the suite checks that fewer requests went out than
                // from the row without a breaker (same loss, same silent server). The gaps it
                // parked were declared at their deadline, which `verify` checks as declared
                // lost and flagged.
                need(
                    st.breaker_transitions == 1 && st.breaker_refused > 0,
                    || format!("the breaker did not open once and refuse: {st:?}"),
                )
            },
        },
        Scenario {
            name: "retransmitter slow (60 ms)",
            line: Line::mold(MoldCase::with(Faults {
                drop_ratio: 0.01,
                replies: ReplyFault::Slow(ms(60)),
                ..faults(7)
            })),
            expect: Expect::Recovered,
            check: |r| {
                let st = mold(r).recovery;
                need(r.mold_sim().replies_delayed > 0, || {
                    "no reply delayed".into()
                })?;
                // Nothing can be recovered faster than the server answers.
                need(st.recover_p50 >= Duration::from_millis(60), || {
                    format!("recovered faster than a 60 ms server: {st:?}")
                })?;
                filled(r)
            },
        },
        Scenario {
            name: "retransmitter answers half",
            line: Line::mold(MoldCase::with(Faults {
                drop_ratio: 0.01,
                replies: ReplyFault::Partial,
                ..faults(8)
            })),
            expect: Expect::Recovered,
            check: |r| {
                let st = mold(r).recovery;
                // The rest of a partial answer is asked for as a continuation, not a retry.
                need(
                    r.mold_sim().replies_partial > 0 && st.continuations > 0,
                    || format!("no partial answer asked again: {st:?}"),
                )?;
                filled(r)
            },
        },
        Scenario {
            name: "session ends with gap open",
            line: Line::mold(MoldCase::with(Faults {
                lose_sequences: Some((MESSAGES - 200, MESSAGES)),
                ..faults(9)
            })),
            expect: Expect::Recovered,
            check: |r| {
                let m = mold(r);
                need(m.recovery.end_of_session > 0, || "no end of session".into())?;
                need(m.recovery.recovered >= 201, || {
                    format!("the last 201 messages were not recovered: {:?}", m.recovery)
                })
            },
        },
        Scenario {
            name: "stalled server (heartbeats)",
            line: Line::mold(MoldCase::with(Faults {
                stall: Some(Interruption {
                    after_messages: MESSAGES / 2,
                    duration: ms(1_500),
                }),
                ..faults(10)
            })),
            expect: Expect::Recovered,
            check: |r| {
                let st = mold(r).recovery;
                need(r.mold_sim().stalls == 1 && st.heartbeats > 0, || {
                    format!("no stall with heartbeats: {st:?}")
                })?;
                // A stall is not a gap; only a reader overrun on a busy machine makes one.
                let overrun = mold(r).kernel_overruns.map_or(0, |k| k.dropped);
                need(st.gaps == 0 || overrun > 0, || {
                    format!("{} gaps from a stall", st.gaps)
                })
            },
        },
        Scenario {
            name: "truncated packets",
            line: Line::mold(MoldCase::with(Faults {
                truncate_ratio: 0.01,
                ..faults(11)
            })),
            expect: Expect::Recovered,
            check: |r| {
                let (cut, bad) = (r.mold_sim().packets_truncated, mold(r).bad_packets);
                need(cut > 0 && bad == cut, || {
                    format!("{cut} packets cut, {bad} refused as not MoldUDP64")
                })?;
                filled(r)
            },
        },
        Scenario {
            name: "late join",
            line: Line::mold(MoldCase {
                join_after: Some(MESSAGES / 4),
                ..MoldCase::with(faults(12))
            }),
            expect: Expect::Recovered,
            check: |r| {
                let st = mold(r).recovery;
                need(st.recovered >= MESSAGES / 4, || {
                    format!("the first quarter was not recovered: {st:?}")
                })
            },
        },
        Scenario {
            name: "first packet lost",
            line: Line::mold(MoldCase::with(Faults {
                lose_sequences: Some((1, 1)),
                ..faults(13)
            })),
            expect: Expect::Recovered,
            check: filled,
        },
        Scenario {
            name: "no retransmission server",
            line: Line::mold(MoldCase {
                request_server: false,
                recovery: RecoveryConfig {
                    max_retries: 1,
                    gap_deadline: ms(200),
                    ..recovering()
                },
                ..MoldCase::with(Faults {
                    drop_ratio: 0.01,
                    ..faults(14)
                })
            }),
            expect: Expect::Declared,
            check: |r| {
                let m = mold(r);
                need(m.recovery.recovered == 0 && m.lost.messages() > 0, || {
                    format!("{:?}", m.recovery)
                })
            },
        },
        Scenario {
            name: "unpaced flood, 64 KiB buffer",
            line: Line::mold(MoldCase {
                rate: Rate::Max,
                // A small buffer, so that the flood can overrun it on any machine.
                recv_buffer_bytes: 64 << 10,
                ..MoldCase::with(faults(15))
            }),
            expect: Expect::Either,
            check: |r| {
                let m = mold(r);
                // The kernel's count is read; whatever it dropped left gaps, recovered or
                // declared (the row's invariants check which).
                let Some(k) = m.kernel_overruns else {
                    return Err("Linux reports receive-buffer drops; none read".into());
                };
                // On loopback with no fault injected, an overrun is the only way to lose a
                // datagram: gaps came exactly when the kernel dropped some.
                need((k.dropped > 0) == (m.recovery.gaps > 0), || {
                    format!(
                        "{} datagrams overran the buffer, {} gaps seen",
                        k.dropped, m.recovery.gaps
                    )
                })
            },
        },
        Scenario {
            name: "soup paced server",
            line: Line::Soup(SoupCase::default()),
            expect: Expect::Recovered,
            check: |r| {
                let s = soup(r);
                need(s.connections == 1 && r.soup_sim().logins == 1, || {
                    format!("{} connections", s.connections)
                })
            },
        },
        Scenario {
            name: "soup half-open socket",
            line: Line::Soup(SoupCase {
                half_open_after: Some(MESSAGES / 3),
                server_timeout: ms(400),
                ..SoupCase::default()
            }),
            expect: Expect::Recovered,
            check: |r| {
                let s = soup(r);
                let silent = s.drops.by_reason.server_silent;
                need(r.soup_sim().half_opened >= 2 && silent >= 2, || {
                    format!(
                        "half-open {} times, {silent} found silent, {} connections",
                        r.soup_sim().half_opened,
                        s.connections
                    )
                })
            },
        },
        Scenario {
            name: "glimpse start mid-day",
            line: Line::mold(glimpse_case(GlimpseCase::default())),
            expect: Expect::Recovered,
            check: |r| {
                let g = glimpse(r)?;
                need(
                    g.next_sequence.is_some_and(|n| n > 1) && g.attempts == 1,
                    || format!("{g:?}"),
                )
            },
        },
        Scenario {
            name: "glimpse at locate 0",
            line: Line::mold(glimpse_case(GlimpseCase {
                locate_zero: true,
                ..GlimpseCase::default()
            })),
            // The books place each stock's snapshot orders when the live stream names its
            // locate: every stock of the day trades after the join.
            expect: Expect::Recovered,
            check: |r| {
                let g = glimpse(r)?;
                need(g.attempts == 1 && g.messages > 0, || format!("{g:?}"))
            },
        },
        Scenario {
            name: "glimpse cut mid-snapshot",
            line: Line::mold(glimpse_case(GlimpseCase {
                cut_after: Some(5),
                ..GlimpseCase::default()
            })),
            expect: Expect::Recovered,
            check: |r| {
                let g = glimpse(r)?;
                need(g.attempts == 2 && g.failures == [0, 0, 1, 0, 0], || {
                    format!("{g:?}")
                })
            },
        },
        Scenario {
            name: "glimpse stalled mid-snapshot",
            line: Line::mold(glimpse_case(GlimpseCase {
                stall_after: Some(5),
                ..GlimpseCase::default()
            })),
            expect: Expect::Recovered,
            check: |r| {
                let g = glimpse(r)?;
                need(g.attempts == 2 && g.failures == [0, 0, 0, 1, 0], || {
                    format!("{g:?}")
                })
            },
        },
        Scenario {
            name: "glimpse malformed end",
            line: Line::mold(glimpse_case(GlimpseCase {
                malformed_end: true,
                ..GlimpseCase::default()
            })),
            expect: Expect::Recovered,
            check: |r| {
                let g = glimpse(r)?;
                need(
                    g.attempts == 2 && g.failures == [0, 0, 0, 0, 1] && g.violations == 1,
                    || format!("{g:?}"),
                )
            },
        },
        Scenario {
            name: "glimpse server down",
            line: Line::mold(glimpse_case(GlimpseCase {
                server_down: true,
                ..GlimpseCase::default()
            })),
            expect: Expect::Refused,
            check: |r| {
                let g = glimpse(r)?;
                let down = matches!(
                    mold(r).end,
                    SourceEnd::Error(SourceError::Snapshot(SnapshotFailure::Connect { .. }))
                );
                need(
                    down && g.attempts == 5 && g.failures == [5, 0, 0, 0, 0],
                    || format!("{}, {g:?}", mold(r).end),
                )
            },
        },
        Scenario {
            name: "glimpse rebuild, no server",
            line: Line::mold(MoldCase {
                faults: Faults {
                    drop_ratio: 0.003,
                    ..faults(31)
                },
                ..glimpse_case(GlimpseCase::default())
            }),
            expect: Expect::Recovered,
            check: |r| {
                let g = glimpse(r)?;
                let st = mold(r).recovery;
                need(
                    g.rebuilds >= 1 && st.gaps_rebuilt >= 1 && g.rebuild_failures == 0,
                    || format!("{g:?}, {st:?}"),
                )
            },
        },
        Scenario {
            name: "glimpse rebuild past max gap",
            line: Line::mold(MoldCase {
                request_server: true,
                faults: Faults {
                    // Past where the snapshot start leaves the line (some 31,000 in).
                    lose_sequences: Some((MESSAGES * 15 / 16, MESSAGES * 15 / 16 + 999)),
                    ..faults(32)
                },
                ..glimpse_case(GlimpseCase {
                    max_recovery_gap: Some(500),
                    ..GlimpseCase::default()
                })
            }),
            expect: Expect::Recovered,
            check: |r| {
                let g = glimpse(r)?;
                let st = mold(r).recovery;
                // The 1,000 lost are never asked for; a datagram the kernel dropped would be
                // a small gap, asked for and filled.
                let asked_only_small = st.requests_sent == 0 || st.gaps_recovered > 0;
                need(
                    g.rebuilds >= 1 && st.gaps_rebuilt >= 1 && asked_only_small,
                    || format!("{g:?}, {st:?}"),
                )
            },
        },
        Scenario {
            name: "glimpse rebuild refused",
            line: Line::mold(MoldCase {
                faults: Faults {
                    drop_ratio: 0.003,
                    ..faults(33)
                },
                ..glimpse_case(GlimpseCase {
                    logins_allowed: Some(1),
                    ..GlimpseCase::default()
                })
            }),
            // The start's snapshot is served, the rebuild's login refused: the gap is
            // declared lost as on a line without a snapshot server.
            expect: Expect::Declared,
            check: |r| {
                let g = glimpse(r)?;
                need(
                    g.rebuilds == 0 && g.rebuild_failures == 1 && g.failures[1] == 1,
                    || format!("{g:?}"),
                )
            },
        },
        Scenario {
            name: "glimpse login refused",
            line: Line::mold(glimpse_case(GlimpseCase {
                wrong_login: true,
                ..GlimpseCase::default()
            })),
            expect: Expect::Refused,
            check: |r| {
                let g = glimpse(r)?;
                let refused = mold(r).end
                    == SourceEnd::Error(SourceError::Snapshot(SnapshotFailure::Rejected(
                        RejectReason::NotAuthorized,
                    )));
                need(refused && g.attempts == 1, || {
                    format!("{}, {g:?}", mold(r).end)
                })
            },
        },
        Scenario {
            name: "soup login rejected",
            line: Line::Soup(SoupCase {
                wrong_password: true,
                ..SoupCase::default()
            }),
            expect: Expect::Refused,
            check: |r| {
                let s = soup(r);
                let refused = s.end
                    == SourceEnd::Error(SourceError::LoginRejected(RejectReason::NotAuthorized));
                let sim = r.soup_sim();
                need(
                    refused && s.connections == 1 && sim.rejected == 1 && sim.connections == 1,
                    || format!("{}, {} connections, sim {sim:?}", s.end, s.connections),
                )
            },
        },
    ]
}

#[test]
fn fault_injection_suite() {
    let test = "fault_injection_suite";
    let log = Arc::new(MessageLog::from_generator(GenConfig {
        messages: MESSAGES,
        seed: 2026,
        stocks: 20,
        hard_cases: true,
        crossing: false,
    }));
    let replayed = util::replayed_book(&log, util::books(), fault_suite::DEPTH);
    let oracle = fault_suite::Oracle::start(test, &log);
    let only: Vec<String> = std::env::var("FAULT_ROWS")
        .map(|v| v.split(',').map(str::to_owned).collect())
        .unwrap_or_default();
    let mut table = vec![fault_suite::HEADER.to_owned()];
    let mut failures = Vec::new();
    // Requests sent to a silent server, without and with its breaker (the rows that ran).
    let mut silent_requests = (None, None);
    let mut stderr = std::io::stderr();
    let _ = writeln!(stderr, "\n{}", fault_suite::HEADER);
    for scenario in scenarios()
        .iter()
        .filter(|s| only.is_empty() || only.iter().any(|w| s.name.contains(w.as_str())))
    {
        let out = fault_suite::run(scenario, &log);
        let failed = fault_suite::verify(scenario, &out, MESSAGES, &replayed, oracle.as_ref());
        if let LineSourceReport::Mold(m) = &out.source {
            match scenario.name {
                "retransmitter silent" => silent_requests.0 = Some(m.recovery.requests_sent),
                "silent, server breaker" => silent_requests.1 = Some(m.recovery.requests_sent),
                _ => {}
            }
        }
        let row = fault_suite::row(scenario, &out, &failed);
        // Straight to the process's stderr: libtest does not capture it.
        let _ = writeln!(stderr, "{row}");
        table.push(row);
        failures.extend(
            failed
                .into_iter()
                .map(|f| format!("{}: {f}", scenario.name)),
        );
    }
    if let (Some(without), Some(with)) = silent_requests {
        // The same loss (same seed) to the same silent server: the breaker stops the
        // requests that the line without one goes on sending.
        if with >= without {
            failures.push(format!(
                "silent, server breaker: {with} requests sent, not fewer than the {without} \
                 sent without a breaker"
            ));
        }
    }
    let oracle_note = if oracle.is_some() {
        "books compared with itch-book's where nothing was lost"
    } else {
        "ORACLE SKIPPED: books compared with a replay only"
    };
    table.push(oracle_note.to_owned());
    let text = table.join("\n") + "\n";
    let _ = writeln!(stderr, "{oracle_note}");
    let target = util::repo_root().join("target");
    let _ = std::fs::create_dir_all(&target);
    std::fs::write(target.join("fault_table.txt"), &text).expect("write target/fault_table.txt");
    assert!(failures.is_empty(), "{}\n{}", text, failures.join("\n"));
}
