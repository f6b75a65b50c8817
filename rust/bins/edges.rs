//! The rules for bin edges that binning and rebinning share: the bin limit,
//! the default range, widening a zero span, and equal edges.

use thiserror::Error;

/// The most bins a histogram may have, when logging and when rebinning for a chart.
///
/// Why 512: charts are read at 30 to 100 bins (TensorBoard's own default is
/// 30; maidr's users rebin to that range), and a bin narrower than two
/// pixels, or a sound and braille rendering that reads hundreds of bins one
/// by one, shows nothing more. 512 leaves room for a fine look at one step
/// while bounding what a logged step costs: 8 KiB of counts and as much of
/// edges, however many steps a run holds in memory. It is also the limit
/// the Python API has always had, so no caller loses anything.
pub const MAX_BINS: usize = 512;

/// The number of equal bins a histogram is logged with when none is asked for
/// (`Run.log`, `watch`, `Histogram`, the framework callbacks).
pub const DEFAULT_BINS: usize = 64;

/// Why a number of bins, a range or a list of edges cannot be used.
#[derive(Debug, Error, PartialEq)]
pub enum EdgesError {
    #[error("bins must be from 1 to {MAX_BINS}, got {0}")]
    BinCount(i64),
    #[error("edges must be from 2 to {max} values, got {0}", max = MAX_BINS + 1)]
    EdgeCount(usize),
    #[error("edges must be finite, got {value} at index {index}")]
    NonfiniteEdge { index: usize, value: f64 },
    #[error("edges must increase, got {value} after {previous} at index {index}")]
    EdgesNotIncreasing {
        index: usize,
        previous: f64,
        value: f64,
    },
    #[error("range must be (lo, hi) with lo < hi and hi - lo finite, got ({lo}, {hi})")]
    BadRange { lo: f64, hi: f64 },
}

/// Checks a number of equal bins against [`MAX_BINS`]; signed, so that a
/// negative number from Python is refused with the same message.
pub fn check_bin_count(count: i64) -> Result<(), EdgesError> {
    if (1..=MAX_BINS as i64).contains(&count) {
        Ok(())
    } else {
        Err(EdgesError::BinCount(count))
    }
}

/// Checks explicit edges: from 2 to `MAX_BINS + 1`, finite, strictly increasing.
pub fn check_edges(edges: &[f64]) -> Result<(), EdgesError> {
    if !(2..=MAX_BINS + 1).contains(&edges.len()) {
        return Err(EdgesError::EdgeCount(edges.len()));
    }
    if let Some(index) = edges.iter().position(|e| !e.is_finite()) {
        let value = edges[index];
        return Err(EdgesError::NonfiniteEdge { index, value });
    }
    if let Some(i) = edges.windows(2).position(|w| w[0] >= w[1]) {
        return Err(EdgesError::EdgesNotIncreasing {
            index: i + 1,
            previous: edges[i],
            value: edges[i + 1],
        });
    }
    Ok(())
}

/// Checks that equal bins can span `lo` to `hi`.
pub fn check_range(lo: f64, hi: f64) -> Result<(), EdgesError> {
    if lo.is_finite() && hi.is_finite() && lo < hi && (hi - lo).is_finite() {
        Ok(())
    } else {
        Err(EdgesError::BadRange { lo, hi })
    }
}

/// numpy's default range for values from `min` to `max`: those two, a zero
/// span widened by [`widen`], and (0, 1) when there are no values (`min > max`
/// or either is NaN).
///
/// A span so narrow beside its magnitude that equal bins of it would not
/// have distinct float64 edges (numpy raises "too many bins" there) is
/// widened as a constant at its middle would be.
pub fn default_range(min: f64, max: f64) -> (f64, f64) {
    if min.partial_cmp(&max).is_none_or(|order| order.is_gt()) {
        (0.0, 1.0)
    } else if min == max {
        widen(min)
    } else if max - min <= relative_half(min.abs().max(max.abs())) {
        widen(min + (max - min) / 2.0)
    } else {
        (min, max)
    }
}

/// 2^-40 of a magnitude: far wider than the 2^-52 rounding of an edge, so
/// that even [`MAX_BINS`] bins of twice this have distinct edges, and far
/// narrower than any spread of values worth seeing.
fn relative_half(magnitude: f64) -> f64 {
    magnitude * 2f64.powi(-40)
}

/// A span of zero width around `value`: a half on each side, as numpy does.
///
/// A value too large for a half to move it (numpy raises "too many bins"
/// there, and rebinning a constant 1e20 made bins of zero width) is widened
/// by 2^-40 of itself instead, so that a constant always gets bins of some
/// width. At the largest finite magnitudes the span is clamped so that its
/// ends and its width stay finite.
pub fn widen(value: f64) -> (f64, f64) {
    let half = 0.5f64.max(relative_half(value.abs()));
    let (lo, hi) = (value - half, value + half);
    if (hi - lo).is_finite() {
        (lo, hi)
    } else if value > 0.0 {
        (f64::MAX / 2.0, f64::MAX)
    } else {
        (-f64::MAX, -f64::MAX / 2.0)
    }
}

/// The edges of `count` equal bins from `lo` to `hi`, as `numpy.linspace`
/// computes them: `j * step + lo`, the last one `hi` exactly. Where the step
/// underflows to 0 (a span of a few subnormals), `j / count * (hi - lo) + lo`,
/// numpy's special case, so that the edges still climb to `hi`.
pub fn uniform_edges(lo: f64, hi: f64, count: usize) -> Vec<f64> {
    let span = hi - lo;
    let step = span / count as f64;
    let edge = |j: usize| {
        if step == 0.0 {
            j as f64 / count as f64 * span + lo
        } else {
            j as f64 * step + lo
        }
    };
    let mut edges: Vec<f64> = (0..=count).map(edge).collect();
    edges[count] = hi;
    edges
}

/// [`uniform_edges`] for a count and range from outside, checked first: `count`
/// from 1 to [`MAX_BINS`] and a range equal bins can span.
pub fn checked_uniform_edges(lo: f64, hi: f64, count: i64) -> Result<Vec<f64>, EdgesError> {
    check_bin_count(count)?;
    check_range(lo, hi)?;
    Ok(uniform_edges(lo, hi, count as usize))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_that_underflows_takes_numpys_special_case() {
        // np.linspace(0.0, 5e-324, 4).tolist(): the step 5e-324 / 3 is 0.
        let tiny = f64::from_bits(1);
        assert_eq!(uniform_edges(0.0, tiny, 3), vec![0.0, 0.0, tiny, tiny]);
        assert_eq!(
            uniform_edges(-tiny, tiny, 5),
            vec![-tiny, -tiny, 0.0, 0.0, tiny, tiny]
        );
    }

    #[test]
    fn uniform_edges_are_numpys_linspace() {
        assert_eq!(uniform_edges(0.0, 1.0, 4), vec![0.0, 0.25, 0.5, 0.75, 1.0]);
        // np.linspace(-0.3, 1.1, 7).tolist(), which differs from -0.3 + j * 1.4 / 6.
        assert_eq!(
            uniform_edges(-0.3, 1.1, 6),
            vec![
                -0.3,
                -0.06666666666666662,
                0.16666666666666674,
                0.4000000000000001,
                0.6333333333333335,
                0.8666666666666667,
                1.1
            ]
        );
    }

    #[test]
    fn default_range_is_numpys_with_no_values_zero_to_one() {
        assert_eq!(default_range(-2.0, 3.0), (-2.0, 3.0));
        assert_eq!(default_range(2.0, 2.0), (1.5, 2.5));
        assert_eq!(default_range(f64::INFINITY, f64::NEG_INFINITY), (0.0, 1.0));
        assert_eq!(default_range(f64::NAN, f64::NAN), (0.0, 1.0));
        // Two neighbouring float64 values near 1e20: numpy finds no room for bins.
        let (lo, hi) = default_range(1e20, 1e20f64.next_up());
        assert!(lo < 1e20 && hi > 1e20f64.next_up());
        let edges = uniform_edges(lo, hi, MAX_BINS);
        assert!(edges.windows(2).all(|w| w[0] < w[1]));
        // A narrow span of small values is numpy's own.
        assert_eq!(default_range(1.0, 1.0 + 1e-9), (1.0, 1.0 + 1e-9));
    }

    #[test]
    fn a_large_constant_is_widened_relative_to_itself() {
        for value in [1e20, -1e20, 3e300, f64::MAX, -f64::MAX, 1e16 + 2.0] {
            let (lo, hi) = widen(value);
            assert!(lo < hi && (hi - lo).is_finite(), "{value}: ({lo}, {hi})");
            assert!(lo <= value && value <= hi, "{value}: ({lo}, {hi})");
            let edges = uniform_edges(lo, hi, MAX_BINS);
            assert!(edges.windows(2).all(|w| w[0] < w[1]), "{value}");
        }
        assert_eq!(
            widen(1e20),
            (1e20 - 1e20 / 2f64.powi(40), 1e20 + 1e20 / 2f64.powi(40))
        );
        assert_eq!(widen(0.0), (-0.5, 0.5));
    }

    #[test]
    fn the_bin_limit_and_its_messages() {
        assert_eq!(check_bin_count(1), Ok(()));
        assert_eq!(check_bin_count(MAX_BINS as i64), Ok(()));
        assert_eq!(check_bin_count(-3), Err(EdgesError::BinCount(-3)));
        assert_eq!(check_bin_count(0), Err(EdgesError::BinCount(0)));
        assert_eq!(
            check_bin_count(MAX_BINS as i64 + 1)
                .unwrap_err()
                .to_string(),
            "bins must be from 1 to 512, got 513"
        );
        assert_eq!(check_edges(&[0.0, 1.0]), Ok(()));
        assert_eq!(check_edges(&[1.0]), Err(EdgesError::EdgeCount(1)));
        let too_many = uniform_edges(0.0, 1.0, MAX_BINS + 1);
        assert_eq!(
            check_edges(&too_many),
            Err(EdgesError::EdgeCount(MAX_BINS + 2))
        );
        assert!(matches!(
            check_edges(&[0.0, f64::NAN]),
            Err(EdgesError::NonfiniteEdge { index: 1, .. })
        ));
        assert_eq!(
            check_edges(&[0.0, 1.0, 1.0]).unwrap_err().to_string(),
            "edges must increase, got 1 after 1 at index 2"
        );
        assert!(check_range(0.0, 1.0).is_ok());
        assert!(check_range(1.0, 1.0).is_err());
        assert!(check_range(-f64::MAX, f64::MAX).is_err());
        assert!(check_range(0.0, f64::NAN).is_err());
    }

    #[test]
    fn the_default_bin_count_is_within_the_limit() {
        assert_eq!(check_bin_count(DEFAULT_BINS as i64), Ok(()));
    }

    #[test]
    fn checked_uniform_edges_check_the_count_before_the_range() {
        assert_eq!(checked_uniform_edges(0.0, 1.0, 2), Ok(vec![0.0, 0.5, 1.0]));
        assert_eq!(
            checked_uniform_edges(1.0, 0.0, 0),
            Err(EdgesError::BinCount(0))
        );
        assert_eq!(
            checked_uniform_edges(1.0, 0.0, 2),
            Err(EdgesError::BadRange { lo: 1.0, hi: 0.0 })
        );
    }
}
