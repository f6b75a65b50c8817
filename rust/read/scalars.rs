//! The scalars of one events file under a tag prefix, read on from a byte offset: what the
//! viewer's spectral trends (`spectrum/<name>/alpha`, ...) follow as the file grows.
//!
//! Histograms are passed over without decoding their buckets (no tag is wanted), and
//! damage is skipped as the decoder skips it; the offset returned is where the next read
//! starts: after the last whole record, before a record still being written.

use std::collections::{HashMap, HashSet};
use std::io::{self, BufReader};
use std::path::{Path, PathBuf};

use thiserror::Error;

use super::event_file::{decode_records_until, PointView, Sink};
use super::report::FileReport;
use super::shared_tags::StepBurst;
use super::tf_record::{open_at, RecordReader};

/// One scalar value as written.
#[derive(Debug, Clone, PartialEq)]
pub struct ScalarPoint {
    pub tag: String,
    pub step: i64,
    pub value: f64,
}

/// Why a file's scalars could not be read.
#[derive(Debug, Error)]
pub enum ScalarsError {
    #[error("cannot read {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

/// Keeps the scalars whose tags start with `prefix`.
struct Prefixed<'a> {
    prefix: &'a str,
    found: Vec<ScalarPoint>,
}

impl Sink for Prefixed<'_> {
    fn histogram(&mut self, _tag: &str, _point: PointView<'_>, _confirmed: bool) {}

    fn start(&mut self, _step: i64) {}

    fn scalar(&mut self, tag: &str, step: i64, value: f64) {
        if tag.starts_with(self.prefix) {
            self.found.push(ScalarPoint {
                tag: tag.to_owned(),
                step,
                value,
            });
        }
    }
}

/// The scalars of `path` from byte `start` whose tags start with `prefix`, in record
/// order, and the offset to read on from.
pub fn read_scalars(
    path: &Path,
    start: u64,
    prefix: &str,
) -> Result<(u64, Vec<ScalarPoint>), ScalarsError> {
    let io_err = |source| ScalarsError::Io {
        path: path.to_path_buf(),
        source,
    };
    let (file, left) = open_at(path, start).map_err(io_err)?;
    let mut reader = RecordReader::new(BufReader::new(file), Some(left));
    let mut sink = Prefixed {
        prefix,
        found: Vec::new(),
    };
    let nothing = HashSet::new();
    let mut report = FileReport::default();
    decode_records_until(
        &mut reader,
        Some(&nothing),
        &mut sink,
        &mut HashMap::new(),
        &mut StepBurst::default(),
        &mut report,
        u64::MAX,
    );
    let end = report.incomplete_tail.unwrap_or(reader.offset());
    Ok((start + end, sink.found))
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use crate::write::event_writer::{scalar_event, EventWriter};

    #[test]
    fn scalars_under_the_prefix_are_read_on_from_where_the_last_read_ended() {
        let dir = std::env::temp_dir().join(format!("histoscope-scalars-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let mut writer = EventWriter::create(&dir, 1.0, "host").unwrap();
        writer
            .write(&scalar_event("spectrum/fc/alpha", 0, 1.0, 3.5))
            .unwrap();
        writer.write(&scalar_event("loss", 0, 1.0, 0.5)).unwrap();
        writer.flush().unwrap();
        let (end, found) = read_scalars(writer.path(), 0, "spectrum/").unwrap();
        assert_eq!(
            found,
            vec![ScalarPoint {
                tag: "spectrum/fc/alpha".into(),
                step: 0,
                value: 3.5
            }]
        );
        assert_eq!(end, fs::metadata(writer.path()).unwrap().len());
        writer
            .write(&scalar_event("spectrum/fc/alpha", 10, 2.0, 4.0))
            .unwrap();
        writer.flush().unwrap();
        let (_, more) = read_scalars(writer.path(), end, "spectrum/").unwrap();
        assert_eq!(more.len(), 1);
        assert_eq!((more[0].step, more[0].value), (10, 4.0));
        // A record cut off at the end is left for the next read.
        let whole = fs::read(writer.path()).unwrap();
        let cut = dir.join("cut.tfevents");
        fs::write(&cut, &whole[..whole.len() - 3]).unwrap();
        let (stop, found) = read_scalars(&cut, 0, "spectrum/").unwrap();
        assert_eq!((stop, found.len()), (end, 1));
        assert!(read_scalars(&dir.join("missing"), 0, "").is_err());
        fs::remove_dir_all(&dir).unwrap();
    }
}
