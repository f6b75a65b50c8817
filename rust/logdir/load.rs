//! A log directory: its runs, their events files read in parallel, merged into one series per tag.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::bins::chart::{charts, Chart};
use crate::histograms::series::Series;
use crate::logdir::discover::{qualified_runs, LogdirError, RunFiles};
use crate::logdir::evidence::RunEvidence;
use crate::logdir::merge::MergedRun;
use crate::logdir::run::{LoadedRun, Reading};
use crate::logdir::run_parts::{assemble_run, RunPart};
use crate::logdir::storage::{with_parallel_reads, Dir};
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

/// The log directories to read: one, or several `(name, dir)` pairs whose runs are
/// named `name/run` (see [`discover_several`]); each on the disk or in a store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogdirSource {
    One(Dir),
    Several(Vec<(String, Dir)>),
}

impl LogdirSource {
    /// One log directory (or events file) on the local disk.
    pub fn local(path: impl Into<PathBuf>) -> Self {
        LogdirSource::One(Dir::local(path))
    }

    /// Finds the runs of the log directory, or of all of them as one, sorted by name.
    pub fn discover(&self) -> Result<Vec<RunFiles>, LogdirError> {
        match self {
            LogdirSource::One(dir) => dir.discover(),
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

/// Reads the selected runs of the local `logdir`, every events file on its own core.
pub fn load_logdir(logdir: &Path, selection: &Selection) -> Result<Logdir, LogdirError> {
    LogdirSource::local(logdir).load(selection)
}

/// The runs of several log directories as one: each `(name, dir)` names its runs
/// `name/run`, and its root run `name`, so runs of different directories never
/// merge. Sorted by name.
fn discover_several(logdirs: &[(String, Dir)]) -> Result<Vec<RunFiles>, LogdirError> {
    let mut found = Vec::new();
    for (name, dir) in logdirs {
        found.extend(qualified_runs(dir.discover()?, Some(name)));
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

/// Reads `runs`, in their order, their events files in parallel: one per core on
/// disk, as many at once as a store asks for when any run is in one.
pub fn read_runs(
    runs: &[&RunFiles],
    tags: Option<&HashSet<String>>,
    reading: Reading,
) -> Vec<LoadedRun> {
    // A run of one file (the usual case) is decoded straight into its series;
    // a run of several is read file by file in parallel, then replayed in order.
    let jobs: Vec<(usize, usize)> = runs
        .iter()
        .enumerate()
        .flat_map(|(i, r)| (0..r.files.len()).map(move |j| (i, j)))
        .collect();
    let width = runs
        .iter()
        .map(|r| r.storage.parallel_reads())
        .max()
        .unwrap_or(1);
    let parts: Vec<(usize, RunPart)> = with_parallel_reads(width, || {
        jobs.par_iter()
            .map(|&(i, j)| (i, runs[i].read_part(j, tags, reading)))
            .collect()
    });
    let mut per_run: Vec<Vec<RunPart>> = runs.iter().map(|_| Vec::new()).collect();
    for (i, part) in parts {
        per_run[i].push(part);
    }
    runs.iter()
        .zip(per_run)
        .map(|(run, parts)| assemble_run(&run.name, parts, reading))
        .collect()
}

impl Logdir {
    /// Adds a run's merged series and reports, the run itself already listed in `runs`.
    pub fn add(&mut self, run: &str, merged: MergedRun) {
        self.series.extend(merged.series);
        self.reports.extend(merged.reports);
        self.superseded.insert(run.to_owned(), merged.superseded);
    }
}

/// A log directory's histograms as charts, beside what reading it found.
#[derive(Debug, Default)]
pub struct LogdirCharts {
    /// Every run found, with or without histograms, sorted by name.
    pub runs: Vec<String>,
    /// One chart per run and tag, by run, then tag.
    pub charts: Vec<Chart>,
    /// One report per file read, in run and file order.
    pub reports: Vec<FileReport>,
    /// Per run read, how many histogram values a restart dropped or logged again.
    pub superseded: BTreeMap<String, usize>,
}

/// Every series of `logdir` as a chart (see [`charts`]); its series are used up.
pub fn logdir_charts(logdir: Logdir, bins: usize, max_steps: Option<usize>) -> LogdirCharts {
    let Logdir {
        runs,
        series,
        reports,
        superseded,
        ..
    } = logdir;
    LogdirCharts {
        charts: charts(&series, bins, max_steps),
        runs,
        reports,
        superseded,
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use crate::histograms::stats::Stats;

    #[test]
    fn several_logdirs_name_runs_by_their_directory() {
        let root = std::env::temp_dir().join(format!("histoscope-several-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        for dir in ["one/train", "two"] {
            fs::create_dir_all(root.join(dir)).unwrap();
        }
        fs::write(root.join("one/train/events.out.tfevents.1"), b"").unwrap();
        fs::write(root.join("two/events.out.tfevents.1"), b"").unwrap();
        let logdirs = LogdirSource::Several(vec![
            ("b".to_owned(), Dir::local(root.join("one"))),
            ("a".to_owned(), Dir::local(root.join("two"))),
        ]);
        let all = logdirs.load(&Selection::default()).unwrap();
        assert_eq!(all.runs, vec!["a", "b/train"]);
        let one = LogdirSource::local(root.join("one"));
        assert_eq!(one.load(&Selection::default()).unwrap().runs, vec!["train"]);
        assert_eq!(all.reports.len(), 2);
        let selection = Selection {
            runs: Some(["b/train".to_owned()].into()),
            tags: None,
        };
        let chosen = logdirs.load(&selection).unwrap();
        assert_eq!(chosen.reports.len(), 1);
        assert!(chosen.reports[0]
            .path
            .ends_with("one/train/events.out.tfevents.1"));
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_logdirs_series_become_charts_beside_its_runs_and_reports() {
        let mut series = Series::new("r", "h");
        for step in 0..5 {
            series.push_rows(step, step as f64, &[0.0, 2.0, 4.0], Stats::MISSING);
        }
        let logdir = Logdir {
            runs: vec!["empty".into(), "r".into()],
            series: vec![series],
            reports: vec![FileReport::new(Path::new("r/events"))],
            superseded: [("r".to_owned(), 2)].into(),
            ..Default::default()
        };
        let charted = logdir_charts(logdir, 2, Some(3));
        assert_eq!(charted.runs, vec!["empty", "r"]);
        assert_eq!((charted.reports.len(), charted.superseded["r"]), (1, 2));
        assert_eq!(charted.charts[0].steps, vec![0, 2, 4]);
    }
}
