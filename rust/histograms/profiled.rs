//! One tag of one run reduced to its steps' profiles as it is read: what diagnosis needs of
//! a series, without its buckets.

use crate::histograms::profile::{profile, StepProfile};
use crate::histograms::series::Series;

/// Every step of one tag of one run as a [`StepProfile`], steps strictly increasing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProfiledSeries {
    pub run: String,
    pub tag: String,
    pub steps: Vec<i64>,
    pub profiles: Vec<StepProfile>,
}

impl ProfiledSeries {
    pub fn new(run: &str, tag: &str) -> Self {
        ProfiledSeries {
            run: run.to_owned(),
            tag: tag.to_owned(),
            ..Default::default()
        }
    }

    /// A loaded series' profiles, its buckets left behind.
    pub fn of(series: &Series) -> Self {
        ProfiledSeries {
            run: series.run.clone(),
            tag: series.tag.clone(),
            steps: series.steps.clone(),
            profiles: (0..series.len())
                .map(|i| profile(series.step_buckets(i), &series.stats[i]))
                .collect(),
        }
    }

    /// Appends a step's profile after the restart rule of [`Series::push_rows`];
    /// returns how many steps that rule dropped first.
    pub fn push(&mut self, step: i64, profile: StepProfile) -> usize {
        let dropped = self.purge_from(step);
        self.steps.push(step);
        self.profiles.push(profile);
        dropped
    }

    /// Drops the steps at `step` or later, as [`Series::purge_from`] does; returns how many.
    pub fn purge_from(&mut self, step: i64) -> usize {
        // Steps come in order but at a restart: the last step alone says so, and a search
        // would touch a cold line of every series' steps at each push.
        if self.steps.last().is_none_or(|&last| last < step) {
            return 0;
        }
        let keep = self.steps.partition_point(|&s| s < step);
        let dropped = self.steps.len() - keep;
        self.steps.truncate(keep);
        self.profiles.truncate(keep);
        dropped
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histograms::stats::Stats;

    #[test]
    fn steps_profiled_as_pushed_are_the_loaded_series_profiled_restarts_and_all() {
        let mut series = Series::new("r", "t");
        let mut profiled = ProfiledSeries::new("r", "t");
        let steps = [(0, 1.0), (1, 2.0), (2, 3.0), (1, 5.0), (2, 6.0), (3, 0.5)];
        for (step, scale) in steps {
            let buckets = [-scale, 0.0, 3.0, 0.0, scale, 1.0];
            let dropped = series.push_rows(step, 0.0, &buckets, Stats::MISSING);
            assert_eq!(
                profiled.push(step, profile(&buckets, &Stats::MISSING)),
                dropped
            );
        }
        assert_eq!(series.purge_from(3), profiled.purge_from(3));
        assert_eq!(profiled, ProfiledSeries::of(&series));
        assert_eq!(profiled.steps, [0, 1, 2]);
    }
}
