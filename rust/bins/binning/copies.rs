//! A tally's counts kept in interleaved copies, added a block of slots at a time.

use super::weights::Weights;

/// Interleaved copies of the counts, so that runs of values in the same bin
/// do not wait on each other's increments.
pub(super) const COPIES: usize = 4;

/// Values per block of slots computed before they are counted.
pub(super) const BLOCK: usize = 512;

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
