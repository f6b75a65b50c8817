//! Bindings for distances between histograms and for runs compared key by key.

use numpy::{IntoPyArray, PyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::follow::RunLoaderHandle;
use super::records::{BorrowedSeries, SeriesRecord};
use crate::bins::distance::Distance;

use crate::logdir::compare::{
    compare, distance_tracks, Comparison, KeyDistance, Loaded, LoadedKey, StepPick,
};
use crate::logdir::run_loader::RunLoader;

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

/// Runs `f` on both runs' loaders, locked (once, when they are one run).
fn locked_pair<T>(
    a: &RunLoaderHandle,
    b: &RunLoaderHandle,
    f: impl FnOnce(&RunLoader, &RunLoader) -> T,
) -> T {
    if std::ptr::eq(a, b) {
        let run = a.lock();
        return f(&run, &run);
    }
    // Always in the same order, so two comparisons of a pair the other way round,
    // each holding one run, cannot wait on each other.
    let (first, second) = if (a as *const RunLoaderHandle) < (b as *const RunLoaderHandle) {
        (a.lock(), b.lock())
    } else {
        let second = b.lock();
        (a.lock(), second)
    };
    f(&first, &second)
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
    let compared = py.detach(|| locked_pair(a, b, |x, y| compare(x, y, pick_a, pick_b)))?;
    Ok(compared.into())
}

/// Every series of `a` at its last step at or before `step_a` (default: its last)
/// against the series of `b` with the same key (its tag) at `step_b`: `compare_runs`
/// over series already loaded (`HistogramSeries.record`), read in place. ValueError
/// for a side holding one key twice.
#[pyfunction]
#[pyo3(signature = (a, b, step_a=None, step_b=None))]
fn compare_series(
    py: Python<'_>,
    a: Vec<PyRef<'_, SeriesRecord>>,
    b: Vec<PyRef<'_, SeriesRecord>>,
    step_a: Option<i64>,
    step_b: Option<i64>,
) -> PyResult<ComparisonRecord> {
    let borrow = |side: &[PyRef<'_, SeriesRecord>]| {
        side.iter()
            .map(|record| BorrowedSeries::new(py, record))
            .collect::<PyResult<Vec<_>>>()
    };
    let (held_a, held_b) = (borrow(&a)?, borrow(&b)?);
    let (side_a, side_b) = (loaded(&held_a)?, loaded(&held_b)?);
    let (pick_a, pick_b) = (pick(step_a), pick(step_b));
    let compared = py.detach(|| compare(&side_a, &side_b, pick_a, pick_b))?;
    Ok(compared.into())
}

/// A side of borrowed series, by key.
fn loaded<'a>(held: &'a [BorrowedSeries<'_>]) -> PyResult<Loaded<'a>> {
    let mut side = Loaded::new();
    for series in held {
        let key = LoadedKey {
            steps: series.steps.as_slice()?,
            stats: &series.stats,
            rows: series.rows.as_slice()?,
            offsets: &series.offsets,
        };
        if side.insert(series.tag.as_str(), key).is_some() {
            return Err(PyValueError::new_err(format!(
                "a side of the comparison holds the key '{}' twice",
                series.tag
            )));
        }
    }
    Ok(side)
}

/// One key's scaled distance between two runs at each column step (NaN where either
/// side has no step yet or no finite value).
#[pyclass(frozen, get_all, name = "DistanceTrack", module = "histoscope._core")]
pub struct DistanceTrackRecord {
    pub key: String,
    pub scaled: Py<PyArray1<f64>>,
}

/// Every key both runs hold, in key order, with its scaled distance at each of `columns`
/// (increasing steps), each side at its last step at or before the column: the
/// overview's cells in compare mode.
#[pyfunction]
fn compare_tracks(
    py: Python<'_>,
    a: &RunLoaderHandle,
    b: &RunLoaderHandle,
    columns: Vec<i64>,
) -> PyResult<Vec<DistanceTrackRecord>> {
    if columns.windows(2).any(|w| w[0] >= w[1]) {
        return Err(PyValueError::new_err("columns must be increasing steps"));
    }
    let tracks = py.detach(|| locked_pair(a, b, |x, y| distance_tracks(x, y, &columns)))?;
    Ok(tracks
        .into_iter()
        .map(|t| DistanceTrackRecord {
            key: t.key,
            scaled: t.scaled.into_pyarray(py).unbind(),
        })
        .collect())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<DistanceRecord>()?;
    m.add_class::<ComparisonRecord>()?;
    m.add_function(wrap_pyfunction!(compare_runs, m)?)?;
    m.add_function(wrap_pyfunction!(compare_series, m)?)?;
    m.add_function(wrap_pyfunction!(compare_tracks, m)?)?;
    m.add_class::<DistanceTrackRecord>()?;
    Ok(())
}
