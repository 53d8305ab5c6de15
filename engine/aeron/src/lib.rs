//! Book updates on Aeron: any number of hosts follow the books of one `ticklane run`.
//!
//! `ticklane run --config FILE --aeron CHANNEL` (or `[aeron] channel`) publishes every book
//! change on an Aeron stream; `ticklane subscribe --aeron CHANNEL` follows it, rebuilds each
//! book and, at the end of the stream, writes the final depth with `--book-out`. The Aeron
//! parts build only with the cargo feature `aeron` (they compile Aeron's C media driver and
//! client); without it the records, the publisher's service ([`BookPublisher`]) and the
//! subscriber's books ([`FollowedBooks`]) still build and test, over an in-memory
//! [`Transport`].
//!
//! It depends on the books, the snapshot reader, the pipeline's update stream and the
//! outputs' CSV and session date, and must never depend on the servers, the configuration
//! or the applications crate: the command hands it its settings.
//!
//! # The stream
//!
//! Each Aeron message is one DBN version 3 record (the encoding Databento streams live),
//! with no metadata in front: a subscriber joins at any moment and reads records as they
//! come, with Databento's decoders (`databento_dbn.DBNDecoder(has_metadata=False)`) or
//! [`StreamDecoder`]. Conventions as in `replay --dbn-out`: `publisher_id` the venue's,
//! `instrument_id` the stock locate, prices in 1e-9, `ts_event` the session's New York
//! midnight plus the ITCH timestamp, `ts_recv` when the publisher read the book (Unix ns),
//! `sequence` the low 32 bits of the feed sequence of the last message the book holds.
//!
//! | record | when | what |
//! |---|---|---|
//! | `SymbolMappingMsg` | before a stock's first record, and in every refresh | `stype_in_symbol` the ticker, `stype_out_symbol` the locate |
//! | `Mbp10Msg`, change | the book's top 10 levels moved | action `A` (a level appeared), `C` (one went), `M` (one changed), side, price, `size` the level's shares (before, for `C`), `depth` its index; the levels after |
//! | `Mbp10Msg`, trade | a trade printed | action `T`, side `N`, the trade's price and shares; the levels as last sent |
//! | `Mbp10Msg`, refresh | the refresh cycle | flag `F_SNAPSHOT`, action `N`; the levels as they stand |
//! | `StatusMsg`, stock | its trading state changed, and in every refresh | action `HALT`, `PAUSE`, `QUOTING`, `TRADING` (or `NONE` if none seen) |
//! | `StatusMsg`, line (instrument 0) | the line's state changed | `NOT_AVAILABLE_FOR_TRADING` with reason `RECOVERY_IN_PROCESS` while the feed is down or recovering (every book is its last known state), `NONE` when live |
//! | `SystemMsg` `HEARTBEAT` | nothing sent for `[aeron] heartbeat_ms` | text `heartbeat` |
//! | `SystemMsg` `END_OF_INTERVAL` | a refresh cycle ended | text `refresh K complete: N instruments` |
//! | `SystemMsg` `END_OF_INTERVAL` | the stream's last record, after a last refresh of every book | text `end of stream: N instruments` |
//!
//! Every `Mbp10Msg` carries `F_LAST` and `F_MBP`; `F_MAYBE_BAD_BOOK` while the book may be
//! wrong (the line declared messages lost). A book is its latest record: each holds the
//! whole top 10 levels a side, so nothing is applied on top of an earlier one, and a
//! record missed (or conflated away) is made good by the next one for the stock.
//!
//! **Change or refresh.** `F_SNAPSHOT` set: a refresh, sent whether or not the book moved;
//! clear: a change or a trade. **Every book seen.** The refresh cycle sends every book
//! once per `[aeron] refresh_cycle_ms`, spread evenly over it, then its cycle-end record:
//! a subscriber that has seen two cycle ends in a row (cycles K and K + 1) has been sent
//! every book since it joined, and holds each as it stood at its latest record. The end
//! of the stream closes a last cycle: the publisher sends every book once more, then the
//! end record, so a subscriber that saw a cycle end before the end record has every book
//! as it finally stood, however late it joined.
//!
//! **Falling behind.** A subscriber that stops reading for longer than its receiver
//! window lasts at the publisher's rate is left behind: nothing more reaches it, though
//! its image stays up (`AeronFeed::rejoin` in a build with the feature says why).
//! The heartbeat is what tells it: a stream silent for longer than a few heartbeats while
//! its image is up has left this subscriber behind, and `ticklane subscribe` then rejoins
//! (`--silence-ms`, counted as `rejoined`), starting again at two cycle ends. The
//! publisher and the other subscribers are not held back meanwhile: on multi-destination
//! and multicast channels Aeron's flow control goes at the fastest receiver. The same
//! happens to a receiver whose loss takes longer to repair than its window lasts (a
//! retransmission lost in turn): its driver counts packets beyond the window
//! (`flow_control_over_runs`) while nothing is delivered, and the subscriber rejoins after
//! 100 ms of that rather than the whole silence. Loss that Aeron repairs in time is
//! NAKed and retransmitted with nothing lost; both drivers' counts are in the summaries
//! (and the publisher's in `/metrics`).
//!
//! **Driver settings.** An embedded driver takes Aeron's own `AERON_*` environment
//! variables (the C driver's names), for instance `AERON_RCV_INITIAL_WINDOW_LENGTH` with
//! `AERON_SOCKET_SO_RCVBUF` for a wider receiver window (at most the kernel's
//! `net.core.rmem_max`), or `AERON_UDP_CHANNEL_INCOMING_INTERCEPTORS=loss` with
//! `AERON_UDP_CHANNEL_TRANSPORT_BINDINGS_LOSS_ARGS=rate=0.01|recv-msg-mask=0x2` to drop
//! a share of the data frames it receives, as the tests do.
//!
//! # Back pressure and conflation
//!
//! The publisher never slows the book thread: it takes the update stream through the
//! hub's bounded queue like any consumer, and reads books from the snapshot. How it serves
//! the transport, what it conflates under back pressure and what it counts is in
//! [`book_publisher`].

pub mod book_publisher;
mod driver_counts;
pub mod followed_books;
mod memory_transport;
mod publication_guard;
mod publisher_thread;
pub mod records;

#[cfg(feature = "aeron")]
pub mod aeron_link;

pub use book_publisher::{
    BookPublisher, Offer, PublisherConfig, PublisherCounters, PublisherCounts, Transport,
};
pub use driver_counts::{DriverCounters, DriverCounts};
pub use followed_books::{FollowCounts, FollowedBooks, Update};
pub use memory_transport::MemoryTransport;
pub use publication_guard::{GuardedTransport, PublicationHandles, PUBLICATION_BREAKER};
pub use publisher_thread::{PublisherEnd, PublisherThread};
pub use records::{StreamDecoder, StreamRecord, StreamStamp};
