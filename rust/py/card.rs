//! Bindings for one tag across several runs on shared bins: a viewer's card read through the runs' loaders, a report's charts gathered run by run.

use std::sync::Mutex;

use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use numpy::{PyArrayMethods, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::follow::RunLoaderHandle;
use super::records::{matrix, SeriesRecord};
use crate::bins::card::{CardRequest, CARD_BINS, CARD_STEPS};
use crate::bins::shared::SharedCharts;
use crate::logdir::card::{read_card as core_read_card, Card, CardFailure, CardRun, CountedStep};

type Array1<T> = Py<PyArray1<T>>;

/// A step marked on a card: its counts on the shared bins and its statistics.
#[pyclass(frozen, get_all, name = "CountedStep", module = "histoscope._core")]
pub struct CountedStepRecord {
    pub step: i64,
    /// `bins` counts.
    pub counts: Array1<f64>,
    /// In the order of `STAT_NAMES`, NaN where the writer stored none.
    pub stats: Array1<f64>,
}

impl CountedStepRecord {
    fn new(py: Python<'_>, s: CountedStep) -> PyResult<Py<Self>> {
        let record = CountedStepRecord {
            step: s.step,
            counts: s.counts.into_pyarray(py).unbind(),
            stats: s.stats.to_array().to_vec().into_pyarray(py).unbind(),
        };
        Py::new(py, record)
    }
}

/// One run's part of a card.
#[pyclass(frozen, get_all, name = "CardRun", module = "histoscope._core")]
pub struct CardRunRecord {
    pub run: String,
    /// The steps drawn.
    pub steps: Array1<i64>,
    /// `(drawn steps, bins)` counts.
    pub counts: Py<PyArray2<f64>>,
    /// The last step at or before the chosen one, and the step before it.
    pub current: Option<Py<CountedStepRecord>>,
    pub previous: Option<Py<CountedStepRecord>>,
    /// The series' first and last step.
    pub first: i64,
    pub last: i64,
}

impl CardRunRecord {
    fn new(py: Python<'_>, r: CardRun, bins: usize) -> PyResult<Py<Self>> {
        let marked = |s: Option<CountedStep>| s.map(|s| CountedStepRecord::new(py, s));
        let record = CardRunRecord {
            steps: r.steps.into_pyarray(py).unbind(),
            counts: matrix(py, r.counts, bins)?,
            current: marked(r.current).transpose()?,
            previous: marked(r.previous).transpose()?,
            run: r.run,
            first: r.first,
            last: r.last,
        };
        Py::new(py, record)
    }
}

/// A run left out of a card, and why: its file gone, cut or rewritten since it was indexed.
#[pyclass(frozen, get_all, name = "CardFailure", module = "histoscope._core")]
pub struct CardFailureRecord {
    pub run: String,
    pub error: String,
}

/// One tag across several runs on shared bins.
#[pyclass(frozen, get_all, name = "Card", module = "histoscope._core")]
pub struct CardRecord {
    /// `bins + 1` shared edges; None when no run had a step to count.
    pub edges: Option<Array1<f64>>,
    pub runs: Vec<Py<CardRunRecord>>,
    pub errors: Vec<Py<CardFailureRecord>>,
}

impl CardRecord {
    fn new(py: Python<'_>, card: Card, bins: usize) -> PyResult<Self> {
        let failure = |f: CardFailure| {
            let error = f.error.to_string();
            Py::new(py, CardFailureRecord { run: f.run, error })
        };
        Ok(CardRecord {
            edges: card.edges.map(|e| e.into_pyarray(py).unbind()),
            runs: card
                .runs
                .into_iter()
                .map(|r| CardRunRecord::new(py, r, bins))
                .collect::<PyResult<_>>()?,
            errors: card
                .errors
                .into_iter()
                .map(failure)
                .collect::<PyResult<_>>()?,
        })
    }
}

/// The card of `tag` across `runs` (their loaders, each locked on its own): per run up
/// to `max_steps` steps within `from_step..=to_step`, thinned, and the last step at or
/// before `step` with the one before it, all on `bins` shared equal bins (defaults:
/// `CARD_STEPS`, capped at the core's `CARD_MAX_STEPS` of 1000, and `CARD_BINS`). ValueError for a window
/// ending before it starts or bins past `MAX_BINS`.
#[pyfunction]
#[pyo3(signature = (runs, tag, *, step=None, from_step=None, to_step=None, max_steps=None, bins=None))]
#[allow(clippy::too_many_arguments)]
fn read_card(
    py: Python<'_>,
    runs: Vec<Py<RunLoaderHandle>>,
    tag: &str,
    step: Option<i64>,
    from_step: Option<i64>,
    to_step: Option<i64>,
    max_steps: Option<usize>,
    bins: Option<usize>,
) -> PyResult<CardRecord> {
    let request = CardRequest::new(step, from_step, to_step, max_steps, bins)?;
    let loaders: Vec<&Mutex<_>> = runs.iter().map(|run| run.get().loader()).collect();
    let card = py.detach(|| core_read_card(&loaders, tag, &request));
    CardRecord::new(py, card, request.bins)
}

/// A series' steps and each step's buckets, read in place.
struct SeriesRows<'py> {
    steps: PyReadonlyArray1<'py, i64>,
    buckets: PyReadonlyArray2<'py, f64>,
    offsets: Vec<usize>,
}

impl<'py> SeriesRows<'py> {
    fn new(py: Python<'py>, record: &SeriesRecord) -> PyResult<Self> {
        let offsets = record.row_offsets(py)?;
        Ok(SeriesRows {
            steps: record.steps.bind(py).readonly(),
            buckets: record.buckets.bind(py).readonly(),
            offsets,
        })
    }

    /// Each step's flattened (left, right, count) rows.
    fn rows(&self) -> PyResult<Vec<&[f64]>> {
        let flat = self.buckets.as_slice()?;
        let bad = || PyValueError::new_err("a series' offsets must index its buckets in order");
        if self.offsets.len() != self.steps.len() + 1 {
            return Err(bad());
        }
        self.offsets
            .windows(2)
            .map(|w| flat.get(3 * w[0]..3 * w[1]).ok_or_else(bad))
            .collect()
    }
}

/// Every tag's shared bins as a report gathers them, run after run: `keep` each series
/// (thinned to `max_steps`, None: all) once every run is seen, then its `counts`.
#[pyclass(frozen, name = "SharedCharts", module = "histoscope._core")]
pub struct SharedChartsHandle {
    charts: Mutex<SharedCharts>,
}

impl SharedChartsHandle {
    fn lock(&self) -> std::sync::MutexGuard<'_, SharedCharts> {
        self.charts.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[pymethods]
impl SharedChartsHandle {
    #[new]
    #[pyo3(signature = (bins, max_steps))]
    fn new(bins: usize, max_steps: Option<usize>) -> PyResult<Self> {
        super::check_bins(bins)?;
        Ok(SharedChartsHandle {
            charts: Mutex::new(SharedCharts::new(bins, max_steps)),
        })
    }

    /// The positions of `series`' steps kept; their buckets widen its tag's bins.
    fn keep<'py>(
        &self,
        py: Python<'py>,
        series: PyRef<'py, SeriesRecord>,
    ) -> PyResult<Bound<'py, PyArray1<i64>>> {
        let read = SeriesRows::new(py, &series)?;
        let rows = read.rows()?;
        let tag: &str = &series.tag;
        let kept = py.detach(|| self.lock().keep(tag, &rows));
        Ok(kept
            .into_iter()
            .map(|i| i as i64)
            .collect::<Vec<_>>()
            .into_pyarray(py))
    }

    /// The steps `steps` of `series` counted on its tag's bins, `(steps, bins)`; None
    /// where the series lacks one of them.
    fn counts<'py>(
        &self,
        py: Python<'py>,
        series: PyRef<'py, SeriesRecord>,
        steps: PyReadonlyArray1<'py, i64>,
    ) -> PyResult<Option<Py<PyArray2<f64>>>> {
        let read = SeriesRows::new(py, &series)?;
        let (rows, held) = (read.rows()?, read.steps.as_slice()?);
        let wanted = steps.as_slice()?;
        let tag: &str = &series.tag;
        let counted = py.detach(|| self.lock().counts(tag, held, &rows, wanted));
        counted
            .map(|r| matrix(py, r.counts, r.edges.len() - 1))
            .transpose()
    }

    /// The `bins + 1` edges of `tag`'s bins.
    fn edges<'py>(&self, py: Python<'py>, tag: &str) -> Bound<'py, PyArray1<f64>> {
        self.lock().edges(tag).into_pyarray(py)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<CountedStepRecord>()?;
    m.add_class::<CardRunRecord>()?;
    m.add_class::<CardFailureRecord>()?;
    m.add_class::<CardRecord>()?;
    m.add_class::<SharedChartsHandle>()?;
    m.add_function(wrap_pyfunction!(read_card, m)?)?;
    m.add("CARD_BINS", CARD_BINS)?;
    m.add("CARD_STEPS", CARD_STEPS)?;
    Ok(())
}
