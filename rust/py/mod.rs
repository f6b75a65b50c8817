//! The Python bindings, `histoscope._core`: argument conversion and GIL release, nothing else.

use std::collections::HashSet;

use numpy::{IntoPyArray, PyArray1};
use pyo3::prelude::*;

use crate::bins::chart::{CHART_BINS, CHART_STEPS};
use crate::bins::edges::{check_bin_count, DEFAULT_BINS, MAX_BINS};
use crate::bins::thin::thin_indices;
use crate::diagnose::{Kind, Role, Severity};
use crate::histograms::stats::Stats;
use crate::logdir::discover::LogdirError;
use crate::logdir::load::logdir_charts;
use crate::logdir::load::{LogdirSource, Selection};
use records::{ChartsRecord, LogdirRecord};

mod arrays;
mod batch;
mod binning;
mod binning_batch;
mod card;
mod compare;
mod diagnose;
mod errors;
mod follow;
mod fsspec;
mod layout;
mod live_chart;
mod records;
mod scalars;
mod spectral;
mod stream;
mod writer;

fn selection(runs: Option<Vec<String>>, tags: Option<Vec<String>>) -> Selection {
    Selection {
        runs: runs.map(|r| r.into_iter().collect::<HashSet<_>>()),
        tags: tags.map(|t| t.into_iter().collect::<HashSet<_>>()),
    }
}

/// The one bin limit (the core's `edges::MAX_BINS`), for charts as for logging.
fn check_bins(bins: usize) -> PyResult<()> {
    Ok(check_bin_count(i64::try_from(bins).unwrap_or(i64::MAX))?)
}

/// Reads every histogram of the selected runs and tags of `logdir`: a path, or
/// several `(name, path)` pairs whose runs are named `name/run`.
#[pyfunction]
#[pyo3(signature = (logdir, runs=None, tags=None))]
fn load_histograms(
    py: Python<'_>,
    logdir: batch::Logdirs,
    runs: Option<Vec<String>>,
    tags: Option<Vec<String>>,
) -> PyResult<LogdirRecord> {
    let selection = selection(runs, tags);
    let source = LogdirSource::from(logdir);
    let logdir = py.detach(|| source.load(&selection))?;
    LogdirRecord::new(py, logdir)
}

/// Reads the selected histograms of `logdir` (as for `load_histograms`) as charts: thinned and rebinned.
#[pyfunction]
#[pyo3(signature = (logdir, bins, max_steps, runs=None, tags=None))]
fn read_charts(
    py: Python<'_>,
    logdir: batch::Logdirs,
    bins: usize,
    max_steps: Option<usize>,
    runs: Option<Vec<String>>,
    tags: Option<Vec<String>>,
) -> PyResult<ChartsRecord> {
    check_bins(bins)?;
    let selection = selection(runs, tags);
    let source = LogdirSource::from(logdir);
    let charted = py.detach(|| -> Result<_, LogdirError> {
        Ok(logdir_charts(source.load(&selection)?, bins, max_steps))
    })?;
    ChartsRecord::new(py, charted)
}

/// The indices charts keep of `n` steps with `max_steps` (None: all): maidr's.
#[pyfunction(name = "thin_indices")]
#[pyo3(signature = (n, max_steps))]
fn thin<'py>(py: Python<'py>, n: usize, max_steps: Option<usize>) -> Bound<'py, PyArray1<i64>> {
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
    m.add_function(wrap_pyfunction!(thin, m)?)?;
    m.add("STAT_NAMES", Stats::NAMES.to_vec())?;
    m.add("MAX_BINS", MAX_BINS)?;
    m.add("DEFAULT_BINS", DEFAULT_BINS)?;
    m.add("CHART_BINS", CHART_BINS)?;
    m.add("CHART_STEPS", CHART_STEPS)?;
    m.add("KINDS", Kind::ALL.map(Kind::name).to_vec())?;
    let worst: Vec<(&str, &str)> = Kind::ALL.map(|k| (k.name(), k.worst().name())).to_vec();
    m.add(
        "WORST_SEVERITIES",
        worst
            .into_iter()
            .collect::<std::collections::HashMap<_, _>>(),
    )?;
    m.add("ROLES", Role::NAMES.to_vec())?;
    m.add("SEVERITIES", Severity::ALL.map(Severity::name).to_vec())?;
    records::register(m)?;
    writer::register(m)?;
    live_chart::register(m)?;
    batch::register(m)?;
    binning::register(m)?;
    binning_batch::register(m)?;
    follow::register(m)?;
    fsspec::register(m)?;
    card::register(m)?;
    compare::register(m)?;
    layout::register(m)?;
    diagnose::register(m)?;
    stream::register(m)?;
    spectral::register(m)?;
    scalars::register(m)?;
    Ok(())
}
