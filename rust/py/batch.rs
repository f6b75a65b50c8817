//! Bindings for reading in bulk: several log directories, a run one file at a time, streamed bytes.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use super::{report_tuple, series_tuple, ReportTuple, SeriesTuple};
use crate::event_file::{read_event_file, FileContents};
use crate::event_stream::{EventStream as CoreStream, StreamError};
use crate::logdir::{
    discover_runs as discover, drop_buckets, keep_entries, load_logdir, load_logdirs, merge_run,
    surviving_entries, Logdir, LogdirError, Selection,
};

impl From<StreamError> for PyErr {
    fn from(e: StreamError) -> PyErr {
        match e {
            StreamError::Spawn { .. } => PyOSError::new_err(e.to_string()),
            StreamError::Finished(_) => PyValueError::new_err(e.to_string()),
            StreamError::DecoderFailed(_) => PyRuntimeError::new_err(e.to_string()),
        }
    }
}

/// The `logdir` argument: one path, or several as `(name, path)` pairs whose runs are named `name/run`.
#[derive(FromPyObject)]
pub enum Logdirs {
    One(PathBuf),
    Several(Vec<(String, PathBuf)>),
}

impl Logdirs {
    pub fn load(&self, selection: &Selection) -> Result<Logdir, LogdirError> {
        match self {
            Logdirs::One(path) => load_logdir(path, selection),
            Logdirs::Several(logdirs) => load_logdirs(logdirs, selection),
        }
    }
}

fn tag_set(tags: Option<Vec<String>>) -> Option<HashSet<String>> {
    tags.map(|t| t.into_iter().collect())
}

/// Everything decoded from one events file, waiting to be merged into its run.
#[pyclass(module = "histoscope._core")]
pub struct DecodedFile {
    contents: Option<FileContents>,
}

impl DecodedFile {
    fn new(contents: FileContents) -> Self {
        DecodedFile {
            contents: Some(contents),
        }
    }

    fn contents_mut(&mut self) -> PyResult<&mut FileContents> {
        self.contents
            .as_mut()
            .ok_or_else(|| PyValueError::new_err("this decoded file was already merged"))
    }

    fn take(&mut self) -> PyResult<FileContents> {
        self.contents
            .take()
            .ok_or_else(|| PyValueError::new_err("this decoded file was already merged"))
    }
}

#[pymethods]
impl DecodedFile {
    /// The number of entries (histogram values and restarts) read from the file.
    fn __len__(&mut self) -> PyResult<usize> {
        Ok(self.contents_mut()?.entries.len())
    }

    /// Frees the buckets, keeping what `surviving_entries` needs.
    fn drop_buckets(&mut self) -> PyResult<()> {
        drop_buckets(self.contents_mut()?);
        Ok(())
    }

    /// Keeps only the entries `keep` marks, as `surviving_entries` found them.
    fn keep(&mut self, keep: PyReadonlyArray1<'_, bool>) -> PyResult<()> {
        let keep = keep.as_slice()?.to_vec();
        keep_entries(self.contents_mut()?, &keep);
        Ok(())
    }
}

/// An events file fed in chunks, in order, decoded on a thread of its own as they come.
#[pyclass(module = "histoscope._core")]
pub struct EventStream {
    stream: CoreStream,
}

#[pymethods]
impl EventStream {
    #[new]
    #[pyo3(signature = (path, size=None, tags=None))]
    fn new(path: &str, size: Option<u64>, tags: Option<Vec<String>>) -> PyResult<Self> {
        Ok(EventStream {
            stream: CoreStream::new(path, size, tag_set(tags))?,
        })
    }

    /// Hands the next chunk to the decoder; waits, without the GIL, while it is behind.
    fn feed(&mut self, py: Python<'_>, chunk: &[u8]) -> PyResult<()> {
        let chunk = chunk.to_vec();
        Ok(py.detach(|| self.stream.feed(chunk))?)
    }

    /// Ends the file and returns what was decoded from it.
    fn finish(&mut self, py: Python<'_>) -> PyResult<DecodedFile> {
        Ok(DecodedFile::new(py.detach(|| self.stream.finish())?))
    }
}

/// Reads one local events file.
#[pyfunction]
#[pyo3(signature = (path, tags=None))]
fn decode_file(py: Python<'_>, path: PathBuf, tags: Option<Vec<String>>) -> DecodedFile {
    let tags = tag_set(tags);
    DecodedFile::new(py.detach(|| read_event_file(&path, tags.as_ref())))
}

/// Merges a run's decoded files, in order, into its series; the files are used up.
///
/// Returns (series tuples, report tuples).
#[pyfunction]
fn merge_files<'py>(
    py: Python<'py>,
    run: &str,
    files: Vec<PyRefMut<'py, DecodedFile>>,
) -> PyResult<(Vec<SeriesTuple<'py>>, Vec<ReportTuple>)> {
    let contents = take_all(files)?;
    let (series, reports) = py.detach(|| merge_run(run, contents));
    let series = series
        .into_iter()
        .map(|s| series_tuple(py, s))
        .collect::<PyResult<_>>()?;
    Ok((series, reports.into_iter().map(report_tuple).collect()))
}

/// For a run's decoded files, in order, which entries of each survive the run's restarts.
///
/// Returns one bool array per file, for `DecodedFile.keep`; the files are used up.
#[pyfunction(name = "surviving_entries")]
fn survivors<'py>(
    py: Python<'py>,
    files: Vec<PyRefMut<'py, DecodedFile>>,
) -> PyResult<Vec<Bound<'py, PyArray1<bool>>>> {
    let contents = take_all(files)?;
    let keep = py.detach(|| surviving_entries(contents));
    Ok(keep.into_iter().map(|k| k.into_pyarray(py)).collect())
}

fn take_all(files: Vec<PyRefMut<'_, DecodedFile>>) -> PyResult<Vec<FileContents>> {
    files.into_iter().map(|mut f| f.take()).collect()
}

/// The runs of a local log directory, each with its events files in reading order.
#[pyfunction]
fn discover_runs(py: Python<'_>, logdir: PathBuf) -> PyResult<Vec<(String, Vec<PathBuf>)>> {
    let runs = py.detach(|| discover(Path::new(&logdir)))?;
    Ok(runs.into_iter().map(|r| (r.name, r.files)).collect())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<DecodedFile>()?;
    m.add_class::<EventStream>()?;
    m.add_function(wrap_pyfunction!(decode_file, m)?)?;
    m.add_function(wrap_pyfunction!(merge_files, m)?)?;
    m.add_function(wrap_pyfunction!(survivors, m)?)?;
    m.add_function(wrap_pyfunction!(discover_runs, m)?)?;
    Ok(())
}
