//! Writing TensorBoard events files: histograms and scalars as TFRecord-framed `Event`s.
//!
//! Histograms are legacy `HistogramProto`s, which every TensorBoard reads, with
//! histoscope's extra statistics in a field other readers skip (docs/format.md).

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use prost::Message;
use thiserror::Error;

use crate::histograms::stats::Stats;
use crate::read::metric_layout::{self, MetricLayout};
use crate::read::optimizer_note::{self, OptimizerNote};
use crate::read::proto::{
    Event, HistogramProto, HistoscopeStats, PluginData, Summary, SummaryMetadata, SummaryValue,
    HISTOSCOPE_FIELD,
};
use crate::read::tf_record::frame;

/// Why a record could not be written.
#[derive(Debug, Error)]
pub enum WriteError {
    #[error("histogram {tag:?} has {edges} edges for {counts} counts; want counts + 1 edges")]
    EdgeCount {
        tag: String,
        edges: usize,
        counts: usize,
    },
    #[error("cannot write {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

/// One histogram to write: `counts[i]` values in `[edges[i], edges[i + 1])`.
#[derive(Debug, Clone, Copy)]
pub struct HistogramRecord<'a> {
    pub tag: &'a str,
    pub step: i64,
    pub wall_time: f64,
    pub edges: &'a [f64],
    pub counts: &'a [f64],
    pub stats: Stats,
}

/// The encoded `Event` for a histogram.
///
/// TensorBoard turns a `HistogramProto` into buckets with `min` as the first
/// left edge and `max` as the last right edge, after dropping empty outer
/// buckets; setting them to the outer edges of the non-empty bins makes it
/// show exactly our bins. The data's own min and max live in our extension.
pub fn histogram_event(h: &HistogramRecord<'_>) -> Result<Vec<u8>, WriteError> {
    if h.edges.len() != h.counts.len() + 1 {
        return Err(WriteError::EdgeCount {
            tag: h.tag.to_owned(),
            edges: h.edges.len(),
            counts: h.counts.len(),
        });
    }
    let first = h.counts.iter().position(|&c| c != 0.0);
    let last = h.counts.iter().rposition(|&c| c != 0.0);
    let (min, max) = match (first, last) {
        (Some(first), Some(last)) => (h.edges[first], h.edges[last + 1]),
        _ => (0.0, 0.0),
    };
    let s = h.stats;
    let finite = s.count > 0.0;
    let proto = HistogramProto {
        min,
        max,
        num: s.count,
        sum: if finite { s.mean * s.count } else { 0.0 },
        sum_squares: if finite {
            (s.std * s.std + s.mean * s.mean) * s.count
        } else {
            0.0
        },
        bucket_limit: h.edges[1..].to_vec(),
        bucket: h.counts.to_vec(),
        histoscope: None, // appended by hand: see `append_histoscope`
    };
    let mut histo = proto.encode_to_vec();
    append_histoscope(&s.to_histoscope(h.edges[0]), &mut histo);
    let value = SummaryValue {
        tag: h.tag.to_owned(),
        histo: Some(Bytes::from(histo)),
        ..Default::default()
    };
    Ok(summary_event(h.step, h.wall_time, value))
}

/// Appends histoscope's extension to an encoded `HistogramProto`, as its field
/// [`HISTOSCOPE_FIELD`] (a field appended to a message is one of its fields).
///
/// prost leaves out a field equal to its default, and -0.0 equals 0.0: the
/// minimum of values that are all -0.0 would read back as 0.0. Every field but
/// +0.0 is written here, -0.0 with its sign; otherwise the bytes are prost's.
fn append_histoscope(stats: &HistoscopeStats, out: &mut Vec<u8>) {
    use prost::encoding::{double, encode_key, encode_varint, WireType};

    let mut body = Vec::with_capacity(9 * 9);
    for (tag, value) in stats.tagged() {
        if value.to_bits() != 0 {
            double::encode(tag, &value, &mut body);
        }
    }
    encode_key(HISTOSCOPE_FIELD, WireType::LengthDelimited, out);
    encode_varint(body.len() as u64, out);
    out.extend_from_slice(&body);
}

/// The encoded `Event` for a scalar, as `simple_value` (TensorBoard's scalars dashboard).
pub fn scalar_event(tag: &str, step: i64, wall_time: f64, value: f32) -> Vec<u8> {
    let value = SummaryValue {
        tag: tag.to_owned(),
        simple_value: Some(value),
        ..Default::default()
    };
    summary_event(step, wall_time, value)
}

/// The encoded `Event` declaring a layout (`Run.define_metric`); see [`crate::read::metric_layout`].
pub fn layout_event(declared: &MetricLayout, wall_time: f64) -> Vec<u8> {
    plugin_event(
        metric_layout::TAG,
        metric_layout::PLUGIN,
        declared,
        wall_time,
    )
}

/// The encoded `Event` noting the optimizer a run trains with (`watch`); see
/// [`crate::read::optimizer_note`].
pub fn optimizer_event(note: &OptimizerNote, wall_time: f64) -> Vec<u8> {
    plugin_event(optimizer_note::TAG, optimizer_note::PLUGIN, note, wall_time)
}

/// An `Event` whose one value carries only `content`, under `plugin`: other readers pass over it.
fn plugin_event(tag: &str, plugin: &str, content: &impl Message, wall_time: f64) -> Vec<u8> {
    let value = SummaryValue {
        tag: tag.to_owned(),
        metadata: Some(SummaryMetadata {
            plugin_data: Some(PluginData {
                plugin_name: plugin.to_owned(),
                content: Bytes::from(content.encode_to_vec()),
            }),
        }),
        ..Default::default()
    };
    Event {
        wall_time,
        summary: Some(Summary { value: vec![value] }),
        ..Default::default()
    }
    .encode_to_vec()
}

fn summary_event(step: i64, wall_time: f64, value: SummaryValue) -> Vec<u8> {
    let summary = Summary { value: vec![value] };
    Event {
        wall_time,
        step,
        summary: Some(summary),
        ..Default::default()
    }
    .encode_to_vec()
}

/// An events file being written; each record goes out whole, so a reader
/// (or a crash) sees only complete records plus at most one cut-off tail.
pub struct EventWriter {
    path: PathBuf,
    out: BufWriter<File>,
}

impl EventWriter {
    /// Creates a new events file in `dir` (made if missing) named so that it
    /// sorts after earlier files of the run, and writes its `file_version`.
    pub fn create(dir: &Path, wall_time: f64, host: &str) -> Result<Self, WriteError> {
        let io_err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| WriteError::Io { path, source }
        };
        fs::create_dir_all(dir).map_err(io_err(dir))?;
        let pid = std::process::id();
        let (file, path) = (0..)
            .map(|n| {
                dir.join(format!(
                    "events.out.tfevents.{:010}.{host}.{pid}.{n}",
                    wall_time as u64
                ))
            })
            .find_map(
                |path| match OpenOptions::new().write(true).create_new(true).open(&path) {
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => None,
                    opened => Some(opened.map(|f| (f, path.clone())).map_err(io_err(&path))),
                },
            )
            .expect("an unused file name exists")?;
        let mut writer = EventWriter {
            path,
            out: BufWriter::with_capacity(1 << 16, file),
        };
        let version = Event {
            wall_time,
            file_version: Some("brain.Event:2".into()),
            ..Default::default()
        };
        writer.write(&version.encode_to_vec())?;
        writer.flush()?;
        Ok(writer)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Frames and writes one encoded `Event`.
    pub fn write(&mut self, event: &[u8]) -> Result<(), WriteError> {
        let path = &self.path;
        self.out
            .write_all(&frame(event))
            .map_err(|source| WriteError::Io {
                path: path.clone(),
                source,
            })
    }

    /// Pushes buffered records to the operating system.
    pub fn flush(&mut self) -> Result<(), WriteError> {
        let path = &self.path;
        self.out.flush().map_err(|source| WriteError::Io {
            path: path.clone(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::event_file::{read_event_file, Entry};

    fn stats() -> Stats {
        Stats {
            count: 6.0,
            min: 0.5,
            max: 2.5,
            mean: 1.5,
            std: 0.5,
            nonfinite: 1.0,
            below: 0.0,
            above: 0.0,
        }
    }

    const EDGES: [f64; 4] = [0.0, 1.0, 2.0, 3.0];
    const COUNTS: [f64; 3] = [0.0, 4.0, 2.0];

    /// A histogram of `w`: the first bin empty, four values in the second, two in the third.
    fn record(step: i64, wall_time: f64) -> HistogramRecord<'static> {
        HistogramRecord {
            tag: "w",
            step,
            wall_time,
            edges: &EDGES,
            counts: &COUNTS,
            stats: stats(),
        }
    }

    #[test]
    fn histograms_and_scalars_read_back_exactly() {
        let dir = std::env::temp_dir().join(format!("histoscope-writer-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let mut writer = EventWriter::create(&dir, 1_700_000_000.5, "host").unwrap();
        writer
            .write(&histogram_event(&record(7, 12.5)).unwrap())
            .unwrap();
        writer.write(&scalar_event("loss", 7, 12.5, 0.25)).unwrap();
        writer.flush().unwrap();
        let name = writer
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(
            name.starts_with("events.out.tfevents.1700000000.host."),
            "{name}"
        );
        let contents = read_event_file(writer.path(), None);
        assert!(!contents.report.has_problems());
        let Entry::Histogram {
            tag,
            point,
            confirmed,
        } = &contents.entries[0]
        else {
            panic!()
        };
        assert_eq!(
            (tag.as_str(), point.step, point.wall_time, *confirmed),
            ("w", 7, 12.5, true)
        );
        assert_eq!(
            point.buckets,
            vec![0.0, 1.0, 0.0, 1.0, 2.0, 4.0, 2.0, 3.0, 2.0]
        );
        assert_eq!(point.stats, stats());
        assert_eq!(contents.entries.len(), 1);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_extension_is_prosts_encoding_but_for_negative_zero() {
        let mut ours = Vec::new();
        let extension = stats().to_histoscope(-1.0);
        append_histoscope(&extension, &mut ours);
        let theirs = HistogramProto {
            histoscope: Some(extension.clone()),
            ..Default::default()
        };
        assert_eq!(ours, theirs.encode_to_vec());
        let negative = Stats {
            min: -0.0,
            max: -0.0,
            ..stats()
        };
        let mut written = Vec::new();
        append_histoscope(&negative.to_histoscope(-0.5), &mut written);
        let read = HistogramProto::decode(&written[..])
            .unwrap()
            .histoscope
            .unwrap();
        assert!(read.min.is_sign_negative() && read.max.is_sign_negative());
        assert_eq!(read, negative.to_histoscope(-0.5));
    }

    #[test]
    fn legacy_readers_see_the_non_empty_bins() {
        let event = Event::decode(&histogram_event(&record(0, 0.0)).unwrap()[..]).unwrap();
        let histo = event.summary.unwrap().value[0].histo.clone().unwrap();
        let mut proto = HistogramProto::decode(histo).unwrap();
        proto.histoscope = None;
        let mut buckets = Vec::new();
        crate::histograms::data_compat::legacy_buckets(&(&proto).into(), &mut buckets).unwrap();
        assert_eq!(buckets, vec![1.0, 2.0, 4.0, 2.0, 3.0, 2.0]);
        let legacy = Stats::of_legacy(&(&proto).into());
        assert_eq!(legacy.mean, 1.5);
        assert!((legacy.std - 0.5).abs() < 1e-12);
    }

    #[test]
    fn mismatched_edges_are_an_error() {
        let h = HistogramRecord {
            edges: &[0.0],
            counts: &[1.0],
            ..record(0, 0.0)
        };
        assert!(matches!(
            histogram_event(&h),
            Err(WriteError::EdgeCount {
                edges: 1,
                counts: 1,
                ..
            })
        ));
    }
}
