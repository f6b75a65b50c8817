//! Equal bins located in float32 arithmetic: the grid, its error bound, and the counting kernels that use it.

use super::copies::{Copies, BLOCK};
use super::grid::Grid;
use super::moments::{Moments, LANES};
use super::simd::has_avx2;
use super::weights::Unit;

/// Equal bins located in float32 arithmetic, eight values to an AVX2
/// instruction instead of four, with the float64 `Grid` for the few values
/// so close to an edge that float32 rounding could misplace them.
///
/// For a float32 `x` and any real `e`, `x >= e` exactly when `x` is at least
/// `e` rounded up to a float32, so the comparisons with the ends are exact.
/// Inside them, `u = (x - lo) * scale` computed in float32 is within
/// `3 * 2^-24 * K` (plus underflow, below `2^-148 * scale`) of the exact
/// `(x - lo) * bins / (hi - lo)`, where `K = max(|lo|, |hi|) * scale + bins`:
/// a rounding of `lo`, of `scale` and of each operation, each relative to at
/// most `K`. The float64 edges are within `2^-51 * K` bins of the exact ones.
/// So when `u` is farther than `near` (at least `2^-22 * K`, which covers
/// both with room) from a whole number, its floor is the value's bin.
#[derive(Clone, Copy)]
pub(super) struct Grid32 {
    /// `lo` rounded to the nearest float32, and `scale` likewise.
    pub(super) lo: f32,
    pub(super) scale: f32,
    /// The smallest float32 at least `lo` and the largest at most `hi`.
    pub(super) lowest: f32,
    pub(super) highest: f32,
    /// `lo` and `hi` where they are float32 values, NaN otherwise: values
    /// equal to them (the extremes, with the default range) are in the first
    /// and the last bin, however close `u` is to a whole number.
    pub(super) lo_exact: f32,
    pub(super) hi_exact: f32,
    /// `u`'s fractional parts below `near` or above `far` are near an edge.
    pub(super) near: f32,
    pub(super) far: f32,
    pub(super) last: f32,
    pub(super) bins: f32,
    pub(super) exact: Grid,
}

/// The widest margin for which `Grid32` is used: with more, too many values
/// would take the float64 path for float32 to pay.
pub(super) const NEAR_AT_MOST: f64 = 1.0 / 1024.0;

impl Grid32 {
    pub(super) fn new(grid: Grid) -> Option<Grid32> {
        let limit = f64::from(f32::MAX);
        let (lo, hi) = (grid.lo, grid.hi);
        let scale = grid.scale as f32;
        let k = lo.abs().max(hi.abs()) * grid.scale + grid.bins;
        let near = k * 2f64.powi(-22) + (grid.scale + 1.0) * 2f64.powi(-140);
        let usable =
            lo.abs() < limit && hi.abs() < limit && scale.is_normal() && near <= NEAR_AT_MOST;
        let exact = |v: f64| {
            if f64::from(v as f32) == v {
                v as f32
            } else {
                f32::NAN
            }
        };
        usable.then(|| Grid32 {
            lo: lo as f32,
            scale,
            lowest: f32_at_least(lo),
            highest: f32_at_most(hi),
            lo_exact: exact(lo),
            hi_exact: exact(hi),
            near: f32_at_least(near),
            far: f32_at_most(1.0 - near),
            last: grid.last as f32,
            bins: grid.bins as f32,
            exact: grid,
        })
    }

    /// Whether every value of a chunk with these moments is finite and
    /// inside the edges, so that `tally_inside` may bin it.
    pub(super) fn holds(&self, moments: &Moments) -> bool {
        moments.nonfinite == 0.0
            && moments.min >= f64::from(self.lowest)
            && moments.max <= f64::from(self.highest)
    }

    /// The slot of `x`, as `Grid::slot` gives it unless `x` is near an edge,
    /// and whether it is.
    #[inline(always)]
    pub(super) fn slot(&self, x: f32) -> (u32, bool) {
        let inside = (x >= self.lowest) & (x <= self.highest);
        let u = (x - self.lo) * self.scale;
        let u = if u > 0.0 { u } else { 0.0 };
        let whole = u.floor();
        let fraction = u - whole;
        let at_end = (x == self.lo_exact) | (x == self.hi_exact);
        let near = inside & ((fraction < self.near) | (fraction > self.far)) & !at_end;
        let bin = if whole < self.last { whole } else { self.last };
        let out = if x < self.lowest {
            self.bins
        } else {
            self.bins + 1.0
        };
        let out = if x.abs() < f32::INFINITY {
            out
        } else {
            self.bins + 2.0
        };
        let slot = if inside { bin } else { out };
        // SAFETY: `slot` is a whole number from 0 to bins + 2 (an infinite or
        // NaN `u` gives `last`, or 0, and is outside anyway), which i32 holds.
        (unsafe { slot.to_int_unchecked::<i32>() as u32 }, near)
    }
}

/// `x` rounded up to a float32.
pub(super) fn f32_at_least(x: f64) -> f32 {
    let r = x as f32;
    if f64::from(r) < x {
        r.next_up()
    } else {
        r
    }
}

/// `x` rounded down to a float32.
pub(super) fn f32_at_most(x: f64) -> f32 {
    let r = x as f32;
    if f64::from(r) > x {
        r.next_down()
    } else {
        r
    }
}

/// Values per group whose slots near an edge are recomputed in float64:
/// few enough that a group with one rarely costs much.
pub(super) const GROUP: usize = 64;

#[inline(always)]
pub(super) fn tally_grid32_kernel(chunk: &[f32], stride: usize, grid: Grid32) -> Copies<u32> {
    let mut copies = Copies::new(stride);
    let mut slots = [0u32; BLOCK];
    for block in chunk.chunks(BLOCK) {
        let slots = &mut slots[..block.len()];
        for (slots, values) in slots.chunks_mut(GROUP).zip(block.chunks(GROUP)) {
            let mut near = false;
            for (slot, &x) in slots.iter_mut().zip(values) {
                let (s, n) = grid.slot(x);
                *slot = s;
                near |= n;
            }
            if near {
                for (slot, &x) in slots.iter_mut().zip(values) {
                    if grid.slot(x).1 {
                        *slot = grid.exact.slot(f64::from(x));
                    }
                }
            }
        }
        copies.add(slots, 0, Unit);
    }
    copies
}

with_avx2!(tally_grid32, tally_grid32_avx2, tally_grid32_kernel, <>,
    (chunk: &[f32], stride: usize, grid: Grid32) -> Copies<u32>);

/// `tally_grid32` for a chunk whose values are all finite and inside the
/// edges (`Grid32::holds`), as they are with the default range: without the
/// tests for values outside, which are half of the work of locating a value.
pub(super) fn tally_inside(chunk: &[f32], stride: usize, grid: Grid32) -> Copies<u32> {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: the processor was just found to support AVX2.
        return unsafe { tally_inside_avx2(chunk, stride, grid) };
    }
    tally_grid32(chunk, stride, grid)
}

/// `Grid32::slot` for values inside the edges, written out in AVX2 because
/// the compiler keeps its constants in memory and gathers the near flags
/// one vector at a time. Each group of `GROUP` values with a value near an
/// edge is located again one value at a time, as `tally_grid32_kernel` does.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn tally_inside_avx2(chunk: &[f32], stride: usize, grid: Grid32) -> Copies<u32> {
    use std::arch::x86_64::*;

    let lo = _mm256_set1_ps(grid.lo);
    let scale = _mm256_set1_ps(grid.scale);
    let zero = _mm256_setzero_ps();
    let last = _mm256_set1_ps(grid.last);
    let (near, far) = (_mm256_set1_ps(grid.near), _mm256_set1_ps(grid.far));
    let (lo_exact, hi_exact) = (_mm256_set1_ps(grid.lo_exact), _mm256_set1_ps(grid.hi_exact));
    let mut copies = Copies::new(stride);
    let mut slots = [0u32; BLOCK];
    for block in chunk.chunks(BLOCK) {
        let slots = &mut slots[..block.len()];
        for (slots, values) in slots.chunks_mut(GROUP).zip(block.chunks(GROUP)) {
            let mut close = zero;
            let vectors = values.chunks_exact(LANES);
            let rest = vectors.remainder().len();
            for (out, v) in slots.chunks_exact_mut(LANES).zip(vectors) {
                // SAFETY: `v` holds LANES = 8 float32 values, read unaligned.
                let x = unsafe { _mm256_loadu_ps(v.as_ptr()) };
                let u = _mm256_max_ps(_mm256_mul_ps(_mm256_sub_ps(x, lo), scale), zero);
                let whole = _mm256_round_ps::<{ _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC }>(u);
                let fraction = _mm256_sub_ps(u, whole);
                let edge = _mm256_or_ps(
                    _mm256_cmp_ps::<_CMP_LT_OQ>(fraction, near),
                    _mm256_cmp_ps::<_CMP_GT_OQ>(fraction, far),
                );
                let end = _mm256_or_ps(
                    _mm256_cmp_ps::<_CMP_EQ_OQ>(x, lo_exact),
                    _mm256_cmp_ps::<_CMP_EQ_OQ>(x, hi_exact),
                );
                close = _mm256_or_ps(close, _mm256_andnot_ps(end, edge));
                let bin = _mm256_cvttps_epi32(_mm256_min_ps(whole, last));
                // SAFETY: `out` holds LANES = 8 slots of 32 bits, written unaligned.
                unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), bin) };
            }
            let tail = slots.len() - rest;
            for (slot, &x) in slots[tail..].iter_mut().zip(&values[tail..]) {
                *slot = grid.slot(x).0;
            }
            if _mm256_movemask_ps(close) != 0 || rest > 0 {
                for (slot, &x) in slots.iter_mut().zip(values) {
                    if grid.slot(x).1 {
                        *slot = grid.exact.slot(f64::from(x));
                    }
                }
            }
        }
        copies.add(slots, 0, Unit);
    }
    copies
}
