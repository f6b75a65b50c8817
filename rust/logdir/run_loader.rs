//! A run followed as its files grow, like the data server's `RunLoader`: where each
//! file was read up to, the run's plugin map, restart purges, and an index per tag.
//!
//! Per step only the index stays in memory: step, wall time, statistics,
//! TensorBoard's percentiles, and the segment (stretch of a file) that holds the
//! buckets. A step's buckets are read again from its segment when someone looks
//! at it, and kept in a cache that every loader of a viewer shares under one byte
//! cap (`bucket_cache`), so memory grows neither with the steps nobody looks at
//! nor with the runs looked at.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::histograms::series::Series;
use crate::logdir::bucket_cache::{entry_bytes, ByteLru, SharedBuckets, StepBuckets, StepKey};
use crate::logdir::follow::{read_segment, SegmentIndex, StepIndex};
use crate::read::shared_tags::StepBurst;

/// One tag's buckets at one step, read again.
type TagStep = (String, i64, StepBuckets);

/// Numbers each loader, so that loaders sharing a cache keep apart.
static LOADERS: AtomicU64 = AtomicU64::new(0);

/// Why the buckets of a series indexed earlier cannot be read again.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BucketsError {
    #[error("the events file {path} is gone since it was indexed: its histograms cannot be read")]
    Vanished { path: PathBuf },
    #[error(
        "the events file {path} was cut since it was indexed: it ends at byte {size} now, \
         before the histograms indexed up to byte {end}"
    )]
    Cut { path: PathBuf, size: u64, end: u64 },
    #[error("the events file {path} cannot be read again: {reason}")]
    Unreadable { path: PathBuf, reason: String },
    #[error("the events file {path} was rewritten since it was indexed: it no longer holds step {step} of {tag}")]
    Rewritten {
        path: PathBuf,
        tag: String,
        step: i64,
    },
}

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
#[derive(Debug, Clone, PartialEq)]
struct Span {
    path: PathBuf,
    start: u64,
    end: u64,
    /// The file's step at `start`, where the file writes a tag several times a
    /// step (see [`StepBurst`]): its values are named by position from it again.
    burst: Option<Box<StepBurst>>,
}

/// One run, followed.
#[derive(Debug)]
pub struct RunLoader {
    name: String,
    /// This loader's number in the shared cache's keys.
    number: u64,
    offsets: HashMap<PathBuf, u64>,
    plugins: HashMap<String, String>,
    /// Each file's step at its offset.
    bursts: HashMap<PathBuf, StepBurst>,
    spans: Vec<Span>,
    tags: BTreeMap<String, TagIndex>,
    /// Counts up with every segment applied.
    version: u64,
    /// Buckets read again, shared with the other runs of a viewer under one byte cap.
    cache: SharedBuckets,
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
    /// A loader of the run `name` that keeps the buckets it reads again in `cache`.
    pub fn new(name: &str, cache: SharedBuckets) -> Self {
        RunLoader {
            name: name.to_owned(),
            number: LOADERS.fetch_add(1, Ordering::Relaxed),
            offsets: HashMap::new(),
            plugins: HashMap::new(),
            bursts: HashMap::new(),
            spans: Vec::new(),
            tags: BTreeMap::new(),
            version: 0,
            cache,
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

    /// The step `path` was in at its offset, to read its next segment from.
    pub fn burst(&self, path: &Path) -> StepBurst {
        self.bursts.get(path).cloned().unwrap_or_default()
    }

    /// Records a segment read from `path` at `start`, with the plugin map and the
    /// file's step after it; returns whether it held any whole record.
    pub fn apply(
        &mut self,
        path: &Path,
        start: u64,
        segment: SegmentIndex,
        plugins: HashMap<String, String>,
        burst: StepBurst,
    ) -> bool {
        self.plugins = plugins;
        if segment.end == start {
            return false;
        }
        self.offsets.insert(path.to_path_buf(), segment.end);
        let number = self.spans.len();
        // Only a file with tags kept apart needs its step at each span's start, from
        // the span that found the first of them on: that span may begin inside the
        // burst that shared a tag, before anything was known to be shared.
        let shares = !burst.shared().is_empty();
        let before = self.bursts.insert(path.to_path_buf(), burst);
        let before = before.filter(|_| shares).map(Box::new);
        self.spans.push(Span {
            path: path.to_path_buf(),
            start,
            end: segment.end,
            burst: before,
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

    /// The buckets (flattened (left, right, count) rows) of `tag` at each of `steps`,
    /// `None` for a step the run does not have: from the shared cache, or read again
    /// from the segments that hold them, side by side. A segment read again leaves in
    /// the cache every tag's buckets at the steps asked for, which the next cards ask for.
    pub fn buckets(&self, tag: &str, steps: &[i64]) -> Result<Vec<Option<Vec<f64>>>, BucketsError> {
        let Some(index) = self.tags.get(tag) else {
            return Ok(vec![None; steps.len()]);
        };
        let numbers: Vec<Option<usize>> = steps
            .iter()
            .map(|step| {
                let position = index.rows.steps.binary_search(step).ok()?;
                Some(index.segments[position])
            })
            .collect();
        let found: Vec<Option<StepBuckets>> = {
            let mut cache = self.lock_cache();
            let mut look = |(&step, number): (&i64, &Option<usize>)| {
                cache.get(&(self.number, (*number)?, tag.to_owned(), step))
            };
            steps.iter().zip(&numbers).map(&mut look).collect()
        };
        let mut missing: BTreeMap<usize, Vec<i64>> = BTreeMap::new();
        for ((&step, number), hit) in steps.iter().zip(&numbers).zip(&found) {
            if let (Some(number), None) = (number, hit) {
                missing.entry(*number).or_default().push(step);
            }
        }
        let read: Vec<(usize, Vec<TagStep>)> = missing
            .into_par_iter()
            .map(|(number, wanted)| Ok((number, self.steps_of(number, &wanted)?)))
            .collect::<Result<_, BucketsError>>()?;
        let mut fresh: HashMap<(usize, i64), StepBuckets> = HashMap::new();
        let mut cache = self.lock_cache();
        for (number, entries) in read {
            for (other, step, buckets) in entries {
                if other == tag {
                    fresh.insert((number, step), buckets.clone());
                }
                let bytes = entry_bytes(&other, &buckets);
                cache.insert((self.number, number, other, step), buckets, bytes);
            }
        }
        drop(cache);
        let answer = |(&step, number): (&i64, Option<usize>), hit: Option<StepBuckets>| {
            let Some(number) = number else {
                return Ok(None);
            };
            match hit.or_else(|| fresh.get(&(number, step)).cloned()) {
                Some(buckets) => Ok(Some(buckets.rows())),
                None => Err(BucketsError::Rewritten {
                    path: self.spans[number].path.clone(),
                    tag: tag.to_owned(),
                    step,
                }),
            }
        };
        steps
            .iter()
            .zip(numbers)
            .zip(found)
            .map(|(at, hit)| answer(at, hit))
            .collect()
    }

    fn lock_cache(&self) -> std::sync::MutexGuard<'_, ByteLru<StepKey, StepBuckets>> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every tag's buckets at `wanted` steps in segment `number`, read again; the rest
    /// of the segment is dropped as soon as it is read.
    fn steps_of(&self, number: usize, wanted: &[i64]) -> Result<Vec<TagStep>, BucketsError> {
        let series = reread(&self.name, &self.spans[number], &self.plugins)?;
        let mut out = Vec::new();
        for one in series {
            for &step in wanted {
                if let Ok(at) = one.steps.binary_search(&step) {
                    let buckets = StepBuckets::from_rows(one.step_buckets(at));
                    out.push((one.tag.clone(), step, buckets));
                }
            }
        }
        Ok(out)
    }
}

/// The series of `span` decoded again, or why the file no longer holds what was indexed.
fn reread(
    run: &str,
    span: &Span,
    plugins: &HashMap<String, String>,
) -> Result<Vec<Series>, BucketsError> {
    let path = span.path.clone();
    let size = match fs::metadata(&path) {
        Ok(meta) => meta.len(),
        Err(e) if e.kind() == ErrorKind::NotFound => return Err(BucketsError::Vanished { path }),
        Err(e) => {
            let reason = e.to_string();
            return Err(BucketsError::Unreadable { path, reason });
        }
    };
    if size < span.end {
        let end = span.end;
        return Err(BucketsError::Cut { path, size, end });
    }
    // The plugin map as it stands now names every tag the span's records may leave unnamed.
    let mut plugins = plugins.clone();
    let mut burst = span.burst.as_deref().cloned().unwrap_or_default();
    let read = read_segment(
        run,
        &path,
        span.start,
        span.end - span.start,
        &mut plugins,
        &mut burst,
        None,
    );
    if let Some(reason) = read.report.error {
        return Err(match fs::metadata(&path) {
            Err(e) if e.kind() == ErrorKind::NotFound => BucketsError::Vanished { path },
            _ => BucketsError::Unreadable { path, reason },
        });
    }
    if read.end < span.end {
        let end = span.end;
        return Err(BucketsError::Cut {
            path,
            size: read.end,
            end,
        });
    }
    Ok(read.series)
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
        let (path, start, mut plugins, mut burst) = {
            let run = lock();
            let Some((path, start)) = run.next_read(files, &done) else {
                return Progress::CaughtUp;
            };
            (path, start, run.plugins(), run.burst(path))
        };
        let segment = read_segment(
            &name,
            path,
            start,
            max_bytes,
            &mut plugins,
            &mut burst,
            None,
        )
        .indexed();
        let mut run = lock();
        if !run.apply(path, start, segment, plugins, burst) {
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
    use crate::logdir::bucket_cache::shared_buckets;
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

    fn loader(name: &str) -> RunLoader {
        RunLoader::new(name, shared_buckets(1 << 30))
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
        let shared = Mutex::new(loader("r"));
        assert_eq!(read(&shared, &files, 1 << 20, far()), Progress::CaughtUp);
        assert_eq!(
            shared.lock().unwrap().tag("h").unwrap().rows.steps,
            vec![0, 1, 2, 3]
        );
        assert_eq!(shared.lock().unwrap().tag("h").unwrap().generation, 0);
        let bytes = [restart(2), legacy_event(2, 5.0)].concat();
        fs::write(&second, bytes).unwrap();
        assert_eq!(read(&shared, &files, 1 << 20, far()), Progress::CaughtUp);
        let run = shared.into_inner().unwrap();
        let index = run.tag("h").unwrap();
        assert_eq!(index.rows.steps, vec![0, 1, 2]);
        assert_eq!(index.generation, 1);
        assert_eq!(index.segments, vec![0, 0, 1]);
        assert_eq!(
            run.buckets("h", &[2, 1, 3]),
            Ok(vec![
                Some(vec![0.0, 1.0, 5.0]),
                Some(vec![0.0, 1.0, 1.0]),
                None
            ])
        );
        assert_eq!(run.offsets()[&second], fs::metadata(&second).unwrap().len());
        fs::remove_dir_all(&dir).unwrap();
    }

    /// Found by `restart_tests`: the segment that finds a tag shared begins inside the
    /// burst that shares it, so it is read again from the step the file was in there.
    #[test]
    fn a_segment_that_finds_a_shared_tag_is_read_again_under_the_same_names() {
        let dir = temp_dir("shares");
        let path = dir.join("events.out.tfevents.1");
        let bytes = [
            legacy_event(4, 1.0),
            legacy_event(6, 1.0),
            legacy_event(6, 2.0),
        ];
        fs::write(&path, bytes.concat()).unwrap();
        let shared = Mutex::new(loader("r"));
        read(&shared, std::slice::from_ref(&path), 1, far());
        let run = shared.into_inner().unwrap();
        assert_eq!(run.tags().collect::<Vec<_>>(), vec!["h", "h (2)"]);
        assert_eq!(
            run.buckets("h (2)", &[6]),
            Ok(vec![Some(vec![0.0, 1.0, 2.0])])
        );
        assert_eq!(run.buckets("h", &[6]), Ok(vec![Some(vec![0.0, 1.0, 1.0])]));
        fs::remove_dir_all(&dir).unwrap();
    }

    /// Found by `restart_tests`: a START that drops every step of a tag leaves its index
    /// empty, not gone, so that its new generation tells a page the steps it holds went.
    #[test]
    fn a_restart_that_drops_every_step_of_a_tag_keeps_its_empty_index_a_generation_on() {
        let dir = temp_dir("emptied");
        let path = dir.join("events.out.tfevents.1");
        let files = vec![path.clone()];
        fs::write(&path, legacy_event(1, 1.0)).unwrap();
        let shared = Mutex::new(loader("r"));
        read(&shared, &files, 1 << 20, far());
        fs::write(&path, [legacy_event(1, 1.0), restart(0)].concat()).unwrap();
        read(&shared, &files, 1 << 20, far());
        let run = shared.into_inner().unwrap();
        assert_eq!(run.tags().collect::<Vec<_>>(), vec!["h"]);
        let index = run.tag("h").unwrap();
        assert!(index.is_empty());
        assert_eq!(index.generation, 1);
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
        let shared = Mutex::new(loader("r"));
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
        let shared = Mutex::new(loader("r"));
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

    /// A run of `steps` steps of tag "h", one segment a step, read to its end.
    fn read_run(dir: &Path, name: &str, steps: i64, cache: &SharedBuckets) -> RunLoader {
        let path = dir.join(format!("{name}.tfevents"));
        let bytes: Vec<u8> = (0..steps)
            .flat_map(|s| legacy_event(s, s as f64 + 1.0))
            .collect();
        fs::write(&path, &bytes).unwrap();
        let record = bytes.len() as u64 / steps as u64;
        let shared = Mutex::new(RunLoader::new(name, cache.clone()));
        read(&shared, &[path], record, far());
        shared.into_inner().unwrap()
    }

    #[test]
    fn runs_share_one_cache_under_its_byte_cap() {
        let dir = temp_dir("shared");
        let probe = shared_buckets(u64::MAX);
        read_run(&dir, "probe", 1, &probe)
            .buckets("h", &[0])
            .unwrap();
        let segment = probe.lock().unwrap().used();
        let cache = shared_buckets(3 * segment);
        let runs: Vec<RunLoader> = ["a", "b"]
            .iter()
            .map(|name| read_run(&dir, name, 4, &cache))
            .collect();
        for run in &runs {
            let got = run.buckets("h", &[0, 1, 2, 3]).unwrap();
            let counts: Vec<f64> = got.iter().map(|b| b.as_ref().unwrap()[2]).collect();
            assert_eq!(counts, vec![1.0, 2.0, 3.0, 4.0]);
            let held = cache.lock().unwrap();
            assert!(held.used() <= held.cap());
            assert_eq!(held.len(), 3);
        }
        // Both runs' segments are keyed apart: the last three read are b's.
        assert_eq!(
            runs[1].buckets("h", &[3]).unwrap()[0].as_ref().unwrap()[2],
            4.0
        );
        assert_eq!(
            runs[0].buckets("h", &[3]).unwrap()[0].as_ref().unwrap()[2],
            4.0
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_gone_or_cut_since_it_was_indexed_says_so() {
        let dir = temp_dir("gone");
        let cache = shared_buckets(0); // nothing kept: every look reads the file
        let run = read_run(&dir, "r", 3, &cache);
        let path = dir.join("r.tfevents");
        let size = fs::metadata(&path).unwrap().len();
        assert_eq!(run.buckets("h", &[2]).unwrap()[0].as_ref().unwrap()[2], 3.0);
        let bytes = fs::read(&path).unwrap();
        fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        let cut = run.buckets("h", &[0, 2]).unwrap_err();
        assert_eq!(
            cut,
            BucketsError::Cut {
                path: path.clone(),
                size: size - 3,
                end: size
            }
        );
        assert!(cut.to_string().contains("was cut since it was indexed"));
        assert_eq!(run.buckets("h", &[0]).unwrap()[0].as_ref().unwrap()[2], 1.0);
        fs::remove_file(&path).unwrap();
        let gone = run.buckets("h", &[0]).unwrap_err();
        assert_eq!(gone, BucketsError::Vanished { path: path.clone() });
        assert!(gone.to_string().contains("is gone since it was indexed"));
        // The same length, other steps: the index's step is no longer there.
        let other: Vec<u8> = (10..13).flat_map(|s| legacy_event(s, 1.0)).collect();
        fs::write(&path, other).unwrap();
        assert!(matches!(
            run.buckets("h", &[1]),
            Err(BucketsError::Rewritten { step: 1, .. })
        ));
        fs::remove_dir_all(&dir).unwrap();
    }
}
