//! A run's files replayed in order into one series per histogram tag, under the restart plan.

use std::collections::BTreeMap;

use crate::histograms::series::Series;
use crate::logdir::plan::{keep_entries, plan_run, FileShare, Skeleton};
use crate::read::event_file::{Entry, FileContents};
use crate::read::report::FileReport;

/// One run's series (with their buckets, or their step profiles), the reports of its
/// files, and how many values restarts superseded.
#[derive(Debug, Default)]
pub struct Merged<S> {
    pub series: Vec<S>,
    pub reports: Vec<FileReport>,
    pub superseded: usize,
}

/// One run's series with their buckets.
pub type MergedRun = Merged<Series>;

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

/// One file of a planned run, decoded again, merged alone into exactly its share
/// of the run (export and Dask read a run this way, one file at a time). Its
/// restarts were counted in the plan, so it supersedes nothing; its report is
/// the run's newest only if the file is the run's last.
pub fn merge_share(run: &str, share: &FileShare<'_>, mut file: FileContents) -> MergedRun {
    keep_entries(&mut file, share.keep);
    let mut merged = merge_run(run, vec![file]);
    merged.superseded = 0;
    for report in &mut merged.reports {
        report.newest = share.newest;
    }
    merged
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
    use crate::histograms::stats::Stats;
    use crate::read::event_file::{Point, HISTOGRAM_PLUGIN};

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
        let plan = plan_run(&skeletons);
        assert_eq!(plan.superseded, 3);
        assert_eq!(
            plan.keep,
            vec![
                vec![true, false, true, false, false],
                vec![true, true, false, false, true],
                vec![true, true],
            ]
        );
        let mut pieces: BTreeMap<String, Series> = BTreeMap::new();
        for (index, f) in make().into_iter().enumerate() {
            let share = merge_share("r", &plan.share(index).unwrap(), f);
            assert_eq!(share.superseded, 0);
            assert_eq!(share.reports[0].newest, index == 2);
            for s in share.series {
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
}
