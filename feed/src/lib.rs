//! Sans-I/O market-data input for ticklane: Nasdaq TotalView-ITCH 5.0 decoding and
//! encoding, readers of captured files, and the MoldUDP64 and SoupBinTCP session layers.
//!
//! The decoders and session machines open no socket: bytes go in, messages and decisions
//! come out, so live traffic, replay and tests drive the same code. The feed handler's mio
//! sockets are the `ticklane-net` crate (`feed/net`, re-exported here as `net`); the exchange
//! simulator is the `ticklane-sim` crate (`feed/sim`). `resilience` holds
//! the timing policies every dependency shares (backoff with jitter, a retry budget,
//! measured reply timeouts, an adaptive concurrency limit, a circuit breaker) and `rng` the
//! seeded random source they draw jitter from; both sit on the lowest floor and import
//! nothing else of the crate.
//!
//! ```
//! use ticklane_feed::itch::{self, Message};
//!
//! let delete = [b'D', 0, 1, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 42];
//! let Ok(Message::OrderDelete(d)) = itch::decode(&delete) else { panic!() };
//! assert_eq!(d.order_ref().0, 42);
//! ```
//!
//! `unsafe` is denied crate-wide; the one exception is mapping a capture file into memory
//! (`capture/mapped_file.rs`), with its `// SAFETY:` argument.
#![deny(unsafe_code)]

pub mod capture;
pub mod glimpse;
pub use ticklane_itch as itch;
pub mod moldudp64;
pub use ticklane_net as net;
pub mod resilience;
pub mod rng;
pub mod soupbintcp;
