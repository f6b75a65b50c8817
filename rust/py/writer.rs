//! `_core.EventFileWriter`: an events file that Python's background thread writes to.

use std::path::PathBuf;
use std::sync::Mutex;

use numpy::{PyReadonlyArray1, PyReadonlyArrayDyn};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::binning::bin_values;
use super::binning_batch::BinnedBatch;
use super::diagnose::{py_findings, FindingRecord};
use super::live_chart::LiveChart;
use super::records::StatsRecord;
use crate::diagnose::{Alert, LiveDiagnosis, Options};
use crate::histograms::float16::HalfFloat;
use crate::histograms::stats::Stats;
use crate::read::metric_layout::MetricLayout;
use crate::read::optimizer_note::OptimizerNote;
use crate::write::diagnosed::DiagnosedWriter;
use crate::write::event_writer::{layout_event, EventWriter, HistogramRecord};

/// An alert of the run's live diagnosis: the finding, and the step it was found at.
#[pyclass(frozen, get_all, module = "histoscope._core")]
pub struct AlertRecord {
    step: i64,
    finding: Py<FindingRecord>,
}

/// A new events file in a run's folder; every call releases the GIL while it writes.
#[pyclass(module = "histoscope._core")]
pub struct EventFileWriter {
    writer: Mutex<Option<DiagnosedWriter>>,
    /// The live diagnosis once the file is closed: its findings outlive the file.
    closed_live: Mutex<Option<LiveDiagnosis>>,
    path: PathBuf,
}

impl EventFileWriter {
    fn closed(&self) -> PyErr {
        PyValueError::new_err(format!("{} is closed", self.path.display()))
    }

    fn with<T, E: Into<PyErr>>(
        &self,
        f: impl FnOnce(&mut DiagnosedWriter) -> Result<T, E>,
    ) -> PyResult<T> {
        let mut guard = lock(&self.writer);
        let writer = guard.as_mut().ok_or_else(|| self.closed())?;
        f(writer).map_err(Into::into)
    }

    fn live<T>(&self, f: impl FnOnce(&mut LiveDiagnosis) -> T) -> Option<T> {
        let mut open = lock(&self.writer);
        if let Some(writer) = open.as_mut() {
            return writer.live.as_mut().map(f);
        }
        drop(open);
        lock(&self.closed_live).as_mut().map(f)
    }
}

#[pymethods]
impl EventFileWriter {
    /// With `diagnosed_as`, every value written is also diagnosed live, its
    /// findings naming the run so.
    #[new]
    #[pyo3(signature = (dir, wall_time, host, diagnosed_as=None))]
    fn new(
        py: Python<'_>,
        dir: PathBuf,
        wall_time: f64,
        host: String,
        diagnosed_as: Option<String>,
    ) -> PyResult<Self> {
        let file = py.detach(|| EventWriter::create(&dir, wall_time, &host))?;
        let path = file.path().to_path_buf();
        let live = diagnosed_as.map(|run| LiveDiagnosis::new(&run, Options::default()));
        Ok(EventFileWriter {
            writer: Mutex::new(Some(DiagnosedWriter {
                file,
                live,
                charts: Vec::new(),
            })),
            closed_live: Mutex::new(None),
            path,
        })
    }

    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// Writes one histogram: `counts[i]` values in `[edges[i], edges[i + 1])`,
    /// and its statistics.
    #[allow(clippy::too_many_arguments)]
    fn write_histogram(
        &self,
        py: Python<'_>,
        tag: &str,
        step: i64,
        wall_time: f64,
        edges: PyReadonlyArray1<'_, f64>,
        counts: PyReadonlyArray1<'_, f64>,
        stats: StatsRecord,
    ) -> PyResult<()> {
        let edges = edges.as_array().to_vec();
        let counts = counts.as_array().to_vec();
        py.detach(|| {
            let record = HistogramRecord {
                tag,
                step,
                wall_time,
                edges: &edges,
                counts: &counts,
                stats: Stats::from(stats),
            };
            self.with(|w| w.histogram(&record))
        })
    }

    /// Writes `batch`'s histograms under `tags`, all at `step`, in one call.
    fn write_batch(
        &self,
        py: Python<'_>,
        tags: Vec<String>,
        step: i64,
        wall_time: f64,
        batch: &BinnedBatch,
    ) -> PyResult<()> {
        py.detach(|| self.with(|w| w.step(step, wall_time, &tags, &batch.histograms)))
    }

    /// Bins `values` as `histogram` does (same arguments) and writes the
    /// histogram under `tag`, with no Python object made for it.
    #[pyo3(signature = (tag, step, wall_time, values, bins=None, edges=None, range=None, weights=None, encoding=None))]
    #[allow(clippy::too_many_arguments)]
    fn bin_and_write<'py>(
        &self,
        py: Python<'py>,
        tag: &str,
        step: i64,
        wall_time: f64,
        values: &Bound<'py, PyAny>,
        bins: Option<usize>,
        edges: Option<&Bound<'py, PyAny>>,
        range: Option<(f64, f64)>,
        weights: Option<PyReadonlyArrayDyn<'py, f64>>,
        encoding: Option<HalfFloat>,
    ) -> PyResult<()> {
        let h = bin_values(py, values, bins, edges, range, weights, encoding)?;
        py.detach(|| self.with(|w| w.binned(tag, step, wall_time, &h)))
    }

    /// Writes one scalar, as TensorBoard's scalars dashboard reads it.
    fn write_scalar(
        &self,
        py: Python<'_>,
        tag: &str,
        step: i64,
        wall_time: f64,
        value: f32,
    ) -> PyResult<()> {
        py.detach(|| self.with(|w| w.scalar(tag, step, wall_time, value)))
    }

    /// Declares the section and visibility of the keys matching `pattern` (`Run.define_metric`).
    fn write_layout(
        &self,
        py: Python<'_>,
        pattern: String,
        section: Option<String>,
        hidden: bool,
        wall_time: f64,
    ) -> PyResult<()> {
        let declared = MetricLayout {
            pattern,
            section,
            hidden,
        };
        py.detach(|| self.with(|w| w.file.write(&layout_event(&declared, wall_time))))
    }

    /// Notes the optimizer the run trains with: its class and those it derives
    /// from, most derived first, each `module.Name` (`watch` calls this).
    fn write_optimizer(
        &self,
        py: Python<'_>,
        classes: Vec<String>,
        wall_time: f64,
    ) -> PyResult<()> {
        let note = OptimizerNote { classes };
        py.detach(|| self.with(|w| w.optimizer(note, wall_time)))
    }

    /// Shows the run in `chart` under `run`: what the file holds so far, then every
    /// histogram as it is written (the notebook's widget).
    fn show_in(&self, py: Python<'_>, chart: &LiveChart, run: &str) -> PyResult<()> {
        let chart = chart.chart.clone();
        py.detach(|| self.with(|w| w.show_in(chart, run)))
    }

    /// Stops adding histograms to `chart` (its widget was closed).
    fn hide_from(&self, py: Python<'_>, chart: &LiveChart) -> PyResult<()> {
        let chart = chart.chart.clone();
        py.detach(|| {
            self.with(|w| {
                w.charts
                    .retain(|(held, _)| !std::sync::Arc::ptr_eq(held, &chart));
                Ok::<_, PyErr>(())
            })
        })
    }

    /// Pushes every record written so far to the operating system.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.with(|w| w.file.flush()))
    }

    /// Flushes and closes the file; later writes raise `ValueError`.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| {
            let Some(mut writer) = lock(&self.writer).take() else {
                return Ok(());
            };
            if let Some(mut live) = writer.live.take() {
                live.conclude();
                *lock(&self.closed_live) = Some(live);
            }
            writer.file.flush().map_err(PyErr::from)
        })
    }

    /// Judges what was written so far as complete (the writer has caught up); a no-op
    /// without live diagnosis.
    fn settle(&self, py: Python<'_>) {
        py.detach(|| self.live(LiveDiagnosis::settle));
    }

    /// The alerts found since the last call, oldest first.
    fn take_alerts(&self, py: Python<'_>) -> PyResult<Vec<AlertRecord>> {
        let alerts = py.detach(|| self.live(LiveDiagnosis::take_alerts));
        alerts
            .unwrap_or_default()
            .into_iter()
            .map(|Alert { step, finding }| {
                let finding = Py::new(py, FindingRecord::from(finding))?;
                Ok(AlertRecord { step, finding })
            })
            .collect()
    }

    /// The run's findings as written so far (empty without live diagnosis).
    fn live_findings(&self, py: Python<'_>) -> PyResult<Vec<Py<FindingRecord>>> {
        let findings = py.detach(|| self.live(|live| live.findings_now().to_vec()));
        py_findings(py, findings.unwrap_or_default())
    }
}

/// The guarded value, even if a thread panicked holding it: a write either happened or not.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<EventFileWriter>()?;
    m.add_class::<AlertRecord>()
}
