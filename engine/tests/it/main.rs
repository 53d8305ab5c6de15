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
//! `ticklane_testkit::process::rerun_test(module_path!(), …)`.
//!
//! Here rather than in `tests/`: only this crate's tests are handed the `ticklane` binary
//! cargo built for them (`CARGO_BIN_EXE_ticklane`).

mod util;

mod admin_http;
mod browser_view;
mod cli_exit_status;
mod config_random_values;
mod config_rejects;
mod config_serve_keys;
mod configured_line;
mod contract_violations;
mod dbn_dataset;
mod kill_restart;
mod layers;
mod line_breakers;
mod live_process;
mod loss_exit_status;
mod output_targets;
mod overload_shedding;
mod overload_subscribers;
mod serve_idle;
mod serve_image_depth;
mod serve_login;
mod serve_loopback;
mod serve_process;
mod serve_reconnect;
mod serve_storm;
mod sim_pacing;
mod snapshot_cli;
mod snapshot_kill;
mod snapshot_lock;
mod snapshot_round_trip;
mod snapshot_stress;
mod snapshot_trades;
mod socket_errors;
mod staggered_start;
mod stale_flags;
mod subscribe_exits;
mod tail_capture_every_trade;
