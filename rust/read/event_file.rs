//! One events file to the histogram points and session restarts it holds, in record order,
//! and to the scalars and optimizer notes a [`Sink`] may want besides.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io;
use std::path::Path;

use thiserror::Error;

use crate::histograms::data_compat::{self, CompatError};
use crate::histograms::stats::Stats;
use crate::read::metric_layout::{self, MetricLayout};
use crate::read::optimizer_note::{self, OptimizerNote};
use crate::read::proto_view::{summary_values, EventView, HistogramView, TensorView, ValueView};
use crate::read::report::{Damage, FileReport};
use crate::read::shared_tags::StepBurst;
use crate::read::tf_record::{ReadRecordError, RecordReader};
use crate::read::wire::WireError;

/// The plugin name that marks `tensor` summaries as histograms.
pub const HISTOGRAM_PLUGIN: &str = "histograms";
/// The plugin name that marks `tensor` summaries as scalars (TF2's `tf.summary.scalar`).
pub const SCALARS_PLUGIN: &str = "scalars";

/// Why a record of an events file, or a histogram value in it, could not be
/// read: the framing, the protobuf wire format or the histogram's encoding,
/// as TensorBoard's data server has one `ReadEventError`.
#[derive(Debug, Error)]
pub enum ReadEventError {
    #[error(transparent)]
    Record(#[from] ReadRecordError),
    #[error("record is not an Event: {0}")]
    NotAnEvent(#[source] WireError),
    #[error("bad Summary.Value: {0}")]
    BadSummaryValue(#[source] WireError),
    #[error("{tag}: {source}")]
    Value {
        tag: String,
        #[source]
        source: ValueError,
    },
}

/// Why one histogram value of an intact `Event` could not be turned into buckets.
#[derive(Debug, Error, PartialEq)]
pub enum ValueError {
    #[error("bad HistogramProto: {0}")]
    HistogramProto(#[source] WireError),
    #[error("bad TensorProto: {0}")]
    TensorProto(#[source] WireError),
    #[error(transparent)]
    Compat(#[from] CompatError),
}

/// One histogram value: a step's buckets, flattened as (left, right, count) rows.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub step: i64,
    pub wall_time: f64,
    pub buckets: Vec<f64>,
    pub stats: Stats,
}

/// A [`Point`] whose buckets are borrowed from the decoder's buffer, which
/// the next value reuses: what a [`Sink`] is handed.
#[derive(Debug, Clone, Copy)]
pub struct PointView<'a> {
    pub step: i64,
    pub wall_time: f64,
    pub buckets: &'a [f64],
    pub stats: Stats,
}

impl PointView<'_> {
    /// The point, its buckets copied.
    pub fn to_point(self) -> Point {
        Point {
            step: self.step,
            wall_time: self.wall_time,
            buckets: self.buckets.to_vec(),
            stats: self.stats,
        }
    }
}

/// What a record contributes to a run, in the order the file holds them.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// A histogram of `tag`. `confirmed` is false for a (k, 3) tensor whose tag
    /// had no plugin metadata earlier in this file: the run decides, from the
    /// metadata its earlier files gave the tag.
    Histogram {
        tag: String,
        point: Point,
        confirmed: bool,
    },
    /// A `SessionLog.START`: the run restarted at this step.
    Start { step: i64 },
}

/// Everything read from one events file.
#[derive(Debug, Default)]
pub struct FileContents {
    pub entries: Vec<Entry>,
    /// Each tag's plugin, from the first value of it in this file that named one.
    pub plugins: HashMap<String, String>,
    /// The step the file's last value was in, for the next read of a file read in parts.
    pub burst: StepBurst,
    pub report: FileReport,
}

/// Reads one events file; damage is recorded in the report, never returned as data.
pub fn read_event_file(path: &Path, tags: Option<&HashSet<String>>) -> FileContents {
    let mut entries = Vec::new();
    let mut plugins = HashMap::new();
    let report = read_event_file_into(path, tags, &mut entries, &mut plugins);
    FileContents {
        entries,
        plugins,
        report,
        ..Default::default()
    }
}

/// Reads one events file into `sink`, noting each tag's plugin in `plugins`.
pub fn read_event_file_into<S: Sink>(
    path: &Path,
    tags: Option<&HashSet<String>>,
    sink: &mut S,
    plugins: &mut HashMap<String, String>,
) -> FileReport {
    let mut report = FileReport::new(path);
    match File::open(path).and_then(|f| Ok((f.metadata()?.len(), f))) {
        Ok((len, file)) => {
            let reader = RecordReader::new(file, Some(len));
            decode_records(reader, tags, sink, plugins, &mut report);
        }
        Err(e) => report.error = Some(open_error(&e)),
    }
    report
}

/// Why a file could not be opened, in words that say what likely happened: a
/// log directory is listed before its files are read, and a training or a
/// cleanup may remove a file in between.
pub(crate) fn open_error(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => {
            "the file is gone (removed or renamed after the log directory was listed)".to_owned()
        }
        _ => format!("cannot open the file: {e}"),
    }
}

/// Where decoded histogram values go, in record order.
pub trait Sink {
    /// A histogram value of `tag`, as [`Entry::Histogram`] holds it.
    fn histogram(&mut self, tag: &str, point: PointView<'_>, confirmed: bool);

    /// A `SessionLog.START` at `step`.
    fn start(&mut self, step: i64);

    /// A scalar of `tag`: a `simple_value` (TF1, PyTorch, tensorboardX, histoscope)
    /// or a one-number `scalars` plugin tensor (TF2). Every tag's, whatever `tags`
    /// selects; dropped unless the sink wants them.
    fn scalar(&mut self, _tag: &str, _step: i64, _value: f64) {}

    /// An optimizer note of `watch` (see [`optimizer_note`]); dropped unless wanted.
    fn optimizer(&mut self, _note: OptimizerNote) {}

    /// A `define_metric` declaration (see [`metric_layout`]); dropped unless wanted.
    fn layout(&mut self, _layout: MetricLayout) {}

    /// How far into the input the next record starts, and the input's length
    /// when known, so that a sink can size its buffers once.
    fn progress(&mut self, _offset: u64, _length: Option<u64>) {}
}

impl Sink for Vec<Entry> {
    fn histogram(&mut self, tag: &str, point: PointView<'_>, confirmed: bool) {
        self.push(Entry::Histogram {
            tag: tag.to_owned(),
            point: point.to_point(),
            confirmed,
        });
    }

    fn start(&mut self, step: i64) {
        self.push(Entry::Start { step });
    }
}

/// Reads every record of `reader` into `contents`.
pub fn read_records<R: io::Read>(
    reader: RecordReader<R>,
    tags: Option<&HashSet<String>>,
    contents: &mut FileContents,
) {
    let FileContents {
        entries,
        plugins,
        burst,
        report,
    } = contents;
    let mut reader = reader;
    decode_records_until(&mut reader, tags, entries, plugins, burst, report, u64::MAX);
}

/// Reads every record of `reader`, handing histograms to `sink` and noting
/// each tag's plugin in `plugins` and what was damaged in `report`.
pub fn decode_records<R: io::Read, S: Sink>(
    mut reader: RecordReader<R>,
    tags: Option<&HashSet<String>>,
    sink: &mut S,
    plugins: &mut HashMap<String, String>,
    report: &mut FileReport,
) {
    let mut burst = StepBurst::default();
    decode_records_until(
        &mut reader,
        tags,
        sink,
        plugins,
        &mut burst,
        report,
        u64::MAX,
    );
}

/// [`decode_records`] up to the first record boundary at or past input offset
/// `stop`; returns whether it stopped there, so that records may be left to read.
/// `plugins` carries what earlier records named to the next call, and `burst`
/// the step the last value was in (see [`StepBurst`]); the report names the tags
/// the file has held several times in one step so far.
pub fn decode_records_until<R: io::Read, S: Sink>(
    reader: &mut RecordReader<R>,
    tags: Option<&HashSet<String>>,
    sink: &mut S,
    plugins: &mut HashMap<String, String>,
    burst: &mut StepBurst,
    report: &mut FileReport,
    stop: u64,
) -> bool {
    let mut decoder = Decoder {
        tags,
        sink,
        plugins,
        burst,
        scratch: Vec::new(),
    };
    let stopped = decode_until(reader, &mut decoder, report, stop);
    report.shared_tags.clone_from(decoder.burst.shared());
    stopped
}

fn decode_until<R: io::Read, S: Sink>(
    reader: &mut RecordReader<R>,
    decoder: &mut Decoder<'_, S>,
    report: &mut FileReport,
    stop: u64,
) -> bool {
    loop {
        if reader.offset() >= stop {
            return true;
        }
        match reader.next_record() {
            Ok(Some(record)) => {
                let end = record.offset + record.data.len() as u64 + 16;
                if let Some(damage) = decoder.record(record.offset, record.data) {
                    report.damaged.push(damage);
                }
                decoder.sink.progress(end, reader.limit());
            }
            Ok(None) => return false,
            Err(ReadRecordError::Truncated { offset, .. }) => {
                report.incomplete_tail = Some(offset);
                return false;
            }
            Err(ReadRecordError::BadDataCrc { offset, length, .. }) => {
                report.damaged.push(Damage::bad_data(offset, length + 16));
            }
            Err(ReadRecordError::BadLengthCrc { .. }) => match reader.resync() {
                Ok(skipped) => report
                    .damaged
                    .push(Damage::bad_length(skipped.offset, skipped.length)),
                Err(e) => {
                    report.error = Some(ReadEventError::from(e).to_string());
                    return false;
                }
            },
            Err(e @ ReadRecordError::Io { .. }) => {
                report.error = Some(ReadEventError::from(e).to_string());
                return false;
            }
        }
    }
}

struct Decoder<'a, S> {
    tags: Option<&'a HashSet<String>>,
    sink: &'a mut S,
    plugins: &'a mut HashMap<String, String>,
    burst: &'a mut StepBurst,
    /// Reused for every value's buckets, so decoding allocates nothing per record.
    scratch: Vec<f64>,
}

impl<S: Sink> Decoder<'_, S> {
    /// Decodes one record; returns what was damaged in it, if anything.
    fn record(&mut self, offset: u64, data: &[u8]) -> Option<Damage> {
        let length = data.len() as u64 + 16;
        let event = match EventView::decode(data) {
            Ok(event) => event,
            Err(e) => return Some(damage(offset, length, &[ReadEventError::NotAnEvent(e)])),
        };
        if event.session_start {
            self.sink.start(event.step);
        }
        let summary = event.summary?;
        let mut problems = Vec::new();
        for value in summary_values(summary) {
            let result = match value {
                Ok(value) => self.value(event.step, event.wall_time, value),
                Err(e) => Err(ReadEventError::BadSummaryValue(e)),
            };
            if let Err(problem) = result {
                problems.push(problem);
            }
        }
        (!problems.is_empty()).then(|| damage(offset, length, &problems))
    }

    fn value(
        &mut self,
        step: i64,
        wall_time: f64,
        value: ValueView<'_>,
    ) -> Result<(), ReadEventError> {
        let tag = value.tag;
        if let Some(plugin) = value.plugin {
            if !self.plugins.contains_key(tag) {
                self.plugins.insert(tag.to_owned(), plugin.to_owned());
            }
        }
        if self.evidence(step, value) {
            return Ok(());
        }
        let in_value = |source| ReadEventError::Value {
            tag: tag.to_owned(),
            source,
        };
        let Some(payload) = self.classify(value).map_err(in_value)? else {
            return Ok(());
        };
        // Every histogram value counts towards its position, wanted or not, so
        // that a tag's n-th layer has the same name whichever tags are read.
        let name = self.burst.name(tag, step, wall_time);
        if self
            .tags
            .is_some_and(|wanted| !wanted.contains(name.as_ref()))
        {
            return Ok(());
        }
        self.scratch.clear();
        let (stats, confirmed) = match payload {
            Payload::Legacy(histo) => (legacy(histo, &mut self.scratch).map_err(in_value)?, true),
            Payload::Tensor(tensor, confirmed) => {
                data_compat::tensor_buckets(&tensor, &mut self.scratch)
                    .map_err(|e| in_value(e.into()))?;
                (Stats::of_buckets(&self.scratch), confirmed)
            }
        };
        let point = PointView {
            step,
            wall_time,
            buckets: &self.scratch,
            stats,
        };
        self.sink.histogram(&name, point, confirmed);
        Ok(())
    }

    /// Whether a value is a histogram, and in which form, judged by the value
    /// itself first: its own metadata, then its tag's from earlier in the file.
    /// Another plugin's value (an image under a weight's tag, as Keras 2 writes
    /// with `write_images=True`) is not a histogram, and not damage either.
    fn classify<'v>(&self, value: ValueView<'v>) -> Result<Option<Payload<'v>>, ValueError> {
        if let Some(histo) = value.histo {
            return Ok(Some(Payload::Legacy(histo)));
        }
        let Some(tensor) = value.tensor else {
            return Ok(None);
        };
        let plugin = value
            .plugin
            .or_else(|| self.plugins.get(value.tag).map(String::as_str));
        let confirmed = match plugin {
            Some(HISTOGRAM_PLUGIN) => true,
            Some(_) => return Ok(None),
            None => false,
        };
        let tensor = match TensorView::decode(tensor) {
            Ok(t) => t,
            Err(_) if !confirmed => return Ok(None),
            Err(e) => return Err(ValueError::TensorProto(e)),
        };
        // A string tensor is never a histogram unless its own metadata says so: the
        // plugin remembered for its tag may be another value's (Keras 2 writes a
        // weight's histogram and its image under one tag).
        let own_histogram = value.plugin == Some(HISTOGRAM_PLUGIN);
        let strings = tensor.dtype == DT_STRING && !own_histogram;
        if strings || (!confirmed && !data_compat::is_histogram_shaped(&tensor)) {
            return Ok(None);
        }
        Ok(Some(Payload::Tensor(tensor, confirmed)))
    }
}

/// A histogram value's payload, before its buckets are decoded. It lives on the
/// stack for one value at a time, so the size of the tensor's view costs nothing.
#[allow(clippy::large_enum_variant)]
enum Payload<'v> {
    /// A `HistogramProto` (TF1, PyTorch, tensorboardX, histoscope).
    Legacy(&'v [u8]),
    /// A `[k, 3]` tensor (TF2); whether its tag's metadata said it is a histogram.
    Tensor(TensorView<'v>, bool),
}

/// `DT_STRING`: the dtype of image, audio and text summaries, never of a histogram.
const DT_STRING: i32 = 7;

impl<S: Sink> Decoder<'_, S> {
    /// Hands a scalar, an optimizer note or a layout declaration to the sink; false for any other value.
    /// Neither is a histogram: one that cannot be read is passed over, not damage.
    fn evidence(&mut self, step: i64, value: ValueView<'_>) -> bool {
        if let Some(scalar) = value.simple_value {
            self.sink.scalar(value.tag, step, f64::from(scalar));
            return true;
        }
        // Only a tensor needs its tag's plugin from an earlier value (TF2 names it once).
        let plugin = match (value.plugin, value.tensor) {
            (None, Some(_)) => self.plugins.get(value.tag).map(String::as_str),
            (plugin, _) => plugin,
        };
        match (plugin, value.tensor) {
            (Some(SCALARS_PLUGIN), Some(tensor)) => {
                let number = TensorView::decode(tensor)
                    .ok()
                    .and_then(|t| data_compat::tensor_scalar(&t));
                if let Some(number) = number {
                    self.sink.scalar(value.tag, step, number);
                }
                true
            }
            (Some(optimizer_note::PLUGIN), _) => {
                if let Some(note) = value.plugin_content.and_then(optimizer_note::decode) {
                    self.sink.optimizer(note);
                }
                true
            }
            (Some(metric_layout::PLUGIN), _) => {
                if let Some(layout) = value.plugin_content.and_then(metric_layout::decode) {
                    self.sink.layout(layout);
                }
                true
            }
            _ => false,
        }
    }
}

/// The damage report of a record: not an Event at all, or some of its values lost.
fn damage(offset: u64, length: u64, problems: &[ReadEventError]) -> Damage {
    if let [ReadEventError::NotAnEvent(_)] = problems {
        return Damage::unparsable(offset, length);
    }
    let text: Vec<String> = problems.iter().map(ToString::to_string).collect();
    Damage::bad_value(offset, length, text.join("; "))
}

fn legacy(histo: &[u8], out: &mut Vec<f64>) -> Result<Stats, ValueError> {
    let h = HistogramView::decode(histo).map_err(ValueError::HistogramProto)?;
    match &h.histoscope {
        Some(ours) => {
            data_compat::histoscope_buckets(&h, ours.first_edge, out)?;
            Ok(Stats::of_histoscope(ours))
        }
        None => {
            data_compat::legacy_buckets(&h, out)?;
            Ok(Stats::of_legacy(&h))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::test_events::{image_summary, legacy_histogram, tensor_histogram};

    fn read(bytes: &[u8]) -> FileContents {
        let mut contents = FileContents::default();
        read_records(RecordReader::new(bytes, None), None, &mut contents);
        contents
    }

    fn tags(contents: &FileContents) -> Vec<(String, i64)> {
        contents
            .entries
            .iter()
            .filter_map(|e| match e {
                Entry::Histogram { tag, point, .. } => Some((tag.clone(), point.step)),
                Entry::Start { .. } => None,
            })
            .collect()
    }

    #[test]
    fn another_plugins_value_under_a_histogram_tag_is_neither_data_nor_damage() {
        let rows = [0.0, 1.0, 4.0];
        let bytes = [
            tensor_histogram("dense/kernel_0", 0, &rows, true),
            image_summary("dense/kernel_0", 0),
            tensor_histogram("dense/kernel_0", 1, &rows, false),
            image_summary("dense/kernel_0", 1),
        ]
        .concat();
        let contents = read(&bytes);
        assert_eq!(contents.report, FileReport::default());
        let want = vec![
            ("dense/kernel_0".to_owned(), 0),
            ("dense/kernel_0".to_owned(), 1),
        ];
        assert_eq!(tags(&contents), want);
    }

    #[test]
    fn one_tag_written_per_layer_in_one_step_comes_back_as_one_series_per_position() {
        let step = |s: i64| {
            let mut events = Vec::new();
            for (layer, width) in [(1, 2), (2, 3), (3, 1)] {
                let counts = vec![f64::from(layer); width];
                events.push(legacy_histogram("kernel/histogram", s, &counts));
                events.push(legacy_histogram("bias/histogram", s, &counts[..1]));
            }
            events.concat()
        };
        let contents = read(&[step(0), step(1)].concat());
        let names: Vec<String> = tags(&contents).into_iter().map(|(t, _)| t).collect();
        let one_step = [
            "kernel/histogram",
            "bias/histogram",
            "kernel/histogram (2)",
            "bias/histogram (2)",
            "kernel/histogram (3)",
            "bias/histogram (3)",
        ];
        assert_eq!(names, [one_step, one_step].concat());
        let shared: Vec<(&str, u32)> = contents
            .report
            .shared_tags
            .iter()
            .map(|(t, n)| (t.as_str(), *n))
            .collect();
        assert_eq!(shared, [("bias/histogram", 3), ("kernel/histogram", 3)]);
        assert!(!contents.report.has_problems());
    }

    #[test]
    fn a_tags_position_counts_whichever_tags_are_read() {
        let bytes = [
            legacy_histogram("k", 0, &[1.0]),
            legacy_histogram("k", 0, &[1.0, 1.0]),
        ]
        .concat();
        let wanted = HashSet::from(["k (2)".to_owned()]);
        let mut contents = FileContents::default();
        read_records(
            RecordReader::new(&bytes[..], None),
            Some(&wanted),
            &mut contents,
        );
        assert_eq!(tags(&contents), vec![("k (2)".to_owned(), 0)]);
    }
}
