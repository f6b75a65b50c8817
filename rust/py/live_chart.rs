//! `_core.LiveChart`: the notebook widget's chart, fed by a run's writer or from Python,
//! and its updates handed over as typed records of flat arrays.

use std::sync::{Arc, Mutex, MutexGuard};

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::check_bins;
use super::records::StatsRecord;
use crate::bins::chart::CHART_BINS;
use crate::bins::live_chart::{LiveChart as CoreChart, LIVE_STEPS, STEP_FIGURES};
use crate::bins::live_update::{LiveUpdate, SeriesChange};
use crate::histograms::stats::Stats;

/// Every tag's series on shared bins that widen as values spread, each thinned by
/// halves to about `keep` steps, its latest always held; `take_update` says what
/// changed since it was last called.
#[pyclass(frozen, module = "histoscope._core")]
pub struct LiveChart {
    pub(super) chart: Arc<Mutex<CoreChart>>,
}

impl LiveChart {
    pub(super) fn lock(&self) -> MutexGuard<'_, CoreChart> {
        lock(&self.chart)
    }
}

/// The guarded chart, even if a thread panicked holding it: an add happened or not.
pub(super) fn lock(chart: &Mutex<CoreChart>) -> MutexGuard<'_, CoreChart> {
    chart
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// One series' change in a `LiveUpdateRecord`, its numbers at the next places of the
/// update's arrays (see `rust/bins/live_update.rs` for how a page applies it).
#[pyclass(frozen, get_all, module = "histoscope._core")]
pub struct SeriesChangeRecord {
    tag: String,
    run: String,
    edges: bool,
    full: bool,
    masked: bool,
    keep: usize,
    rows: usize,
}

/// What changed: the changes, then the arrays their numbers lie in, in order.
#[pyclass(frozen, get_all, module = "histoscope._core")]
pub struct LiveUpdateRecord {
    changes: Vec<Py<SeriesChangeRecord>>,
    edges: Py<PyArray1<f64>>,
    steps: Py<PyArray1<f64>>,
    counts: Py<PyArray1<f32>>,
    figures: Py<PyArray1<f32>>,
    mask: Py<PyArray1<u8>>,
    bytes: usize,
}

fn record(py: Python<'_>, update: LiveUpdate) -> PyResult<LiveUpdateRecord> {
    let bytes = update.bytes();
    let changes = update
        .changes
        .into_iter()
        .map(|c: SeriesChange| {
            let SeriesChange {
                tag,
                run,
                edges,
                full,
                masked,
                keep,
                rows,
            } = c;
            Py::new(
                py,
                SeriesChangeRecord {
                    tag,
                    run,
                    edges,
                    full,
                    masked,
                    keep,
                    rows,
                },
            )
        })
        .collect::<PyResult<_>>()?;
    Ok(LiveUpdateRecord {
        changes,
        edges: update.edges.into_pyarray(py).unbind(),
        steps: update.steps.into_pyarray(py).unbind(),
        counts: update.counts.into_pyarray(py).unbind(),
        figures: update.figures.into_pyarray(py).unbind(),
        mask: update.mask.into_pyarray(py).unbind(),
        bytes,
    })
}

#[pymethods]
impl LiveChart {
    #[new]
    #[pyo3(signature = (bins=CHART_BINS, keep=LIVE_STEPS))]
    fn new(bins: usize, keep: usize) -> PyResult<Self> {
        check_bins(bins)?;
        if keep < 2 {
            return Err(PyValueError::new_err(format!(
                "keep must be at least 2, got {keep}"
            )));
        }
        Ok(LiveChart {
            chart: Arc::new(Mutex::new(CoreChart::new(bins, keep))),
        })
    }

    /// Adds a step of `run` under `tag`: its buckets, an (n, 3) array of (left, right,
    /// count) rows, and its statistics. A step not after the series' last replaces
    /// the steps from it on.
    fn add(
        &self,
        py: Python<'_>,
        tag: &str,
        run: &str,
        step: i64,
        buckets: PyReadonlyArray2<'_, f64>,
        stats: StatsRecord,
    ) -> PyResult<()> {
        if buckets.shape()[1] != 3 {
            return Err(PyValueError::new_err("buckets must be an (n, 3) array"));
        }
        let rows: Vec<f64> = buckets.as_array().iter().copied().collect();
        let stats = Stats::from(stats);
        py.detach(|| self.lock().add(tag, run, step, &rows, &stats));
        Ok(())
    }

    /// Drops the steps of `run` under `tag` from `step` on (all of them by default), as
    /// a restart that left none does.
    #[pyo3(signature = (tag, run, step=i64::MIN))]
    fn drop_from(&self, py: Python<'_>, tag: &str, run: &str, step: i64) {
        py.detach(|| self.lock().drop_from(tag, run, step));
    }

    /// The changes since the last call, as many tags' as fit `budget_bytes` (one tag's
    /// at least); the rest wait for the next call.
    fn take_update(&self, py: Python<'_>, budget_bytes: usize) -> PyResult<LiveUpdateRecord> {
        let update = py.detach(|| self.lock().take_update(budget_bytes));
        record(py, update)
    }

    /// Everything held, as one update to an empty page (a saved notebook's snapshot).
    fn whole(&self, py: Python<'_>) -> PyResult<LiveUpdateRecord> {
        let update = py.detach(|| self.lock().whole());
        record(py, update)
    }

    /// Whether a change waits to be taken.
    #[getter]
    fn pending(&self, py: Python<'_>) -> bool {
        py.detach(|| self.lock().pending())
    }

    /// The number of equal bins each tag is counted on.
    #[getter]
    fn bins(&self) -> usize {
        self.lock().bins()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<LiveChart>()?;
    m.add_class::<SeriesChangeRecord>()?;
    m.add_class::<LiveUpdateRecord>()?;
    m.add("LIVE_STEPS", LIVE_STEPS)?;
    m.add("STEP_FIGURES", STEP_FIGURES)?;
    Ok(())
}
