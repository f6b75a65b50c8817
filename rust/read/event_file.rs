//! One events file to the histogram points and session restarts it holds, in record order,
//! and to the scalars and optimizer notes a [`Sink`] may want besides.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io;
use std::path::Path;

use thiserror::Error;

use crate::histograms::data_compat::{self, CompatError};
use crate::histograms::stats::Stats;
use crate::read::optimizer_note::{self, OptimizerNote};
use crate::read::proto_view::{summary_values, EventView, HistogramView, TensorView, ValueView};
use crate::read::report::{Damage, FileReport};
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
fn open_error(e: &io::Error) -> String {
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
        report,
    } = contents;
    decode_records(reader, tags, entries, plugins, report);
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
    decode_records_until(&mut reader, tags, sink, plugins, report, u64::MAX);
}

/// [`decode_records`] up to the first record boundary at or past input offset
/// `stop`; returns whether it stopped there, so that records may be left to read.
/// `plugins` carries what earlier records named to the next call.
pub fn decode_records_until<R: io::Read, S: Sink>(
    reader: &mut RecordReader<R>,
    tags: Option<&HashSet<String>>,
    sink: &mut S,
    plugins: &mut HashMap<String, String>,
    report: &mut FileReport,
    stop: u64,
) -> bool {
    let mut decoder = Decoder {
        tags,
        sink,
        plugins,
        scratch: Vec::new(),
    };
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
        if self.tags.is_some_and(|wanted| !wanted.contains(tag)) {
            return Ok(());
        }
        let in_value = |source| ReadEventError::Value {
            tag: tag.to_owned(),
            source,
        };
        self.scratch.clear();
        let (stats, confirmed) = if let Some(histo) = value.histo {
            let stats = legacy(histo, &mut self.scratch).map_err(in_value)?;
            (stats, true)
        } else if let Some(tensor) = value.tensor {
            let confirmed = match self.plugins.get(tag) {
                Some(plugin) if plugin != HISTOGRAM_PLUGIN => return Ok(()),
                known => known.is_some(),
            };
            if !tensor_histogram(tensor, confirmed, &mut self.scratch).map_err(in_value)? {
                return Ok(());
            }
            (Stats::of_buckets(&self.scratch), confirmed)
        } else {
            return Ok(());
        };
        let point = PointView {
            step,
            wall_time,
            buckets: &self.scratch,
            stats,
        };
        self.sink.histogram(tag, point, confirmed);
        Ok(())
    }
}

impl<S: Sink> Decoder<'_, S> {
    /// Hands a scalar or an optimizer note to the sink; false for any other value.
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

/// Decodes a tensor value's buckets into `out`, borrowing its values from
/// the record; false for an unconfirmed tensor that is not (k, 3) numeric,
/// which is some other plugin's data and not damage.
fn tensor_histogram(
    tensor: &[u8],
    confirmed: bool,
    out: &mut Vec<f64>,
) -> Result<bool, ValueError> {
    let t = match TensorView::decode(tensor) {
        Ok(t) => t,
        Err(_) if !confirmed => return Ok(false),
        Err(e) => return Err(ValueError::TensorProto(e)),
    };
    if !confirmed && !data_compat::is_histogram_shaped(&t) {
        return Ok(false);
    }
    data_compat::tensor_buckets(&t, out)?;
    Ok(true)
}
