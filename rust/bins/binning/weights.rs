//! Where the weights come from: every value counting 1, or the caller's weights.

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
