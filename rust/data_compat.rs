//! Histogram payloads to buckets: rows of (left edge, right edge, count), in float64.
//!
//! Legacy `HistogramProto`s are converted as TensorBoard's `data_compat.py`
//! does, but without its cast to float32; `histograms` plugin tensors are
//! taken as they are, from any of the encodings TensorFlow writes.

use thiserror::Error;

use crate::float16::{bfloat16_to_f64, half_to_f64};
use crate::proto::{dtype, TensorProto};
use crate::proto_view::HistogramView;
pub use crate::stats::Stats;

/// Why a histogram value could not be turned into buckets.
#[derive(Debug, Error, PartialEq)]
pub enum CompatError {
    #[error("HistogramProto has {counts} bucket counts but only {limits} bucket limits")]
    MissingLimits { counts: usize, limits: usize },
    #[error("histogram tensor has shape {0:?}, want (k, 3)")]
    BadShape(Vec<i64>),
    #[error("histogram tensor has unsupported dtype {0}")]
    UnsupportedDtype(i32),
    #[error("histogram tensor content has {got} bytes, want {want}")]
    ContentSize { got: usize, want: usize },
    #[error("histogram tensor has {got} values for {want} elements")]
    TooManyValues { got: usize, want: usize },
    #[error("histoscope histogram has {counts} counts but {limits} bucket limits")]
    EdgeCountMismatch { counts: usize, limits: usize },
}

/// Appends the buckets of a legacy histogram to `out`, three values per bucket.
///
/// Empty buckets at both ends are dropped, because their limits are
/// meaningless (`min` defaults to DBL_MAX); `min` and `max` become the outer
/// edges; a histogram with no counts gives no buckets.
pub fn legacy_buckets(h: &HistogramView<'_>, out: &mut Vec<f64>) -> Result<(), CompatError> {
    let counts = &h.counts;
    let Some(start) = counts.iter().position(|c| c > 0.0) else {
        return Ok(());
    };
    let last_from_end = counts
        .iter()
        .rev()
        .position(|c| c > 0.0)
        .expect("a positive count");
    let end = counts.len() - 1 - last_from_end;
    if h.limits.len() < end {
        return Err(CompatError::MissingLimits {
            counts: counts.len(),
            limits: h.limits.len(),
        });
    }
    out.reserve(3 * (end + 1 - start));
    for i in start..=end {
        let left = if i == start {
            h.min
        } else {
            h.limits.get(i - 1)
        };
        let right = if i == end { h.max } else { h.limits.get(i) };
        out.extend_from_slice(&[left, right, counts.get(i)]);
    }
    Ok(())
}

/// Appends every bin of a histogram histoscope wrote, the empty outer ones
/// too: its first edge is stored beside the proto, the others are the limits.
pub fn histoscope_buckets(
    h: &HistogramView<'_>,
    first_edge: f64,
    out: &mut Vec<f64>,
) -> Result<(), CompatError> {
    if h.limits.len() != h.counts.len() {
        return Err(CompatError::EdgeCountMismatch {
            counts: h.counts.len(),
            limits: h.limits.len(),
        });
    }
    out.reserve(3 * h.counts.len());
    let lefts = std::iter::once(first_edge).chain(h.limits.iter());
    for ((left, right), count) in lefts.zip(h.limits.iter()).zip(h.counts.iter()) {
        out.extend_from_slice(&[left, right, count]);
    }
    Ok(())
}

/// Appends the buckets of a `histograms` plugin tensor of shape (k, 3) to `out`.
pub fn tensor_buckets(t: &TensorProto, out: &mut Vec<f64>) -> Result<(), CompatError> {
    let rows = histogram_rows(t)?;
    let n = rows * 3;
    let start = out.len();
    if !t.tensor_content.is_empty() {
        decode_content(t, n, out)?;
    } else {
        match t.dtype {
            dtype::DOUBLE => extend_vals(out, &t.double_val, n, |&v| v)?,
            dtype::FLOAT => extend_vals(out, &t.float_val, n, |&v| f64::from(v))?,
            dtype::HALF => extend_vals(out, &t.half_val, n, |&v| half_to_f64(v as u16))?,
            dtype::BFLOAT16 => extend_vals(out, &t.half_val, n, |&v| bfloat16_to_f64(v as u16))?,
            other => return Err(CompatError::UnsupportedDtype(other)),
        }
    }
    debug_assert_eq!(out.len() - start, n);
    Ok(())
}

/// Whether a tensor looks like a histogram: numeric, of shape (k, 3).
pub fn is_histogram_shaped(t: &TensorProto) -> bool {
    histogram_rows(t).is_ok()
        && matches!(
            t.dtype,
            dtype::DOUBLE | dtype::FLOAT | dtype::HALF | dtype::BFLOAT16
        )
}

fn histogram_rows(t: &TensorProto) -> Result<usize, CompatError> {
    let dims: Vec<i64> = t
        .tensor_shape
        .iter()
        .flat_map(|s| s.dim.iter().map(|d| d.size))
        .collect();
    match dims[..] {
        [k, 3] if (0..=i64::from(u32::MAX)).contains(&k) => Ok(k as usize),
        _ => Err(CompatError::BadShape(dims)),
    }
}

fn decode_content(t: &TensorProto, n: usize, out: &mut Vec<f64>) -> Result<(), CompatError> {
    let bytes = &t.tensor_content[..];
    let width = match t.dtype {
        dtype::DOUBLE => 8,
        dtype::FLOAT => 4,
        dtype::HALF | dtype::BFLOAT16 => 2,
        other => return Err(CompatError::UnsupportedDtype(other)),
    };
    if bytes.len() != n * width {
        return Err(CompatError::ContentSize {
            got: bytes.len(),
            want: n * width,
        });
    }
    let chunks = bytes.chunks_exact(width);
    match t.dtype {
        dtype::DOUBLE => {
            out.extend(chunks.map(|c| f64::from_le_bytes(c.try_into().expect("8-byte chunk"))))
        }
        dtype::FLOAT => out.extend(
            chunks.map(|c| f64::from(f32::from_le_bytes(c.try_into().expect("4-byte chunk")))),
        ),
        dtype::HALF => out.extend(chunks.map(|c| half_to_f64(u16::from_le_bytes([c[0], c[1]])))),
        _ => out.extend(chunks.map(|c| bfloat16_to_f64(u16::from_le_bytes([c[0], c[1]])))),
    }
    Ok(())
}

/// TensorFlow's short encoding: fewer values than elements repeat the last
/// one, and none at all means zeros (`tensor_util.make_ndarray`).
fn extend_vals<T>(
    out: &mut Vec<f64>,
    vals: &[T],
    n: usize,
    convert: impl Fn(&T) -> f64,
) -> Result<(), CompatError> {
    if vals.len() > n {
        return Err(CompatError::TooManyValues {
            got: vals.len(),
            want: n,
        });
    }
    out.extend(vals.iter().map(&convert));
    let last = vals.last().map_or(0.0, &convert);
    out.resize(out.len() + n - vals.len(), last);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{Dim, HistogramProto, TensorShapeProto};

    fn histo(min: f64, max: f64, limits: &[f64], counts: &[f64]) -> HistogramProto {
        HistogramProto {
            min,
            max,
            num: counts.iter().sum(),
            sum: 0.0,
            sum_squares: 0.0,
            bucket_limit: limits.to_vec(),
            bucket: counts.to_vec(),
            histoscope: None,
        }
    }

    #[test]
    fn histoscope_histograms_keep_every_bin() {
        let h = histo(1.0, 2.0, &[1.0, 2.0, 3.0], &[0.0, 5.0, 0.0]);
        let mut out = Vec::new();
        histoscope_buckets(&(&h).into(), 0.0, &mut out).unwrap();
        assert_eq!(out, vec![0.0, 1.0, 0.0, 1.0, 2.0, 5.0, 2.0, 3.0, 0.0]);
        let short = histo(1.0, 2.0, &[1.0], &[0.0, 5.0]);
        assert_eq!(
            histoscope_buckets(&(&short).into(), 0.0, &mut out),
            Err(CompatError::EdgeCountMismatch {
                counts: 2,
                limits: 1
            })
        );
    }

    fn buckets(h: &HistogramProto) -> Vec<f64> {
        let mut out = Vec::new();
        legacy_buckets(&h.into(), &mut out).unwrap();
        out
    }

    #[test]
    fn legacy_drops_empty_ends_and_uses_min_max() {
        let h = histo(
            -0.5,
            2.5,
            &[-1.0, 0.0, 1.0, 2.0, 3.0, f64::MAX],
            &[0.0, 1.0, 0.0, 2.0, 3.0, 0.0],
        );
        assert_eq!(
            buckets(&h),
            vec![-0.5, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 2.0, 2.0, 2.0, 2.5, 3.0]
        );
    }

    #[test]
    fn legacy_single_bucket_spans_min_to_max() {
        // TF1's all-zero bias: one bucket whose limit is 1e-12.
        let h = histo(0.0, 0.0, &[-1e-12, 0.0, 1e-12], &[0.0, 0.0, 16.0]);
        assert_eq!(buckets(&h), vec![0.0, 0.0, 16.0]);
    }

    #[test]
    fn legacy_all_empty_gives_no_buckets() {
        assert!(buckets(&histo(f64::MAX, -f64::MAX, &[1.0, 2.0], &[0.0, 0.0])).is_empty());
    }

    #[test]
    fn legacy_missing_limits_is_an_error() {
        let h = histo(0.0, 3.0, &[1.0], &[1.0, 1.0, 1.0]);
        assert_eq!(
            legacy_buckets(&(&h).into(), &mut Vec::new()),
            Err(CompatError::MissingLimits {
                counts: 3,
                limits: 1
            })
        );
    }

    #[test]
    fn legacy_stats_from_sums() {
        let mut h = histo(1.0, 3.0, &[2.0, 3.0], &[1.0, 1.0]);
        h.sum = 4.0;
        h.sum_squares = 10.0;
        let s = Stats::of_legacy(&(&h).into());
        assert_eq!(
            (s.count, s.min, s.max, s.mean, s.std),
            (2.0, 1.0, 3.0, 2.0, 1.0)
        );
        assert!(s.nonfinite.is_nan());
    }

    fn tensor(dtype: i32, rows: i64) -> TensorProto {
        TensorProto {
            dtype,
            tensor_shape: Some(TensorShapeProto {
                dim: vec![Dim { size: rows }, Dim { size: 3 }],
            }),
            ..Default::default()
        }
    }

    fn decode(t: &TensorProto) -> Result<Vec<f64>, CompatError> {
        let mut out = Vec::new();
        tensor_buckets(t, &mut out).map(|()| out)
    }

    #[test]
    fn tensor_content_double_and_float() {
        let mut t = tensor(dtype::DOUBLE, 1);
        t.tensor_content = [0.5f64, 1.5, 7.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(decode(&t).unwrap(), vec![0.5, 1.5, 7.0]);
        let mut t = tensor(dtype::FLOAT, 1);
        t.tensor_content = [0.5f32, 1.5, 7.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(decode(&t).unwrap(), vec![0.5, 1.5, 7.0]);
    }

    #[test]
    fn tensor_vals_of_each_dtype() {
        let mut t = tensor(dtype::DOUBLE, 1);
        t.double_val = vec![1.0, 2.0, 3.0];
        assert_eq!(decode(&t).unwrap(), vec![1.0, 2.0, 3.0]);
        let mut t = tensor(dtype::FLOAT, 1);
        t.float_val = vec![1.0, 2.0, 3.0];
        assert_eq!(decode(&t).unwrap(), vec![1.0, 2.0, 3.0]);
        let mut t = tensor(dtype::HALF, 1);
        t.half_val = vec![0x3c00, 0xc000, 0x3800]; // 1, -2, 0.5
        assert_eq!(decode(&t).unwrap(), vec![1.0, -2.0, 0.5]);
        let mut t = tensor(dtype::BFLOAT16, 1);
        t.half_val = vec![0x3f80, 0x4040, 0xbf00]; // 1, 3, -0.5
        assert_eq!(decode(&t).unwrap(), vec![1.0, 3.0, -0.5]);
    }

    #[test]
    fn tensor_short_vals_repeat_the_last_and_none_is_zeros() {
        let mut t = tensor(dtype::DOUBLE, 2);
        t.double_val = vec![4.0];
        assert_eq!(decode(&t).unwrap(), vec![4.0; 6]);
        assert_eq!(decode(&tensor(dtype::DOUBLE, 2)).unwrap(), vec![0.0; 6]);
        assert_eq!(
            decode(&tensor(dtype::DOUBLE, 0)).unwrap(),
            Vec::<f64>::new()
        );
    }

    #[test]
    fn tensor_errors_name_the_problem() {
        assert_eq!(decode(&tensor(3, 1)), Err(CompatError::UnsupportedDtype(3)));
        let mut t = tensor(dtype::DOUBLE, 2);
        t.tensor_content = vec![0u8; 8].into();
        assert_eq!(
            decode(&t),
            Err(CompatError::ContentSize { got: 8, want: 48 })
        );
        let mut t = tensor(dtype::DOUBLE, 1);
        t.tensor_shape.as_mut().unwrap().dim[1].size = 2;
        assert_eq!(decode(&t), Err(CompatError::BadShape(vec![1, 2])));
        let mut t = tensor(dtype::DOUBLE, 1);
        t.double_val = vec![0.0; 4];
        assert_eq!(
            decode(&t),
            Err(CompatError::TooManyValues { got: 4, want: 3 })
        );
    }
}
