//! The one map from the core's errors to the Python exceptions a user expects.
//!
//! Every `thiserror` enum the glue returns is turned into a Python exception here, and
//! only here, by one rule: what names a missing file or directory is a
//! `FileNotFoundError`; what the system refused is the `OSError` Python gives the same
//! failure (`PermissionError`, `IsADirectoryError`...); what was wrong with an argument
//! or a file's content is a `ValueError`; what went wrong inside histoscope, a
//! `RuntimeError`. The message is the error's own `Display`, which names the file, tag
//! or value at fault.

use std::io;

use pyo3::exceptions::{
    PyFileNotFoundError, PyIsADirectoryError, PyNotADirectoryError, PyOSError, PyPermissionError,
    PyRuntimeError, PyValueError,
};
use pyo3::PyErr;

use crate::bins::binning::batch::BatchError;
use crate::bins::binning::BinningError;
use crate::bins::card::CardError;
use crate::bins::edges::EdgesError;
use crate::diagnose::DiagnoseError;
use crate::logdir::discover::LogdirError;
use crate::logdir::plan::PlanError;
use crate::logdir::run_loader::BucketsError;
use crate::read::event_stream::StreamError;
use crate::read::metric_layout::LayoutError;
use crate::read::scalars::ScalarsError;
use crate::spectral::SpectrumError;
use crate::write::binned::BinnedError;
use crate::write::event_writer::WriteError;

/// An I/O failure as Python names it: by what the system said, with `message`.
fn io_error(source: &io::Error, message: String) -> PyErr {
    match source.kind() {
        io::ErrorKind::NotFound => PyFileNotFoundError::new_err(message),
        io::ErrorKind::PermissionDenied => PyPermissionError::new_err(message),
        io::ErrorKind::IsADirectory => PyIsADirectoryError::new_err(message),
        io::ErrorKind::NotADirectory => PyNotADirectoryError::new_err(message),
        _ => PyOSError::new_err(message),
    }
}

/// Errors whose every variant is a bad argument or a bad value.
macro_rules! value_errors {
    ($($error:ty),* $(,)?) => {$(
        impl From<$error> for PyErr {
            fn from(e: $error) -> PyErr {
                PyValueError::new_err(e.to_string())
            }
        }
    )*};
}

value_errors!(
    BatchError,
    BinningError,
    CardError,
    DiagnoseError,
    EdgesError,
    PlanError,
    SpectrumError,
);

impl From<LogdirError> for PyErr {
    fn from(e: LogdirError) -> PyErr {
        let message = e.to_string();
        match e {
            LogdirError::NotFound(_) | LogdirError::NotADirectory(_) => {
                PyFileNotFoundError::new_err(message)
            }
            LogdirError::Io { source, .. } => io_error(&source, message),
        }
    }
}

impl From<ScalarsError> for PyErr {
    fn from(e: ScalarsError) -> PyErr {
        let message = e.to_string();
        match e {
            ScalarsError::Io { source, .. } => io_error(&source, message),
        }
    }
}

impl From<LayoutError> for PyErr {
    fn from(e: LayoutError) -> PyErr {
        let message = e.to_string();
        match e {
            LayoutError::Io { source, .. } => io_error(&source, message),
        }
    }
}

impl From<WriteError> for PyErr {
    fn from(e: WriteError) -> PyErr {
        let message = e.to_string();
        match e {
            WriteError::EdgeCount { .. } => PyValueError::new_err(message),
            WriteError::Io { source, .. } => io_error(&source, message),
        }
    }
}

impl From<BinnedError> for PyErr {
    fn from(e: BinnedError) -> PyErr {
        match e {
            BinnedError::TagCount { .. } => PyValueError::new_err(e.to_string()),
            BinnedError::Write(e) => e.into(),
        }
    }
}

impl From<BucketsError> for PyErr {
    fn from(e: BucketsError) -> PyErr {
        match e {
            BucketsError::Vanished { .. } => PyFileNotFoundError::new_err(e.to_string()),
            _ => PyValueError::new_err(e.to_string()),
        }
    }
}

impl From<StreamError> for PyErr {
    fn from(e: StreamError) -> PyErr {
        let message = e.to_string();
        match e {
            StreamError::Spawn { source, .. } => io_error(&source, message),
            StreamError::Finished(_) => PyValueError::new_err(message),
            StreamError::DecoderFailed(_) => PyRuntimeError::new_err(message),
        }
    }
}
