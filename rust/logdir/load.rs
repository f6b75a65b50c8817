//! A log directory: its runs, their events files read in parallel, merged into one series per tag.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::histograms::profile::profile;
use crate::histograms::profiled::ProfiledSeries;
use crate::histograms::series::Series;
use crate::logdir::discover::{discover_runs, qualified_runs, LogdirError, RunFiles};
use crate::logdir::evidence::{Evidenced, Mark, RunEvidence};
use crate::logdir::merge::{merge_run, Merged, MergedRun};
use crate::read::event_file::{
    read_event_file_into, Entry, FileContents, PointView, Sink, HISTOGRAM_PLUGIN,
};
use crate::read::report::FileReport;

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
    /// Per run read, its scalars and optimizer, read in the same pass as its histograms.
    pub evidence: BTreeMap<String, RunEvidence>,
}

/// The log directories to read: one path, or several `(name, path)` pairs whose
/// runs are named `name/run` (see [`load_logdirs`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogdirSource {
    One(PathBuf),
    Several(Vec<(String, PathBuf)>),
}

impl LogdirSource {
    /// Finds the runs of the log directory, or of all of them as one, sorted by name.
    pub fn discover(&self) -> Result<Vec<RunFiles>, LogdirError> {
        match self {
            LogdirSource::One(path) => discover_runs(path),
            LogdirSource::Several(logdirs) => discover_several(logdirs),
        }
    }

    /// Reads the selected runs of the log directory, or of all of them as one.
    pub fn load(&self, selection: &Selection) -> Result<Logdir, LogdirError> {
        Ok(load_runs(self.discover()?, selection))
    }
}

impl Selection {
    /// Whether the run named `name` is to be read.
    pub fn wants_run(&self, name: &str) -> bool {
        self.runs
            .as_ref()
            .is_none_or(|wanted| wanted.contains(name))
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
    Ok(load_runs(discover_several(logdirs)?, selection))
}

/// The runs of several log directories, named `name/run`, sorted by name.
fn discover_several(logdirs: &[(String, PathBuf)]) -> Result<Vec<RunFiles>, LogdirError> {
    let mut found = Vec::new();
    for (name, path) in logdirs {
        found.extend(qualified_runs(discover_runs(path)?, Some(name)));
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(found)
}

fn load_runs(found: Vec<RunFiles>, selection: &Selection) -> Logdir {
    let runs: Vec<String> = found.iter().map(|r| r.name.clone()).collect();
    let chosen: Vec<&RunFiles> = found
        .iter()
        .filter(|r| selection.wants_run(&r.name))
        .collect();
    let mut out = Logdir {
        runs,
        ..Default::default()
    };
    for run in read_runs(&chosen, selection.tags.as_ref(), Reading::Series) {
        out.add(&run.name, run.merged);
        out.evidence.insert(run.name, run.evidence);
    }
    out
}

/// One run read: its series, the reports of its files, what restarts
/// superseded, and the scalars and optimizer read in the same pass.
#[derive(Debug, Default)]
pub struct LoadedRun {
    pub name: String,
    /// Its series, buckets and all; empty where read as [`Reading::Profiles`].
    pub merged: MergedRun,
    /// Its series as step profiles, where read as [`Reading::Profiles`].
    pub profiled: Vec<ProfiledSeries>,
    pub evidence: RunEvidence,
}

/// What a run's series are read into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// Every step's buckets, as stored.
    Series,
    /// Every step's profile alone, as diagnosis reads it: a run of one file is
    /// profiled as it is decoded, and never holds its buckets.
    Profiles,
}

/// Reads `runs`, in their order, every events file of all of them on its own core.
pub fn read_runs(
    runs: &[&RunFiles],
    tags: Option<&HashSet<String>>,
    reading: Reading,
) -> Vec<LoadedRun> {
    // A run of one file (the usual case) is decoded straight into its series;
    // a run of several is read file by file in parallel, then replayed in order.
    let jobs: Vec<(usize, Option<&Path>)> = runs
        .iter()
        .enumerate()
        .flat_map(|(i, r)| match r.files.as_slice() {
            [_] => vec![(i, None)],
            files => files.iter().map(|f| (i, Some(f.as_path()))).collect(),
        })
        .collect();
    let done: Vec<(usize, Done, Vec<Mark>)> = jobs
        .par_iter()
        .map(|&(i, file)| match file {
            Some(path) => {
                let (file, marks) = read_file_with_evidence(path, tags);
                (i, Done::File(file), marks)
            }
            None => {
                let run = runs[i];
                let (run, path) = (run.name.as_str(), run.files[0].as_path());
                match reading {
                    Reading::Series => {
                        let (merged, marks) = read_single_file_run::<Series>(run, path, tags);
                        (i, Done::Run(merged), marks)
                    }
                    Reading::Profiles => {
                        let (profiled, marks) = read_single_file_run(run, path, tags);
                        (i, Done::Profiled(profiled), marks)
                    }
                }
            }
        })
        .collect();
    let mut per_run: Vec<Vec<FileContents>> = runs.iter().map(|_| Vec::new()).collect();
    let mut finished: Vec<Option<Done>> = runs.iter().map(|_| None).collect();
    let mut marks: Vec<Vec<Vec<Mark>>> = runs.iter().map(|_| Vec::new()).collect();
    for (i, result, file_marks) in done {
        marks[i].push(file_marks);
        match result {
            Done::File(file) => per_run[i].push(file),
            run => finished[i] = Some(run),
        }
    }
    runs.iter()
        .zip(per_run)
        .zip(finished)
        .zip(marks)
        .map(|(((run, files), finished), marks)| {
            let evidence = RunEvidence::replay(marks.iter().map(Vec::as_slice));
            let (merged, profiled) = match finished {
                Some(Done::Run(merged)) => (merged, Vec::new()),
                Some(Done::Profiled(profiled)) => profiled.into_parts(),
                _ => {
                    let merged = merge_run(&run.name, files);
                    match reading {
                        Reading::Series => (merged, Vec::new()),
                        Reading::Profiles => merged.into_profiled().into_parts(),
                    }
                }
            };
            LoadedRun {
                name: run.name.clone(),
                merged,
                profiled,
                evidence,
            }
        })
        .collect()
}

/// Reads one events file of a run of several, keeping its scalars and notes as marks.
fn read_file_with_evidence(
    path: &Path,
    tags: Option<&HashSet<String>>,
) -> (FileContents, Vec<Mark>) {
    let mut sink = Evidenced::new(Vec::<Entry>::new());
    let mut plugins = HashMap::new();
    let report = read_event_file_into(path, tags, &mut sink, &mut plugins);
    let contents = FileContents {
        entries: sink.inner,
        plugins,
        report,
    };
    (contents, sink.marks)
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
    Profiled(Merged<ProfiledSeries>),
}

/// Reads a run held in one file straight into its series (or their profiles),
/// with no intermediate copy of the buckets: restarts are applied as records
/// arrive. Its scalars and notes come back as marks.
fn read_single_file_run<S: Stepped>(
    run: &str,
    path: &Path,
    tags: Option<&HashSet<String>>,
) -> (Merged<S>, Vec<Mark>) {
    let mut sink = Evidenced::new(SeriesSink::<S> {
        run,
        series: BTreeMap::new(),
        confirmed: HashSet::new(),
        purged: HashMap::new(),
        read_fraction: 0.0,
    });
    let mut plugins = HashMap::new();
    let mut report = read_event_file_into(path, tags, &mut sink, &mut plugins);
    report.newest = true;
    let Evidenced { inner, marks } = sink;
    let SeriesSink {
        series,
        confirmed,
        purged,
        ..
    } = inner;
    let is_histogram = |tag: &String| {
        confirmed.contains(tag) || plugins.get(tag).map(String::as_str) == Some(HISTOGRAM_PLUGIN)
    };
    let superseded = purged
        .iter()
        .filter(|(tag, _)| is_histogram(tag))
        .map(|(_, n)| n)
        .sum();
    let series = series
        .into_iter()
        .filter(|(tag, s)| !s.is_empty() && is_histogram(tag))
        .map(|(_, s)| s.finished())
        .collect();
    let merged = Merged {
        series,
        reports: vec![report],
        superseded,
    };
    (merged, marks)
}

impl Merged<ProfiledSeries> {
    /// The run as [`LoadedRun`] holds it: no series with buckets, and the profiled ones.
    fn into_parts(self) -> (MergedRun, Vec<ProfiledSeries>) {
        let merged = MergedRun {
            series: Vec::new(),
            reports: self.reports,
            superseded: self.superseded,
        };
        (merged, self.series)
    }
}

impl MergedRun {
    /// The run with each series reduced to its step profiles.
    fn into_profiled(self) -> Merged<ProfiledSeries> {
        Merged {
            series: self.series.iter().map(ProfiledSeries::of).collect(),
            reports: self.reports,
            superseded: self.superseded,
        }
    }
}

/// What a run's histogram values are pushed into, tag by tag, under the restart rule.
trait Stepped {
    fn new(run: &str, tag: &str) -> Self;
    /// Appends a value, first dropping the steps at its step or later; returns how many.
    fn push(&mut self, point: PointView<'_>) -> usize;
    /// Drops the steps at `step` or later; returns how many.
    fn purge_from(&mut self, step: i64) -> usize;
    fn is_empty(&self) -> bool;
    /// Sizes buffers for `more` values now, `read_fraction` of the file read.
    fn reserve(&mut self, _more: usize, _read_fraction: f64) {}
    /// The series once the file is read.
    fn finished(self) -> Self;
}

impl Stepped for Series {
    fn new(run: &str, tag: &str) -> Self {
        Series::new(run, tag)
    }

    fn push(&mut self, point: PointView<'_>) -> usize {
        self.push_rows(point.step, point.wall_time, point.buckets, point.stats)
    }

    fn purge_from(&mut self, step: i64) -> usize {
        Series::purge_from(self, step)
    }

    fn is_empty(&self) -> bool {
        Series::is_empty(self)
    }

    fn reserve(&mut self, more: usize, read_fraction: f64) {
        self.reserve_projected(more, read_fraction);
    }

    fn finished(mut self) -> Self {
        // Give back what the projection reserved beyond the end.
        self.buckets.shrink_to_fit();
        self
    }
}

impl Stepped for ProfiledSeries {
    fn new(run: &str, tag: &str) -> Self {
        ProfiledSeries::new(run, tag)
    }

    fn push(&mut self, point: PointView<'_>) -> usize {
        ProfiledSeries::push(self, point.step, profile(point.buckets, &point.stats))
    }

    fn purge_from(&mut self, step: i64) -> usize {
        ProfiledSeries::purge_from(self, step)
    }

    fn is_empty(&self) -> bool {
        ProfiledSeries::is_empty(self)
    }

    fn finished(self) -> Self {
        self
    }
}

/// Histogram values pushed straight into a run's series.
struct SeriesSink<'a, S> {
    run: &'a str,
    series: BTreeMap<String, S>,
    /// Tags with at least one value known to be a histogram when it was read.
    confirmed: HashSet<String>,
    /// Per tag, how many values a restart dropped.
    purged: HashMap<String, usize>,
    /// The fraction of the file read so far, to size each series' buffer once.
    read_fraction: f64,
}

impl<S: Stepped> Sink for SeriesSink<'_, S> {
    fn histogram(&mut self, tag: &str, point: PointView<'_>, confirmed: bool) {
        if !self.series.contains_key(tag) {
            self.series.insert(tag.to_owned(), S::new(self.run, tag));
        }
        let series = self.series.get_mut(tag).expect("inserted above");
        series.reserve(point.buckets.len(), self.read_fraction);
        let dropped = series.push(point);
        if dropped > 0 {
            *self.purged.entry(tag.to_owned()).or_default() += dropped;
        }
        if confirmed && !self.confirmed.contains(tag) {
            self.confirmed.insert(tag.to_owned());
        }
    }

    fn start(&mut self, step: i64) {
        for (tag, series) in self.series.iter_mut() {
            let dropped = series.purge_from(step);
            if dropped > 0 {
                *self.purged.entry(tag.clone()).or_default() += dropped;
            }
        }
    }

    fn progress(&mut self, offset: u64, length: Option<u64>) {
        if let Some(length) = length.filter(|&l| l > 0) {
            self.read_fraction = offset as f64 / length as f64;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

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
        let source = LogdirSource::Several(logdirs.clone());
        assert_eq!(source.load(&Selection::default()).unwrap().runs, all.runs);
        let one = LogdirSource::One(root.join("one"));
        assert_eq!(one.load(&Selection::default()).unwrap().runs, vec!["train"]);
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
