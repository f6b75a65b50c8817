//! Unweighted float32 values, located and summed in float32 where that gives float64's results.

use super::locate::{Binner, Grid};
use super::moments::{moments, Moments, LANES};
use super::passes::{Passes, Unit};
use super::simd::has_avx2;
use super::tally::{tally, Copies, BLOCK};

/// Unweighted float32 values, in float32 where that gives the same results:
/// the extremes, and most values' bins.
pub(super) struct Float32;

impl Passes for Float32 {
    type Value = f32;

    fn moments(&self, chunk: &[f32], _start: usize) -> Moments {
        moments_f32(chunk)
    }

    fn tally(&self, chunk: &[f32], start: usize, binner: &Binner<'_>) -> Vec<f64> {
        match binner.grid32 {
            Some(grid) => tally_grid32(chunk, binner.last + 4, grid).finish(),
            None => tally(chunk, start, f64::from, Unit, binner),
        }
    }
}

/// The statistics of a chunk of float32 values, the same bits as
/// `moments_kernel` gives for them, with AVX2 where the processor has it.
pub(super) fn moments_f32(chunk: &[f32]) -> Moments {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() && chunk.len() <= u32::MAX as usize {
        // SAFETY: the processor was just found to support AVX2.
        return unsafe { moments_f32_avx2(chunk) };
    }
    moments(chunk, 0, f64::from, Unit)
}

/// `moments_kernel`'s lanes and sums for unweighted float32 values, written
/// out in AVX2 because the compiler does not vectorise a mix of float32 and
/// float64 well: the extremes are compared as float32, eight to an
/// instruction, the nonfinite values counted as integers, and the products
/// by a weight of 1, which change nothing, left out. Lanes 0 to 3 and 4 to 7
/// are the two halves of each float64 sum. A chunk holds at most `u32::MAX`
/// values, so the integer counts do not overflow.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) fn moments_f32_avx2(chunk: &[f32]) -> Moments {
    use std::arch::x86_64::*;

    let Some(&shift) = chunk.iter().find(|x| x.is_finite()) else {
        return Moments {
            nonfinite: chunk.len() as f64,
            ..Moments::EMPTY
        };
    };
    let shifts = _mm256_set1_ps(shift);
    let shift64 = _mm256_set1_pd(f64::from(shift));
    let infinity = _mm256_set1_ps(f32::INFINITY);
    let magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(i32::MAX));
    let (mut min, mut max) = (shifts, shifts);
    let mut nonfinite = _mm256_setzero_si256();
    let mut sums = [_mm256_setzero_pd(); 2];
    let mut squares = [_mm256_setzero_pd(); 2];
    let mut add = |x: __m256| {
        // Not less than infinity, or unordered: infinite or NaN, all ones.
        let bad = _mm256_cmp_ps::<_CMP_NLT_UQ>(_mm256_and_ps(x, magnitude), infinity);
        let v = _mm256_blendv_ps(x, shifts, bad);
        nonfinite = _mm256_sub_epi32(nonfinite, _mm256_castps_si256(bad));
        min = _mm256_min_ps(v, min);
        max = _mm256_max_ps(v, max);
        let halves = [
            _mm256_cvtps_pd(_mm256_castps256_ps128(v)),
            _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(v)),
        ];
        for (h, wide) in halves.into_iter().enumerate() {
            let d = _mm256_sub_pd(wide, shift64);
            sums[h] = _mm256_add_pd(sums[h], d);
            squares[h] = _mm256_add_pd(squares[h], _mm256_mul_pd(d, d));
        }
    };
    let blocks = chunk.chunks_exact(LANES);
    let rest = blocks.remainder();
    for block in blocks {
        // SAFETY: `block` holds LANES = 8 float32 values, which this
        // unaligned load reads.
        add(unsafe { _mm256_loadu_ps(block.as_ptr()) });
    }
    // The rest, padded with the shift, which changes no sum and no extreme.
    let mut padded = [shift; LANES];
    padded[..rest.len()].copy_from_slice(rest);
    // SAFETY: `padded` holds 8 float32 values.
    add(unsafe { _mm256_loadu_ps(padded.as_ptr()) });

    let mut lanes = [[0.0f64; LANES]; 2];
    for (h, (sum, square)) in sums.into_iter().zip(squares).enumerate() {
        // SAFETY: each half of a lane array holds the 4 float64 values stored.
        unsafe {
            _mm256_storeu_pd(lanes[0][h * 4..].as_mut_ptr(), sum);
            _mm256_storeu_pd(lanes[1][h * 4..].as_mut_ptr(), square);
        }
    }
    let mut extremes = [[0.0f32; LANES]; 2];
    let mut counts = [0u32; LANES];
    // SAFETY: each array holds the 8 values of 32 bits stored in it.
    unsafe {
        _mm256_storeu_ps(extremes[0].as_mut_ptr(), min);
        _mm256_storeu_ps(extremes[1].as_mut_ptr(), max);
        _mm256_storeu_si256(counts.as_mut_ptr().cast(), nonfinite);
    }
    let nonfinite: u64 = counts.iter().map(|&n| u64::from(n)).sum();
    let [min, max] = extremes.map(|e| e.map(f64::from));
    Moments::of_sums(
        f64::from(shift),
        (chunk.len() as u64 - nonfinite) as f64,
        lanes[0].iter().sum(),
        lanes[1].iter().sum(),
        (
            min.iter().copied().fold(f64::INFINITY, f64::min),
            max.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        ),
        nonfinite as f64,
    )
}

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
