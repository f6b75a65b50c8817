"""The one device binning kernel: tensors binned on their own device with torch's operations.

A GPU tensor's values never come to the host: a few batched kernels compute
every tensor's range, moments and counts, and one copy brings the small
results back. The edges are the Rust core's: equal bins over each tensor's
default range (numpy's rule, `_default_ranges`), or shared edges from a
given range (`_core.uniform_edges`) or given by the caller. Values are
compared in float64 against float64 edges, so the counts equal the core's.
`Histogram` (one tensor, any bins, range and weights) and `watch` (a whole
model, equal bins) both bin here; it runs on CPU tensors too, which is how
it is tested without a GPU.

Example:
    >>> import torch
    >>> from histoscope.write.device import bin_on_device
    >>> [b.counts.tolist() for b in bin_on_device([torch.arange(4.0), torch.ones(2)], 2)]
    [[2.0, 2.0], [0.0, 2.0]]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Union

import numpy as np

from .. import _args, _core
from ._torch import host_array

if TYPE_CHECKING:
    import torch

__all__ = ["DEVICE_CHUNK_VALUES", "Binned", "bin_on_device"]

DEVICE_CHUNK_VALUES = 1 << 25
"""The most values binned in one batch on a device: its temporaries stay a
small multiple of this many float64s, whatever the size of the model."""

Weights = Union[np.ndarray, "torch.Tensor"]
_NAN = float("nan")


@dataclasses.dataclass(frozen=True)
class Binned:
    """One tensor's histogram as the kernel returns it: float64 edges and counts on the host,
    and its statistics."""

    edges: np.ndarray
    counts: np.ndarray
    stats: _core.Stats


def bin_on_device(
    tensors: Sequence[torch.Tensor],
    bins: int | np.ndarray,
    range: tuple[float, float] | None = None,
    weights: Sequence[Weights] | None = None,
) -> list[Binned]:
    """The histograms of ``tensors`` (all on one device), in order.

    ``bins`` is a checked number of equal bins or checked edges, shared by
    every tensor with ``range``; ``weights`` has one array or tensor per
    tensor, of its shape. Tensors are taken in batches of at most
    `DEVICE_CHUNK_VALUES` values (a larger tensor is a batch of its own), so
    memory stays proportional to a batch's values, never to values x bins.
    Raises ValueError naming the first tensor whose finite values span more
    than a float64 can hold, as `Histogram` does.
    """
    shared = _shared_edges(bins, range)
    bin_count = bins if isinstance(bins, int) else len(bins) - 1
    results: list[Binned] = []
    start, size = 0, 0
    for end, tensor in enumerate(tensors):
        if end > start and size + tensor.numel() > DEVICE_CHUNK_VALUES:
            results += _batch(
                tensors[start:end], bin_count, shared, _part(weights, start, end), start
            )
            start, size = end, 0
        size += tensor.numel()
    if start < len(tensors):
        results += _batch(tensors[start:], bin_count, shared, _part(weights, start, None), start)
    return results


def _part(
    weights: Sequence[Weights] | None, start: int, end: int | None
) -> Sequence[Weights] | None:
    return None if weights is None else weights[start:end]


def _shared_edges(bins: int | np.ndarray, range: tuple[float, float] | None) -> np.ndarray | None:
    """The edges every tensor shares, or None when each has its own default range."""
    if not isinstance(bins, int):
        return np.asarray(bins, dtype=np.float64)
    if range is not None:
        return _core.uniform_edges(range[0], range[1], bins)
    return None


def _batch(
    tensors: Sequence[torch.Tensor],
    bins: int,
    shared: np.ndarray | None,
    weights: Sequence[Weights] | None,
    first_index: int,
) -> list[Binned]:
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
        torch.arange(n, device=device), torch.tensor(lengths, device=device), output_size=total
    )
    finite = torch.isfinite(x)
    xd = torch.where(finite, x, 0).to(f64)
    w = None if weights is None else _weights_on(weights, device)
    weight = finite.to(f64) if w is None else torch.where(finite, w, 0.0)
    counted = finite if w is None else finite & (w != 0)
    count = torch.zeros(n, dtype=f64, device=device).index_add_(0, seg, weight)
    mean = torch.zeros(n, dtype=f64, device=device).index_add_(0, seg, weight * xd) / count
    inf = torch.tensor(float("inf"), dtype=wide, device=device)
    low = torch.full((n,), float("inf"), dtype=wide, device=device).scatter_reduce_(
        0, seg, torch.where(counted, x, inf), "amin"
    )
    high = torch.full((n,), -float("inf"), dtype=wide, device=device).scatter_reduce_(
        0, seg, torch.where(counted, x, -inf), "amax"
    )
    deviation = torch.where(finite, xd - mean[seg], 0)
    m2 = torch.zeros(n, dtype=f64, device=device).index_add_(0, seg, weight * deviation * deviation)
    if shared is None:
        edges, step, slot = _own_edges(xd, seg, low.to(f64), high.to(f64), bins)
    else:
        edges, step, slot = _on_shared_edges(xd, shared, n)
    # Slots past the bins: bins for below the edges, bins + 1 above, bins + 2 nonfinite.
    slot = torch.where(finite, slot, bins + 2) + seg * (bins + 3)
    tallied = torch.ones((), dtype=f64, device=device).expand(total) if w is None else w
    tally = torch.zeros(n * (bins + 3), dtype=f64, device=device).index_add_(0, slot, tallied)
    moments = torch.stack([count, low.to(f64), high.to(f64), mean, torch.sqrt(m2 / count), step], 1)
    host = torch.cat([edges, tally.reshape(n, bins + 3), moments], dim=1).cpu().numpy()
    return [_binned(host[i], bins, tensors[i], first_index + i) for i in range(n)]


def _weights_on(weights: Sequence[Weights], device: torch.device) -> torch.Tensor:
    import torch

    flat = []
    for w in weights:
        if isinstance(w, np.ndarray):
            host = np.ascontiguousarray(w, dtype=np.float64).reshape(-1)
            flat.append(torch.from_numpy(host).to(device))
        else:
            flat.append(w.detach().reshape(-1).to(device=device, dtype=torch.float64))
    joined = torch.cat(flat)
    _args.usable_weights(bool((torch.isfinite(joined) & (joined >= 0)).all()))
    return joined


def _own_edges(
    xd: torch.Tensor, seg: torch.Tensor, low: torch.Tensor, high: torch.Tensor, bins: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each tensor's equal edges over its default range, and each value's bin."""
    import torch

    lo, hi = _default_ranges(low, high)
    step = (hi - lo) / bins
    # j * step + lo, the last edge hi exactly: the core's (and numpy.linspace's) edges.
    edges = torch.arange(bins + 1, dtype=torch.float64, device=xd.device)[None, :] * step[:, None]
    edges = edges + lo[:, None]
    edges[:, -1] = hi
    flat_edges = edges.reshape(-1)
    base = seg * (bins + 1)
    # A span too wide for float64 is reported by `_binned`, and one of a few subnormals (a
    # step of 0) is binned again by the core; a finite width keeps their indices in bounds.
    width = torch.where(torch.isfinite(step) & (step > 0), step, 1.0)
    slot = torch.floor((xd - lo[seg]) / width[seg]).clamp_(0, bins - 1).to(torch.int64)
    # The division can land one bin off next to an edge; the edges decide, as in the core.
    slot -= (xd < flat_edges[base + slot]).to(torch.int64)
    slot += ((xd >= flat_edges[base + slot + 1]) & (slot < bins - 1)).to(torch.int64)
    return edges, step, slot


def _on_shared_edges(
    xd: torch.Tensor, shared: np.ndarray, n: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The shared edges for every tensor, and each value's bin: below and above counted apart."""
    import torch

    bins = len(shared) - 1
    edges = torch.tensor(shared, dtype=torch.float64, device=xd.device)
    slot = torch.searchsorted(edges[1:-1].contiguous(), xd, right=True)
    slot = torch.where(xd < edges[0], bins, slot)
    slot = torch.where(xd > edges[-1], bins + 1, slot)
    step = torch.ones(n, dtype=torch.float64, device=xd.device)  # any finite, nonzero width
    return edges.expand(n, bins + 1), step, slot


def _binned(row: np.ndarray, bins: int, tensor: torch.Tensor, index: int) -> Binned:
    edges, tally, moments = row[: bins + 1], row[bins + 1 : 2 * bins + 4], row[2 * bins + 4 :]
    count, low, high, mean, std, width = moments
    if not np.isfinite(width):
        raise ValueError(
            f"tensor {index}: its finite values span more than a float64 holds "
            f"({low:g} to {high:g}); bin it with a range"
        )
    if width == 0:
        # numpy's edges for a span whose step underflows: rare enough to bin in the core.
        array, half = host_array(tensor.detach().cpu())
        on_host = _core.histogram(array, bins=bins, encoding=half)
        return Binned(on_host.edges, on_host.counts, on_host.stats)
    some, counted = low <= high, count > 0
    stats = _core.Stats(
        count=float(count),
        min=float(low) if some else _NAN,
        max=float(high) if some else _NAN,
        mean=float(mean) if counted else _NAN,
        std=float(std) if counted else _NAN,
        nonfinite=float(tally[bins + 2]),
        below=float(tally[bins]),
        above=float(tally[bins + 1]),
    )
    return Binned(edges.copy(), tally[:bins].copy(), stats)


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
