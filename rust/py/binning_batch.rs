//! `histograms` and `bin_batch`: many NumPy arrays binned at once, in parallel; the batch
//! stays in the core (`BinnedBatch`) until it is written, or becomes records when asked.

use numpy::PyReadonlyArray1;
use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::prelude::*;

use super::arrays::{c_order, data, Array, Data};
use super::records::{BinnedHistogram, StatsRecord};
use crate::bins::binning::batch::histograms as bin_all;
use crate::bins::binning::{Bins, Histogram, Values};
use crate::histograms::float16::HalfFloat;

/// Histograms binned together, held by the core: `EventFileWriter.write_batch`
/// writes them without a Python object per histogram; `histogram(i)` gives one.
#[pyclass(frozen, module = "histoscope._core")]
pub struct BinnedBatch {
    pub histograms: Vec<Histogram>,
}

#[pymethods]
impl BinnedBatch {
    /// A batch of histograms binned elsewhere (on a device): `edges[i]`,
    /// `counts[i]` and `stats[i]` make histogram `i`.
    #[staticmethod]
    fn of(
        edges: Vec<PyReadonlyArray1<'_, f64>>,
        counts: Vec<PyReadonlyArray1<'_, f64>>,
        stats: Vec<StatsRecord>,
    ) -> PyResult<Self> {
        if edges.len() != counts.len() || counts.len() != stats.len() {
            return Err(PyValueError::new_err(format!(
                "a batch needs as many edges, counts and stats, got {}, {} and {}",
                edges.len(),
                counts.len(),
                stats.len()
            )));
        }
        let histograms = edges
            .iter()
            .zip(&counts)
            .zip(stats)
            .map(|((e, c), s)| Histogram {
                edges: c_order(e).into_owned(),
                counts: c_order(c).into_owned(),
                stats: s.into(),
            })
            .collect();
        Ok(BinnedBatch { histograms })
    }

    /// This batch's histograms, then `other`'s.
    fn joined(&self, other: &BinnedBatch) -> BinnedBatch {
        let histograms = self.histograms.iter().chain(&other.histograms).cloned();
        BinnedBatch {
            histograms: histograms.collect(),
        }
    }

    fn __len__(&self) -> usize {
        self.histograms.len()
    }

    /// Histogram `index` as a record, for a caller that wants to see it.
    fn histogram(&self, py: Python<'_>, index: usize) -> PyResult<BinnedHistogram> {
        let h = self.histograms.get(index).ok_or_else(|| {
            PyIndexError::new_err(format!(
                "histogram {index} of a batch of {}",
                self.histograms.len()
            ))
        })?;
        BinnedHistogram::new(py, h.clone())
    }

    fn __repr__(&self) -> String {
        format!("BinnedBatch({} histograms)", self.histograms.len())
    }
}

/// Bins each of `values` (NumPy arrays of any numeric or bool dtype) into
/// `bins` equal bins from its smallest to its largest finite value, as
/// `histogram(values[i], bins)` does, with all of them in parallel and the
/// GIL released; the batch stays in the core.
///
/// `encodings[i]`, when given, is "float16" or "bfloat16" for a uint16 array
/// holding the bits of that type, or None for an array read as it is.
#[pyfunction]
#[pyo3(signature = (values, bins, encodings=None))]
fn bin_batch<'py>(
    py: Python<'py>,
    values: Vec<Bound<'py, PyAny>>,
    bins: usize,
    encodings: Option<Vec<Option<HalfFloat>>>,
) -> PyResult<BinnedBatch> {
    let histograms = binned(py, &values, bins, encodings)?;
    Ok(BinnedBatch { histograms })
}

/// `bin_batch`, each histogram a record.
#[pyfunction]
#[pyo3(signature = (values, bins, encodings=None))]
fn histograms<'py>(
    py: Python<'py>,
    values: Vec<Bound<'py, PyAny>>,
    bins: usize,
    encodings: Option<Vec<Option<HalfFloat>>>,
) -> PyResult<Vec<BinnedHistogram>> {
    binned(py, &values, bins, encodings)?
        .into_iter()
        .map(|h| BinnedHistogram::new(py, h))
        .collect()
}

fn binned<'py>(
    py: Python<'py>,
    values: &[Bound<'py, PyAny>],
    bins: usize,
    encodings: Option<Vec<Option<HalfFloat>>>,
) -> PyResult<Vec<Histogram>> {
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
    Ok(binned)
}

/// Adds `histograms`, `bin_batch` and `BinnedBatch` to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<BinnedBatch>()?;
    m.add_function(wrap_pyfunction!(bin_batch, m)?)?;
    m.add_function(wrap_pyfunction!(histograms, m)?)
}
