//! A log directory assembled run by run, as each run's files arrive from any source.

use thiserror::Error;

use crate::logdir::load::Logdir;
use crate::logdir::merge::merge_run;
use crate::read::event_file::FileContents;

/// Why a run set cannot take a run or give its runs.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum RunSetError {
    #[error("this run set was already read out")]
    ReadOut,
}

/// The runs of a log directory merged as their files arrive (from object
/// storage, say), then read out once, whole.
#[derive(Debug)]
pub struct RunSet {
    logdir: Option<Logdir>,
}

impl RunSet {
    /// A set for `runs`, the name of every run found, read or not.
    pub fn new(runs: Vec<String>) -> Self {
        RunSet {
            logdir: Some(Logdir {
                runs,
                ..Default::default()
            }),
        }
    }

    /// Merges a run's decoded files, in order, and adds the run.
    pub fn add(&mut self, run: &str, files: Vec<FileContents>) -> Result<(), RunSetError> {
        let logdir = self.logdir.as_mut().ok_or(RunSetError::ReadOut)?;
        logdir.add(run, merge_run(run, files));
        Ok(())
    }

    /// Every run added, as one log directory; the set is used up.
    pub fn take(&mut self) -> Result<Logdir, RunSetError> {
        self.logdir.take().ok_or(RunSetError::ReadOut)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histograms::stats::Stats;
    use crate::read::event_file::{Entry, Point};

    fn file(tag: &str, steps: std::ops::Range<i64>) -> FileContents {
        let entries = steps
            .map(|step| Entry::Histogram {
                tag: tag.into(),
                point: Point {
                    step,
                    wall_time: 0.0,
                    buckets: vec![0.0, 1.0, 1.0],
                    stats: Stats::MISSING,
                },
                confirmed: true,
            })
            .collect();
        FileContents {
            entries,
            ..Default::default()
        }
    }

    #[test]
    fn runs_added_are_read_out_once() {
        let mut set = RunSet::new(vec!["a".into(), "b".into(), "empty".into()]);
        set.add("a", vec![file("h", 0..3), file("h", 2..4)])
            .unwrap();
        set.add("b", vec![file("g", 0..1)]).unwrap();
        let logdir = set.take().unwrap();
        assert_eq!(logdir.runs, vec!["a", "b", "empty"]);
        let steps: Vec<_> = logdir.series.iter().map(|s| s.steps.clone()).collect();
        assert_eq!(steps, vec![vec![0, 1, 2, 3], vec![0]]);
        assert_eq!(logdir.superseded.get("a"), Some(&1));
        assert_eq!(logdir.reports.len(), 3);
        assert_eq!(set.take().unwrap_err(), RunSetError::ReadOut);
        assert_eq!(set.add("c", vec![]), Err(RunSetError::ReadOut));
    }
}
