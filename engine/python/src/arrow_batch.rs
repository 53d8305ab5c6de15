//! One Arrow record batch, offered to Python through the Arrow PyCapsule interface
//! (`__arrow_c_schema__`, `__arrow_c_array__`, `__arrow_c_stream__`): `pyarrow.record_batch`,
//! `pyarrow.table`, `polars.from_arrow` and anything else that speaks the C data interface
//! take its buffers as they are, without a copy. The batch stays alive as long as any
//! consumer holds one of its buffers (the interface's release callbacks).
#![forbid(unsafe_code)]

use std::ffi::CStr;

use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{Array, RecordBatch, RecordBatchIterator, StructArray};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyTuple};

/// An Arrow record batch (one table's rows of one step of a replay).
#[pyclass(frozen, module = "ticklane._native", name = "ArrowBatch")]
pub struct ArrowBatch {
    batch: RecordBatch,
}

impl ArrowBatch {
    /// Wraps `batch`.
    pub fn new(batch: RecordBatch) -> Self {
        ArrowBatch { batch }
    }
}

/// `value` in a capsule named `name`; the capsule drops it (an Arrow struct's drop calls
/// its release callback unless a consumer moved it out and cleared it).
fn capsule<'py, T: Send + 'static>(
    py: Python<'py>,
    value: T,
    name: &'static CStr,
) -> PyResult<Bound<'py, PyCapsule>> {
    PyCapsule::new_with_value(py, value, name)
}

fn arrow_error(e: arrow_schema::ArrowError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

#[pymethods]
impl ArrowBatch {
    /// Rows in the batch.
    #[getter]
    fn num_rows(&self) -> usize {
        self.batch.num_rows()
    }

    /// The column names, in order.
    #[getter]
    fn column_names(&self) -> Vec<String> {
        self.batch
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect()
    }

    fn __len__(&self) -> usize {
        self.batch.num_rows()
    }

    fn __repr__(&self) -> String {
        format!(
            "ArrowBatch({} rows: {})",
            self.batch.num_rows(),
            self.column_names().join(", ")
        )
    }

    /// The schema, as an `arrow_schema` capsule.
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        let schema =
            FFI_ArrowSchema::try_from(self.batch.schema().as_ref()).map_err(arrow_error)?;
        capsule(py, schema, c"arrow_schema")
    }

    /// The batch as a struct array: `(arrow_schema, arrow_array)` capsules. A requested
    /// schema is not applied: the batch is offered as it is.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let _ = requested_schema;
        let array = StructArray::from(self.batch.clone());
        let data = array.to_data();
        let schema = FFI_ArrowSchema::try_from(array.data_type()).map_err(arrow_error)?;
        let array = FFI_ArrowArray::new(&data);
        PyTuple::new(
            py,
            [
                capsule(py, schema, c"arrow_schema")?.into_any(),
                capsule(py, array, c"arrow_array")?.into_any(),
            ],
        )
    }

    /// The batch as a stream of one batch, an `arrow_array_stream` capsule.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let reader = RecordBatchIterator::new([Ok(self.batch.clone())], self.batch.schema());
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        capsule(py, stream, c"arrow_array_stream")
    }
}
