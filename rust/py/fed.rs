//! Runs whose files are fed in chunks from Python (object storage): each file decoded as
//! it arrives, a run's only file straight into its step profiles or series, then the
//! run assembled and, when asked, diagnosed, as `RunStream` does with local files.

use std::sync::Mutex;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::batch::tag_set;
use super::stream::{diagnosed, reading, RunRecord};
use crate::diagnose::Options;
use crate::logdir::run_parts::{self, read_part, Fed, RunPart};
use crate::logdir::stream::StreamedRun;
use crate::read::event_stream::EventStream;

/// One events file of the run `run`, fed in chunks, in order, and decoded on a thread
/// of its own as they come. `alone`: it is the run's only file, decoded straight into
/// the run's step profiles (or its series, with `series`) without holding its buckets.
#[pyclass(module = "histoscope._core")]
pub struct RunPartStream {
    stream: EventStream<RunPart>,
}

#[pymethods]
impl RunPartStream {
    #[new]
    #[pyo3(signature = (run, path, size=None, *, alone=true, tags=None, series=false))]
    fn new(
        run: String,
        path: &str,
        size: Option<u64>,
        alone: bool,
        tags: Option<Vec<String>>,
        series: bool,
    ) -> PyResult<Self> {
        let tags = tag_set(tags);
        let reading = reading(series);
        let stream = EventStream::decoding(path, size, move |reader, report| {
            read_part(&run, Fed { reader, report }, tags.as_ref(), reading, alone)
        })?;
        Ok(RunPartStream { stream })
    }

    /// Hands the next chunk to the decoder; waits, without the GIL, while it is behind.
    fn feed(&mut self, py: Python<'_>, chunk: &[u8]) -> PyResult<()> {
        let chunk = chunk.to_vec();
        Ok(py.detach(|| self.stream.feed(chunk))?)
    }

    /// Ends the file and returns its decoded part, for `assemble_run`.
    fn finish(&mut self, py: Python<'_>) -> PyResult<DecodedPart> {
        let part = py.detach(|| self.stream.finish())?;
        Ok(DecodedPart(Mutex::new(Some(part))))
    }
}

/// One decoded events file of a run, waiting for `assemble_run`.
#[pyclass(module = "histoscope._core")]
pub struct DecodedPart(Mutex<Option<RunPart>>);

/// The run `run` from its files' decoded parts, in file order: a `RunRecord` with its
/// reports, its series (with `series`, as its parts were decoded) and, with `diagnose`,
/// its findings (`kinds` and `roles` as for `diagnose_series`), its scalars weighed.
/// `bytes` is what its files weighed when listed.
#[pyfunction]
#[pyo3(signature = (run, parts, *, bytes=0, diagnose=false, kinds=None, roles=None, series=false))]
#[allow(clippy::too_many_arguments)]
fn assemble_run(
    py: Python<'_>,
    run: String,
    parts: Vec<PyRef<'_, DecodedPart>>,
    bytes: u64,
    diagnose: bool,
    kinds: Option<Vec<String>>,
    roles: Option<Vec<(String, String)>>,
    series: bool,
) -> PyResult<RunRecord> {
    let options = Options::parse(kinds, roles.unwrap_or_default())?;
    let files = parts.len();
    let taken = parts
        .iter()
        .map(|p| p.0.lock().ok().and_then(|mut held| held.take()))
        .collect::<Option<Vec<RunPart>>>()
        .ok_or_else(|| PyValueError::new_err("a decoded part was already assembled into a run"))?;
    let options = diagnose.then_some(options);
    let ready = py.detach(|| {
        let run = run_parts::assemble_run(&run, taken, reading(series));
        let streamed = StreamedRun { run, files, bytes };
        diagnosed(vec![streamed], options.as_ref()).pop()
    });
    let ready = ready.expect("one run in, one run out");
    RunRecord::new(py, ready)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<RunPartStream>()?;
    m.add_class::<DecodedPart>()?;
    m.add_function(wrap_pyfunction!(assemble_run, m)?)?;
    Ok(())
}
