//! The handles other threads hold on a running line: its reader's counters, the
//! publisher's overload counters, the book thread's latency percentiles, and one [`Dependency`] per thing the line calls (its
//! server, its retransmission server). Made before the line starts, so that the admin
//! server can be handed them; the line's stages fill them in.

use std::sync::Arc;

use crate::config::FeedConfig;
use crate::dependency::{Dependency, DependencyKind};
use crate::health::Health;
use crate::overload::OverloadCounters;
use crate::pipeline::{GuardHandles, LatencyGauges, LineCounters};

/// Suffix of a line's retransmission server's dependency name (`{feed}.retransmission`).
pub const RETRANSMISSION_SUFFIX: &str = ".retransmission";

/// One line's shared handles.
#[derive(Debug, Clone)]
pub struct LineHandles {
    /// The feed's name (`feed.name`).
    pub name: String,
    /// The reader's counters.
    pub counters: Arc<LineCounters>,
    /// The publisher's overload counters.
    pub overload: Arc<OverloadCounters>,
    /// The book thread's receive-to-applied latency percentiles.
    pub latency: Arc<LatencyGauges>,
    /// The line itself (named as the feed), then its retransmission server if it has one.
    pub dependencies: Vec<Arc<Dependency>>,
}

impl LineHandles {
    /// Fresh handles for the line `feed` named `name`.
    pub fn new(name: &str, feed: &FeedConfig) -> Self {
        let mut dependencies = vec![Arc::new(Dependency::new(name, DependencyKind::Line))];
        if matches!(feed, FeedConfig::Mold(c) if c.request_server.is_some()) {
            dependencies.push(Arc::new(Dependency::new(
                format!("{name}{RETRANSMISSION_SUFFIX}"),
                DependencyKind::RetransmissionServer,
            )));
        }
        LineHandles {
            name: name.to_owned(),
            counters: Arc::new(LineCounters::new()),
            overload: Arc::new(OverloadCounters::default()),
            latency: Arc::new(LatencyGauges::new()),
            dependencies,
        }
    }

    /// What the line's reader reports to: the line's dependency, its retransmission
    /// server's, and `health`.
    pub fn guard(&self, health: Option<Arc<Health>>) -> GuardHandles {
        let of = |kind| {
            self.dependencies
                .iter()
                .find(|d| d.kind() == kind)
                .map(Arc::clone)
        };
        GuardHandles {
            line: of(DependencyKind::Line),
            retransmission: of(DependencyKind::RetransmissionServer),
            health,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::{MoldFeedConfig, SoupFeedConfig};
    use ticklane_feed::soupbintcp::{ClientConfig, Credentials};

    #[test]
    fn a_line_with_a_retransmission_server_has_two_dependencies() {
        let mold = MoldFeedConfig {
            request_server: Some("127.0.0.1:9".parse().expect("addr")),
            ..MoldFeedConfig::default()
        };
        let h = LineHandles::new("a", &FeedConfig::Mold(mold.clone()));
        let names: Vec<_> = h
            .dependencies
            .iter()
            .map(|d| (d.name(), d.kind()))
            .collect();
        assert_eq!(
            names,
            [
                ("a", DependencyKind::Line),
                ("a.retransmission", DependencyKind::RetransmissionServer)
            ]
        );
        let none = MoldFeedConfig {
            request_server: None,
            ..mold
        };
        assert_eq!(
            LineHandles::new("a", &FeedConfig::Mold(none))
                .dependencies
                .len(),
            1
        );
        let soup = SoupFeedConfig {
            server: "127.0.0.1:9".parse().expect("addr"),
            client: ClientConfig::new(Credentials::new(b"u", b"p").expect("fits")),
            connect_timeout: std::time::Duration::from_secs(1),
            reconnect: ticklane_feed::resilience::BackoffConfig {
                base: std::time::Duration::from_millis(1),
                cap: std::time::Duration::from_millis(2),
            },
            reconnect_seed: None,
            max_reconnects: 0,
            max_duration: None,
            breaker: crate::pipeline::DEFAULT_LINE_BREAKER,
        };
        assert_eq!(
            LineHandles::new("b", &FeedConfig::Soup(soup))
                .dependencies
                .len(),
            1
        );
    }
}
