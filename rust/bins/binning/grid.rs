//! Equal bins located in float64 by arithmetic alone: a multiplication, corrected against the edges.

/// Equal bins, located by arithmetic alone so that the loop vectorises.
#[derive(Clone, Copy)]
pub(super) struct Grid {
    pub(super) lo: f64,
    pub(super) hi: f64,
    pub(super) step: f64,
    pub(super) scale: f64,
    pub(super) last: f64,
    pub(super) bins: f64,
}

impl Grid {
    /// The slot of `x`, as `Binner` numbers them, without branches: a
    /// multiplication guesses the bin to within one, and the guess is
    /// corrected against its edges, recomputed exactly as `uniform_edges`
    /// computes them (`j * step + lo`), so that values on an edge go where
    /// `numpy.histogram` puts them. The last edge is `hi` itself rather than
    /// the formula's, hence the final clamp.
    #[inline(always)]
    pub(super) fn slot(&self, x: f64) -> u32 {
        let t = (x - self.lo) * self.scale;
        let t = if t > 0.0 { t } else { 0.0 };
        let guess = (if t < self.last { t } else { self.last }).trunc();
        let lower = guess * self.step + self.lo;
        let upper = (guess + 1.0) * self.step + self.lo;
        let bin = guess + if x >= upper { 1.0 } else { 0.0 } - if x < lower { 1.0 } else { 0.0 };
        let bin = if bin < self.last { bin } else { self.last };
        let slot = if x < self.lo { self.bins } else { bin };
        let slot = if x > self.hi { self.bins + 1.0 } else { slot };
        let slot = if x.abs() < f64::INFINITY {
            slot
        } else {
            self.bins + 2.0
        };
        // SAFETY: every branch above gives a whole number from 0 to bins + 2
        // (NaN fails each comparison and ends as bins + 2), which i32 holds;
        // unlike `as`, this conversion needs no clamping and vectorises.
        unsafe { slot.to_int_unchecked::<i32>() as u32 }
    }
}
