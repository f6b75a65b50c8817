//! One series as the rules read it: borrowed from a loaded log directory or from arrays.

use crate::histograms::profiled::ProfiledSeries;
use crate::histograms::series::Series;
use crate::histograms::stats::Stats;

use super::DiagnoseError;

/// Where each step's buckets lie: (left, right, count) rows, three values per bucket.
#[derive(Debug, Clone, Copy)]
pub enum StepBuckets<'a> {
    /// Every step's rows in one block, step `i` holding rows `offsets[i]..offsets[i + 1]`,
    /// as a loaded [`Series`] keeps them.
    Flat {
        rows: &'a [f64],
        offsets: &'a [usize],
    },
}

/// One series: its steps, their buckets and their stored statistics.
#[derive(Debug, Clone, Copy)]
pub struct SeriesView<'a> {
    pub run: &'a str,
    pub tag: &'a str,
    pub steps: &'a [i64],
    pub buckets: StepBuckets<'a>,
    pub stats: &'a [Stats],
}

impl<'a> From<&'a Series> for SeriesView<'a> {
    fn from(s: &'a Series) -> Self {
        SeriesView {
            run: &s.run,
            tag: &s.tag,
            steps: &s.steps,
            buckets: StepBuckets::Flat {
                rows: &s.buckets,
                offsets: &s.offsets,
            },
            stats: &s.stats,
        }
    }
}

/// What the rules read of a series besides its steps' profiles: its names and steps.
#[derive(Debug, Clone, Copy)]
pub struct SeriesKey<'a> {
    pub run: &'a str,
    pub tag: &'a str,
    pub steps: &'a [i64],
}

impl<'a> From<&'a ProfiledSeries> for SeriesKey<'a> {
    fn from(s: &'a ProfiledSeries) -> Self {
        SeriesKey {
            run: &s.run,
            tag: &s.tag,
            steps: &s.steps,
        }
    }
}

impl<'a> SeriesView<'a> {
    pub fn key(&self) -> SeriesKey<'a> {
        SeriesKey {
            run: self.run,
            tag: self.tag,
            steps: self.steps,
        }
    }
}

impl SeriesView<'_> {
    /// Checks that the arrays fit together, so that no step reads outside its buckets.
    pub fn check(&self) -> Result<(), DiagnoseError> {
        let bad = |problem: String| DiagnoseError::BadSeries {
            run: self.run.to_owned(),
            tag: self.tag.to_owned(),
            problem,
        };
        let n = self.steps.len();
        if self.stats.len() != n {
            return Err(bad(format!(
                "{} stats rows for {n} steps",
                self.stats.len()
            )));
        }
        match self.buckets {
            StepBuckets::Flat { rows, offsets } => {
                if offsets.len() != n + 1 {
                    return Err(bad(format!(
                        "{} offsets for {n} steps, want {}",
                        offsets.len(),
                        n + 1
                    )));
                }
                if offsets.windows(2).any(|w| w[0] > w[1]) {
                    return Err(bad("offsets decrease".to_owned()));
                }
                if offsets[0] != 0 || 3 * offsets[n] != rows.len() {
                    return Err(bad(format!(
                        "offsets run {}..{} but there are {} buckets",
                        offsets[0],
                        offsets[n],
                        rows.len() / 3
                    )));
                }
            }
        }
        Ok(())
    }

    /// The buckets of step `i`, three values per bucket.
    pub fn step_buckets(&self, i: usize) -> &[f64] {
        match self.buckets {
            StepBuckets::Flat { rows, offsets } => &rows[3 * offsets[i]..3 * offsets[i + 1]],
        }
    }
}
