//! `diagnose_logdir` and `diagnose_series`: findings of the core's rules as typed records.

use std::borrow::Cow;

use numpy::{PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::batch::Logdirs;
use super::{report_tuple, selection, ReportTuple};
use crate::data_compat::Stats;
use crate::diagnose::{diagnose, DiagnoseError, Finding, Options, SeriesView};
use crate::logdir::LogdirError;

impl From<DiagnoseError> for PyErr {
    fn from(e: DiagnoseError) -> PyErr {
        PyValueError::new_err(e.to_string())
    }
}

/// One finding: which series, which steps, how bad, the numbers behind it and what to do.
#[pyclass(frozen, get_all, module = "histoscope._core")]
pub struct FindingRecord {
    kind: String,
    run: String,
    key: String,
    role: String,
    first_step: i64,
    last_step: i64,
    severity: String,
    evidence: Vec<(String, f64)>,
    message: String,
}

impl From<Finding> for FindingRecord {
    fn from(f: Finding) -> Self {
        FindingRecord {
            kind: f.kind.name().to_owned(),
            run: f.run,
            key: f.key,
            role: f.role.name().to_owned(),
            first_step: f.first_step,
            last_step: f.last_step,
            severity: f.severity.name().to_owned(),
            evidence: f.evidence,
            message: f.message,
        }
    }
}

#[pymethods]
impl FindingRecord {
    fn __repr__(&self) -> String {
        format!(
            "FindingRecord({} {} {:?} {:?} steps {}..{})",
            self.severity, self.kind, self.run, self.key, self.first_step, self.last_step
        )
    }
}

fn records(findings: Vec<Finding>) -> Vec<FindingRecord> {
    findings.into_iter().map(FindingRecord::from).collect()
}

/// Reads the selected histograms of `logdir` (as `load_histograms` does) and diagnoses them.
///
/// `roles` holds (key, role) pairs overriding the roles read from key names.
/// Returns (findings, report tuples).
#[pyfunction]
#[pyo3(signature = (logdir, kinds=None, roles=None, runs=None, tags=None))]
fn diagnose_logdir(
    py: Python<'_>,
    logdir: Logdirs,
    kinds: Option<Vec<String>>,
    roles: Option<Vec<(String, String)>>,
    runs: Option<Vec<String>>,
    tags: Option<Vec<String>>,
) -> PyResult<(Vec<FindingRecord>, Vec<ReportTuple>)> {
    let options = Options::parse(kinds, roles.unwrap_or_default())?;
    let selection = selection(runs, tags);
    let (findings, reports) = py.detach(|| -> Result<_, LogdirError> {
        let logdir = logdir.load(&selection)?;
        let views: Vec<SeriesView<'_>> = logdir.series.iter().map(SeriesView::from).collect();
        Ok((diagnose(&views, &options), logdir.reports))
    })?;
    Ok((
        records(findings),
        reports.into_iter().map(report_tuple).collect(),
    ))
}

/// One series' arrays as `load_histograms` hands them out:
/// (run, tag, steps, buckets (n, 3), offsets (steps + 1), stats (steps, 8)).
type SeriesArrays<'py> = (
    String,
    String,
    PyReadonlyArray1<'py, i64>,
    PyReadonlyArray2<'py, f64>,
    PyReadonlyArray1<'py, i64>,
    PyReadonlyArray2<'py, f64>,
);

/// A series' arrays as the core reads them: steps and buckets borrowed where contiguous.
struct Converted<'a> {
    run: String,
    tag: String,
    steps: Cow<'a, [i64]>,
    buckets: Cow<'a, [f64]>,
    offsets: Vec<usize>,
    stats: Vec<Stats>,
}

fn convert<'a>(s: &'a SeriesArrays<'_>) -> PyResult<Converted<'a>> {
    let (run, tag, steps, buckets, offsets, stats) = s;
    let bad =
        |problem: &str| PyValueError::new_err(format!("series {tag:?} of run {run:?}: {problem}"));
    if buckets.shape()[1] != 3 {
        return Err(bad("buckets must be an (n, 3) array"));
    }
    if stats.shape()[1] != Stats::NAMES.len() {
        return Err(bad("stats must be an (n, 8) array"));
    }
    let offsets = offsets
        .as_array()
        .iter()
        .map(|&o| usize::try_from(o).map_err(|_| bad("offsets must not be negative")))
        .collect::<PyResult<Vec<usize>>>()?;
    let stats = stats
        .as_array()
        .rows()
        .into_iter()
        .map(|row| {
            let mut values = [f64::NAN; 8];
            values.iter_mut().zip(row).for_each(|(v, &x)| *v = x);
            Stats::from_array(values)
        })
        .collect();
    Ok(Converted {
        run: run.clone(),
        tag: tag.clone(),
        steps: match steps.as_slice() {
            Ok(slice) => Cow::Borrowed(slice),
            Err(_) => Cow::Owned(steps.as_array().to_vec()),
        },
        buckets: match buckets.as_slice() {
            Ok(slice) => Cow::Borrowed(slice),
            Err(_) => Cow::Owned(buckets.as_array().iter().copied().collect()),
        },
        offsets,
        stats,
    })
}

/// Diagnoses series already loaded, given as their arrays (see `SeriesArrays`).
#[pyfunction]
#[pyo3(signature = (series, kinds=None, roles=None))]
fn diagnose_series(
    py: Python<'_>,
    series: Vec<SeriesArrays<'_>>,
    kinds: Option<Vec<String>>,
    roles: Option<Vec<(String, String)>>,
) -> PyResult<Vec<FindingRecord>> {
    let options = Options::parse(kinds, roles.unwrap_or_default())?;
    let converted = series.iter().map(convert).collect::<PyResult<Vec<_>>>()?;
    let views: Vec<SeriesView<'_>> = converted
        .iter()
        .map(|c| SeriesView {
            run: &c.run,
            tag: &c.tag,
            steps: &c.steps,
            buckets: &c.buckets,
            offsets: &c.offsets,
            stats: &c.stats,
        })
        .collect();
    for view in &views {
        view.check()?;
    }
    Ok(records(py.detach(|| diagnose(&views, &options))))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<FindingRecord>()?;
    m.add_function(wrap_pyfunction!(diagnose_logdir, m)?)?;
    m.add_function(wrap_pyfunction!(diagnose_series, m)?)?;
    Ok(())
}
