//! Helpers shared by the engine's integration tests that need engine or feed types; the
//! rest (child processes, ports, packet bytes) come from `ticklane-testkit`.

pub mod overload;
pub mod serve;
pub mod snapshot;

use std::sync::Arc;

use ticklane_engine::book::BookConfig;
use ticklane_sim::{GenConfig, MessageLog};

/// Book capacities for the live lines' generated days.
pub fn books() -> BookConfig {
    BookConfig {
        max_orders: 1 << 18,
        max_books: 256,
        levels_per_side: 2048,
    }
}

/// A generated day of `messages` over 20 stocks, without the hard cases or crossing flow.
pub fn log(messages: u64, seed: u64) -> Arc<MessageLog> {
    Arc::new(MessageLog::from_generator(GenConfig {
        messages,
        seed,
        stocks: 20,
        hard_cases: false,
        crossing: false,
    }))
}
