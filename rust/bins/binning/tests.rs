//! Binning checked against numpy's rule written out, on awkward edges, float32, weights and long slices.

use super::float32::moments_f32;
use super::grid32::{f32_at_least, f32_at_most};
use super::locate::Binner;
use super::*;

/// numpy's rule spelled out: bin j holds edges[j] <= x < edges[j + 1], the last bin closed.
fn reference(values: &[f64], edges: &[f64]) -> (Vec<f64>, f64, f64) {
    let bins = edges.len() - 1;
    let mut counts = vec![0.0; bins];
    let (mut below, mut above) = (0.0, 0.0);
    for &x in values.iter().filter(|x| x.is_finite()) {
        if x < edges[0] {
            below += 1.0;
        } else if x > edges[bins] {
            above += 1.0;
        } else {
            let j = (0..bins)
                .rev()
                .find(|&j| edges[j] <= x)
                .expect("x >= edges[0]");
            counts[j] += 1.0;
        }
    }
    (counts, below, above)
}

fn uniform(count: usize, range: Option<(f64, f64)>) -> Bins<'static> {
    Bins::Uniform { count, range }
}

/// A reproducible spread of values without a random number crate.
fn spread(n: usize) -> Vec<f64> {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64 * 6.0 - 3.0
        })
        .collect()
}

#[test]
fn values_on_edges_go_right_and_the_last_bin_is_closed() {
    let values = [0.0, 0.25, 0.5, 0.75, 1.0, 0.1];
    let h = histogram(Values::F64(&values), None, uniform(4, None)).unwrap();
    assert_eq!(h.edges, vec![0.0, 0.25, 0.5, 0.75, 1.0]);
    assert_eq!(h.counts, vec![2.0, 1.0, 1.0, 2.0]);
}

#[test]
fn counts_match_the_reference_on_awkward_edges() {
    // Edges whose values are not the products the multiplication guesses.
    let edges = uniform_edges(-0.3, 1.1, 6);
    let mut values: Vec<f64> = edges.clone();
    values.extend(edges.iter().map(|e| e.next_up()));
    values.extend(edges.iter().map(|e| e.next_down()));
    values.push(0.4);
    let h = histogram(Values::F64(&values), None, uniform(6, Some((-0.3, 1.1)))).unwrap();
    let (counts, below, above) = reference(&values, &edges);
    assert_eq!(h.counts, counts);
    assert_eq!((h.stats.below, h.stats.above), (below, above));
    assert_eq!((below, above), (1.0, 1.0));
}

#[test]
fn outside_and_nonfinite_values_are_kept_out_of_the_bins() {
    let values = [
        -2.0,
        0.5,
        3.0,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        1.0,
    ];
    let h = histogram(Values::F64(&values), None, uniform(2, Some((0.0, 1.0)))).unwrap();
    assert_eq!(h.counts, vec![0.0, 2.0]);
    let s = h.stats;
    assert_eq!(
        (s.count, s.nonfinite, s.below, s.above),
        (4.0, 3.0, 1.0, 1.0)
    );
    assert_eq!((s.min, s.max), (-2.0, 3.0));
    assert_eq!(s.mean, 0.625);
    let var = [-2.0f64, 0.5, 3.0, 1.0]
        .iter()
        .map(|x| (x - 0.625).powi(2))
        .sum::<f64>()
        / 4.0;
    assert!((s.std - var.sqrt()).abs() < 1e-15);
}

#[test]
fn a_single_value_is_widened_by_half_and_none_give_zero_to_one() {
    let h = histogram(Values::F32(&[2.0, 2.0]), None, uniform(2, None)).unwrap();
    assert_eq!(h.edges, vec![1.5, 2.0, 2.5]);
    assert_eq!(h.counts, vec![0.0, 2.0]);
    assert_eq!(h.stats.std, 0.0);

    // numpy raises "too many bins" here; a constant must never fail to log.
    let h = histogram(Values::F64(&[1e20; 3]), None, uniform(4, None)).unwrap();
    assert_eq!(h.counts.iter().sum::<f64>(), 3.0);
    assert!(h.edges.windows(2).all(|w| w[0] < w[1]));

    for values in [&[][..], &[f64::NAN, f64::INFINITY][..]] {
        let h = histogram(Values::F64(values), None, uniform(2, None)).unwrap();
        assert_eq!(h.edges, vec![0.0, 0.5, 1.0]);
        assert_eq!(h.counts, vec![0.0, 0.0]);
        assert_eq!(h.stats.count, 0.0);
        assert_eq!(h.stats.nonfinite, values.len() as f64);
        assert!(h.stats.min.is_nan() && h.stats.mean.is_nan() && h.stats.std.is_nan());
    }
}

#[test]
fn explicit_edges_use_the_same_rule() {
    let edges = [-1.0, 0.0, 0.5, 2.0];
    let values = [-1.0, -0.5, 0.0, 0.5, 1.9, 2.0, 2.5, -3.0];
    let h = histogram(Values::F64(&values), None, Bins::Edges(&edges)).unwrap();
    assert_eq!(h.counts, vec![2.0, 1.0, 3.0]);
    assert_eq!((h.stats.below, h.stats.above), (1.0, 1.0));
    assert_eq!(h.edges, edges.to_vec());
}

#[test]
fn weights_weigh_counts_and_statistics() {
    let values = [0.0, 1.0, 2.0, f64::NAN, 5.0, -1.0];
    let weights = [1.0, 2.0, 3.0, 4.0, 0.0, 0.5];
    let h = histogram(
        Values::F64(&values),
        Some(&weights),
        uniform(2, Some((0.0, 2.0))),
    )
    .unwrap();
    assert_eq!(h.counts, vec![1.0, 5.0]);
    let s = h.stats;
    assert_eq!(
        (s.count, s.nonfinite, s.below, s.above),
        (6.5, 4.0, 0.5, 0.0)
    );
    // The value with weight 0 is not the maximum.
    assert_eq!((s.min, s.max), (-1.0, 2.0));
    let mean = (2.0 + 6.0 - 0.5) / 6.5;
    assert!((s.mean - mean).abs() < 1e-15);
    let var = (mean * mean
        + 2.0 * (1.0 - mean).powi(2)
        + 3.0 * (2.0 - mean).powi(2)
        + 0.5 * (-1.0 - mean).powi(2))
        / 6.5;
    assert!((s.std - var.sqrt()).abs() < 1e-15);
}

#[test]
fn long_slices_in_parallel_match_the_reference() {
    let values = spread(PARALLEL_ABOVE * 3 + 17);
    let bins = uniform(50, Some((-2.0, 2.5)));
    let h = histogram(Values::F64(&values), None, bins).unwrap();
    let (counts, below, above) = reference(&values, &h.edges);
    assert_eq!(h.counts, counts);
    assert_eq!((h.stats.below, h.stats.above), (below, above));
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    assert!((h.stats.mean - mean).abs() < 1e-12);
    assert!((h.stats.std - var.sqrt()).abs() < 1e-12);

    let ones = vec![1.0; values.len()];
    let weighted = histogram(Values::F64(&values), Some(&ones), bins).unwrap();
    assert_eq!(weighted.counts, h.counts);
    assert_eq!(weighted.stats, h.stats);
}

/// For each edge, the float32 values just below, nearest and just above it.
fn float32_around(edges: &[f64]) -> Vec<f32> {
    edges
        .iter()
        .flat_map(|&e| {
            let (down, up) = (f32_at_most(e), f32_at_least(e));
            [down.next_down(), down, up, up.next_up()]
        })
        .collect()
}

/// `values` with `spread`'s values over `lo - width` to `hi + width`
/// and a few nonfinite ones, as float32.
fn float32_sample(values: Vec<f32>, lo: f64, hi: f64) -> Vec<f32> {
    let width = hi - lo;
    let mut values = values;
    values.extend(
        spread(10_001)
            .iter()
            .map(|&x| (lo + (x + 3.0) / 2.0 * width) as f32),
    );
    values.extend([f32::NAN, f32::INFINITY, f32::NEG_INFINITY]);
    values
}

fn assert_float32_matches_reference(values: &[f32], bins: Bins<'_>) {
    let h = histogram(Values::F32(values), None, bins).unwrap();
    let widened: Vec<f64> = values.iter().map(|&v| f64::from(v)).collect();
    let (counts, below, above) = reference(&widened, &h.edges);
    assert_eq!(h.counts, counts, "{bins:?}");
    assert_eq!((h.stats.below, h.stats.above), (below, above), "{bins:?}");
}

#[test]
fn float32_values_next_to_edges_go_where_their_float64_values_do() {
    for (lo, hi, bins) in [
        (-0.3, 1.1, 6),
        (-3.7, 2.9, 50),
        (0.1, 0.7, 512),
        (1000.0, 1003.0, 7),
        (-1e-30, 3e-30, 10),
    ] {
        let edges = uniform_edges(lo, hi, bins);
        assert!(Binner::new(&edges).grid32.is_some(), "({lo}, {hi}, {bins})");
        let values = float32_sample(float32_around(&edges), lo, hi);
        assert_float32_matches_reference(&values, uniform(bins, Some((lo, hi))));
    }
}

#[test]
fn float32_values_all_inside_the_edges_go_where_their_float64_values_do() {
    // Finite and inside, so each chunk takes `tally_inside`.
    for (lo, hi, bins) in [
        (-0.3, 1.1, 6),
        (-3.7, 2.9, 50),
        (0.1, 0.7, 512),
        (1000.0, 1003.0, 7),
    ] {
        let edges = uniform_edges(lo, hi, bins);
        let grid = Binner::new(&edges).grid32.expect("a float32 grid");
        let (lowest, highest) = (f32_at_least(lo), f32_at_most(hi));
        let values: Vec<f32> = float32_sample(float32_around(&edges), lo, hi)
            .into_iter()
            .filter(|&x| x >= lowest && x <= highest)
            .collect();
        assert!(grid.holds(&moments_f32(&values)), "({lo}, {hi}, {bins})");
        assert_float32_matches_reference(&values, uniform(bins, Some((lo, hi))));
    }
}

proptest::proptest! {
    #[test]
    fn float32_values_in_the_default_range_go_where_their_float64_values_do(
        seed in proptest::collection::vec(-1e4f32..1e4, 1..40),
        scale in proptest::sample::select(vec![1e-6f32, 1e-3, 1.0, 1e3]),
        repeat in 1usize..300,
        bins in 1usize..200,
    ) {
        // Repeated values, as weights quantised or clipped have, landing on edges.
        let values: Vec<f32> = (0..seed.len() * repeat)
            .map(|i| seed[i % seed.len()] * scale * (1.0 + (i / seed.len()) as f32 / 64.0))
            .collect();
        assert_float32_matches_reference(&values, uniform(bins, None));
    }
}

#[test]
fn float32_grids_too_fine_for_float32_are_binned_in_float64() {
    for (lo, hi, bins) in [(1e6, 1e6 + 1.0, 50), (-1e39, 1e39, 4), (0.0, 1e-39, 3)] {
        let edges = uniform_edges(lo, hi, bins);
        assert!(Binner::new(&edges).grid.is_some(), "({lo}, {hi}, {bins})");
        assert!(Binner::new(&edges).grid32.is_none(), "({lo}, {hi}, {bins})");
        let values = float32_sample(float32_around(&edges), lo, hi);
        assert_float32_matches_reference(&values, uniform(bins, Some((lo, hi))));
    }
}

#[test]
fn float32_extremes_in_the_default_range_go_in_the_end_bins() {
    // Like ReLU outputs: many zeros, the minimum, and many values at the maximum.
    let mut values: Vec<f32> = spread(PARALLEL_ABOVE + 5)
        .iter()
        .map(|&x| x.clamp(0.0, 2.5) as f32)
        .collect();
    values.extend([0.1f32.next_down(), 0.1, 0.1f32.next_up()]);
    for bins in [1, 7, 50] {
        assert_float32_matches_reference(&values, uniform(bins, None));
        let h = histogram(Values::F32(&values), None, uniform(bins, None)).unwrap();
        let zeros = values.iter().filter(|&&v| v == 0.0).count() as f64;
        let tops = values.iter().filter(|&&v| v == 2.5).count() as f64;
        assert!(h.counts[0] >= zeros && h.counts[bins - 1] >= tops);
    }
}

#[test]
fn unweighted_float32_statistics_are_the_weighted_kernels_bits() {
    // Lengths that end with a partial lane block, nonfinite values among them.
    for n in [0, 1, 7, 8, 13, CHUNK + 3, PARALLEL_ABOVE * 2 + 5] {
        let mut values: Vec<f32> = spread(n).iter().map(|&x| (x * 1e3 + 7.0) as f32).collect();
        for i in (0..n).step_by(97) {
            values[i] = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY][i % 3];
        }
        let ones = vec![1.0; n];
        for bins in [uniform(50, None), uniform(9, Some((-900.0, 1100.0)))] {
            let plain = histogram(Values::F32(&values), None, bins).unwrap();
            let weighted = histogram(Values::F32(&values), Some(&ones), bins).unwrap();
            assert_eq!(plain.counts, weighted.counts, "{n} values, {bins:?}");
            let bits = |h: &Histogram| h.stats.to_array().map(f64::to_bits);
            assert_eq!(bits(&plain), bits(&weighted), "{n} values, {bins:?}");
        }
    }
}

#[test]
fn a_large_mean_does_not_cost_the_spread() {
    // Variance 1/4 around 1e9: naive sums of squares lose every digit of it.
    let values: Vec<f64> = (0..PARALLEL_ABOVE * 2)
        .map(|i| 1e9 + if i % 2 == 0 { 0.5 } else { -0.5 })
        .collect();
    let h = histogram(Values::F64(&values), None, uniform(4, None)).unwrap();
    assert_eq!(h.stats.mean, 1e9);
    assert!((h.stats.std - 0.5).abs() < 1e-9, "std {}", h.stats.std);
}

#[test]
fn every_element_type_converts_exactly() {
    let bins = uniform(3, Some((-1.0, 2.0)));
    let check = |values: Values<'_>| {
        let h = histogram(values, None, bins).unwrap();
        let unsigned = matches!(
            values,
            Values::U8(_) | Values::U16(_) | Values::U32(_) | Values::U64(_)
        );
        let expect = if unsigned { [0.0, 1.0, 1.0] } else { [1.0; 3] };
        assert_eq!(h.counts, expect, "{values:?}");
        assert_eq!(h.stats.above, if unsigned { 1.0 } else { 0.0 });
    };
    check(Values::F64(&[-1.0, 0.0, 1.0]));
    check(Values::F32(&[-1.0, 0.0, 1.0]));
    // binary16 -1.0, 0.0, 1.0 and NaN; bfloat16 likewise.
    check(Values::Half(
        &[0xbc00, 0x0000, 0x3c00, 0x7e00],
        HalfFloat::Float16,
    ));
    check(Values::Half(
        &[0xbf80, 0x0000, 0x3f80, 0x7fc0],
        HalfFloat::Bfloat16,
    ));
    check(Values::I8(&[-1, 0, 1]));
    check(Values::I16(&[-1, 0, 1]));
    check(Values::I32(&[-1, 0, 1]));
    check(Values::I64(&[-1, 0, 1]));
    check(Values::U8(&[0, 1, 5]));
    check(Values::U16(&[0, 1, 5]));
    check(Values::U32(&[0, 1, 5]));
    check(Values::U64(&[0, 1, 5]));
    let h = histogram(Values::Bool(&[true, false, true]), None, uniform(2, None)).unwrap();
    assert_eq!(h.counts, vec![1.0, 2.0]);
    let h = histogram(
        Values::Half(&[0x7c00, 0x3c00], HalfFloat::Float16),
        None,
        uniform(2, None),
    )
    .unwrap();
    assert_eq!(h.stats.nonfinite, 1.0);
}

#[test]
fn bad_arguments_are_errors() {
    let v = Values::F64(&[1.0]);
    assert_eq!(
        histogram(v, None, uniform(0, None)),
        Err(BinningError::Edges(EdgesError::BinCount(0)))
    );
    assert_eq!(
        histogram(v, None, uniform(2, Some((1.0, 1.0)))),
        Err(BinningError::Edges(EdgesError::BadRange {
            lo: 1.0,
            hi: 1.0
        }))
    );
    assert!(histogram(v, None, uniform(2, Some((-f64::MAX, f64::MAX)))).is_err());
    assert!(histogram(v, None, uniform(2, Some((0.0, f64::NAN)))).is_err());
    assert_eq!(
        histogram(v, None, Bins::Edges(&[1.0])),
        Err(BinningError::Edges(EdgesError::EdgeCount(1)))
    );
    assert_eq!(
        histogram(v, None, Bins::Edges(&[0.0, f64::INFINITY])),
        Err(BinningError::Edges(EdgesError::NonfiniteEdge {
            index: 1,
            value: f64::INFINITY
        }))
    );
    let err = histogram(v, None, Bins::Edges(&[0.0, 1.0, 1.0])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "edges must increase, got 1 after 1 at index 2"
    );
    assert_eq!(
        histogram(v, Some(&[1.0, 2.0]), uniform(2, None)),
        Err(BinningError::WeightsLength {
            values: 1,
            weights: 2
        })
    );
}
