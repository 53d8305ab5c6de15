//! What the `ticklane` binary prints, as functions that write to any `io::Write`: the book
//! ladders of the replay demo, `ticklane book`'s view of one snapshot slot, `ticklane top`'s
//! frames, the status lines of a snapshot, the summary of a live line and of the exchange
//! simulator, the text of an error, and the process exit statuses. The command (`engine/cli`)
//! parses arguments, calls an application and hands its report to one of these; tests read
//! the same text. Every report's text is here, and only here.
//!
//! Views sit above the applications: they see the reports of a replay, a live line or the
//! demo and the books and snapshot below, and never run anything (the commands that print
//! as they go are in `watch`, above them). Times that age against the wall clock take the
//! current time as an argument, so a test can pin it.

mod ab_lines;
mod book_ladder;
mod book_view;
mod exit_status;
mod line_report;
mod line_summary;
mod live_screens;
mod replay_screen;
mod replay_summary;
mod serve_summary;
mod sim_summary;
mod snapshot_status;
mod subscriber_lines;
mod tail_report;
mod time_of_day;
mod top_frame;

pub use crate::digit_groups::group;
pub use ab_lines::{ab_lines_json, write_ab_lines};
pub use book_ladder::{write_book_ladder, write_tops};
pub use book_view::write_book_view;
pub use exit_status::{error_text, ExitStatus};
pub use line_report::{
    declared_lost, demo_status, line_run_status, ready_line, write_demo_intro, write_demo_report,
    write_line_run, write_source,
};
pub use line_summary::{
    latency_line, overload_text, write_latency, write_lost_ranges, write_mold_source,
    write_overload, write_soup_source, NO_REQUEST_SERVER,
};
pub use live_screens::{
    write_line_end, write_record_end, write_run_notice, write_sim_banner, write_sim_report,
};
pub use replay_screen::{write_replay_demo, write_replay_demo_intro, write_replay_run};
pub use serve_summary::write_serve_counts;
pub use sim_summary::{write_glimpse_sim_stats, write_mold_sim_stats, write_soup_sim_stats};
pub use snapshot_status::{age, book_csv_warning, header_status, slot_flags, SILENT_AFTER_NS};
pub use subscriber_lines::write_subscriber_event;
pub use time_of_day::time_of_day;
pub use top_frame::{write_top_frame, TopFrames, TopRow};
