//! Synthetic feeds: the seeded generator of ITCH 5.0 days, and the exchange simulator that
//! serves a day (generated or captured) as MoldUDP64 (with pacing, seeded faults and a
//! retransmission server), over SoupBinTCP, and as a GLIMPSE 5.0 snapshot server. The
//! simulator is a test and demo tool with sockets of its own; the feed handler's sockets
//! live in `ticklane-net`.
//!
//! A crate of its own above `ticklane-feed`, whose encoders and session machines it drives
//! from the exchange's side: nothing the feed handler runs may depend on it (the engine uses
//! it only for `ticklane sim`, the demos and tests).

mod clock;
mod error;
mod exchange;
mod faults;
mod generator;
mod glimpse;
mod message_log;
mod pacing;
mod soup_server;
// `generator` names `super::rng::SplitMix64`: the feed's seeded source.
use ticklane_feed::rng;

pub use error::SimError;
pub use exchange::{LineB, MoldSimConfig, MoldSimulator, SimCounts};
pub use faults::{BurstLoss, FaultInjector, Faults, Interruption, PacketFate, ReplyFault};
pub use generator::{
    write_itch50, write_itch50_file, write_itch50_file_profile, write_itch50_profile, GenConfig,
    GenSummary, Generator, Profile, FULL_DAY_BUILD_END, FULL_DAY_CLOSE_LEFT, FULL_DAY_DRAIN_START,
    FULL_DAY_PEAK_SHARE, FULL_DAY_RESTING_ZIPF, FULL_DAY_STOCKS, FULL_DAY_ZIPF,
};
pub use glimpse::{glimpse_snapshot, glimpse_snapshot_as, DayState, SnapshotForm};
pub use message_log::MessageLog;
pub use pacing::{Rate, WaitStrategy};
pub use soup_server::{LivePosition, SoupSimConfig, SoupSimCounts, SoupSimulator};
pub use ticklane_feed::rng::SplitMix64;
