//! File replay, the application that wires the books, the CSV writers and (paced) the
//! pipeline and snapshot to a captured input: the outputs the contracts name, the top-of-book
//! stream, the final depth and the summary.

mod bbo_outputs;
mod book_thread;
mod dbn_input;
mod dbn_session;
mod demo_day;
mod each_message;
mod fault;
mod merge;
mod output_paths;
mod paced;
mod partition;
mod request;
mod run;
mod summary;
mod summary_json;
mod threaded;

pub use crate::digit_groups::group;
pub use dbn_input::{is_dbn_input, refuse_what_needs_itch};
pub use demo_day::replay_demo_day;
pub use fault::ReplayFault;
pub use output_paths::{check_output_paths, PathClash};
pub use paced::{replay_paced, PacedOutcome, SnapshotTarget};
pub use partition::LocatePartition;
pub use request::{
    declared_lost_line, run_replay, PacedFigures, PacedRequest, ReplayRequest, ReplayRun,
};
pub use run::{replay_file, ReplayError, ReplayOptions, ReplayOutcome};
pub use summary::{DbnCounts, PacketCounts, ReplaySummary};
pub use threaded::{replay_file_threaded, PartitionedOutcome};
