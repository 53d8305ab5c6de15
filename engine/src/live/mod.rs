//! `ticklane run`: one feed line through the live pipeline into the snapshot, until the end
//! of session, a signal, or a time limit; and `ticklane record`, which writes a line's
//! packets to pcap.

mod demo;
mod line;
mod record;
mod shutdown;

pub use demo::{run_demo, DemoConfig, DemoError, DemoReport};
pub use line::{run_line, LineReport, LineRun, LineSource, LineSourceReport, FEED_KEYS};
pub use record::{record_udp, RecordError, RecordReport};
pub use shutdown::install_shutdown;
