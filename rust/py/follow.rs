//! Bindings for following growing events files: one segment of records at a time.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use pyo3::prelude::*;

use super::{report_tuple, series_tuple, ReportTuple, SeriesTuple};
use crate::follow::{read_segment as read, Segment};

/// (end offset, restart steps, series tuples, report tuple, the run's plugins after the segment)
type SegmentTuple<'py> = (
    u64,
    Vec<i64>,
    Vec<SeriesTuple<'py>>,
    ReportTuple,
    HashMap<String, String>,
);

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
    m.add_function(wrap_pyfunction!(read_segment, m)?)?;
    Ok(())
}
