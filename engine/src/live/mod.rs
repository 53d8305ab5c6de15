//! `ticklane run`: one feed line through the live pipeline into the snapshot, until the end
//! of session, a signal, or a time limit; the live demo; `ticklane record`, which writes a
//! line's packets to pcap; and `ticklane sim`, the exchange simulator that serves a day.

mod configured_line;
mod demo;
mod exchange_sim;
mod line;
mod line_file;
mod line_handles;
mod record;
mod record_file;
mod shutdown;
mod stagger;
mod stream_consumer;

pub use configured_line::{
    run_configured_line, without_snapshot, ConfiguredLineError, ConfiguredLineOptions,
    ConfiguredLineRun, RunNotice,
};
pub use demo::{run_demo, DemoConfig, DemoError, DemoReport, TransportCheck};
pub use exchange_sim::{ExchangeSim, ExchangeSimConfig, ExchangeSimReport, GlimpseServer};
pub use line::{
    run_line, run_line_watched, run_observed_line, run_served_line, LineReport, LineRun,
    LineSource, LineSourceReport, FEED_KEYS,
};
pub use line_file::{run_demo_until_signal, run_line_file};
pub use line_handles::{LineHandles, RETRANSMISSION_SUFFIX};
pub use record::{record_udp, RecordError, RecordReport};
pub use record_file::{record_line_file, RecordRefused};
pub use shutdown::{
    install_draining_shutdown, install_shutdown, DrainControl, SignalAction, DRAIN_TIMED_OUT,
    SECOND_SIGNAL,
};
pub use stagger::{process_seed, stagger_delay, stagger_start, wait_out_stagger};
pub use stream_consumer::{ConsumerHandles, StreamConsumer};
