"""Histograms of numbers of any array type, binned in Rust: `Histogram`, and the steps it takes.

Binning is split in two so that `Run.add_histogram` can return quickly:
`prepare_values` (with `check_bins`, `check_range` and `prepare_weights`)
validates the arguments and takes a private copy in the caller's thread;
`bin_prepared` bins that copy later, anywhere, with the GIL released. PyTorch
tensors stay on their device: a GPU tensor is binned there with torch's own
operations, and only the counts and statistics come to the host.
"""

from __future__ import annotations

import math
import reprlib
import threading
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from . import _core

if TYPE_CHECKING:
    import torch

__all__ = [
    "MAX_BINS",
    "Histogram",
    "SnapshotPool",
    "bin_prepared",
    "check_bins",
    "check_range",
    "prepare_values",
    "prepare_weights",
]

MAX_BINS = 512

Prepared = Union[np.ndarray, "torch.Tensor"]
"""A private, contiguous copy of some values: a NumPy array or a PyTorch tensor."""

Bins = Union[int, np.ndarray]
"""What `check_bins` returns: a number of equal bins, or read-only float64 edges."""

_NAN = float("nan")


class Histogram:
    """Counts of values in bins, with the statistics of the finite values.

    ``values`` are numbers of any shape (flattened): a list or tuple, a NumPy
    array of any numeric or bool dtype (float16 and bfloat16 included), a
    PyTorch tensor on any device, or anything with ``__array__`` or
    ``__dlpack__``. ``bins`` is a number of equal bins from 1 to 512, or
    increasing finite edges; ``range=(lo, hi)`` sets the ends of equal bins
    (default: the smallest and largest finite value); values outside it are
    counted in ``below`` and ``above``, NaN and infinities in ``nonfinite``,
    and neither is binned. ``weights`` (same shape, finite, not negative)
    make every count a sum of weights.

    ``edges`` and ``counts`` follow ``numpy.histogram`` (``edges[j] <= x <
    edges[j + 1]``, the last bin closed) and are equal to its counts for the
    same edges. ``np_histogram=(counts, edges)`` wraps what
    ``numpy.histogram`` returned; its statistics other than ``count`` are NaN.

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
        bins: Any = 64,
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
            stats = (float(counts.sum()),) + (_NAN,) * 7
            self._set(edges, counts, stats)
            return
        if values is None:
            raise TypeError("Histogram needs values, or np_histogram=(counts, edges)")
        checked_bins = check_bins(bins)
        checked_range = check_range(range, checked_bins)
        prepared = prepare_values(values)
        prepared_weights = prepare_weights(weights, prepared)
        done = bin_prepared(prepared, checked_bins, checked_range, prepared_weights)
        self._set(done._edges, done._counts, done._stats)

    @classmethod
    def _of(cls, edges: np.ndarray, counts: np.ndarray, stats: tuple[float, ...]) -> Histogram:
        histogram = cls.__new__(cls)
        histogram._set(edges, counts, stats)
        return histogram

    def _set(self, edges: np.ndarray, counts: np.ndarray, stats: tuple[float, ...]) -> None:
        self._edges = _readonly(np.asarray(edges, dtype=np.float64))
        self._counts = _readonly(np.asarray(counts, dtype=np.float64))
        self._stats = tuple(float(s) for s in stats)

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
        return self._stats[0]

    @property
    def min(self) -> float:
        """The smallest finite value (with nonzero weight); NaN when there is none."""
        return self._stats[1]

    @property
    def max(self) -> float:
        """The largest finite value (with nonzero weight); NaN when there is none."""
        return self._stats[2]

    @property
    def mean(self) -> float:
        """The (weighted) mean of the finite values; NaN when there are none."""
        return self._stats[3]

    @property
    def std(self) -> float:
        """The (weighted) population standard deviation of the finite values, as ``np.std``."""
        return self._stats[4]

    @property
    def nonfinite(self) -> float:
        """The number (total weight) of NaN and infinite values, which are not binned."""
        return self._stats[5]

    @property
    def below(self) -> float:
        """The number (total weight) of finite values below the first edge."""
        return self._stats[6]

    @property
    def above(self) -> float:
        """The number (total weight) of finite values above the last edge."""
        return self._stats[7]

    @property
    def stats(self) -> dict[str, float]:
        """Every statistic by name: count, min, max, mean, std, nonfinite, below, above."""
        return dict(zip(_core.STAT_NAMES, self._stats))

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


def check_bins(bins: Any) -> Bins:
    """``bins`` as a number of equal bins from 1 to `MAX_BINS`, or as read-only float64 edges.

    Raises ValueError naming ``bins`` for anything else.

    Example:
        >>> check_bins(50), check_bins([0, 1, 10])
        (50, array([ 0.,  1., 10.]))
    """
    problem = ValueError(
        f"bins must be an int from 1 to {MAX_BINS} or increasing edges, got {reprlib.repr(bins)}"
    )
    if isinstance(bins, (bool, np.bool_)):
        raise problem
    if isinstance(bins, (int, np.integer)):
        if 1 <= bins <= MAX_BINS:
            return int(bins)
        raise problem
    try:
        edges = np.array(bins, dtype=np.float64)
    except (TypeError, ValueError):
        raise problem from None
    if (
        edges.ndim != 1
        or not 2 <= len(edges) <= MAX_BINS + 1
        or not np.isfinite(edges).all()
        or not (np.diff(edges) > 0).all()
    ):
        raise problem
    return _readonly(edges)


def check_range(range: Any, bins: Bins) -> tuple[float, float] | None:
    """``range`` as two finite floats ``lo < hi``, or None; not allowed with edges.

    Example:
        >>> check_range((-1, 1), 50)
        (-1.0, 1.0)
    """
    if range is None:
        return None
    if not isinstance(bins, int):
        raise ValueError("range cannot be given with bin edges: the edges set the range")
    problem = ValueError(f"range must be (lo, hi) with lo < hi, finite, got {reprlib.repr(range)}")
    try:
        lo, hi = (float(end) for end in range)
    except (TypeError, ValueError):
        raise problem from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi and math.isfinite(hi - lo)):
        raise problem
    return lo, hi


def prepare_values(values: Any, name: str = "values") -> Prepared:
    """A private, contiguous copy of ``values``: later changes to them do not reach it.

    NumPy arrays, lists, tuples, numbers and anything with ``__array__`` or
    ``__dlpack__`` become a NumPy array of their own numeric or bool dtype
    (float16 and ml_dtypes' bfloat16 kept as they are). A PyTorch tensor
    becomes a detached clone on its own device. Raises TypeError naming the
    argument for anything that is not numbers (strings, objects, complex).

    Example:
        >>> x = np.arange(3.0)
        >>> copy = prepare_values(x)
        >>> x[0] = 99.0
        >>> copy
        array([0., 1., 2.])
    """
    if _is_torch_tensor(values):
        return _snapshot_tensor(values, name)
    array, fresh = _as_numpy(values, name)
    dtype = _checked_dtype(array.dtype, name)
    if fresh and array.dtype == dtype and array.flags.c_contiguous:
        return array
    return np.array(array, dtype=dtype, order="C", copy=True)


class SnapshotPool:
    """Reusable buffers for the private copies a run takes of large arrays.

    A fresh copy of a large array spends most of its time faulting in new
    memory pages; a training loop logs the same tensors step after step, so
    copying into a buffer released after the previous step's binning is
    several times faster. NumPy arrays and CPU tensors with a NumPy dtype are
    pooled; everything else goes through `prepare_values`.

    Example:
        >>> pool = SnapshotPool()
        >>> copy = pool.snapshot(np.arange(3.0))
        >>> pool.release(copy)
    """

    MIN_BYTES = 1 << 20

    def __init__(self, max_free_bytes: int = 1 << 30) -> None:
        self._free: dict[tuple[str, tuple[int, ...]], list[np.ndarray]] = {}
        self._lent: dict[int, tuple[str, tuple[int, ...]]] = {}
        self._free_bytes = 0
        self._max_free_bytes = max_free_bytes
        self._lock = threading.Lock()

    def snapshot(self, values: Any, name: str = "values") -> Prepared:
        """A private copy of ``values``, as `prepare_values` gives, in a reused buffer if large."""
        source = _pooled_view(values)
        if source is None or source.nbytes < self.MIN_BYTES:
            return prepare_values(values, name)
        key = (source.dtype.str, source.shape)
        with self._lock:
            free = self._free.get(key)
            buffer = free.pop() if free else None
            if buffer is not None:
                self._free_bytes -= buffer.nbytes
        if buffer is None:
            buffer = np.empty(source.shape, dtype=source.dtype)
        np.copyto(buffer, source)
        with self._lock:
            self._lent[id(buffer)] = key
        return buffer

    def release(self, prepared: Prepared) -> None:
        """Gives back a copy from `snapshot` once it is binned; other values are ignored."""
        with self._lock:
            key = self._lent.pop(id(prepared), None)
            if key is None or self._free_bytes + prepared.nbytes > self._max_free_bytes:
                return
            self._free.setdefault(key, []).append(prepared)
            self._free_bytes += prepared.nbytes


def _pooled_view(values: Any) -> np.ndarray | None:
    """``values`` as a NumPy array without copying, when a pool may copy them."""
    if isinstance(values, np.ndarray):
        array = values
    elif _is_torch_tensor(values) and values.device.type == "cpu":
        import torch

        if values.layout != torch.strided:
            return None
        if str(values.dtype).removeprefix("torch.") not in _TORCH_TO_NUMPY:
            return None
        array = values.detach().resolve_conj().resolve_neg().numpy()
    else:
        return None
    if array.dtype.name == "bfloat16" or array.dtype.kind not in "biuf" or array.dtype.itemsize > 8:
        return None
    return array if array.dtype.isnative else None


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
        _check_weights_are_usable(bool(np.isfinite(prepared).all() and (prepared >= 0).all()))
    return prepared


def bin_prepared(
    values: Prepared,
    bins: Bins,
    range: tuple[float, float] | None = None,
    weights: Prepared | None = None,
) -> Histogram:
    """Bins values from `prepare_values` (with `check_bins`, `check_range`, `prepare_weights`).

    NumPy arrays and CPU tensors are binned in Rust with the GIL released;
    tensors on another device are binned there (`_bin_with_torch`). NaN and
    infinite values are counted, never an error.

    Example:
        >>> bin_prepared(prepare_values([1, 2, 2, 3]), check_bins(2)).counts
        array([1., 3.])
    """
    if not isinstance(values, np.ndarray) and _torch_device_type(values) != "cpu":
        return _bin_with_torch(values, bins, range, weights)
    array, half = _numpy_of(values)
    numpy_weights = None if weights is None else _numpy_weights(weights)
    edges, counts, stats = _core.histogram(
        array,
        bins=bins if isinstance(bins, int) else None,
        edges=None if isinstance(bins, int) else bins.tolist(),
        range=range,
        weights=numpy_weights,
        float16=half == "float16",
        bfloat16=half == "bfloat16",
    )
    return Histogram._of(edges, counts, stats)


def _bin_with_torch(
    tensor: torch.Tensor,
    bins: Bins,
    range: tuple[float, float] | None = None,
    weights: Prepared | None = None,
) -> Histogram:
    """Bins a tensor on its own device with torch's operations, as the Rust core does.

    Values are compared in float64 with the same float64 edges, so the counts
    equal the NumPy path's; only the counts and six statistics are copied to
    the host. Used for GPU tensors, and callable on CPU tensors for testing.
    """
    import torch

    x = tensor.detach().reshape(-1).to(torch.float64)
    finite = torch.isfinite(x)
    if weights is None:
        w = torch.ones_like(x)
    else:
        w = _torch_weights(weights, x.device)
        _check_weights_are_usable(bool((torch.isfinite(w) & (w >= 0)).all()))
    weight = torch.where(finite, w, 0.0)
    counted = finite & (w != 0)
    xz = torch.where(finite, x, 0.0)
    total = weight.sum()
    mean = (weight * xz).sum() / total
    inf = torch.tensor(math.inf, dtype=torch.float64, device=x.device)
    sentinel = inf.reshape(1)
    low = torch.cat([torch.where(counted, x, inf), sentinel]).min()
    high = torch.cat([torch.where(counted, x, -inf), -sentinel]).max()
    count, mean_, low_, high_ = torch.stack([total, mean, low, high]).tolist()
    if isinstance(bins, int):
        lo, hi = range if range is not None else _default_range(low_, high_)
        edges = _uniform_edges(lo, hi, bins)
    else:
        edges = np.array(bins, dtype=np.float64)
    n = len(edges) - 1
    device_edges = torch.from_numpy(edges).to(x.device)
    slot = torch.searchsorted(device_edges[1:-1].contiguous(), x, right=True)
    slot = torch.where(x < device_edges[0], n, slot)
    slot = torch.where(x > device_edges[-1], n + 1, slot)
    slot = torch.where(finite, slot, n + 2)
    tally = torch.bincount(slot, weights=None if weights is None else w, minlength=n + 3)
    if count > 0:
        m2 = (weight * (xz - mean_) ** 2).sum()
        std = math.sqrt(max(m2.item(), 0.0) / count)
    else:
        mean_, std = _NAN, _NAN
    tally_ = tally.to(torch.float64).cpu().numpy()
    some = low_ <= high_
    stats = (
        count,
        low_ if some else _NAN,
        high_ if some else _NAN,
        mean_,
        std,
        float(tally_[n + 2]),
        float(tally_[n]),
        float(tally_[n + 1]),
    )
    return Histogram._of(edges, tally_[:n], stats)


def _default_range(low: float, high: float) -> tuple[float, float]:
    """The Rust core's default range: numpy's, and a constant too large to widen by a half."""
    if low > high:
        return 0.0, 1.0
    if low == high:
        half = max(0.5, abs(low) * 2.0**-40)
        return low - half, high + half
    return low, high


def _uniform_edges(lo: float, hi: float, bins: int) -> np.ndarray:
    """``numpy.linspace(lo, hi, bins + 1)``, as the Rust core computes it."""
    edges = np.arange(bins + 1, dtype=np.float64) * ((hi - lo) / bins) + lo
    edges[-1] = hi
    return edges


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
    check_bins(edges)
    if not np.isfinite(counts).all() or (counts < 0).any():
        raise ValueError(f"{problem}: counts must be finite and not negative")
    return counts, edges


def _check_weights_are_usable(usable: bool) -> None:
    if not usable:
        raise ValueError("weights must be finite and not negative")


def _readonly(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def _is_torch_tensor(values: Any) -> bool:
    # Checked by module name so that histoscope never imports torch itself.
    if not type(values).__module__.startswith("torch"):
        return False
    import torch

    return isinstance(values, torch.Tensor)


def _as_numpy(values: Any, name: str) -> tuple[np.ndarray, bool]:
    """``values`` as a NumPy array, and whether that array is new (not shared with them)."""
    if isinstance(values, np.ndarray):
        return values, False
    if isinstance(values, (list, tuple, int, float, np.generic)):
        try:
            return np.asarray(values), True
        except (TypeError, ValueError):
            raise TypeError(f"{name} must be numbers, got a ragged or mixed sequence") from None
    if hasattr(values, "__array__"):
        return np.asarray(values), False
    if hasattr(values, "__dlpack__"):
        try:
            return np.from_dlpack(values), False
        except (TypeError, RuntimeError, BufferError) as error:
            raise TypeError(f"{name} could not be read through DLPack: {error}") from None
    raise TypeError(
        f"{name} must be numbers (a list, a NumPy array, a tensor, or anything with "
        f"__array__ or __dlpack__), got {type(values).__name__}"
    )


def _checked_dtype(dtype: np.dtype, name: str) -> np.dtype:
    """The dtype the private copy gets: native byte order, long double as float64."""
    if dtype.name == "bfloat16":
        return dtype
    if dtype.kind not in "biuf":
        raise TypeError(f"{name} must have a numeric or bool dtype, got {dtype}")
    if dtype.kind == "f" and dtype.itemsize > 8:
        return np.dtype(np.float64)
    return dtype.newbyteorder("=")


def _snapshot_tensor(tensor: torch.Tensor, name: str) -> torch.Tensor:
    import torch

    if tensor.is_complex():
        raise TypeError(f"{name} must be real numbers, got a {tensor.dtype} tensor")
    with torch.no_grad():
        if tensor.layout != torch.strided:
            tensor = tensor.to_dense()
        return tensor.detach().clone(memory_format=torch.contiguous_format)


_TORCH_TO_NUMPY = {
    "float64",
    "float32",
    "float16",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
}


def _torch_device_type(tensor: torch.Tensor) -> str:
    """The kind of device a tensor is on: "cpu", "cuda", "mps", ..."""
    return str(tensor.device).split(":")[0]


def _numpy_of(values: Prepared) -> tuple[np.ndarray, str | None]:
    """A flat NumPy view of prepared CPU values, and which 16-bit float its uint16s hold."""
    if not isinstance(values, np.ndarray):
        import torch

        flat = values.detach().reshape(-1).cpu()
        if flat.dtype == torch.bfloat16:
            return flat.view(torch.int16).numpy().view(np.uint16), "bfloat16"
        if str(flat.dtype).removeprefix("torch.") not in _TORCH_TO_NUMPY:
            flat = flat.to(torch.float64)
        array = flat.numpy()
    else:
        array = values.reshape(-1)
    if array.dtype == np.float16:
        return array.view(np.uint16), "float16"
    if array.dtype.name == "bfloat16":
        return array.view(np.uint16), "bfloat16"
    return array, None


def _numpy_weights(weights: Prepared) -> np.ndarray:
    if not isinstance(weights, np.ndarray):
        flat = weights.detach().reshape(-1).to("cpu").double()
        _check_weights_are_usable(bool((flat.isfinite() & (flat >= 0)).all()))
        return flat.numpy()
    return np.ascontiguousarray(weights, dtype=np.float64).reshape(-1)


def _torch_weights(weights: Prepared, device: torch.device) -> torch.Tensor:
    import torch

    if not isinstance(weights, np.ndarray):
        return weights.detach().reshape(-1).to(device=device, dtype=torch.float64)
    flat = np.ascontiguousarray(weights, dtype=np.float64).reshape(-1)
    return torch.from_numpy(flat).to(device)
