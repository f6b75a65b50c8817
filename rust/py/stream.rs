//! `RunStream`: a log directory's runs handed to Python one by one, read a byte budget at a
//! time, a batch ahead, each diagnosed as it is read when asked.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use pyo3::prelude::*;
use rayon::prelude::*;

use super::batch::Logdirs;
use super::diagnose::{py_findings, FindingRecord};
use super::layout::LayoutRecord;
use super::records::{reports, series_records, FileReportRecord, SeriesRecord};
use super::selection;
use crate::diagnose::{diagnose_run, Finding, Options};
use crate::logdir::load::LogdirSource;
use crate::logdir::run::Reading;
use crate::logdir::stream::{self, Prefetched, StreamedRun};

/// One run of a stream: its name, its files' count and bytes when listed, what
/// reading them reported, what restarts superseded, its series (empty unless
/// kept), its findings (empty unless diagnosed) and its `define_metric`
/// declarations in file order.
#[pyclass(frozen, get_all, module = "histoscope._core")]
pub struct RunRecord {
    run: String,
    files: usize,
    bytes: u64,
    reports: Vec<Py<FileReportRecord>>,
    superseded: usize,
    series: Vec<Py<SeriesRecord>>,
    findings: Vec<Py<FindingRecord>>,
    layout: Vec<Py<LayoutRecord>>,
}

#[pymethods]
impl RunRecord {
    fn __repr__(&self) -> String {
        format!(
            "RunRecord({:?}: {} files, {} bytes, {} series, {} findings)",
            self.run,
            self.files,
            self.bytes,
            self.series.len(),
            self.findings.len()
        )
    }
}

/// A run read and reduced, waiting for Python to take it.
pub(super) struct Ready {
    streamed: StreamedRun,
    findings: Vec<Finding>,
}

impl RunRecord {
    pub(super) fn new(py: Python<'_>, ready: Ready) -> PyResult<Self> {
        let StreamedRun { run, files, bytes } = ready.streamed;
        Ok(RunRecord {
            run: run.name,
            files,
            bytes,
            reports: reports(run.merged.reports)
                .into_iter()
                .map(|r| Py::new(py, r))
                .collect::<PyResult<_>>()?,
            superseded: run.merged.superseded,
            series: series_records(py, run.merged.series)?,
            findings: py_findings(py, ready.findings)?,
            layout: run
                .evidence
                .layout
                .into_iter()
                .map(|declared| Py::new(py, LayoutRecord::from(declared)))
                .collect::<PyResult<_>>()?,
        })
    }
}

/// The selected runs of a log directory (a path, or `(name, path)` pairs), in name
/// order, holding `budget_bytes` of files at a time (two batches of half of it, or
/// of one larger run each; None: all at once; default `READ_BUDGET_BYTES`).
/// With `diagnose`, each run comes with its findings (`kinds` and `roles` as for
/// `diagnose_series`); without `series`, runs are read as step profiles, never
/// holding their buckets, and come without series. The next batch is read while
/// Python works on the one before.
#[pyclass(module = "histoscope._core")]
pub struct RunStream {
    batches: Mutex<Prefetched<Vec<Ready>>>,
    ready: VecDeque<Ready>,
    runs: Vec<String>,
    files: usize,
    bytes: u64,
}

#[pymethods]
impl RunStream {
    #[new]
    #[pyo3(signature = (
        logdir, *, runs=None, tags=None, budget_bytes=Some(stream::DEFAULT_BUDGET), diagnose=false, kinds=None,
        roles=None, series=true
    ))]
    #[allow(clippy::too_many_arguments)]
    fn py_new(
        py: Python<'_>,
        logdir: Logdirs,
        runs: Option<Vec<String>>,
        tags: Option<Vec<String>>,
        budget_bytes: Option<u64>,
        diagnose: bool,
        kinds: Option<Vec<String>>,
        roles: Option<Vec<(String, String)>>,
        series: bool,
    ) -> PyResult<Self> {
        let options = Options::parse(kinds, roles.unwrap_or_default())?;
        let selection = selection(runs, tags);
        let source = LogdirSource::from(logdir);
        let reading = reading(series);
        // Two batches are held at once, the one Python works on and the next.
        let per_batch = budget_bytes.map(|b| b / 2);
        let inner =
            py.detach(|| stream::RunStream::open(&source, &selection, per_batch, reading))?;
        let (runs, files, bytes) = (inner.runs().to_vec(), inner.files(), inner.bytes());
        let options = diagnose.then_some(options);
        let batches = Prefetched::start(inner, move |batch| diagnosed(batch, options.as_ref()));
        Ok(RunStream {
            batches: Mutex::new(batches),
            ready: VecDeque::new(),
            runs,
            files,
            bytes,
        })
    }

    /// Every run found, with or without histograms, sorted by name.
    #[getter]
    fn runs(&self) -> Vec<String> {
        self.runs.clone()
    }

    /// How many events files the selected runs have.
    #[getter]
    fn files(&self) -> usize {
        self.files
    }

    /// The bytes of the selected runs' files when listed.
    #[getter]
    fn bytes(&self) -> u64 {
        self.bytes
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(mut slf: PyRefMut<'_, Self>, py: Python<'_>) -> PyResult<Option<RunRecord>> {
        if slf.ready.is_empty() {
            let batches = slf
                .batches
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner);
            let batch = py.detach(|| batches.next_batch());
            slf.ready.extend(batch.into_iter().flatten());
        }
        slf.ready
            .pop_front()
            .map(|ready| RunRecord::new(py, ready))
            .transpose()
    }
}

/// Each run of a batch with its findings, where asked for, each run diagnosed on its own core.
pub(super) fn diagnosed(batch: Vec<StreamedRun>, options: Option<&Options>) -> Vec<Ready> {
    batch
        .into_par_iter()
        .map(|streamed| {
            let findings = options
                .map(|o| diagnose_run(&streamed.run, o))
                .unwrap_or_default();
            Ready { streamed, findings }
        })
        .collect()
}

/// How runs are read: with their series, or as step profiles alone.
pub(super) fn reading(series: bool) -> Reading {
    if series {
        Reading::Series
    } else {
        Reading::Profiles
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<RunRecord>()?;
    m.add_class::<RunStream>()?;
    m.add("READ_BUDGET_BYTES", stream::DEFAULT_BUDGET)?;
    Ok(())
}
