//! ticklane-engine's integration tests, one binary: a module per topic, so that a change
//! links this binary (and `zero_alloc`) rather than one per file. Shared helpers are in
//! [`util`] (those that need engine or feed types) and in `ticklane-testkit` (the rest).
//!
//! Every test here shares one process with the others, so none may change what is
//! process-wide: no `std::env::set_var` or `set_current_dir` (a child gets its own
//! environment through `Command::env`), files only under a test's own temporary directory,
//! ports from `free_port` or the kernel (`:0`). The tests that count every thread's
//! allocations cannot share a process with anything, and live in `tests/zero_alloc`.
//! A test that runs this binary again as a child names itself with
//! `ticklane_testkit::process::rerun_test(module_path!(), …)`. The tests that run the
//! `ticklane` command itself are the CLI crate's (`engine/cli/tests/it`).

mod util;

mod config_random_values;
mod config_rejects;
mod config_serve_keys;
mod configured_line;
mod contract_violations;
mod layers;
mod line_breakers;
mod overload_shedding;
mod overload_subscribers;
mod serve_accounts;
mod serve_idle;
mod serve_image_depth;
mod serve_login;
mod serve_loopback;
mod serve_reconnect;
mod serve_storm;
mod serve_tls;
mod snapshot_lock;
mod snapshot_round_trip;
mod snapshot_stress;
mod snapshot_trades;
mod staggered_start;
mod stale_flags;
mod tail_capture_every_trade;
mod web_security;
