//! Bindings for spectra of weight matrices: singular values in, typed records out.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::arrays::c_order;
use super::records::BinnedHistogram;
use crate::diagnose::ALPHA_BAND;
use crate::spectral::{spectra as spectra_of, spectrum as spectrum_of, PowerLaw};
use crate::spectral::{Spectrum, MIN_EIGENVALUES, SPECTRUM_PREFIX};

/// The power law fitted to a spectrum's tail (see the core's `spectral::power_law`).
#[pyclass(frozen, get_all, name = "PowerLaw", module = "histoscope._core")]
#[derive(Debug, Clone)]
pub struct PowerLawRecord {
    pub alpha: f64,
    pub xmin: f64,
    pub ks: f64,
    pub tail: usize,
    pub sigma: f64,
}

impl From<PowerLaw> for PowerLawRecord {
    fn from(p: PowerLaw) -> Self {
        PowerLawRecord {
            alpha: p.alpha,
            xmin: p.xmin,
            ks: p.ks,
            tail: p.tail,
            sigma: p.sigma,
        }
    }
}

/// One weight matrix's spectrum: the eigenvalues of `WᵀW / N`, increasing, and its figures.
#[pyclass(frozen, get_all, name = "Spectrum", module = "histoscope._core")]
pub struct SpectrumRecord {
    pub eigenvalues: Py<PyArray1<f64>>,
    pub lambda_max: f64,
    pub stable_rank: f64,
    pub power_law: Option<Py<PowerLawRecord>>,
    /// The eigenvalues between log-spaced edges.
    pub histogram: Py<BinnedHistogram>,
}

impl SpectrumRecord {
    fn new(py: Python<'_>, s: Spectrum) -> PyResult<Self> {
        Ok(SpectrumRecord {
            eigenvalues: s.eigenvalues.into_pyarray(py).unbind(),
            lambda_max: s.lambda_max,
            stable_rank: s.stable_rank,
            power_law: s
                .power_law
                .map(|p| Py::new(py, PowerLawRecord::from(p)))
                .transpose()?,
            histogram: Py::new(py, BinnedHistogram::new(py, s.histogram)?)?,
        })
    }
}

/// A spectrum, or why a matrix has none: `spectra` keeps going past a bad matrix.
#[derive(IntoPyObject)]
enum Outcome {
    Done(SpectrumRecord),
    Failed(String),
}

/// The spectrum of a matrix from its `singular_values` (a float64 array, a
/// convolution's slices pooled), `n` its larger dimension, binned in `bins` log-spaced
/// bins. ValueError when there is none (no values, NaN, all zeros).
#[pyfunction]
fn spectrum(
    py: Python<'_>,
    singular_values: PyReadonlyArray1<'_, f64>,
    n: usize,
    bins: usize,
) -> PyResult<SpectrumRecord> {
    let values = c_order(&singular_values);
    let done = py.detach(|| spectrum_of(&values, n, bins))?;
    SpectrumRecord::new(py, done)
}

/// `spectrum` of several matrices at once, in parallel: each a `Spectrum`, or a
/// message saying why that one has none.
#[pyfunction]
fn spectra<'py>(
    py: Python<'py>,
    singular_values: Vec<PyReadonlyArray1<'py, f64>>,
    dims: Vec<usize>,
    bins: usize,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    if singular_values.len() != dims.len() {
        return Err(PyValueError::new_err(format!(
            "{} arrays of singular values for {} dimensions; give one each",
            singular_values.len(),
            dims.len()
        )));
    }
    let values: Vec<_> = singular_values.iter().map(c_order).collect();
    let matrices: Vec<(&[f64], usize)> = values.iter().map(|v| &**v).zip(dims).collect();
    let done = py.detach(|| spectra_of(&matrices, bins));
    done.into_iter()
        .map(|d| {
            let outcome = match d {
                Ok(s) => Outcome::Done(SpectrumRecord::new(py, s)?),
                Err(e) => Outcome::Failed(e.to_string()),
            };
            outcome.into_pyobject(py)
        })
        .collect()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PowerLawRecord>()?;
    m.add_class::<SpectrumRecord>()?;
    m.add_function(wrap_pyfunction!(spectrum, m)?)?;
    m.add_function(wrap_pyfunction!(spectra, m)?)?;
    m.add("SPECTRUM_MIN_EIGENVALUES", MIN_EIGENVALUES)?;
    m.add("ALPHA_BAND", ALPHA_BAND)?;
    m.add("SPECTRUM_PREFIX", SPECTRUM_PREFIX)?;
    Ok(())
}
