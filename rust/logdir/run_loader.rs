//! A run followed as its files grow, like the data server's `RunLoader`: where each
//! file was read up to, the run's plugin map, restart purges, and an index per tag.
//!
//! Per step only the index stays in memory: step, wall time, statistics,
//! TensorBoard's percentiles, and the segment (stretch of a file) that holds the
//! buckets. A step's buckets are read again from its segment when someone looks
//! at it, so memory does not grow with the steps nobody looks at.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::histograms::series::Series;
use crate::logdir::follow::{index_segment, read_segment, SegmentIndex, StepIndex};

/// How many re-read segments are kept, every tag of each: a page asks for many
/// tags at the same steps, and each segment is decoded once for all of them.
const CACHED_SEGMENTS: usize = 8;

/// One tag's steps, in step order, with where each step's buckets are.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TagIndex {
    /// Counts up whenever a restart drops steps already indexed, so a client
    /// holding the first `n` steps of a generation can be sent only the rest.
    pub generation: u64,
    pub rows: StepIndex,
    /// The segment holding each step's buckets.
    pub segments: Vec<usize>,
}

impl TagIndex {
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    fn purge_from(&mut self, step: i64) {
        let keep = self.rows.steps.partition_point(|&s| s < step);
        if keep < self.len() {
            self.rows.truncate(keep);
            self.segments.truncate(keep);
            self.generation += 1;
        }
    }

    fn extend(&mut self, index: StepIndex, segment: usize) {
        if let Some(&first) = index.steps.first() {
            self.purge_from(first);
        }
        self.segments
            .extend(std::iter::repeat_n(segment, index.len()));
        self.rows.append(index);
    }

    /// Rows `start..stop` (clamped) as a tag index of their own, generation kept.
    pub fn slice(&self, start: usize, stop: usize) -> TagIndex {
        let stop = stop.min(self.len());
        let start = start.min(stop);
        TagIndex {
            generation: self.generation,
            rows: self.rows.slice(start, stop),
            segments: self.segments[start..stop].to_vec(),
        }
    }
}

/// A stretch of whole records of one file, read once; read again for buckets.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Span {
    path: PathBuf,
    start: u64,
    end: u64,
}

/// One run, followed.
#[derive(Debug, Default)]
pub struct RunLoader {
    name: String,
    offsets: HashMap<PathBuf, u64>,
    plugins: HashMap<String, String>,
    spans: Vec<Span>,
    tags: BTreeMap<String, TagIndex>,
    /// Counts up with every segment applied.
    version: u64,
    cache: VecDeque<(usize, BTreeMap<String, Series>)>,
}

/// Where a read left a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Every file was read to its last whole record.
    CaughtUp,
    /// The time ran out with more to read.
    Behind,
}

impl RunLoader {
    pub fn new(name: &str) -> Self {
        RunLoader {
            name: name.to_owned(),
            ..Default::default()
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn version(&self) -> u64 {
        self.version
    }

    pub fn offsets(&self) -> &HashMap<PathBuf, u64> {
        &self.offsets
    }

    /// How many segments have been read.
    pub fn segment_count(&self) -> usize {
        self.spans.len()
    }

    pub fn tags(&self) -> impl Iterator<Item = &str> {
        self.tags.keys().map(String::as_str)
    }

    pub fn tag(&self, tag: &str) -> Option<&TagIndex> {
        self.tags.get(tag)
    }

    /// What to read next: the first of `files` with bytes past its offset, and that offset.
    pub fn next_read<'a>(&self, files: &'a [PathBuf], done: &[&Path]) -> Option<(&'a Path, u64)> {
        files.iter().find_map(|path| {
            let start = self.offsets.get(path).copied().unwrap_or(0);
            let size = fs::metadata(path).map(|m| m.len()).unwrap_or(0);
            (size > start && !done.contains(&path.as_path())).then_some((path.as_path(), start))
        })
    }

    /// The plugin map to read the next segment with.
    pub fn plugins(&self) -> HashMap<String, String> {
        self.plugins.clone()
    }

    /// Records a segment read from `path` at `start`, with the plugin map after it;
    /// returns whether it held any whole record.
    pub fn apply(
        &mut self,
        path: &Path,
        start: u64,
        segment: SegmentIndex,
        plugins: HashMap<String, String>,
    ) -> bool {
        self.plugins = plugins;
        if segment.end == start {
            return false;
        }
        self.offsets.insert(path.to_path_buf(), segment.end);
        let number = self.spans.len();
        self.spans.push(Span {
            path: path.to_path_buf(),
            start,
            end: segment.end,
        });
        for step in segment.starts {
            self.tags.values_mut().for_each(|t| t.purge_from(step));
        }
        for index in segment.series {
            self.tags
                .entry(index.tag.clone())
                .or_insert_with(|| TagIndex {
                    rows: StepIndex {
                        tag: index.tag.clone(),
                        ..Default::default()
                    },
                    ..Default::default()
                })
                .extend(index, number);
        }
        self.version += 1;
        true
    }

    /// The buckets (flattened (left, right, count) rows) of `tag` at `step`, read
    /// again from the segment that holds them; `None` if the run has no such step.
    pub fn buckets(&mut self, tag: &str, step: i64) -> Option<Vec<f64>> {
        let index = self.tags.get(tag)?;
        let position = index.rows.steps.binary_search(&step).ok()?;
        let series = self.segment(index.segments[position])?.get(tag)?;
        let found = series.steps.binary_search(&step).ok()?;
        Some(series.step_buckets(found).to_vec())
    }

    /// Every tag's series in segment `number`, decoded again unless cached.
    fn segment(&mut self, number: usize) -> Option<&BTreeMap<String, Series>> {
        if let Some(at) = self.cache.iter().position(|(n, _)| *n == number) {
            let hit = self.cache.remove(at).expect("found above");
            self.cache.push_back(hit);
        } else {
            let span = self.spans.get(number)?.clone();
            let mut plugins = self.plugins.clone();
            let read = read_segment(
                &self.name,
                &span.path,
                span.start,
                span.end - span.start,
                &mut plugins,
                None,
            );
            let by_tag = read
                .series
                .into_iter()
                .map(|s| (s.tag.clone(), s))
                .collect();
            self.cache.push_back((number, by_tag));
            if self.cache.len() > CACHED_SEGMENTS {
                self.cache.pop_front();
            }
        }
        self.cache.back().map(|(_, by_tag)| by_tag)
    }
}

/// Reads what was appended to `files` since the last read, a segment of about
/// `max_bytes` at a time, for about `budget`: past it, reading stops as soon as the
/// run has some histograms and a file has more to read, so a page can show a
/// run's first steps while the rest is read. A budget too long to reach never ends.
///
/// The loader is shared with threads that look at its index meanwhile: its lock
/// is held to pick and to record each segment, not while decoding it. Reads of
/// one loader must not overlap; callers keep one reader at a time.
pub fn read(
    loader: &Mutex<RunLoader>,
    files: &[PathBuf],
    max_bytes: u64,
    budget: Duration,
) -> Progress {
    let deadline = Instant::now().checked_add(budget);
    let lock = || {
        loader
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    };
    let name = lock().name.clone();
    let mut done: Vec<&Path> = Vec::new();
    loop {
        let (path, start, mut plugins) = {
            let run = lock();
            let Some((path, start)) = run.next_read(files, &done) else {
                return Progress::CaughtUp;
            };
            (path, start, run.plugins())
        };
        let segment = index_segment(&name, path, start, max_bytes, &mut plugins);
        let mut run = lock();
        if !run.apply(path, start, segment, plugins) {
            // Only a record still being written is left in this file.
            done.push(path);
            continue;
        }
        if deadline.is_some_and(|d| Instant::now() > d) && !run.tags.is_empty() {
            return match run.next_read(files, &done) {
                Some(_) => Progress::Behind,
                None => Progress::CaughtUp,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::test_events::{legacy_histogram, restart};

    fn legacy_event(step: i64, count: f64) -> Vec<u8> {
        legacy_histogram("h", step, &[count])
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("histoscope-loader-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn far() -> Duration {
        Duration::from_secs(60)
    }

    #[test]
    fn a_growing_file_is_read_from_its_offset_and_restarts_purge_across_files() {
        let dir = temp_dir("grow");
        let first = dir.join("events.out.tfevents.1");
        let second = dir.join("events.out.tfevents.2");
        fs::write(
            &first,
            (0..4)
                .flat_map(|s| legacy_event(s, 1.0))
                .collect::<Vec<_>>(),
        )
        .unwrap();
        let files = vec![first.clone(), second.clone()];
        let shared = Mutex::new(RunLoader::new("r"));
        assert_eq!(read(&shared, &files, 1 << 20, far()), Progress::CaughtUp);
        assert_eq!(
            shared.lock().unwrap().tag("h").unwrap().rows.steps,
            vec![0, 1, 2, 3]
        );
        assert_eq!(shared.lock().unwrap().tag("h").unwrap().generation, 0);
        let bytes = [restart(2), legacy_event(2, 5.0)].concat();
        fs::write(&second, bytes).unwrap();
        assert_eq!(read(&shared, &files, 1 << 20, far()), Progress::CaughtUp);
        let mut run = shared.into_inner().unwrap();
        let index = run.tag("h").unwrap();
        assert_eq!(index.rows.steps, vec![0, 1, 2]);
        assert_eq!(index.generation, 1);
        assert_eq!(index.segments, vec![0, 0, 1]);
        assert_eq!(run.buckets("h", 2), Some(vec![0.0, 1.0, 5.0]));
        assert_eq!(run.buckets("h", 1), Some(vec![0.0, 1.0, 1.0]));
        assert_eq!(run.buckets("h", 3), None);
        assert_eq!(run.offsets()[&second], fs::metadata(&second).unwrap().len());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_record_still_being_written_ends_the_read_and_is_read_once_whole() {
        let dir = temp_dir("tail");
        let path = dir.join("events.out.tfevents.1");
        let whole: Vec<u8> = (0..3).flat_map(|s| legacy_event(s, 1.0)).collect();
        let cut = whole.len() - 5;
        fs::write(&path, &whole[..cut]).unwrap();
        let files = vec![path.clone()];
        let shared = Mutex::new(RunLoader::new("r"));
        assert_eq!(read(&shared, &files, 1 << 20, far()), Progress::CaughtUp);
        assert_eq!(
            shared.lock().unwrap().tag("h").unwrap().rows.steps,
            vec![0, 1]
        );
        fs::write(&path, &whole).unwrap();
        read(&shared, &files, 1 << 20, far());
        let run = shared.into_inner().unwrap();
        assert_eq!(run.tag("h").unwrap().rows.steps, vec![0, 1, 2]);
        assert_eq!(run.segment_count(), 2);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn past_the_deadline_a_run_with_histograms_stops_behind() {
        let dir = temp_dir("deadline");
        let path = dir.join("events.out.tfevents.1");
        let bytes: Vec<u8> = (0..10).flat_map(|s| legacy_event(s, 1.0)).collect();
        let record = (bytes.len() / 10) as u64;
        fs::write(&path, &bytes).unwrap();
        let files = vec![path];
        let shared = Mutex::new(RunLoader::new("r"));
        assert_eq!(
            read(&shared, &files, record, Duration::ZERO),
            Progress::Behind
        );
        assert_eq!(shared.lock().unwrap().tag("h").unwrap().len(), 1);
        // A budget too long for a deadline to be reached: read to the end.
        assert_eq!(
            read(&shared, &files, record, Duration::MAX),
            Progress::CaughtUp
        );
        let run = shared.into_inner().unwrap();
        assert_eq!(run.tag("h").unwrap().len(), 10);
        assert_eq!(run.tag("h").unwrap().slice(8, 99).rows.steps, vec![8, 9]);
        fs::remove_dir_all(&dir).unwrap();
    }
}
