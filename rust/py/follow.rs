//! Bindings for following growing events files: one segment of records at a time.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use numpy::{IntoPyArray, PyArray1, PyArray2};
use pyo3::prelude::*;

use super::records::{matrix, series_records, stats_matrix, FileReportRecord, SeriesRecord};
use crate::compressor::BASIS_POINTS;
use crate::follow::{
    index_segment as index, read_segment as read, Segment, SegmentIndex, StepIndex,
};

/// One read of a file's next whole records, each tag's series with its buckets.
#[pyclass(frozen, get_all, module = "histoscope._core")]
pub struct SegmentRecord {
    /// The offset just past the last whole record read: where the next read starts.
    pub end: u64,
    /// The steps of the `SessionLog.START`s read.
    pub starts: Vec<i64>,
    pub series: Vec<Py<SeriesRecord>>,
    pub report: Py<FileReportRecord>,
    /// The run's map of tag to plugin after this segment.
    pub plugins: HashMap<String, String>,
}

/// One tag's steps in a segment without their buckets: what a viewer keeps per step.
#[pyclass(frozen, get_all, module = "histoscope._core")]
pub struct StepIndexRecord {
    pub tag: String,
    pub steps: Py<PyArray1<i64>>,
    pub wall_times: Py<PyArray1<f64>>,
    /// `(steps, len(STAT_NAMES))`.
    pub stats: Py<PyArray2<f64>>,
    /// `(steps, len(BASIS_POINTS))`: TensorBoard's distribution percentiles.
    pub percentiles: Py<PyArray2<f64>>,
}

impl StepIndexRecord {
    fn new(py: Python<'_>, s: StepIndex) -> PyResult<Self> {
        let percentiles: Vec<f64> = s.percentiles.into_iter().flatten().collect();
        Ok(StepIndexRecord {
            stats: stats_matrix(py, &s.stats)?,
            percentiles: matrix(py, percentiles, BASIS_POINTS.len())?,
            steps: s.steps.into_pyarray(py).unbind(),
            wall_times: s.wall_times.into_pyarray(py).unbind(),
            tag: s.tag,
        })
    }
}

/// A [`SegmentRecord`] with each series reduced to its step index.
#[pyclass(frozen, get_all, module = "histoscope._core")]
pub struct SegmentIndexRecord {
    pub end: u64,
    pub starts: Vec<i64>,
    pub series: Vec<Py<StepIndexRecord>>,
    pub report: Py<FileReportRecord>,
    pub plugins: HashMap<String, String>,
}

/// Indexes the whole records of `path` from byte `start`, about `max_bytes` of
/// them: per tag and step, the statistics and TensorBoard's percentiles, no buckets.
#[pyfunction]
fn index_segment(
    py: Python<'_>,
    run: &str,
    path: PathBuf,
    start: u64,
    max_bytes: u64,
    mut plugins: HashMap<String, String>,
) -> PyResult<SegmentIndexRecord> {
    let SegmentIndex {
        end,
        starts,
        series,
        report,
    } = py.detach(|| index(run, &path, start, max_bytes, &mut plugins));
    let series = series
        .into_iter()
        .map(|s| Py::new(py, StepIndexRecord::new(py, s)?))
        .collect::<PyResult<_>>()?;
    Ok(SegmentIndexRecord {
        end,
        starts,
        series,
        report: Py::new(py, FileReportRecord::from(report))?,
        plugins,
    })
}

/// Reads the whole records of `path` from byte `start`, about `max_bytes` of them.
///
/// `plugins` is the run's tag-to-plugin map from its records read before; the
/// map returned adds this segment's. The next read starts at the end offset.
#[pyfunction]
#[pyo3(signature = (run, path, start, max_bytes, plugins, tags=None))]
fn read_segment(
    py: Python<'_>,
    run: &str,
    path: PathBuf,
    start: u64,
    max_bytes: u64,
    mut plugins: HashMap<String, String>,
    tags: Option<Vec<String>>,
) -> PyResult<SegmentRecord> {
    let tags: Option<HashSet<String>> = tags.map(|t| t.into_iter().collect());
    let Segment {
        end,
        starts,
        series,
        report,
    } = py.detach(|| read(run, &path, start, max_bytes, &mut plugins, tags.as_ref()));
    Ok(SegmentRecord {
        end,
        starts,
        series: series_records(py, series)?,
        report: Py::new(py, FileReportRecord::from(report))?,
        plugins,
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SegmentRecord>()?;
    m.add_class::<StepIndexRecord>()?;
    m.add_class::<SegmentIndexRecord>()?;
    m.add_function(wrap_pyfunction!(index_segment, m)?)?;
    m.add_function(wrap_pyfunction!(read_segment, m)?)?;
    // Whole numbers of basis points, as TensorBoard lists them.
    m.add("BASIS_POINTS", BASIS_POINTS.map(|bp| bp as u32).to_vec())?;
    Ok(())
}
