//! Spectral health of a weight matrix: the eigenvalues of `WᵀW / N` from its singular
//! values, their stable rank, the largest, α of their tail, and a log-binned histogram.
//!
//! The figures are WeightWatcher's (`weightwatcher.py`, Martin and Mahoney's
//! heavy-tailed self-regularization): `N` is the larger dimension of the matrix, so
//! that the eigenvalues do not grow with its size; a convolution kernel is read as the
//! matrices of its kernel positions, their eigenvalues pooled into one spectrum (the
//! caller computes those singular values, on the tensor's own device). The stable
//! rank `Σ λ / λ_max` and α (`power_law`) do not depend on `N`; only `λ_max` and the
//! histogram's axis do.

pub mod log_edges;
pub mod power_law;

use rayon::prelude::*;
use thiserror::Error;

use crate::bins::binning::{histogram, BinningError, Bins, Histogram, Values};
use crate::bins::edges::{check_bin_count, EdgesError};
pub use power_law::{PowerLaw, MIN_EIGENVALUES, SMALL_SPECTRUM};

/// Eigenvalues at or below this share of the largest are zeros of the arithmetic (a
/// float32 SVD leaves rank-deficient directions near 1e-14 of it), not of the spectrum:
/// they count in the stable rank (as nothing) and below the histogram, never as
/// candidates for the tail. WeightWatcher drops eigenvalues below 1e-5 for the same reason.
pub const ZERO_SHARE: f64 = 1e-12;

/// The first word of every spectrum's key (`spectrum/<name>`, its figures under
/// `spectrum/<name>/<figure>`), as `run.watch(spectral=True)` and `log_spectrum` write
/// them and the diagnosis and the viewer read them.
pub const SPECTRUM_PREFIX: &str = "spectrum/";

/// The spectrum of one weight matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct Spectrum {
    /// The eigenvalues of `WᵀW / N`, increasing: the squared singular values over `N`.
    pub eigenvalues: Vec<f64>,
    /// The largest eigenvalue: the squared spectral norm over `N`.
    pub lambda_max: f64,
    /// `Σ λ / λ_max`: the squared Frobenius norm over the squared spectral norm, from 1
    /// (one direction holds everything) to the number of eigenvalues (all equal).
    pub stable_rank: f64,
    /// The power law of the tail, where there are [`MIN_EIGENVALUES`] positive eigenvalues.
    pub power_law: Option<PowerLaw>,
    /// The eigenvalues binned between log-spaced edges from the smallest positive one to
    /// the largest (`log_edges`); zeros fall below the first edge.
    pub histogram: Histogram,
}

/// Why singular values give no spectrum.
#[derive(Debug, Error, PartialEq)]
pub enum SpectrumError {
    #[error("no singular values: the matrix is empty")]
    Empty,
    #[error("the larger dimension N must be at least 1, got 0")]
    NoDimension,
    #[error("singular values must be finite, got {value} at index {index}: the matrix holds NaN or infinite values")]
    NotFinite { index: usize, value: f64 },
    #[error("singular values cannot be negative, got {value} at index {index}")]
    Negative { index: usize, value: f64 },
    #[error("every singular value is 0: the matrix is all zeros, and its spectrum has no scale")]
    AllZero,
    #[error(transparent)]
    Bins(#[from] EdgesError),
    #[error(transparent)]
    Binning(#[from] BinningError),
}

/// The spectrum of a matrix from its singular values (any order; a convolution's
/// slices pooled), `n` its larger dimension, its histogram in `bins` log-spaced bins.
pub fn spectrum(singular_values: &[f64], n: usize, bins: usize) -> Result<Spectrum, SpectrumError> {
    check_bin_count(i64::try_from(bins).unwrap_or(i64::MAX))?;
    if singular_values.is_empty() {
        return Err(SpectrumError::Empty);
    }
    if n == 0 {
        return Err(SpectrumError::NoDimension);
    }
    for (index, &value) in singular_values.iter().enumerate() {
        if !value.is_finite() {
            return Err(SpectrumError::NotFinite { index, value });
        }
        if value < 0.0 {
            return Err(SpectrumError::Negative { index, value });
        }
    }
    let mut eigenvalues: Vec<f64> = singular_values.iter().map(|s| s * s / n as f64).collect();
    eigenvalues.sort_by(f64::total_cmp);
    let lambda_max = *eigenvalues.last().ok_or(SpectrumError::Empty)?;
    if lambda_max <= 0.0 {
        return Err(SpectrumError::AllZero);
    }
    let stable_rank = eigenvalues.iter().sum::<f64>() / lambda_max;
    let zero = lambda_max * ZERO_SHARE;
    let positive = &eigenvalues[eigenvalues.partition_point(|&x| x <= zero)..];
    let edges = log_edges::log_edges(positive[0], lambda_max, bins);
    let histogram = histogram(Values::F64(&eigenvalues), None, Bins::Edges(&edges))?;
    Ok(Spectrum {
        power_law: power_law::fit(positive),
        eigenvalues,
        lambda_max,
        stable_rank: stable_rank.clamp(1.0, singular_values.len() as f64),
        histogram,
    })
}

/// [`spectrum`] of several matrices at once, each on its own core: `(singular values, n)`.
pub fn spectra(matrices: &[(&[f64], usize)], bins: usize) -> Vec<Result<Spectrum, SpectrumError>> {
    matrices
        .par_iter()
        .map(|&(values, n)| spectrum(values, n, bins))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eigenvalues_are_squared_singular_values_over_n() {
        // A 4 x 2 matrix with singular values 2 and 1: eigenvalues of WᵀW / 4.
        let s = spectrum(&[1.0, 2.0], 4, 8).unwrap();
        assert_eq!(s.eigenvalues, vec![0.25, 1.0]);
        assert_eq!(s.lambda_max, 1.0);
        assert_eq!(s.stable_rank, 1.25);
        assert_eq!(s.power_law, None);
        assert_eq!(s.histogram.edges.len(), 9);
        assert_eq!((s.histogram.edges[0], s.histogram.edges[8]), (0.25, 1.0));
        assert_eq!(s.histogram.counts.iter().sum::<f64>(), 2.0);
    }

    #[test]
    fn stable_rank_runs_from_one_to_the_rank() {
        assert_eq!(spectrum(&[3.0, 0.0, 0.0], 3, 4).unwrap().stable_rank, 1.0);
        assert_eq!(spectrum(&[2.0; 5], 5, 4).unwrap().stable_rank, 5.0);
    }

    #[test]
    fn zeros_fall_below_the_log_bins() {
        let s = spectrum(&[0.0, 1.0, 2.0, 4.0], 1, 3).unwrap();
        assert_eq!(s.histogram.stats.below, 1.0);
        assert_eq!(s.histogram.edges[0], 1.0);
        assert_eq!(s.histogram.counts, vec![1.0, 1.0, 1.0]);
    }

    #[test]
    fn alpha_and_stable_rank_do_not_depend_on_scale() {
        let values: Vec<f64> = (1..=200).map(|k| (k as f64).powf(-0.7)).collect();
        let a = spectrum(&values, 300, 16).unwrap();
        let scaled: Vec<f64> = values.iter().map(|v| v * 37.0).collect();
        let b = spectrum(&scaled, 300, 16).unwrap();
        let (fa, fb) = (a.power_law.unwrap(), b.power_law.unwrap());
        assert!((fa.alpha - fb.alpha).abs() < 1e-9 * fa.alpha);
        assert_eq!(fa.tail, fb.tail);
        assert!((a.stable_rank - b.stable_rank).abs() < 1e-9 * a.stable_rank);
    }

    #[test]
    fn bad_singular_values_are_named() {
        assert_eq!(spectrum(&[], 3, 4), Err(SpectrumError::Empty));
        assert_eq!(spectrum(&[1.0], 0, 4), Err(SpectrumError::NoDimension));
        assert_eq!(spectrum(&[0.0, 0.0], 2, 4), Err(SpectrumError::AllZero));
        assert!(matches!(
            spectrum(&[1.0, f64::NAN], 2, 4),
            Err(SpectrumError::NotFinite { index: 1, .. })
        ));
        assert!(matches!(
            spectrum(&[-1.0], 2, 4),
            Err(SpectrumError::Negative { index: 0, .. })
        ));
        assert_eq!(
            spectrum(&[1.0], 2, 0),
            Err(SpectrumError::Bins(EdgesError::BinCount(0)))
        );
        assert!(SpectrumError::AllZero.to_string().contains("all zeros"));
    }

    #[test]
    fn spectra_keep_their_order_and_errors() {
        let ones = [1.0; 3];
        let done = spectra(&[(&ones, 3), (&[], 3)], 4);
        assert_eq!(done[0].as_ref().unwrap().lambda_max, 1.0 / 3.0);
        assert_eq!(done[1], Err(SpectrumError::Empty));
    }
}
