//! The two passes over a chunk (statistics, then bins), compiled once for each element type and weighting.

use std::marker::PhantomData;

use super::locate::Binner;
use super::moments::{moments, Moments};
use super::tally::tally;
use super::weights::Weights;

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
