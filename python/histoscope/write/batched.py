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
from .histogram import Histogram

if TYPE_CHECKING:
    import torch

__all__ = ["bin_tensors", "bin_tensors_with_torch"]

DEVICE_CHUNK_VALUES = 1 << 25
"""The most values binned in one batch on a device: its temporaries stay a
small multiple of this many float64s, whatever the size of the model."""

_NUMPY_DTYPES = {
    "float64", "float32", "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64", "bool",
}  # fmt: skip


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
    import torch

    arrays: list[np.ndarray] = []
    encodings: list[str] = []
    for tensor in tensors:
        flat = tensor.detach().resolve_conj().resolve_neg().reshape(-1)
        dtype = str(flat.dtype).removeprefix("torch.")
        if dtype in ("float16", "bfloat16"):
            arrays.append(flat.view(torch.int16).numpy().view(np.uint16))
            encodings.append(dtype)
            continue
        arrays.append((flat if dtype in _NUMPY_DTYPES else flat.to(torch.float64)).numpy())
        encodings.append("")
    binned = _core.histograms(arrays, bins, encodings)
    return [Histogram._of(b.edges, b.counts, tuple(b.stats)) for b in binned]


def bin_tensors_with_torch(tensors: Sequence[torch.Tensor], bins: int) -> list[Histogram]:
    """`bin_tensors` for tensors on one device, with torch's kernels on that device.

    Used for GPUs; it runs on CPU tensors too, which is how it is tested
    without a GPU. Tensors are taken in batches of at most
    `DEVICE_CHUNK_VALUES` values (a larger tensor is a batch of its own), so
    memory stays proportional to the values of a batch, never to values x bins.

    Example:
        >>> import torch
        >>> bin_tensors_with_torch([torch.tensor([0.0, 1.0, float("nan")])], bins=2)[0].nonfinite
        1.0
    """
    histograms: list[Histogram] = []
    batch: list[torch.Tensor] = []
    size = 0
    for tensor in tensors:
        if batch and size + tensor.numel() > DEVICE_CHUNK_VALUES:
            histograms += _bin_batch_with_torch(batch, bins, len(histograms))
            batch, size = [], 0
        batch.append(tensor)
        size += tensor.numel()
    if batch:
        histograms += _bin_batch_with_torch(batch, bins, len(histograms))
    return histograms


def _bin_batch_with_torch(
    tensors: Sequence[torch.Tensor], bins: int, first_index: int
) -> list[Histogram]:
    import torch

    device = tensors[0].device
    f64 = torch.float64
    n = len(tensors)
    lengths = [t.numel() for t in tensors]
    total = sum(lengths)
    # Float32 and narrower hold every value exactly in float32; wider types go to float64.
    narrow = all(t.dtype in (torch.float32, torch.float16, torch.bfloat16) for t in tensors)
    wide = torch.float32 if narrow else f64
    x = torch.cat([t.detach().reshape(-1).to(wide) for t in tensors])
    seg = torch.repeat_interleave(
        torch.arange(n, device=device),
        torch.tensor(lengths, device=device),
        output_size=total,
    )
    finite = torch.isfinite(x)
    xd = torch.where(finite, x, 0).to(f64)
    count = torch.zeros(n, dtype=f64, device=device).index_add_(0, seg, finite.to(f64))
    total_sum = torch.zeros(n, dtype=f64, device=device).index_add_(0, seg, xd)
    mean = total_sum / count
    inf = torch.tensor(float("inf"), dtype=wide, device=device)
    low = torch.full((n,), float("inf"), dtype=wide, device=device).scatter_reduce_(
        0, seg, torch.where(finite, x, inf), "amin"
    )
    high = torch.full((n,), -float("inf"), dtype=wide, device=device).scatter_reduce_(
        0, seg, torch.where(finite, x, -inf), "amax"
    )
    deviation = torch.where(finite, xd - mean[seg], 0)
    m2 = torch.zeros(n, dtype=f64, device=device).index_add_(0, seg, deviation * deviation)
    std = torch.sqrt(m2 / count)
    lo, hi = _default_ranges(low.to(f64), high.to(f64))
    step = (hi - lo) / bins
    # j * step + lo, the last edge hi exactly: the core's (and numpy.linspace's) edges.
    edges = torch.arange(bins + 1, dtype=f64, device=device)[None, :] * step[:, None]
    edges = edges + lo[:, None]
    edges[:, -1] = hi
    flat_edges = edges.reshape(-1)
    base = seg * (bins + 1)
    # A span too wide for float64 is reported below, and one of a few subnormals (a step
    # of 0) is binned again by the core; a finite width keeps their indices in bounds.
    width = torch.where(torch.isfinite(step) & (step > 0), step, 1.0)
    slot = torch.floor((xd - lo[seg]) / width[seg]).clamp_(0, bins - 1).to(torch.int64)
    # The division can land one bin off next to an edge; the edges decide, as in the core.
    slot -= (xd < flat_edges[base + slot]).to(torch.int64)
    slot += ((xd >= flat_edges[base + slot + 1]) & (slot < bins - 1)).to(torch.int64)
    slot = torch.where(finite, slot, bins) + seg * (bins + 1)
    ones = torch.ones((), dtype=f64, device=device).expand(total)
    tally = torch.zeros(n * (bins + 1), dtype=f64, device=device).index_add_(0, slot, ones)
    tally = tally.reshape(n, bins + 1)
    stats = torch.stack([count, low.to(f64), high.to(f64), mean, std, step], dim=1)
    host = torch.cat([edges, tally, stats], dim=1).cpu().numpy()
    histograms = []
    for i in range(n):
        row = host[i]
        counts, row_stats = row[bins + 1 : 2 * bins + 1], row[2 * bins + 2 :]
        cnt, mn, mx, mu, sd, width = row_stats
        if not np.isfinite(width):
            raise ValueError(
                f"tensor {first_index + i}: its finite values span more than a float64 "
                f"holds ({mn:g} to {mx:g}); bin it with a range"
            )
        if width == 0:
            # numpy's edges for a span whose step underflows: rare enough to bin on the host.
            histograms.append(Histogram(tensors[i].detach().cpu(), bins=bins))
            continue
        some = cnt > 0
        nan = float("nan")
        stat = (
            cnt,
            mn if some else nan,
            mx if some else nan,
            mu if some else nan,
            sd if some else nan,
            row[2 * bins + 1],
            0.0,
            0.0,
        )
        histograms.append(Histogram._of(row[: bins + 1].copy(), counts.copy(), stat))
    return histograms


def _default_ranges(low: torch.Tensor, high: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The core's default range for each tensor, on its device: numpy's rule,
    a constant widened by a half (or 2^-40 of itself), (0, 1) without values."""
    import torch

    none = low > high
    same = low == high
    half = torch.clamp(low.abs() * 2.0**-40, min=0.5)
    lo = torch.where(none, 0.0, torch.where(same, low - half, low))
    hi = torch.where(none, 1.0, torch.where(same, high + half, high))
    return lo, hi
