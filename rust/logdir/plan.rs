//! The restart rule over a run's files, as a plan of which entries survive.
//!
//! A step that goes back, or a `SessionLog.START`, drops a run's values from
//! that step on: the run restarted from a checkpoint and the newer writer's
//! values win, as in TensorBoard's data server. Restarts in a later file can
//! drop points of an earlier one, so no file's points are final before every
//! file of its run has been seen. [`plan_run`] replays only the tags, steps
//! and restarts ([`Skeleton`]s, no buckets) and says which entries survive, so
//! [`merge_run`](crate::logdir::merge::merge_run) and a reader that goes one file at
//! a time (export, dask) share one rule.

use std::collections::{BTreeMap, HashMap};

use thiserror::Error;

use crate::read::event_file::{Entry, FileContents, HISTOGRAM_PLUGIN};

/// What the restart rule needs of one file: tags, steps, restarts and plugins.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Skeleton {
    pub entries: Vec<Mark>,
    /// Each tag's plugin, from the first value of it in the file that named one.
    pub plugins: HashMap<String, String>,
}

/// One entry of a file, without its buckets.
#[derive(Debug, Clone, PartialEq)]
pub enum Mark {
    /// A histogram value; `confirmed` as in [`Entry::Histogram`].
    Histogram {
        tag: String,
        step: i64,
        confirmed: bool,
    },
    /// A `SessionLog.START` at this step.
    Start { step: i64 },
}

impl From<&FileContents> for Skeleton {
    fn from(file: &FileContents) -> Self {
        let entries = file
            .entries
            .iter()
            .map(|entry| match entry {
                Entry::Histogram {
                    tag,
                    point,
                    confirmed,
                } => Mark::Histogram {
                    tag: tag.clone(),
                    step: point.step,
                    confirmed: *confirmed,
                },
                Entry::Start { step } => Mark::Start { step: *step },
            })
            .collect();
        Skeleton {
            entries,
            plugins: file.plugins.clone(),
        }
    }
}

/// Which entries of each of a run's files (in order) make up its series.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunPlan {
    /// One flag per entry of each file: whether its value survives the run's restarts.
    pub keep: Vec<Vec<bool>>,
    /// How many histogram values a later restart dropped or logged again.
    pub superseded: usize,
}

/// Why a plan cannot say what a file keeps.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum PlanError {
    #[error("the plan has no file {0}")]
    NoFile(usize),
}

/// What one file of a planned run keeps of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileShare<'a> {
    /// Whether each entry of the file survives the run's restarts.
    pub keep: &'a [bool],
    /// Whether it is the run's last file, the only one a writer may still be writing.
    pub newest: bool,
}

impl RunPlan {
    /// What file `index` (in the order planned) keeps of the run.
    pub fn share(&self, index: usize) -> Result<FileShare<'_>, PlanError> {
        let keep = self.keep.get(index).ok_or(PlanError::NoFile(index))?;
        Ok(FileShare {
            keep,
            newest: index + 1 == self.keep.len(),
        })
    }
}

/// Gathers the [`Skeleton`]s of a run's files one at a time, so that each file's
/// buckets can be freed as soon as it is added, for the plan of the whole run.
#[derive(Debug, Default)]
pub struct RunPlanner {
    skeletons: Vec<Skeleton>,
    /// Where the pieces of the file being added begin.
    file_start: usize,
}

impl RunPlanner {
    /// Adds the run's next file.
    pub fn add(&mut self, file: &FileContents) {
        self.add_piece(file, false);
    }

    /// Adds the next piece of the run's files (see
    /// [`FilePieces`](crate::read::file_pieces::FilePieces)); `continues` when it
    /// goes on the file of the piece before. Each piece is planned as a file of its
    /// own, and the plugins any piece names count from the file's first piece on,
    /// as they do for the whole file.
    pub fn add_piece(&mut self, piece: &FileContents, continues: bool) {
        if !continues || self.skeletons.is_empty() {
            self.file_start = self.skeletons.len();
        }
        let first = self.skeletons.get_mut(self.file_start);
        if let Some(first) = first {
            for (tag, plugin) in &piece.plugins {
                first
                    .plugins
                    .entry(tag.clone())
                    .or_insert_with(|| plugin.clone());
            }
        }
        self.skeletons.push(Skeleton::from(piece));
    }

    /// The plan of the files added, in the order added; the planner starts again empty.
    pub fn finish(&mut self) -> RunPlan {
        self.file_start = 0;
        plan_run(&std::mem::take(&mut self.skeletons))
    }
}

/// Replays a run's files in order under the restart rule.
pub fn plan_run(files: &[Skeleton]) -> RunPlan {
    let mut plugins: HashMap<&str, &str> = HashMap::new();
    // Per tag, the surviving (step, file, entry), steps strictly increasing.
    let mut alive: BTreeMap<&str, Vec<(i64, usize, usize)>> = BTreeMap::new();
    let mut superseded = 0;
    for (i, file) in files.iter().enumerate() {
        for (tag, plugin) in &file.plugins {
            plugins.entry(tag).or_insert(plugin);
        }
        for (j, mark) in file.entries.iter().enumerate() {
            match mark {
                Mark::Start { step } => {
                    superseded += alive.values_mut().map(|p| purge(p, *step)).sum::<usize>();
                }
                Mark::Histogram {
                    tag,
                    step,
                    confirmed,
                } => {
                    if *confirmed || plugins.get(tag.as_str()) == Some(&HISTOGRAM_PLUGIN) {
                        let points = alive.entry(tag).or_default();
                        superseded += purge(points, *step);
                        points.push((*step, i, j));
                    }
                }
            }
        }
    }
    let mut keep: Vec<Vec<bool>> = files.iter().map(|f| vec![false; f.entries.len()]).collect();
    for &(_, i, j) in alive.values().flatten() {
        keep[i][j] = true;
    }
    RunPlan { keep, superseded }
}

/// Drops the points at `step` or later; returns how many.
fn purge(points: &mut Vec<(i64, usize, usize)>, step: i64) -> usize {
    let keep = points.partition_point(|&(s, _, _)| s < step);
    let dropped = points.len() - keep;
    points.truncate(keep);
    dropped
}

/// Keeps only the entries of `file` that `keep` marks: merged alone, the file
/// then gives exactly its share of its run. Entries past the end of `keep` (a
/// file that grew since it was planned) are dropped.
pub fn keep_entries(file: &mut FileContents, keep: &[bool]) {
    let entries = std::mem::take(&mut file.entries);
    file.entries = entries
        .into_iter()
        .zip(keep)
        .filter_map(|(entry, &kept)| match entry {
            // Already decided against the whole run: no more plugin or restart decisions.
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

    fn histogram(tag: &str, step: i64) -> Mark {
        Mark::Histogram {
            tag: tag.into(),
            step,
            confirmed: true,
        }
    }

    fn skeleton(entries: Vec<Mark>) -> Skeleton {
        Skeleton {
            entries,
            ..Default::default()
        }
    }

    #[test]
    fn a_step_going_back_supersedes_the_older_values_from_there_on() {
        let first = skeleton((0..5).map(|s| histogram("h", s)).collect());
        let second = skeleton((3..7).map(|s| histogram("h", s)).collect());
        let plan = plan_run(&[first, second]);
        assert_eq!(
            plan.keep,
            vec![
                vec![true, true, true, false, false],
                vec![true, true, true, true]
            ]
        );
        assert_eq!(plan.superseded, 2);
    }

    #[test]
    fn a_session_start_purges_every_tag() {
        let plan = plan_run(&[skeleton(vec![
            histogram("a", 0),
            histogram("b", 0),
            histogram("a", 5),
            histogram("b", 6),
            Mark::Start { step: 5 },
            histogram("a", 7),
        ])]);
        assert_eq!(plan.keep, vec![vec![true, true, false, false, false, true]]);
        assert_eq!(plan.superseded, 2);
    }

    #[test]
    fn unconfirmed_values_count_only_under_histogram_metadata_from_any_earlier_file() {
        let unconfirmed = |tag: &str| Mark::Histogram {
            tag: tag.into(),
            step: 1,
            confirmed: false,
        };
        let mut first = skeleton(vec![histogram("h", 0)]);
        first.plugins.insert("h".into(), HISTOGRAM_PLUGIN.into());
        first.plugins.insert("s".into(), "scalars".into());
        let second = skeleton(vec![unconfirmed("h"), unconfirmed("s"), unconfirmed("x")]);
        let plan = plan_run(&[first, second]);
        assert_eq!(plan.keep, vec![vec![true], vec![true, false, false]]);
        assert_eq!(plan.superseded, 0);
    }

    #[test]
    fn a_planner_fed_file_by_file_plans_as_the_whole_run() {
        let histogram_file = |steps: std::ops::Range<i64>| FileContents {
            entries: steps
                .map(|step| Entry::Histogram {
                    tag: "h".into(),
                    point: crate::read::event_file::Point {
                        step,
                        wall_time: 0.0,
                        buckets: vec![],
                        stats: crate::histograms::stats::Stats::MISSING,
                    },
                    confirmed: true,
                })
                .collect(),
            ..Default::default()
        };
        let files = [histogram_file(0..5), histogram_file(3..7)];
        let mut planner = RunPlanner::default();
        files.iter().for_each(|f| planner.add(f));
        let whole: Vec<Skeleton> = files.iter().map(Skeleton::from).collect();
        let plan = planner.finish();
        assert_eq!(plan, plan_run(&whole));
        assert_eq!(planner.finish(), RunPlan::default());
        assert_eq!(
            plan.share(0),
            Ok(FileShare {
                keep: &[true, true, true, false, false],
                newest: false
            })
        );
        assert!(plan.share(1).unwrap().newest);
        assert_eq!(
            plan.share(2).unwrap_err().to_string(),
            "the plan has no file 2"
        );
    }
}
