//! Bindings for following growing log directories: a run's loader and its index.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use numpy::{IntoPyArray, PyArray1, PyArray2};
use pyo3::prelude::*;

use super::records::{matrix, stats_matrix};
use crate::bins::compressor::BASIS_POINTS;
use crate::logdir::bucket_cache::{shared_buckets, SharedBuckets};
use crate::logdir::run_loader::{read, Progress, RunLoader as CoreLoader, TagIndex};

/// Buckets read again, shared by every run loader made with it, at most `cap_bytes` of them.
#[pyclass(frozen, name = "BucketCache", module = "histoscope._core")]
pub struct BucketCacheHandle {
    buckets: SharedBuckets,
}

#[pymethods]
impl BucketCacheHandle {
    #[new]
    fn new(cap_bytes: u64) -> Self {
        BucketCacheHandle {
            buckets: shared_buckets(cap_bytes),
        }
    }

    /// The most bytes of buckets kept.
    #[getter]
    fn cap_bytes(&self) -> u64 {
        self.buckets.lock().unwrap_or_else(|p| p.into_inner()).cap()
    }

    /// The bytes of buckets kept now.
    #[getter]
    fn used_bytes(&self) -> u64 {
        self.buckets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .used()
    }

    fn __len__(&self) -> usize {
        self.buckets.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// Rows of one tag's index: per step, in step order, no buckets.
#[pyclass(frozen, get_all, module = "histoscope._core")]
pub struct TagIndexRecord {
    /// Counts up whenever a restart drops steps already indexed.
    pub generation: u64,
    pub steps: Py<PyArray1<i64>>,
    pub wall_times: Py<PyArray1<f64>>,
    /// `(steps, len(STAT_NAMES))`.
    pub stats: Py<PyArray2<f64>>,
    /// `(steps, len(BASIS_POINTS))`: TensorBoard's distribution percentiles.
    pub percentiles: Py<PyArray2<f64>>,
    /// Which segment of the run holds each step's buckets.
    pub segments: Py<PyArray1<i64>>,
    /// Each step's share of values at exactly zero.
    pub zero_shares: Py<PyArray1<f64>>,
}

impl TagIndexRecord {
    fn new(py: Python<'_>, index: TagIndex) -> PyResult<Self> {
        let rows = index.rows;
        let percentiles: Vec<f64> = rows.percentiles.into_iter().flatten().collect();
        let segments: Vec<i64> = index.segments.into_iter().map(|s| s as i64).collect();
        Ok(TagIndexRecord {
            generation: index.generation,
            stats: stats_matrix(py, &rows.stats)?,
            percentiles: matrix(py, percentiles, BASIS_POINTS.len())?,
            steps: rows.steps.into_pyarray(py).unbind(),
            wall_times: rows.wall_times.into_pyarray(py).unbind(),
            segments: segments.into_pyarray(py).unbind(),
            zero_shares: rows.zero_shares.into_pyarray(py).unbind(),
        })
    }
}

/// A run followed as its files grow (see the core's `run_loader`).
#[pyclass(frozen, name = "RunLoader", module = "histoscope._core")]
pub struct RunLoaderHandle {
    loader: Mutex<CoreLoader>,
}

impl RunLoaderHandle {
    pub(super) fn lock(&self) -> MutexGuard<'_, CoreLoader> {
        self.loader.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The loader itself, for core work that locks several runs one at a time.
    pub(super) fn loader(&self) -> &Mutex<CoreLoader> {
        &self.loader
    }
}

#[pymethods]
impl RunLoaderHandle {
    #[new]
    fn new(name: &str, cache: &BucketCacheHandle) -> Self {
        RunLoaderHandle {
            loader: Mutex::new(CoreLoader::new(name, cache.buckets.clone())),
        }
    }

    #[getter]
    fn name(&self) -> String {
        self.lock().name().to_owned()
    }

    /// Counts up with every segment read.
    #[getter]
    fn version(&self) -> u64 {
        self.lock().version()
    }

    /// How many segments (stretches of whole records) have been read.
    #[getter]
    fn segment_count(&self) -> usize {
        self.lock().segment_count()
    }

    /// Where each file was read up to.
    #[getter]
    fn offsets(&self) -> HashMap<String, u64> {
        let run = self.lock();
        run.offsets()
            .iter()
            .map(|(path, &end)| (path.to_string_lossy().into_owned(), end))
            .collect()
    }

    /// The tags indexed so far, sorted.
    #[getter]
    fn tags(&self) -> Vec<String> {
        self.lock().tags().map(str::to_owned).collect()
    }

    /// Reads what was appended to `files` since, `max_bytes` a segment, for about
    /// `budget_seconds`; returns whether every file was read to its last whole record.
    fn read(
        &self,
        py: Python<'_>,
        files: Vec<PathBuf>,
        max_bytes: u64,
        budget_seconds: f64,
    ) -> bool {
        // Negative or NaN: no time; too long for a Duration: no limit.
        let budget = Duration::try_from_secs_f64(budget_seconds.max(0.0)).unwrap_or(Duration::MAX);
        let progress = py.detach(|| read(&self.loader, &files, max_bytes, budget));
        progress == Progress::CaughtUp
    }

    /// Rows `start:stop` of the index of `tag` (default: all), or None for an unknown tag.
    #[pyo3(signature = (tag, start=0, stop=None))]
    fn index(
        &self,
        py: Python<'_>,
        tag: &str,
        start: usize,
        stop: Option<usize>,
    ) -> PyResult<Option<TagIndexRecord>> {
        let rows = self
            .lock()
            .tag(tag)
            .map(|index| index.slice(start, stop.unwrap_or(usize::MAX)));
        rows.map(|rows| TagIndexRecord::new(py, rows)).transpose()
    }

    /// The `(k, 3)` buckets of `tag` at each of `steps` (None where the run has no such
    /// step), read again from the files; FileNotFoundError or ValueError when a file is
    /// gone, cut or rewritten since it was indexed.
    fn buckets<'py>(
        &self,
        py: Python<'py>,
        tag: &str,
        steps: Vec<i64>,
    ) -> PyResult<Vec<Option<Bound<'py, PyArray2<f64>>>>> {
        let found = py.detach(|| self.lock().buckets(tag, &steps))?;
        found
            .into_iter()
            .map(|flat| {
                flat.map(|flat| Ok(matrix(py, flat, 3)?.into_bound(py)))
                    .transpose()
            })
            .collect()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<TagIndexRecord>()?;
    m.add_class::<RunLoaderHandle>()?;
    m.add_class::<BucketCacheHandle>()?;
    // Whole numbers of basis points, as TensorBoard lists them.
    m.add("BASIS_POINTS", BASIS_POINTS.map(|bp| bp as u32).to_vec())?;
    Ok(())
}
