//! α of a spectrum's tail, as WeightWatcher fits it: a power-law maximum-likelihood fit
//! above each candidate `xmin`, the `xmin` whose fit lies closest to the data (in
//! Kolmogorov–Smirnov distance) kept.
//!
//! This is WeightWatcher's own fit (`WW_powerlaw.py` `WWFit`, its default since it
//! replaced the `powerlaw` package; as released in weightwatcher 0.7.7): every eigenvalue
//! but the largest is a candidate `xmin`; above it, with `n` eigenvalues,
//! `α = 1 + n / Σ ln(λ / xmin)`, and the distance is
//! `max_k |1 - (λ_k / xmin)^(1 - α) - k / n|` over the tail's sorted eigenvalues
//! `λ_0 ≤ … ≤ λ_{n-1}` (the fitted distribution function against the empirical one just
//! below each point). The smallest distance wins, the smallest `xmin` among equals, as
//! `numpy.argmin` picks. A spectrum of fewer than [`SMALL_SPECTRUM`] eigenvalues is
//! fitted as 0.7.7's `fit_powerlaw_smallN` does: the bias-corrected
//! `α = 1 + (n - 1) / Σ ln(λ / xmin)`, over tails of at least [`SMALL_TAIL`] eigenvalues.

use rayon::prelude::*;

/// Fewer eigenvalues than this are not fitted: WeightWatcher skips such layers
/// (`DEFAULT_MIN_EVALS`), since a tail of a handful of points says nothing.
pub const MIN_EIGENVALUES: usize = 8;

/// Spectra of fewer eigenvalues than this get the small-sample fit (WeightWatcher's
/// `SMALL_N_CUTOFF`): the plain MLE overestimates α by a factor of about `n / (n - 1)`.
pub const SMALL_SPECTRUM: usize = 20;

/// In a small spectrum, a candidate tail holds at least this many eigenvalues
/// (WeightWatcher's `k_min`).
pub const SMALL_TAIL: usize = 8;

/// Candidates are scored on rayon's threads past this many eigenvalues: scoring all of
/// them costs about `n² / 2` powers.
const PARALLEL_ABOVE: usize = 512;

/// A power law fitted to the tail of a spectrum.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PowerLaw {
    /// The exponent of the density `p(λ) ∝ λ^-α` above `xmin`.
    pub alpha: f64,
    /// Where the tail starts: the eigenvalue chosen by the Kolmogorov–Smirnov distance.
    pub xmin: f64,
    /// That distance, from 0 to 1.
    pub ks: f64,
    /// The number of eigenvalues at or above `xmin`.
    pub tail: usize,
    /// The standard error of `alpha`: `(α - 1) / √tail`.
    pub sigma: f64,
}

/// The fit of `sorted`, positive eigenvalues in increasing order; `None` with fewer
/// than [`MIN_EIGENVALUES`] or when no candidate gives a finite α (every eigenvalue equal).
pub fn fit(sorted: &[f64]) -> Option<PowerLaw> {
    fit_scored(sorted, sorted.len() > PARALLEL_ABOVE)
}

/// [`fit`], its candidates scored on rayon's threads or on this one.
fn fit_scored(sorted: &[f64], parallel: bool) -> Option<PowerLaw> {
    let n = sorted.len();
    if n < MIN_EIGENVALUES {
        return None;
    }
    let logs: Vec<f64> = sorted.iter().map(|x| x.ln()).collect();
    // tail_sums[i]: the sum of logs[i..], so that each candidate's α costs O(1).
    let mut tail_sums = vec![0.0; n + 1];
    for i in (0..n).rev() {
        tail_sums[i] = tail_sums[i + 1] + logs[i];
    }
    let small = n < SMALL_SPECTRUM;
    let score = |i: usize| candidate(&logs, tail_sums[i], i, small);
    let best = if parallel {
        (0..n - 1)
            .into_par_iter()
            .with_min_len(64)
            .filter_map(score)
            .reduce_with(closer)
    } else {
        (0..n - 1).filter_map(score).reduce(closer)
    }?;
    let tail = n - best.index;
    Some(PowerLaw {
        alpha: best.alpha,
        xmin: sorted[best.index],
        ks: best.ks,
        tail,
        sigma: (best.alpha - 1.0) / (tail as f64).sqrt(),
    })
}

/// One candidate `xmin`, by its index, with its α and distance.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    index: usize,
    alpha: f64,
    ks: f64,
}

/// The smaller distance, the smaller index among equals (as `numpy.argmin`).
fn closer(a: Candidate, b: Candidate) -> Candidate {
    if b.ks < a.ks || (b.ks == a.ks && b.index < a.index) {
        b
    } else {
        a
    }
}

/// The fit above `logs[i]` (with the small-sample rules where `small`): `None` where
/// its α is not finite (a tail of equal values).
fn candidate(logs: &[f64], tail_sum: f64, i: usize, small: bool) -> Option<Candidate> {
    let tail = &logs[i..];
    let n = tail.len() as f64;
    let log_xmin = logs[i];
    let spread = tail_sum - n * log_xmin;
    let alpha = if small {
        if tail.len() < SMALL_TAIL || spread <= 1e-12 {
            return None;
        }
        1.0 + (n - 1.0) / spread
    } else {
        1.0 + n / spread
    };
    if !alpha.is_finite() || alpha <= 1.0 {
        return None;
    }
    let ks = tail
        .iter()
        .enumerate()
        .map(|(k, &log_x)| {
            let fitted = 1.0 - ((1.0 - alpha) * (log_x - log_xmin)).exp();
            (fitted - k as f64 / n).abs()
        })
        .fold(0.0, f64::max);
    ks.is_finite().then_some(Candidate {
        index: i,
        alpha,
        ks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `count` points of a Pareto law of exponent `alpha` above 1, placed at its
    /// quantiles (no randomness): the fit must find that exponent.
    fn pareto_quantiles(alpha: f64, count: usize) -> Vec<f64> {
        (0..count)
            .map(|k| {
                let u = (k as f64 + 0.5) / count as f64;
                (1.0 - u).powf(-1.0 / (alpha - 1.0))
            })
            .collect()
    }

    #[test]
    fn a_pure_power_law_gives_its_exponent() {
        for alpha in [2.0, 3.5, 6.0] {
            let fitted = fit(&pareto_quantiles(alpha, 2000)).unwrap();
            assert!((fitted.alpha - alpha).abs() < 0.05 * alpha, "{fitted:?}");
            assert!(fitted.ks < 0.02, "{fitted:?}");
            assert_eq!(
                fitted.sigma,
                (fitted.alpha - 1.0) / (fitted.tail as f64).sqrt()
            );
        }
    }

    #[test]
    fn a_bulk_below_the_tail_is_cut_off_at_xmin() {
        // 500 values packed just below 1, then a power-law tail of 500 from 1 on.
        let mut values: Vec<f64> = (0..500).map(|k| 0.5 + k as f64 / 1000.0).collect();
        values.extend(pareto_quantiles(3.0, 500));
        let fitted = fit(&values).unwrap();
        assert!(fitted.xmin >= 0.9, "{fitted:?}");
        assert!((fitted.alpha - 3.0).abs() < 0.2, "{fitted:?}");
    }

    #[test]
    fn the_formulas_on_a_small_case_written_out() {
        // [1, 2, ..., 30]: α and D by hand for xmin = 1.
        let values: Vec<f64> = (1..=30).map(f64::from).collect();
        let logs: Vec<f64> = values.iter().map(|x| x.ln()).collect();
        let sum: f64 = logs.iter().sum();
        let first = candidate(&logs, sum, 0, false).unwrap();
        assert!((first.alpha - (1.0 + 30.0 / sum)).abs() < 1e-12);
        let d = values
            .iter()
            .enumerate()
            .map(|(k, x)| (1.0 - x.powf(1.0 - first.alpha) - k as f64 / 30.0).abs())
            .fold(0.0, f64::max);
        assert!((first.ks - d).abs() < 1e-12);
        let best = fit(&values).unwrap();
        assert!(best.ks <= first.ks);
    }

    #[test]
    fn a_small_spectrum_gets_the_bias_corrected_fit() {
        // 12 eigenvalues: α = 1 + (n - 1) / Σ ln(λ / xmin), tails of 8 or more only.
        let values: Vec<f64> = (1..=12).map(|k| f64::from(k).powi(2)).collect();
        let logs: Vec<f64> = values.iter().map(|x| x.ln()).collect();
        let sum: f64 = logs.iter().sum();
        let first = candidate(&logs, sum, 0, true).unwrap();
        assert!((first.alpha - (1.0 + 11.0 / sum)).abs() < 1e-12);
        let tail_of_7: f64 = logs[5..].iter().sum();
        assert!(candidate(&logs, tail_of_7, 5, true).is_none());
        let best = fit(&values).unwrap();
        assert!(best.tail >= SMALL_TAIL && best.tail <= 12, "{best:?}");
    }

    #[test]
    fn too_few_or_equal_eigenvalues_are_not_fitted() {
        assert_eq!(fit(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]), None);
        assert_eq!(fit(&[2.0; 20]), None);
        assert_eq!(fit(&[]), None);
    }

    #[test]
    fn parallel_and_serial_scoring_agree() {
        let mut values = pareto_quantiles(2.5, PARALLEL_ABOVE * 3);
        values.extend([1.0; 40]);
        values.sort_by(f64::total_cmp);
        assert_eq!(fit_scored(&values, true), fit_scored(&values, false));
    }
}
