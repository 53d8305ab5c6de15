//! `GET /health`'s body: the report as JSON.

use serde::Serialize;

use ticklane_pipeline::health::HealthReport;

#[derive(Serialize)]
struct HealthBody<'a> {
    state: &'static str,
    draining: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    draining_since_ns: Option<u64>,
    reasons: Vec<ReasonBody<'a>>,
}

#[derive(Serialize)]
struct ReasonBody<'a> {
    condition: &'a str,
    meaning: &'a str,
    since_ns: u64,
    raised: u64,
}

/// `{"state": "Healthy", "draining": false, "reasons": [{"condition", "meaning",
/// "since_ns", "raised"}]}`; `draining_since_ns` is there while draining.
pub fn health_json(report: &HealthReport) -> String {
    let body = HealthBody {
        state: report.state.name(),
        draining: report.draining_since_ns.is_some(),
        draining_since_ns: report.draining_since_ns,
        reasons: report
            .reasons
            .iter()
            .map(|r| ReasonBody {
                condition: r.condition.name(),
                meaning: r.condition.meaning(),
                since_ns: r.since_ns,
                raised: r.raised,
            })
            .collect(),
    };
    serde_json::to_string(&body).expect("invariant: plain strings and integers always serialize")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklane_pipeline::health::{Condition, Health};

    #[test]
    fn the_body_names_the_state_and_each_reason() {
        let h = Health::new();
        assert_eq!(
            health_json(&h.report()),
            r#"{"state":"Healthy","draining":false,"reasons":[]}"#
        );
        h.raise(Condition::LineStale, 42);
        h.begin_draining(50);
        let expected = format!(
            r#"{{"state":"Degraded","draining":true,"draining_since_ns":50,"reasons":[{{"condition":"line_stale","meaning":"{}","since_ns":42,"raised":1}}]}}"#,
            "the line is silent, disconnected or reconnecting: books are flagged STALE"
        );
        assert_eq!(health_json(&h.report()), expected);
    }
}
