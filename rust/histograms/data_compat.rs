//! Histogram payloads to buckets: rows of (left edge, right edge, count), in float64;
//! and the one number of a `scalars` plugin tensor.
//!
//! Legacy `HistogramProto`s are converted as TensorBoard's `data_compat.py`
//! does, but without its cast to float32; `histograms` plugin tensors are
//! taken as they are, from any of the encodings TensorFlow writes, and
//! integer ones widened to float64 as TensorBoard's `make_ndarray` reads them.

use thiserror::Error;

use crate::histograms::float16::{bfloat16_to_f64, half_to_f64};
use crate::read::proto::dtype;
use crate::read::proto_view::{Encoding, HistogramView, Repeated, TensorView};
use crate::read::wire::WireError;

/// Why a histogram value could not be turned into buckets.
#[derive(Debug, Error, PartialEq)]
pub enum CompatError {
    #[error("HistogramProto has {counts} bucket counts but only {limits} bucket limits")]
    MissingLimits { counts: usize, limits: usize },
    #[error("histogram tensor has shape {0:?}, want (k, 3)")]
    BadShape(Vec<i64>),
    #[error("histogram tensor shape is damaged: {0}")]
    BadShapeProto(WireError),
    #[error(
        "histogram tensor has dtype {} ({}); histograms are numbers: a float or integer dtype",
        dtype::name(*.0),
        .0
    )]
    UnsupportedDtype(i32),
    #[error("histogram tensor content has {got} bytes, want {want}")]
    ContentSize { got: usize, want: usize },
    #[error("histogram tensor has {got} values for {want} elements")]
    TooManyValues { got: usize, want: usize },
    #[error(
        "histogram tensor claims {rows} rows but stores {got} values; more than \
         {MAX_EXPANDED_ROWS} rows are never expanded from so few"
    )]
    TooShort { rows: usize, got: usize },
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
pub fn tensor_buckets(t: &TensorView<'_>, out: &mut Vec<f64>) -> Result<(), CompatError> {
    let rows = histogram_rows(t)?;
    let n = rows * 3;
    let format = Format::of(t.dtype)?;
    let start = out.len();
    if !t.content.is_empty() {
        decode_content(t.content, t.dtype, format, n, out)?;
    } else {
        decode_vals(t, format, n, out)?;
    }
    debug_assert_eq!(out.len() - start, n);
    Ok(())
}

/// The value of a `scalars` plugin tensor (TF2's `tf.summary.scalar` writes a
/// rank-0 float), from any numeric encoding; None unless it holds exactly one number.
pub fn tensor_scalar(t: &TensorView<'_>) -> Option<f64> {
    let mut elements = 1i64;
    for dim in t.dims() {
        elements = elements.saturating_mul(dim.ok()?);
    }
    if elements != 1 {
        return None;
    }
    let format = Format::of(t.dtype).ok()?;
    let mut out = Vec::with_capacity(1);
    if t.content.is_empty() {
        decode_vals(t, format, 1, &mut out).ok()?;
    } else {
        decode_content(t.content, t.dtype, format, 1, &mut out).ok()?;
    }
    out.first().copied()
}

/// Whether a tensor looks like a histogram: numeric, of shape (k, 3).
pub fn is_histogram_shaped(t: &TensorView<'_>) -> bool {
    Format::of(t.dtype).is_ok() && histogram_rows(t).is_ok()
}

fn histogram_rows(t: &TensorView<'_>) -> Result<usize, CompatError> {
    let mut dims = [0i64; 2];
    let mut rank = 0;
    for dim in t.dims() {
        let dim = dim.map_err(CompatError::BadShapeProto)?;
        if let Some(slot) = dims.get_mut(rank) {
            *slot = dim;
        }
        rank += 1;
    }
    match (rank, dims) {
        (2, [k, 3]) if (0..=i64::from(u32::MAX)).contains(&k) => Ok(k as usize),
        _ => Err(CompatError::BadShape(
            t.dims().map(|d| d.unwrap_or(-1)).collect(),
        )),
    }
}

/// How a dtype's values are stored: their width in `tensor_content`, the
/// repeated field that holds them otherwise, and their widening to float64.
#[derive(Clone, Copy)]
struct Format {
    width: usize,
    widen: fn([u8; 8]) -> f64,
    field: Field,
}

/// Which `*_val` field holds a dtype's values, and how each is stored there.
#[derive(Clone, Copy)]
enum Field {
    Float,
    Double,
    /// `int_val` (int32, int16, int8, uint8, uint16), `int64_val`,
    /// `uint32_val`, `uint64_val`, `bool_val` or `half_val` (binary16 and
    /// bfloat16 bits): varints, converted from the 64 bits stored.
    Varint(
        for<'b, 'a> fn(&'b TensorView<'a>) -> &'b Repeated<'a>,
        fn(u64) -> f64,
    ),
}

impl Format {
    fn of(dtype: i32) -> Result<Format, CompatError> {
        use Field::Varint;
        let (width, widen, field): (usize, fn([u8; 8]) -> f64, Field) = match dtype {
            dtype::DOUBLE => (8, |b| f64::from_le_bytes(b), Field::Double),
            dtype::FLOAT => (4, |b| f64::from(f32::from_le_bytes(le(b))), Field::Float),
            dtype::HALF => (
                2,
                |b| half_to_f64(u16::from_le_bytes(le(b))),
                Varint(|t| &t.half_val, |v| half_to_f64(v as u16)),
            ),
            dtype::BFLOAT16 => (
                2,
                |b| bfloat16_to_f64(u16::from_le_bytes(le(b))),
                Varint(|t| &t.half_val, |v| bfloat16_to_f64(v as u16)),
            ),
            dtype::INT8 => (
                1,
                |b| f64::from(b[0] as i8),
                Varint(|t| &t.int_val, |v| f64::from(v as i8)),
            ),
            dtype::UINT8 => (
                1,
                |b| f64::from(b[0]),
                Varint(|t| &t.int_val, |v| f64::from(v as u8)),
            ),
            dtype::BOOL => (
                1,
                |b| f64::from(u8::from(b[0] != 0)),
                Varint(|t| &t.bool_val, |v| f64::from(u8::from(v != 0))),
            ),
            dtype::INT16 => (
                2,
                |b| f64::from(i16::from_le_bytes(le(b))),
                Varint(|t| &t.int_val, |v| f64::from(v as i16)),
            ),
            dtype::UINT16 => (
                2,
                |b| f64::from(u16::from_le_bytes(le(b))),
                Varint(|t| &t.int_val, |v| f64::from(v as u16)),
            ),
            dtype::INT32 => (
                4,
                |b| f64::from(i32::from_le_bytes(le(b))),
                Varint(|t| &t.int_val, |v| f64::from(v as i32)),
            ),
            dtype::UINT32 => (
                4,
                |b| f64::from(u32::from_le_bytes(le(b))),
                Varint(|t| &t.uint32_val, |v| f64::from(v as u32)),
            ),
            dtype::INT64 => (
                8,
                |b| i64::from_le_bytes(b) as f64,
                Varint(|t| &t.int64_val, |v| v as i64 as f64),
            ),
            dtype::UINT64 => (
                8,
                |b| u64::from_le_bytes(b) as f64,
                Varint(|t| &t.uint64_val, |v| v as f64),
            ),
            other => return Err(CompatError::UnsupportedDtype(other)),
        };
        Ok(Format {
            width,
            widen,
            field,
        })
    }
}

/// The first `N` of eight little-endian bytes.
fn le<const N: usize>(b: [u8; 8]) -> [u8; N] {
    b[..N].try_into().expect("N <= 8")
}

fn decode_content(
    bytes: &[u8],
    dtype: i32,
    format: Format,
    n: usize,
    out: &mut Vec<f64>,
) -> Result<(), CompatError> {
    let want = n * format.width;
    if bytes.len() != want {
        return Err(CompatError::ContentSize {
            got: bytes.len(),
            want,
        });
    }
    let chunks = bytes.chunks_exact(format.width);
    // The floats TensorFlow writes get loops the compiler can unroll.
    match dtype {
        dtype::DOUBLE => out.extend(chunks.map(|c| f64::from_le_bytes(le_bytes(c)))),
        dtype::FLOAT => out.extend(chunks.map(|c| f64::from(f32::from_le_bytes(le_bytes(c))))),
        _ => out.extend(chunks.map(|c| {
            let mut b = [0u8; 8];
            b[..c.len()].copy_from_slice(c);
            (format.widen)(b)
        })),
    }
    Ok(())
}

/// A chunk of exactly `N` bytes as an array.
fn le_bytes<const N: usize>(chunk: &[u8]) -> [u8; N] {
    chunk.try_into().expect("chunks of the dtype's width")
}

fn decode_vals(
    t: &TensorView<'_>,
    format: Format,
    n: usize,
    out: &mut Vec<f64>,
) -> Result<(), CompatError> {
    match format.field {
        Field::Double => {
            let vals = &t.double_val;
            let len = vals.len(Encoding::Fixed64);
            extend_vals(out, vals.fixed::<8>().map(f64::from_le_bytes), len, n)
        }
        Field::Float => {
            let vals = &t.float_val;
            let len = vals.len(Encoding::Fixed32);
            let widen = |b: [u8; 4]| f64::from(f32::from_le_bytes(b));
            extend_vals(out, vals.fixed::<4>().map(widen), len, n)
        }
        Field::Varint(field, widen) => {
            let vals = field(t);
            let len = vals.len(Encoding::Varint);
            extend_vals(out, vals.varints().map(widen), len, n)
        }
    }
}

/// The most rows a short encoding is expanded to. TensorFlow's histogram
/// writers store tensors in `tensor_content` (the short encoding comes from
/// broadcasting one value, as `make_tensor_proto(0, shape=[k, 3])` does), and
/// a handful of bytes that claim millions of rows is damage: expanding it
/// would allocate far beyond the file. 4096 rows is eight times the bin limit.
pub const MAX_EXPANDED_ROWS: usize = 1 << 12;

/// TensorFlow's short encoding: fewer values than elements repeat the last
/// one, and none at all means zeros (`tensor_util.make_ndarray`).
fn extend_vals(
    out: &mut Vec<f64>,
    vals: impl Iterator<Item = f64>,
    len: usize,
    n: usize,
) -> Result<(), CompatError> {
    if len > n {
        return Err(CompatError::TooManyValues { got: len, want: n });
    }
    if len < n && n > 3 * MAX_EXPANDED_ROWS {
        return Err(CompatError::TooShort {
            rows: n / 3,
            got: len,
        });
    }
    let start = out.len();
    out.extend(vals);
    let last = if out.len() > start {
        out[out.len() - 1]
    } else {
        0.0
    };
    out.resize(start + n, last);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histograms::stats::Stats;
    use crate::read::proto::{Dim, HistogramProto, TensorProto, TensorShapeProto};
    use prost::Message;

    #[test]
    fn a_scalar_tensor_gives_its_one_number() {
        let scalar = |dims: Vec<i64>, t: TensorProto| {
            let t = TensorProto {
                tensor_shape: Some(TensorShapeProto {
                    dim: dims.into_iter().map(|size| Dim { size }).collect(),
                }),
                ..t
            };
            tensor_scalar(&TensorView::decode(&t.encode_to_vec()).unwrap())
        };
        let float = |values: Vec<f32>| TensorProto {
            dtype: dtype::FLOAT,
            float_val: values,
            ..Default::default()
        };
        // TF2's tf.summary.scalar: a rank-0 float32.
        assert_eq!(scalar(vec![], float(vec![0.5])), Some(0.5));
        assert_eq!(scalar(vec![1, 1], float(vec![2.0])), Some(2.0));
        let content = TensorProto {
            dtype: dtype::DOUBLE,
            tensor_content: f64::NAN.to_le_bytes().to_vec().into(),
            ..Default::default()
        };
        assert!(scalar(vec![], content).unwrap().is_nan());
        assert_eq!(scalar(vec![2], float(vec![1.0, 2.0])), None);
        let text = TensorProto {
            dtype: 7,
            ..Default::default()
        };
        assert_eq!(scalar(vec![], text), None);
    }

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
        let bytes = t.encode_to_vec();
        let view = TensorView::decode(&bytes).unwrap();
        let mut out = Vec::new();
        tensor_buckets(&view, &mut out).map(|()| out)
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
        assert_eq!(decode(&tensor(7, 1)), Err(CompatError::UnsupportedDtype(7)));
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

    #[test]
    fn integer_tensors_are_widened_like_make_ndarray() {
        let mut t = tensor(dtype::INT32, 1);
        t.int_val = vec![-2, 3, 40];
        assert_eq!(decode(&t).unwrap(), vec![-2.0, 3.0, 40.0]);
        let mut t = tensor(dtype::INT64, 2);
        t.int64_val = vec![-(1 << 40), 1, 7];
        assert_eq!(
            decode(&t).unwrap(),
            vec![-(1i64 << 40) as f64, 1.0, 7.0, 7.0, 7.0, 7.0]
        );
        let mut t = tensor(dtype::UINT64, 1);
        t.uint64_val = vec![u64::MAX, 0, 1];
        assert_eq!(decode(&t).unwrap(), vec![u64::MAX as f64, 0.0, 1.0]);
        let mut t = tensor(dtype::UINT32, 1);
        t.uint32_val = vec![u32::MAX, 0, 1];
        assert_eq!(decode(&t).unwrap(), vec![f64::from(u32::MAX), 0.0, 1.0]);
        for (dtype, stored, want) in [
            (dtype::INT8, -5, -5.0),
            (dtype::INT16, -300, -300.0),
            (dtype::UINT8, 250, 250.0),
            (dtype::UINT16, 65000, 65000.0),
        ] {
            let mut t = tensor(dtype, 1);
            t.int_val = vec![stored, 1, 2];
            assert_eq!(decode(&t).unwrap(), vec![want, 1.0, 2.0], "{dtype}");
        }
        let mut t = tensor(dtype::BOOL, 1);
        t.bool_val = vec![true, false, true];
        assert_eq!(decode(&t).unwrap(), vec![1.0, 0.0, 1.0]);
    }

    #[test]
    fn integer_tensor_content_of_each_width() {
        let cases: [(i32, Vec<u8>); 8] = [
            (dtype::INT8, vec![0xff, 1, 2]),
            (dtype::UINT8, vec![0xff, 1, 2]),
            (
                dtype::INT16,
                [-1i16, 1, 2].iter().flat_map(|v| v.to_le_bytes()).collect(),
            ),
            (
                dtype::UINT16,
                [65535u16, 1, 2]
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect(),
            ),
            (
                dtype::INT32,
                [-1i32, 1, 2].iter().flat_map(|v| v.to_le_bytes()).collect(),
            ),
            (
                dtype::UINT32,
                [u32::MAX, 1, 2]
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect(),
            ),
            (
                dtype::INT64,
                [-1i64, 1, 2].iter().flat_map(|v| v.to_le_bytes()).collect(),
            ),
            (
                dtype::UINT64,
                [u64::MAX, 1, 2]
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect(),
            ),
        ];
        for (dtype, content) in cases {
            let mut t = tensor(dtype, 1);
            t.tensor_content = content.into();
            let first = match dtype {
                dtype::UINT8 => 255.0,
                dtype::UINT16 => 65535.0,
                dtype::UINT32 => f64::from(u32::MAX),
                dtype::UINT64 => u64::MAX as f64,
                _ => -1.0,
            };
            assert_eq!(decode(&t).unwrap(), vec![first, 1.0, 2.0], "{dtype}");
        }
    }

    #[test]
    fn short_encodings_are_not_expanded_without_bound() {
        let mut t = tensor(dtype::DOUBLE, 1 << 30);
        t.double_val = vec![1.0];
        assert_eq!(
            decode(&t),
            Err(CompatError::TooShort {
                rows: 1 << 30,
                got: 1
            })
        );
        assert_eq!(
            decode(&tensor(dtype::FLOAT, MAX_EXPANDED_ROWS as i64)).map(|v| v.len()),
            Ok(3 * MAX_EXPANDED_ROWS)
        );
    }

    #[test]
    fn an_unsupported_dtype_is_named() {
        assert_eq!(
            decode(&tensor(7, 1))
                .unwrap_err()
                .to_string(),
            "histogram tensor has dtype DT_STRING (7); histograms are numbers: a float or integer dtype"
        );
    }
}
