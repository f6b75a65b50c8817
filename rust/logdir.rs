//! A log directory: its runs, their events files read in parallel, merged into one series per tag.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use thiserror::Error;

use crate::data_compat::Stats;
use crate::event_file::{
    read_event_file, read_event_file_into, Entry, FileContents, Point, Sink, HISTOGRAM_PLUGIN,
};
use crate::huge_pages;
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
        self.push_rows(point.step, point.wall_time, &point.buckets, point.stats);
    }

    fn push_rows(&mut self, step: i64, wall_time: f64, buckets: &[f64], stats: Stats) {
        self.purge_from(step);
        self.steps.push(step);
        self.wall_times.push(wall_time);
        let capacity = self.buckets.capacity();
        self.buckets.extend_from_slice(buckets);
        if self.buckets.capacity() != capacity {
            huge_pages::advise(&self.buckets);
        }
        self.offsets.push(self.buckets.len() / 3);
        self.stats.push(stats);
    }

    /// Before the buckets outgrow their buffer, sizes it for the whole file as
    /// projected from the part read (a tenth more, for uneven files): one
    /// allocation, advised onto huge pages before any of it is written.
    fn reserve_projected(&mut self, more: usize, read_fraction: f64) {
        let needed = self.buckets.len() + more;
        if needed <= self.buckets.capacity() || read_fraction < 0.01 {
            return;
        }
        let projected = (needed as f64 / read_fraction * 1.1) as usize;
        self.buckets
            .reserve_exact(projected.max(needed) - self.buckets.len());
        huge_pages::advise(&self.buckets);
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
        found.extend(discover_runs(path)?.into_iter().map(|run| RunFiles {
            name: qualified_run_name(name, &run.name),
            files: run.files,
        }));
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(load_runs(found, selection))
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
    let mut finished: Vec<Option<(Vec<Series>, Vec<FileReport>)>> =
        chosen.iter().map(|_| None).collect();
    for (i, result) in done {
        match result {
            Done::File(file) => per_run[i].push(file),
            Done::Run(series_and_report) => finished[i] = Some(series_and_report),
        }
    }
    let mut out = Logdir {
        runs,
        ..Default::default()
    };
    for ((run, files), finished) in chosen.iter().zip(per_run).zip(finished) {
        let (series, reports) = finished.unwrap_or_else(|| merge_run(&run.name, files));
        out.series.extend(series);
        out.reports.extend(reports);
    }
    out
}

enum Done {
    File(FileContents),
    Run((Vec<Series>, Vec<FileReport>)),
}

/// Reads a run held in one file straight into its series, with no
/// intermediate copy of the buckets: restarts are applied as records arrive.
fn read_single_file_run(
    run: &str,
    path: &Path,
    tags: Option<&HashSet<String>>,
) -> (Vec<Series>, Vec<FileReport>) {
    let mut sink = SeriesSink {
        run,
        series: BTreeMap::new(),
        confirmed: HashSet::new(),
        read_fraction: 0.0,
    };
    let mut plugins = HashMap::new();
    let report = read_event_file_into(path, tags, &mut sink, &mut plugins);
    let SeriesSink {
        series, confirmed, ..
    } = sink;
    let series = series
        .into_values()
        .map(|mut s| {
            // Give back what the projection reserved beyond the end.
            s.buckets.shrink_to_fit();
            s
        })
        .filter(|s| {
            !s.is_empty()
                && (confirmed.contains(&s.tag)
                    || plugins.get(&s.tag).map(String::as_str) == Some(HISTOGRAM_PLUGIN))
        })
        .collect();
    (series, vec![report])
}

/// Histogram values pushed straight into a run's series.
struct SeriesSink<'a> {
    run: &'a str,
    series: BTreeMap<String, Series>,
    /// Tags with at least one value known to be a histogram when it was read.
    confirmed: HashSet<String>,
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
        series.push_rows(step, wall_time, buckets, stats);
        if confirmed && !self.confirmed.contains(tag) {
            self.confirmed.insert(tag.to_owned());
        }
    }

    fn start(&mut self, step: i64) {
        self.series.values_mut().for_each(|s| s.purge_from(step));
    }

    fn progress(&mut self, offset: u64, length: Option<u64>) {
        if let Some(length) = length.filter(|&l| l > 0) {
            self.read_fraction = offset as f64 / length as f64;
        }
    }
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

/// Frees a file's buckets, keeping what [`surviving_entries`] needs: tags, steps, restarts.
pub fn drop_buckets(file: &mut FileContents) {
    for entry in &mut file.entries {
        if let Entry::Histogram { point, .. } = entry {
            point.buckets = Vec::new();
        }
    }
}

/// Which entries of each of a run's files (in order) survive its replay by [`merge_run`].
///
/// This lets a run of several files be read one file at a time with the result of
/// reading it whole: a first pass finds the survivors (the files may have had
/// their buckets dropped), a second reads each file again and passes it through
/// [`keep_entries`]. Restarts in a later file can drop points of an earlier one,
/// so no file's points are final before every file of its run has been seen.
pub fn surviving_entries(files: Vec<FileContents>) -> Vec<Vec<bool>> {
    let mut keep: Vec<Vec<bool>> = files.iter().map(|f| vec![false; f.entries.len()]).collect();
    let mut marked = files;
    for (i, file) in marked.iter_mut().enumerate() {
        for (j, entry) in file.entries.iter_mut().enumerate() {
            if let Entry::Histogram { point, .. } = entry {
                // One bucket carrying where the point came from through the replay.
                point.buckets = vec![i as f64, j as f64, 0.0];
            }
        }
    }
    let (series, _) = merge_run("", marked);
    for s in &series {
        for k in 0..s.len() {
            let origin = s.step_buckets(k);
            keep[origin[0] as usize][origin[1] as usize] = true;
        }
    }
    keep
}

/// Keeps only the entries of `file` that `keep` marks, as found by
/// [`surviving_entries`]: merged alone, the file then gives exactly its share of
/// its run. Entries past the end of `keep` (a file that grew since) are dropped.
pub fn keep_entries(file: &mut FileContents, keep: &[bool]) {
    let entries = std::mem::take(&mut file.entries);
    file.entries = entries
        .into_iter()
        .zip(keep)
        .filter_map(|(entry, &kept)| match entry {
            // Already checked against the whole run: no more plugin or restart decisions.
            Entry::Histogram { tag, point, .. } if kept => Some(Entry::Histogram {
                tag,
                point,
                confirmed: true,
            }),
            _ => None,
        })
        .collect();
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

    #[test]
    fn files_read_one_by_one_through_survivors_equal_the_whole_run() {
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
        let (whole, _) = merge_run("r", make());
        let mut skeletons = make();
        skeletons.iter_mut().for_each(drop_buckets);
        let keep = surviving_entries(skeletons);
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
            for s in merge_run("r", vec![f]).0 {
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
