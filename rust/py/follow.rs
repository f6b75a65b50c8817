//! Bindings for following growing events files: one segment of records at a time.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use pyo3::prelude::*;

use numpy::IntoPyArray;

use super::{matrix, report_tuple, series_tuple, Array1, Array2, ReportTuple, SeriesTuple};
use crate::compressor::BASIS_POINTS;
use crate::data_compat::Stats;
use crate::follow::{
    index_segment as index, read_segment as read, Segment, SegmentIndex, StepIndex,
};

/// (end offset, restart steps, series tuples, report tuple, the run's plugins after the segment)
type SegmentTuple<'py> = (
    u64,
    Vec<i64>,
    Vec<SeriesTuple<'py>>,
    ReportTuple,
    HashMap<String, String>,
);

/// (tag, steps, wall_times, stats (steps, 8), percentiles (steps, 9))
type StepIndexTuple<'py> = (
    String,
    Array1<'py, i64>,
    Array1<'py, f64>,
    Array2<'py>,
    Array2<'py>,
);

/// (end offset, restart steps, step index tuples, report tuple, the run's plugins after it)
type SegmentIndexTuple<'py> = (
    u64,
    Vec<i64>,
    Vec<StepIndexTuple<'py>>,
    ReportTuple,
    HashMap<String, String>,
);

/// Indexes the whole records of `path` from byte `start`, about `max_bytes` of
/// them: per tag and step, the statistics and TensorBoard's percentiles, no buckets.
#[pyfunction]
fn index_segment<'py>(
    py: Python<'py>,
    run: &str,
    path: PathBuf,
    start: u64,
    max_bytes: u64,
    mut plugins: HashMap<String, String>,
) -> PyResult<SegmentIndexTuple<'py>> {
    let SegmentIndex {
        end,
        starts,
        series,
        report,
    } = py.detach(|| index(run, &path, start, max_bytes, &mut plugins));
    let series = series
        .into_iter()
        .map(|s| step_index_tuple(py, s))
        .collect::<PyResult<_>>()?;
    Ok((end, starts, series, report_tuple(report), plugins))
}

fn step_index_tuple(py: Python<'_>, s: StepIndex) -> PyResult<StepIndexTuple<'_>> {
    let stats: Vec<f64> = s.stats.iter().flat_map(|st| st.to_array()).collect();
    let percentiles: Vec<f64> = s.percentiles.into_iter().flatten().collect();
    Ok((
        s.tag,
        s.steps.into_pyarray(py),
        s.wall_times.into_pyarray(py),
        matrix(py, stats, Stats::NAMES.len())?,
        matrix(py, percentiles, BASIS_POINTS.len())?,
    ))
}

/// Reads the whole records of `path` from byte `start`, about `max_bytes` of them.
///
/// `plugins` is the run's tag-to-plugin map from its records read before; the
/// map returned adds this segment's. The next read starts at the end offset.
#[pyfunction]
#[pyo3(signature = (run, path, start, max_bytes, plugins, tags=None))]
fn read_segment<'py>(
    py: Python<'py>,
    run: &str,
    path: PathBuf,
    start: u64,
    max_bytes: u64,
    mut plugins: HashMap<String, String>,
    tags: Option<Vec<String>>,
) -> PyResult<SegmentTuple<'py>> {
    let tags: Option<HashSet<String>> = tags.map(|t| t.into_iter().collect());
    let Segment {
        end,
        starts,
        series,
        report,
    } = py.detach(|| read(run, &path, start, max_bytes, &mut plugins, tags.as_ref()));
    let series = series
        .into_iter()
        .map(|s| series_tuple(py, s))
        .collect::<PyResult<_>>()?;
    Ok((end, starts, series, report_tuple(report), plugins))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(index_segment, m)?)?;
    m.add_function(wrap_pyfunction!(read_segment, m)?)?;
    // Whole numbers of basis points, as TensorBoard lists them.
    m.add("BASIS_POINTS", BASIS_POINTS.map(|bp| bp as u32).to_vec())?;
    Ok(())
}
