"""Many tensors binned at once, as `run.watch` captures a whole model at one step.

CPU tensors are handed to the Rust core as NumPy views (no copy) and binned
there in parallel, one call for all of them. Tensors on another device stay
there: a few batched torch kernels compute every tensor's range, moments
and counts, and one copy brings all the results to the host. Either way
each histogram equals what `histoscope.Histogram(tensor, bins)` gives: the
same float64 edges from the finite minimum to the finite maximum, the same
counts, and the same statistics (up to rounding in the mean and std).

Sharded capture bins in two halves, with the ranks' collectives between
them: `local_moments` (each tensor's count, extremes, mean and spread) and
`local_counts` (each tensor's counts on edges given row by row), by the same
two back-ends.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _core
from ._torch import Encoding, host_array
from .device import MOMENTS, bin_on_device, counts_on_device, moments_on_device
from .histogram import Histogram, batch_of, histograms_of

if TYPE_CHECKING:
    import torch


def bin_batch(tensors: Sequence[torch.Tensor], bins: int) -> _core.BinnedBatch:
    """The histograms of ``tensors`` (any shapes, devices and real dtypes), in order, held
    by the core until `EventFileWriter.write_batch` writes them: no Python object is made
    per histogram, and ``batch.histogram(i)`` gives one when asked.

    Raises ValueError naming the first tensor whose finite values span more
    than a float64 can hold (``-1e308`` and ``1e308``), as `Histogram` does.

    Example:
        >>> import torch
        >>> batch = bin_batch([torch.arange(4.0), torch.ones(2)], bins=2)
        >>> len(batch), batch.histogram(1).counts.tolist()
        (2, [0.0, 2.0])
    """
    groups = _by_device(tensors)
    if list(groups) == ["cpu"]:
        arrays, encodings = _host_arrays(tensors)
        return _core.bin_batch(arrays, bins, encodings)
    results: list[Any] = [None] * len(tensors)
    for device, indices in groups.items():
        group = [tensors[i] for i in indices]
        if device == "cpu":
            arrays, encodings = _host_arrays(group)
            done: Sequence[Any] = _core.histograms(arrays, bins, encodings)
        else:
            done = bin_on_device(group, bins)
        for i, histogram in zip(indices, done):
            results[i] = histogram
    return batch_of(results)


def bin_tensors(tensors: Sequence[torch.Tensor], bins: int) -> list[Histogram]:
    """`bin_batch`, each histogram a `Histogram`: for a caller that wants to see them.

    Example:
        >>> import torch
        >>> [h.counts.tolist() for h in bin_tensors([torch.arange(4.0), torch.ones(2)], bins=2)]
        [[2.0, 2.0], [0.0, 2.0]]
    """
    return histograms_of(bin_batch(tensors, bins))


def _host_arrays(tensors: Sequence[torch.Tensor]) -> tuple[list[np.ndarray], list[Encoding | None]]:
    arrays: list[np.ndarray] = []
    encodings: list[Encoding | None] = []
    for tensor in tensors:
        array, encoding = host_array(tensor)
        arrays.append(array)
        encodings.append(encoding)
    return arrays, encodings


def bin_tensors_with_torch(tensors: Sequence[torch.Tensor], bins: int) -> list[Histogram]:
    """`bin_tensors` for tensors on one device, with the device kernel (`device.bin_on_device`).

    Used for GPUs; it runs on CPU tensors too, which is how it is tested without a GPU.

    Example:
        >>> import torch
        >>> bin_tensors_with_torch([torch.tensor([0.0, 1.0, float("nan")])], bins=2)[0].nonfinite
        1.0
    """
    return [Histogram._of(b.edges, b.counts, b.stats) for b in bin_on_device(tensors, bins)]


def local_moments(tensors: Sequence[torch.Tensor]) -> np.ndarray:
    """Each tensor's `device.MOMENTS` row (count, min, max, mean, m2, nonfinite), on the host.

    Example:
        >>> import torch
        >>> local_moments([torch.tensor([1.0, 3.0])]).tolist()
        [[2.0, 1.0, 3.0, 2.0, 2.0, 0.0]]
    """
    rows = np.zeros((len(tensors), len(MOMENTS)))
    for device, indices in _by_device(tensors).items():
        group = [tensors[i] for i in indices]
        rows[indices] = _moments_on_cpu(group) if device == "cpu" else moments_on_device(group)
    return rows


def local_counts(tensors: Sequence[torch.Tensor], edges: np.ndarray) -> np.ndarray:
    """Each tensor's counts on its row of ``edges`` (equal edges, as `device.default_edges`
    makes them), on the host. Values outside a row's edges and nonfinite values are not counted.

    Example:
        >>> import torch
        >>> local_counts([torch.tensor([0.0, 0.5, 1.0])], np.array([[0.0, 0.5, 1.0]])).tolist()
        [[1.0, 2.0]]
    """
    counts = np.zeros((len(tensors), edges.shape[1] - 1))
    for device, indices in _by_device(tensors).items():
        on_torch = indices
        if device == "cpu":
            # The core takes edges that increase; a span of a few subnormals repeats edges.
            increasing = [i for i in indices if (np.diff(edges[i]) > 0).all()]
            for i in increasing:
                array, encoding = host_array(tensors[i])
                counts[i] = _core.histogram(array, edges=edges[i], encoding=encoding).counts
            on_torch = [i for i in indices if i not in set(increasing)]
        if on_torch:
            counts[on_torch] = counts_on_device([tensors[i] for i in on_torch], edges[on_torch])
    return counts


def _by_device(tensors: Sequence[torch.Tensor]) -> dict[str, list[int]]:
    by_device: dict[str, list[int]] = {}
    for i, tensor in enumerate(tensors):
        by_device.setdefault(str(tensor.device), []).append(i)
    return by_device


def _moments_on_cpu(tensors: Sequence[torch.Tensor]) -> np.ndarray:
    """`device.MOMENTS` rows from the core's statistics (its counts on one bin are not used)."""
    arrays, encodings = zip(*(host_array(t) for t in tensors))
    rows = []
    for binned in _core.histograms(list(arrays), 1, list(encodings)):
        stats = binned.stats
        some = stats.count > 0
        rows.append(
            [
                stats.count,
                stats.min if some else np.inf,
                stats.max if some else -np.inf,
                stats.mean if some else np.nan,
                stats.std**2 * stats.count if some else 0.0,
                stats.nonfinite,
            ]
        )
    return np.array(rows, dtype=np.float64).reshape(-1, len(MOMENTS))
