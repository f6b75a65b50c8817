//! Values to a histogram and its statistics: a pass for the statistics, a pass for the bins.
//!
//! Counts equal `numpy.histogram`'s for the same float64 edges: a value goes
//! in bin `j` when `edges[j] <= x < edges[j + 1]`, and the last bin is closed.
//! Slices of any numeric type are read as they are, converted one value at a
//! time, and cut into chunks that are processed in parallel and merged in
//! order, so that a result never depends on the number of threads.
//! Unweighted float32 values, the usual case when logging, are compared and
//! located in float32 where that gives the same result (`Grid32`), twice as
//! many to an instruction.

use std::marker::PhantomData;
use std::sync::OnceLock;

use rayon::prelude::*;
use thiserror::Error;

use crate::data_compat::{bfloat16_to_f64, half_to_f64, Stats};

/// The most bins a histogram may have.
pub const MAX_BINS: usize = 1 << 20;

/// Values per chunk: a unit of parallel work small enough to stay in the cache
/// between the two passes when the range is known in advance.
const CHUNK: usize = 1 << 16;

/// Slices longer than this are binned on rayon's threads.
const PARALLEL_ABOVE: usize = 1 << 18;

/// Independent accumulators in the statistics pass, so that the additions of
/// consecutive values do not wait on each other and can be vectorised.
const LANES: usize = 8;

/// Interleaved copies of the counts, so that runs of values in the same bin
/// do not wait on each other's increments.
const COPIES: usize = 4;

/// A contiguous slice of values of one of the supported element types.
///
/// `F16Bits` and `Bf16Bits` hold the bits of IEEE binary16 and bfloat16
/// values, as NumPy and PyTorch store them.
#[derive(Debug, Clone, Copy)]
pub enum Values<'a> {
    F64(&'a [f64]),
    F32(&'a [f32]),
    F16Bits(&'a [u16]),
    Bf16Bits(&'a [u16]),
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
            Values::F16Bits(v) | Values::Bf16Bits(v) | Values::U16(v) => v.len(),
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
    #[error("bins must be from 1 to {MAX_BINS}, got {0}")]
    BinCount(usize),
    #[error("edges must be from 2 to {max} values, got {0}", max = MAX_BINS + 1)]
    EdgeCount(usize),
    #[error("edges must be finite, got {value} at index {index}")]
    NonfiniteEdge { index: usize, value: f64 },
    #[error("edges must increase, got {value} after {previous} at index {index}")]
    EdgesNotIncreasing {
        index: usize,
        previous: f64,
        value: f64,
    },
    #[error("range must be (lo, hi) with lo < hi and hi - lo finite, got ({lo}, {hi})")]
    BadRange { lo: f64, hi: f64 },
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
        Values::F16Bits(v) => {
            let table = half_table();
            histogram_of(v, |b| f64::from(table[usize::from(b)]), weights, bins)?
        }
        Values::Bf16Bits(v) => histogram_of(v, bfloat16_to_f64, weights, bins)?,
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

/// The edges of `count` equal bins from `lo` to `hi`, as `numpy.linspace`
/// computes them: `j * step + lo`, the last one `hi` exactly.
pub fn uniform_edges(lo: f64, hi: f64, count: usize) -> Vec<f64> {
    let step = (hi - lo) / count as f64;
    let mut edges: Vec<f64> = (0..=count).map(|j| j as f64 * step + lo).collect();
    edges[count] = hi;
    edges
}

fn check_bins(bins: Bins<'_>) -> Result<(), BinningError> {
    match bins {
        Bins::Uniform { count, range } => {
            if !(1..=MAX_BINS).contains(&count) {
                return Err(BinningError::BinCount(count));
            }
            if let Some((lo, hi)) = range {
                check_range(lo, hi)?;
            }
        }
        Bins::Edges(edges) => {
            if !(2..=MAX_BINS + 1).contains(&edges.len()) {
                return Err(BinningError::EdgeCount(edges.len()));
            }
            if let Some(index) = edges.iter().position(|e| !e.is_finite()) {
                let value = edges[index];
                return Err(BinningError::NonfiniteEdge { index, value });
            }
            if let Some(i) = edges.windows(2).position(|w| w[0] >= w[1]) {
                return Err(BinningError::EdgesNotIncreasing {
                    index: i + 1,
                    previous: edges[i],
                    value: edges[i + 1],
                });
            }
        }
    }
    Ok(())
}

fn check_range(lo: f64, hi: f64) -> Result<(), BinningError> {
    if lo.is_finite() && hi.is_finite() && lo < hi && (hi - lo).is_finite() {
        Ok(())
    } else {
        Err(BinningError::BadRange { lo, hi })
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

/// Where the weights come from; the passes are compiled once for each.
trait Weights: Copy + Sync {
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
struct Unit;

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
struct Given<'a>(&'a [f64]);

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

/// The two passes over a chunk of one element type: its statistics, and its
/// counts followed by the weight below, above and nonfinite.
trait Passes: Sync {
    type Value: Copy + Sync;

    /// The statistics of `chunk`, the values from `start` on.
    fn moments(&self, chunk: &[Self::Value], start: usize) -> Moments;

    /// The counts of `chunk`, then the weight below, above and nonfinite.
    fn tally(&self, chunk: &[Self::Value], start: usize, binner: &Binner<'_>) -> Vec<f64>;
}

/// Values of any type converted to float64 one at a time, with any weights.
struct Widened<T, F, W> {
    to_f64: F,
    weights: W,
    value: PhantomData<fn(T)>,
}

impl<T, F, W> Widened<T, F, W> {
    fn new(to_f64: F, weights: W) -> Self {
        Widened {
            to_f64,
            weights,
            value: PhantomData,
        }
    }
}

impl<T, F, W> Passes for Widened<T, F, W>
where
    T: Copy + Sync,
    F: Fn(T) -> f64 + Copy + Sync,
    W: Weights,
{
    type Value = T;

    fn moments(&self, chunk: &[T], start: usize) -> Moments {
        moments(chunk, start, self.to_f64, self.weights)
    }

    fn tally(&self, chunk: &[T], start: usize, binner: &Binner<'_>) -> Vec<f64> {
        tally(chunk, start, self.to_f64, self.weights, binner)
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
                (
                    passes.moments(chunk, start),
                    passes.tally(chunk, start, &binner),
                )
            });
            let (moments, tallies): (Vec<_>, Vec<_>) = per_chunk.into_iter().unzip();
            (merge_moments(moments), edges, merge_tallies(tallies))
        }
        None => {
            let chunks = map_chunks(values, |start, chunk| passes.moments(chunk, start));
            let moments = merge_moments(chunks);
            let Bins::Uniform { count, .. } = bins else {
                unreachable!("only uniform bins lack a range")
            };
            let (lo, hi) = default_range(&moments);
            check_range(lo, hi)?;
            let edges = uniform_edges(lo, hi, count);
            let binner = Binner::new(&edges);
            let tallies = map_chunks(values, |start, chunk| passes.tally(chunk, start, &binner));
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

/// numpy's default range: the finite minimum and maximum, widened by a half
/// on each side when they are equal, and (0, 1) when there are none.
///
/// A value too large for a half to move it (numpy raises "too many bins")
/// is widened by 2^-40 of itself instead, so that a constant never fails.
fn default_range(m: &Moments) -> (f64, f64) {
    if m.min > m.max {
        (0.0, 1.0)
    } else if m.min == m.max {
        let half = 0.5f64.max(m.min.abs() * 2f64.powi(-40));
        (m.min - half, m.max + half)
    } else {
        (m.min, m.max)
    }
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

/// Whether the passes may use AVX2, checked once (the check is cached).
#[inline(always)]
fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Defines `$name`, which runs `$kernel` compiled for AVX2 where the
/// processor has it (vectorised four float64 wide instead of SSE2's two),
/// and as it is elsewhere. The results are the same bits either way, as Rust
/// never fuses or reorders floating-point operations.
macro_rules! with_avx2 {
    ($name:ident, $avx2:ident, $kernel:ident, <$($g:ident: $b:path),*>, ($($arg:ident: $t:ty),*) -> $r:ty) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2")]
        fn $avx2<$($g: $b),*>($($arg: $t),*) -> $r {
            $kernel($($arg),*)
        }

        fn $name<$($g: $b),*>($($arg: $t),*) -> $r {
            #[cfg(target_arch = "x86_64")]
            if has_avx2() {
                // SAFETY: the processor was just found to support AVX2.
                return unsafe { $avx2($($arg),*) };
            }
            $kernel($($arg),*)
        }
    };
}

/// Weighted count, mean, sum of squared deviations, extremes and the weight
/// of the nonfinite values, of one chunk or several merged.
#[derive(Debug, Clone, Copy)]
struct Moments {
    weight: f64,
    mean: f64,
    m2: f64,
    min: f64,
    max: f64,
    nonfinite: f64,
}

impl Moments {
    const EMPTY: Moments = Moments {
        weight: 0.0,
        mean: f64::NAN,
        m2: 0.0,
        min: f64::INFINITY,
        max: f64::NEG_INFINITY,
        nonfinite: 0.0,
    };

    /// The moments of values whose deviations from `shift` sum to `sum`
    /// and their squares to `sum_squares`.
    fn of_sums(
        shift: f64,
        weight: f64,
        sum: f64,
        sum_squares: f64,
        (min, max): (f64, f64),
        nonfinite: f64,
    ) -> Moments {
        let (mean, m2) = if weight > 0.0 {
            let d = sum / weight;
            (shift + d, (sum_squares - sum * d).max(0.0))
        } else {
            (f64::NAN, 0.0)
        };
        Moments {
            weight,
            mean,
            m2,
            min,
            max,
            nonfinite,
        }
    }

    /// Chan, Golub and LeVeque's pairwise update of the mean and the sum of
    /// squared deviations.
    fn merge(self, other: Moments) -> Moments {
        let weight = self.weight + other.weight;
        let (mean, m2) = if other.weight == 0.0 {
            (self.mean, self.m2)
        } else if self.weight == 0.0 {
            (other.mean, other.m2)
        } else {
            let delta = other.mean - self.mean;
            (
                self.mean + delta * (other.weight / weight),
                self.m2 + other.m2 + delta * delta * (self.weight * (other.weight / weight)),
            )
        };
        Moments {
            weight,
            mean,
            m2,
            min: self.min.min(other.min),
            max: self.max.max(other.max),
            nonfinite: self.nonfinite + other.nonfinite,
        }
    }

    fn stats(&self) -> Stats {
        let some = self.min <= self.max;
        Stats {
            count: self.weight,
            min: if some { self.min } else { f64::NAN },
            max: if some { self.max } else { f64::NAN },
            mean: if self.weight > 0.0 {
                self.mean
            } else {
                f64::NAN
            },
            std: if self.weight > 0.0 {
                (self.m2 / self.weight).sqrt()
            } else {
                f64::NAN
            },
            nonfinite: self.nonfinite,
            below: 0.0,
            above: 0.0,
        }
    }
}

fn merge_moments(chunks: Vec<Moments>) -> Moments {
    chunks.into_iter().fold(Moments::EMPTY, Moments::merge)
}

/// The statistics of one chunk, from sums of deviations from one of its own
/// values: with that shift the sum of squares loses no precision to a large
/// mean, and the sums need no division per value.
#[inline(always)]
fn moments_kernel<T, F, W>(chunk: &[T], start: usize, to_f64: F, weights: W) -> Moments
where
    T: Copy,
    F: Fn(T) -> f64,
    W: Weights,
{
    let counted = |i: usize, x: f64| x.is_finite() && weights.at(start + i) != 0.0;
    let Some(shift) = chunk
        .iter()
        .enumerate()
        .map(|(i, &v)| (i, to_f64(v)))
        .find(|&(i, x)| counted(i, x))
        .map(|(_, x)| x)
    else {
        let nonfinite = chunk
            .iter()
            .enumerate()
            .filter(|&(_, &v)| !to_f64(v).is_finite())
            .map(|(i, _)| weights.at(start + i))
            .sum();
        return Moments {
            nonfinite,
            ..Moments::EMPTY
        };
    };
    let mut lanes = Lanes::new(shift);
    let blocks = chunk.chunks_exact(LANES);
    let rest = blocks.remainder();
    for (b, block) in blocks.enumerate() {
        for (l, &v) in block.iter().enumerate() {
            lanes.add(l, to_f64(v), weights.at(start + b * LANES + l));
        }
    }
    let rest_start = chunk.len() - rest.len();
    for (l, &v) in rest.iter().enumerate() {
        lanes.add(l, to_f64(v), weights.at(start + rest_start + l));
    }
    lanes.finish()
}

with_avx2!(moments, moments_avx2, moments_kernel,
    <T: Copy, F: Fn(T) -> f64, W: Weights>,
    (chunk: &[T], start: usize, to_f64: F, weights: W) -> Moments);

/// The statistics pass's accumulators, one set per lane.
struct Lanes {
    shift: f64,
    weight: [f64; LANES],
    sum: [f64; LANES],
    sum_squares: [f64; LANES],
    min: [f64; LANES],
    max: [f64; LANES],
    nonfinite: [f64; LANES],
}

impl Lanes {
    fn new(shift: f64) -> Lanes {
        Lanes {
            shift,
            weight: [0.0; LANES],
            sum: [0.0; LANES],
            sum_squares: [0.0; LANES],
            min: [shift; LANES],
            max: [shift; LANES],
            nonfinite: [0.0; LANES],
        }
    }

    /// Adds `x` with weight `w`; written without branches, a nonfinite or
    /// weightless value standing in as the shift, which changes nothing.
    #[inline(always)]
    fn add(&mut self, l: usize, x: f64, w: f64) {
        let finite = x.abs() < f64::INFINITY;
        let counted = finite & (w != 0.0);
        let v = if counted { x } else { self.shift };
        let d = v - self.shift;
        let wf = if finite { w } else { 0.0 };
        self.weight[l] += wf;
        self.sum[l] += wf * d;
        self.sum_squares[l] += wf * d * d;
        self.nonfinite[l] += w - wf;
        self.min[l] = if v < self.min[l] { v } else { self.min[l] };
        self.max[l] = if v > self.max[l] { v } else { self.max[l] };
    }

    fn finish(&self) -> Moments {
        Moments::of_sums(
            self.shift,
            self.weight.iter().sum(),
            self.sum.iter().sum(),
            self.sum_squares.iter().sum(),
            (
                self.min.iter().copied().fold(f64::INFINITY, f64::min),
                self.max.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            ),
            self.nonfinite.iter().sum(),
        )
    }
}

/// Finds the bin of a value among edges; `bins`, `bins + 1` and `bins + 2`
/// stand for below the first edge, above the last and nonfinite.
struct Binner<'e> {
    edges: &'e [f64],
    lo: f64,
    hi: f64,
    last: usize,
    /// Set when the edges are `uniform_edges(lo, hi, bins)`, well conditioned.
    grid: Option<Grid>,
    /// Set with `grid` when float32 arithmetic locates most float32 values.
    grid32: Option<Grid32>,
}

/// Below this ratio of the largest edge's magnitude to a bin's width, the
/// rounding errors of the edges and of the multiplication that guesses a
/// value's bin are far below one bin, so one correction always suffices.
const WELL_CONDITIONED: f64 = (1u64 << 40) as f64;

impl<'e> Binner<'e> {
    fn new(edges: &'e [f64]) -> Binner<'e> {
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
    fn locate_search(&self, x: f64) -> usize {
        if !(x >= self.lo && x <= self.hi) {
            return self.outside(x);
        }
        self.edges[1..=self.last].partition_point(|&e| e <= x)
    }

    #[cold]
    fn outside(&self, x: f64) -> usize {
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

/// Equal bins, located by arithmetic alone so that the loop vectorises.
#[derive(Clone, Copy)]
struct Grid {
    lo: f64,
    hi: f64,
    step: f64,
    scale: f64,
    last: f64,
    bins: f64,
}

impl Grid {
    /// The slot of `x`, as `Binner` numbers them, without branches: a
    /// multiplication guesses the bin to within one, and the guess is
    /// corrected against its edges, recomputed exactly as `uniform_edges`
    /// computes them (`j * step + lo`), so that values on an edge go where
    /// `numpy.histogram` puts them. The last edge is `hi` itself rather than
    /// the formula's, hence the final clamp.
    #[inline(always)]
    fn slot(&self, x: f64) -> u32 {
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

/// A chunk's counts, followed by the weight below, above and nonfinite.
fn tally<T, F, W>(chunk: &[T], start: usize, to_f64: F, weights: W, binner: &Binner<'_>) -> Vec<f64>
where
    T: Copy,
    F: Fn(T) -> f64,
    W: Weights,
{
    // The bins, then below, above and nonfinite.
    let slots = binner.last + 4;
    match &binner.grid {
        Some(grid) => tally_grid(chunk, start, to_f64, weights, slots, *grid),
        None => tally_with(chunk, start, to_f64, weights, slots, |x| {
            binner.locate_search(x)
        }),
    }
    .finish()
}

/// Values per block of slots computed before they are counted.
const BLOCK: usize = 512;

/// Equal bins in two steps per block: the slots, in a loop without branches
/// that vectorises, then the counting, which cannot.
#[inline(always)]
fn tally_grid_kernel<T, F, W>(
    chunk: &[T],
    start: usize,
    to_f64: F,
    weights: W,
    stride: usize,
    grid: Grid,
) -> Copies<W::Count>
where
    T: Copy,
    F: Fn(T) -> f64,
    W: Weights,
{
    let mut copies = Copies::new(stride);
    let mut slots = [0u32; BLOCK];
    for (b, block) in chunk.chunks(BLOCK).enumerate() {
        let slots = &mut slots[..block.len()];
        for (slot, &v) in slots.iter_mut().zip(block) {
            *slot = grid.slot(to_f64(v));
        }
        copies.add(slots, start + b * BLOCK, weights);
    }
    copies
}

/// Any edges: each value's slot by binary search, then counted.
#[inline(always)]
fn tally_kernel<T, F, W, L>(
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
    L: Fn(f64) -> usize,
{
    let mut copies = Copies::new(stride);
    let mut slots = [0u32; BLOCK];
    for (b, block) in chunk.chunks(BLOCK).enumerate() {
        let slots = &mut slots[..block.len()];
        for (slot, &v) in slots.iter_mut().zip(block) {
            *slot = locate(to_f64(v)) as u32;
        }
        copies.add(slots, start + b * BLOCK, weights);
    }
    copies
}

with_avx2!(tally_grid, tally_grid_avx2, tally_grid_kernel,
    <T: Copy, F: Fn(T) -> f64, W: Weights>,
    (chunk: &[T], start: usize, to_f64: F, weights: W, stride: usize, grid: Grid)
        -> Copies<W::Count>);

with_avx2!(tally_with, tally_avx2, tally_kernel,
    <T: Copy, F: Fn(T) -> f64, W: Weights, L: Fn(f64) -> usize>,
    (chunk: &[T], start: usize, to_f64: F, weights: W, stride: usize, locate: L)
        -> Copies<W::Count>);

/// `COPIES` tallies of `stride` slots each, one after the other.
struct Copies<C> {
    counts: Vec<C>,
    stride: usize,
}

impl<C: Copy + Default + std::ops::AddAssign + Into<f64>> Copies<C> {
    fn new(stride: usize) -> Self {
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
    fn add<W: Weights<Count = C>>(&mut self, slots: &[u32], start: usize, weights: W) {
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

    fn finish(self) -> Vec<f64> {
        let mut total = vec![0.0; self.stride];
        for copy in self.counts.chunks_exact(self.stride) {
            for (t, &c) in total.iter_mut().zip(copy) {
                *t += c.into();
            }
        }
        total
    }
}

/// Unweighted float32 values, in float32 where that gives the same results:
/// the extremes, and most values' bins.
struct Float32;

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
fn moments_f32(chunk: &[f32]) -> Moments {
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
fn moments_f32_avx2(chunk: &[f32]) -> Moments {
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
struct Grid32 {
    /// `lo` rounded to the nearest float32, and `scale` likewise.
    lo: f32,
    scale: f32,
    /// The smallest float32 at least `lo` and the largest at most `hi`.
    lowest: f32,
    highest: f32,
    /// `lo` and `hi` where they are float32 values, NaN otherwise: values
    /// equal to them (the extremes, with the default range) are in the first
    /// and the last bin, however close `u` is to a whole number.
    lo_exact: f32,
    hi_exact: f32,
    /// `u`'s fractional parts below `near` or above `far` are near an edge.
    near: f32,
    far: f32,
    last: f32,
    bins: f32,
    exact: Grid,
}

/// The widest margin for which `Grid32` is used: with more, too many values
/// would take the float64 path for float32 to pay.
const NEAR_AT_MOST: f64 = 1.0 / 1024.0;

impl Grid32 {
    fn new(grid: Grid) -> Option<Grid32> {
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
    fn slot(&self, x: f32) -> (u32, bool) {
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
fn f32_at_least(x: f64) -> f32 {
    let r = x as f32;
    if f64::from(r) < x {
        r.next_up()
    } else {
        r
    }
}

/// `x` rounded down to a float32.
fn f32_at_most(x: f64) -> f32 {
    let r = x as f32;
    if f64::from(r) > x {
        r.next_down()
    } else {
        r
    }
}

/// Values per group whose slots near an edge are recomputed in float64:
/// few enough that a group with one rarely costs much.
const GROUP: usize = 64;

#[inline(always)]
fn tally_grid32_kernel(chunk: &[f32], stride: usize, grid: Grid32) -> Copies<u32> {
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

fn merge_tallies(tallies: Vec<Vec<f64>>) -> Vec<f64> {
    let mut tallies = tallies.into_iter();
    let mut total = tallies.next().unwrap_or_default();
    for t in tallies {
        for (a, b) in total.iter_mut().zip(&t) {
            *a += b;
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    /// numpy's rule spelled out: bin j holds edges[j] <= x < edges[j + 1], the last bin closed.
    fn reference(values: &[f64], edges: &[f64]) -> (Vec<f64>, f64, f64) {
        let bins = edges.len() - 1;
        let mut counts = vec![0.0; bins];
        let (mut below, mut above) = (0.0, 0.0);
        for &x in values.iter().filter(|x| x.is_finite()) {
            if x < edges[0] {
                below += 1.0;
            } else if x > edges[bins] {
                above += 1.0;
            } else {
                let j = (0..bins)
                    .rev()
                    .find(|&j| edges[j] <= x)
                    .expect("x >= edges[0]");
                counts[j] += 1.0;
            }
        }
        (counts, below, above)
    }

    fn uniform(count: usize, range: Option<(f64, f64)>) -> Bins<'static> {
        Bins::Uniform { count, range }
    }

    /// A reproducible spread of values without a random number crate.
    fn spread(n: usize) -> Vec<f64> {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 11) as f64 / (1u64 << 53) as f64 * 6.0 - 3.0
            })
            .collect()
    }

    #[test]
    fn uniform_edges_are_numpys_linspace() {
        assert_eq!(uniform_edges(0.0, 1.0, 4), vec![0.0, 0.25, 0.5, 0.75, 1.0]);
        // np.linspace(-0.3, 1.1, 7).tolist(), which differs from -0.3 + j * 1.4 / 6.
        assert_eq!(
            uniform_edges(-0.3, 1.1, 6),
            vec![
                -0.3,
                -0.06666666666666662,
                0.16666666666666674,
                0.4000000000000001,
                0.6333333333333335,
                0.8666666666666667,
                1.1
            ]
        );
    }

    #[test]
    fn values_on_edges_go_right_and_the_last_bin_is_closed() {
        let values = [0.0, 0.25, 0.5, 0.75, 1.0, 0.1];
        let h = histogram(Values::F64(&values), None, uniform(4, None)).unwrap();
        assert_eq!(h.edges, vec![0.0, 0.25, 0.5, 0.75, 1.0]);
        assert_eq!(h.counts, vec![2.0, 1.0, 1.0, 2.0]);
    }

    #[test]
    fn counts_match_the_reference_on_awkward_edges() {
        // Edges whose values are not the products the multiplication guesses.
        let edges = uniform_edges(-0.3, 1.1, 6);
        let mut values: Vec<f64> = edges.clone();
        values.extend(edges.iter().map(|e| e.next_up()));
        values.extend(edges.iter().map(|e| e.next_down()));
        values.push(0.4);
        let h = histogram(Values::F64(&values), None, uniform(6, Some((-0.3, 1.1)))).unwrap();
        let (counts, below, above) = reference(&values, &edges);
        assert_eq!(h.counts, counts);
        assert_eq!((h.stats.below, h.stats.above), (below, above));
        assert_eq!((below, above), (1.0, 1.0));
    }

    #[test]
    fn outside_and_nonfinite_values_are_kept_out_of_the_bins() {
        let values = [
            -2.0,
            0.5,
            3.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1.0,
        ];
        let h = histogram(Values::F64(&values), None, uniform(2, Some((0.0, 1.0)))).unwrap();
        assert_eq!(h.counts, vec![0.0, 2.0]);
        let s = h.stats;
        assert_eq!(
            (s.count, s.nonfinite, s.below, s.above),
            (4.0, 3.0, 1.0, 1.0)
        );
        assert_eq!((s.min, s.max), (-2.0, 3.0));
        assert_eq!(s.mean, 0.625);
        let var = [-2.0f64, 0.5, 3.0, 1.0]
            .iter()
            .map(|x| (x - 0.625).powi(2))
            .sum::<f64>()
            / 4.0;
        assert!((s.std - var.sqrt()).abs() < 1e-15);
    }

    #[test]
    fn a_single_value_is_widened_by_half_and_none_give_zero_to_one() {
        let h = histogram(Values::F32(&[2.0, 2.0]), None, uniform(2, None)).unwrap();
        assert_eq!(h.edges, vec![1.5, 2.0, 2.5]);
        assert_eq!(h.counts, vec![0.0, 2.0]);
        assert_eq!(h.stats.std, 0.0);

        // numpy raises "too many bins" here; a constant must never fail to log.
        let h = histogram(Values::F64(&[1e20; 3]), None, uniform(4, None)).unwrap();
        assert_eq!(h.counts.iter().sum::<f64>(), 3.0);
        assert!(h.edges.windows(2).all(|w| w[0] < w[1]));

        for values in [&[][..], &[f64::NAN, f64::INFINITY][..]] {
            let h = histogram(Values::F64(values), None, uniform(2, None)).unwrap();
            assert_eq!(h.edges, vec![0.0, 0.5, 1.0]);
            assert_eq!(h.counts, vec![0.0, 0.0]);
            assert_eq!(h.stats.count, 0.0);
            assert_eq!(h.stats.nonfinite, values.len() as f64);
            assert!(h.stats.min.is_nan() && h.stats.mean.is_nan() && h.stats.std.is_nan());
        }
    }

    #[test]
    fn explicit_edges_use_the_same_rule() {
        let edges = [-1.0, 0.0, 0.5, 2.0];
        let values = [-1.0, -0.5, 0.0, 0.5, 1.9, 2.0, 2.5, -3.0];
        let h = histogram(Values::F64(&values), None, Bins::Edges(&edges)).unwrap();
        assert_eq!(h.counts, vec![2.0, 1.0, 3.0]);
        assert_eq!((h.stats.below, h.stats.above), (1.0, 1.0));
        assert_eq!(h.edges, edges.to_vec());
    }

    #[test]
    fn weights_weigh_counts_and_statistics() {
        let values = [0.0, 1.0, 2.0, f64::NAN, 5.0, -1.0];
        let weights = [1.0, 2.0, 3.0, 4.0, 0.0, 0.5];
        let h = histogram(
            Values::F64(&values),
            Some(&weights),
            uniform(2, Some((0.0, 2.0))),
        )
        .unwrap();
        assert_eq!(h.counts, vec![1.0, 5.0]);
        let s = h.stats;
        assert_eq!(
            (s.count, s.nonfinite, s.below, s.above),
            (6.5, 4.0, 0.5, 0.0)
        );
        // The value with weight 0 is not the maximum.
        assert_eq!((s.min, s.max), (-1.0, 2.0));
        let mean = (2.0 + 6.0 - 0.5) / 6.5;
        assert!((s.mean - mean).abs() < 1e-15);
        let var = (mean * mean
            + 2.0 * (1.0 - mean).powi(2)
            + 3.0 * (2.0 - mean).powi(2)
            + 0.5 * (-1.0 - mean).powi(2))
            / 6.5;
        assert!((s.std - var.sqrt()).abs() < 1e-15);
    }

    #[test]
    fn long_slices_in_parallel_match_the_reference() {
        let values = spread(PARALLEL_ABOVE * 3 + 17);
        let bins = uniform(50, Some((-2.0, 2.5)));
        let h = histogram(Values::F64(&values), None, bins).unwrap();
        let (counts, below, above) = reference(&values, &h.edges);
        assert_eq!(h.counts, counts);
        assert_eq!((h.stats.below, h.stats.above), (below, above));
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = values.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
        assert!((h.stats.mean - mean).abs() < 1e-12);
        assert!((h.stats.std - var.sqrt()).abs() < 1e-12);

        let ones = vec![1.0; values.len()];
        let weighted = histogram(Values::F64(&values), Some(&ones), bins).unwrap();
        assert_eq!(weighted.counts, h.counts);
        assert_eq!(weighted.stats, h.stats);
    }

    /// For each edge, the float32 values just below, nearest and just above it.
    fn float32_around(edges: &[f64]) -> Vec<f32> {
        edges
            .iter()
            .flat_map(|&e| {
                let (down, up) = (f32_at_most(e), f32_at_least(e));
                [down.next_down(), down, up, up.next_up()]
            })
            .collect()
    }

    /// `values` with `spread`'s values over `lo - width` to `hi + width`
    /// and a few nonfinite ones, as float32.
    fn float32_sample(values: Vec<f32>, lo: f64, hi: f64) -> Vec<f32> {
        let width = hi - lo;
        let mut values = values;
        values.extend(
            spread(10_001)
                .iter()
                .map(|&x| (lo + (x + 3.0) / 2.0 * width) as f32),
        );
        values.extend([f32::NAN, f32::INFINITY, f32::NEG_INFINITY]);
        values
    }

    fn assert_float32_matches_reference(values: &[f32], bins: Bins<'_>) {
        let h = histogram(Values::F32(values), None, bins).unwrap();
        let widened: Vec<f64> = values.iter().map(|&v| f64::from(v)).collect();
        let (counts, below, above) = reference(&widened, &h.edges);
        assert_eq!(h.counts, counts, "{bins:?}");
        assert_eq!((h.stats.below, h.stats.above), (below, above), "{bins:?}");
    }

    #[test]
    fn float32_values_next_to_edges_go_where_their_float64_values_do() {
        for (lo, hi, bins) in [
            (-0.3, 1.1, 6),
            (-3.7, 2.9, 50),
            (0.1, 0.7, 512),
            (1000.0, 1003.0, 7),
            (-1e-30, 3e-30, 10),
        ] {
            let edges = uniform_edges(lo, hi, bins);
            assert!(Binner::new(&edges).grid32.is_some(), "({lo}, {hi}, {bins})");
            let values = float32_sample(float32_around(&edges), lo, hi);
            assert_float32_matches_reference(&values, uniform(bins, Some((lo, hi))));
        }
    }

    #[test]
    fn float32_grids_too_fine_for_float32_are_binned_in_float64() {
        for (lo, hi, bins) in [(1e6, 1e6 + 1.0, 50), (-1e39, 1e39, 4), (0.0, 1e-39, 3)] {
            let edges = uniform_edges(lo, hi, bins);
            assert!(Binner::new(&edges).grid.is_some(), "({lo}, {hi}, {bins})");
            assert!(Binner::new(&edges).grid32.is_none(), "({lo}, {hi}, {bins})");
            let values = float32_sample(float32_around(&edges), lo, hi);
            assert_float32_matches_reference(&values, uniform(bins, Some((lo, hi))));
        }
    }

    #[test]
    fn float32_extremes_in_the_default_range_go_in_the_end_bins() {
        // Like ReLU outputs: many zeros, the minimum, and many values at the maximum.
        let mut values: Vec<f32> = spread(PARALLEL_ABOVE + 5)
            .iter()
            .map(|&x| x.clamp(0.0, 2.5) as f32)
            .collect();
        values.extend([0.1f32.next_down(), 0.1, 0.1f32.next_up()]);
        for bins in [1, 7, 50] {
            assert_float32_matches_reference(&values, uniform(bins, None));
            let h = histogram(Values::F32(&values), None, uniform(bins, None)).unwrap();
            let zeros = values.iter().filter(|&&v| v == 0.0).count() as f64;
            let tops = values.iter().filter(|&&v| v == 2.5).count() as f64;
            assert!(h.counts[0] >= zeros && h.counts[bins - 1] >= tops);
        }
    }

    #[test]
    fn unweighted_float32_statistics_are_the_weighted_kernels_bits() {
        // Lengths that end with a partial lane block, nonfinite values among them.
        for n in [0, 1, 7, 8, 13, CHUNK + 3, PARALLEL_ABOVE * 2 + 5] {
            let mut values: Vec<f32> = spread(n).iter().map(|&x| (x * 1e3 + 7.0) as f32).collect();
            for i in (0..n).step_by(97) {
                values[i] = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY][i % 3];
            }
            let ones = vec![1.0; n];
            for bins in [uniform(50, None), uniform(9, Some((-900.0, 1100.0)))] {
                let plain = histogram(Values::F32(&values), None, bins).unwrap();
                let weighted = histogram(Values::F32(&values), Some(&ones), bins).unwrap();
                assert_eq!(plain.counts, weighted.counts, "{n} values, {bins:?}");
                let bits = |h: &Histogram| h.stats.to_array().map(f64::to_bits);
                assert_eq!(bits(&plain), bits(&weighted), "{n} values, {bins:?}");
            }
        }
    }

    #[test]
    fn a_large_mean_does_not_cost_the_spread() {
        // Variance 1/4 around 1e9: naive sums of squares lose every digit of it.
        let values: Vec<f64> = (0..PARALLEL_ABOVE * 2)
            .map(|i| 1e9 + if i % 2 == 0 { 0.5 } else { -0.5 })
            .collect();
        let h = histogram(Values::F64(&values), None, uniform(4, None)).unwrap();
        assert_eq!(h.stats.mean, 1e9);
        assert!((h.stats.std - 0.5).abs() < 1e-9, "std {}", h.stats.std);
    }

    #[test]
    fn every_element_type_converts_exactly() {
        let bins = uniform(3, Some((-1.0, 2.0)));
        let check = |values: Values<'_>| {
            let h = histogram(values, None, bins).unwrap();
            let unsigned = matches!(
                values,
                Values::U8(_) | Values::U16(_) | Values::U32(_) | Values::U64(_)
            );
            let expect = if unsigned { [0.0, 1.0, 1.0] } else { [1.0; 3] };
            assert_eq!(h.counts, expect, "{values:?}");
            assert_eq!(h.stats.above, if unsigned { 1.0 } else { 0.0 });
        };
        check(Values::F64(&[-1.0, 0.0, 1.0]));
        check(Values::F32(&[-1.0, 0.0, 1.0]));
        // binary16 -1.0, 0.0, 1.0 and NaN; bfloat16 likewise.
        check(Values::F16Bits(&[0xbc00, 0x0000, 0x3c00, 0x7e00]));
        check(Values::Bf16Bits(&[0xbf80, 0x0000, 0x3f80, 0x7fc0]));
        check(Values::I8(&[-1, 0, 1]));
        check(Values::I16(&[-1, 0, 1]));
        check(Values::I32(&[-1, 0, 1]));
        check(Values::I64(&[-1, 0, 1]));
        check(Values::U8(&[0, 1, 5]));
        check(Values::U16(&[0, 1, 5]));
        check(Values::U32(&[0, 1, 5]));
        check(Values::U64(&[0, 1, 5]));
        let h = histogram(Values::Bool(&[true, false, true]), None, uniform(2, None)).unwrap();
        assert_eq!(h.counts, vec![1.0, 2.0]);
        let h = histogram(Values::F16Bits(&[0x7c00, 0x3c00]), None, uniform(2, None)).unwrap();
        assert_eq!(h.stats.nonfinite, 1.0);
    }

    #[test]
    fn bad_arguments_are_errors() {
        let v = Values::F64(&[1.0]);
        assert_eq!(
            histogram(v, None, uniform(0, None)),
            Err(BinningError::BinCount(0))
        );
        assert_eq!(
            histogram(v, None, uniform(2, Some((1.0, 1.0)))),
            Err(BinningError::BadRange { lo: 1.0, hi: 1.0 })
        );
        assert!(histogram(v, None, uniform(2, Some((-f64::MAX, f64::MAX)))).is_err());
        assert!(histogram(v, None, uniform(2, Some((0.0, f64::NAN)))).is_err());
        assert_eq!(
            histogram(v, None, Bins::Edges(&[1.0])),
            Err(BinningError::EdgeCount(1))
        );
        assert_eq!(
            histogram(v, None, Bins::Edges(&[0.0, f64::INFINITY])),
            Err(BinningError::NonfiniteEdge {
                index: 1,
                value: f64::INFINITY
            })
        );
        let err = histogram(v, None, Bins::Edges(&[0.0, 1.0, 1.0])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "edges must increase, got 1 after 1 at index 2"
        );
        assert_eq!(
            histogram(v, Some(&[1.0, 2.0]), uniform(2, None)),
            Err(BinningError::WeightsLength {
                values: 1,
                weights: 2
            })
        );
    }
}
