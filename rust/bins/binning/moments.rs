//! The statistics pass: weighted count, mean, spread, extremes and nonfinite weight of a chunk, and their merge.

use crate::histograms::stats::Stats;

use super::weights::Weights;

/// Independent accumulators in the statistics pass, so that the additions of
/// consecutive values do not wait on each other and can be vectorised.
pub(super) const LANES: usize = 8;

/// Weighted count, mean, sum of squared deviations, extremes and the weight
/// of the nonfinite values, of one chunk or several merged.
#[derive(Debug, Clone, Copy)]
pub(super) struct Moments {
    pub(super) weight: f64,
    pub(super) mean: f64,
    pub(super) m2: f64,
    pub(super) min: f64,
    pub(super) max: f64,
    pub(super) nonfinite: f64,
}

impl Moments {
    pub(super) const EMPTY: Moments = Moments {
        weight: 0.0,
        mean: f64::NAN,
        m2: 0.0,
        min: f64::INFINITY,
        max: f64::NEG_INFINITY,
        nonfinite: 0.0,
    };

    /// The moments of values whose deviations from `shift` sum to `sum`
    /// and their squares to `sum_squares`.
    pub(super) fn of_sums(
        shift: f64,
        weight: f64,
        sum: f64,
        sum_squares: f64,
        (min, max): (f64, f64),
        nonfinite: f64,
    ) -> Moments {
        let (mean, m2) = if weight > 0.0 {
            let d = sum / weight;
            (shift + d, (sum_squares - sum * d).max(0.0))
        } else {
            (f64::NAN, 0.0)
        };
        Moments {
            weight,
            mean,
            m2,
            min,
            max,
            nonfinite,
        }
    }

    /// Chan, Golub and LeVeque's pairwise update of the mean and the sum of
    /// squared deviations.
    pub(super) fn merge(self, other: Moments) -> Moments {
        let weight = self.weight + other.weight;
        let (mean, m2) = if other.weight == 0.0 {
            (self.mean, self.m2)
        } else if self.weight == 0.0 {
            (other.mean, other.m2)
        } else {
            let delta = other.mean - self.mean;
            (
                self.mean + delta * (other.weight / weight),
                self.m2 + other.m2 + delta * delta * (self.weight * (other.weight / weight)),
            )
        };
        Moments {
            weight,
            mean,
            m2,
            min: self.min.min(other.min),
            max: self.max.max(other.max),
            nonfinite: self.nonfinite + other.nonfinite,
        }
    }

    pub(super) fn stats(&self) -> Stats {
        let some = self.min <= self.max;
        Stats {
            count: self.weight,
            min: if some { self.min } else { f64::NAN },
            max: if some { self.max } else { f64::NAN },
            mean: if self.weight > 0.0 {
                self.mean
            } else {
                f64::NAN
            },
            std: if self.weight > 0.0 {
                (self.m2 / self.weight).sqrt()
            } else {
                f64::NAN
            },
            nonfinite: self.nonfinite,
            below: 0.0,
            above: 0.0,
        }
    }
}

pub(super) fn merge_moments(chunks: impl IntoIterator<Item = Moments>) -> Moments {
    chunks.into_iter().fold(Moments::EMPTY, Moments::merge)
}

/// The statistics of one chunk, from sums of deviations from one of its own
/// values: with that shift the sum of squares loses no precision to a large
/// mean, and the sums need no division per value.
#[inline(always)]
pub(super) fn moments_kernel<T, F, W>(chunk: &[T], start: usize, to_f64: F, weights: W) -> Moments
where
    T: Copy,
    F: Fn(T) -> f64,
    W: Weights,
{
    let counted = |i: usize, x: f64| x.is_finite() && weights.at(start + i) != 0.0;
    let Some(shift) = chunk
        .iter()
        .enumerate()
        .map(|(i, &v)| (i, to_f64(v)))
        .find(|&(i, x)| counted(i, x))
        .map(|(_, x)| x)
    else {
        let nonfinite = chunk
            .iter()
            .enumerate()
            .filter(|&(_, &v)| !to_f64(v).is_finite())
            .map(|(i, _)| weights.at(start + i))
            .sum();
        return Moments {
            nonfinite,
            ..Moments::EMPTY
        };
    };
    let mut lanes = Lanes::new(shift);
    let blocks = chunk.chunks_exact(LANES);
    let rest = blocks.remainder();
    for (b, block) in blocks.enumerate() {
        for (l, &v) in block.iter().enumerate() {
            lanes.add(l, to_f64(v), weights.at(start + b * LANES + l));
        }
    }
    let rest_start = chunk.len() - rest.len();
    for (l, &v) in rest.iter().enumerate() {
        lanes.add(l, to_f64(v), weights.at(start + rest_start + l));
    }
    lanes.finish()
}

with_avx2!(moments, moments_avx2, moments_kernel,
    <T: Copy, F: Fn(T) -> f64, W: Weights>,
    (chunk: &[T], start: usize, to_f64: F, weights: W) -> Moments);

/// The statistics pass's accumulators, one set per lane.
pub(super) struct Lanes {
    pub(super) shift: f64,
    pub(super) weight: [f64; LANES],
    pub(super) sum: [f64; LANES],
    pub(super) sum_squares: [f64; LANES],
    pub(super) min: [f64; LANES],
    pub(super) max: [f64; LANES],
    pub(super) nonfinite: [f64; LANES],
}

impl Lanes {
    pub(super) fn new(shift: f64) -> Lanes {
        Lanes {
            shift,
            weight: [0.0; LANES],
            sum: [0.0; LANES],
            sum_squares: [0.0; LANES],
            min: [shift; LANES],
            max: [shift; LANES],
            nonfinite: [0.0; LANES],
        }
    }

    /// Adds `x` with weight `w`; written without branches, a nonfinite or
    /// weightless value standing in as the shift, which changes nothing.
    #[inline(always)]
    pub(super) fn add(&mut self, l: usize, x: f64, w: f64) {
        let finite = x.abs() < f64::INFINITY;
        let counted = finite & (w != 0.0);
        let v = if counted { x } else { self.shift };
        let d = v - self.shift;
        let wf = if finite { w } else { 0.0 };
        self.weight[l] += wf;
        self.sum[l] += wf * d;
        self.sum_squares[l] += wf * d * d;
        self.nonfinite[l] += w - wf;
        self.min[l] = if v < self.min[l] { v } else { self.min[l] };
        self.max[l] = if v > self.max[l] { v } else { self.max[l] };
    }

    pub(super) fn finish(&self) -> Moments {
        Moments::of_sums(
            self.shift,
            self.weight.iter().sum(),
            self.sum.iter().sum(),
            self.sum_squares.iter().sum(),
            (
                self.min.iter().copied().fold(f64::INFINITY, f64::min),
                self.max.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            ),
            self.nonfinite.iter().sum(),
        )
    }
}
