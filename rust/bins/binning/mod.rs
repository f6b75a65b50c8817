//! Values to a histogram and its statistics: a pass for the statistics, a pass for the bins.
//!
//! Counts equal `numpy.histogram`'s for the same float64 edges: a value goes
//! in bin `j` when `edges[j] <= x < edges[j + 1]`, and the last bin is closed.
//! Slices of any numeric type are read as they are, converted one value at a
//! time, and cut into chunks that are processed in parallel and merged in
//! order, so that a result never depends on the number of threads.
//! Unweighted float32 values, the usual case when logging, are compared and
//! located in float32 where that gives the same result (`float32`), twice as
//! many to an instruction.
//!
//! The topics: `weights` (every value counting 1, or given weights), `moments`
//! (statistics), `locate` (a value's bin; `grid`, equal bins by arithmetic),
//! `tally` (counting, into `copies` of the counts), `float32` (the float32
//! path), `grid32` (float32 bins), `simd` (the AVX2 dispatch), `passes` (which
//! ties them together per element type) and `batch` (many arrays at once, in
//! parallel).

#[macro_use]
mod simd;
pub mod batch;
mod copies;
mod float32;
mod grid;
mod grid32;
mod locate;
mod moments;
mod passes;
mod tally;
#[cfg(test)]
mod tests;
mod weights;

use std::sync::OnceLock;

use rayon::prelude::*;
use thiserror::Error;

use crate::bins::edges::{check_bin_count, check_edges, check_range, default_range};
pub use crate::bins::edges::{uniform_edges, EdgesError, MAX_BINS};
use crate::histograms::float16::{bfloat16_to_f64, half_to_f64, HalfFloat};
use crate::histograms::stats::Stats;

use float32::Float32;
use locate::Binner;
use moments::merge_moments;
use passes::{Passes, Widened};
use tally::merge_tallies;
use weights::{Given, Unit};

/// Values per chunk: a unit of parallel work small enough to stay in the cache
/// between the two passes when the range is known in advance.
const CHUNK: usize = 1 << 16;

/// Slices longer than this are binned on rayon's threads.
const PARALLEL_ABOVE: usize = 1 << 18;

/// A contiguous slice of values of one of the supported element types.
///
/// `Half` holds the bits of IEEE binary16 or bfloat16 values, as NumPy and
/// PyTorch store them, and which of the two they are.
#[derive(Debug, Clone, Copy)]
pub enum Values<'a> {
    F64(&'a [f64]),
    F32(&'a [f32]),
    Half(&'a [u16], HalfFloat),
    I8(&'a [i8]),
    I16(&'a [i16]),
    I32(&'a [i32]),
    I64(&'a [i64]),
    U8(&'a [u8]),
    U16(&'a [u16]),
    U32(&'a [u32]),
    U64(&'a [u64]),
    Bool(&'a [bool]),
}

impl Values<'_> {
    /// The number of values.
    pub fn len(&self) -> usize {
        match self {
            Values::F64(v) => v.len(),
            Values::F32(v) => v.len(),
            Values::Half(v, _) | Values::U16(v) => v.len(),
            Values::I8(v) => v.len(),
            Values::I16(v) => v.len(),
            Values::I32(v) => v.len(),
            Values::I64(v) => v.len(),
            Values::U8(v) => v.len(),
            Values::U32(v) => v.len(),
            Values::U64(v) => v.len(),
            Values::Bool(v) => v.len(),
        }
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// How the values are cut into bins.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bins<'a> {
    /// `count` equal bins from `range.0` to `range.1`; without a range, from
    /// the smallest to the largest finite value (numpy's rules for a single
    /// value and for none).
    Uniform {
        count: usize,
        range: Option<(f64, f64)>,
    },
    /// These edges: finite, increasing, at least two.
    Edges(&'a [f64]),
}

/// Edges, counts and statistics of binned values.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    /// `counts.len() + 1` increasing edges.
    pub edges: Vec<f64>,
    /// The number (or the total weight) of the finite values in each bin.
    pub counts: Vec<f64>,
    /// Statistics of the finite values (with nonzero weight for `min` and
    /// `max`), the weight of the nonfinite ones and of those outside the edges.
    /// `std` is the population standard deviation, as `numpy.std` gives it.
    pub stats: Stats,
}

/// Why values could not be binned.
#[derive(Debug, Error, PartialEq)]
pub enum BinningError {
    #[error(transparent)]
    Edges(#[from] EdgesError),
    #[error("weights must have one value per value, got {weights} weights for {values} values")]
    WeightsLength { values: usize, weights: usize },
}

/// Bins `values`, each counting `weights[i]` (1 without weights), and
/// computes their statistics.
///
/// Weights should be finite and not negative for the mean and the standard
/// deviation to mean anything; they are not checked. Sums are float64: the
/// standard deviation overflows to infinity when deviations pass about 1e154
/// and underflows to 0 when they are all below about 1e-154.
pub fn histogram(
    values: Values<'_>,
    weights: Option<&[f64]>,
    bins: Bins<'_>,
) -> Result<Histogram, BinningError> {
    if let Some(w) = weights {
        if w.len() != values.len() {
            return Err(BinningError::WeightsLength {
                values: values.len(),
                weights: w.len(),
            });
        }
    }
    check_bins(bins)?;
    Ok(match values {
        Values::F64(v) => histogram_of(v, |x| x, weights, bins)?,
        Values::F32(v) if weights.is_none() => histogram_with(v, &Float32, bins)?,
        Values::F32(v) => histogram_of(v, f64::from, weights, bins)?,
        Values::Half(v, HalfFloat::Float16) => {
            let table = half_table();
            histogram_of(v, |b| f64::from(table[usize::from(b)]), weights, bins)?
        }
        Values::Half(v, HalfFloat::Bfloat16) => histogram_of(v, bfloat16_to_f64, weights, bins)?,
        Values::I8(v) => histogram_of(v, f64::from, weights, bins)?,
        Values::I16(v) => histogram_of(v, f64::from, weights, bins)?,
        Values::I32(v) => histogram_of(v, f64::from, weights, bins)?,
        Values::I64(v) => histogram_of(v, |x| x as f64, weights, bins)?,
        Values::U8(v) => histogram_of(v, f64::from, weights, bins)?,
        Values::U16(v) => histogram_of(v, f64::from, weights, bins)?,
        Values::U32(v) => histogram_of(v, f64::from, weights, bins)?,
        Values::U64(v) => histogram_of(v, |x| x as f64, weights, bins)?,
        Values::Bool(v) => histogram_of(v, |x| f64::from(u8::from(x)), weights, bins)?,
    })
}

fn check_bins(bins: Bins<'_>) -> Result<(), EdgesError> {
    match bins {
        Bins::Uniform { count, range } => {
            check_bin_count(i64::try_from(count).unwrap_or(i64::MAX))?;
            if let Some((lo, hi)) = range {
                check_range(lo, hi)?;
            }
            Ok(())
        }
        Bins::Edges(edges) => check_edges(edges),
    }
}

/// Every binary16 value as a float32 (which holds each exactly), indexed by its bits.
fn half_table() -> &'static [f32] {
    static TABLE: OnceLock<Vec<f32>> = OnceLock::new();
    TABLE.get_or_init(|| (0..=u16::MAX).map(|b| half_to_f64(b) as f32).collect())
}

fn histogram_of<T, F>(
    values: &[T],
    to_f64: F,
    weights: Option<&[f64]>,
    bins: Bins<'_>,
) -> Result<Histogram, BinningError>
where
    T: Copy + Sync,
    F: Fn(T) -> f64 + Copy + Sync,
{
    match weights {
        None => histogram_with(values, &Widened::new(to_f64, Unit), bins),
        Some(w) => histogram_with(values, &Widened::new(to_f64, Given(w)), bins),
    }
}

fn histogram_with<P: Passes>(
    values: &[P::Value],
    passes: &P,
    bins: Bins<'_>,
) -> Result<Histogram, BinningError> {
    let known_edges = match bins {
        Bins::Edges(edges) => Some(edges.to_vec()),
        Bins::Uniform {
            count,
            range: Some((lo, hi)),
        } => Some(uniform_edges(lo, hi, count)),
        Bins::Uniform { range: None, .. } => None,
    };
    let (moments, edges, tally) = match known_edges {
        // One pass: each chunk's statistics, then its bins while it is in the cache.
        Some(edges) => {
            let binner = Binner::new(&edges);
            let per_chunk = map_chunks(values, |start, chunk| {
                let moments = passes.moments(chunk, start);
                let tally = passes.tally(chunk, start, &binner, &moments);
                (moments, tally)
            });
            let (moments, tallies): (Vec<_>, Vec<_>) = per_chunk.into_iter().unzip();
            (merge_moments(moments), edges, merge_tallies(tallies))
        }
        None => {
            let chunks = map_chunks(values, |start, chunk| passes.moments(chunk, start));
            let moments = merge_moments(chunks.iter().copied());
            let Bins::Uniform { count, .. } = bins else {
                unreachable!("only uniform bins lack a range")
            };
            let (lo, hi) = default_range(moments.min, moments.max);
            check_range(lo, hi)?;
            let edges = uniform_edges(lo, hi, count);
            let binner = Binner::new(&edges);
            let tallies = map_chunks(values, |start, chunk| {
                passes.tally(chunk, start, &binner, &chunks[start / CHUNK])
            });
            (moments, edges, merge_tallies(tallies))
        }
    };
    let bins = edges.len() - 1;
    let stats = Stats {
        count: moments.weight,
        below: tally[bins],
        above: tally[bins + 1],
        ..moments.stats()
    };
    let mut counts = tally;
    counts.truncate(bins);
    Ok(Histogram {
        edges,
        counts,
        stats,
    })
}

/// `work(start, chunk)` for each chunk of `values`, in order; in parallel
/// for long slices, with the same chunks either way.
fn map_chunks<T, R, G>(values: &[T], work: G) -> Vec<R>
where
    T: Sync,
    R: Send,
    G: Fn(usize, &[T]) -> R + Sync,
{
    let work = |i: usize, chunk: &[T]| work(i * CHUNK, chunk);
    if values.len() > PARALLEL_ABOVE {
        values
            .par_chunks(CHUNK)
            .enumerate()
            .map(|(i, chunk)| work(i, chunk))
            .collect()
    } else if values.is_empty() {
        vec![work(0, values)]
    } else {
        values
            .chunks(CHUNK)
            .enumerate()
            .map(|(i, chunk)| work(i, chunk))
            .collect()
    }
}
