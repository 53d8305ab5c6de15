//! Synthetic feeds: the seeded generator of ITCH 5.0 days (the exchange simulator joins it
//! with the live pipeline).

mod generator;
mod rng;

pub use generator::{write_itch50, GenConfig, GenSummary, Generator};
pub use rng::SplitMix64;
