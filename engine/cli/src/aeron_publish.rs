//! `run --aeron CHANNEL` and `[aeron]`: the Aeron publisher beside the line. Built with the
//! `aeron` feature; without it a configured channel is refused (exit 2).

use std::io;
use std::path::Path;

use ticklane_engine::config::RunConfig;
use ticklane_engine::live::{ConsumerHandles, StreamConsumer};
use ticklane_engine::overload::SubscriberHub;
#[cfg(feature = "aeron")]
use {std::sync::Arc, ticklane_engine::admin::StageMetrics};

/// The publisher, once the line starts it.
#[derive(Debug, Default)]
pub struct AeronPublish {
    /// `--aeron`, over the file's `aeron.channel`.
    channel: Option<String>,
    #[cfg_attr(not(feature = "aeron"), allow(dead_code))]
    state: PublishState,
}

/// The publisher thread while it runs, and how it ended.
#[cfg(feature = "aeron")]
#[derive(Debug, Default)]
struct PublishState {
    running: Option<ticklane_aeron::PublisherThread>,
    end: Option<ticklane_aeron::PublisherEnd>,
}

/// Nothing runs in a build without the feature.
#[cfg(not(feature = "aeron"))]
type PublishState = ();

impl AeronPublish {
    /// The publisher for `ticklane run`; `channel` is `--aeron`'s.
    pub fn new(channel: Option<String>) -> Self {
        AeronPublish {
            channel,
            state: PublishState::default(),
        }
    }

    fn channel<'a>(&'a self, config: &'a RunConfig) -> Option<&'a str> {
        self.channel.as_deref().or(config.aeron.channel.as_deref())
    }
}

#[cfg(not(feature = "aeron"))]
impl StreamConsumer for AeronPublish {
    fn wanted(&self, config: &RunConfig) -> bool {
        self.channel(config).is_some()
    }

    fn start(
        &mut self,
        _: &RunConfig,
        _: SubscriberHub,
        _: &Path,
        _: ConsumerHandles<'_>,
    ) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "aeron.channel (or --aeron): this ticklane was built without the `aeron` feature \
             (cargo build --release --features aeron)",
        ))
    }

    fn line_ended(&mut self) {}
}

#[cfg(not(feature = "aeron"))]
impl AeronPublish {
    /// The run summary's line (none in this build).
    pub fn summary(&self) -> Option<String> {
        None
    }
}

#[cfg(feature = "aeron")]
impl StreamConsumer for AeronPublish {
    fn wanted(&self, config: &RunConfig) -> bool {
        self.channel(config).is_some()
    }

    fn dependency(&self) -> Option<&'static str> {
        Some("aeron")
    }

    fn start(
        &mut self,
        config: &RunConfig,
        hub: SubscriberHub,
        snapshot: &Path,
        handles: ConsumerHandles<'_>,
    ) -> io::Result<()> {
        use ticklane_aeron::aeron_link::{AeronNode, DriverPlace};
        use ticklane_aeron::{
            BookPublisher, GuardedTransport, PublicationHandles, PublisherConfig, PublisherThread,
            StreamStamp,
        };
        use ticklane_engine::snapshot::{wall_clock_ns, SnapshotReader};

        let Some(channel) = self.channel(config).map(str::to_owned) else {
            return Ok(());
        };
        let section = &config.aeron;
        let place = match &section.dir {
            Some(dir) => DriverPlace::External(dir.clone()),
            None => DriverPlace::Embedded,
        };
        let settings = PublisherConfig {
            refresh_cycle: section.refresh_cycle,
            heartbeat: section.heartbeat,
            trade_queue: TRADE_QUEUE,
            stamp: StreamStamp::nasdaq_today(),
        };
        let (stream, snapshot) = (section.stream_id, snapshot.to_path_buf());
        let driver = match &place {
            DriverPlace::Embedded => "embedded media driver".to_owned(),
            DriverPlace::External(dir) => format!("media driver at {}", dir.display()),
        };
        let opened = channel.clone();
        let guard = PublicationHandles {
            dependency: handles.dependency.cloned(),
            health: Some(Arc::clone(handles.health)),
        };
        let heartbeat = section.heartbeat;
        let running = PublisherThread::start(hub, section.linger, config.engine.wait, move || {
            let transport = GuardedTransport::new(
                AeronNode::connect(&place)?.into_publication(&opened, stream)?,
                heartbeat,
                guard,
            );
            let reader = SnapshotReader::open(&snapshot).map_err(io::Error::other)?;
            Ok(BookPublisher::new(
                transport,
                reader,
                settings,
                wall_clock_ns(),
            ))
        })?;
        let series: Arc<dyn StageMetrics> = Arc::new(PublisherSeries(running.counters()));
        let _ = handles.metrics.set(series);
        println!("ticklane run: book updates on {channel} stream {stream} ({driver})");
        self.state.running = Some(running);
        Ok(())
    }

    fn line_ended(&mut self) {
        self.state.end = self
            .state
            .running
            .take()
            .and_then(ticklane_aeron::PublisherThread::join);
    }
}

/// Trades that may wait for the transport: a second of a busy day's trades.
#[cfg(feature = "aeron")]
const TRADE_QUEUE: usize = 64 * 1024;

#[cfg(feature = "aeron")]
impl AeronPublish {
    /// The run summary's line: what went out on the stream, what was shed.
    pub fn summary(&self) -> Option<String> {
        let end = self.state.end?;
        let c = end.counts;
        Some(format!(
            "aeron: {} records ({} changes, {} trades, {} refreshes, {} cycles), {} conflated, \
             {} back-pressured, {} not connected, {} trades shed, {} rejoined; driver: {} NAKs \
             received, {} retransmits ({} bytes), {} errors; {}",
            c.records,
            c.changes,
            c.trades,
            c.refreshes,
            c.cycles,
            c.conflated,
            c.back_pressured,
            c.not_connected,
            c.trades_shed,
            c.rejoined,
            c.driver.naks_received,
            c.driver.retransmits_sent,
            c.driver.retransmitted_bytes,
            c.driver.errors,
            if end.ended_cleanly {
                "end of stream sent"
            } else {
                "END OF STREAM NOT SENT"
            }
        ))
    }
}

/// The publisher's counters as `/metrics` series.
#[cfg(feature = "aeron")]
#[derive(Debug)]
struct PublisherSeries(Arc<ticklane_aeron::PublisherCounters>);

#[cfg(feature = "aeron")]
impl StageMetrics for PublisherSeries {
    fn series(&self) -> Vec<ticklane_engine::admin::StageSeries> {
        use std::sync::atomic::Ordering;
        use ticklane_engine::admin::{StageSeries, StageValue};
        let c = &self.0;
        let counts = c.load();
        let counter = |name, help, v| StageSeries {
            name,
            help,
            value: StageValue::Counter(v),
        };
        let gauge = |name, help, v: u64| StageSeries {
            name,
            help,
            value: StageValue::Gauge(i64::try_from(v).unwrap_or(i64::MAX)),
        };
        vec![
            counter(
                "aeron_records_total",
                "Records the Aeron publisher put on the stream.",
                counts.records,
            ),
            counter(
                "aeron_bytes_total",
                "Bytes the Aeron publisher put on the stream.",
                counts.bytes,
            ),
            counter(
                "aeron_changes_total",
                "Book records sent for changes.",
                counts.changes,
            ),
            counter("aeron_trades_total", "Trade records sent.", counts.trades),
            counter(
                "aeron_refreshes_total",
                "Refresh records sent (the refresh cycle).",
                counts.refreshes,
            ),
            counter(
                "aeron_refresh_cycles_total",
                "Refresh cycles completed.",
                counts.cycles,
            ),
            StageSeries {
                name: "aeron_refresh_cycle_seconds",
                help: "How long the last refresh cycle took.",
                value: StageValue::Seconds(c.cycle_ns.load(Ordering::Relaxed) as f64 / 1e9),
            },
            counter(
                "aeron_conflated_total",
                "Book changes folded into a later record of the same book.",
                counts.conflated,
            ),
            counter(
                "aeron_back_pressured_total",
                "Offers the stream refused because subscribers were behind.",
                counts.back_pressured,
            ),
            gauge(
                "aeron_back_pressure",
                "1 while the publisher serves newest first under back pressure.",
                c.back_pressure.load(Ordering::Relaxed),
            ),
            gauge(
                "aeron_connected",
                "1 while some subscriber is connected.",
                c.connected.load(Ordering::Relaxed),
            ),
            counter(
                "aeron_not_connected_total",
                "Records not sent because no subscriber was connected.",
                counts.not_connected,
            ),
            counter(
                "aeron_trades_shed_total",
                "Trades shed because the trade queue was full.",
                counts.trades_shed,
            ),
            counter(
                "aeron_rejoined_total",
                "Times the update stream cut the publisher loose (it refreshed every book).",
                counts.rejoined,
            ),
            counter(
                "aeron_unmapped_total",
                "Changes for stocks without a snapshot slot.",
                counts.unmapped,
            ),
            counter(
                "aeron_driver_naks_received_total",
                "NAKs the media driver received from subscribers (the driver's total).",
                counts.driver.naks_received,
            ),
            counter(
                "aeron_driver_retransmits_sent_total",
                "Retransmissions the media driver sent in answer (the driver's total).",
                counts.driver.retransmits_sent,
            ),
            counter(
                "aeron_driver_retransmitted_bytes_total",
                "Bytes the media driver retransmitted (the driver's total).",
                counts.driver.retransmitted_bytes,
            ),
            counter(
                "aeron_driver_errors_total",
                "Errors the media driver logged.",
                counts.driver.errors,
            ),
        ]
    }
}
