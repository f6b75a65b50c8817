//! Distances between two histograms of one key, exact from their stored buckets.
//!
//! A bucket `[left, right]` holding `count` values is read as those values spread
//! evenly over it, and a bucket of no width as that many values at one point (what
//! an exact histogram of integers, or TensorBoard's single-value buckets, hold).
//! Each histogram's distribution function is then piecewise linear between the
//! edges of both, with jumps at the points, so the Wasserstein-1 distance (the area
//! between the two) and the Kolmogorov–Smirnov distance (their largest gap) come
//! out exactly, without resampling or rebinning. Buckets with an edge that is not
//! finite hold no place on the axis: they are counted apart, as `nonfinite`.

use crate::histograms::stats::Stats;

/// How two histograms of one key differ.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Distance {
    /// The Wasserstein-1 (earth mover's) distance, in the key's own units.
    pub wasserstein: f64,
    /// `wasserstein` over the larger of the two standard deviations: comparable
    /// across keys of different scales (infinite when both are constants that differ).
    pub scaled: f64,
    /// The largest gap between the two distribution functions, from 0 to 1.
    pub ks: f64,
    /// The change of the mean, in standard deviations of the first.
    pub mean_shift: f64,
    /// The relative change of the standard deviation: `std_b / std_a - 1`.
    pub std_change: f64,
    /// The share of each histogram's values that are NaN or infinite.
    pub nonfinite: (f64, f64),
}

/// One histogram's finite buckets as masses, and what lies outside them.
struct Masses {
    /// `(left, right, share)`, shares summing to 1.
    buckets: Vec<(f64, f64, f64)>,
    nonfinite: f64,
}

impl Masses {
    /// `None` when no finite bucket holds anything.
    fn of(rows: &[f64]) -> Option<Masses> {
        let mut buckets = Vec::with_capacity(rows.len() / 3);
        let (mut total, mut nonfinite) = (0.0, 0.0);
        for row in rows.chunks_exact(3) {
            let (left, right, count) = (row[0].min(row[1]), row[0].max(row[1]), row[2]);
            // Empty, negative and NaN counts hold nothing.
            if count.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
                continue;
            }
            if left.is_finite() && right.is_finite() {
                buckets.push((left, right, count));
                total += count;
            } else {
                nonfinite += count;
            }
        }
        if total <= 0.0 {
            return None;
        }
        buckets.iter_mut().for_each(|b| b.2 /= total);
        Some(Masses {
            buckets,
            nonfinite: nonfinite / (total + nonfinite),
        })
    }

    /// The mean and standard deviation of the evenly spread buckets.
    fn moments(&self) -> (f64, f64) {
        let mean: f64 = self
            .buckets
            .iter()
            .map(|&(l, r, m)| m * (l + r) / 2.0)
            .sum();
        // E[x^2] of an even spread over [l, r] is (l^2 + lr + r^2) / 3; centred on the
        // mean first, so that a narrow spread far from zero keeps its digits.
        let square: f64 = self
            .buckets
            .iter()
            .map(|&(l, r, m)| {
                let (l, r) = (l - mean, r - mean);
                m * (l * l + l * r + r * r) / 3.0
            })
            .sum();
        (mean, square.max(0.0).sqrt())
    }

    /// The distribution function just before and just after each of `edges` (sorted, distinct).
    fn cdf(&self, edges: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let at = |x: f64| edges.partition_point(|&e| e < x);
        // What each segment between two edges gains, and each edge's point masses. A
        // bucket's gains are differences of its filled share at each edge, so they add up
        // to its share exactly, however narrow it is (no slope to overflow or cancel).
        let mut gain = vec![0.0; edges.len()];
        let mut jump = vec![0.0; edges.len()];
        for &(left, right, share) in &self.buckets {
            let (first, last) = (at(left), at(right));
            if first == last {
                jump[first] += share;
                continue;
            }
            let mut filled = 0.0;
            for (j, &edge) in edges.iter().enumerate().take(last + 1).skip(first + 1) {
                let now = if j == last {
                    1.0
                } else {
                    ((edge - left) / (right - left)).clamp(0.0, 1.0)
                };
                gain[j] += share * (now - filled);
                filled = now;
            }
        }
        let (mut before, mut after) = (
            Vec::with_capacity(edges.len()),
            Vec::with_capacity(edges.len()),
        );
        let mut value = 0.0;
        for i in 0..edges.len() {
            value += gain[i];
            before.push(value);
            value += jump[i];
            after.push(value);
        }
        (before, after)
    }
}

/// How the histogram `b` differs from `a`, each given as flattened `(left, right,
/// count)` rows; `None` when either holds no finite values. The means and standard
/// deviations are the stored statistics where both histograms have them (exact,
/// as histoscope's writer stores them), else those of the buckets.
pub fn distance(a: &[f64], b: &[f64], stats: Option<(&Stats, &Stats)>) -> Option<Distance> {
    let (a, b) = (Masses::of(a)?, Masses::of(b)?);
    let mut edges: Vec<f64> = [&a, &b]
        .iter()
        .flat_map(|m| m.buckets.iter().flat_map(|&(l, r, _)| [l, r]))
        .collect();
    edges.sort_by(f64::total_cmp);
    edges.dedup();
    let (a_before, a_after) = a.cdf(&edges);
    let (b_before, b_after) = b.cdf(&edges);
    let mut wasserstein = 0.0;
    let mut ks: f64 = 0.0;
    for i in 0..edges.len() {
        ks = ks.max((a_before[i] - b_before[i]).abs());
        ks = ks.max((a_after[i] - b_after[i]).abs());
        if i + 1 < edges.len() {
            let start = a_after[i] - b_after[i];
            let end = a_before[i + 1] - b_before[i + 1];
            wasserstein += area(start, end) * (edges[i + 1] - edges[i]);
        }
    }
    let ((mean_a, std_a), (mean_b, std_b)) = moments(&a, &b, stats);
    let scale = std_a.max(std_b);
    Some(Distance {
        wasserstein,
        scaled: scaled(wasserstein, scale),
        ks: ks.min(1.0),
        mean_shift: ratio(mean_b - mean_a, std_a),
        std_change: ratio(std_b - std_a, std_a),
        nonfinite: (a.nonfinite, b.nonfinite),
    })
}

/// The area under `|d|` over a unit of width where `d` runs linearly from `start` to `end`.
fn area(start: f64, end: f64) -> f64 {
    if start * end >= 0.0 {
        (start.abs() + end.abs()) / 2.0
    } else {
        // The line crosses zero: two triangles.
        (start * start + end * end) / (2.0 * (start.abs() + end.abs()))
    }
}

fn moments(a: &Masses, b: &Masses, stats: Option<(&Stats, &Stats)>) -> ((f64, f64), (f64, f64)) {
    let stored = |s: &Stats| (s.mean.is_finite() && s.std.is_finite()).then_some((s.mean, s.std));
    match stats.and_then(|(sa, sb)| Some((stored(sa)?, stored(sb)?))) {
        Some(both) => both,
        None => (a.moments(), b.moments()),
    }
}

fn scaled(wasserstein: f64, scale: f64) -> f64 {
    match (scale > 0.0, wasserstein > 0.0) {
        (true, _) => wasserstein / scale,
        (false, true) => f64::INFINITY,
        (false, false) => 0.0,
    }
}

/// `change / scale`, NaN where the first histogram has no spread to measure in.
fn ratio(change: f64, scale: f64) -> f64 {
    if scale > 0.0 {
        change / scale
    } else {
        f64::NAN
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Exact buckets of integer samples: one bucket of no width per distinct value.
    fn exact(samples: &[i32]) -> Vec<f64> {
        let mut sorted = samples.to_vec();
        sorted.sort();
        let mut rows = Vec::new();
        for group in sorted.chunk_by(|a, b| a == b) {
            rows.extend([group[0] as f64, group[0] as f64, group.len() as f64]);
        }
        rows
    }

    /// Wasserstein-1 and KS of two samples from their sorted values, as SciPy defines them.
    fn by_samples(a: &[i32], b: &[i32]) -> (f64, f64) {
        let mut points: Vec<f64> = a.iter().chain(b).map(|&v| v as f64).collect();
        points.sort_by(f64::total_cmp);
        points.dedup();
        let cdf = |s: &[i32], x: f64| {
            s.iter().filter(|&&v| v as f64 <= x).count() as f64 / s.len() as f64
        };
        let (mut w, mut ks): (f64, f64) = (0.0, 0.0);
        for (i, &x) in points.iter().enumerate() {
            let gap = (cdf(a, x) - cdf(b, x)).abs();
            ks = ks.max(gap);
            if let Some(&next) = points.get(i + 1) {
                w += gap * (next - x);
            }
        }
        (w, ks)
    }

    /// The mean and population standard deviation of integer samples.
    fn mean_and_std(s: &[i32]) -> (f64, f64) {
        let n = s.len() as f64;
        let mean = s.iter().map(|&v| v as f64).sum::<f64>() / n;
        let square = s.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n;
        (mean, square.sqrt())
    }

    /// Wasserstein-1 of two weighted samples (weights summing to 1): the area between
    /// their distribution functions, step by step over the sorted values.
    fn weighted_wasserstein(a: &[(f64, f64)], b: &[(f64, f64)]) -> f64 {
        let mut points: Vec<(f64, f64)> = a
            .iter()
            .copied()
            .chain(b.iter().map(|&(v, w)| (v, -w)))
            .collect();
        points.sort_by(|x, y| x.0.total_cmp(&y.0));
        let mut gap = 0.0;
        let mut area = 0.0;
        for pair in points.windows(2) {
            gap += pair[0].1;
            area += gap.abs() * (pair[1].0 - pair[0].0);
        }
        area
    }

    /// Each bucket as `n` values spread evenly over it, each weighing its share.
    fn spread(rows: &[f64], n: usize) -> Vec<(f64, f64)> {
        let total: f64 = rows.chunks_exact(3).map(|r| r[2]).sum();
        rows.chunks_exact(3)
            .flat_map(|r| {
                (0..n).map(move |i| {
                    let u = (i as f64 + 0.5) / n as f64;
                    (r[0] + u * (r[1] - r[0]), r[2] / total / n as f64)
                })
            })
            .collect()
    }

    #[test]
    fn spread_buckets_are_as_far_as_a_fine_sample_of_them() {
        // An even spread over each bucket, sampled finely, is what the buckets stand for.
        let a = [0.0, 1.0, 3.0, 1.0, 4.0, 1.0];
        let b = [0.5, 2.0, 2.0, 2.0, 2.5, 2.0];
        let d = distance(&a, &b, None).unwrap();
        let sampled = weighted_wasserstein(&spread(&a, 20_000), &spread(&b, 20_000));
        assert!(
            (d.wasserstein / sampled - 1.0).abs() < 1e-3,
            "{d:?} vs {sampled}"
        );
    }

    #[test]
    fn a_histogram_is_at_no_distance_from_itself() {
        let rows = [0.0, 1.0, 3.0, 1.0, 2.0, 1.0, 2.0, 2.0, 4.0];
        let d = distance(&rows, &rows, None).unwrap();
        assert_eq!(
            (d.wasserstein, d.ks, d.mean_shift, d.std_change),
            (0.0, 0.0, 0.0, 0.0)
        );
    }

    #[test]
    fn a_shifted_spread_is_as_far_as_its_shift() {
        let a = [0.0, 1.0, 5.0];
        let b = [3.0, 4.0, 7.0];
        let d = distance(&a, &b, None).unwrap();
        assert!((d.wasserstein - 3.0).abs() < 1e-12);
        assert_eq!(d.ks, 1.0);
        // An even spread over a unit has std 1/sqrt(12).
        assert!((d.mean_shift - 3.0 * 12f64.sqrt()).abs() < 1e-9);
        assert!(d.std_change.abs() < 1e-12);
    }

    #[test]
    fn overlapping_spreads_cross_inside_a_bucket() {
        // [0, 2] against [1, 3]: the functions differ by 1/2 over [1, 2] and less around it.
        let d = distance(&[0.0, 2.0, 1.0], &[1.0, 3.0, 1.0], None).unwrap();
        assert!((d.wasserstein - 1.0).abs() < 1e-12);
        assert!((d.ks - 0.5).abs() < 1e-12);
    }

    #[test]
    fn nonfinite_buckets_are_counted_apart() {
        let a = [0.0, 1.0, 3.0, f64::INFINITY, f64::INFINITY, 1.0];
        let d = distance(&a, &[0.0, 1.0, 2.0], None).unwrap();
        assert_eq!(d.wasserstein, 0.0);
        assert_eq!(d.nonfinite, (0.25, 0.0));
        assert!(distance(&[f64::NAN, f64::NAN, 4.0], &a, None).is_none());
        assert!(distance(&[], &a, None).is_none());
    }

    #[test]
    fn stored_statistics_are_the_moments_where_both_have_them() {
        let stats = |mean, std| Stats {
            mean,
            std,
            ..Stats::MISSING
        };
        let (a, b) = (stats(0.0, 2.0), stats(1.0, 3.0));
        let d = distance(&[0.0, 1.0, 1.0], &[0.0, 1.0, 1.0], Some((&a, &b))).unwrap();
        assert_eq!((d.mean_shift, d.std_change), (0.5, 0.5));
        let d = distance(
            &[0.0, 1.0, 1.0],
            &[0.0, 1.0, 1.0],
            Some((&a, &Stats::MISSING)),
        )
        .unwrap();
        assert_eq!((d.mean_shift, d.std_change), (0.0, 0.0));
    }

    #[test]
    fn a_bucket_too_narrow_for_its_slope_is_still_its_share() {
        let narrow = [0.0, 2.2e-313, 1.0];
        let d = distance(&[0.0, 0.0, 1.0], &narrow, None).unwrap();
        assert!(d.wasserstein < 1e-300 && d.ks <= 1.0);
        let d = distance(&[0.0, 1.0, 1.0, 0.0, 1e-300, 1.0], &[0.0, 1.0, 2.0], None).unwrap();
        assert!((d.ks - 0.5).abs() < 1e-12, "{d:?}");
    }

    #[test]
    fn constants_that_differ_are_infinitely_far_in_their_own_scale() {
        let d = distance(&[1.0, 1.0, 4.0], &[2.0, 2.0, 4.0], None).unwrap();
        assert_eq!((d.wasserstein, d.ks, d.scaled), (1.0, 1.0, f64::INFINITY));
        assert!(d.mean_shift.is_nan());
    }

    proptest! {
        #[test]
        fn exact_buckets_give_the_samples_distances(
            a in proptest::collection::vec(-20i32..20, 1..40),
            b in proptest::collection::vec(-20i32..20, 1..40),
        ) {
            let d = distance(&exact(&a), &exact(&b), None).unwrap();
            let (w, ks) = by_samples(&a, &b);
            prop_assert!((d.wasserstein - w).abs() < 1e-9, "{} vs {}", d.wasserstein, w);
            prop_assert!((d.ks - ks).abs() < 1e-12);
            let ((mean_a, std_a), (mean_b, _)) = (mean_and_std(&a), mean_and_std(&b));
            if std_a > 0.0 {
                let shift = (mean_b - mean_a) / std_a;
                prop_assert!((d.mean_shift - shift).abs() <= 1e-9 * shift.abs() + 1e-12);
            } else {
                prop_assert!(d.mean_shift.is_nan());
            }
        }

        #[test]
        fn distances_are_symmetric(
            a in proptest::collection::vec((-5.0f64..5.0, 0.0f64..2.0, 0.0f64..9.0), 1..12),
            b in proptest::collection::vec((-5.0f64..5.0, 0.0f64..2.0, 0.0f64..9.0), 1..12),
        ) {
            let rows = |v: &[(f64, f64, f64)]| -> Vec<f64> {
                v.iter().flat_map(|&(l, w, c)| [l, l + w, c + 1.0]).collect()
            };
            let (a, b) = (rows(&a), rows(&b));
            let ab = distance(&a, &b, None).unwrap();
            let ba = distance(&b, &a, None).unwrap();
            prop_assert!((ab.wasserstein - ba.wasserstein).abs() < 1e-9);
            prop_assert!((ab.ks - ba.ks).abs() < 1e-12);
            prop_assert!(ab.ks <= 1.0 && ab.wasserstein >= 0.0);
            let aa = distance(&a, &a, None).unwrap();
            prop_assert!(aa.wasserstein.abs() < 1e-9 && aa.ks < 1e-12);
        }
    }
}
