//! Following growing events files: each read decodes only the records written since the last.
//!
//! A viewer keeps, per events file, the offset up to which it has read whole
//! records. [`read_segment`] decodes the records from there, at most about
//! `max_bytes` of them, and says where the next read starts: a record cut off
//! at the end (still being written) is left for the next read, as the
//! resumable framing reader returns it without consuming it. [`Segment::indexed`]
//! keeps of each step only what a viewer lists (step, wall time, statistics,
//! TensorBoard's percentiles); [`read_segment`] reads a segment again later for
//! the buckets of one step, so a viewer need not keep buckets it is not showing.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::Path;

use crate::bins::compressor::{compress_histogram, Compressed};
use crate::histograms::profile::zero_shares;
use crate::histograms::series::Series;
use crate::histograms::stats::Stats;
use crate::logdir::merge::merge_run;
use crate::read::event_file::{read_records, Entry, FileContents};
use crate::read::report::FileReport;
use crate::read::shared_tags::StepBurst;
use crate::read::tf_record::{open_at, RecordReader};

/// What one read of a file's next records gave: each tag's series, or (as
/// [`SegmentIndex`]) each tag's steps alone.
#[derive(Debug, Default)]
pub struct Segment<S = Series> {
    /// The offset just past the last whole record read: where the next read starts.
    pub end: u64,
    /// The steps of the `SessionLog.START`s read: each drops the run's earlier values at or after it.
    pub starts: Vec<i64>,
    /// The histograms read, one per tag, restarts inside the segment applied.
    pub series: Vec<S>,
    /// Damage found, with offsets in the file.
    pub report: FileReport,
}

/// One tag's steps without their buckets: what a viewer keeps per step.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct StepIndex {
    pub tag: String,
    pub steps: Vec<i64>,
    pub wall_times: Vec<f64>,
    pub stats: Vec<Stats>,
    /// Each step's histogram compressed as TensorBoard's distributions draw it.
    pub percentiles: Vec<Compressed>,
    /// Each step's share of values at exactly zero, as the diagnosis reads it
    /// (`histograms::profile`): what the overview colours dead units by.
    pub zero_shares: Vec<f64>,
}

impl StepIndex {
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Keeps the first `keep` steps.
    pub fn truncate(&mut self, keep: usize) {
        self.steps.truncate(keep);
        self.wall_times.truncate(keep);
        self.stats.truncate(keep);
        self.percentiles.truncate(keep);
        self.zero_shares.truncate(keep);
    }

    /// Appends `other`'s steps after these.
    pub fn append(&mut self, other: StepIndex) {
        self.steps.extend(other.steps);
        self.wall_times.extend(other.wall_times);
        self.stats.extend(other.stats);
        self.percentiles.extend(other.percentiles);
        self.zero_shares.extend(other.zero_shares);
    }

    /// Steps `start..stop` as an index of their own.
    pub fn slice(&self, start: usize, stop: usize) -> StepIndex {
        StepIndex {
            tag: self.tag.clone(),
            steps: self.steps[start..stop].to_vec(),
            wall_times: self.wall_times[start..stop].to_vec(),
            stats: self.stats[start..stop].to_vec(),
            percentiles: self.percentiles[start..stop].to_vec(),
            zero_shares: self.zero_shares[start..stop].to_vec(),
        }
    }
}

impl From<Series> for StepIndex {
    fn from(series: Series) -> Self {
        let percentiles = (0..series.steps.len())
            .map(|i| compress_histogram(series.step_buckets(i)))
            .collect();
        let zero_shares = zero_shares(&series.buckets, &series.offsets, &series.stats);
        StepIndex {
            tag: series.tag,
            steps: series.steps,
            wall_times: series.wall_times,
            stats: series.stats,
            percentiles,
            zero_shares,
        }
    }
}

/// A [`Segment`] with each series reduced to its [`StepIndex`].
pub type SegmentIndex = Segment<StepIndex>;

impl Segment {
    /// The segment with each step's index kept and its buckets dropped.
    pub fn indexed(self) -> SegmentIndex {
        SegmentIndex {
            end: self.end,
            starts: self.starts,
            series: self.series.into_iter().map(StepIndex::from).collect(),
            report: self.report,
        }
    }
}

/// Reads the whole records of `path` from byte `start`, stopping after about `max_bytes`.
///
/// `plugins` is the run's map of tag to plugin name from the records read
/// before (TF2 writes a histogram's plugin only with its first value); it is
/// extended with what this segment names. `burst` is the file's step at
/// `start` (see [`StepBurst`]), moved on to the segment's end. A single record
/// longer than `max_bytes` is read whole.
pub fn read_segment(
    run: &str,
    path: &Path,
    start: u64,
    max_bytes: u64,
    plugins: &mut HashMap<String, String>,
    burst: &mut StepBurst,
    tags: Option<&HashSet<String>>,
) -> Segment {
    let mut budget = max_bytes.max(1);
    loop {
        let mut contents = FileContents {
            plugins: plugins.clone(),
            burst: burst.clone(),
            report: FileReport::new(path),
            ..Default::default()
        };
        let (limit, left) = match read_range(path, start, budget, tags, &mut contents) {
            Ok(sizes) => sizes,
            Err(e) => {
                contents.report.error = Some(e.to_string());
                return Segment {
                    end: start,
                    report: contents.report,
                    ..Default::default()
                };
            }
        };
        let end = match contents.report.incomplete_tail {
            // A record longer than the budget: read again with room for it.
            Some(0) if limit < left => {
                budget = budget.saturating_mul(2);
                continue;
            }
            Some(tail) => start + tail,
            None => start + limit,
        };
        *burst = std::mem::take(&mut contents.burst);
        return finish(run, start, end, contents, plugins);
    }
}

/// Decodes `path` from `start` on, at most `budget` bytes; returns (bytes read, bytes left).
fn read_range(
    path: &Path,
    start: u64,
    budget: u64,
    tags: Option<&HashSet<String>>,
    contents: &mut FileContents,
) -> std::io::Result<(u64, u64)> {
    let (file, left) = open_at(path, start)?;
    let limit = left.min(budget);
    let reader = RecordReader::new(file.take(limit), Some(limit));
    read_records(reader, tags, contents);
    Ok((limit, left))
}

fn finish(
    run: &str,
    start: u64,
    end: u64,
    mut contents: FileContents,
    plugins: &mut HashMap<String, String>,
) -> Segment {
    plugins.clone_from(&contents.plugins);
    let starts = contents
        .entries
        .iter()
        .filter_map(|e| match e {
            Entry::Start { step } => Some(*step),
            Entry::Histogram { .. } => None,
        })
        .collect();
    // The reader counted from the segment's start; the report speaks of the file.
    for damage in &mut contents.report.damaged {
        damage.offset += start;
    }
    contents.report.incomplete_tail = contents.report.incomplete_tail.map(|t| t + start);
    let report = std::mem::replace(&mut contents.report, FileReport::new(Path::new("")));
    let series = merge_run(run, vec![contents]).series;
    Segment {
        end,
        starts,
        series,
        report,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::test_events::{legacy_histogram, restart, tensor_histogram};
    use std::io::Write;

    fn legacy_event(step: i64) -> Vec<u8> {
        legacy_histogram("h", step, &[1.0, 2.0])
    }

    fn temp_file(name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let path =
            std::env::temp_dir().join(format!("histoscope-follow-{name}-{}", std::process::id()));
        std::fs::write(&path, bytes).unwrap();
        path
    }

    /// `read_segment` of run "r", every tag, from a file's first step.
    fn segment(
        path: &Path,
        start: u64,
        max_bytes: u64,
        plugins: &mut HashMap<String, String>,
    ) -> Segment {
        let burst = &mut StepBurst::default();
        read_segment("r", path, start, max_bytes, plugins, burst, None)
    }

    fn steps(segment: &Segment, tag: &str) -> Vec<i64> {
        segment
            .series
            .iter()
            .find(|s| s.tag == tag)
            .map(|s| s.steps.clone())
            .unwrap_or_default()
    }

    #[test]
    fn a_record_being_written_is_left_for_the_next_read() {
        let records: Vec<Vec<u8>> = (0..3).map(legacy_event).collect();
        let whole = records[0].len() + records[1].len();
        let mut bytes = records.concat();
        let cut = bytes.len() - 4;
        let path = temp_file("tail", &bytes[..cut]);
        let mut plugins = HashMap::new();
        let first = segment(&path, 0, 1 << 20, &mut plugins);
        assert_eq!(first.end, whole as u64);
        assert_eq!(steps(&first, "h"), vec![0, 1]);
        assert_eq!(first.report.incomplete_tail, Some(whole as u64));
        bytes.extend(legacy_event(3));
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(&bytes[cut..])
            .unwrap();
        let second = segment(&path, first.end, 1 << 20, &mut plugins);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(steps(&second, "h"), vec![2, 3]);
        assert_eq!(second.end, bytes.len() as u64);
        assert!(!second.report.has_problems());
    }

    #[test]
    fn segments_end_on_record_boundaries_and_grow_for_long_records() {
        // Steps 1 to 5 encode to records of one length (step 0 would be left out).
        let bytes: Vec<u8> = (1..6).flat_map(legacy_event).collect();
        let record = (bytes.len() / 5) as u64;
        let path = temp_file("segments", &bytes);
        let mut plugins = HashMap::new();
        let mut seen = Vec::new();
        let mut start = 0;
        while start < bytes.len() as u64 {
            let segment = segment(&path, start, record + record / 2, &mut plugins);
            assert_eq!(segment.end - start, record);
            seen.extend(steps(&segment, "h"));
            start = segment.end;
        }
        let tiny = segment(&path, 0, 3, &mut plugins);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(seen, vec![1, 2, 3, 4, 5]);
        assert_eq!(tiny.end, record);
        assert_eq!(steps(&tiny, "h"), vec![1]);
    }

    #[test]
    fn a_plugin_named_in_an_earlier_segment_confirms_later_tensors() {
        let first = tensor_histogram("t", 0, &[0.0, 1.0, 0.0], true);
        let second = tensor_histogram("t", 1, &[0.0, 1.0, 1.0], false);
        let bytes = [first.clone(), second].concat();
        let path = temp_file("plugins", &bytes);
        let mut plugins = HashMap::new();
        let head = segment(&path, 0, first.len() as u64, &mut plugins);
        let rest = segment(&path, head.end, 1 << 20, &mut plugins);
        let mut fresh = HashMap::new();
        let alone = segment(&path, head.end, 1 << 20, &mut fresh);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(steps(&head, "t"), vec![0]);
        assert_eq!(steps(&rest, "t"), vec![1]);
        assert_eq!(plugins.get("t").map(String::as_str), Some("histograms"));
        assert!(steps(&alone, "t").is_empty());
    }

    #[test]
    fn restarts_are_returned_and_applied_inside_the_segment() {
        let bytes = [
            legacy_event(0),
            legacy_event(1),
            legacy_event(2),
            restart(1),
            legacy_event(1),
        ]
        .concat();
        let path = temp_file("starts", &bytes);
        let segment = segment(&path, 0, 1 << 20, &mut HashMap::new());
        std::fs::remove_file(&path).unwrap();
        assert_eq!(segment.starts, vec![1]);
        assert_eq!(steps(&segment, "h"), vec![0, 1]);
    }

    #[test]
    fn damage_is_reported_at_file_offsets() {
        let records: Vec<Vec<u8>> = (0..3).map(legacy_event).collect();
        let mut bytes = records.concat();
        let second = records[0].len();
        bytes[second + records[1].len() - 1] ^= 0xFF; // record 1's data checksum
        let path = temp_file("damage", &bytes);
        let segment = segment(&path, second as u64, 1 << 20, &mut HashMap::new());
        std::fs::remove_file(&path).unwrap();
        assert_eq!(steps(&segment, "h"), vec![2]);
        assert_eq!(segment.report.damaged[0].offset, second as u64);
        assert_eq!(segment.end, bytes.len() as u64);
    }

    #[test]
    fn the_index_keeps_each_steps_percentiles_and_statistics() {
        let bytes = [legacy_event(1), restart(2), legacy_event(2)].concat();
        let path = temp_file("index", &bytes);
        let mut plugins = HashMap::new();
        let index = read_segment(
            "r",
            &path,
            0,
            1 << 20,
            &mut plugins,
            &mut StepBurst::default(),
            None,
        )
        .indexed();
        let read = segment(&path, 0, 1 << 20, &mut plugins);
        std::fs::remove_file(&path).unwrap();
        let [series] = &index.series[..] else {
            panic!("one tag, got {:?}", index.series);
        };
        assert_eq!(series.steps, vec![1, 2]);
        let counts: Vec<(f64, f64)> = series.stats.iter().map(|s| (s.count, s.max)).collect();
        assert_eq!(counts, vec![(3.0, 2.0), (3.0, 2.0)]);
        assert_eq!(series.wall_times, read.series[0].wall_times);
        assert_eq!(index.starts, vec![2]);
        assert_eq!(index.end, bytes.len() as u64);
        // TensorBoard's compress_histogram([[0, 1, 1], [1, 2, 2]]).
        let want = [
            0.0,
            0.2004,
            0.47609999999999997,
            0.9255,
            1.25,
            1.53725,
            1.7619500000000001,
            1.8998,
            2.0,
        ];
        assert_eq!(series.percentiles, vec![want, want]);
    }

    #[test]
    fn a_missing_file_reads_nothing_and_says_why() {
        let path = std::env::temp_dir().join("histoscope-follow-no-such-file");
        let segment = segment(&path, 0, 10, &mut HashMap::new());
        assert_eq!(segment.end, 0);
        assert!(segment.series.is_empty());
        assert!(segment.report.error.is_some());
    }
}
