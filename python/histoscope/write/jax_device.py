"""JAX arrays binned where they live: on an accelerator with jnp, on the host by the core.

An array on a GPU or TPU never comes to the host: one jitted pass finds each
array's finite minimum and maximum and the moments, the host turns them into
the Rust core's float64 edges (`_core.default_range`, `_core.uniform_edges`),
and a second pass counts the values in those bins; only the counts and a few
numbers per array are transferred. The counts equal the core's exactly, with
or without ``jax_enable_x64``: a float32 value ``x`` lies at or above a
float64 edge ``e`` exactly when it lies at or above the smallest float32 not
below ``e``, so each edge is rounded up to float32 on the host and the
values are compared in float32, which holds every float16, bfloat16 and
float32 exactly. With ``jax_enable_x64``, float64 and 32- and 64-bit
integers are compared in float64 against the edges themselves; without it,
32-bit integers (which float32 cannot all hold) are binned on the host. The
mean and std are computed in float32 without ``jax_enable_x64`` (the core
uses float64), so they agree to float32 rounding.

Arrays on the CPU reach the core as NumPy views of their buffers, without a
copy (bfloat16 and float16 as their bits), and are binned there in one
parallel call; dtypes the core does not take (float8, int4) are converted
to float64 first.

Example:
    >>> import jax.numpy as jnp
    >>> from histoscope.write.jax_device import bin_jax_arrays
    >>> [h.counts.tolist() for h in bin_jax_arrays([jnp.arange(4.0), jnp.ones(2)], bins=2)]
    [[2.0, 2.0], [0.0, 2.0]]
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _core
from ._torch import NUMPY_DTYPES, Encoding, host_array
from .histogram import Histogram, batch_of, histograms_of

_HOST_DTYPES = NUMPY_DTYPES | {"bfloat16"}
"""Dtypes whose NumPy view the core bins as it is (16-bit floats as their bits)."""

_FLOAT32_EXACT = frozenset(
    {"float32", "float16", "bfloat16", "int8", "int16", "uint8", "uint16", "bool"}
)
"""Dtypes float32 holds exactly, so their values are compared in float32 on a device."""

_FLOAT64_EXACT = _FLOAT32_EXACT | {"float64", "int32", "uint32", "int64", "uint64"}
"""Dtypes compared in float64 on a device when ``jax_enable_x64`` is on (int64 rounded as the
core rounds it)."""

_NAN = float("nan")


def on_accelerator(array: Any) -> bool:
    """Whether ``array`` is a JAX array held by a device other than the CPU.

    Example:
        >>> import jax.numpy as jnp
        >>> on_accelerator(jnp.ones(2)), on_accelerator(np.ones(2))
        (False, False)
    """
    devices = getattr(array, "devices", None)
    if not callable(devices) or isinstance(array, np.ndarray):
        return False
    return any(device.platform != "cpu" for device in devices())


def bin_jax_arrays(
    arrays: Sequence[Any], bins: int, names: Sequence[str] | None = None
) -> list[Histogram]:
    """`bin_jax_batch`, each histogram a `Histogram`: for a caller that wants to see them.

    Example:
        >>> bin_jax_arrays([np.array([0.0, 1.0, np.nan])], bins=2)[0].nonfinite
        1.0
    """
    return histograms_of(bin_jax_batch(arrays, bins, names))


def bin_jax_batch(
    arrays: Sequence[Any], bins: int, names: Sequence[str] | None = None
) -> _core.BinnedBatch:
    """The histograms of ``arrays`` (JAX or NumPy, any shapes and real dtypes), in order,
    held by the core until they are written.

    Arrays on an accelerator are binned there (`bin_on_jax_device`); the
    others are handed to the core as NumPy views, all in one call. Raises
    ValueError naming the first array (by ``names``, or its index) whose
    finite values span more than a float64 holds.

    Example:
        >>> batch = bin_jax_batch([np.array([0.0, 1.0, np.nan])], bins=2)
        >>> batch.histogram(0).stats.nonfinite
        1.0
    """
    labels = list(names) if names is not None else [f"array {i}" for i in range(len(arrays))]
    device_indices = [i for i, a in enumerate(arrays) if on_accelerator(a) and _device_bins(a)]
    if not device_indices:
        return _bin_on_host(arrays, bins, labels)
    results: list[Any] = [None] * len(arrays)
    binned = bin_on_jax_device(
        [arrays[i] for i in device_indices], bins, [labels[i] for i in device_indices]
    )
    for i, histogram in zip(device_indices, binned):
        results[i] = histogram
    host_indices = [i for i, result in enumerate(results) if result is None]
    if host_indices:
        on_host = _bin_on_host(
            [arrays[i] for i in host_indices], bins, [labels[i] for i in host_indices]
        )
        for n, i in enumerate(host_indices):
            results[i] = on_host.histogram(n)
    return batch_of(results)


def _bin_on_host(arrays: Sequence[Any], bins: int, labels: Sequence[str]) -> _core.BinnedBatch:
    views = [_host_view(array) for array in arrays]
    try:
        return _core.bin_batch([v for v, _ in views], bins, [e for _, e in views])
    except ValueError:
        for (view, encoding), label in zip(views, labels):
            _check_span(view, encoding, label)
        raise


def bin_on_jax_device(
    arrays: Sequence[Any], bins: int, names: Sequence[str] | None = None
) -> list[Histogram]:
    """`bin_jax_arrays` for arrays whose dtype a device compares exactly (see the module's doc).

    Used for accelerators; it runs on CPU arrays too, which is how it is tested without one.

    Example:
        >>> import jax.numpy as jnp
        >>> h = bin_on_jax_device([jnp.array([0.0, 0.5, 1.0, jnp.inf])], bins=2)[0]
        >>> h.counts.tolist(), h.nonfinite
        ([1.0, 2.0], 1.0)
    """
    import jax

    labels = list(names) if names is not None else [f"array {i}" for i in range(len(arrays))]
    wide = [_compares_in_float64(a) for a in arrays]
    ranges_of, tallies_of = _jitted()
    # One small jitted call per array, all dispatched before any result is awaited: the
    # calls are compiled once per shape and dtype, which the layers of a model share.
    ranges = jax.device_get([ranges_of(a, w) for a, w in zip(arrays, wide)])
    edges, thresholds = [], []
    for index, ((low_key, high_key, _offset, count, _exponent), is_wide) in enumerate(
        zip(ranges, wide)
    ):
        low, high = _from_keys(np.array([low_key, high_key]))
        lo, hi = _core.default_range(float(low), float(high)) if count else (0.0, 1.0)
        if not np.isfinite(hi - lo):
            raise _too_wide(labels[index], float(low), float(high))
        bin_edges = _core.uniform_edges(lo, hi, bins)
        edges.append(bin_edges)
        inner = bin_edges[1:-1] if is_wide else _round_up_to_float32(bin_edges[1:-1])
        thresholds.append(_order_keys(inner))
    tallies = jax.device_get(
        [tallies_of(a, t, r, bins) for a, t, r in zip(arrays, thresholds, ranges)]
    )
    return [
        _histogram(bin_edges, counts, m2, stats, int(array.size))
        for bin_edges, (counts, m2), stats, array in zip(edges, tallies, ranges, arrays)
    ]


def _device_bins(array: Any) -> bool:
    dtype = np.dtype(array.dtype).name
    return dtype in (_FLOAT64_EXACT if _x64_enabled() else _FLOAT32_EXACT)


def _compares_in_float64(array: Any) -> bool:
    return _x64_enabled() and np.dtype(array.dtype).name not in _FLOAT32_EXACT


def _x64_enabled() -> bool:
    import jax

    return bool(jax.config.read("jax_enable_x64"))


def _host_view(array: Any) -> tuple[np.ndarray, Encoding | None]:
    """A flat NumPy view of the array's host buffer (no copy where NumPy holds the dtype)."""
    view = np.asarray(array)
    if view.dtype.name not in _HOST_DTYPES:
        view = view.astype(np.float64)
    return host_array(view)


def _check_span(view: np.ndarray, encoding: Encoding | None, label: str) -> None:
    """Raises `_too_wide` if the core cannot bin ``view`` in equal bins of its own range."""
    try:
        _core.histogram(view, bins=1, encoding=encoding)
    except ValueError:
        finite = view[np.isfinite(view)]
        raise _too_wide(label, float(finite.min()), float(finite.max())) from None


def _too_wide(label: str, low: float, high: float) -> ValueError:
    return ValueError(
        f"{label}: its finite values span more than a float64 holds "
        f"({low:g} to {high:g}); bin it with a range"
    )


def _round_up_to_float32(edges: np.ndarray) -> np.ndarray:
    """The smallest float32 at or above each float64 edge (infinity above float32's range)."""
    with np.errstate(over="ignore"):
        rounded = edges.astype(np.float32)
    below = rounded.astype(np.float64) < edges
    rounded[below] = np.nextafter(rounded[below], np.float32(np.inf))
    return rounded


def _order_keys(values: np.ndarray) -> np.ndarray:
    """Integers in the order of the floats ``values``, 0 for -0.0 as for 0.0 (NumPy's twin of
    the kernel's ``order_keys``)."""
    bits = values.view(np.int32 if values.dtype == np.float32 else np.int64).copy()
    top = np.iinfo(bits.dtype)
    bits[bits == top.min] = 0
    negative = bits < 0
    bits[negative] ^= top.max
    return bits


def _from_keys(keys: np.ndarray) -> np.ndarray:
    """The floats whose `_order_keys` are ``keys``."""
    bits = keys.copy()
    negative = bits < 0
    bits[negative] ^= np.iinfo(bits.dtype).max
    return bits.view(np.float32 if bits.dtype == np.int32 else np.float64)


def _histogram(edges: np.ndarray, counts: np.ndarray, m2: Any, stats: Any, size: int) -> Histogram:
    low_key, high_key, offset, count, exponent = stats
    low, high = (float(v) for v in _from_keys(np.array([low_key, high_key])))
    offset, count, exponent = float(offset), float(count), float(exponent)
    some = count > 0
    scale = 2.0 ** (exponent - 1)
    mean = low + offset * scale
    record = _core.Stats(
        count=count,
        min=low if some else _NAN,
        max=high if some else _NAN,
        mean=mean if some else _NAN,
        std=scale * float(np.sqrt(float(m2) / count)) if some else _NAN,
        nonfinite=float(size - count),
        below=0.0,
        above=0.0,
    )
    return Histogram._of(edges, np.asarray(counts, dtype=np.float64), record)


@functools.cache
def _jitted() -> tuple[Any, Any]:
    """The two passes over one array, jitted once per process (traced once per shape and dtype)."""
    import jax
    import jax.numpy as jnp

    def scaled(x: Any, low: Any, exponent: Any) -> Any:
        """(x - low) / 2^(exponent - 1): the moments' terms, exact and far from overflow."""
        return jnp.ldexp(x, 1 - exponent) - jnp.ldexp(low, 1 - exponent)

    def int_type(x: Any) -> Any:
        return jnp.int32 if x.dtype == jnp.float32 else jnp.int64

    def order_keys(x: Any) -> Any:
        """Integers in the order of the floats: devices flush subnormal floats to zero when
        they compare them, integers compare exactly. -0.0 is 0.0's key."""
        bits = jax.lax.bitcast_convert_type(x, int_type(x))
        top = jnp.iinfo(bits.dtype)
        bits = jnp.where(bits == top.min, 0, bits)
        return jnp.where(bits < 0, bits ^ top.max, bits)

    def from_key(key: Any, x: Any) -> Any:
        bits = jnp.where(key < 0, key ^ jnp.iinfo(key.dtype).max, key)
        return jax.lax.bitcast_convert_type(bits, x.dtype)

    def ranges(x: Any, wide: bool) -> Any:
        x = x.reshape(-1).astype(jnp.float64 if wide else jnp.float32)
        finite = jnp.isfinite(x)
        count = jnp.sum(finite, dtype=int_type(x))
        keys = order_keys(x)
        top = jnp.iinfo(keys.dtype)
        low_key = jnp.min(jnp.where(finite, keys, top.max), initial=top.max)
        high_key = jnp.max(jnp.where(finite, keys, top.min), initial=top.min)
        # The moments are taken of (x - low) scaled by a power of two near the largest
        # magnitude: rounding relative to the spread, and no overflow at float32's ends.
        low = jnp.where(count > 0, from_key(low_key, x), 0)
        high = jnp.where(count > 0, from_key(high_key, x), 0)
        _, exponent = jnp.frexp(jnp.maximum(jnp.abs(low), jnp.abs(high)))
        terms = jnp.where(finite, scaled(x, low, exponent), 0)
        offset = jnp.sum(terms) / jnp.maximum(count, 1).astype(x.dtype)
        return low_key, high_key, offset, count, exponent

    def tallies(x: Any, inner: Any, stats: Any, bins: int) -> Any:
        low_key, _high_key, offset, count, exponent = stats
        x = x.reshape(-1).astype(jnp.float32 if inner.dtype == jnp.int32 else jnp.float64)
        finite = jnp.isfinite(x)
        # Edges decide: x is in bin j when edges[j] <= x < edges[j + 1], the last bin
        # closed; each inner edge is compared as the key of the smallest x at or above it.
        slot = jnp.where(finite, jnp.searchsorted(inner, order_keys(x), side="right"), bins)
        counts = jnp.zeros(bins + 1, jnp.int32).at[slot].add(1)[:bins]
        low = jnp.where(count > 0, from_key(low_key, x), 0)
        deviation = scaled(x, low, exponent) - offset.astype(x.dtype)
        return counts, jnp.sum(jnp.where(finite, deviation * deviation, 0))

    return jax.jit(ranges, static_argnums=1), jax.jit(tallies, static_argnums=3)
