//! One events file to the histogram points and session restarts it holds, in record order.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io;
use std::path::Path;

use bytes::Bytes;
use prost::Message;

use crate::data_compat::{self, Stats};
use crate::proto::{Event, HistogramProto, SummaryValue, TensorProto, SESSION_START};
use crate::report::{Damage, FileReport};
use crate::tf_record::{ReadRecordError, RecordReader};

/// The plugin name that marks `tensor` summaries as histograms.
pub const HISTOGRAM_PLUGIN: &str = "histograms";

/// One histogram value: a step's buckets, flattened as (left, right, count) rows.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub step: i64,
    pub wall_time: f64,
    pub buckets: Vec<f64>,
    pub stats: Stats,
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
    let mut contents = FileContents {
        report: FileReport::new(path),
        ..Default::default()
    };
    match File::open(path).and_then(|f| Ok((f.metadata()?.len(), f))) {
        Ok((len, file)) => {
            let reader = RecordReader::new(file, Some(len));
            read_records(reader, tags, &mut contents);
        }
        Err(e) => contents.report.error = Some(e.to_string()),
    }
    contents
}

/// Reads every record of `reader` into `contents`.
pub fn read_records<R: io::Read>(
    mut reader: RecordReader<R>,
    tags: Option<&HashSet<String>>,
    contents: &mut FileContents,
) {
    let mut decoder = Decoder { tags, contents };
    loop {
        match reader.next_record() {
            Ok(Some(record)) => decoder.record(record.offset, record.data),
            Ok(None) => break,
            Err(ReadRecordError::Truncated { offset, .. }) => {
                decoder.contents.report.incomplete_tail = Some(offset);
                break;
            }
            Err(ReadRecordError::BadDataCrc { offset, length, .. }) => {
                decoder
                    .contents
                    .report
                    .damaged
                    .push(Damage::bad_data(offset, length + 16));
            }
            Err(ReadRecordError::BadLengthCrc { .. }) => match reader.resync() {
                Ok(skipped) => decoder
                    .contents
                    .report
                    .damaged
                    .push(Damage::bad_length(skipped.offset, skipped.length)),
                Err(e) => {
                    decoder.contents.report.error = Some(e.to_string());
                    break;
                }
            },
            Err(e @ ReadRecordError::Io { .. }) => {
                decoder.contents.report.error = Some(e.to_string());
                break;
            }
        }
    }
}

struct Decoder<'a> {
    tags: Option<&'a HashSet<String>>,
    contents: &'a mut FileContents,
}

impl Decoder<'_> {
    fn record(&mut self, offset: u64, data: Bytes) {
        let length = data.len() as u64 + 16;
        let event = match Event::decode(data) {
            Ok(event) => event,
            Err(_) => {
                return self
                    .contents
                    .report
                    .damaged
                    .push(Damage::unparsable(offset, length))
            }
        };
        if let Some(log) = &event.session_log {
            if log.status == SESSION_START {
                self.contents
                    .entries
                    .push(Entry::Start { step: event.step });
            }
        }
        let Some(summary) = event.summary else { return };
        for value in summary.value {
            if let Err(problem) = self.value(&event.step, event.wall_time, value) {
                self.contents
                    .report
                    .damaged
                    .push(Damage::bad_value(offset, length, problem));
            }
        }
    }

    fn value(&mut self, step: &i64, wall_time: f64, value: SummaryValue) -> Result<(), String> {
        let plugin = value
            .metadata
            .and_then(|m| m.plugin_data)
            .map(|p| p.plugin_name);
        if let Some(plugin) = plugin {
            if !self.contents.plugins.contains_key(&value.tag) {
                self.contents.plugins.insert(value.tag.clone(), plugin);
            }
        }
        if self.tags.is_some_and(|wanted| !wanted.contains(&value.tag)) {
            return Ok(());
        }
        let point = |buckets, stats| Point {
            step: *step,
            wall_time,
            buckets,
            stats,
        };
        if let Some(histo) = value.histo {
            let (buckets, stats) = legacy(histo).map_err(|e| format!("{}: {e}", value.tag))?;
            let entry = Entry::Histogram {
                tag: value.tag,
                point: point(buckets, stats),
                confirmed: true,
            };
            self.contents.entries.push(entry);
        } else if let Some(tensor) = value.tensor {
            let confirmed = match self.contents.plugins.get(&value.tag) {
                Some(plugin) if plugin != HISTOGRAM_PLUGIN => return Ok(()),
                known => known.is_some(),
            };
            let Some(buckets) =
                tensor_histogram(tensor, confirmed).map_err(|e| format!("{}: {e}", value.tag))?
            else {
                return Ok(());
            };
            let entry = Entry::Histogram {
                tag: value.tag,
                point: point(buckets, Stats::MISSING),
                confirmed,
            };
            self.contents.entries.push(entry);
        }
        Ok(())
    }
}

fn legacy(histo: Bytes) -> Result<(Vec<f64>, Stats), String> {
    let h = HistogramProto::decode(histo).map_err(|e| format!("bad HistogramProto: {e}"))?;
    let mut buckets = Vec::new();
    let stats = match &h.histoscope {
        Some(ours) => {
            data_compat::histoscope_buckets(&h, ours.first_edge, &mut buckets)
                .map_err(|e| e.to_string())?;
            Stats::of_histoscope(ours)
        }
        None => {
            data_compat::legacy_buckets(&h, &mut buckets).map_err(|e| e.to_string())?;
            Stats::of_legacy(&h)
        }
    };
    Ok((buckets, stats))
}

/// The buckets of a tensor value; `None` for an unconfirmed tensor that is not
/// (k, 3) numeric, which is some other plugin's data and not damage.
fn tensor_histogram(tensor: Bytes, confirmed: bool) -> Result<Option<Vec<f64>>, String> {
    let t = match TensorProto::decode(tensor) {
        Ok(t) => t,
        Err(_) if !confirmed => return Ok(None),
        Err(e) => return Err(format!("bad TensorProto: {e}")),
    };
    if !confirmed && !data_compat::is_histogram_shaped(&t) {
        return Ok(None);
    }
    let mut buckets = Vec::new();
    data_compat::tensor_buckets(&t, &mut buckets).map_err(|e| e.to_string())?;
    Ok(Some(buckets))
}
