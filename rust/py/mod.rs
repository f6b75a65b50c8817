//! The Python bindings, `histoscope._core`: argument conversion and GIL release, nothing else.

use std::collections::HashSet;

use numpy::{IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray2};
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyValueError};
use pyo3::prelude::*;

use crate::chart::{charts, Chart};
use crate::data_compat::Stats;
use crate::logdir::{Logdir, LogdirError, Selection, Series};
use crate::rebin::{rebin, thin_indices};
use crate::report::FileReport;

mod batch;
mod binning;
mod binning_batch;
mod diagnose;
mod follow;
mod layout;
mod writer;

impl From<LogdirError> for PyErr {
    fn from(e: LogdirError) -> PyErr {
        match e {
            LogdirError::NotFound(_) | LogdirError::NotADirectory(_) => {
                PyFileNotFoundError::new_err(e.to_string())
            }
            LogdirError::Io { .. } => PyOSError::new_err(e.to_string()),
        }
    }
}

type Array1<'py, T> = Bound<'py, PyArray1<T>>;
type Array2<'py> = Bound<'py, PyArray2<f64>>;

/// (path, summary, has_problems, incomplete_tail_offset)
type ReportTuple = (String, String, bool, Option<u64>);

/// (run, tag, steps, wall_times, buckets (n, 3), offsets (steps + 1), stats (steps, 8))
type SeriesTuple<'py> = (
    String,
    String,
    Array1<'py, i64>,
    Array1<'py, f64>,
    Array2<'py>,
    Array1<'py, i64>,
    Array2<'py>,
);

/// (run, tag, steps, wall_times, edges, counts (steps, bins), nonfinite_buckets, nonfinite_count)
type ChartTuple<'py> = (
    String,
    String,
    Array1<'py, i64>,
    Array1<'py, f64>,
    Array1<'py, f64>,
    Array2<'py>,
    usize,
    f64,
);

fn selection(runs: Option<Vec<String>>, tags: Option<Vec<String>>) -> Selection {
    Selection {
        runs: runs.map(|r| r.into_iter().collect::<HashSet<_>>()),
        tags: tags.map(|t| t.into_iter().collect::<HashSet<_>>()),
    }
}

fn matrix<'py>(py: Python<'py>, flat: Vec<f64>, columns: usize) -> PyResult<Array2<'py>> {
    let rows = flat.len() / columns;
    flat.into_pyarray(py).reshape([rows, columns])
}

fn report_tuple(r: FileReport) -> ReportTuple {
    (
        r.path.display().to_string(),
        r.summary(),
        r.has_problems(),
        r.incomplete_tail,
    )
}

fn series_tuple(py: Python<'_>, s: Series) -> PyResult<SeriesTuple<'_>> {
    let offsets: Vec<i64> = s.offsets.iter().map(|&o| o as i64).collect();
    let stats: Vec<f64> = s.stats.iter().flat_map(|st| st.to_array()).collect();
    Ok((
        s.run,
        s.tag,
        s.steps.into_pyarray(py),
        s.wall_times.into_pyarray(py),
        matrix(py, s.buckets, 3)?,
        offsets.into_pyarray(py),
        matrix(py, stats, Stats::NAMES.len())?,
    ))
}

fn chart_tuple(py: Python<'_>, c: Chart, bins: usize) -> PyResult<ChartTuple<'_>> {
    Ok((
        c.run,
        c.tag,
        c.steps.into_pyarray(py),
        c.wall_times.into_pyarray(py),
        c.bins.edges.into_pyarray(py),
        matrix(py, c.bins.counts, bins)?,
        c.bins.nonfinite_buckets,
        c.bins.nonfinite_count,
    ))
}

/// Reads every histogram of the selected runs and tags of `logdir`: a path, or
/// several `(name, path)` pairs whose runs are named `name/run`.
///
/// Returns (every run name, series tuples, report tuples).
#[pyfunction]
#[pyo3(signature = (logdir, runs=None, tags=None))]
fn load_histograms<'py>(
    py: Python<'py>,
    logdir: batch::Logdirs,
    runs: Option<Vec<String>>,
    tags: Option<Vec<String>>,
) -> PyResult<(Vec<String>, Vec<SeriesTuple<'py>>, Vec<ReportTuple>)> {
    let selection = selection(runs, tags);
    let Logdir {
        runs,
        series,
        reports,
    } = py.detach(|| logdir.load(&selection))?;
    let series = series
        .into_iter()
        .map(|s| series_tuple(py, s))
        .collect::<PyResult<_>>()?;
    Ok((
        runs,
        series,
        reports.into_iter().map(report_tuple).collect(),
    ))
}

/// Reads the selected histograms of `logdir` (as for `load_histograms`) as charts: thinned and rebinned.
///
/// Returns (every run name, chart tuples, report tuples).
#[pyfunction]
#[pyo3(signature = (logdir, bins, max_steps, runs=None, tags=None))]
fn read_charts<'py>(
    py: Python<'py>,
    logdir: batch::Logdirs,
    bins: usize,
    max_steps: Option<usize>,
    runs: Option<Vec<String>>,
    tags: Option<Vec<String>>,
) -> PyResult<(Vec<String>, Vec<ChartTuple<'py>>, Vec<ReportTuple>)> {
    if bins == 0 {
        return Err(PyValueError::new_err("bins must be at least 1"));
    }
    let selection = selection(runs, tags);
    let (logdir, charts) = py.detach(|| -> Result<_, LogdirError> {
        let mut logdir = logdir.load(&selection)?;
        let charts = charts(&logdir.series, bins, max_steps);
        logdir.series = Vec::new();
        Ok((logdir, charts))
    })?;
    let charts = charts
        .into_iter()
        .map(|c| chart_tuple(py, c, bins))
        .collect::<PyResult<_>>()?;
    Ok((
        logdir.runs,
        charts,
        logdir.reports.into_iter().map(report_tuple).collect(),
    ))
}

/// Rebins the buckets of several steps, each an (n, 3) float64 array, onto `bins` equal bins.
///
/// Returns (edges, counts (steps, bins), nonfinite_buckets, nonfinite_count).
#[pyfunction(name = "rebin")]
fn rebin_steps<'py>(
    py: Python<'py>,
    steps: Vec<PyReadonlyArray2<'py, f64>>,
    bins: usize,
) -> PyResult<(Array1<'py, f64>, Array2<'py>, usize, f64)> {
    if bins == 0 {
        return Err(PyValueError::new_err("bins must be at least 1"));
    }
    let flat: Vec<Vec<f64>> = steps
        .iter()
        .map(|a| {
            if a.as_array().ncols() != 3 {
                return Err(PyValueError::new_err(
                    "each step must be an (n, 3) array of buckets",
                ));
            }
            Ok(a.as_array().iter().copied().collect())
        })
        .collect::<PyResult<_>>()?;
    let r = py.detach(|| rebin(&flat.iter().map(Vec::as_slice).collect::<Vec<_>>(), bins));
    Ok((
        r.edges.into_pyarray(py),
        matrix(py, r.counts, bins)?,
        r.nonfinite_buckets,
        r.nonfinite_count,
    ))
}

/// The indices `read_charts` keeps of `n` steps with `max_steps` (None: all).
#[pyfunction(name = "thin_indices")]
#[pyo3(signature = (n, max_steps))]
fn thin<'py>(py: Python<'py>, n: usize, max_steps: Option<usize>) -> Array1<'py, i64> {
    thin_indices(n, max_steps)
        .into_iter()
        .map(|i| i as i64)
        .collect::<Vec<_>>()
        .into_pyarray(py)
}

#[pymodule]
#[pyo3(name = "_core")]
fn core_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(load_histograms, m)?)?;
    m.add_function(wrap_pyfunction!(read_charts, m)?)?;
    m.add_function(wrap_pyfunction!(rebin_steps, m)?)?;
    m.add_function(wrap_pyfunction!(thin, m)?)?;
    m.add("STAT_NAMES", Stats::NAMES.to_vec())?;
    writer::register(m)?;
    batch::register(m)?;
    binning::register(m)?;
    binning_batch::register(m)?;
    follow::register(m)?;
    layout::register(m)?;
    diagnose::register(m)?;
    Ok(())
}
