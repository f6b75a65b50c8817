//! `_core.read_layout`: the `define_metric` declarations of an events file, as typed records.

use std::path::PathBuf;

use pyo3::prelude::*;

use crate::read::metric_layout::{read_layout as read, MetricLayout};

/// The section and visibility `Run.define_metric` declared for the keys matching `pattern`.
#[pyclass(module = "histoscope._core", frozen, get_all)]
pub(super) struct LayoutRecord {
    pattern: String,
    section: Option<String>,
    hidden: bool,
}

impl From<MetricLayout> for LayoutRecord {
    fn from(m: MetricLayout) -> Self {
        LayoutRecord {
            pattern: m.pattern,
            section: m.section,
            hidden: m.hidden,
        }
    }
}

/// The declarations in `path` from byte `start`, and the offset to continue from.
#[pyfunction]
#[pyo3(signature = (path, start = 0))]
fn read_layout(py: Python<'_>, path: PathBuf, start: u64) -> PyResult<(u64, Vec<LayoutRecord>)> {
    let (end, found) = py.detach(|| read(&path, start))?;
    Ok((end, found.into_iter().map(LayoutRecord::from).collect()))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<LayoutRecord>()?;
    m.add_function(wrap_pyfunction!(read_layout, m)?)
}
