//! `GET /metrics`: the engine's counters in the Prometheus text exposition, encoded by
//! `prometheus-client` from the shared handles at each scrape (a [`Collector`]: nothing is
//! kept twice, nothing is updated on the hot path for the sake of metrics).
//!
//! Names start `ticklane_`, are in base units (seconds), counters end in `_total`, and the
//! labels are `feed` and `dependency`, and for the servers `server`, `result` and `reason`
//! (never a symbol or an account: a label per stock would make a series per stock).
//!
//! One adaptation: `prometheus-client` writes OpenMetrics, whose counter families are named
//! without `_total` (`# TYPE ticklane_messages counter`, sample `ticklane_messages_total`).
//! The Prometheus text format (0.0.4) and its linter, `promtool check metrics`, want the
//! family named as the sample. So counters here are a [`TextCounter`]: typed counter, its
//! sample written through the encoder's plain value path under the family's full name.
//! The body is served as `text/plain; version=0.0.4`; its `# UNIT` and `# EOF` lines are
//! comments to that format.

use std::fmt;
use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, MetricEncoder};
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

use super::AdminState;
use ticklane_pipeline::health::HealthState;

/// The `Content-Type` of `/metrics`.
pub const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A counter whose family name already ends in `_total` (see the module's docs).
pub(super) struct TextCounter(pub(super) u64);

impl EncodeMetric for TextCounter {
    fn encode(&self, mut encoder: MetricEncoder) -> fmt::Result {
        encoder.encode_gauge(&self.0)
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Counter
    }
}

/// Label pairs of one series.
pub(super) type Labels = Vec<(&'static str, String)>;

/// Writes one family: its descriptor, then one sample per label set; nothing at all when
/// there is no sample (a family with no series would be a descriptor for nothing).
pub(super) fn family<M: EncodeMetric>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    samples: Vec<(Labels, M)>,
) -> fmt::Result {
    let Some(kind) = samples.first().map(|(_, m)| m.metric_type()) else {
        return Ok(());
    };
    let mut metric = encoder.encode_descriptor(name, help, unit, kind)?;
    if let [(labels, sample)] = &samples[..] {
        if labels.is_empty() {
            // A process-wide series: no `{}` after its name.
            return sample.encode(metric);
        }
    }
    for (labels, sample) in &samples {
        sample.encode(metric.encode_family(labels)?)?;
    }
    Ok(())
}

/// The value of `ticklane_health_state`.
fn health_code(state: HealthState) -> i64 {
    match state {
        HealthState::Healthy => 0,
        HealthState::Starting => 1,
        HealthState::Degraded => 2,
        HealthState::Unhealthy => 3,
    }
}

/// Reads the shared handles at each scrape.
#[derive(Debug)]
struct EngineCollector(Arc<AdminState>);

impl Collector for EngineCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let state = &self.0;
        let report = state.health.report();
        family(
            &mut encoder,
            "health_state",
            "Health: 0 Healthy, 1 Starting, 2 Degraded, 3 Unhealthy.",
            None,
            vec![(Vec::new(), ConstGauge::new(health_code(report.state)))],
        )?;
        family(
            &mut encoder,
            "draining",
            "1 while the process drains after SIGTERM (health answers 503).",
            None,
            vec![(
                Vec::new(),
                ConstGauge::new(i64::from(report.draining_since_ns.is_some())),
            )],
        )?;
        encode_lines(&mut encoder, state)?;
        encode_overload(&mut encoder, state)?;
        encode_latency(&mut encoder, state)?;
        encode_dependencies(&mut encoder, state)?;
        super::server_metrics::encode_servers(&mut encoder, &state.servers)
    }
}

/// The reader stages' counters, per feed.
fn encode_lines(encoder: &mut DescriptorEncoder, state: &AdminState) -> fmt::Result {
    let lines: Vec<_> = state
        .feeds
        .iter()
        .map(|f| (vec![("feed", f.name.clone())], f.line.load()))
        .collect();
    type Pick = fn(&ticklane_pipeline::LineCounts) -> u64;
    let counters: [(&str, &str, Pick); 16] = [
        (
            "messages_total",
            "Messages the reader pushed to the book thread.",
            |c| c.messages,
        ),
        (
            "packets_total",
            "MoldUDP64 packets received, heartbeats included.",
            |c| c.packets,
        ),
        ("gaps_detected_total", "Sequence gaps detected.", |c| {
            c.gaps_detected
        }),
        (
            "gap_messages_recovered_total",
            "Messages that had been missing and were recovered by retransmission.",
            |c| c.messages_recovered,
        ),
        ("gaps_lost_total", "Ranges declared lost.", |c| c.gaps_lost),
        (
            "messages_lost_total",
            "Messages declared lost (the books are flagged MAYBE_BAD).",
            |c| c.messages_lost,
        ),
        (
            "duplicate_messages_total",
            "Messages received more than once.",
            |c| c.duplicates,
        ),
        (
            "retransmission_requests_total",
            "Retransmission request datagrams sent, first tries and retries.",
            |c| c.requests_sent,
        ),
        (
            "retransmission_first_requests_total",
            "First retransmission requests, one per gap asked for.",
            |c| c.first_requests,
        ),
        (
            "retransmission_retries_total",
            "Retransmission requests retried.",
            |c| c.retries,
        ),
        (
            "retransmission_continuations_total",
            "Requests for the rest of a gap whose last try was answered in part.",
            |c| c.continuations,
        ),
        (
            "retransmission_retries_refused_total",
            "Retries the retry budget refused.",
            |c| c.retries_refused,
        ),
        (
            "retransmission_timeouts_total",
            "Retransmission requests unanswered within their reply timeout.",
            |c| c.request_timeouts,
        ),
        (
            "retransmission_limit_changes_total",
            "Changes of the adaptive limit on requests in flight.",
            |c| c.limit_changes,
        ),
        (
            "reorder_store_packets_deferred_total",
            "Packets the full reorder store let go, asked for again once it has room (never a loss).",
            |c| c.packets_deferred,
        ),
        ("reconnects_total", "SoupBinTCP reconnects.", |c| {
            c.reconnects
        }),
    ];
    for (name, help, pick) in counters {
        let samples = lines
            .iter()
            .map(|(l, c)| (l.clone(), TextCounter(pick(c))))
            .collect();
        family(encoder, name, help, None, samples)?;
    }
    let gauge = |pick: Pick| -> Vec<(Labels, ConstGauge<u64>)> {
        lines
            .iter()
            .map(|(l, c)| (l.clone(), ConstGauge::new(pick(c))))
            .collect()
    };
    family(
        encoder,
        "retry_budget_left",
        "Retransmission retries the budget still allows.",
        None,
        gauge(|c| c.budget_left),
    )?;
    family(
        encoder,
        "retransmission_limit",
        "The adaptive limit on retransmission requests in flight.",
        None,
        gauge(|c| c.adaptive_limit),
    )?;
    family(
        encoder,
        "reorder_store_packets",
        "Packets waiting in the reorder store behind a gap.",
        None,
        gauge(|c| c.store_packets),
    )?;
    family(
        encoder,
        "reorder_store_capacity_packets",
        "Packets the reorder store can hold (feed.reorder_store_packets).",
        None,
        gauge(|c| c.store_capacity),
    )?;
    let timeouts = lines
        .iter()
        .map(|(l, c)| (l.clone(), ConstGauge::new(c.reply_timeout_ns as f64 / 1e9)))
        .collect();
    family(
        encoder,
        "retransmission_reply_timeout",
        "The reply timeout the next retransmission request gets, from measured replies.",
        Some(&Unit::Seconds),
        timeouts,
    )
}

/// The publisher's overload counters, per feed that publishes.
fn encode_overload(encoder: &mut DescriptorEncoder, state: &AdminState) -> fmt::Result {
    let published: Vec<_> = state
        .feeds
        .iter()
        .filter_map(|f| {
            f.overload
                .as_ref()
                .map(|o| (vec![("feed", f.name.clone())], o.load()))
        })
        .collect();
    type Pick = fn(&ticklane_pipeline::overload::OverloadCounts) -> u64;
    let counters: [(&str, &str, Pick); 10] = [
        (
            "snapshot_publications_total",
            "Instrument states published into the snapshot.",
            |c| c.published,
        ),
        (
            "snapshot_publications_missed_total",
            "Publications lost because the snapshot had no free slot.",
            |c| c.snapshot_full,
        ),
        (
            "publications_shed_total",
            "Publications not made at their message's turn (deferred under overload).",
            |c| c.shed,
        ),
        (
            "publications_conflated_total",
            "Changes folded into an instrument's pending publication.",
            |c| c.conflated,
        ),
        (
            "publications_expired_total",
            "Pending updates older than the deadline, replaced by the latest state.",
            |c| c.expired,
        ),
        (
            "overload_episodes_total",
            "Times the book thread's input queue was declared standing.",
            |c| c.overload_episodes,
        ),
        (
            "subscriber_events_delivered_total",
            "Events delivered to subscriber queues.",
            |c| c.events_delivered,
        ),
        (
            "subscriber_events_conflated_total",
            "State events folded into a subscriber's pending refresh.",
            |c| c.events_conflated,
        ),
        (
            "subscriber_events_expired_total",
            "State events past the deadline, replaced by a refresh.",
            |c| c.events_expired,
        ),
        (
            "subscribers_cut_total",
            "Subscribers cut loose because an event that cannot be conflated did not fit.",
            |c| c.consumers_cut,
        ),
    ];
    for (name, help, pick) in counters {
        let samples = published
            .iter()
            .map(|(l, c)| (l.clone(), TextCounter(pick(c))))
            .collect();
        family(encoder, name, help, None, samples)?;
    }
    let seconds = |ns: u64| ns as f64 / 1e9;
    family(
        encoder,
        "overload_seconds_total",
        "Time spent with a standing input queue.",
        None,
        published
            .iter()
            .map(|(l, c)| (l.clone(), ConstGauge::new(seconds(c.overload_ns))))
            .map(|(l, g)| (l, SecondsCounter(g)))
            .collect(),
    )?;
    family(
        encoder,
        "max_sojourn",
        "Longest time a message waited in the book thread's input queue.",
        Some(&Unit::Seconds),
        published
            .iter()
            .map(|(l, c)| (l.clone(), ConstGauge::new(seconds(c.max_sojourn_ns))))
            .collect(),
    )
}

/// The book thread's receive-to-applied latency, per feed that exports it and has applied
/// something: a gauge family with a `stat` label (`p50`, `p99`, `p99.9`, `max`), over the
/// run so far, refreshed by the book thread at most every 100 ms
/// (`pipeline::latency_gauges`). Not a `quantile` label: `promtool check metrics` refuses
/// one outside a summary, and a summary is not what this is (prometheus-client 0.24 writes
/// none, and its `_sum` would have to be made up from the histogram).
fn encode_latency(encoder: &mut DescriptorEncoder, state: &AdminState) -> fmt::Result {
    let now: Vec<_> = state
        .feeds
        .iter()
        .filter_map(|f| f.latency.as_ref().map(|l| (f.name.clone(), l.load())))
        .filter(|(_, l)| l.samples > 0)
        .collect();
    let seconds = |ns: u64| ns as f64 / 1e9;
    let mut quantiles = Vec::new();
    for (feed, l) in &now {
        for (q, ns) in [
            ("p50", l.p50_ns),
            ("p99", l.p99_ns),
            ("p99.9", l.p999_ns),
            ("max", l.max_ns),
        ] {
            let labels: Labels = vec![("feed", feed.clone()), ("stat", q.to_owned())];
            quantiles.push((labels, ConstGauge::new(seconds(ns))));
        }
    }
    family(
        encoder,
        "book_latency",
        "Receive to applied by the book thread, over the run so far: p50, p99, p99.9, max.",
        Some(&Unit::Seconds),
        quantiles,
    )?;
    family(
        encoder,
        "book_latency_samples_total",
        "Messages the book latency quantiles cover.",
        None,
        now.iter()
            .map(|(feed, l)| (vec![("feed", feed.clone())], TextCounter(l.samples)))
            .collect(),
    )
}

/// A counter of seconds (a float), named with its `_total` like [`TextCounter`].
struct SecondsCounter(ConstGauge<f64>);

impl EncodeMetric for SecondsCounter {
    fn encode(&self, encoder: MetricEncoder) -> fmt::Result {
        self.0.encode(encoder)
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Counter
    }
}

/// Per dependency: the breaker, the calls, and what tells a retry storm from real demand.
fn encode_dependencies(encoder: &mut DescriptorEncoder, state: &AdminState) -> fmt::Result {
    let deps: Vec<_> = state
        .feeds
        .iter()
        .flat_map(|f| {
            f.dependencies.iter().map(|d| {
                (
                    vec![
                        ("feed", f.name.clone()),
                        ("dependency", d.name().to_owned()),
                    ],
                    d.breaker(),
                    d.counts(),
                )
            })
        })
        .collect();
    family(
        encoder,
        "dependency_breaker_state",
        "Circuit breaker: 0 closed, 1 open, 2 half-open, 3 isolated by hand.",
        None,
        deps.iter()
            .map(|(l, b, _)| (l.clone(), ConstGauge::new(i64::from(b.code()))))
            .collect(),
    )?;
    type Pick = fn(&ticklane_pipeline::dependency::DependencyCounts) -> u64;
    let counters: [(&str, &str, Pick); 6] = [
        (
            "dependency_breaker_transitions_total",
            "Circuit breaker state changes.",
            |c| c.breaker_transitions,
        ),
        (
            "dependency_calls_total",
            "Calls made to the dependency, first tries and retries.",
            |c| c.calls,
        ),
        (
            "dependency_distinct_calls_total",
            "Distinct request identities among the calls (retransmissions: gap ranges).",
            |c| c.distinct,
        ),
        ("dependency_successes_total", "Calls answered.", |c| {
            c.successes
        }),
        (
            "dependency_faults_total",
            "Calls that ended in an infrastructure fault (timeout, reset, silence).",
            |c| c.faults,
        ),
        (
            "dependency_refused_total",
            "Calls the circuit breaker refused.",
            |c| c.refused,
        ),
    ];
    for (name, help, pick) in counters {
        let samples = deps
            .iter()
            .map(|(l, _, c)| (l.clone(), TextCounter(pick(c))))
            .collect();
        family(encoder, name, help, None, samples)?;
    }
    family(
        encoder,
        "dependency_call_multiplier",
        "Calls per distinct request identity: near 1 is real demand, rising is a retry storm.",
        None,
        deps.iter()
            .filter_map(|(l, _, c)| c.call_multiplier().map(|m| (l.clone(), ConstGauge::new(m))))
            .collect(),
    )?;
    family(
        encoder,
        "dependency_success_ratio",
        "Successes per call.",
        None,
        deps.iter()
            .filter_map(|(l, _, c)| c.success_ratio().map(|r| (l.clone(), ConstGauge::new(r))))
            .collect(),
    )
}

/// A registry (prefix `ticklane`) whose one collector reads `state` at each scrape.
pub fn metrics_registry(state: Arc<AdminState>) -> Registry {
    let mut registry = Registry::with_prefix("ticklane");
    registry.register_collector(Box::new(EngineCollector(state)));
    registry
}

/// The exposition text of `registry` now.
pub fn render_metrics(registry: &Registry) -> String {
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, registry)
        .expect("invariant: writing into a String never fails");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admin::FeedHandles;
    use ticklane_feed::moldudp64::RecoveryCounts;
    use ticklane_pipeline::dependency::{
        BreakerMirror, Dependency, DependencyCounts, DependencyKind,
    };
    use ticklane_pipeline::health::{Condition, Health};
    use ticklane_pipeline::overload::{OverloadCounters, OverloadCounts};
    use ticklane_pipeline::{LatencyGauges, LatencyPublisher, LineCounters};

    fn state() -> Arc<AdminState> {
        let line = Arc::new(LineCounters::new());
        line.store_mold(
            &RecoveryCounts {
                packets: 40,
                gaps: 3,
                reply_timeout: std::time::Duration::from_millis(250),
                ..RecoveryCounts::default()
            },
            1234,
        );
        let retrans = Arc::new(Dependency::new(
            "a.retransmission",
            DependencyKind::RetransmissionServer,
        ));
        retrans.mirror_breaker(BreakerMirror::HalfOpen, 2);
        retrans.store_counts(DependencyCounts {
            calls: 30,
            distinct: 10,
            successes: 12,
            ..DependencyCounts::default()
        });
        let overload = Arc::new(OverloadCounters::default());
        overload.store(&OverloadCounts {
            published: 900,
            snapshot_full: 7,
            max_sojourn_ns: 1_500_000,
            ..OverloadCounts::default()
        });
        let health = Arc::new(Health::new());
        health.raise(Condition::LineStale, 1);
        Arc::new(AdminState {
            health,
            feeds: vec![FeedHandles {
                name: "a".into(),
                line,
                dependencies: vec![
                    Arc::new(Dependency::new("a", DependencyKind::Line)),
                    retrans,
                ],
                overload: Some(overload),
                latency: Some(latency()),
            }],
            token: None,
            servers: Arc::default(),
        })
    }

    /// Latency gauges holding 1 ..= 1,000 ns, one message each: exact in the histogram
    /// (below 2,048 every value is its own bucket), so the order statistics are known
    /// without it: p50 500 ns, p99 990, p99.9 999, max 1,000.
    fn latency() -> Arc<LatencyGauges> {
        let gauges = Arc::new(LatencyGauges::new());
        let mut h = ticklane_pipeline::new_histogram();
        for ns in 1..=1_000u64 {
            h.saturating_record(ns);
        }
        LatencyPublisher::new(Some(Arc::clone(&gauges))).publish_final(&h);
        gauges
    }

    /// The value of the sample line that starts with `series ` (name and labels).
    fn value(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
    }

    #[test]
    fn the_book_latency_quantiles_are_exported_in_seconds() {
        let text = render_metrics(&metrics_registry(state()));
        assert!(
            text.contains("# TYPE ticklane_book_latency_seconds gauge"),
            "{text}"
        );
        for (q, ns) in [
            ("p50", 500.0),
            ("p99", 990.0),
            ("p99.9", 999.0),
            ("max", 1_000.0),
        ] {
            let series = format!("ticklane_book_latency_seconds{{feed=\"a\",stat=\"{q}\"}}");
            let got = value(&text, &series).unwrap_or_else(|| panic!("no {series} in\n{text}"));
            assert!((got - ns / 1e9).abs() < 1e-15, "{series} {got}");
        }
        let samples = "ticklane_book_latency_samples_total{feed=\"a\"}";
        assert_eq!(value(&text, samples), Some(1_000.0), "{text}");
    }

    #[test]
    fn a_feed_that_applied_nothing_has_no_latency_series() {
        let mut state = Arc::into_inner(state()).expect("one owner");
        state.feeds[0].latency = Some(Arc::new(LatencyGauges::new()));
        let text = render_metrics(&metrics_registry(Arc::new(state)));
        assert!(!text.contains("book_latency"), "{text}");
    }

    /// The sample lines of the exposition (no comments).
    fn samples(text: &str) -> Vec<&str> {
        text.lines().filter(|l| !l.starts_with('#')).collect()
    }

    #[test]
    fn the_handles_values_reach_their_series() {
        let text = render_metrics(&metrics_registry(state()));
        let s = samples(&text);
        // Expected lines written by hand from the values stored above.
        for line in [
            "ticklane_health_state 2",
            "ticklane_draining 0",
            "ticklane_messages_total{feed=\"a\"} 1234",
            "ticklane_packets_total{feed=\"a\"} 40",
            "ticklane_gaps_detected_total{feed=\"a\"} 3",
            "ticklane_retransmission_reply_timeout_seconds{feed=\"a\"} 0.25",
            "ticklane_snapshot_publications_total{feed=\"a\"} 900",
            "ticklane_snapshot_publications_missed_total{feed=\"a\"} 7",
            "ticklane_max_sojourn_seconds{feed=\"a\"} 0.0015",
            "ticklane_dependency_breaker_state{feed=\"a\",dependency=\"a.retransmission\"} 2",
            "ticklane_dependency_breaker_state{feed=\"a\",dependency=\"a\"} 0",
            "ticklane_dependency_calls_total{feed=\"a\",dependency=\"a.retransmission\"} 30",
            "ticklane_dependency_call_multiplier{feed=\"a\",dependency=\"a.retransmission\"} 3.0",
            "ticklane_dependency_success_ratio{feed=\"a\",dependency=\"a.retransmission\"} 0.4",
        ] {
            assert!(s.contains(&line), "no `{line}` in\n{text}");
        }
        // A dependency never called has no multiplier or ratio (not a made-up 0 or NaN).
        assert!(!text.contains("ticklane_dependency_call_multiplier{feed=\"a\",dependency=\"a\"}"));
    }

    #[test]
    fn counter_families_are_named_as_their_samples() {
        let text = render_metrics(&metrics_registry(state()));
        for line in text.lines().filter(|l| l.starts_with("# TYPE ")) {
            let mut words = line.split(' ').skip(2);
            let (name, kind) = (words.next().expect("name"), words.next().expect("kind"));
            assert!(name.starts_with("ticklane_"), "{line}");
            assert_eq!(kind == "counter", name.ends_with("_total"), "{line}");
            assert!(
                text.lines()
                    .any(|l| l.starts_with(&format!("{name} "))
                        || l.starts_with(&format!("{name}{{"))),
                "family {name} has no sample named as it"
            );
        }
    }
}
