//! A log directory: its runs, their events files read in parallel, merged into one series per tag.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use thiserror::Error;

use crate::data_compat::Stats;
use crate::event_file::{read_event_file, Entry, FileContents, Point, HISTOGRAM_PLUGIN};
use crate::report::FileReport;

/// Why a log directory could not be read at all.
#[derive(Debug, Error)]
pub enum LogdirError {
    #[error("log directory not found: {0}")]
    NotFound(PathBuf),
    #[error("not a directory: {0}")]
    NotADirectory(PathBuf),
    #[error("cannot list {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

/// A run: a directory holding events files, named by its path relative to the log directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFiles {
    pub name: String,
    pub files: Vec<PathBuf>,
}

/// Every step of one tag of one run, steps strictly increasing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Series {
    pub run: String,
    pub tag: String,
    pub steps: Vec<i64>,
    pub wall_times: Vec<f64>,
    /// Buckets of every step, flattened as (left, right, count) rows.
    pub buckets: Vec<f64>,
    /// Step `i` holds rows `offsets[i]..offsets[i + 1]`.
    pub offsets: Vec<usize>,
    pub stats: Vec<Stats>,
}

impl Series {
    fn new(run: &str, tag: &str) -> Self {
        Series {
            run: run.to_owned(),
            tag: tag.to_owned(),
            offsets: vec![0],
            ..Default::default()
        }
    }

    /// The buckets of step `i`, three values per bucket.
    pub fn step_buckets(&self, i: usize) -> &[f64] {
        &self.buckets[3 * self.offsets[i]..3 * self.offsets[i + 1]]
    }

    pub fn len(&self) -> usize {
        self.steps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Appends a point, first dropping every point at its step or later: a step
    /// that goes back means training restarted from a checkpoint, and the newer
    /// writer's values win, as in TensorBoard's data server.
    fn push(&mut self, point: Point) {
        self.purge_from(point.step);
        self.steps.push(point.step);
        self.wall_times.push(point.wall_time);
        self.buckets.extend_from_slice(&point.buckets);
        self.offsets.push(self.buckets.len() / 3);
        self.stats.push(point.stats);
    }

    fn purge_from(&mut self, step: i64) {
        let keep = self.steps.partition_point(|&s| s < step);
        if keep == self.steps.len() {
            return;
        }
        self.steps.truncate(keep);
        self.wall_times.truncate(keep);
        self.stats.truncate(keep);
        self.offsets.truncate(keep + 1);
        self.buckets.truncate(3 * self.offsets[keep]);
    }
}

/// Which runs and tags to read; `None` reads all.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub runs: Option<HashSet<String>>,
    pub tags: Option<HashSet<String>>,
}

/// What a log directory held.
#[derive(Debug, Default)]
pub struct Logdir {
    /// Every run found, with or without histograms, sorted by name.
    pub runs: Vec<String>,
    /// One series per run and histogram tag, sorted by run, then tag.
    pub series: Vec<Series>,
    /// One report per file read, in run and file order.
    pub reports: Vec<FileReport>,
}

/// Finds the runs under `logdir`, the root included, each with its events files in name order.
pub fn discover_runs(logdir: &Path) -> Result<Vec<RunFiles>, LogdirError> {
    let meta = fs::metadata(logdir).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => LogdirError::NotFound(logdir.to_path_buf()),
        _ => LogdirError::Io {
            path: logdir.to_path_buf(),
            source: e,
        },
    })?;
    if !meta.is_dir() {
        return Err(LogdirError::NotADirectory(logdir.to_path_buf()));
    }
    let mut runs = Vec::new();
    walk(logdir, logdir, &mut runs)?;
    runs.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(runs)
}

fn walk(root: &Path, dir: &Path, runs: &mut Vec<RunFiles>) -> Result<(), LogdirError> {
    let io_error = |source| LogdirError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut files = Vec::new();
    let mut subdirs = Vec::new();
    for entry in fs::read_dir(dir).map_err(io_error)? {
        let entry = entry.map_err(io_error)?;
        // Like os.walk in TensorBoard, symlinked directories are not followed (no cycles).
        let kind = entry.file_type().map_err(io_error)?;
        let path = entry.path();
        if kind.is_dir() {
            subdirs.push(path);
        } else if entry.file_name().to_string_lossy().contains("tfevents") && path.is_file() {
            files.push(path);
        }
    }
    if !files.is_empty() {
        files.sort();
        runs.push(RunFiles {
            name: run_name(root, dir),
            files,
        });
    }
    subdirs.sort();
    for sub in subdirs {
        walk(root, &sub, runs)?;
    }
    Ok(())
}

fn run_name(root: &Path, dir: &Path) -> String {
    let relative = dir.strip_prefix(root).unwrap_or(dir);
    let parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.is_empty() {
        ".".to_owned()
    } else {
        parts.join("/")
    }
}

/// Reads the selected runs of `logdir`, every events file on its own core.
pub fn load_logdir(logdir: &Path, selection: &Selection) -> Result<Logdir, LogdirError> {
    let found = discover_runs(logdir)?;
    let runs: Vec<String> = found.iter().map(|r| r.name.clone()).collect();
    let chosen: Vec<&RunFiles> = found
        .iter()
        .filter(|r| {
            selection
                .runs
                .as_ref()
                .is_none_or(|wanted| wanted.contains(&r.name))
        })
        .collect();
    let jobs: Vec<(usize, &Path)> = chosen
        .iter()
        .enumerate()
        .flat_map(|(i, r)| r.files.iter().map(move |f| (i, f.as_path())))
        .collect();
    let tags = selection.tags.as_ref();
    let contents: Vec<(usize, FileContents)> = jobs
        .par_iter()
        .map(|&(i, path)| (i, read_event_file(path, tags)))
        .collect();
    let mut per_run: Vec<Vec<FileContents>> = chosen.iter().map(|_| Vec::new()).collect();
    for (i, file) in contents {
        per_run[i].push(file);
    }
    let mut out = Logdir {
        runs,
        ..Default::default()
    };
    for (run, files) in chosen.iter().zip(per_run) {
        let (series, reports) = merge_run(&run.name, files);
        out.series.extend(series);
        out.reports.extend(reports);
    }
    Ok(out)
}

/// Replays one run's files in order into one series per histogram tag.
pub fn merge_run(run: &str, files: Vec<FileContents>) -> (Vec<Series>, Vec<FileReport>) {
    let mut plugins: HashMap<String, String> = HashMap::new();
    let mut series: BTreeMap<String, Series> = BTreeMap::new();
    let mut reports = Vec::with_capacity(files.len());
    for file in files {
        for (tag, plugin) in file.plugins {
            plugins.entry(tag).or_insert(plugin);
        }
        for entry in file.entries {
            match entry {
                Entry::Start { step } => series.values_mut().for_each(|s| s.purge_from(step)),
                Entry::Histogram {
                    tag,
                    point,
                    confirmed,
                } => {
                    let plugin = plugins.get(&tag).map(String::as_str);
                    if confirmed || plugin == Some(HISTOGRAM_PLUGIN) {
                        series
                            .entry(tag)
                            .or_insert_with_key(|t| Series::new(run, t))
                            .push(point);
                    }
                }
            }
        }
        reports.push(file.report);
    }
    let series = series.into_values().filter(|s| !s.is_empty()).collect();
    (series, reports)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(step: i64, count: f64) -> Point {
        Point {
            step,
            wall_time: step as f64,
            buckets: vec![0.0, 1.0, count],
            stats: Stats::MISSING,
        }
    }

    fn histogram(tag: &str, step: i64, count: f64) -> Entry {
        Entry::Histogram {
            tag: tag.to_owned(),
            point: point(step, count),
            confirmed: true,
        }
    }

    fn file(entries: Vec<Entry>) -> FileContents {
        FileContents {
            entries,
            ..Default::default()
        }
    }

    #[test]
    fn step_going_back_drops_the_older_values_from_there_on() {
        let first = file((0..5).map(|s| histogram("h", s, 1.0)).collect());
        let second = file((3..7).map(|s| histogram("h", s, 2.0)).collect());
        let (series, _) = merge_run("r", vec![first, second]);
        assert_eq!(series[0].steps, vec![0, 1, 2, 3, 4, 5, 6]);
        let counts: Vec<f64> = (0..7).map(|i| series[0].step_buckets(i)[2]).collect();
        assert_eq!(counts, vec![1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0]);
        assert_eq!(series[0].offsets, (0..8).collect::<Vec<_>>());
    }

    #[test]
    fn session_start_purges_every_tag() {
        let entries = vec![
            histogram("a", 0, 1.0),
            histogram("b", 0, 1.0),
            histogram("a", 5, 1.0),
            histogram("b", 6, 1.0),
            Entry::Start { step: 5 },
            histogram("a", 7, 3.0),
        ];
        let (series, _) = merge_run("r", vec![file(entries)]);
        assert_eq!(series[0].steps, vec![0, 7]);
        assert_eq!(series[1].steps, vec![0]);
    }

    #[test]
    fn unconfirmed_tensors_count_only_under_histogram_metadata() {
        let unconfirmed = |tag: &str| Entry::Histogram {
            tag: tag.into(),
            point: point(1, 1.0),
            confirmed: false,
        };
        let mut first = file(vec![histogram("h", 0, 1.0)]);
        first.plugins.insert("h".into(), HISTOGRAM_PLUGIN.into());
        first.plugins.insert("s".into(), "scalars".into());
        let second = file(vec![
            unconfirmed("h"),
            unconfirmed("s"),
            unconfirmed("unknown"),
        ]);
        let (series, _) = merge_run("r", vec![first, second]);
        assert_eq!(series.len(), 1);
        assert_eq!(
            (series[0].tag.as_str(), series[0].steps.clone()),
            ("h", vec![0, 1])
        );
    }

    #[test]
    fn runs_are_directories_with_events_files() {
        let root = std::env::temp_dir().join(format!("histoscope-discover-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        for dir in ["", "a", "a/b/c", "x/y", "empty"] {
            fs::create_dir_all(root.join(dir)).unwrap();
        }
        for f in [
            "events.out.tfevents.2",
            "a/events.out.tfevents.1",
            "a/b/c/x.tfevents.z",
            "x/y/tfevents",
        ] {
            fs::write(root.join(f), b"").unwrap();
        }
        fs::write(root.join("a/notes.txt"), b"").unwrap();
        let runs = discover_runs(&root).unwrap();
        let names: Vec<&str> = runs.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, vec![".", "a", "a/b/c", "x/y"]);
        assert!(matches!(
            discover_runs(&root.join("nope")),
            Err(LogdirError::NotFound(_))
        ));
        let file_path = root.join("a/notes.txt");
        assert!(matches!(
            discover_runs(&file_path),
            Err(LogdirError::NotADirectory(_))
        ));
        fs::remove_dir_all(&root).unwrap();
    }
}
