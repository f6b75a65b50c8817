"""Histograms made inside a TensorFlow step that XLA compiles, as fixed-size record rows.

XLA lets nothing leave a compiled step but variables of fixed shapes, and a
layer's output changes shape with the batch. So the Keras callback's
TensorFlow tap (`histoscope.integrations._keras_taps.TensorFlowTap`) makes
each histogram inside the step, in float64 TensorFlow operations: one row of
``record_width(bins)`` float64s, the step, the counts in the core's bins and
the statistics. `records` makes the rows of many tensors in one pass over
all their values, so XLA compiles the same few operations whatever the number
and shapes of the tensors; `histogram_of_record` turns a row read after the
step into a `Histogram`.

Example:
    >>> record_width(bins=64)
    72
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _core
from ..write.histogram import Histogram

CHUNK_VALUES = 1 << 25
"""The most values `records` joins in one pass (a larger tensor is a pass of its own)."""

# A record row: the step, the counts, then these statistics.
_STATS = ("count", "min", "max", "mean", "std", "nonfinite", "width")
_NAN = float("nan")


def record_width(bins: int) -> int:
    """The float64s in one record row: the step, ``bins`` counts and the statistics."""
    return 1 + bins + len(_STATS)


def histogram_of_record(record: np.ndarray, bins: int) -> Histogram:
    """The `Histogram` a TensorFlow record row (without its step) holds, on the core's edges.

    Raises ValueError when the values span more than float64 bins can (an
    infinite width) or only a few subnormals (a width of 0, whose edges the
    core makes by numpy's special case, which the row's counts do not follow).

    Example:
        >>> row = np.array([1.0, 3.0, 4.0, 0.0, 1.0, 0.75, 0.433, 0.0, 0.5])
        >>> h = histogram_of_record(row, bins=2)
        >>> h.edges.tolist(), h.counts.tolist(), h.count
        ([0.0, 0.5, 1.0], [1.0, 3.0], 4.0)
    """
    counts = record[:bins]
    stats = dict(zip(_STATS, (float(v) for v in record[bins:])))
    width = stats["width"]
    if not math.isfinite(width) or width == 0:
        raise ValueError(
            f"values from {stats['min']:g} to {stats['max']:g} have no float64 bins of "
            "equal width the step could count in"
        )
    some = stats["count"] > 0
    lo, hi = _core.default_range(stats["min"], stats["max"]) if some else (0.0, 1.0)
    record_stats = _core.Stats(
        count=stats["count"],
        min=stats["min"] if some else _NAN,
        max=stats["max"] if some else _NAN,
        mean=stats["mean"] if some else _NAN,
        std=stats["std"] if some else _NAN,
        nonfinite=stats["nonfinite"],
        below=0.0,
        above=0.0,
    )
    return Histogram._of(_core.uniform_edges(lo, hi, bins), counts.copy(), record_stats)


def records(values: Sequence[Any], bins: int, step: Any) -> Any:
    """One record row per value, a ``[len(values), record_width(bins)]`` float64 tensor.

    The values, of any shapes and dtypes, are binned together: joined into one
    flat float64 run with each value's index beside it, every statistic and
    count is one segment operation over that run, so the operations XLA
    compiles are the same few for two tensors or two hundred. Runs hold at
    most `CHUNK_VALUES` values (as far as the shapes are known when traced; a
    larger tensor is a run of its own), so that the pass's temporaries stay
    a few times that many float64s whatever the size of the model.

    The bins are the core's: its default range (`_default_range` restates
    ``edges::default_range`` in float64 operations) in equal steps, the last
    edge ``hi``, and each value in the bin whose edges hold it
    (``edges[j] <= x < edges[j + 1]``, the last bin closed). Tests check the
    rows against `_core.histogram` on the same arrays.
    """
    import tensorflow as tf

    # A sparse gradient (tf.IndexedSlices, from an embedding) is made dense: the update applied.
    dense = [tf.stop_gradient(tf.convert_to_tensor(value)) for value in values]
    parts = [_run_records(dense[start:end], bins, step) for start, end in _runs(dense)]
    return parts[0] if len(parts) == 1 else tf.concat(parts, 0)


def _runs(tensors: Sequence[Any]) -> list[tuple[int, int]]:
    """Consecutive runs of tensors of at most `CHUNK_VALUES` values (or one tensor), a
    dimension unknown when traced (the batch's, at most) counted as 1."""
    runs: list[tuple[int, int]] = []
    start, size = 0, 0
    for end, tensor in enumerate(tensors):
        known = [d for d in tensor.shape] if tensor.shape.rank is not None else []
        values = math.prod(d for d in known if d is not None)
        if end > start and size + values > CHUNK_VALUES:
            runs.append((start, end))
            start, size = end, 0
        size += values
    if start < len(tensors):
        runs.append((start, len(tensors)))
    return runs


def _run_records(values: Sequence[Any], bins: int, step: Any) -> Any:
    """The record rows of one run of dense tensors, in one pass over all their values."""
    import tensorflow as tf

    f64, n = tf.float64, len(values)
    flat = [tf.reshape(value, [-1]) for value in values]
    x, seg = _joined(flat)
    finite = tf.math.is_finite(x)
    ones = tf.cast(finite, f64)
    count = tf.math.unsorted_segment_sum(ones, seg, n)
    some = count > 0
    inf = tf.constant(math.inf, f64)
    # An empty segment's extreme is the kernel's own filler (the largest float64, or inf):
    # without finite values, the extremes are inf and -inf, as a reduction's are.
    low = tf.where(some, tf.math.unsorted_segment_min(tf.where(finite, x, inf), seg, n), inf)
    high = tf.where(some, tf.math.unsorted_segment_max(tf.where(finite, x, -inf), seg, n), -inf)
    lo, hi = _default_range(low, high)
    width = (hi - lo) / bins
    safe_width = tf.where(tf.math.is_finite(width) & (width > 0), width, tf.ones((), f64))
    lo_x, hi_x, width_x = (tf.gather(v, seg) for v in (lo, hi, width))
    inside = tf.where(finite, x, lo_x)
    ratio = tf.floor((inside - lo_x) / tf.gather(safe_width, seg))
    slot = tf.cast(tf.clip_by_value(ratio, 0, bins - 1), tf.int32)

    def edge(j: Any) -> Any:
        return tf.where(j >= bins, hi_x, tf.cast(j, f64) * width_x + lo_x)

    # The division can land one bin off next to an edge; the edges decide, as in the core.
    slot -= tf.cast(inside < edge(slot), tf.int32)
    slot += tf.cast((inside >= edge(slot + 1)) & (slot < bins - 1), tf.int32)
    counts = tf.math.unsorted_segment_sum(ones, seg * bins + slot, n * bins)
    mean, std = _moments(x, finite, seg, count, low, high)
    nonfinite = tf.cast(tf.stack([tf.size(f) for f in flat]), f64) - count
    stats = tf.stack([count, low, high, mean, std, nonfinite, width], 1)
    steps = tf.fill([n, 1], tf.cast(step, f64))
    return tf.concat([steps, tf.reshape(counts, [n, bins]), stats], 1)


def _joined(flat: Sequence[Any]) -> tuple[Any, Any]:
    """The values of flat tensors in one float64 run, and each value's tensor index.

    Tensors of one dtype are decoded to float64 together, so `_as_float64`
    is compiled once per dtype, not once per tensor.
    """
    import tensorflow as tf

    by_dtype: dict[Any, list[int]] = {}
    for index, tensor in enumerate(flat):
        by_dtype.setdefault(tensor.dtype, []).append(index)
    runs, segments = [], []
    for indices in by_dtype.values():
        runs.append(_as_float64(tf.concat([flat[i] for i in indices], 0)))
        segments += [tf.fill(tf.shape(flat[i]), i) for i in indices]
    return tf.concat(runs, 0), tf.concat(segments, 0)


def _moments(x: Any, finite: Any, seg: Any, count: Any, low: Any, high: Any) -> tuple[Any, Any]:
    """Each tensor's mean and standard deviation of its finite values.

    Taken of ``x / 2^k``, ``2^k`` near the tensor's largest magnitude, so that
    neither the sum nor the squares overflow at float64's ends.
    """
    import tensorflow as tf

    f64, n = tf.float64, count.shape[0]
    some = count > 0
    largest = tf.maximum(tf.abs(tf.where(some, low, 0.0)), tf.abs(tf.where(some, high, 0.0)))
    exponent_bits = tf.bitwise.bitwise_and(tf.bitcast(largest, tf.int64), 0x7FF0000000000000)
    scale = tf.where(tf.equal(exponent_bits, 0), tf.ones((), f64), tf.bitcast(exponent_bits, f64))
    scaled = tf.where(finite, x / tf.gather(scale, seg), 0.0)
    mean = tf.math.unsorted_segment_sum(scaled, seg, n) / count
    deviation = tf.where(finite, scaled - tf.gather(mean, seg), 0.0)
    spread = tf.math.unsorted_segment_sum(deviation * deviation, seg, n)
    return mean * scale, tf.sqrt(spread / count) * scale


def _as_float64(x: Any) -> Any:
    """``x`` in float64, floats of 32 bits or fewer decoded from their bits.

    TensorFlow runs with the CPU's flush-to-zero mode, in which a float32
    below 2^-126 (or a float16 below 2^-14) reads as zero even in a cast;
    built from its bits, it is the normal float64 it equals. (A float64 below
    2^-1022 still reads as zero.)
    """
    import tensorflow as tf

    if x.dtype not in (tf.float32, tf.float16, tf.bfloat16):
        return tf.cast(x, tf.float64)
    shift_right, mask = tf.bitwise.right_shift, tf.bitwise.bitwise_and
    if x.dtype == tf.float16:
        bits = tf.cast(tf.bitcast(x, tf.uint16), tf.int32)
        top, width, bias = 0x1F, 10, 25
    else:
        if x.dtype == tf.bfloat16:
            wide = tf.bitwise.left_shift(tf.cast(tf.bitcast(x, tf.uint16), tf.int32), 16)
            x = tf.bitcast(wide, tf.float32)
        bits = tf.bitcast(x, tf.int32)
        top, width, bias = 0xFF, 23, 150
    negative = tf.not_equal(mask(shift_right(bits, width + top.bit_length()), 1), 0)
    exponent = mask(shift_right(bits, width), top)
    mantissa = mask(bits, (1 << width) - 1)
    subnormal = tf.equal(exponent, 0)
    whole = tf.where(subnormal, mantissa, mantissa + (1 << width))
    power = tf.where(subnormal, 1 - bias, exponent - bias)
    # 2^power from its float64 bits: exact, where pow() need not be.
    scale = tf.bitcast(tf.bitwise.left_shift(tf.cast(power + 1023, tf.int64), 52), tf.float64)
    sign = tf.where(negative, -1.0, 1.0)
    value = tf.cast(tf.cast(whole, tf.float64) * scale, tf.float64) * tf.cast(sign, tf.float64)
    infinite = tf.cast(sign, tf.float64) * math.inf
    special = tf.where(tf.equal(mantissa, 0), infinite, tf.constant(math.nan, tf.float64))
    return tf.where(tf.equal(exponent, top), special, value)


def _default_range(low: Any, high: Any) -> tuple[Any, Any]:
    """The core's ``default_range(min, max)`` for a TensorFlow step, in float64.

    (0, 1) without values; a span narrower than 2^-40 of its magnitude widened
    around its middle by a half, or 2^-40 of the middle where that is wider,
    clamped at float64's largest values; otherwise ``(min, max)``.
    """
    import tensorflow as tf

    f64 = tf.float64
    relative = 2.0**-40
    none = tf.logical_not(low <= high)
    narrow = (high - low) <= tf.maximum(tf.abs(low), tf.abs(high)) * relative
    middle = tf.where(tf.equal(low, high), low, low + (high - low) / 2.0)
    middle = tf.where(none, tf.zeros((), f64), middle)
    half = tf.maximum(tf.constant(0.5, f64), tf.abs(middle) * relative)
    wide_lo, wide_hi = middle - half, middle + half
    largest = tf.constant(np.finfo(np.float64).max, f64)
    clamped = tf.logical_not(tf.math.is_finite(wide_hi - wide_lo))
    wide_lo = tf.where(clamped, tf.where(middle > 0, largest / 2.0, -largest), wide_lo)
    wide_hi = tf.where(clamped, tf.where(middle > 0, largest, -largest / 2.0), wide_hi)
    lo = tf.where(none, tf.zeros((), f64), tf.where(narrow, wide_lo, low))
    hi = tf.where(none, tf.ones((), f64), tf.where(narrow, wide_hi, high))
    return lo, hi
