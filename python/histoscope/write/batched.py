"""Many tensors binned at once, as `run.watch` captures a whole model at one step.

CPU tensors are handed to the Rust core as NumPy views (no copy) and binned
there in parallel, one call for all of them. Tensors on another device stay
there: a few batched torch kernels compute every tensor's range, moments
and counts, and one copy brings all the results to the host. Either way
each histogram equals what `histoscope.Histogram(tensor, bins)` gives: the
same float64 edges from the finite minimum to the finite maximum, the same
counts, and the same statistics (up to rounding in the mean and std).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .. import _core
from ._torch import Encoding, host_array
from .device import bin_on_device
from .histogram import Histogram

if TYPE_CHECKING:
    import torch

__all__ = ["bin_tensors", "bin_tensors_with_torch"]


def bin_tensors(tensors: Sequence[torch.Tensor], bins: int) -> list[Histogram]:
    """The histograms of ``tensors`` (any shapes, devices and real dtypes), in order.

    Raises ValueError naming the first tensor whose finite values span more
    than a float64 can hold (``-1e308`` and ``1e308``), as `Histogram` does.

    Example:
        >>> import torch
        >>> [h.counts.tolist() for h in bin_tensors([torch.arange(4.0), torch.ones(2)], bins=2)]
        [[2.0, 2.0], [0.0, 2.0]]
    """
    results: list[Histogram | None] = [None] * len(tensors)
    by_device: dict[str, list[int]] = {}
    for i, tensor in enumerate(tensors):
        by_device.setdefault(str(tensor.device), []).append(i)
    for device, indices in by_device.items():
        group = [tensors[i] for i in indices]
        done = _bin_on_cpu(group, bins) if device == "cpu" else bin_tensors_with_torch(group, bins)
        for i, histogram in zip(indices, done):
            results[i] = histogram
    return [h for h in results if h is not None]


def _bin_on_cpu(tensors: Sequence[torch.Tensor], bins: int) -> list[Histogram]:
    arrays: list[np.ndarray] = []
    encodings: list[Encoding | None] = []
    for tensor in tensors:
        array, encoding = host_array(tensor)
        arrays.append(array)
        encodings.append(encoding)
    binned = _core.histograms(arrays, bins, encodings)
    return [Histogram._of(b.edges, b.counts, b.stats) for b in binned]


def bin_tensors_with_torch(tensors: Sequence[torch.Tensor], bins: int) -> list[Histogram]:
    """`bin_tensors` for tensors on one device, with the device kernel (`device.bin_on_device`).

    Used for GPUs; it runs on CPU tensors too, which is how it is tested without a GPU.

    Example:
        >>> import torch
        >>> bin_tensors_with_torch([torch.tensor([0.0, 1.0, float("nan")])], bins=2)[0].nonfinite
        1.0
    """
    return [Histogram._of(b.edges, b.counts, b.stats) for b in bin_on_device(tensors, bins)]
