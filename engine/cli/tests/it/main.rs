//! The `ticklane` command's integration tests, one binary: each runs the binary cargo built
//! for this crate (`CARGO_BIN_EXE_ticklane`, handed only to this crate's tests) as a child
//! process, and checks what it prints, writes and exits with. The library's own tests, which
//! need no process, are in `ticklane-engine`'s `tests/it`.
//!
//! Every test here shares one process with the others, so none may change what is
//! process-wide: no `std::env::set_var` or `set_current_dir` (a child gets its own
//! environment through `Command::env`), files only under a test's own temporary directory,
//! ports from `free_port` or the kernel (`:0`). A test that runs this binary again as a
//! child names itself with `ticklane_testkit::process::rerun_test(module_path!(), …)`.

mod util;

mod admin_http;
mod browser_view;
mod cli_exit_status;
mod dbn_dataset;
mod glimpse_restart;
mod kill_restart;
mod live_process;
mod loss_exit_status;
mod output_targets;
mod serve_accounts_process;
mod serve_process;
mod serve_tls_process;
mod sim_pacing;
mod snapshot_cli;
mod snapshot_kill;
mod socket_errors;
mod subscribe_book_out;
mod subscribe_exits;
