//! Finding a value's bin: by arithmetic on equal bins, by binary search on any edges.

use crate::bins::edges::uniform_edges;

use super::grid::Grid;
use super::grid32::Grid32;

/// Finds the bin of a value among edges; `bins`, `bins + 1` and `bins + 2`
/// stand for below the first edge, above the last and nonfinite.
pub(super) struct Binner<'e> {
    pub(super) edges: &'e [f64],
    pub(super) lo: f64,
    pub(super) hi: f64,
    pub(super) last: usize,
    /// Set when the edges are `uniform_edges(lo, hi, bins)`, well conditioned.
    pub(super) grid: Option<Grid>,
    /// Set with `grid` when float32 arithmetic locates most float32 values.
    pub(super) grid32: Option<Grid32>,
}

/// Below this ratio of the largest edge's magnitude to a bin's width, the
/// rounding errors of the edges and of the multiplication that guesses a
/// value's bin are far below one bin, so one correction always suffices.
pub(super) const WELL_CONDITIONED: f64 = (1u64 << 40) as f64;

impl<'e> Binner<'e> {
    pub(super) fn new(edges: &'e [f64]) -> Binner<'e> {
        let bins = edges.len() - 1;
        let (lo, hi) = (edges[0], edges[bins]);
        let scale = bins as f64 / (hi - lo);
        let uniform = scale.is_finite()
            && lo.abs().max(hi.abs()) * scale < WELL_CONDITIONED
            && edges == uniform_edges(lo, hi, bins).as_slice();
        let grid = uniform.then(|| Grid {
            lo,
            hi,
            step: (hi - lo) / bins as f64,
            scale,
            last: (bins - 1) as f64,
            bins: bins as f64,
        });
        Binner {
            edges,
            lo,
            hi,
            last: bins - 1,
            grid,
            grid32: grid.and_then(Grid32::new),
        }
    }

    #[inline(always)]
    pub(super) fn locate_search(&self, x: f64) -> usize {
        if !(x >= self.lo && x <= self.hi) {
            return self.outside(x);
        }
        self.edges[1..=self.last].partition_point(|&e| e <= x)
    }

    #[cold]
    pub(super) fn outside(&self, x: f64) -> usize {
        let bins = self.last + 1;
        if !x.is_finite() {
            bins + 2
        } else if x < self.lo {
            bins
        } else {
            bins + 1
        }
    }
}
