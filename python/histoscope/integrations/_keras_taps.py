"""How values leave a Keras train step on each backend, at logging steps only.

The Keras callback (`histoscope.integrations.keras`) calls a tap while Keras
traces (or, on PyTorch, runs) the train step, with the step as a tensor and
named tensors: the parameters, each layer's output, the gradients. A tap hands
them on, as histograms, to a ``deliver(step, histograms)`` function:

- JAX: ``jax.debug.callback`` under ``jax.lax.cond``, so only logging steps
  leave the compiled step; the callback receives host copies of the arrays
  and bins them in the core.
- TensorFlow: XLA lets nothing leave a compiled step but variables of fixed
  shapes, and layer outputs change shape with the batch. So the histogram is
  made inside the step, in float64 TensorFlow operations, as one fixed-size
  row of a record variable: counts in the core's bins, and the statistics.
  `TensorFlowTap.poll`, after the step, reads the rows that changed.
- PyTorch: the step runs eagerly, and the tensors are binned as `watch` bins
  them, on their device.

Example:
    >>> from histoscope.integrations._keras_taps import record_width
    >>> record_width(bins=64)
    72
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import _core
from ..write.histogram import Histogram

__all__ = ["JaxTap", "TensorFlowTap", "TorchTap", "histogram_of_record", "record_width"]

Deliver = Callable[[int, dict[str, Any]], None]
"""Where a tap hands a logging step's values: ``deliver(step, {key: array or Histogram})``."""

Report = Callable[[int, str, Exception], None]
"""Where a tap says that a value could not be made a histogram: ``report(step, key, error)``."""

# A record row: the step, the counts, then these statistics.
_STATS = ("count", "min", "max", "mean", "std", "nonfinite", "width")
_NAN = float("nan")


def record_width(bins: int) -> int:
    """The float64s in one TensorFlow record row: the step, ``bins`` counts and the statistics."""
    return 1 + bins + len(_STATS)


class JaxTap:
    """Values leave a jitted JAX step through ``jax.debug.callback``, at logging steps only.

    ``deliver`` runs on a JAX runtime thread, with CPU arrays; `flush` waits for every
    callback of the steps run so far.
    """

    def __init__(self, every: int, deliver: Deliver) -> None:
        self.every = every
        self.deliver = deliver

    def step_of(self, model: Any, state: Any) -> Any:
        """The optimizer's iterations (updates so far) from the JAX trainer's ``state``."""
        optimizer = model.optimizer
        for variable, value in zip(optimizer.variables, state[2]):
            if variable is optimizer.iterations:
                return value
        raise RuntimeError("the optimizer's iterations are not among its variables")

    def due(self, step: Any) -> Any:
        return step % self.every == 0

    def tap(self, step: Any, due: Any, named: Sequence[tuple[str, Any]]) -> None:
        import jax

        keys = [key for key, _ in named]

        def send(at: Any, values: list[Any]) -> None:
            self.deliver(int(at), dict(zip(keys, values)))

        jax.lax.cond(
            due,
            lambda: jax.debug.callback(send, step, [value for _, value in named]),
            lambda: None,
        )

    def flush(self) -> None:
        import jax

        jax.effects_barrier()


class TorchTap:
    """The PyTorch backend runs the step eagerly: a logging step's tensors go straight on."""

    def __init__(self, every: int, deliver: Deliver) -> None:
        self.every = every
        self.deliver = deliver

    def step_of(self, model: Any, state: Any) -> int:
        return int(model.optimizer.iterations.value)

    def due(self, step: int) -> bool:
        return step % self.every == 0

    def tap(self, step: int, due: bool, named: Sequence[tuple[str, Any]]) -> None:
        if due:
            self.deliver(step, {key: value.detach() for key, value in named})

    def flush(self) -> None:
        return


class TensorFlowTap:
    """Histograms made inside the TensorFlow step, one fixed-size record row per key.

    ``capacity`` rows are made before the step is traced; a key takes the next free
    row when it is first tapped. `poll` reads the rows written since it last read.
    """

    def __init__(
        self, every: int, deliver: Deliver, report: Report, *, bins: int, capacity: int
    ) -> None:
        import tensorflow as tf

        self.every = every
        self.deliver = deliver
        self.report = report
        self.bins = bins
        self.rows: dict[str, int] = {}
        self.full: list[str] = []
        # One variable a row: a whole variable assigned in an XLA conditional, never a slice.
        empty = np.full(record_width(bins), -1.0)
        self.records = [
            tf.Variable(empty, dtype=tf.float64, trainable=False) for _ in range(capacity)
        ]
        self.last_step = tf.Variable(-1, dtype=tf.int64, trainable=False)
        self._polled = -1

    def step_of(self, model: Any, state: Any) -> Any:
        import tensorflow as tf

        return tf.cast(tf.identity(model.optimizer.iterations.value), tf.int64)

    def due(self, step: Any) -> Any:
        import tensorflow as tf

        return tf.equal(tf.math.floormod(step, self.every), 0)

    def tap(self, step: Any, due: Any, named: Sequence[tuple[str, Any]]) -> None:
        import tensorflow as tf

        found = ((self._row(key), value) for key, value in named)
        rows = [(row, value) for row, value in found if row is not None]
        if not rows:
            return

        def write() -> Any:
            for row, value in rows:
                self.records[row].assign(_record(value, self.bins, step))
            self.last_step.assign(step)
            return tf.constant(True)

        tf.cond(due, write, lambda: tf.constant(False))

    def poll(self) -> None:
        """Delivers the histograms of the logging steps written since the last poll."""
        last = int(self.last_step.numpy())
        if last <= self._polled:
            return
        by_step: dict[int, dict[str, Any]] = {}
        for key, row in self.rows.items():
            record = self.records[row].numpy()
            step = int(record[0])
            if step <= self._polled:
                continue
            try:
                by_step.setdefault(step, {})[key] = histogram_of_record(record[1:], self.bins)
            except ValueError as error:
                self.report(step, key, error)
        self._polled = last
        for step in sorted(by_step):
            self.deliver(step, by_step[step])

    def flush(self) -> None:
        self.poll()

    def _row(self, key: str) -> int | None:
        if key not in self.rows:
            if len(self.rows) == len(self.records):
                self.full.append(key)
                return None
            self.rows[key] = len(self.rows)
        return self.rows[key]


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


def _record(value: Any, bins: int, step: Any) -> Any:
    """One record row for ``value``, in TensorFlow operations that XLA compiles.

    The bins are the core's: its default range (`_default_range` restates
    ``edges::default_range`` in float64 operations) in equal steps, the last
    edge ``hi``, and each value in the bin whose edges hold it
    (``edges[j] <= x < edges[j + 1]``, the last bin closed). Tests check the
    counts against `_core.histograms` on the same arrays.
    """
    import tensorflow as tf

    f64 = tf.float64
    # A sparse gradient (tf.IndexedSlices, from an embedding) is made dense: the update applied.
    x = _as_float64(tf.reshape(tf.stop_gradient(tf.convert_to_tensor(value)), [-1]))
    finite = tf.math.is_finite(x)
    ones = tf.cast(finite, f64)
    count = tf.reduce_sum(ones)
    inf = tf.constant(math.inf, f64)
    low = tf.reduce_min(tf.where(finite, x, inf))
    high = tf.reduce_max(tf.where(finite, x, -inf))
    lo, hi = _default_range(low, high)
    width = (hi - lo) / bins
    safe_width = tf.where(tf.math.is_finite(width) & (width > 0), width, tf.ones((), f64))
    inside = tf.where(finite, x, lo)
    slot = tf.cast(tf.clip_by_value(tf.floor((inside - lo) / safe_width), 0, bins - 1), tf.int32)

    def edge(j: Any) -> Any:
        return tf.where(j >= bins, hi, tf.cast(j, f64) * width + lo)

    # The division can land one bin off next to an edge; the edges decide, as in the core.
    slot -= tf.cast(inside < edge(slot), tf.int32)
    slot += tf.cast((inside >= edge(slot + 1)) & (slot < bins - 1), tf.int32)
    counts = tf.math.unsorted_segment_sum(ones, slot, bins)
    # The moments of x / 2^k, 2^k near the largest magnitude: no overflow at float64's ends.
    largest = tf.maximum(
        tf.abs(tf.where(count > 0, low, 0.0)), tf.abs(tf.where(count > 0, high, 0.0))
    )
    exponent_bits = tf.bitwise.bitwise_and(tf.bitcast(largest, tf.int64), 0x7FF0000000000000)
    scale = tf.where(tf.equal(exponent_bits, 0), tf.ones((), f64), tf.bitcast(exponent_bits, f64))
    scaled = tf.where(finite, x / scale, 0.0)
    mean = tf.reduce_sum(scaled) / count
    deviation = tf.where(finite, scaled - mean, 0.0)
    std = tf.sqrt(tf.reduce_sum(deviation * deviation) / count) * scale
    mean = mean * scale
    nonfinite = tf.cast(tf.size(x), f64) - count
    stats = tf.stack([count, low, high, mean, std, nonfinite, width])
    return tf.concat([tf.reshape(tf.cast(step, f64), [1]), counts, stats], 0)


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
