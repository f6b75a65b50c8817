//! TensorBoard's distribution compressor: a histogram reduced to its values at nine percentiles.
//!
//! Mirrors `compress_histogram` in
//! `tensorboard/plugins/distribution/compressor.py` value for value, ties
//! included: the total is summed in NumPy's pairwise order and the cumulative
//! weights in sequence, as there, so a basis point that lands exactly on a
//! bucket boundary picks the same bucket.

/// The percentiles drawn over steps, in basis points (1/100ths of a percent):
/// the minimum, the bands holding 68%, 86% and all of the values, the median.
pub const BASIS_POINTS: [f64; 9] = [
    0.0, 668.0, 1587.0, 3085.0, 5000.0, 6915.0, 8413.0, 9332.0, 10000.0,
];

/// The value of a histogram at each of [`BASIS_POINTS`].
pub type Compressed = [f64; BASIS_POINTS.len()];

/// TensorBoard's `compress_histogram` of `buckets`, flattened (left, right, count) rows.
///
/// Each basis point is interpolated linearly inside the first bucket, with a
/// count, whose cumulative weight passes it; past the last bucket it is the
/// greatest edge. A histogram without buckets gives zeros.
pub fn compress_histogram(buckets: &[f64]) -> Compressed {
    let rows: Vec<&[f64]> = buckets.chunks_exact(3).collect();
    let (Some(first), Some(last)) = (rows.first(), rows.last()) else {
        return [0.0; BASIS_POINTS.len()];
    };
    let (minmin, maxmax) = (first[0], last[1]);
    let counts: Vec<f64> = rows.iter().map(|row| row[2]).collect();
    let total = match pairwise_sum(&counts) {
        0.0 => 1.0,
        sum => sum,
    };
    let full = BASIS_POINTS[BASIS_POINTS.len() - 1];
    let mut weights = counts;
    let mut cumulative = 0.0;
    for weight in &mut weights {
        cumulative += *weight * full / total;
        *weight = cumulative;
    }
    let mut out = [maxmax; BASIS_POINTS.len()];
    let mut passed = 0; // the first weight past the current basis point, as `searchsorted(side="right")`
    for (value, &bp) in out.iter_mut().zip(&BASIS_POINTS) {
        while passed < weights.len() && weights[passed] <= bp {
            passed += 1;
        }
        // Buckets adding no weight are skipped, as TensorBoard does to avoid dividing by zero.
        let before = |i: usize| if i == 0 { 0.0 } else { weights[i - 1] };
        let Some(i) = (passed..weights.len()).find(|&i| weights[i] != before(i)) else {
            break; // this and every later basis point: the greatest edge
        };
        let (cum, cum_prev) = (weights[i], before(i));
        let lhs = if i == 0 || cum_prev == 0.0 {
            minmin
        } else {
            rows[i - 1][1].max(minmin)
        };
        let rhs = rows[i][1].min(maxmax);
        *value = lhs + (bp - cum_prev) * (rhs - lhs) / (cum - cum_prev);
    }
    out
}

/// NumPy's sum of a float array: pairwise over halves, blocks of up to 128
/// summed in eight lanes, so that totals round exactly as `ndarray.sum()` does.
fn pairwise_sum(values: &[f64]) -> f64 {
    const BLOCK: usize = 128;
    let n = values.len();
    if n < 8 {
        values.iter().fold(0.0, |sum, v| sum + v)
    } else if n <= BLOCK {
        let mut lanes = [0.0; 8];
        lanes.copy_from_slice(&values[..8]);
        let whole = n - n % 8;
        for chunk in values[8..whole].chunks_exact(8) {
            for (lane, v) in lanes.iter_mut().zip(chunk) {
                *lane += v;
            }
        }
        let head = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3]))
            + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
        values[whole..].iter().fold(head, |sum, v| sum + v)
    } else {
        let half = n / 2 - (n / 2) % 8;
        pairwise_sum(&values[..half]) + pairwise_sum(&values[half..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values printed by TensorBoard 2.x's `compress_histogram` for the same buckets.
    #[test]
    fn equals_tensorboards_compressor() {
        let buckets = [-1.0, 0.0, 1.0, 0.0, 1.0, 2.0, 1.0, 3.0, 1.0];
        let want = [
            -1.0,
            -0.7328,
            -0.36519999999999997,
            0.117,
            0.5,
            0.883,
            1.7304,
            2.4656000000000002,
            3.0,
        ];
        let got = compress_histogram(&buckets);
        assert_eq!(got, want);
    }

    #[test]
    fn a_basis_point_on_a_boundary_skips_the_empty_buckets_after_it() {
        // Half the weight ends at 1; the median is found past the empty bucket [1, 5).
        let buckets = [0.0, 1.0, 1.0, 1.0, 5.0, 0.0, 5.0, 6.0, 1.0];
        let got = compress_histogram(&buckets);
        let want = [0.0, 0.1336, 0.3174, 0.617, 5.0, 5.383, 5.6826, 5.8664, 6.0];
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "got {got:?}, want {want:?}");
        }
    }

    #[test]
    fn no_buckets_give_zeros_and_no_weight_gives_the_greatest_edge() {
        assert_eq!(compress_histogram(&[]), [0.0; 9]);
        let empty = [0.0, 1.0, 0.0, 1.0, 2.0, 0.0];
        assert_eq!(compress_histogram(&empty), [2.0; 9]);
    }

    #[test]
    fn a_single_bucket_is_interpolated_linearly() {
        let got = compress_histogram(&[-1.0, 3.0, 4.0]);
        let want = BASIS_POINTS.map(|bp| -1.0 + 4.0 * bp / 10000.0);
        assert_eq!(got, want);
    }

    /// Totals NumPy printed for `np.array(values).sum()`, where a sequential sum differs.
    #[test]
    fn sums_in_numpys_pairwise_order() {
        let values: Vec<f64> = (0..300).map(|i| 0.1 * f64::from(i % 7) + 1e-3).collect();
        let sequential: f64 = values.iter().sum();
        assert_eq!(pairwise_sum(&values), 90.0);
        assert_eq!(sequential, 89.99999999999999);
        assert_eq!(pairwise_sum(&[0.1, 0.2, 0.3]), 0.6000000000000001);
    }
}
