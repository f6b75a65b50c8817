//! Many histograms at once: a model's tensors binned in parallel, each exactly as alone.
//!
//! `run.watch` captures every parameter and gradient of a model at the same
//! step. Binning them one call at a time leaves cores idle on the many small
//! tensors (biases, norms) and pays a call per tensor; here rayon spreads the
//! tensors over its threads, and a large tensor still splits into chunks
//! inside `binning::histogram`, so the work balances both ways.

use rayon::prelude::*;
use thiserror::Error;

use crate::bins::binning::{histogram, BinningError, Bins, Histogram, Values};

/// Up to this many values in all, the tensors are binned one after the
/// other on the calling thread: waking rayon's threads for a model of small
/// tensors costs more than binning them (about 14 us a tensor, measured).
const SEQUENTIAL_UP_TO: usize = 1 << 16;

/// Why one of the tensors could not be binned, and which.
#[derive(Debug, Error, PartialEq)]
#[error("tensor {index}: {source}")]
pub struct BatchError {
    pub index: usize,
    #[source]
    pub source: BinningError,
}

/// Bins each of `values` into `bins`, as `binning::histogram(values[i], None, bins)`
/// would, in parallel; the results are in the order of `values`.
///
/// The first tensor (in order) that cannot be binned is the error, so the
/// answer never depends on the number of threads.
pub fn histograms(values: &[Values<'_>], bins: Bins<'_>) -> Result<Vec<Histogram>, BatchError> {
    let total: usize = values.iter().map(Values::len).sum();
    let bin = |v: &Values<'_>| histogram(*v, None, bins);
    let results: Vec<Result<Histogram, BinningError>> = if total <= SEQUENTIAL_UP_TO {
        values.iter().map(bin).collect()
    } else {
        values.par_iter().with_max_len(1).map(bin).collect()
    };
    results
        .into_iter()
        .enumerate()
        .map(|(index, r)| r.map_err(|source| BatchError { index, source }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ramp(n: usize, scale: f32) -> Vec<f32> {
        (0..n).map(|i| (i as f32 * 0.37).sin() * scale).collect()
    }

    #[test]
    fn each_histogram_equals_binning_it_alone() {
        let big = ramp(1 << 19, 3.0);
        let small = ramp(17, 0.1);
        let ints: Vec<i64> = (0..1000).map(|i| i % 7 - 3).collect();
        let doubles = vec![1.5f64, f64::NAN, -2.0, f64::INFINITY, 0.25];
        let empty: Vec<f32> = Vec::new();
        let values = [
            Values::F32(&big),
            Values::F32(&small),
            Values::I64(&ints),
            Values::F64(&doubles),
            Values::F32(&empty),
        ];
        let bins = Bins::Uniform {
            count: 64,
            range: None,
        };
        let together = histograms(&values, bins).unwrap();
        assert_eq!(together.len(), values.len());
        for (v, h) in values.iter().zip(&together) {
            let alone = histogram(*v, None, bins).unwrap();
            assert_eq!((&h.edges, &h.counts), (&alone.edges, &alone.counts));
            // Bit for bit, so that the NaN statistics of no values compare equal.
            let bits = |s: [f64; 8]| s.map(f64::to_bits);
            assert_eq!(bits(h.stats.to_array()), bits(alone.stats.to_array()));
        }
        assert_eq!(together[3].stats.nonfinite, 2.0);
        assert_eq!(together[4].stats.count, 0.0);
    }

    #[test]
    fn small_batches_binned_in_turn_equal_each_alone() {
        let tensors: Vec<Vec<f32>> = (1..40).map(|i| ramp(i * 7, i as f32)).collect();
        let values: Vec<Values<'_>> = tensors.iter().map(|t| Values::F32(t)).collect();
        assert!(tensors.iter().map(Vec::len).sum::<usize>() <= SEQUENTIAL_UP_TO);
        let bins = Bins::Uniform {
            count: 16,
            range: None,
        };
        for (v, h) in values.iter().zip(histograms(&values, bins).unwrap()) {
            assert_eq!(h, histogram(*v, None, bins).unwrap());
        }
    }

    #[test]
    fn the_first_failing_tensor_is_named() {
        let fine = [1.0f64, 2.0];
        let too_wide = [-f64::MAX, f64::MAX];
        let values = [
            Values::F64(&fine),
            Values::F64(&too_wide),
            Values::F64(&too_wide),
        ];
        let bins = Bins::Uniform {
            count: 4,
            range: None,
        };
        let error = histograms(&values, bins).unwrap_err();
        assert_eq!(error.index, 1);
        assert!(error.to_string().starts_with("tensor 1: range must be"));
    }

    #[test]
    fn no_tensors_give_no_histograms() {
        let bins = Bins::Uniform {
            count: 8,
            range: None,
        };
        assert_eq!(histograms(&[], bins), Ok(Vec::new()));
    }
}
