//! Counting every step of a series again in one set of equal bins.

use crate::bins::edges::{default_range, uniform_edges, widen};

/// Every step's counts in the same `bins` equal bins.
#[derive(Debug, Clone, PartialEq)]
pub struct Rebinned {
    /// `bins + 1` increasing edges.
    pub edges: Vec<f64>,
    /// `bins` counts per step, row after row.
    pub counts: Vec<f64>,
    /// Buckets left out because an edge or the count was NaN or infinite.
    pub nonfinite_buckets: usize,
    /// The sum of the finite counts of those buckets.
    pub nonfinite_count: f64,
}

/// Counts each step's buckets (flattened (left, right, count) rows) again in
/// `bins` equal bins spanning every non-empty finite bucket of all steps.
///
/// A bucket's count is shared among the bins it overlaps in proportion to
/// the overlap; a zero-width bucket gives its whole count to the bin that
/// holds it, the last bin closed as in `numpy.histogram`.
pub fn rebin(steps: &[&[f64]], bins: usize) -> Rebinned {
    rebin_over(steps, extent(steps), bins)
}

/// [`rebin`] onto the bins of `extent`, the [`extent`] of these steps and maybe
/// of others, so that steps read apart (one run at a time) share one set of bins.
pub fn rebin_over(steps: &[&[f64]], extent: Option<(f64, f64)>, bins: usize) -> Rebinned {
    assert!(bins >= 1, "bins must be at least 1");
    let (lo, hi) = span(extent);
    let grid = Grid::new(lo, hi, bins);
    let mut out = Rebinned {
        edges: (0..=bins).map(|j| grid.edge(j)).collect(),
        counts: vec![0.0; steps.len() * bins],
        nonfinite_buckets: 0,
        nonfinite_count: 0.0,
    };
    for (row, buckets) in out.counts.chunks_exact_mut(bins).zip(steps) {
        // Stored buckets are usually contiguous, one's right edge the next's
        // left: remembering the last lookup halves the bin searches.
        let mut last = (f64::NAN, 0);
        for bucket in buckets.chunks_exact(3) {
            let (left, right, count) = (bucket[0], bucket[1], bucket[2]);
            if !(left.is_finite() && right.is_finite() && count.is_finite()) {
                out.nonfinite_buckets += 1;
                if count.is_finite() {
                    out.nonfinite_count += count;
                }
            } else if count != 0.0 {
                grid.share(row, left.min(right), left.max(right), count, &mut last);
            }
        }
    }
    out
}

/// The smallest and largest edge of every non-empty finite bucket of `steps`;
/// None where there is none. The extent of several sets of steps is the
/// smallest of their smallest edges and the largest of their largest.
pub fn extent(steps: &[&[f64]]) -> Option<(f64, f64)> {
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for bucket in steps.iter().flat_map(|s| s.chunks_exact(3)) {
        let (left, right, count) = (bucket[0], bucket[1], bucket[2]);
        if count != 0.0 && count.is_finite() && left.is_finite() && right.is_finite() {
            lo = lo.min(left.min(right));
            hi = hi.max(left.max(right));
        }
    }
    (lo <= hi).then_some((lo, hi))
}

/// An extent widened where too narrow for distinct edges as binning widens
/// it; no data at all is taken as a constant 0.
fn span(extent: Option<(f64, f64)>) -> (f64, f64) {
    match extent {
        Some((lo, hi)) => default_range(lo, hi),
        None => widen(0.0),
    }
}

struct Grid {
    lo: f64,
    /// Bins per unit of value, for a first guess at a value's bin.
    scale: f64,
    /// The `bins + 1` edges; the guess is checked against them.
    edges: Vec<f64>,
}

impl Grid {
    fn new(lo: f64, hi: f64, bins: usize) -> Self {
        Grid {
            lo,
            scale: bins as f64 / (hi - lo),
            edges: uniform_edges(lo, hi, bins),
        }
    }

    fn edge(&self, j: usize) -> f64 {
        self.edges[j]
    }

    fn bins(&self) -> usize {
        self.edges.len() - 1
    }

    /// The bin holding `x`, checked against the edges themselves so that a
    /// value on an edge lands exactly where the edges say (the last bin closed).
    fn bin(&self, x: f64) -> usize {
        let last = self.bins() - 1;
        let guess = ((x - self.lo) * self.scale).floor();
        let mut j = guess.clamp(0.0, last as f64) as usize;
        while j < last && x >= self.edges[j + 1] {
            j += 1;
        }
        while j > 0 && x < self.edges[j] {
            j -= 1;
        }
        j
    }

    /// Adds `count` spread over `[left, right]`; `memo` is the last (value, bin) looked up.
    fn share(&self, row: &mut [f64], left: f64, right: f64, count: f64, memo: &mut (f64, usize)) {
        let first = if memo.0 == left {
            memo.1
        } else {
            self.bin(left)
        };
        if left == right {
            row[first] += count;
            *memo = (left, first);
            return;
        }
        let last = self.bin(right);
        *memo = (right, last);
        if first == last {
            row[first] += count;
            return;
        }
        // count * (overlap / width), not overlap * (count / width): a bucket
        // that fills a bin exactly must give it exactly its count.
        let width = right - left;
        for (j, slot) in row.iter_mut().enumerate().take(last + 1).skip(first) {
            let overlap = right.min(self.edges[j + 1]) - left.max(self.edges[j]);
            if overlap > 0.0 {
                *slot += count * (overlap / width);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn counts_are_shared_by_overlap() {
        let step = [0.0, 1.0, 4.0, 1.0, 3.0, 2.0];
        let r = rebin(&[&step], 3);
        assert_eq!(r.edges, vec![0.0, 1.0, 2.0, 3.0]);
        assert_eq!(r.counts, vec![4.0, 1.0, 1.0]);
    }

    #[test]
    fn steps_rebinned_apart_over_their_joint_extent_match_them_rebinned_together() {
        let a = [0.0, 1.0, 4.0, 1.0, 3.0, 2.0, f64::NAN, 9.0, 1.0];
        let b = [-2.5, -1.0, 3.0, 7.0, 8.0, 0.0];
        let c: [f64; 0] = [];
        let together = rebin(&[&a, &b, &c], 7);
        let joint = [extent(&[&a]), extent(&[&b]), extent(&[&c])]
            .into_iter()
            .flatten()
            .reduce(|x, y| (x.0.min(y.0), x.1.max(y.1)));
        assert_eq!(joint, Some((-2.5, 3.0)));
        assert_eq!(extent(&[&c]), None);
        let apart: Vec<Rebinned> = [&a[..], &b, &c]
            .iter()
            .map(|s| rebin_over(&[s], joint, 7))
            .collect();
        assert!(apart.iter().all(|r| r.edges == together.edges));
        let counts: Vec<f64> = apart.iter().flat_map(|r| r.counts.clone()).collect();
        assert_eq!(counts, together.counts);
        assert_eq!(rebin_over(&[&c], None, 2), rebin(&[&c], 2));
    }

    #[test]
    fn span_covers_every_step() {
        let a = [0.0, 1.0, 2.0];
        let b = [3.0, 4.0, 2.0];
        let r = rebin(&[&a, &b], 4);
        assert_eq!(r.edges, vec![0.0, 1.0, 2.0, 3.0, 4.0]);
        assert_eq!(r.counts, vec![2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0]);
    }

    #[test]
    fn zero_width_bucket_goes_to_the_bin_holding_it() {
        let step = [0.0, 0.0, 1.0, 2.0, 2.0, 5.0, 1.0, 1.0, 7.0];
        let r = rebin(&[&step], 2);
        assert_eq!(r.edges, vec![0.0, 1.0, 2.0]);
        assert_eq!(r.counts, vec![1.0, 12.0]);
    }

    #[test]
    fn zero_width_span_becomes_value_plus_minus_half() {
        let step = [1.5, 1.5, 100.0];
        let r = rebin(&[&step], 2);
        assert_eq!(r.edges, vec![1.0, 1.5, 2.0]);
        assert_eq!(r.counts, vec![0.0, 100.0]);
    }

    #[test]
    fn a_large_constant_gets_bins_of_some_width() {
        // A bias stuck at 1e20: a half moves nothing there, 2^-40 of it does.
        let step = [1e20, 1e20, 4.0];
        let r = rebin(&[&step], 30);
        assert!(r.edges.windows(2).all(|w| w[0] < w[1]), "{:?}", r.edges);
        assert!(r.edges[0] < 1e20 && 1e20 < r.edges[30]);
        assert_eq!(r.counts.iter().sum::<f64>(), 4.0);
        let r = rebin(&[&[-1e300, -1e300, 1.0]], 7);
        assert!(r.edges.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn empty_buckets_do_not_widen_the_span() {
        let step = [-100.0, 0.0, 0.0, 0.0, 1.0, 5.0];
        assert_eq!(rebin(&[&step], 1).edges, vec![0.0, 1.0]);
    }

    #[test]
    fn nonfinite_buckets_are_left_out_and_counted() {
        let step = [
            f64::NAN,
            1.0,
            3.0,
            0.0,
            1.0,
            2.0,
            f64::NEG_INFINITY,
            0.0,
            0.0,
        ];
        let r = rebin(&[&step], 1);
        assert_eq!(r.counts, vec![2.0]);
        assert_eq!((r.nonfinite_buckets, r.nonfinite_count), (2, 3.0));
    }

    #[test]
    fn no_data_gives_zeros_around_zero() {
        let r = rebin(&[&[], &[]], 2);
        assert_eq!(r.edges, vec![-0.5, 0.0, 0.5]);
        assert_eq!(r.counts, vec![0.0; 4]);
    }

    /// A step of up to 12 buckets, each (left <= right) within ±1e6, some empty.
    fn step() -> impl Strategy<Value = Vec<f64>> {
        let count = prop_oneof![Just(0.0), 0.0f64..=1e4];
        let bucket =
            (-1e6f64..1e6, -1e6f64..1e6, count).prop_map(|(a, b, c)| [a.min(b), a.max(b), c]);
        proptest::collection::vec(bucket, 0..=12).prop_map(|b| b.concat())
    }

    fn steps() -> impl Strategy<Value = Vec<Vec<f64>>> {
        proptest::collection::vec(step(), 1..=6)
    }

    fn slices(steps: &[Vec<f64>]) -> Vec<&[f64]> {
        steps.iter().map(Vec::as_slice).collect()
    }

    /// The overlap rule written plainly against the given edges, bin by bin.
    fn plain_rebin(steps: &[Vec<f64>], edges: &[f64]) -> Vec<f64> {
        let bins = edges.len() - 1;
        let mut out = vec![0.0; steps.len() * bins];
        for (row, buckets) in out.chunks_exact_mut(bins).zip(steps) {
            for bucket in buckets.chunks_exact(3) {
                let (left, right, count) = (bucket[0], bucket[1], bucket[2]);
                if count == 0.0 {
                    continue;
                }
                if left == right {
                    let holding = edges.partition_point(|&e| e <= left) - 1;
                    row[holding.min(bins - 1)] += count;
                    continue;
                }
                for (j, slot) in row.iter_mut().enumerate() {
                    let overlap = right.min(edges[j + 1]) - left.max(edges[j]);
                    *slot += count * (overlap.max(0.0) / (right - left));
                }
            }
        }
        out
    }

    fn close(got: f64, want: f64) -> bool {
        (got - want).abs() <= 1e-6 + 1e-9 * want.abs()
    }

    proptest! {
        #[test]
        fn counts_are_kept_and_the_bins_span_every_step(steps in steps(), bins in 1usize..=64) {
            let r = rebin(&slices(&steps), bins);
            prop_assert_eq!(r.nonfinite_buckets, 0);
            prop_assert_eq!((r.edges.len(), r.counts.len()), (bins + 1, steps.len() * bins));
            prop_assert!(r.edges.windows(2).all(|e| e[0] < e[1]), "{:?}", r.edges);
            prop_assert!(r.counts.iter().all(|&c| c >= 0.0));
            for (row, buckets) in r.counts.chunks_exact(bins).zip(&steps) {
                let total: f64 = buckets.chunks_exact(3).map(|b| b[2]).sum();
                prop_assert!(close(row.iter().sum(), total), "{row:?} for {total}");
            }
            let full: Vec<&[f64]> = steps.iter().flat_map(|s| s.chunks_exact(3)).filter(|b| b[2] > 0.0).collect();
            let lo = full.iter().map(|b| b[0]).fold(f64::INFINITY, f64::min);
            let hi = full.iter().map(|b| b[1]).fold(f64::NEG_INFINITY, f64::max);
            if hi > lo {
                prop_assert_eq!((r.edges[0], r.edges[bins]), (lo, hi));
            }
        }

        #[test]
        fn counts_are_the_plain_overlap_rules(steps in steps(), bins in 1usize..=40) {
            let r = rebin(&slices(&steps), bins);
            let want = plain_rebin(&steps, &r.edges);
            prop_assert!(r.counts.iter().zip(&want).all(|(&g, &w)| close(g, w)), "{:?} != {want:?}", r.counts);
        }

        #[test]
        fn a_bucket_inside_one_bin_stays_in_that_bin(
            bins in 1usize..=50,
            at in 0.0f64..1.0,
            start in 0.0f64..1.0,
            width in 0.0f64..=1.0,
        ) {
            let frame = [0.0, 0.0, 1.0, 10.0, 10.0, 1.0]; // fixes the span to 0..10
            let edges = rebin(&[&frame], bins).edges;
            let j = ((at * bins as f64) as usize).min(bins - 1);
            let (lo, hi) = (edges[j], edges[j + 1]);
            let left = lo + start * (hi - lo);
            prop_assume!(left < hi); // [hi, hi] belongs to bin j + 1
            let right = (left + width * (hi - left)).min(hi);
            let r = rebin(&[&frame, &[left, right, 7.0]], bins);
            let inner = &r.counts[bins..];
            prop_assert_eq!(inner[j], 7.0);
            prop_assert_eq!(inner.iter().sum::<f64>(), 7.0);
        }

        /// How the report rebins a key run by run: each part over the extent of all.
        #[test]
        fn any_split_rebinned_over_the_joint_extent_is_the_whole_rebinned(
            steps in steps(),
            split in 0usize..=5,
            bins in 1usize..=40,
        ) {
            let all = slices(&steps);
            let together = rebin(&all, bins);
            let (first, second) = all.split_at(split.min(all.len()));
            let joint = [extent(first), extent(second)]
                .into_iter()
                .flatten()
                .reduce(|x, y| (x.0.min(y.0), x.1.max(y.1)));
            let apart = [rebin_over(first, joint, bins), rebin_over(second, joint, bins)];
            prop_assert!(apart.iter().all(|r| r.edges == together.edges));
            prop_assert_eq!([&apart[0].counts[..], &apart[1].counts[..]].concat(), together.counts);
        }
    }
}
