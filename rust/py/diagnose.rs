//! `diagnose_series` and the finding record: findings of the core's rules as typed records.

use numpy::{IntoPyArray, PyArray1};
use pyo3::prelude::*;

use super::records::{BorrowedSeries, SeriesRecord};
use crate::diagnose::{diagnose_checked, Evidence, Finding, Options, SeriesView, StepBuckets};
use crate::histograms::profile;

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

pub fn py_findings(py: Python<'_>, findings: Vec<Finding>) -> PyResult<Vec<Py<FindingRecord>>> {
    findings
        .into_iter()
        .map(|f| Py::new(py, FindingRecord::from(f)))
        .collect()
}

/// Diagnoses series already loaded (`HistogramSeries.record`), read in place: their
/// histograms alone, without the scalars of their runs.
#[pyfunction]
#[pyo3(signature = (series, kinds=None, roles=None))]
fn diagnose_series(
    py: Python<'_>,
    series: Vec<PyRef<'_, SeriesRecord>>,
    kinds: Option<Vec<String>>,
    roles: Option<Vec<(String, String)>>,
) -> PyResult<Vec<Py<FindingRecord>>> {
    let options = Options::parse(kinds, roles.unwrap_or_default())?;
    let borrowed = series
        .iter()
        .map(|record| BorrowedSeries::new(py, record))
        .collect::<PyResult<Vec<_>>>()?;
    let views = borrowed
        .iter()
        .map(|b| {
            Ok(SeriesView {
                run: &b.run,
                tag: &b.tag,
                steps: b.steps.as_slice()?,
                buckets: StepBuckets::Flat {
                    rows: b.rows.as_slice()?,
                    offsets: &b.offsets,
                },
                stats: &b.stats,
            })
        })
        .collect::<PyResult<Vec<_>>>()?;
    let findings = py.detach(|| diagnose_checked(&views, &Evidence::new(), &options))?;
    py_findings(py, findings)
}

/// Each step's share of values at exactly zero, as the rules read it (for the report's overview).
#[pyfunction]
fn zero_shares<'py>(
    py: Python<'py>,
    series: PyRef<'py, SeriesRecord>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let b = BorrowedSeries::new(py, &series)?;
    Ok(profile::zero_shares(b.rows.as_slice()?, &b.offsets, &b.stats).into_pyarray(py))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<FindingRecord>()?;
    m.add_function(wrap_pyfunction!(diagnose_series, m)?)?;
    m.add_function(wrap_pyfunction!(zero_shares, m)?)?;
    Ok(())
}
