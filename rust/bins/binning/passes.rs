//! The two passes over a chunk (statistics, then bins), compiled once for each element type and weighting.

use std::marker::PhantomData;

use super::locate::Binner;
use super::moments::{moments, Moments};
use super::tally::tally;

/// Where the weights come from; the passes are compiled once for each.
pub(super) trait Weights: Copy + Sync {
    /// What a chunk's counts are added up in.
    type Count: Copy + Default + std::ops::AddAssign + Into<f64>;

    /// The weight of value `i` of the whole slice.
    fn at(self, i: usize) -> f64;

    /// The weight of value `i` as a count.
    fn count(self, i: usize) -> Self::Count;
}

/// Every value counts 1: the multiplications by it compile away, and a
/// chunk's counts (at most `CHUNK`) are integers, added in one instruction.
#[derive(Clone, Copy)]
pub(super) struct Unit;

impl Weights for Unit {
    type Count = u32;

    #[inline(always)]
    fn at(self, _i: usize) -> f64 {
        1.0
    }

    #[inline(always)]
    fn count(self, _i: usize) -> u32 {
        1
    }
}

#[derive(Clone, Copy)]
pub(super) struct Given<'a>(pub(super) &'a [f64]);

impl Weights for Given<'_> {
    type Count = f64;

    #[inline(always)]
    fn at(self, i: usize) -> f64 {
        self.0[i]
    }

    #[inline(always)]
    fn count(self, i: usize) -> f64 {
        self.0[i]
    }
}

/// The two passes over a chunk of one element type: its statistics, and its
/// counts followed by the weight below, above and nonfinite.
pub(super) trait Passes: Sync {
    type Value: Copy + Sync;

    /// The statistics of `chunk`, the values from `start` on.
    fn moments(&self, chunk: &[Self::Value], start: usize) -> Moments;

    /// The counts of `chunk`, then the weight below, above and nonfinite;
    /// `moments` are the chunk's own, which may choose a faster way.
    fn tally(
        &self,
        chunk: &[Self::Value],
        start: usize,
        binner: &Binner<'_>,
        moments: &Moments,
    ) -> Vec<f64>;
}

/// Values of any type converted to float64 one at a time, with any weights.
pub(super) struct Widened<T, F, W> {
    pub(super) to_f64: F,
    pub(super) weights: W,
    pub(super) value: PhantomData<fn(T)>,
}

impl<T, F, W> Widened<T, F, W> {
    pub(super) fn new(to_f64: F, weights: W) -> Self {
        Widened {
            to_f64,
            weights,
            value: PhantomData,
        }
    }
}

impl<T, F, W> Passes for Widened<T, F, W>
where
    T: Copy + Sync,
    F: Fn(T) -> f64 + Copy + Sync,
    W: Weights,
{
    type Value = T;

    fn moments(&self, chunk: &[T], start: usize) -> Moments {
        moments(chunk, start, self.to_f64, self.weights)
    }

    fn tally(&self, chunk: &[T], start: usize, binner: &Binner<'_>, _: &Moments) -> Vec<f64> {
        tally(chunk, start, self.to_f64, self.weights, binner)
    }
}
