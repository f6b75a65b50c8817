//! Unweighted float32 values, located and summed in float32 where that gives float64's results.

use super::grid32::{tally_grid32, tally_inside};
use super::locate::Binner;
use super::moments::{moments, Moments, LANES};
use super::passes::Passes;
use super::simd::has_avx2;
use super::tally::tally;
use super::weights::Unit;

/// Unweighted float32 values, in float32 where that gives the same results:
/// the extremes, and most values' bins.
pub(super) struct Float32;

impl Passes for Float32 {
    type Value = f32;

    fn moments(&self, chunk: &[f32], _start: usize) -> Moments {
        moments_f32(chunk)
    }

    fn tally(
        &self,
        chunk: &[f32],
        start: usize,
        binner: &Binner<'_>,
        moments: &Moments,
    ) -> Vec<f64> {
        match binner.grid32 {
            Some(grid) if grid.holds(moments) => tally_inside(chunk, binner.last + 4, grid),
            Some(grid) => tally_grid32(chunk, binner.last + 4, grid),
            None => return tally(chunk, start, f64::from, Unit, binner),
        }
        .finish()
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
