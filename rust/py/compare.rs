//! Bindings for distances between histograms and for runs compared key by key.

use numpy::{PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::follow::RunLoaderHandle;
use super::records::StatsRecord;
use crate::bins::distance::{distance, Distance};
use crate::histograms::stats::Stats;
use crate::logdir::compare::{compare, Comparison, KeyDistance, StepPick};

/// How one key's histogram on side b differs from side a (see the core's `bins::distance`).
#[pyclass(frozen, get_all, name = "Distance", module = "histoscope._core")]
#[derive(Debug, Clone)]
pub struct DistanceRecord {
    pub key: String,
    pub step_a: i64,
    pub step_b: i64,
    pub wasserstein: f64,
    pub scaled: f64,
    pub ks: f64,
    pub mean_shift: f64,
    pub std_change: f64,
    pub nonfinite_a: f64,
    pub nonfinite_b: f64,
}

impl DistanceRecord {
    fn new(key: String, step_a: i64, step_b: i64, d: Distance) -> Self {
        DistanceRecord {
            key,
            step_a,
            step_b,
            wasserstein: d.wasserstein,
            scaled: d.scaled,
            ks: d.ks,
            mean_shift: d.mean_shift,
            std_change: d.std_change,
            nonfinite_a: d.nonfinite.0,
            nonfinite_b: d.nonfinite.1,
        }
    }
}

impl From<KeyDistance> for DistanceRecord {
    fn from(k: KeyDistance) -> Self {
        DistanceRecord::new(k.key, k.step_a, k.step_b, k.distance)
    }
}

/// Two sides compared: the keys both hold, farthest first, and the others.
#[pyclass(frozen, get_all, name = "Comparison", module = "histoscope._core")]
pub struct ComparisonRecord {
    pub ranked: Vec<DistanceRecord>,
    pub only_a: Vec<String>,
    pub only_b: Vec<String>,
    pub unmatched: Vec<String>,
}

impl From<Comparison> for ComparisonRecord {
    fn from(c: Comparison) -> Self {
        ComparisonRecord {
            ranked: c.ranked.into_iter().map(DistanceRecord::from).collect(),
            only_a: c.only_a,
            only_b: c.only_b,
            unmatched: c.unmatched,
        }
    }
}

fn pick(step: Option<i64>) -> StepPick {
    step.map_or(StepPick::Last, StepPick::AtOrBefore)
}

/// Every key of `a` at its last step at or before `step_a` (default: its last) against
/// the same key of `b` at `step_b`; `a` and `b` may be one loader. FileNotFoundError or
/// ValueError when a file changed since it was indexed.
#[pyfunction]
#[pyo3(signature = (a, b, step_a=None, step_b=None))]
fn compare_runs(
    py: Python<'_>,
    a: &RunLoaderHandle,
    b: &RunLoaderHandle,
    step_a: Option<i64>,
    step_b: Option<i64>,
) -> PyResult<ComparisonRecord> {
    let (pick_a, pick_b) = (pick(step_a), pick(step_b));
    let compared = py.detach(|| {
        if std::ptr::eq(a, b) {
            let run = a.lock();
            return compare(&run, &run, pick_a, pick_b);
        }
        // Always in the same order, so two comparisons of a pair the other way round,
        // each holding one run, cannot wait on each other.
        let a_first = (a as *const RunLoaderHandle) < (b as *const RunLoaderHandle);
        let (first, second) = if a_first {
            (a.lock(), b.lock())
        } else {
            let second = b.lock();
            (a.lock(), second)
        };
        compare(&first, &second, pick_a, pick_b)
    })?;
    Ok(compared.into())
}

fn rows<'a>(name: &str, array: &'a PyReadonlyArray2<'_, f64>) -> PyResult<&'a [f64]> {
    if array.shape()[1] != 3 {
        return Err(PyValueError::new_err(format!(
            "{name} must have 3 columns (left, right, count), got {}",
            array.shape()[1]
        )));
    }
    array
        .as_slice()
        .map_err(|_| PyValueError::new_err(format!("{name} must be C-contiguous")))
}

/// How the `(k, 3)` buckets `b` differ from `a`, as `key` from `step_a` to `step_b`; None
/// when either holds no finite value. `stats`, where both sides have them, give the
/// means and standard deviations.
#[pyfunction]
#[pyo3(signature = (a, b, *, stats=None, key=String::new(), step_a=0, step_b=0))]
fn histogram_distance(
    py: Python<'_>,
    a: PyReadonlyArray2<'_, f64>,
    b: PyReadonlyArray2<'_, f64>,
    stats: Option<(StatsRecord, StatsRecord)>,
    key: String,
    step_a: i64,
    step_b: i64,
) -> PyResult<Option<DistanceRecord>> {
    let (a, b) = (rows("a", &a)?, rows("b", &b)?);
    let stats = stats.map(|(x, y)| (Stats::from(x), Stats::from(y)));
    let found = py.detach(|| distance(a, b, stats.as_ref().map(|(x, y)| (x, y))));
    Ok(found.map(|d| DistanceRecord::new(key, step_a, step_b, d)))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<DistanceRecord>()?;
    m.add_class::<ComparisonRecord>()?;
    m.add_function(wrap_pyfunction!(compare_runs, m)?)?;
    m.add_function(wrap_pyfunction!(histogram_distance, m)?)?;
    Ok(())
}
