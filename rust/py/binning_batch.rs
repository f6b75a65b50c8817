//! `histograms`: many NumPy arrays binned at once, in parallel, into `BinnedHistogram` records.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use super::arrays::{data, Array, Data};
use super::records::BinnedHistogram;
use crate::bins::binning::batch::{histograms as bin_all, BatchError};
use crate::bins::binning::{Bins, Values};
use crate::histograms::float16::HalfFloat;

impl From<BatchError> for PyErr {
    fn from(e: BatchError) -> PyErr {
        PyValueError::new_err(e.to_string())
    }
}

/// Bins each of `values` (NumPy arrays of any numeric or bool dtype) into
/// `bins` equal bins from its smallest to its largest finite value, as
/// `histogram(values[i], bins)` does, with all of them in parallel and the
/// GIL released.
///
/// `encodings[i]`, when given, is "float16" or "bfloat16" for a uint16 array
/// holding the bits of that type, or None for an array read as it is.
#[pyfunction]
#[pyo3(signature = (values, bins, encodings=None))]
fn histograms<'py>(
    py: Python<'py>,
    values: Vec<Bound<'py, PyAny>>,
    bins: usize,
    encodings: Option<Vec<Option<HalfFloat>>>,
) -> PyResult<Vec<BinnedHistogram>> {
    if let Some(e) = &encodings {
        if e.len() != values.len() {
            return Err(PyValueError::new_err(format!(
                "encodings must have one entry per array, got {} for {}",
                e.len(),
                values.len()
            )));
        }
    }
    let arrays = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            v.extract::<Array<'py>>().map_err(|_| {
                PyTypeError::new_err(format!(
                    "values[{i}] must be a NumPy array of a numeric or bool dtype"
                ))
            })
        })
        .collect::<PyResult<Vec<_>>>()?;
    let data = arrays
        .iter()
        .enumerate()
        .map(|(i, a)| {
            data(a, encodings.as_ref().and_then(|e| e[i])).map_err(|half| {
                PyTypeError::new_err(format!(
                    "values[{i}]: encoding {:?} needs the bits as a uint16 array",
                    half.name()
                ))
            })
        })
        .collect::<PyResult<Vec<_>>>()?;
    let binned = py.detach(|| {
        let values: Vec<Values<'_>> = data.iter().map(Data::values).collect();
        bin_all(
            &values,
            Bins::Uniform {
                count: bins,
                range: None,
            },
        )
    })?;
    binned
        .into_iter()
        .map(|h| BinnedHistogram::new(py, h))
        .collect()
}

/// Adds `histograms` to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(histograms, m)?)
}
