//! `histogram`: a NumPy array of any numeric or bool dtype to edges, counts and statistics;
//! and the edge rules (`MAX_BINS`, the checks, the default range, equal edges) it follows.

use std::borrow::Cow;

use numpy::{
    Element, IntoPyArray, PyArray1, PyReadonlyArray1, PyReadonlyArrayDyn, PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use crate::binning::{histogram as bin, BinningError, Bins, Histogram, Values};
use crate::edges::{self, EdgesError, MAX_BINS};

impl From<BinningError> for PyErr {
    fn from(e: BinningError) -> PyErr {
        PyValueError::new_err(e.to_string())
    }
}

impl From<EdgesError> for PyErr {
    fn from(e: EdgesError) -> PyErr {
        PyValueError::new_err(e.to_string())
    }
}

/// The dtypes `histogram` reads in place; float16 and bfloat16 come as uint16 bits.
#[derive(FromPyObject)]
enum Array<'py> {
    F64(PyReadonlyArrayDyn<'py, f64>),
    F32(PyReadonlyArrayDyn<'py, f32>),
    I8(PyReadonlyArrayDyn<'py, i8>),
    I16(PyReadonlyArrayDyn<'py, i16>),
    I32(PyReadonlyArrayDyn<'py, i32>),
    I64(PyReadonlyArrayDyn<'py, i64>),
    U8(PyReadonlyArrayDyn<'py, u8>),
    U16(PyReadonlyArrayDyn<'py, u16>),
    U32(PyReadonlyArrayDyn<'py, u32>),
    U64(PyReadonlyArrayDyn<'py, u64>),
    Bool(PyReadonlyArrayDyn<'py, bool>),
}

/// (count, min, max, mean, std, nonfinite, below, above)
type StatsTuple = (f64, f64, f64, f64, f64, f64, f64, f64);

/// (edges, counts, stats)
type HistogramTuple<'py> = (
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
    StatsTuple,
);

/// The array's elements in C order: borrowed when they lie that way, copied otherwise.
fn c_order<'a, T: Element + Copy>(array: &'a PyReadonlyArrayDyn<'_, T>) -> Cow<'a, [T]> {
    match array.as_slice() {
        Ok(slice) if array.is_c_contiguous() => Cow::Borrowed(slice),
        _ => Cow::Owned(array.as_array().iter().copied().collect()),
    }
}

fn bin_array<T: Element + Copy + Sync>(
    py: Python<'_>,
    array: &PyReadonlyArrayDyn<'_, T>,
    values: for<'a> fn(&'a [T]) -> Values<'a>,
    weights: Option<&[f64]>,
    bins: Bins<'_>,
) -> Result<Histogram, BinningError> {
    let data = c_order(array);
    py.detach(|| bin(values(&data), weights, bins))
}

/// Bins `values` into `bins` equal bins (over `range`, default the finite
/// minimum and maximum) or between `edges`, each value counting its weight.
///
/// `float16=True` or `bfloat16=True` reads a uint16 array as the bits of
/// those types. Returns (edges, counts, (count, min, max, mean, std,
/// nonfinite, below, above)).
#[pyfunction]
#[pyo3(signature = (values, bins=None, edges=None, range=None, weights=None, float16=false, bfloat16=false))]
#[allow(clippy::too_many_arguments)]
fn histogram<'py>(
    py: Python<'py>,
    values: &Bound<'py, PyAny>,
    bins: Option<usize>,
    edges: Option<Vec<f64>>,
    range: Option<(f64, f64)>,
    weights: Option<PyReadonlyArrayDyn<'py, f64>>,
    float16: bool,
    bfloat16: bool,
) -> PyResult<HistogramTuple<'py>> {
    let array: Array<'py> = values.extract().map_err(|_| {
        PyTypeError::new_err(
            "values must be a NumPy array of a numeric or bool dtype (float16 and bfloat16 \
             as uint16 bits)",
        )
    })?;
    let bins = match (bins, &edges, range) {
        (Some(count), None, range) => Bins::Uniform { count, range },
        (None, Some(edges), None) => Bins::Edges(edges),
        (None, Some(_), Some(_)) => {
            return Err(PyValueError::new_err("range cannot be given with edges"))
        }
        _ => return Err(PyTypeError::new_err("give either bins or edges")),
    };
    let weights = match &weights {
        Some(w) => {
            let shape = shape(&array);
            if w.shape() != shape {
                return Err(PyValueError::new_err(format!(
                    "weights must have the same shape as values, got {:?} and {:?}",
                    w.shape(),
                    shape
                )));
            }
            Some(c_order(w))
        }
        None => None,
    };
    let w = weights.as_deref();
    let h = match (&array, float16, bfloat16) {
        (Array::U16(a), true, false) => bin_array(py, a, |s| Values::F16Bits(s), w, bins),
        (Array::U16(a), false, true) => bin_array(py, a, |s| Values::Bf16Bits(s), w, bins),
        (_, true, _) | (_, _, true) => {
            return Err(PyTypeError::new_err(
                "float16=True or bfloat16=True (one of them) needs the bits as a uint16 array",
            ))
        }
        (Array::F64(a), ..) => bin_array(py, a, |s| Values::F64(s), w, bins),
        (Array::F32(a), ..) => bin_array(py, a, |s| Values::F32(s), w, bins),
        (Array::I8(a), ..) => bin_array(py, a, |s| Values::I8(s), w, bins),
        (Array::I16(a), ..) => bin_array(py, a, |s| Values::I16(s), w, bins),
        (Array::I32(a), ..) => bin_array(py, a, |s| Values::I32(s), w, bins),
        (Array::I64(a), ..) => bin_array(py, a, |s| Values::I64(s), w, bins),
        (Array::U8(a), ..) => bin_array(py, a, |s| Values::U8(s), w, bins),
        (Array::U16(a), ..) => bin_array(py, a, |s| Values::U16(s), w, bins),
        (Array::U32(a), ..) => bin_array(py, a, |s| Values::U32(s), w, bins),
        (Array::U64(a), ..) => bin_array(py, a, |s| Values::U64(s), w, bins),
        (Array::Bool(a), ..) => bin_array(py, a, |s| Values::Bool(s), w, bins),
    }?;
    let [count, min, max, mean, std, nonfinite, below, above] = h.stats.to_array();
    Ok((
        h.edges.into_pyarray(py),
        h.counts.into_pyarray(py),
        (count, min, max, mean, std, nonfinite, below, above),
    ))
}

fn shape(array: &Array<'_>) -> Vec<usize> {
    match array {
        Array::F64(a) => a.shape().to_vec(),
        Array::F32(a) => a.shape().to_vec(),
        Array::I8(a) => a.shape().to_vec(),
        Array::I16(a) => a.shape().to_vec(),
        Array::I32(a) => a.shape().to_vec(),
        Array::I64(a) => a.shape().to_vec(),
        Array::U8(a) => a.shape().to_vec(),
        Array::U16(a) => a.shape().to_vec(),
        Array::U32(a) => a.shape().to_vec(),
        Array::U64(a) => a.shape().to_vec(),
        Array::Bool(a) => a.shape().to_vec(),
    }
}

/// Raises ValueError unless `count` equal bins are allowed (1 to `MAX_BINS`).
#[pyfunction]
fn check_bin_count(count: i64) -> PyResult<()> {
    Ok(edges::check_bin_count(count)?)
}

/// Raises ValueError unless `edges` are 2 to `MAX_BINS + 1` finite, increasing values.
#[pyfunction]
fn check_edges(edges: PyReadonlyArray1<'_, f64>) -> PyResult<()> {
    let edges = edges.as_array();
    match edges.as_slice() {
        Some(slice) => edges::check_edges(slice)?,
        None => edges::check_edges(&edges.to_vec())?,
    }
    Ok(())
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
    edges::check_bin_count(count)?;
    edges::check_range(lo, hi)?;
    Ok(edges::uniform_edges(lo, hi, count as usize).into_pyarray(py))
}

/// Adds `histogram` and the edge rules to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("MAX_BINS", MAX_BINS)?;
    m.add_function(wrap_pyfunction!(check_bin_count, m)?)?;
    m.add_function(wrap_pyfunction!(check_edges, m)?)?;
    m.add_function(wrap_pyfunction!(check_range, m)?)?;
    m.add_function(wrap_pyfunction!(default_range, m)?)?;
    m.add_function(wrap_pyfunction!(uniform_edges, m)?)?;
    m.add_function(wrap_pyfunction!(histogram, m)?)
}
