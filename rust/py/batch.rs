//! Bindings for reading in bulk: several log directories, runs from any source, a run one file at a time.

use std::collections::HashSet;
use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::fsspec::{FsspecLogdir, PyFile};
use super::records::{MergedRecord, RunFilesRecord};
use crate::logdir::discover::{qualified_runs, RunFiles};
use crate::logdir::load::LogdirSource;
use crate::logdir::merge::{merge_run, merge_share};
use crate::logdir::plan::{RunPlan as CorePlan, RunPlanner as CorePlanner};
use crate::logdir::storage::Dir;
use crate::read::event_file::{read_event_file, FileContents};
use crate::read::event_stream::EventStream as CoreStream;
use crate::read::file_pieces::FilePieces as CorePieces;
use crate::read::tf_record::RecordReader;

/// The `logdir` argument: one log directory, or several as `(name, dir)` pairs whose
/// runs are named `name/run`; each a local path or an `FsspecLogdir`.
#[derive(FromPyObject)]
pub enum Logdirs {
    One(DirArg),
    Several(Vec<(String, DirArg)>),
}

/// One log directory as Python names it: behind fsspec, or a local path.
#[derive(FromPyObject)]
pub enum DirArg {
    Fsspec(Py<FsspecLogdir>),
    Path(PathBuf),
}

impl From<DirArg> for Dir {
    fn from(dir: DirArg) -> Self {
        match dir {
            DirArg::Fsspec(logdir) => logdir.get().dir(),
            DirArg::Path(path) => Dir::local(path),
        }
    }
}

impl From<Logdirs> for LogdirSource {
    fn from(logdirs: Logdirs) -> Self {
        match logdirs {
            Logdirs::One(dir) => LogdirSource::One(dir.into()),
            Logdirs::Several(logdirs) => LogdirSource::Several(
                logdirs
                    .into_iter()
                    .map(|(name, dir)| (name, dir.into()))
                    .collect(),
            ),
        }
    }
}

pub(super) fn tag_set(tags: Option<Vec<String>>) -> Option<HashSet<String>> {
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

    fn take(&mut self) -> PyResult<FileContents> {
        self.contents
            .take()
            .ok_or_else(|| PyValueError::new_err("this decoded file was already merged"))
    }
}

#[pymethods]
impl DecodedFile {
    /// The number of entries (histogram values and restarts) read from the file.
    fn __len__(&self) -> PyResult<usize> {
        self.contents
            .as_ref()
            .map(|c| c.entries.len())
            .ok_or_else(|| PyValueError::new_err("this decoded file was already merged"))
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

/// An events file read a piece of about `budget` bytes of records at a time:
/// iterating gives each piece as a `DecodedFile`, the file's report with the last.
/// `FilePieces(path, ...)` reads a local file; `FilePieces.fed(...)` reads a Python
/// binary file object (an fsspec file), calling its `read`.
#[pyclass(module = "histoscope._core")]
pub struct FilePieces(Pieces);

enum Pieces {
    Local(CorePieces),
    Fed(CorePieces<PyFile>),
}

#[pymethods]
impl FilePieces {
    #[new]
    #[pyo3(signature = (path, budget, tags=None))]
    fn new(py: Python<'_>, path: PathBuf, budget: u64, tags: Option<Vec<String>>) -> Self {
        let tags = tag_set(tags);
        FilePieces(Pieces::Local(
            py.detach(|| CorePieces::open(&path, tags, budget)),
        ))
    }

    /// The pieces of the file `source` reads (a binary file object), reported as
    /// `path`; `size`, when known, is its length.
    #[staticmethod]
    #[pyo3(signature = (path, size, source, budget, tags=None))]
    fn fed(
        path: PathBuf,
        size: Option<u64>,
        source: Py<PyAny>,
        budget: u64,
        tags: Option<Vec<String>>,
    ) -> Self {
        let source = PyFile {
            file: source,
            most: usize::MAX,
        };
        let reader = RecordReader::new(source, size);
        let pieces = CorePieces::from_reader(&path, reader, tag_set(tags), budget);
        FilePieces(Pieces::Fed(pieces))
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> Option<DecodedFile> {
        // A fed file's reads take the GIL back for each call to `read`.
        let piece = match &mut self.0 {
            Pieces::Local(pieces) => py.detach(|| pieces.next()),
            Pieces::Fed(pieces) => py.detach(|| pieces.next()),
        };
        piece.map(DecodedFile::new)
    }

    /// Whether the file's last piece was handed out.
    #[getter]
    fn finished(&self) -> bool {
        match &self.0 {
            Pieces::Local(pieces) => pieces.finished(),
            Pieces::Fed(pieces) => pieces.finished(),
        }
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
#[pyfunction]
fn merge_files<'py>(
    py: Python<'py>,
    run: &str,
    files: Vec<PyRefMut<'py, DecodedFile>>,
) -> PyResult<MergedRecord> {
    let contents = take_all(files)?;
    MergedRecord::new(py, py.detach(|| merge_run(run, contents)))
}

fn take_all(files: Vec<PyRefMut<'_, DecodedFile>>) -> PyResult<Vec<FileContents>> {
    files.into_iter().map(|mut f| f.take()).collect()
}

/// Gathers the skeletons of a run's files one at a time (their buckets freed at
/// once), for the plan of which entries survive the run's restarts.
#[pyclass(module = "histoscope._core")]
pub struct RunPlanner(CorePlanner);

#[pymethods]
impl RunPlanner {
    #[new]
    fn new() -> Self {
        RunPlanner(CorePlanner::default())
    }

    /// Adds the run's next file, or the next piece of its files (`continues` when it
    /// goes on the file of the piece before); the file is used up.
    #[pyo3(signature = (file, continues=false))]
    fn add(&mut self, mut file: PyRefMut<'_, DecodedFile>, continues: bool) -> PyResult<()> {
        self.0.add_piece(&file.take()?, continues);
        Ok(())
    }

    /// The plan of the files added, in the order added.
    fn finish(&mut self, py: Python<'_>) -> RunPlan {
        RunPlan(py.detach(|| self.0.finish()))
    }
}

/// `RunPlan`'s constructor arguments: the keep flags of each file, and the superseded count.
type PlanArgs = (Vec<Vec<bool>>, usize);

/// Which entries of each file of a run survive its restarts: each file can then
/// be read alone for exactly its share of the run. Picklable, for Dask.
#[pyclass(frozen, module = "histoscope._core")]
pub struct RunPlan(CorePlan);

#[pymethods]
impl RunPlan {
    #[new]
    fn new(keep: Vec<Vec<bool>>, superseded: usize) -> Self {
        RunPlan(CorePlan { keep, superseded })
    }

    /// How many files the plan covers.
    fn __len__(&self) -> usize {
        self.0.keep.len()
    }

    /// How many histogram values the run's restarts dropped or logged again.
    #[getter]
    fn superseded(&self) -> usize {
        self.0.superseded
    }

    /// Whether each entry of file `index` survives.
    fn keep(&self, index: usize) -> PyResult<Vec<bool>> {
        Ok(self.0.share(index)?.keep.to_vec())
    }

    /// File `index` of `run`, decoded again, reduced to its share of the run; the file is used up.
    fn share(
        &self,
        py: Python<'_>,
        run: &str,
        index: usize,
        mut file: PyRefMut<'_, DecodedFile>,
    ) -> PyResult<MergedRecord> {
        let share = self.0.share(index)?;
        let contents = file.take()?;
        MergedRecord::new(py, py.detach(|| merge_share(run, &share, contents)))
    }

    fn __reduce__(slf: &Bound<'_, Self>) -> PyResult<(Py<PyAny>, PlanArgs)> {
        let plan = &slf.get().0;
        Ok((
            slf.get_type().into_any().unbind(),
            (plan.keep.clone(), plan.superseded),
        ))
    }
}

/// The runs of a log directory (or of one events file), local or an `FsspecLogdir`,
/// each with its events files in reading order and their sizes as listed; with
/// `prefix`, named as runs of several log directories.
#[pyfunction]
#[pyo3(signature = (logdir, prefix=None))]
fn discover_runs(
    py: Python<'_>,
    logdir: DirArg,
    prefix: Option<String>,
) -> PyResult<Vec<RunFilesRecord>> {
    let dir = Dir::from(logdir);
    let runs = py.detach(|| dir.discover())?;
    Ok(records(qualified_runs(runs, prefix.as_deref())))
}

fn records(runs: Vec<RunFiles>) -> Vec<RunFilesRecord> {
    runs.into_iter().map(RunFilesRecord::from).collect()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<DecodedFile>()?;
    m.add_class::<EventStream>()?;
    m.add_class::<FilePieces>()?;
    m.add_function(wrap_pyfunction!(decode_file, m)?)?;
    m.add_class::<RunPlanner>()?;
    m.add_class::<RunPlan>()?;
    m.add_function(wrap_pyfunction!(merge_files, m)?)?;
    m.add_function(wrap_pyfunction!(discover_runs, m)?)?;
    Ok(())
}
