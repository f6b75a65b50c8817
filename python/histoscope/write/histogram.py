"""Histograms of numbers of any array type, binned in Rust: `Histogram`, and the argument checks.

Binning is split in two so that `Run.add_histogram` can return quickly:
`prepare_values` (from `snapshot`, with `_args.bins_or_edges`, `_args.value_range`
and `prepare_weights`) validates the arguments and takes a private copy in the
caller's thread; `bin_prepared` bins that copy later, anywhere, with the GIL
released. PyTorch tensors stay on their device: a GPU tensor is binned there
(`_torch`), and only the counts and statistics come to the host. The bin
limit, the default range and the edges are the Rust core's rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _args, _core
from .._args import Bins
from ._torch import device_type, flat_numpy_weights, host_array
from .device import bin_on_device
from .options import DEFAULT_BINS
from .snapshot import Prepared, prepare_values

MAX_BINS: int = _core.MAX_BINS
"""The most bins a histogram may have: the Rust core's limit, whose reason is given there."""


_NAN = float("nan")


class Histogram:
    """Counts of values in bins, with the statistics of the finite values.

    ``values`` are numbers of any shape (flattened): a list or tuple, a NumPy
    array of any numeric or bool dtype (float16 and bfloat16 included), a
    PyTorch tensor on any device, or anything with ``__array__`` or
    ``__dlpack__``. ``bins`` is a number of equal bins from 1 to `MAX_BINS` (512), or
    increasing finite edges; ``range=(lo, hi)`` sets the ends of equal bins
    (default: the smallest and largest finite value); values outside it are
    counted in ``below`` and ``above``, NaN and infinities in ``nonfinite``,
    and neither is binned. ``weights`` (same shape, finite, not negative)
    make every count a sum of weights.

    ``edges`` and ``counts`` follow ``numpy.histogram`` (``edges[j] <= x <
    edges[j + 1]``, the last bin closed) and are equal to its counts for the
    same edges. ``np_histogram=(counts, edges)`` wraps what
    ``numpy.histogram`` returned: its ``count``, and ``nonfinite`` 0 (numpy counts
    no NaN or infinity); its other statistics are NaN (unknown).

    Example:
        >>> import numpy as np, histoscope as hs
        >>> h = hs.Histogram([0.0, 0.5, 1.0, 1.0, np.nan], bins=2)
        >>> h.counts, h.edges
        (array([1., 3.]), array([0. , 0.5, 1. ]))
        >>> h.count, h.nonfinite, round(h.mean, 3)
        (4.0, 1.0, 0.625)
    """

    __slots__ = ("_edges", "_counts", "_stats")

    def __init__(
        self,
        values: Any = None,
        bins: Any = DEFAULT_BINS,
        *,
        range: tuple[float, float] | None = None,
        weights: Any = None,
        np_histogram: tuple[Any, Any] | None = None,
    ) -> None:
        if np_histogram is not None:
            if values is not None or weights is not None or range is not None:
                raise TypeError(
                    "np_histogram=(counts, edges) is a finished histogram: "
                    "give it without values, weights or range"
                )
            counts, edges = _check_np_histogram(np_histogram)
            self._set(edges, counts, _counted_only(float(counts.sum())))
            return
        if values is None:
            raise TypeError("Histogram needs values, or np_histogram=(counts, edges)")
        checked_bins = _args.bins_or_edges(bins)
        checked_range = _args.value_range(range, checked_bins)
        prepared = prepare_values(values)
        prepared_weights = prepare_weights(weights, prepared)
        done = bin_prepared(prepared, checked_bins, checked_range, prepared_weights)
        self._set(done._edges, done._counts, done._stats)

    @classmethod
    def _of(cls, edges: np.ndarray, counts: np.ndarray, stats: _core.Stats) -> Histogram:
        histogram = cls.__new__(cls)
        histogram._set(edges, counts, stats)
        return histogram

    def _set(self, edges: np.ndarray, counts: np.ndarray, stats: _core.Stats) -> None:
        self._edges = _readonly(np.asarray(edges, dtype=np.float64))
        self._counts = _readonly(np.asarray(counts, dtype=np.float64))
        self._stats = stats

    @property
    def edges(self) -> np.ndarray:
        """The ``len(counts) + 1`` increasing bin edges (float64, read-only)."""
        return self._edges

    @property
    def counts(self) -> np.ndarray:
        """The number, or total weight, of the values in each bin (float64, read-only)."""
        return self._counts

    @property
    def count(self) -> float:
        """The number (total weight) of finite values, in the bins or outside them."""
        return self._stats.count

    @property
    def min(self) -> float:
        """The smallest finite value (with nonzero weight); NaN when there is none."""
        return self._stats.min

    @property
    def max(self) -> float:
        """The largest finite value (with nonzero weight); NaN when there is none."""
        return self._stats.max

    @property
    def mean(self) -> float:
        """The (weighted) mean of the finite values; NaN when there are none."""
        return self._stats.mean

    @property
    def std(self) -> float:
        """The (weighted) population standard deviation of the finite values, as ``np.std``."""
        return self._stats.std

    @property
    def nonfinite(self) -> float:
        """The number (total weight) of NaN and infinite values, which are not binned."""
        return self._stats.nonfinite

    @property
    def below(self) -> float:
        """The number (total weight) of finite values below the first edge."""
        return self._stats.below

    @property
    def above(self) -> float:
        """The number (total weight) of finite values above the last edge."""
        return self._stats.above

    @property
    def stats(self) -> dict[str, float]:
        """Every statistic by name: count, min, max, mean, std, nonfinite, below, above."""
        return {name: getattr(self._stats, name) for name in _core.STAT_NAMES}

    @property
    def stats_record(self) -> _core.Stats:
        """The statistics as the core's typed record, as the events-file writer takes them.

        Example:
            >>> Histogram([0.0, 1.0, 2.0], bins=2).stats_record.count
            3.0
        """
        return self._stats

    def to_numpy(self) -> tuple[np.ndarray, np.ndarray]:
        """``(counts, edges)`` as ``numpy.histogram`` returns them (writable copies)."""
        return self._counts.copy(), self._edges.copy()

    def __repr__(self) -> str:
        parts = [
            f"{len(self._counts)} bins from {self._edges[0]:.6g} to {self._edges[-1]:.6g}",
            f"count={self.count:.6g}",
            f"mean={self.mean:.6g}",
            f"std={self.std:.6g}",
            f"nonfinite={self.nonfinite:.6g}",
        ]
        parts += [
            f"{name}={value:.6g}"
            for name, value in (("below", self.below), ("above", self.above))
            if value != 0
        ]
        return f"Histogram({', '.join(parts)})"


def prepare_weights(weights: Any, values: Prepared) -> Prepared | None:
    """A private copy of ``weights``, checked to have the shape of the prepared ``values``.

    NumPy weights are also checked to be finite and not negative here; a
    tensor's weights are checked when they are binned, so that preparing
    them does not wait for its device.

    Example:
        >>> prepare_weights([1, 2], prepare_values([0.5, 0.7]))
        array([1., 2.])
    """
    if weights is None:
        return None
    prepared = prepare_values(weights, "weights")
    if tuple(prepared.shape) != tuple(values.shape):
        raise ValueError(
            "weights must have the same shape as values, got "
            f"{tuple(prepared.shape)} and {tuple(values.shape)}"
        )
    if isinstance(prepared, np.ndarray):
        prepared = prepared.astype(np.float64, copy=False)
        _args.usable_weights(bool(np.isfinite(prepared).all() and (prepared >= 0).all()))
    return prepared


def bin_prepared(
    values: Prepared,
    bins: Bins,
    range: tuple[float, float] | None = None,
    weights: Prepared | None = None,
) -> Histogram:
    """Bins values from `prepare_values` (with `_args`' checks and `prepare_weights`).

    NumPy arrays and CPU tensors are binned in Rust with the GIL released;
    tensors on another device are binned there (`_bin_with_torch`). NaN and
    infinite values are counted, never an error.

    Example:
        >>> bin_prepared(prepare_values([1, 2, 2, 3]), _args.bins_or_edges(2)).counts
        array([1., 3.])
    """
    if not isinstance(values, np.ndarray) and device_type(values) != "cpu":
        return _bin_with_torch(values, bins, range, weights)
    array, half = host_array(values)
    host_weights = None if weights is None else numpy_weights(weights)
    binned = _core.histogram(
        array,
        bins=bins if isinstance(bins, int) else None,
        edges=None if isinstance(bins, int) else bins,
        range=range,
        weights=host_weights,
        encoding=half,
    )
    return Histogram._of(binned.edges, binned.counts, binned.stats)


def batch_of(binned: Sequence[Any]) -> _core.BinnedBatch:
    """A core batch of histograms binned elsewhere: anything with float64 ``edges`` and
    ``counts`` and a `_core.Stats` ``stats`` (`device.Binned`, `_core.BinnedHistogram`);
    a `Histogram`'s record is its ``stats_record``.

    Example:
        >>> h = _core.histogram(np.array([0.0, 1.0]), bins=2)
        >>> len(batch_of([h, h]))
        2
    """
    return _core.BinnedBatch.of(
        [b.edges for b in binned], [b.counts for b in binned], [_record(b) for b in binned]
    )


def histograms_of(batch: _core.BinnedBatch) -> list[Histogram]:
    """Each histogram of ``batch`` as a `Histogram`.

    Example:
        >>> [h.count for h in histograms_of(_core.bin_batch([np.arange(3.0)], 2))]
        [3.0]
    """
    binned = (batch.histogram(i) for i in range(len(batch)))
    return [Histogram._of(b.edges, b.counts, b.stats) for b in binned]


def _record(binned: Any) -> _core.Stats:
    return binned.stats_record if isinstance(binned, Histogram) else binned.stats


def _bin_with_torch(
    tensor: Any,
    bins: Bins,
    range: tuple[float, float] | None = None,
    weights: Prepared | None = None,
) -> Histogram:
    """Bins a tensor on its own device (`device.bin_on_device`); callable on CPU tensors to test."""
    binned = bin_on_device([tensor], bins, range, None if weights is None else [weights])[0]
    return Histogram._of(binned.edges, binned.counts, binned.stats)


def _counted_only(count: float) -> _core.Stats:
    """The statistics of a histogram known only by its counts (``numpy.histogram``'s):
    ``count``, and no non-finite value, as numpy counts none; the rest unknown (NaN).
    Said so, the diagnosis reads the unknown limits as unknown, not as NaN input."""
    return _core.Stats(
        count=count, min=_NAN, max=_NAN, mean=_NAN, std=_NAN, nonfinite=0.0, below=_NAN, above=_NAN
    )


def _check_np_histogram(np_histogram: Any) -> tuple[np.ndarray, np.ndarray]:
    problem = "np_histogram must be (counts, edges) as numpy.histogram returns them"
    try:
        counts, edges = np_histogram
        counts = np.array(counts, dtype=np.float64)
        edges = np.array(edges, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(problem) from None
    if counts.ndim != 1 or edges.ndim != 1 or len(edges) != len(counts) + 1:
        raise ValueError(
            f"{problem}: {len(edges) if edges.ndim == 1 else edges.shape} edges "
            f"for {len(counts) if counts.ndim == 1 else counts.shape} counts"
        )
    _args.bins_or_edges(edges)
    if not np.isfinite(counts).all() or (counts < 0).any():
        raise ValueError(f"{problem}: counts must be finite and not negative")
    return counts, edges


def _readonly(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def numpy_weights(weights: Prepared) -> np.ndarray:
    """Prepared weights as the core takes them: a flat float64 NumPy array."""
    if not isinstance(weights, np.ndarray):
        return flat_numpy_weights(weights)
    return np.ascontiguousarray(weights, dtype=np.float64).reshape(-1)
