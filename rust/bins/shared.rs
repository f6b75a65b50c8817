//! One tag across several runs on shared bins: the span of every run's kept steps, then each run's steps rebinned onto the same equal bins.

use std::collections::HashMap;

use crate::bins::rebin::{extent, rebin_over, Rebinned};
use crate::bins::thin::thin_indices;

/// The shared equal bins of one tag, widened as each run's kept steps are seen.
///
/// A log directory too large to hold is read twice: once to widen the bins by
/// every run, once to count each run on them ([`SharedBins::counts`]); steps
/// held together are counted in one go by [`rebin_shared`].
#[derive(Debug, Clone, PartialEq)]
pub struct SharedBins {
    bins: usize,
    extent: Option<(f64, f64)>,
}

impl SharedBins {
    /// `bins` equal bins spanning nothing yet (taken as a constant 0 until widened).
    pub fn new(bins: usize) -> Self {
        assert!(bins >= 1, "bins must be at least 1");
        SharedBins { bins, extent: None }
    }

    /// Widens the bins to span every non-empty finite bucket of `steps`.
    pub fn widen(&mut self, steps: &[&[f64]]) {
        self.extent = match (self.extent, extent(steps)) {
            (Some(a), Some(b)) => Some((a.0.min(b.0), a.1.max(b.1))),
            (a, b) => a.or(b),
        };
    }

    /// The smallest and largest edge of the buckets seen; None before any.
    pub fn extent(&self) -> Option<(f64, f64)> {
        self.extent
    }

    /// The `bins + 1` shared edges.
    pub fn edges(&self) -> Vec<f64> {
        self.counts(&[]).edges
    }

    /// `steps` counted on the shared bins, a row per step.
    pub fn counts(&self, steps: &[&[f64]]) -> Rebinned {
        rebin_over(steps, self.extent, self.bins)
    }
}

/// Several runs' steps of one tag counted on shared bins.
#[derive(Debug, Clone, PartialEq)]
pub struct SharedCounts {
    /// `bins + 1` increasing edges spanning every run's buckets.
    pub edges: Vec<f64>,
    /// Per run, `bins` counts per step, row after row, in the order given.
    pub runs: Vec<Vec<f64>>,
    /// Buckets left out, all runs together, because an edge or the count was NaN or infinite.
    pub nonfinite_buckets: usize,
    /// The sum of the finite counts of those buckets.
    pub nonfinite_count: f64,
}

/// Counts each run's steps (each step flattened (left, right, count) rows) on
/// `bins` equal bins spanning every run's non-empty finite buckets, so that runs
/// and steps compare bin for bin.
pub fn rebin_shared(runs: &[Vec<&[f64]>], bins: usize) -> SharedCounts {
    let mut shared = SharedBins::new(bins);
    for steps in runs {
        shared.widen(steps);
    }
    let every: Vec<&[f64]> = runs.iter().flatten().copied().collect();
    let Rebinned {
        edges,
        counts,
        nonfinite_buckets,
        nonfinite_count,
    } = shared.counts(&every);
    let mut rest = &counts[..];
    let runs = runs
        .iter()
        .map(|steps| {
            let (mine, after) = rest.split_at(steps.len() * bins);
            rest = after;
            mine.to_vec()
        })
        .collect();
    SharedCounts {
        edges,
        runs,
        nonfinite_buckets,
        nonfinite_count,
    }
}

/// Every tag's shared bins as a report gathers them, run after run: each series
/// thinned to at most `max_steps` steps, its kept steps widening its tag's bins,
/// then counted on them once every run has been seen.
#[derive(Debug, Clone, PartialEq)]
pub struct SharedCharts {
    bins: usize,
    max_steps: Option<usize>,
    tags: HashMap<String, SharedBins>,
}

impl SharedCharts {
    /// `bins` equal bins per tag; `max_steps` steps kept per series (None: all).
    pub fn new(bins: usize, max_steps: Option<usize>) -> Self {
        assert!(bins >= 1, "bins must be at least 1");
        SharedCharts {
            bins,
            max_steps,
            tags: HashMap::new(),
        }
    }

    /// The positions kept of a series of `tag` whose steps' buckets are `steps`;
    /// their buckets widen the tag's bins.
    pub fn keep(&mut self, tag: &str, steps: &[&[f64]]) -> Vec<usize> {
        let kept = thin_indices(steps.len(), self.max_steps);
        let rows: Vec<&[f64]> = kept.iter().map(|&i| steps[i]).collect();
        let bins = self.bins;
        self.tags
            .entry(tag.to_owned())
            .or_insert_with(|| SharedBins::new(bins))
            .widen(&rows);
        kept
    }

    /// The steps `wanted` of a series of `tag` (its steps `steps`, their buckets
    /// `buckets`) counted on the tag's bins; None where the series lacks one of them,
    /// as when its file changed between two reads.
    pub fn counts(
        &self,
        tag: &str,
        steps: &[i64],
        buckets: &[&[f64]],
        wanted: &[i64],
    ) -> Option<Rebinned> {
        let rows = wanted
            .iter()
            .map(|step| Some(buckets[steps.binary_search(step).ok()?]))
            .collect::<Option<Vec<&[f64]>>>()?;
        Some(self.bins_of(tag).counts(&rows))
    }

    /// The `bins + 1` edges of `tag`'s bins.
    pub fn edges(&self, tag: &str) -> Vec<f64> {
        self.bins_of(tag).edges()
    }

    fn bins_of(&self, tag: &str) -> SharedBins {
        self.tags
            .get(tag)
            .cloned()
            .unwrap_or_else(|| SharedBins::new(self.bins))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bins::rebin::rebin;
    use proptest::prelude::*;

    #[test]
    fn runs_share_the_bins_of_all_their_steps() {
        let a: Vec<&[f64]> = vec![&[0.0, 1.0, 2.0], &[1.0, 2.0, 4.0]];
        let b: Vec<&[f64]> = vec![&[2.0, 4.0, 6.0]];
        let shared = rebin_shared(&[a, b, vec![]], 4);
        assert_eq!(shared.edges, vec![0.0, 1.0, 2.0, 3.0, 4.0]);
        assert_eq!(
            shared.runs,
            vec![
                vec![2.0, 0.0, 0.0, 0.0, 0.0, 4.0, 0.0, 0.0],
                vec![0.0, 0.0, 3.0, 3.0],
                vec![]
            ]
        );
    }

    #[test]
    fn bins_widened_run_by_run_count_as_the_runs_counted_together() {
        let a: [f64; 6] = [0.0, 1.0, 4.0, f64::NAN, 9.0, 1.0];
        let b: [f64; 3] = [-2.5, -1.0, 3.0];
        let mut apart = SharedBins::new(7);
        apart.widen(&[&a]);
        apart.widen(&[]);
        apart.widen(&[&b]);
        assert_eq!(apart.extent(), Some((-2.5, 1.0)));
        let together = rebin_shared(&[vec![&a[..]], vec![&b[..]]], 7);
        assert_eq!(apart.edges(), together.edges);
        assert_eq!(apart.counts(&[&a]).counts, together.runs[0]);
        assert_eq!(apart.counts(&[&b]).counts, together.runs[1]);
        assert_eq!(together.nonfinite_buckets, 1);
        assert_eq!(SharedBins::new(2).edges(), vec![-0.5, 0.0, 0.5]);
    }

    #[test]
    fn a_report_keeps_thinned_steps_and_counts_them_on_their_tags_bins() {
        let a: Vec<&[f64]> = vec![&[0.0, 1.0, 1.0], &[5.0, 6.0, 1.0], &[1.0, 2.0, 3.0]];
        let b: Vec<&[f64]> = vec![&[-4.0, -2.0, 2.0]];
        let mut charts = SharedCharts::new(4, Some(2));
        assert_eq!(charts.keep("h", &a), vec![0, 2]);
        assert_eq!(charts.keep("h", &b), vec![0]);
        // Step 1 of `a` was thinned away: it does not widen the bins.
        assert_eq!(charts.edges("h"), vec![-4.0, -2.5, -1.0, 0.5, 2.0]);
        let counted = charts.counts("h", &[10, 20, 30], &a, &[10, 30]).unwrap();
        let mut together = SharedBins::new(4);
        together.widen(&[a[0], a[2], b[0]]);
        assert_eq!(counted, together.counts(&[a[0], a[2]]));
        assert_eq!(charts.counts("h", &[10, 20, 30], &a, &[10, 40]), None);
        assert_eq!(charts.edges("unseen"), SharedBins::new(4).edges());
    }

    fn bucket() -> impl Strategy<Value = [f64; 3]> {
        (-1e3..1e3f64, 0.0..50.0f64, 0.0..1e4f64)
            .prop_map(|(left, width, count)| [left, left + width, count])
    }

    fn run() -> impl Strategy<Value = Vec<Vec<[f64; 3]>>> {
        prop::collection::vec(prop::collection::vec(bucket(), 0..6), 0..4)
    }

    proptest! {
        /// Shared bins lose no count: each step's total is what its buckets hold.
        #[test]
        fn every_steps_total_is_kept(runs in prop::collection::vec(run(), 1..4), bins in 1..40usize) {
            let flat: Vec<Vec<Vec<f64>>> = runs
                .iter()
                .map(|steps| steps.iter().map(|s| s.concat()).collect())
                .collect();
            let slices: Vec<Vec<&[f64]>> = flat
                .iter()
                .map(|steps| steps.iter().map(Vec::as_slice).collect())
                .collect();
            let shared = rebin_shared(&slices, bins);
            for (steps, counts) in slices.iter().zip(&shared.runs) {
                prop_assert_eq!(counts.len(), steps.len() * bins);
                for (step, row) in steps.iter().zip(counts.chunks_exact(bins)) {
                    let want: f64 = step.chunks_exact(3).map(|b| b[2]).sum();
                    let got: f64 = row.iter().sum();
                    prop_assert!((got - want).abs() <= 1e-9 * want.max(1.0), "{} != {}", got, want);
                }
            }
            let every: Vec<&[f64]> = slices.iter().flatten().copied().collect();
            prop_assert_eq!(&shared.edges, &rebin(&every, bins).edges);
        }
    }
}
