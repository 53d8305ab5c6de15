//! The accepted range of every configuration key, and why it is that range.
//!
//! `engine/ticklane.example.toml` documents the same ranges for users; the tests in
//! `engine/tests/config_*.rs` hold their own copy of them, so a change here that is not
//! made there (and in the example) fails a test.

use super::allowed::Allowed;
use crate::book::Level;
use crate::snapshot::layout::{MAX_CAPACITY, MAX_DEPTH};

/// `engine.ring_slots`: each slot is a 128-byte frame. A power of two, because the ring
/// indexes by mask and would otherwise silently round up. At least 1024 because the book
/// thread takes frames in batches of up to 256 and returns their slots only when the batch
/// is done, while the reader cannot read its socket as long as the ring is full: a ring of
/// 1 or 4 slots makes every datagram's messages wait on the book thread one by one, the
/// kernel's socket buffer overflows, and a clean feed loses messages (221k in the issue's
/// run). At most 4 Mi slots (512 MiB): more than a second of a full feed is a standing queue,
/// not a buffer, and `2^40` slots cannot be allocated at all.
pub const RING_SLOTS: Allowed = Allowed::PowerOfTwo {
    min: 1 << 10,
    max: 1 << 22,
};

/// `engine.max_orders`: the order table links records with 32-bit indices offset by one
/// (0 is "none"), so it holds at most `u32::MAX - 1` orders.
pub const MAX_ORDERS: Allowed = Allowed::Integer {
    min: 1,
    max: u32::MAX as u64 - 1,
};

/// `engine.max_books`: a book is opened per stock locate, a 16-bit field, so more than
/// 65,536 books can never be used.
pub const MAX_BOOKS: Allowed = Allowed::Integer {
    min: 1,
    max: 1 << 16,
};

/// `engine.levels_per_side`: a side is a sorted array that shifts on insert; past a million
/// distinct prices on one side it is no longer a book anyone trades.
pub const LEVELS_PER_SIDE: Allowed = Allowed::Integer {
    min: 1,
    max: 1 << 20,
};

/// Bytes of one price level in the books' level table.
pub const LEVEL_BYTES: u64 = core::mem::size_of::<Level>() as u64;

/// Most bytes of price levels, `max_books * 2 * levels_per_side * 16` (16 GiB; the defaults
/// take 512 MiB). The books reserve address space for up to twice that at start-up (a side's
/// window of levels grows by doubling, and the window it grew out of is not reused); only the
/// levels in use become resident.
pub const MAX_LEVEL_TABLE_BYTES: u64 = 16 << 30;

/// `snapshot.depth`: levels per side in each slot, within the snapshot layout's limit.
pub const SNAPSHOT_DEPTH: Allowed = Allowed::Integer {
    min: 1,
    max: MAX_DEPTH as u64,
};

/// `snapshot.capacity`: instrument slots, at most one per ITCH locate.
pub const SNAPSHOT_CAPACITY: Allowed = Allowed::Integer {
    min: 1,
    max: MAX_CAPACITY as u64,
};

/// `engine.instance` as an integer: an index among the engines started together. A
/// thousand per host group is far more than any exchange spreads its logins over.
pub const INSTANCE_INDEX: Allowed = Allowed::Integer {
    min: 0,
    max: 65_535,
};

/// `engine.instance` as a string: a host or partition name, hashed to an index.
pub const INSTANCE_NAME: Allowed = Allowed::Ascii {
    min_len: 1,
    max_len: 64,
};

/// `engine.stagger_step_ms`: the wait per instance index before the first connect. 0 turns
/// the stagger off; more than a minute per instance is a queue, not a stagger.
pub const STAGGER_STEP_MS: Allowed = Allowed::Integer {
    min: 0,
    max: 60_000,
};

/// `engine.stagger_cap_ms`: the most any instance waits before its jitter (which adds up to
/// one step). Ten minutes: a health check must cover cap plus step while it says Starting.
pub const STAGGER_CAP_MS: Allowed = Allowed::Integer {
    min: 0,
    max: 600_000,
};

/// `engine.shutdown_timeout_s`: how long SIGTERM's drain (stop reading, drain the ring,
/// flush and close the snapshot) may take before the process exits anyway, non-zero. At
/// least 0.1 s (a ring of 4 Mi frames drains in well under that); at most 10 minutes.
pub const SHUTDOWN_TIMEOUT_S: Allowed = Allowed::Seconds {
    min: 0.1,
    max: 600.0,
};

/// `engine.wait`: the documented names. `WaitStrategy`'s parser also takes `spin`, `yield`
/// and `sleep`; a file takes only these, so a file means the same to every reader of it.
pub const WAIT_NAMES: &[&str] = &["busy-spin", "spin-yield", "park"];

/// `engine.wait`, as a rule.
pub const WAIT: Allowed = Allowed::OneOf(WAIT_NAMES);

/// `feed.kind`.
pub const KIND: Allowed = Allowed::OneOf(&["moldudp64", "soupbintcp"]);

/// `feed.silence_timeout_s` and `feed.server_timeout_s`: both protocols send a heartbeat
/// every second, so a shorter timeout declares a healthy idle feed dead; an hour of silence
/// is a dead feed by any measure.
pub const SILENCE_TIMEOUT_S: Allowed = Allowed::Seconds {
    min: 1.0,
    max: 3600.0,
};

/// `feed.retransmit_timeout_ms`: 0 would ask again at once, in a loop; a reply later than a
/// minute is worth nothing to a live book.
pub const RETRANSMIT_TIMEOUT_MS: Allowed = Allowed::Integer {
    min: 1,
    max: 60_000,
};

/// `feed.arbitration_wait_us`: how long a gap on one line waits for the other line's copy
/// before it is counted and asked for. 0 asks at once; past 100 ms two lines are not an A/B
/// pair but a line and a late replay, and every real loss (on both lines) would wait that
/// long for its recovery.
pub const ARBITRATION_WAIT_US: Allowed = Allowed::Integer {
    min: 0,
    max: 100_000,
};

/// `feed.max_duration_s`: a run of no time is no run; a week covers any session.
pub const MAX_DURATION_S: Allowed = Allowed::Seconds {
    min: 0.001,
    max: 604_800.0,
};

/// `feed.next_sequence`: 0 (from now) or any sequence number TOML can write.
pub const NEXT_SEQUENCE: Allowed = Allowed::Integer {
    min: 0,
    max: i64::MAX as u64,
};

/// `feed.max_reconnects`: a count the source keeps in 32 bits.
pub const MAX_RECONNECTS: Allowed = Allowed::Integer {
    min: 0,
    max: u32::MAX as u64,
};

/// `feed.connect_timeout_ms`: a connect needs at least a millisecond; ten minutes is
/// longer than any TCP stack keeps trying.
pub const CONNECT_TIMEOUT_MS: Allowed = Allowed::Integer {
    min: 1,
    max: 600_000,
};

/// `feed.reconnect_base_ms`: the ceiling of the first reconnect's wait; 0 reconnects at
/// once (a tight loop against a failing server, so at least 1), a minute at most.
pub const RECONNECT_BASE_MS: Allowed = Allowed::Integer {
    min: 1,
    max: 60_000,
};

/// `feed.reconnect_cap_ms`: the ceiling no reconnect wait exceeds, ten minutes at most.
pub const RECONNECT_CAP_MS: Allowed = Allowed::Integer {
    min: 1,
    max: 600_000,
};

/// `feed.breaker_window_ms`: the breaker's sliding window; at least 10 ms (its buckets),
/// an hour at most.
pub const BREAKER_WINDOW_MS: Allowed = Allowed::Integer {
    min: 10,
    max: 3_600_000,
};

/// `feed.breaker_min_calls`: calls the window holds before any decision; 1 decides on the
/// first call.
pub const BREAKER_MIN_CALLS: Allowed = Allowed::Integer {
    min: 1,
    max: 1_000_000,
};

/// `feed.breaker_failure_percent` and `feed.breaker_slow_percent`: 0 % would open on
/// success, over 100 % never.
pub const PERCENT_1_100: Allowed = Allowed::Integer { min: 1, max: 100 };

/// `feed.breaker_slow_ms`: a reply later than this is slow; it must also lie below the
/// timeout of the calls (checked after).
pub const BREAKER_SLOW_MS: Allowed = Allowed::Integer {
    min: 1,
    max: 600_000,
};

/// `feed.breaker_open_ms`: how long an open breaker refuses calls before its probes; 0
/// would probe at once, in a loop.
pub const BREAKER_OPEN_MS: Allowed = Allowed::Integer {
    min: 1,
    max: 3_600_000,
};

/// `feed.breaker_probes`: calls let through half-open.
pub const BREAKER_PROBES: Allowed = Allowed::Integer { min: 1, max: 1_000 };

/// `feed.retry_budget_percent`: retries allowed, in percent of first requests over the
/// window (0: only the per-window minimum; 1,000: ten retries per request).
pub const RETRY_BUDGET_PERCENT: Allowed = Allowed::Integer { min: 0, max: 1_000 };

/// `feed.retry_budget_window_ms`: the window the budget counts over.
pub const RETRY_BUDGET_WINDOW_MS: Allowed = Allowed::Integer {
    min: 10,
    max: 3_600_000,
};

/// `feed.limit_min` and `feed.limit_max`: requests in flight at once; at least 1 (a line
/// must be able to ask), and `limit_min <= limit_max`.
pub const LIMIT_BOUND: Allowed = Allowed::Integer { min: 1, max: 4_096 };

/// `feed.gap_deadline_ms`: a gap still missing this long after it was detected is
/// declared lost.
pub const GAP_DEADLINE_MS: Allowed = Allowed::Integer {
    min: 1,
    max: 3_600_000,
};

/// `feed.reorder_store_packets`: packets held behind an open gap (slots of 1,500 bytes,
/// allocated at start and touched only as far as the store fills). Fewer than 64 cannot
/// hold one reply's worth of packets; 1 M packets is 1.5 GB.
pub const REORDER_STORE_PACKETS: Allowed = Allowed::Integer {
    min: 64,
    max: 1_048_576,
};

/// `feed.start_sequence`: 1 (a missing first packet or a late join is a gap from 1),
/// "join" (start at the first packet seen) or "snapshot" (start from the GLIMPSE snapshot
/// of `feed.glimpse_server`).
pub const START_SEQUENCE: Allowed = Allowed::OneOf(&["1", "join", "snapshot"]);

/// `feed.max_recovery_gap`: the largest gap, in messages, asked of the retransmission
/// server on a line with a snapshot server; a larger one is filled from a new snapshot.
pub const MAX_RECOVERY_GAP: Allowed = Allowed::Integer {
    min: 1,
    max: 1 << 32,
};

/// `feed.username`: SoupBinTCP's 6-byte alpha field; a login needs a name.
pub const USERNAME: Allowed = Allowed::Ascii {
    min_len: 1,
    max_len: 6,
};

/// `feed.password`: SoupBinTCP's 10-byte alpha field.
pub const PASSWORD: Allowed = Allowed::Ascii {
    min_len: 0,
    max_len: 10,
};

/// `feed.session`: the 10-byte session field (blank joins the current session).
pub const SESSION: Allowed = Allowed::Ascii {
    min_len: 0,
    max_len: 10,
};

/// `feed.name`: it goes into the admin URL (`/feeds/{name}/isolate`) and the metrics'
/// `feed` label, so only characters that need no escaping in either.
pub const FEED_NAME: Allowed = Allowed::Name { max_len: 64 };

/// `admin.token`: at least 16 characters, so that a guessable word is refused; printable
/// ASCII, which an `Authorization: Bearer` header carries as it is.
pub const ADMIN_TOKEN: Allowed = Allowed::Ascii {
    min_len: 16,
    max_len: 256,
};

/// `serve.*_per_second` and `serve.*_burst`: a token bucket refills at least one token a
/// second and holds at least one (0 would refuse every client for good: leave the server
/// off instead); a million a second is past what one server thread can accept.
pub const SERVE_RATE: Allowed = Allowed::Integer {
    min: 1,
    max: 1_000_000,
};

/// `serve.max_connections`, `serve.*_max_in_flight`, `serve.ip_*`, `serve.account_*`:
/// holds and attempts at once; at least one, or the stage admits nothing.
pub const SERVE_COUNT: Allowed = Allowed::Integer {
    min: 1,
    max: 1_000_000,
};

/// `serve.attempt_window_ms`: the per-IP and per-account attempt window, 10 ms to an hour.
pub const SERVE_ATTEMPT_WINDOW_MS: Allowed = Allowed::Integer {
    min: 10,
    max: 3_600_000,
};

/// `serve.retry_after_min_ms` and `serve.retry_after_max_ms`: at least 1 ms (0 on the wire
/// means "do not retry"), an hour at most (past that it is maintenance, not a retry).
pub const SERVE_RETRY_AFTER_MS: Allowed = Allowed::Integer {
    min: 1,
    max: 3_600_000,
};

/// `serve.login_timeout_ms`: 10 ms (a loopback login) to 10 minutes.
pub const SERVE_LOGIN_TIMEOUT_MS: Allowed = Allowed::Integer {
    min: 10,
    max: 600_000,
};

/// `serve.tls_handshake_timeout_ms`: 10 ms (a loopback handshake) to a minute.
pub const SERVE_TLS_HANDSHAKE_TIMEOUT_MS: Allowed = Allowed::Integer {
    min: 10,
    max: 60_000,
};

/// `serve.login_failure_delay_ms`: 10 ms to a minute. It must exceed a verification's time
/// (some 20 ms at the default cost) to hide which check failed.
pub const SERVE_LOGIN_FAILURE_DELAY_MS: Allowed = Allowed::Integer {
    min: 10,
    max: 60_000,
};

/// `web.session_minutes`: a minute to a week.
pub const WEB_SESSION_MINUTES: Allowed = Allowed::Integer {
    min: 1,
    max: 7 * 24 * 60,
};

/// `serve.accounts_reload_interval_ms`: 100 ms to an hour.
pub const SERVE_ACCOUNTS_RELOAD_INTERVAL_MS: Allowed = Allowed::Integer {
    min: 100,
    max: 3_600_000,
};

/// `serve.heartbeat_ms`: the client library reads at least every 10 ms of it; a minute at
/// most, or a dead peer goes unnoticed for minutes.
pub const SERVE_HEARTBEAT_MS: Allowed = Allowed::Integer {
    min: 10,
    max: 60_000,
};

/// `serve.idle_timeout_ms`: 30 ms to an hour (and at least three heartbeats, checked with
/// `serve.heartbeat_ms`).
pub const SERVE_IDLE_TIMEOUT_MS: Allowed = Allowed::Integer {
    min: 30,
    max: 3_600_000,
};

/// `serve.high_water_bytes` and `serve.low_water_bytes`: within a client's write queue
/// (1 MiB), and at least one largest frame (64 KiB + 2) below it, so the queue can take the
/// frame that crosses the mark; a low mark of 0 is allowed (stream again once empty).
pub const SERVE_WATER_BYTES: Allowed = Allowed::Integer {
    min: 0,
    max: (1 << 20) - (1 << 16) - 2,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::book::BookConfig;
    use crate::pipeline::PipelineConfig;

    #[test]
    fn the_defaults_lie_in_their_ranges() {
        let books = BookConfig::default();
        let ring = PipelineConfig::default().ring_slots;
        for (rule, value) in [
            (&RING_SLOTS, ring),
            (&MAX_ORDERS, books.max_orders),
            (&MAX_BOOKS, books.max_books),
            (&LEVELS_PER_SIDE, books.levels_per_side),
        ] {
            let value = i64::try_from(value).expect("small");
            assert!(rule.admits_integer(value), "{value} not {rule}");
        }
        let level_bytes = books.max_books as u64 * 2 * books.levels_per_side as u64 * LEVEL_BYTES;
        assert!(level_bytes <= MAX_LEVEL_TABLE_BYTES);
    }
}
