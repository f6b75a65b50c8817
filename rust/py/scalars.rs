//! `_core.read_scalars`: the scalars of an events file under a tag prefix, as typed records.

use std::path::PathBuf;

use pyo3::prelude::*;

use crate::read::scalars::{read_scalars as read, ScalarPoint};

/// One scalar value as written.
#[pyclass(module = "histoscope._core", frozen, get_all, name = "ScalarPoint")]
pub struct ScalarPointRecord {
    tag: String,
    step: i64,
    value: f64,
}

impl From<ScalarPoint> for ScalarPointRecord {
    fn from(p: ScalarPoint) -> Self {
        ScalarPointRecord {
            tag: p.tag,
            step: p.step,
            value: p.value,
        }
    }
}

/// The scalars in `path` from byte `start` whose tags start with `prefix`, and the
/// offset to continue from.
#[pyfunction]
#[pyo3(signature = (path, start = 0, prefix = ""))]
fn read_scalars(
    py: Python<'_>,
    path: PathBuf,
    start: u64,
    prefix: &str,
) -> PyResult<(u64, Vec<ScalarPointRecord>)> {
    let (end, found) = py.detach(|| read(&path, start, prefix))?;
    Ok((
        end,
        found.into_iter().map(ScalarPointRecord::from).collect(),
    ))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ScalarPointRecord>()?;
    m.add_function(wrap_pyfunction!(read_scalars, m)?)
}
