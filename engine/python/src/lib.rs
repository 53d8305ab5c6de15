//! The native half of the `ticklane` Python package (`ticklane._native`): a replay run on
//! an engine thread by the same `run_replay` as `ticklane replay`, its tables' rows
//! handed over in chunks ([`ticklane_engine::row_chunks`]) and made Arrow record batches
//! that Python takes without a copy (the `arrow_batch` module); a running engine's snapshot
//! read by the engine's own reader (`snapshot_file`); a subscriber server followed by the
//! engine's own client (`subscription`). The Python package
//! (`python/ticklane/__init__.py`) is the documented interface; this module is its engine.
#![forbid(unsafe_code)]

mod arrow_batch;
mod engine_thread;
mod input_error;
mod replay_batches;
mod replay_end;
mod replay_files;
mod request;
mod snapshot_columns;
mod snapshot_file;
mod subscriber_update;
mod subscription;
mod table_columns;
mod table_shape;

use pyo3::prelude::*;

/// `ticklane._native`.
#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<arrow_batch::ArrowBatch>()?;
    m.add_class::<replay_batches::TableBatches>()?;
    m.add("InputError", m.py().get_type::<input_error::InputError>())?;
    m.add(
        "LossDeclared",
        m.py().get_type::<input_error::LossDeclared>(),
    )?;
    m.add_class::<snapshot_file::Snapshot>()?;
    m.add(
        "SnapshotError",
        m.py().get_type::<snapshot_file::SnapshotError>(),
    )?;
    m.add(
        "SlotUnreadable",
        m.py().get_type::<snapshot_file::SlotUnreadable>(),
    )?;
    m.add_class::<subscription::Subscription>()?;
    m.add(
        "SubscribeError",
        m.py().get_type::<subscription::SubscribeError>(),
    )?;
    m.add_function(wrap_pyfunction!(subscription::subscribe, m)?)?;
    m.add_function(wrap_pyfunction!(replay_batches::table_batches, m)?)?;
    m.add_function(wrap_pyfunction!(replay_files::replay_files, m)?)?;
    Ok(())
}
