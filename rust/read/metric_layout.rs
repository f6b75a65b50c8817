//! Card layout a run declares with `Run.define_metric`: the section and visibility of matching keys.
//!
//! A declaration is an `Event` (written by `event_writer::layout_event`) whose
//! only summary value carries plugin `histoscope_layout` and an encoded
//! [`MetricLayout`] as its content, with no payload, so TensorBoard and other
//! readers pass over it.

use std::io::{self, BufReader};
use std::path::{Path, PathBuf};

use prost::Message;
use thiserror::Error;

use crate::read::proto::SummaryValue;
use crate::read::proto_view::{EventView, ValueView};
use crate::read::tf_record::{open_at, ReadRecordError, RecordReader};
use crate::read::wire::fields;

/// The plugin name that marks a layout declaration.
pub const PLUGIN: &str = "histoscope_layout";
/// The tag a declaration is written under.
pub const TAG: &str = "_histoscope/define_metric";

/// What `define_metric` declares for the keys matching `pattern` (a glob: `*`, `?`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct MetricLayout {
    #[prost(string, tag = "1")]
    pub pattern: String,
    #[prost(string, optional, tag = "2")]
    pub section: Option<String>,
    #[prost(bool, tag = "3")]
    pub hidden: bool,
}

/// Why the declarations of a file could not be read.
#[derive(Debug, Error)]
pub enum LayoutError {
    #[error("cannot read {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

/// The declarations in `path` from byte `start`, in file order, and the offset
/// after the last whole record, from which a later call continues.
///
/// Damaged records are passed over as the histogram reader passes over them; a
/// record cut off at the end (a writer still writing) ends the read before it.
pub fn read_layout(path: &Path, start: u64) -> Result<(u64, Vec<MetricLayout>), LayoutError> {
    let io_err = |source| LayoutError::Io {
        path: path.to_path_buf(),
        source,
    };
    let (file, left) = open_at(path, start).map_err(io_err)?;
    let mut reader = RecordReader::new(BufReader::new(file), Some(left));
    let mut found = Vec::new();
    let mut end = 0;
    loop {
        match reader.next_record() {
            Ok(Some(record)) => {
                found.extend(declarations(record.data));
                end = reader.offset();
            }
            Ok(None) => break,
            Err(ReadRecordError::BadDataCrc { .. }) => end = reader.offset(),
            Err(ReadRecordError::BadLengthCrc { .. }) => match reader.resync() {
                Ok(_) => end = reader.offset(),
                Err(_) => break,
            },
            Err(ReadRecordError::Truncated { .. }) => break,
            Err(ReadRecordError::Io { source, .. }) => return Err(io_err(source)),
        }
    }
    Ok((start + end, found))
}

/// A declaration from its value's plugin content; `None` when malformed.
pub fn decode(content: &[u8]) -> Option<MetricLayout> {
    MetricLayout::decode(content).ok()
}

/// The layout declarations in one encoded `Event`; malformed ones are skipped.
fn declarations(event: &[u8]) -> Vec<MetricLayout> {
    let Some(summary) = EventView::decode(event).ok().and_then(|e| e.summary) else {
        return Vec::new();
    };
    fields(summary)
        .filter_map(|field| match field {
            Ok((1, v)) => v.bytes(1).ok(),
            _ => None,
        })
        .filter(|value| ValueView::decode(value).is_ok_and(|v| v.plugin == Some(PLUGIN)))
        .filter_map(|value| SummaryValue::decode(value).ok()?.metadata?.plugin_data)
        .filter_map(|data| MetricLayout::decode(data.content).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histograms::stats::Stats;
    use crate::logdir::load::{LogdirSource, Selection};
    use crate::read::event_file::read_event_file;
    use crate::write::event_writer::{histogram_event, layout_event, EventWriter, HistogramRecord};
    use std::fs;

    fn layout(pattern: &str, section: Option<&str>, hidden: bool) -> MetricLayout {
        MetricLayout {
            pattern: pattern.into(),
            section: section.map(str::to_owned),
            hidden,
        }
    }

    #[test]
    fn declarations_read_back_in_order_and_from_an_offset() {
        let dir = std::env::temp_dir().join(format!("histoscope-layout-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let mut writer = EventWriter::create(&dir, 1.0, "host").unwrap();
        let first = layout("grads/*", Some("Gradients"), false);
        writer.write(&layout_event(&first, 2.0)).unwrap();
        let h = HistogramRecord {
            tag: "grads/fc",
            step: 0,
            wall_time: 2.0,
            edges: &[0.0, 1.0],
            counts: &[3.0],
            stats: Stats::from_array([3.0, 0.0, 1.0, 0.5, 0.0, 0.0, 0.0, 0.0]),
        };
        writer.write(&histogram_event(&h).unwrap()).unwrap();
        writer.flush().unwrap();
        let (middle, found) = read_layout(writer.path(), 0).unwrap();
        assert_eq!(found, vec![first.clone()]);
        let second = layout("debug/*", None, true);
        writer.write(&layout_event(&second, 3.0)).unwrap();
        writer.flush().unwrap();
        let (end, found) = read_layout(writer.path(), middle).unwrap();
        assert_eq!(found, vec![second]);
        assert_eq!(end, fs::metadata(writer.path()).unwrap().len());
        // the histogram reader sees the histogram and nothing of the declarations
        let contents = read_event_file(writer.path(), None);
        assert_eq!(contents.entries.len(), 1);
        assert!(!contents.report.has_problems());
        // a run read whole holds the declarations in file order, read in the same pass
        let loaded = LogdirSource::local(&dir)
            .load(&Selection::default())
            .unwrap();
        let (_, every) = read_layout(writer.path(), 0).unwrap();
        assert_eq!(every.len(), 2);
        assert_eq!(loaded.evidence["."].layout, every);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_record_cut_off_at_the_end_is_left_for_the_next_read() {
        let dir =
            std::env::temp_dir().join(format!("histoscope-layout-cut-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let mut writer = EventWriter::create(&dir, 1.0, "host").unwrap();
        writer.flush().unwrap();
        let path = writer.path().to_path_buf();
        let whole = fs::metadata(&path).unwrap().len();
        let framed =
            crate::read::tf_record::frame(&layout_event(&layout("a*", Some("A"), false), 1.0));
        fs::write(
            &path,
            [
                fs::read(&path).unwrap(),
                framed[..framed.len() - 3].to_vec(),
            ]
            .concat(),
        )
        .unwrap();
        let (end, found) = read_layout(&path, 0).unwrap();
        assert_eq!((end, found.len()), (whole, 0));
        assert!(matches!(
            read_layout(&dir.join("missing"), 0),
            Err(LayoutError::Io { .. })
        ));
        fs::remove_dir_all(&dir).unwrap();
    }
}
