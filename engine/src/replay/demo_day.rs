//! `ticklane demo`: a synthetic day generated into a temporary file and replayed through
//! the books with the progress line on, the file removed whatever the replay's outcome.

use std::path::PathBuf;

use anyhow::Result;
use ticklane_sim::{write_itch50_file, GenConfig};

use super::{replay_file, ReplayOptions, ReplayOutcome};
use crate::book::BookConfig;

/// Generates `messages` over `stocks` (seed 1, the hard cases included) and replays them.
///
/// # Errors
///
/// The day could not be written, or the replay failed.
pub fn replay_demo_day(messages: u64, stocks: u16) -> Result<ReplayOutcome> {
    let path: PathBuf =
        std::env::temp_dir().join(format!("ticklane-demo-{}.itch50", std::process::id()));
    let day = GenConfig {
        messages,
        seed: 1,
        stocks,
        hard_cases: true,
        crossing: false,
    };
    write_itch50_file(&path, day)?;
    let opts = ReplayOptions {
        input: path.clone(),
        depth: 5,
        books: BookConfig {
            max_orders: 1 << 20,
            ..BookConfig::default()
        },
        progress: true,
        ..ReplayOptions::default()
    };
    let outcome = replay_file(&opts);
    let _ = std::fs::remove_file(&path);
    Ok(outcome?)
}
