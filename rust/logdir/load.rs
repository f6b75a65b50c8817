//! A log directory: its runs, their events files read in parallel, merged into one series per tag.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use thiserror::Error;

use crate::histograms::series::Series;
use crate::histograms::stats::Stats;
use crate::logdir::plan::{plan_run, Skeleton};
use crate::read::event_file::{
    read_event_file, read_event_file_into, Entry, FileContents, Sink, HISTOGRAM_PLUGIN,
};
use crate::read::report::FileReport;

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
    /// Per run read, how many histogram values a restart dropped or logged again.
    pub superseded: BTreeMap<String, usize>,
}

/// Finds the runs under `logdir`, the root included, each with its events files in name order.
///
/// A path to one file is read as a log directory holding that file alone: one run, `.`.
pub fn discover_runs(logdir: &Path) -> Result<Vec<RunFiles>, LogdirError> {
    let meta = fs::metadata(logdir).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => LogdirError::NotFound(logdir.to_path_buf()),
        _ => LogdirError::Io {
            path: logdir.to_path_buf(),
            source: e,
        },
    })?;
    if meta.is_file() {
        return Ok(vec![RunFiles {
            name: ".".to_owned(),
            files: vec![logdir.to_path_buf()],
        }]);
    }
    if !meta.is_dir() {
        return Err(LogdirError::NotADirectory(logdir.to_path_buf()));
    }
    let mut listing = Vec::new();
    walk(logdir, &mut listing)?;
    Ok(group_runs(logdir, listing))
}

/// Whether a file's name marks it as an events file, as TensorBoard decides.
pub fn is_events_file(name: &str) -> bool {
    name.contains("tfevents")
}

/// Groups a listing of the events files under `root` into runs: a run is the
/// directory holding them, named by its path relative to `root` (`.` for
/// `root` itself); runs sorted by name, files by path. Local walks and remote
/// listings both go through here, so they name runs alike.
pub fn group_runs(root: &Path, files: Vec<PathBuf>) -> Vec<RunFiles> {
    let mut runs: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for file in files {
        let dir = file.parent().unwrap_or(root);
        runs.entry(run_name(root, dir)).or_default().push(file);
    }
    runs.into_iter()
        .map(|(name, mut files)| {
            files.sort();
            RunFiles { name, files }
        })
        .collect()
}

/// [`group_runs`] of the events files among a listing of every file under `root`.
pub fn group_listing(root: &Path, files: Vec<PathBuf>) -> Vec<RunFiles> {
    let events = files
        .into_iter()
        .filter(|f| {
            f.file_name()
                .is_some_and(|name| is_events_file(&name.to_string_lossy()))
        })
        .collect();
    group_runs(root, events)
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

fn walk(dir: &Path, listing: &mut Vec<PathBuf>) -> Result<(), LogdirError> {
    let io_error = |source| LogdirError::Io {
        path: dir.to_path_buf(),
        source,
    };
    for entry in fs::read_dir(dir).map_err(io_error)? {
        let entry = entry.map_err(io_error)?;
        // Like os.walk in TensorBoard, symlinked directories are not followed (no cycles).
        let kind = entry.file_type().map_err(io_error)?;
        let path = entry.path();
        if kind.is_dir() {
            walk(&path, listing)?;
        } else if is_events_file(&entry.file_name().to_string_lossy()) && path.is_file() {
            listing.push(path);
        }
    }
    Ok(())
}

/// Reads the selected runs of `logdir`, every events file on its own core.
pub fn load_logdir(logdir: &Path, selection: &Selection) -> Result<Logdir, LogdirError> {
    Ok(load_runs(discover_runs(logdir)?, selection))
}

/// Reads the selected runs of several log directories as one, every events file
/// of all of them on its own core. Each `(name, path)` names its runs `name/run`,
/// and its root run `name`, so runs of different directories never merge;
/// `selection.runs` holds such names.
pub fn load_logdirs(
    logdirs: &[(String, PathBuf)],
    selection: &Selection,
) -> Result<Logdir, LogdirError> {
    let mut found = Vec::new();
    for (name, path) in logdirs {
        found.extend(qualified_runs(discover_runs(path)?, name));
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(load_runs(found, selection))
}

/// `runs` of the log directory called `logdir`, named as runs of several log directories.
pub fn qualified_runs(runs: Vec<RunFiles>, logdir: &str) -> Vec<RunFiles> {
    runs.into_iter()
        .map(|run| RunFiles {
            name: qualified_run_name(logdir, &run.name),
            files: run.files,
        })
        .collect()
}

/// The name of run `run` of the log directory called `logdir` among several.
pub fn qualified_run_name(logdir: &str, run: &str) -> String {
    if run == "." {
        logdir.to_owned()
    } else {
        format!("{logdir}/{run}")
    }
}

fn load_runs(found: Vec<RunFiles>, selection: &Selection) -> Logdir {
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
    let tags = selection.tags.as_ref();
    // A run of one file (the usual case) is decoded straight into its series;
    // a run of several is read file by file in parallel, then replayed in order.
    let jobs: Vec<(usize, Option<&Path>)> = chosen
        .iter()
        .enumerate()
        .flat_map(|(i, r)| match r.files.as_slice() {
            [_] => vec![(i, None)],
            files => files.iter().map(|f| (i, Some(f.as_path()))).collect(),
        })
        .collect();
    let done: Vec<(usize, Done)> = jobs
        .par_iter()
        .map(|&(i, file)| match file {
            Some(path) => (i, Done::File(read_event_file(path, tags))),
            None => {
                let run = chosen[i];
                (
                    i,
                    Done::Run(read_single_file_run(&run.name, &run.files[0], tags)),
                )
            }
        })
        .collect();
    let mut per_run: Vec<Vec<FileContents>> = chosen.iter().map(|_| Vec::new()).collect();
    let mut finished: Vec<Option<MergedRun>> = chosen.iter().map(|_| None).collect();
    for (i, result) in done {
        match result {
            Done::File(file) => per_run[i].push(file),
            Done::Run(merged) => finished[i] = Some(merged),
        }
    }
    let mut out = Logdir {
        runs,
        ..Default::default()
    };
    for ((run, files), finished) in chosen.iter().zip(per_run).zip(finished) {
        let merged = finished.unwrap_or_else(|| merge_run(&run.name, files));
        out.add(&run.name, merged);
    }
    out
}

impl Logdir {
    /// Adds a run's merged series and reports, the run itself already listed in `runs`.
    pub fn add(&mut self, run: &str, merged: MergedRun) {
        self.series.extend(merged.series);
        self.reports.extend(merged.reports);
        self.superseded.insert(run.to_owned(), merged.superseded);
    }
}

enum Done {
    File(FileContents),
    Run(MergedRun),
}

/// Reads a run held in one file straight into its series, with no
/// intermediate copy of the buckets: restarts are applied as records arrive.
fn read_single_file_run(run: &str, path: &Path, tags: Option<&HashSet<String>>) -> MergedRun {
    let mut sink = SeriesSink {
        run,
        series: BTreeMap::new(),
        confirmed: HashSet::new(),
        purged: HashMap::new(),
        read_fraction: 0.0,
    };
    let mut plugins = HashMap::new();
    let mut report = read_event_file_into(path, tags, &mut sink, &mut plugins);
    report.newest = true;
    let SeriesSink {
        series,
        confirmed,
        purged,
        ..
    } = sink;
    let is_histogram = |tag: &String| {
        confirmed.contains(tag) || plugins.get(tag).map(String::as_str) == Some(HISTOGRAM_PLUGIN)
    };
    let superseded = purged
        .iter()
        .filter(|(tag, _)| is_histogram(tag))
        .map(|(_, n)| n)
        .sum();
    let series = series
        .into_values()
        .map(|mut s| {
            // Give back what the projection reserved beyond the end.
            s.buckets.shrink_to_fit();
            s
        })
        .filter(|s| !s.is_empty() && is_histogram(&s.tag))
        .collect();
    MergedRun {
        series,
        reports: vec![report],
        superseded,
    }
}

/// Histogram values pushed straight into a run's series.
struct SeriesSink<'a> {
    run: &'a str,
    series: BTreeMap<String, Series>,
    /// Tags with at least one value known to be a histogram when it was read.
    confirmed: HashSet<String>,
    /// Per tag, how many values a restart dropped.
    purged: HashMap<String, usize>,
    /// The fraction of the file read so far, to size each series' buffer once.
    read_fraction: f64,
}

impl Sink for SeriesSink<'_> {
    fn histogram(
        &mut self,
        tag: &str,
        step: i64,
        wall_time: f64,
        buckets: &[f64],
        stats: Stats,
        confirmed: bool,
    ) {
        if !self.series.contains_key(tag) {
            self.series
                .insert(tag.to_owned(), Series::new(self.run, tag));
        }
        let series = self.series.get_mut(tag).expect("inserted above");
        series.reserve_projected(buckets.len(), self.read_fraction);
        let dropped = series.push_rows(step, wall_time, buckets, stats);
        if dropped > 0 {
            *self.purged.entry(tag.to_owned()).or_default() += dropped;
        }
        if confirmed && !self.confirmed.contains(tag) {
            self.confirmed.insert(tag.to_owned());
        }
    }

    fn start(&mut self, step: i64) {
        for series in self.series.values_mut() {
            let dropped = series.purge_from(step);
            if dropped > 0 {
                *self.purged.entry(series.tag.clone()).or_default() += dropped;
            }
        }
    }

    fn progress(&mut self, offset: u64, length: Option<u64>) {
        if let Some(length) = length.filter(|&l| l > 0) {
            self.read_fraction = offset as f64 / length as f64;
        }
    }
}

/// One run's series, the reports of its files, and how many values restarts superseded.
#[derive(Debug, Default)]
pub struct MergedRun {
    pub series: Vec<Series>,
    pub reports: Vec<FileReport>,
    pub superseded: usize,
}

/// Replays one run's files in order into one series per histogram tag, under
/// the restart rule of [`plan_run`].
pub fn merge_run(run: &str, files: Vec<FileContents>) -> MergedRun {
    let skeletons: Vec<Skeleton> = files.iter().map(Skeleton::from).collect();
    let plan = plan_run(&skeletons);
    let mut series: BTreeMap<String, Series> = BTreeMap::new();
    let mut reports = Vec::with_capacity(files.len());
    for (file, keep) in files.into_iter().zip(&plan.keep) {
        for (entry, &kept) in file.entries.into_iter().zip(keep) {
            if let (Entry::Histogram { tag, point, .. }, true) = (entry, kept) {
                series
                    .entry(tag)
                    .or_insert_with_key(|t| Series::new(run, t))
                    .push(point);
            }
        }
        reports.push(file.report);
    }
    mark_newest(&mut reports);
    MergedRun {
        series: series.into_values().collect(),
        reports,
        superseded: plan.superseded,
    }
}

/// Marks the last of a run's reports as its newest file: only there can a cut-off
/// record still be in the writing.
fn mark_newest(reports: &mut [FileReport]) {
    let last = reports.len().saturating_sub(1);
    for (i, report) in reports.iter_mut().enumerate() {
        report.newest = i == last;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logdir::plan::keep_entries;
    use crate::read::event_file::Point;

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
        let series = merge_run("r", vec![first, second]).series;
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
        let series = merge_run("r", vec![file(entries)]).series;
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
        let series = merge_run("r", vec![first, second]).series;
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
        let file_path = root.join("a/events.out.tfevents.1");
        let alone = discover_runs(&file_path).unwrap();
        assert_eq!(
            alone,
            vec![RunFiles {
                name: ".".into(),
                files: vec![file_path]
            }]
        );
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_remote_listing_groups_as_a_walk_does() {
        let listing = [
            "bucket/logs/b/events.out.tfevents.2",
            "bucket/logs/events.out.tfevents.9",
            "bucket/logs/b/events.out.tfevents.1",
            "bucket/logs/b/notes.txt",
            "bucket/logs/a/c/x.tfevents.z",
        ];
        let runs = group_listing(
            Path::new("bucket/logs"),
            listing.iter().map(PathBuf::from).collect(),
        );
        let names: Vec<(&str, usize)> = runs
            .iter()
            .map(|r| (r.name.as_str(), r.files.len()))
            .collect();
        assert_eq!(names, vec![(".", 1), ("a/c", 1), ("b", 2)]);
        assert!(runs[2].files[0].ends_with("events.out.tfevents.1"));
    }

    #[test]
    fn files_read_one_by_one_through_the_plan_equal_the_whole_run() {
        let unconfirmed = |tag: &str, step| Entry::Histogram {
            tag: tag.into(),
            point: point(step, 9.0),
            confirmed: false,
        };
        let make = || {
            let mut first = file(vec![
                histogram("a", 0, 1.0),
                histogram("a", 1, 1.0),
                histogram("b", 0, 1.0),
                histogram("a", 2, 1.0),
                histogram("b", 5, 1.0),
            ]);
            first.plugins.insert("t".into(), HISTOGRAM_PLUGIN.into());
            let second = file(vec![
                histogram("a", 1, 2.0),
                unconfirmed("t", 1),
                unconfirmed("u", 1),
                Entry::Start { step: 4 },
                histogram("b", 6, 2.0),
            ]);
            let third = file(vec![histogram("a", 2, 3.0), histogram("a", 3, 3.0)]);
            vec![first, second, third]
        };
        let whole = merge_run("r", make()).series;
        let skeletons: Vec<Skeleton> = make().iter().map(Skeleton::from).collect();
        let keep = plan_run(&skeletons).keep;
        assert_eq!(
            keep,
            vec![
                vec![true, false, true, false, false],
                vec![true, true, false, false, true],
                vec![true, true],
            ]
        );
        let mut pieces: BTreeMap<String, Series> = BTreeMap::new();
        for (mut f, keep) in make().into_iter().zip(&keep) {
            keep_entries(&mut f, keep);
            for s in merge_run("r", vec![f]).series {
                let whole = pieces
                    .entry(s.tag.clone())
                    .or_insert_with(|| Series::new("r", &s.tag));
                for i in 0..s.len() {
                    whole.push(Point {
                        step: s.steps[i],
                        wall_time: s.wall_times[i],
                        buckets: s.step_buckets(i).to_vec(),
                        stats: s.stats[i],
                    });
                }
            }
        }
        // Stats are all NaN here, which never compare equal: compare the rest.
        let view = |s: &Series| {
            (
                s.tag.clone(),
                s.steps.clone(),
                s.wall_times.clone(),
                s.buckets.clone(),
                s.offsets.clone(),
            )
        };
        let pieces: Vec<_> = pieces.values().map(view).collect();
        assert_eq!(pieces, whole.iter().map(view).collect::<Vec<_>>());
    }

    #[test]
    fn several_logdirs_name_runs_by_their_directory() {
        let root = std::env::temp_dir().join(format!("histoscope-several-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        for dir in ["one/train", "two"] {
            fs::create_dir_all(root.join(dir)).unwrap();
        }
        fs::write(root.join("one/train/events.out.tfevents.1"), b"").unwrap();
        fs::write(root.join("two/events.out.tfevents.1"), b"").unwrap();
        let logdirs = vec![
            ("b".to_owned(), root.join("one")),
            ("a".to_owned(), root.join("two")),
        ];
        let all = load_logdirs(&logdirs, &Selection::default()).unwrap();
        assert_eq!(all.runs, vec!["a", "b/train"]);
        assert_eq!(all.reports.len(), 2);
        let selection = Selection {
            runs: Some(["b/train".to_owned()].into()),
            tags: None,
        };
        let chosen = load_logdirs(&logdirs, &selection).unwrap();
        assert_eq!(chosen.reports.len(), 1);
        assert!(chosen.reports[0]
            .path
            .ends_with("one/train/events.out.tfevents.1"));
        fs::remove_dir_all(&root).unwrap();
    }
}
