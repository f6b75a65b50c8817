//! `_core.EventFileWriter`: an events file that Python's background thread writes to.

use std::path::PathBuf;
use std::sync::Mutex;

use numpy::{PyReadonlyArray1, PyReadonlyArrayDyn};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

use super::binning::bin_values;
use super::binning_batch::BinnedBatch;
use super::records::StatsRecord;
use crate::histograms::float16::HalfFloat;
use crate::histograms::stats::Stats;
use crate::read::metric_layout::MetricLayout;
use crate::read::optimizer_note::OptimizerNote;
use crate::write::binned::{binned_event, write_step, BinnedError};
use crate::write::event_writer::{
    histogram_event, layout_event, optimizer_event, scalar_event, EventWriter, HistogramRecord,
    WriteError,
};

impl From<WriteError> for PyErr {
    fn from(e: WriteError) -> PyErr {
        match e {
            WriteError::EdgeCount { .. } => PyValueError::new_err(e.to_string()),
            WriteError::Io { .. } => PyOSError::new_err(e.to_string()),
        }
    }
}

impl From<BinnedError> for PyErr {
    fn from(e: BinnedError) -> PyErr {
        match e {
            BinnedError::TagCount { .. } => PyValueError::new_err(e.to_string()),
            BinnedError::Write(e) => e.into(),
        }
    }
}

/// A new events file in a run's folder; every call releases the GIL while it writes.
#[pyclass(module = "histoscope._core")]
pub struct EventFileWriter {
    writer: Mutex<Option<EventWriter>>,
    path: PathBuf,
}

impl EventFileWriter {
    fn closed(&self) -> PyErr {
        PyValueError::new_err(format!("{} is closed", self.path.display()))
    }

    fn with<T>(&self, f: impl FnOnce(&mut EventWriter) -> Result<T, WriteError>) -> PyResult<T> {
        let mut guard = self
            .writer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let writer = guard.as_mut().ok_or_else(|| self.closed())?;
        Ok(f(writer)?)
    }
}

#[pymethods]
impl EventFileWriter {
    #[new]
    fn new(py: Python<'_>, dir: PathBuf, wall_time: f64, host: String) -> PyResult<Self> {
        let writer = py.detach(|| EventWriter::create(&dir, wall_time, &host))?;
        let path = writer.path().to_path_buf();
        Ok(EventFileWriter {
            writer: Mutex::new(Some(writer)),
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
            let event = histogram_event(&record)?;
            self.with(|w| w.write(&event))
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
        py.detach(|| {
            let mut guard = self
                .writer
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let writer = guard.as_mut().ok_or_else(|| self.closed())?;
            Ok(write_step(
                writer,
                step,
                wall_time,
                &tags,
                &batch.histograms,
            )?)
        })
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
        py.detach(|| {
            let event = binned_event(tag, step, wall_time, &h)?;
            self.with(|w| w.write(&event))
        })
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
        py.detach(|| self.with(|w| w.write(&scalar_event(tag, step, wall_time, value))))
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
        py.detach(|| self.with(|w| w.write(&layout_event(&declared, wall_time))))
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
        py.detach(|| self.with(|w| w.write(&optimizer_event(&note, wall_time))))
    }

    /// Pushes every record written so far to the operating system.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.with(EventWriter::flush))
    }

    /// Flushes and closes the file; later writes raise `ValueError`.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| {
            let mut guard = self
                .writer
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            match guard.take() {
                Some(mut writer) => writer.flush().map_err(PyErr::from),
                None => Ok(()),
            }
        })
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<EventFileWriter>()
}
