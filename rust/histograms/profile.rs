//! One step of a histogram profiled: its scale, spread and where its mass lies, as diagnosis and the viewer read them.
//!
//! The stored statistics win where a writer kept them (histoscope keeps all of
//! them; PyTorch, TF1 and tensorboardX keep count, min, max and the sums behind
//! mean and std); TF2 and Keras keep only buckets, so everything is also
//! derived from the buckets. Where buckets are coarse, stored moments bound what
//! they hide: the mass at zero, and (through the mean slope of tanh and
//! sigmoid, exact from mean and std) how far bounded values sit at their ends.

use crate::histograms::stats::Stats;

/// The ends of a bounded range: the last 5% of its width at each side, where
/// tanh's slope is below a fifth of its peak (|x| ≥ 0.9) and so is sigmoid's
/// (x ≤ 0.05 or x ≥ 0.95). Bucket edges are coarse (PyTorch's outermost
/// buckets near ±1 span 0.08), so a narrower end could not be measured.
pub const END_SHARE_OF_RANGE: f64 = 0.05;

/// A bucket holding 0 and narrower than this share of the step's span holds
/// exact zeros: TF's and PyTorch's exponential buckets put 0 alone in a bucket
/// 1e-12 wide.
const NARROW_ZERO_BUCKET: f64 = 1e-6;

/// A wide bucket straddling 0 counts as zeros the share of it within this of 0.
const ZERO_MARGIN: f64 = 0.01;

/// The numbers of one step that the rules compare.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepProfile {
    /// Finite values (or their total weight).
    pub count: f64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub std: f64,
    /// Whether NaN or infinities were seen: a nonfinite count, NaN or infinite
    /// edges or counts (TF writes NaN edges for NaN input), or statistics that
    /// are NaN beside finite values.
    pub nonfinite: bool,
    /// How many nonfinite values, where the writer counted them (else 0).
    pub nonfinite_count: f64,
    /// Share of the finite mass at exactly 0: from the buckets (an upper bound
    /// where the bucket that holds 0 is wide), capped by the stored moments
    /// where the writer kept them (see `zero_share_within_moments`).
    pub zero_share: f64,
    /// Shares of the mass at the ends of tanh's range: at most -0.9, at least 0.9.
    pub tanh_ends: (f64, f64),
    /// Shares of the mass at the ends of sigmoid's range: 0 to 0.05, at least 0.95.
    pub sigmoid_ends: (f64, f64),
}

impl StepProfile {
    /// The root mean square of the values: how large they are, whatever their sign.
    pub fn scale(&self) -> f64 {
        (self.mean * self.mean + self.std * self.std).sqrt()
    }

    /// The largest magnitude of a value.
    pub fn max_abs(&self) -> f64 {
        self.min.abs().max(self.max.abs())
    }

    /// Whether the step holds finite values to judge.
    pub fn has_values(&self) -> bool {
        self.count > 0.0 && self.mean.is_finite() && self.std.is_finite()
    }

    /// The mean slope of tanh at these values, over its peak: `E[1 - t²]`, exact
    /// from the mean and std however coarse the buckets. Small when most values
    /// sit near ±1, where tanh passes almost no gradient.
    pub fn tanh_slope(&self) -> f64 {
        1.0 - (self.mean * self.mean + self.std * self.std)
    }

    /// The mean slope of the sigmoid at these values, over its peak of 1/4:
    /// `4 E[s (1 - s)]`, exact from the mean and std. Small when most values
    /// sit near 0 or 1.
    pub fn sigmoid_slope(&self) -> f64 {
        4.0 * (self.mean * (1.0 - self.mean) - self.std * self.std)
    }
}

/// The profile of one step from its buckets, three values (left, right, count) per bucket, and its stats.
pub fn profile(buckets: &[f64], stats: &Stats) -> StepProfile {
    profile_of(&Rows(buckets), stats)
}

/// The profile of one step as a writer holds it, `counts[i]` values in
/// `[edges[i], edges[i + 1])`: [`profile`] without laying the buckets out as rows.
pub fn profile_binned(edges: &[f64], counts: &[f64], stats: &Stats) -> StepProfile {
    profile_of(&Binned { edges, counts }, stats)
}

/// A step's buckets, walked as (left, right, count).
trait Buckets {
    fn each(&self, f: impl FnMut(f64, f64, f64));
}

/// Rows laid out flat, three values a bucket, as a series keeps them.
struct Rows<'a>(&'a [f64]);

impl Buckets for Rows<'_> {
    fn each(&self, mut f: impl FnMut(f64, f64, f64)) {
        for b in self.0.chunks_exact(3) {
            f(b[0], b[1], b[2]);
        }
    }
}

struct Binned<'a> {
    edges: &'a [f64],
    counts: &'a [f64],
}

impl Buckets for Binned<'_> {
    fn each(&self, mut f: impl FnMut(f64, f64, f64)) {
        for (edge, &count) in self.edges.windows(2).zip(self.counts) {
            f(edge[0], edge[1], count);
        }
    }
}

fn profile_of(buckets: &impl Buckets, stats: &Stats) -> StepProfile {
    // With every statistic stored, the buckets only need counting.
    let stored = [stats.count, stats.min, stats.max, stats.mean, stats.std]
        .iter()
        .all(|v| v.is_finite());
    let mut moments = BucketMoments::default();
    let mut bad_buckets = false;
    buckets.each(|left, right, count| {
        if !(left.is_finite() && right.is_finite() && count.is_finite()) {
            bad_buckets = true;
        } else if stored {
            moments.count += count.max(0.0);
        } else {
            moments.add(left, right, count);
        }
    });
    let from_buckets = moments.finish();
    let pick = |stored: f64, derived: f64| if stored.is_finite() { stored } else { derived };
    let count = pick(stats.count, from_buckets.count);
    let min = pick(stats.min, from_buckets.min);
    let max = pick(stats.max, from_buckets.max);
    let mean = pick(stats.mean, from_buckets.mean);
    let std = pick(stats.std, from_buckets.std);
    let nonfinite_count = if stats.nonfinite.is_finite() {
        stats.nonfinite
    } else {
        0.0
    };
    // A histogram of NaN input can keep a finite count but NaN or infinite limits, where
    // its writer counts no non-finite values apart (a legacy proto's min and max). A
    // writer that does (histoscope) has said how many; its NaN limits are unknown ones,
    // as for a histogram wrapped from `numpy.histogram`'s counts. A NaN mean or std
    // alone says nothing: TF2 tensors store no sums, and their count, min and max come
    // from the buckets.
    let nan_stats = !stats.nonfinite.is_finite()
        && stats.count > 0.0
        && [stats.min, stats.max].iter().any(|v| !v.is_finite());
    let nonfinite = nonfinite_count > 0.0 || bad_buckets || nan_stats;
    let mut shares = Shares::default();
    if from_buckets.count > 0.0 {
        buckets.each(|left, right, count| shares.add(left, right, count, (min, max)));
        shares.scale(1.0 / from_buckets.count);
    }
    // Moments the writer computed from the values, not from the buckets.
    let exact = stats.mean.is_finite() && stats.std.is_finite() && count > 0.0;
    if exact {
        shares.zero = zero_share_within_moments(shares.zero, min, (mean, std));
    }
    if min == 0.0 && max == 0.0 && count > 0.0 {
        shares.zero = 1.0;
        shares.sigmoid_low = 1.0;
    }
    StepProfile {
        count,
        min,
        max,
        mean,
        std,
        nonfinite,
        nonfinite_count,
        zero_share: shares.zero,
        tanh_ends: (shares.tanh_low, shares.tanh_high),
        sigmoid_ends: (shares.sigmoid_low, shares.sigmoid_high),
    }
}

/// The buckets' share at zero, capped by exact moments where a bucket hides it.
///
/// A first bucket `[0, w]` of values that are never negative (a ReLU's) holds
/// the zeros and the small positive values alike, and counts whole. But values
/// that are never negative, with mean `m` and second moment `E[x²]`, are above
/// 0 with probability at least `m² / E[x²]` (Cauchy-Schwarz), so at most
/// `1 - m² / E[x²]` of them are zeros. (A wide bucket straddling 0 keeps its
/// proportional count: one second moment cannot tell a pile at 0 from values
/// spread across the bucket.)
fn zero_share_within_moments(from_buckets: f64, min: f64, (mean, std): (f64, f64)) -> f64 {
    let second = mean * mean + std * std;
    if min >= 0.0 && second > 0.0 {
        from_buckets.min(1.0 - mean * mean / second)
    } else {
        from_buckets
    }
}

/// Each step's [`StepProfile::zero_share`], the steps laid out flat as a
/// [`Series`](crate::histograms::series::Series) keeps them: step `i` holds rows
/// `offsets[i]..offsets[i + 1]` of `rows`, three values a row, and `stats[i]`.
/// A step whose offsets do not fit `rows` is profiled without buckets.
pub fn zero_shares(rows: &[f64], offsets: &[usize], stats: &[Stats]) -> Vec<f64> {
    stats
        .iter()
        .enumerate()
        .map(|(i, stats)| {
            let step = match (offsets.get(i), offsets.get(i + 1)) {
                (Some(&start), Some(&end)) => rows
                    .get(start.saturating_mul(3)..end.saturating_mul(3))
                    .unwrap_or(&[]),
                _ => &[],
            };
            profile(step, stats).zero_share
        })
        .collect()
}

/// Count, extremes and moments of finite buckets, each bucket's mass spread evenly over it.
#[derive(Default)]
struct BucketMoments {
    count: f64,
    sum: f64,
    sum_squares: f64,
    min: Option<f64>,
    max: Option<f64>,
}

struct Moments {
    count: f64,
    min: f64,
    max: f64,
    mean: f64,
    std: f64,
}

impl BucketMoments {
    fn add(&mut self, left: f64, right: f64, count: f64) {
        if count <= 0.0 {
            return;
        }
        let (lo, hi) = (left.min(right), left.max(right));
        let mid = 0.5 * (lo + hi);
        let width = hi - lo;
        self.count += count;
        self.sum += count * mid;
        // E[x²] of a uniform bucket: mid² + width²/12.
        self.sum_squares += count * (mid * mid + width * width / 12.0);
        self.min = Some(self.min.map_or(lo, |m| m.min(lo)));
        self.max = Some(self.max.map_or(hi, |m| m.max(hi)));
    }

    fn finish(&self) -> Moments {
        if self.count <= 0.0 {
            let nan = f64::NAN;
            return Moments {
                count: self.count,
                min: nan,
                max: nan,
                mean: nan,
                std: nan,
            };
        }
        let mean = self.sum / self.count;
        let var = (self.sum_squares / self.count - mean * mean).max(0.0);
        Moments {
            count: self.count,
            min: self.min.unwrap_or(f64::NAN),
            max: self.max.unwrap_or(f64::NAN),
            mean,
            std: var.sqrt(),
        }
    }
}

/// Shares of mass at zero and at the ends of the ranges of tanh and sigmoid.
#[derive(Default)]
struct Shares {
    zero: f64,
    tanh_low: f64,
    tanh_high: f64,
    sigmoid_low: f64,
    sigmoid_high: f64,
}

impl Shares {
    fn add(&mut self, left: f64, right: f64, count: f64, (min, max): (f64, f64)) {
        if !(left.is_finite() && right.is_finite() && count.is_finite()) || count <= 0.0 {
            return;
        }
        let (lo, hi) = (left.min(right), left.max(right));
        if lo <= 0.0 && 0.0 <= hi {
            // Exact zeros cannot be told from small values in a wide bucket:
            // count it whole, an upper bound, when it is narrow or 0 is the
            // step's end (a ReLU's first bucket); a wide bucket straddling 0
            // counts in proportion, as the values near 0 of a spread distribution.
            let narrow = hi - lo <= NARROW_ZERO_BUCKET * (max - min).abs();
            let at_end = (lo == 0.0 && min >= 0.0) || (hi == 0.0 && max <= 0.0);
            self.zero += if narrow || at_end {
                count
            } else {
                count * overlap(lo, hi, -ZERO_MARGIN, ZERO_MARGIN)
            };
        }
        let (inf, tanh_end, sigmoid_end) =
            (f64::INFINITY, 2.0 * END_SHARE_OF_RANGE, END_SHARE_OF_RANGE);
        self.tanh_low += count * overlap(lo, hi, -inf, tanh_end - 1.0);
        self.tanh_high += count * overlap(lo, hi, 1.0 - tanh_end, inf);
        self.sigmoid_low += count * overlap(lo, hi, 0.0, sigmoid_end);
        self.sigmoid_high += count * overlap(lo, hi, 1.0 - sigmoid_end, inf);
    }

    fn scale(&mut self, factor: f64) {
        for share in [
            &mut self.zero,
            &mut self.tanh_low,
            &mut self.tanh_high,
            &mut self.sigmoid_low,
            &mut self.sigmoid_high,
        ] {
            *share *= factor;
        }
    }
}

/// The share of the bucket `[lo, hi]` inside `[a, b]`, its mass spread evenly (a point bucket: 0 or 1).
fn overlap(lo: f64, hi: f64, a: f64, b: f64) -> f64 {
    // Most buckets lie wholly outside or inside: no division for them.
    if hi < a || lo > b {
        return 0.0;
    }
    if a <= lo && hi <= b {
        return 1.0;
    }
    let inside = hi.min(b) - lo.max(a);
    (inside / (hi - lo)).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn stats_none() -> Stats {
        Stats::MISSING
    }

    proptest! {
        #[test]
        fn a_step_profiled_as_written_is_its_rows_profiled(
            start in -10.0f64..10.0,
            widths in proptest::collection::vec(0.0f64..3.0, 1..40),
            seed in proptest::collection::vec(-1.0f64..50.0, 40),
            stored in any::<bool>(),
        ) {
            let mut edges = vec![start];
            for w in &widths {
                edges.push(edges.last().unwrap() + w);
            }
            // Negative and zero counts too, as damaged or empty buckets have.
            let counts: Vec<f64> = seed[..widths.len()].iter().map(|c| c.floor()).collect();
            let rows: Vec<f64> = edges
                .windows(2)
                .zip(&counts)
                .flat_map(|(e, &c)| [e[0], e[1], c])
                .collect();
            let stats = if stored {
                Stats { count: 7.0, min: start, max: start + 1.0, mean: start, std: 0.5, ..Stats::MISSING }
            } else {
                Stats::MISSING
            };
            let (binned, laid_out) = (profile_binned(&edges, &counts, &stats), profile(&rows, &stats));
            // Bit for bit, NaN included (`==` would call two NaN profiles different).
            prop_assert_eq!(format!("{binned:?}"), format!("{laid_out:?}"));
        }
    }

    #[test]
    fn moments_come_from_buckets_without_stats() {
        // Two point buckets: -1 (x1) and 3 (x1): mean 1, std 2.
        let p = profile(&[-1.0, -1.0, 1.0, 3.0, 3.0, 1.0], &stats_none());
        assert_eq!(
            (p.count, p.min, p.max, p.mean, p.std),
            (2.0, -1.0, 3.0, 1.0, 2.0)
        );
        assert_eq!(p.scale(), 5f64.sqrt());
        assert!(!p.nonfinite);
    }

    #[test]
    fn stored_stats_win_over_buckets() {
        let stats = Stats::from_array([10.0, -2.0, 2.0, 0.5, 0.25, 0.0, 0.0, 0.0]);
        let p = profile(&[-2.0, 2.0, 10.0], &stats);
        assert_eq!((p.mean, p.std, p.min, p.max), (0.5, 0.25, -2.0, 2.0));
    }

    #[test]
    fn nan_edges_and_nan_sums_are_nonfinite() {
        let tf2_nan = [f64::NAN, f64::NAN, 0.0, f64::NAN, f64::NAN, 0.0];
        let p = profile(&tf2_nan, &stats_none());
        assert!(p.nonfinite);
        assert!(!p.has_values());
        let legacy_nan = Stats::from_array([
            4.0,
            f64::NAN,
            f64::NAN,
            f64::NAN,
            f64::NAN,
            f64::NAN,
            f64::NAN,
            f64::NAN,
        ]);
        assert!(profile(&[0.0, 1.0, 4.0], &legacy_nan).nonfinite);
        let counted = Stats::from_array([4.0, 0.0, 1.0, 0.5, 0.1, 2.0, 0.0, 0.0]);
        let p = profile(&[0.0, 1.0, 4.0], &counted);
        assert!(p.nonfinite && p.nonfinite_count == 2.0);
    }

    #[test]
    fn unknown_limits_of_a_writer_that_counts_nonfinite_values_are_no_nan() {
        // `numpy.histogram`'s counts wrapped by histoscope: the count, and no NaN or
        // infinity (numpy counts none); the limits and moments unknown.
        let nan = f64::NAN;
        let counted_only = Stats::from_array([4.0, nan, nan, nan, nan, 0.0, nan, nan]);
        let p = profile(&[0.0, 1.0, 4.0], &counted_only);
        assert!(!p.nonfinite && p.has_values());
        assert_eq!((p.min, p.max), (0.0, 1.0)); // from the buckets
    }

    #[test]
    fn zeros_in_a_narrow_bucket_or_at_a_relu_edge_count_whole() {
        // TF's exponential buckets: 0 alone in [0, 1e-12].
        let tf = [-1.0, -0.5, 1.0, 0.0, 1e-12, 8.0, 0.5, 1.0, 1.0];
        assert_eq!(profile(&tf, &stats_none()).zero_share, 0.8);
        // A ReLU's 3 uniform buckets from 0: the first holds the zeros.
        let relu = [0.0, 1.0, 9.0, 1.0, 2.0, 0.0, 2.0, 3.0, 1.0];
        assert_eq!(profile(&relu, &stats_none()).zero_share, 0.9);
        // A normal straddling 0 in a wide bucket counts only its share near 0.
        let normal = [-1.0, 1.0, 10.0];
        let share = profile(&normal, &stats_none()).zero_share;
        assert!((share - 0.01).abs() < 1e-12);
    }

    #[test]
    fn zero_shares_read_each_step_of_a_flat_layout() {
        // Step 0: a ReLU, 9 of 10 at zero; step 1: nothing at zero; step 2: no rows.
        let rows = [0.0, 1.0, 9.0, 1.0, 2.0, 1.0, 1.0, 2.0, 4.0];
        let stats = [stats_none(); 3];
        assert_eq!(
            zero_shares(&rows, &[0, 2, 3, 3], &stats),
            vec![0.9, 0.0, 0.0]
        );
        // Offsets past the rows, or too few of them, leave a step without buckets.
        assert_eq!(zero_shares(&rows, &[0, 2, 9], &stats), vec![0.9, 0.0, 0.0]);
    }

    #[test]
    fn exact_moments_cap_the_zeros_a_wide_first_bucket_hides() {
        // 3 zeros, 2 values at 0.5 and 5 at 1.5, in the buckets [0, 1] and [1, 2]:
        // the first bucket holds 5 of 10, but the moments allow at most 38.5% zeros.
        let b = [0.0, 1.0, 5.0, 1.0, 2.0, 5.0];
        assert_eq!(profile(&b, &stats_none()).zero_share, 0.5);
        let (mean, second): (f64, f64) = (0.85, 1.175);
        let std = (second - mean * mean).sqrt();
        let stats = Stats::from_array([10.0, 0.0, 1.5, mean, std, 0.0, 0.0, 0.0]);
        let share = profile(&b, &stats).zero_share;
        assert!(
            (share - (1.0 - mean * mean / second)).abs() < 1e-12,
            "{share}"
        );
        assert!(share >= 0.3);
        // A dead layer keeps its share: 99 zeros and one 2.0.
        let stats = Stats::from_array([100.0, 0.0, 2.0, 0.02, 0.199, 0.0, 0.0, 0.0]);
        assert!(profile(&[0.0, 1.0, 99.0, 1.0, 2.0, 1.0], &stats).zero_share >= 0.98);
    }

    #[test]
    fn the_mean_slope_is_exact_from_mean_and_std() {
        // Half the values at -1, half at 1: tanh passes no gradient there...
        let tanh = Stats::from_array([10.0, -1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0]);
        let p = profile(&[-1.0, 1.0, 10.0], &tanh);
        assert_eq!(p.tanh_slope(), 0.0);
        // ...and a sigmoid with std 0.476 around 0.5 passes less than a tenth of its peak,
        // however its one bucket [0, 1] spreads the values.
        let sigmoid = Stats::from_array([10.0, 0.0, 1.0, 0.5, 0.476, 0.0, 0.0, 0.0]);
        let p = profile(&[0.0, 1.0, 10.0], &sigmoid);
        assert!((p.sigmoid_slope() - 4.0 * (0.25 - 0.476 * 0.476)).abs() < 1e-12);
        assert!(p.sigmoid_slope() < 0.1);
        // Values at 0 give tanh its full slope.
        let zeros = Stats::from_array([10.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(profile(&[0.0, 0.0, 10.0], &zeros).tanh_slope(), 1.0);
    }

    #[test]
    fn end_shares_of_a_tanh_and_a_sigmoid() {
        // Half the mass in [-1, -0.9], a quarter at 1 exactly, a quarter in the middle.
        let b = [-1.0, -0.9, 2.0, -0.5, 0.5, 1.0, 1.0, 1.0, 1.0];
        assert_eq!(profile(&b, &stats_none()).tanh_ends, (0.5, 0.25));
        // A sigmoid: [0, 0.1] holds 4 (half of it at most 0.05), [0.95, 1] holds 2.
        let b = [0.0, 0.1, 4.0, 0.4, 0.6, 2.0, 0.95, 1.0, 2.0];
        assert_eq!(profile(&b, &stats_none()).sigmoid_ends, (0.25, 0.25));
    }

    /// Splitting a bucket in two, its count shared by width, changes nothing the rules read
    /// but the share at zero: each bucket's mass is taken as spread evenly over it.
    #[test]
    fn splitting_buckets_keeps_moments_and_end_shares() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut uniform = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        for _ in 0..200 {
            let mut edges: Vec<f64> = (0..6).map(|_| 2.4 * uniform() - 1.2).collect();
            edges.sort_by(f64::total_cmp);
            let buckets: Vec<f64> = edges
                .windows(2)
                .flat_map(|w| [w[0], w[1], (10.0 * uniform()).round()])
                .collect();
            let split: Vec<f64> = buckets
                .chunks_exact(3)
                .flat_map(|b| {
                    let at = b[0] + uniform() * (b[1] - b[0]);
                    let share = (at - b[0]) / (b[1] - b[0]);
                    [b[0], at, b[2] * share, at, b[1], b[2] * (1.0 - share)]
                })
                .collect();
            let (a, b) = (
                profile(&buckets, &stats_none()),
                profile(&split, &stats_none()),
            );
            let close = |x: f64, y: f64| {
                (x - y).abs() <= 1e-9 * (1.0 + x.abs()) || (x.is_nan() && y.is_nan())
            };
            assert!(close(a.count, b.count) && close(a.mean, b.mean) && close(a.std, b.std));
            assert!(close(a.tanh_ends.0, b.tanh_ends.0) && close(a.tanh_ends.1, b.tanh_ends.1));
            assert!(close(a.sigmoid_ends.0, b.sigmoid_ends.0));
            assert!(close(a.sigmoid_ends.1, b.sigmoid_ends.1));
        }
    }
}
