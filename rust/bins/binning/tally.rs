//! The bins pass: each value's slot, then its count, in interleaved copies of the counts.

use super::copies::{Copies, BLOCK};
use super::locate::Binner;
use super::weights::Weights;

/// A chunk's counts, followed by the weight below, above and nonfinite.
pub(super) fn tally<T, F, W>(
    chunk: &[T],
    start: usize,
    to_f64: F,
    weights: W,
    binner: &Binner<'_>,
) -> Vec<f64>
where
    T: Copy,
    F: Fn(T) -> f64,
    W: Weights,
{
    // The bins, then below, above and nonfinite.
    let slots = binner.last + 4;
    match binner.grid {
        Some(grid) => tally_with(chunk, start, to_f64, weights, slots, |x| grid.slot(x)),
        None => tally_with(chunk, start, to_f64, weights, slots, |x| {
            binner.locate_search(x) as u32
        }),
    }
    .finish()
}

/// Each block's slots, then their counting. With equal bins `locate` is
/// arithmetic without branches and the slots' loop vectorises; with any
/// other edges it is a binary search.
#[inline(always)]
pub(super) fn tally_kernel<T, F, W, L>(
    chunk: &[T],
    start: usize,
    to_f64: F,
    weights: W,
    stride: usize,
    locate: L,
) -> Copies<W::Count>
where
    T: Copy,
    F: Fn(T) -> f64,
    W: Weights,
    L: Fn(f64) -> u32,
{
    let mut copies = Copies::new(stride);
    let mut slots = [0u32; BLOCK];
    for (b, block) in chunk.chunks(BLOCK).enumerate() {
        let slots = &mut slots[..block.len()];
        for (slot, &v) in slots.iter_mut().zip(block) {
            *slot = locate(to_f64(v));
        }
        copies.add(slots, start + b * BLOCK, weights);
    }
    copies
}

with_avx2!(tally_with, tally_avx2, tally_kernel,
    <T: Copy, F: Fn(T) -> f64, W: Weights, L: Fn(f64) -> u32>,
    (chunk: &[T], start: usize, to_f64: F, weights: W, stride: usize, locate: L)
        -> Copies<W::Count>);

pub(super) fn merge_tallies(tallies: Vec<Vec<f64>>) -> Vec<f64> {
    let mut tallies = tallies.into_iter();
    let mut total = tallies.next().unwrap_or_default();
    for t in tallies {
        for (a, b) in total.iter_mut().zip(&t) {
            *a += b;
        }
    }
    total
}
