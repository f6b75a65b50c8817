//! The bins pass: each value's slot, then its count, in interleaved copies of the counts.

use super::locate::Binner;
use super::passes::Weights;

/// Interleaved copies of the counts, so that runs of values in the same bin
/// do not wait on each other's increments.
pub(super) const COPIES: usize = 4;

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

/// Values per block of slots computed before they are counted.
pub(super) const BLOCK: usize = 512;

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

/// `COPIES` tallies of `stride` slots each, one after the other.
pub(super) struct Copies<C> {
    pub(super) counts: Vec<C>,
    pub(super) stride: usize,
}

impl<C: Copy + Default + std::ops::AddAssign + Into<f64>> Copies<C> {
    pub(super) fn new(stride: usize) -> Self {
        Copies {
            counts: vec![C::default(); COPIES * stride],
            stride,
        }
    }

    /// Counts `slots`, those of the values from `start` on, each in the
    /// next copy in turn.
    ///
    /// The slots are checked first, in one pass that vectorises, rather
    /// than at each increment: the increments are about half of the work of
    /// binning a float32 value, and a bounds check is a third of theirs.
    #[inline(always)]
    pub(super) fn add<W: Weights<Count = C>>(&mut self, slots: &[u32], start: usize, weights: W) {
        let stride = self.stride;
        let highest = slots.iter().copied().max().unwrap_or(0) as usize;
        assert!(highest < stride, "slot {highest} past the {stride} slots");
        let counts = &mut self.counts[..COPIES * stride];
        let quads = slots.chunks_exact(COPIES);
        let rest = quads.remainder();
        for (q, quad) in quads.enumerate() {
            for (c, &slot) in quad.iter().enumerate() {
                // SAFETY: c < COPIES and slot <= highest < stride, so the
                // index is below COPIES * stride, the length of `counts`.
                let count = unsafe { counts.get_unchecked_mut(c * stride + slot as usize) };
                *count += weights.count(start + q * COPIES + c);
            }
        }
        let rest_start = slots.len() - rest.len();
        for (c, &slot) in rest.iter().enumerate() {
            counts[slot as usize] += weights.count(start + rest_start + c);
        }
    }

    pub(super) fn finish(self) -> Vec<f64> {
        let mut total = vec![0.0; self.stride];
        for copy in self.counts.chunks_exact(self.stride) {
            for (t, &c) in total.iter_mut().zip(copy) {
                *t += c.into();
            }
        }
        total
    }
}

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
