//! The per-line counters of a MoldUDP64 session heard on lines A and B: one row per line in
//! the run summary, and the same counters as one JSON object.

use std::fmt::Write as _;
use std::io::{self, Write};

use crate::digit_groups::group;
use crate::pipeline::{ArbitrationReport, LineArbitration};

/// One row per line: packets, messages carried, messages won (delivered from its copy),
/// gaps on that line alone, and silence; then what retransmission delivered.
///
/// # Errors
///
/// Whatever `out` returns.
pub fn write_ab_lines(out: &mut impl Write, r: &ArbitrationReport) -> io::Result<()> {
    for (name, line) in [("A", &r.a), ("B", &r.b)] {
        writeln!(
            out,
            "  line {name}       packets {}   messages {}   won {}   own gaps {} ({} messages)   \
             longest silence {:.3} s   silent now {:.3} s   silent while the other flowed {}",
            group(line.packets),
            group(line.messages),
            group(line.won),
            group(line.gaps),
            group(line.messages_missed),
            line.longest_silence.as_secs_f64(),
            line.silence_now.as_secs_f64(),
            line.silent_while_other_flowed
        )?;
    }
    writeln!(
        out,
        "  arbitration  won A {} + won B {} + retransmitted {} = delivered {}",
        group(r.a.won),
        group(r.b.won),
        group(r.retransmitted_won),
        group(r.delivered())
    )
}

/// The counters as one JSON object: `{"a":{...},"b":{...},"retransmitted_won":N}`, each
/// line's keys as in [`ArbitrationReport::fields`] (durations in nanoseconds).
pub fn ab_lines_json(r: &ArbitrationReport) -> String {
    let line = |l: &LineArbitration| {
        let mut out = String::from("{");
        for (i, (key, value)) in ArbitrationReport::fields(l).into_iter().enumerate() {
            let _ = write!(out, "{}\"{key}\":{value}", if i == 0 { "" } else { "," });
        }
        out.push('}');
        out
    };
    format!(
        "{{\"a\":{},\"b\":{},\"retransmitted_won\":{}}}",
        line(&r.a),
        line(&r.b),
        r.retransmitted_won
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn report() -> ArbitrationReport {
        ArbitrationReport {
            a: LineArbitration {
                packets: 1_200,
                messages: 9_000,
                won: 8_000,
                gaps: 12,
                messages_missed: 40,
                longest_silence: Duration::from_millis(250),
                ..LineArbitration::default()
            },
            b: LineArbitration {
                won: 990,
                silent_while_other_flowed: 1,
                ..LineArbitration::default()
            },
            retransmitted_won: 10,
        }
    }

    #[test]
    fn each_line_gets_a_row_and_the_wins_add_up() {
        let mut out = Vec::new();
        write_ab_lines(&mut out, &report()).expect("write");
        let text = String::from_utf8(out).expect("UTF-8");
        assert!(text.contains("line A       packets 1,200   messages 9,000   won 8,000   own gaps 12 (40 messages)   longest silence 0.250 s"), "{text}");
        assert!(text.contains("silent while the other flowed 1\n"), "{text}");
        assert!(
            text.contains("won A 8,000 + won B 990 + retransmitted 10 = delivered 9,000"),
            "{text}"
        );
    }

    #[test]
    fn the_json_object_names_every_counter_of_both_lines() {
        let j = ab_lines_json(&report());
        assert_eq!(
            j,
            "{\"a\":{\"packets\":1200,\"messages\":9000,\"won\":8000,\"gaps\":12,\
             \"messages_missed\":40,\"longest_silence_ns\":250000000,\"silence_now_ns\":0,\
             \"silent_while_other_flowed\":0},\
             \"b\":{\"packets\":0,\"messages\":0,\"won\":990,\"gaps\":0,\
             \"messages_missed\":0,\"longest_silence_ns\":0,\"silence_now_ns\":0,\
             \"silent_while_other_flowed\":1},\"retransmitted_won\":10}"
        );
    }
}
