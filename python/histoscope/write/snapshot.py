"""Private copies of the values a run logs, taken in the caller's thread so that binning can wait.

`prepare_values` copies anything numeric (NumPy arrays, lists, tensors,
``__array__`` and ``__dlpack__`` objects) into an array or tensor of its
own; `SnapshotPool` reuses the buffers of large copies from one step to the
next, which is several times faster than faulting in fresh pages.

Example:
    >>> import numpy as np
    >>> from histoscope.write.snapshot import prepare_values
    >>> prepare_values([1, 2, 3])
    array([1, 2, 3])
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from .._args import is_tensor
from ._torch import NUMPY_DTYPES, snapshot_tensor

if TYPE_CHECKING:
    import torch

Prepared = Union[np.ndarray, "torch.Tensor"]
"""A private, contiguous copy of some values: a NumPy array or a PyTorch tensor."""


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
    if is_tensor(values):
        return snapshot_tensor(values, name)
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
            if (
                key is None
                or not isinstance(prepared, np.ndarray)
                or self._free_bytes + prepared.nbytes > self._max_free_bytes
            ):
                return
            self._free.setdefault(key, []).append(prepared)
            self._free_bytes += prepared.nbytes


def _pooled_view(values: Any) -> np.ndarray | None:
    """``values`` as a NumPy array without copying, when a pool may copy them."""
    if isinstance(values, np.ndarray):
        array = values
    elif is_tensor(values) and values.device.type == "cpu":
        import torch

        if values.layout != torch.strided:
            return None
        if str(values.dtype).removeprefix("torch.") not in NUMPY_DTYPES:
            return None
        array = values.detach().resolve_conj().resolve_neg().numpy()
    else:
        return None
    # bfloat16 (ml_dtypes') is of the void kind, so this leaves it out too.
    if array.dtype.kind not in "biuf" or array.dtype.itemsize > 8:
        return None
    return array if array.dtype.isnative else None


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
    if dtype.kind == "V" and dtype.name == "bfloat16":
        return dtype
    if dtype.kind not in "biuf":
        raise TypeError(f"{name} must have a numeric or bool dtype, got {dtype}")
    if dtype.kind == "f" and dtype.itemsize > 8:
        return np.dtype(np.float64)
    return dtype.newbyteorder("=")
