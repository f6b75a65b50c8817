//! `histogram`: a NumPy array of any numeric or bool dtype to edges, counts and statistics;
//! and the edge rules (the checks, the default range, equal edges) it follows.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use super::arrays::{c_order, data, Array};
use super::records::BinnedHistogram;
use crate::bins::binning::{histogram as bin, Bins, Histogram};
use crate::bins::edges;
use crate::histograms::float16::HalfFloat;

/// Bins `values` into `bins` equal bins (over `range`, default the finite
/// minimum and maximum) or between `edges` (a float64 array), each value
/// counting its weight.
///
/// `encoding="float16"` or `"bfloat16"` reads a uint16 array as the bits of
/// that type.
#[pyfunction]
#[pyo3(signature = (values, bins=None, edges=None, range=None, weights=None, encoding=None))]
#[allow(clippy::too_many_arguments)]
fn histogram<'py>(
    py: Python<'py>,
    values: &Bound<'py, PyAny>,
    bins: Option<usize>,
    edges: Option<&Bound<'py, PyAny>>,
    range: Option<(f64, f64)>,
    weights: Option<PyReadonlyArrayDyn<'py, f64>>,
    encoding: Option<HalfFloat>,
) -> PyResult<BinnedHistogram> {
    let h = bin_values(py, values, bins, edges, range, weights, encoding)?;
    BinnedHistogram::new(py, h)
}

/// `histogram`'s arguments checked and binned with the GIL released, the
/// result kept in the core (`EventFileWriter.bin_and_write` writes it).
pub fn bin_values<'py>(
    py: Python<'py>,
    values: &Bound<'py, PyAny>,
    bins: Option<usize>,
    edges: Option<&Bound<'py, PyAny>>,
    range: Option<(f64, f64)>,
    weights: Option<PyReadonlyArrayDyn<'py, f64>>,
    encoding: Option<HalfFloat>,
) -> PyResult<Histogram> {
    let array: Array<'py> = values.extract().map_err(|_| {
        PyTypeError::new_err(
            "values must be a NumPy array of a numeric or bool dtype (float16 and bfloat16 \
             as uint16 bits)",
        )
    })?;
    let edges = edges
        .map(|e| {
            e.extract::<PyReadonlyArray1<'py, f64>>()
                .map_err(|_| PyTypeError::new_err("edges must be a 1-D float64 NumPy array"))
        })
        .transpose()?;
    let edges = edges.as_ref().map(c_order);
    let bins = match (bins, &edges, range) {
        (Some(count), None, range) => Bins::Uniform { count, range },
        (None, Some(edges), None) => Bins::Edges(edges),
        (None, Some(_), Some(_)) => {
            return Err(PyValueError::new_err("range cannot be given with edges"))
        }
        _ => return Err(PyTypeError::new_err("give either bins or edges")),
    };
    let weights = match &weights {
        Some(w) if w.shape() != array.shape() => {
            return Err(PyValueError::new_err(format!(
                "weights must have the same shape as values, got {:?} and {:?}",
                w.shape(),
                array.shape()
            )))
        }
        Some(w) => Some(c_order(w)),
        None => None,
    };
    let data = data(&array, encoding).map_err(|half| {
        PyTypeError::new_err(format!(
            "encoding={:?} needs the bits as a uint16 array",
            half.name()
        ))
    })?;
    let w = weights.as_deref();
    Ok(py.detach(|| bin(data.values(), w, bins))?)
}

/// Raises ValueError unless `count` equal bins are allowed (1 to `MAX_BINS`).
#[pyfunction]
fn check_bin_count(count: i64) -> PyResult<()> {
    Ok(edges::check_bin_count(count)?)
}

/// Raises ValueError unless `edges` are 2 to `MAX_BINS + 1` finite, increasing values.
#[pyfunction]
fn check_edges(edges: PyReadonlyArray1<'_, f64>) -> PyResult<()> {
    Ok(edges::check_edges(&c_order(&edges))?)
}

/// Raises ValueError unless equal bins can span `lo` to `hi`.
#[pyfunction]
fn check_range(lo: f64, hi: f64) -> PyResult<()> {
    Ok(edges::check_range(lo, hi)?)
}

/// The range equal bins take for values from `min` to `max` when none is given.
#[pyfunction]
fn default_range(min: f64, max: f64) -> (f64, f64) {
    edges::default_range(min, max)
}

/// The edges of `count` equal bins from `lo` to `hi`, as `numpy.linspace` gives them.
#[pyfunction]
fn uniform_edges(
    py: Python<'_>,
    lo: f64,
    hi: f64,
    count: i64,
) -> PyResult<Bound<'_, PyArray1<f64>>> {
    Ok(edges::checked_uniform_edges(lo, hi, count)?.into_pyarray(py))
}

/// Adds `histogram` and the edge rules to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(check_bin_count, m)?)?;
    m.add_function(wrap_pyfunction!(check_edges, m)?)?;
    m.add_function(wrap_pyfunction!(check_range, m)?)?;
    m.add_function(wrap_pyfunction!(default_range, m)?)?;
    m.add_function(wrap_pyfunction!(uniform_edges, m)?)?;
    m.add_function(wrap_pyfunction!(histogram, m)?)
}
