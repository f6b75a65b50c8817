//! An fsspec filesystem (s3://, gs://, …) as the core's `ObjectStore`: its listing,
//! its files read in chunks, its URLs; the GIL taken only around each call.

use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use pyo3::exceptions::PyFileNotFoundError;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyDict, PyDictMethods};

use crate::logdir::storage::{Dir, ObjectStore, Storage};
use crate::logdir::storage::{STORE_CHUNK_BYTES as CHUNK_BYTES, STORE_PARALLEL_READS};

/// Set as the interpreter exits (`stop_fetching`, registered with `atexit` by
/// `histoscope.read.storage`): from then on no thread of the core takes the GIL to
/// fetch. A fetch thread taking it once Python finalizes is ended by CPython (up to
/// 3.13) with an unwind through the core's frames, which crashes the process.
static EXITING: AtomicBool = AtomicBool::new(false);

/// Runs `f` with the GIL, unless the interpreter is exiting.
fn with_python<R>(f: impl for<'py> FnOnce(Python<'py>) -> io::Result<R>) -> io::Result<R> {
    if EXITING.load(Ordering::Acquire) {
        return Err(io::Error::other("the Python interpreter is exiting"));
    }
    Python::try_attach(f)
        .unwrap_or_else(|| Err(io::Error::other("the Python interpreter is exiting")))
}

/// Stops every fetch through fsspec: reads in flight end with an error at their next chunk.
#[pyfunction]
fn stop_fetching() {
    EXITING.store(true, Ordering::Release);
}

/// A log directory behind an fsspec filesystem: `fs` and the `root` path in it, as
/// `fsspec.core.url_to_fs` gives them, its files fetched `chunk_bytes` at a time. Read
/// by every reading function that takes a log directory, in place of a path.
#[pyclass(frozen, module = "histoscope._core")]
pub struct FsspecLogdir {
    store: Arc<FsspecStore>,
    root: PathBuf,
}

#[pymethods]
impl FsspecLogdir {
    #[new]
    #[pyo3(signature = (fs, root, chunk_bytes = CHUNK_BYTES))]
    fn new(fs: Py<PyAny>, root: PathBuf, chunk_bytes: usize) -> PyResult<Self> {
        if chunk_bytes == 0 {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "chunk_bytes must be at least 1",
            ));
        }
        Ok(FsspecLogdir {
            store: Arc::new(FsspecStore {
                fs,
                chunk: chunk_bytes,
            }),
            root,
        })
    }

    /// The root path in the filesystem.
    #[getter]
    fn root(&self) -> PathBuf {
        self.root.clone()
    }
}

impl FsspecLogdir {
    /// The core's log directory: this root in this store.
    pub fn dir(&self) -> Dir {
        Dir {
            root: self.root.clone(),
            storage: Storage::Store(self.store.clone()),
        }
    }
}

/// The fsspec filesystem the core reads through.
#[derive(Debug)]
struct FsspecStore {
    fs: Py<PyAny>,
    /// The most one read asks for, and fsspec's block size.
    chunk: usize,
}

/// A path as fsspec takes it: a string, never a `pathlib.Path` (`unstrip_protocol` refuses one).
fn text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

fn io_error(e: PyErr) -> io::Error {
    io::Error::other(e.to_string())
}

impl ObjectStore for FsspecStore {
    fn list(&self, root: &Path) -> io::Result<Vec<(PathBuf, Option<u64>)>> {
        with_python(|py| {
            let kwargs = PyDict::new(py);
            kwargs.set_item("detail", true).map_err(io_error)?;
            let found = self
                .fs
                .call_method(py, "find", (text(root),), Some(&kwargs))
                .map_err(io_error)?;
            let found = found
                .bind(py)
                .cast::<PyDict>()
                .map_err(|e| io_error(e.into()))?;
            let mut files = Vec::new();
            for (path, info) in found.iter() {
                let is_file = info
                    .get_item("type")
                    .and_then(|t| t.extract::<String>())
                    .is_ok_and(|t| t == "file");
                if is_file {
                    let size = info.get_item("size").ok().and_then(|s| s.extract().ok());
                    files.push((path.extract::<PathBuf>().map_err(io_error)?, size));
                }
            }
            Ok(files)
        })
    }

    fn open(&self, path: &Path) -> io::Result<Box<dyn Read + Send>> {
        let file = with_python(|py| {
            let kwargs = PyDict::new(py);
            kwargs
                .set_item("block_size", self.chunk)
                .map_err(io_error)?;
            self.fs
                .call_method(py, "open", (text(path), "rb"), Some(&kwargs))
                .map_err(|e| match e.is_instance_of::<PyFileNotFoundError>(py) {
                    true => io::Error::new(io::ErrorKind::NotFound, e.to_string()),
                    false => io_error(e),
                })
        })?;
        Ok(Box::new(PyFile {
            file,
            most: self.chunk,
        }))
    }

    fn url(&self, path: &Path) -> String {
        with_python(|py| {
            self.fs
                .call_method1(py, "unstrip_protocol", (text(path),))
                .and_then(|url| url.extract::<String>(py))
                .map_err(io_error)
        })
        .unwrap_or_else(|_| path.display().to_string())
    }
}

/// A Python binary file object read as a Rust byte source, at most `most` bytes a call.
pub struct PyFile {
    pub file: Py<PyAny>,
    pub most: usize,
}

impl Read for PyFile {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let asked = out.len().min(self.most);
        with_python(|py| {
            let read = self
                .file
                .call_method1(py, "read", (asked,))
                .map_err(io_error)?;
            let chunk = read
                .extract::<PyBackedBytes>(py)
                .map_err(|e| io_error(e.into()))?;
            let n = chunk.len().min(asked);
            out[..n].copy_from_slice(&chunk[..n]);
            Ok(n)
        })
    }
}

impl Drop for PyFile {
    fn drop(&mut self) {
        // Closed at once: an fsspec file left open holds its buffer and connection.
        let _ = with_python(|py| {
            let _ = self.file.call_method0(py, "close");
            Ok(())
        });
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<FsspecLogdir>()?;
    m.add_function(wrap_pyfunction!(stop_fetching, m)?)?;
    m.add("FETCH_CHUNK_BYTES", CHUNK_BYTES)?;
    m.add("FETCH_PARALLEL_READS", STORE_PARALLEL_READS)?;
    Ok(())
}
