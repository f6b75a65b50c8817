"""The one device binning kernel: tensors binned on their own device with torch's operations.

A GPU tensor's values never come to the host. Batched kernels compute every
tensor's moments (`moments_on_device`: count, extremes, mean, spread); the
core's rules turn each tensor's extremes into its edges on the host
(`default_edges`: `_core.default_range`, then `_core.uniform_edges`), or the
caller gives shared edges; batched kernels then count the values in those
bins (`counts_on_device`). Two small copies bring the results back. Values
are compared in float64 against float64 edges, so the counts equal the
core's. `Histogram` (one tensor, any bins, range and weights), `watch` (a
whole model, equal bins) and sharded capture (each rank's shard, on edges
shared by every rank) all bin here; it runs on CPU tensors too, which is how
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

if TYPE_CHECKING:
    import torch

DEVICE_CHUNK_VALUES = 1 << 25
"""The most values binned in one batch on a device: its temporaries stay a
small multiple of this many float64s, whatever the size of the model."""

MOMENTS = ("count", "min", "max", "mean", "m2", "nonfinite")
"""The columns of a moments row: the (weighted) count of the finite values,
their extremes (+inf and -inf without any), mean, sum of squared deviations
from the mean, and the (weighted) count of the NaN and infinite values."""

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
    equal = isinstance(bins, int)
    bin_count = bins if isinstance(bins, int) else len(bins) - 1
    results: list[Binned] = []
    for start, end in _batches(tensors):
        part = None if weights is None else weights[start:end]
        flat = _Flat.of(tensors[start:end], part)
        moments = _moments(flat).cpu().numpy()
        if shared is None:
            edges = default_edges(moments[:, 1], moments[:, 2], bin_count)
            _check_spans(edges, moments, start)
        else:
            edges = np.broadcast_to(shared, (flat.n, bin_count + 1))
        tally = _tally(flat, edges, equal).cpu().numpy()
        results += [
            Binned(row.copy(), counts[:bin_count].copy(), stats_of(moment, counts))
            for row, counts, moment in zip(edges, tally, moments)
        ]
    return results


def moments_on_device(tensors: Sequence[torch.Tensor]) -> np.ndarray:
    """Each tensor's `MOMENTS` row (tensors on one device), as a float64 array on the host.

    Example:
        >>> import torch
        >>> moments_on_device([torch.tensor([1.0, 3.0, float("inf")])]).tolist()
        [[2.0, 1.0, 3.0, 2.0, 2.0, 1.0]]
    """
    rows = [_moments(_Flat.of(tensors[start:end], None)) for start, end in _batches(tensors)]
    if not rows:
        return np.zeros((0, len(MOMENTS)))
    import torch

    return torch.cat(rows).cpu().numpy()


def counts_on_device(tensors: Sequence[torch.Tensor], edges: np.ndarray) -> np.ndarray:
    """How many values of each tensor fall in each bin of its row of ``edges``.

    ``edges`` holds one row of equal edges per tensor, as `default_edges`
    makes them (``edges[j] <= x < edges[j + 1]``, the last bin closed);
    values outside a row's edges and nonfinite values are not counted.

    Example:
        >>> import numpy as np, torch
        >>> counts_on_device([torch.tensor([0.0, 0.5, 1.0])], np.array([[0.0, 0.5, 1.0]])).tolist()
        [[1.0, 2.0]]
    """
    bins = edges.shape[1] - 1
    rows = [
        _tally(_Flat.of(tensors[start:end], None), edges[start:end], equal=True)[:, :bins]
        for start, end in _batches(tensors)
    ]
    if not rows:
        return np.zeros((0, bins))
    import torch

    return torch.cat(rows).cpu().numpy()


def default_edges(low: np.ndarray, high: np.ndarray, bins: int) -> np.ndarray:
    """The edges of ``bins`` equal bins over each pair of finite extremes' default range.

    The core's rules, row by row: `_core.default_range` (numpy's, widened
    for a constant or a span too narrow for distinct edges; (0, 1) without
    values), then `_core.uniform_edges`. A row whose span is wider than a
    float64 holds is NaN.

    Example:
        >>> default_edges(np.array([0.0, 2.0]), np.array([1.0, 2.0]), 2).tolist()
        [[0.0, 0.5, 1.0], [1.5, 2.0, 2.5]]
    """
    edges = np.empty((len(low), bins + 1))
    for row, (smallest, largest) in enumerate(zip(low.tolist(), high.tolist())):
        lo, hi = _core.default_range(smallest, largest)
        try:
            edges[row] = _core.uniform_edges(lo, hi, bins)
        except ValueError:
            edges[row] = _NAN
    return edges


def stats_of(moments: np.ndarray, tally: np.ndarray | None = None) -> _core.Stats:
    """The statistics of a `MOMENTS` row, with below and above from a tally's last three slots.

    Example:
        >>> stats_of(np.array([2.0, 1.0, 3.0, 2.0, 2.0, 0.0])).std
        1.0
    """
    count, low, high, mean, m2, nonfinite = moments.tolist()
    some, counted = low <= high, count > 0
    below, above = (0.0, 0.0) if tally is None else (float(tally[-3]), float(tally[-2]))
    return _core.Stats(
        count=count,
        min=low if some else _NAN,
        max=high if some else _NAN,
        mean=mean if counted else _NAN,
        std=float(np.sqrt(m2 / count)) if counted else _NAN,
        nonfinite=nonfinite,
        below=below,
        above=above,
    )


def _batches(tensors: Sequence[torch.Tensor]) -> list[tuple[int, int]]:
    """Consecutive runs of tensors of at most `DEVICE_CHUNK_VALUES` values (or one tensor)."""
    runs: list[tuple[int, int]] = []
    start, size = 0, 0
    for end, tensor in enumerate(tensors):
        if end > start and size + tensor.numel() > DEVICE_CHUNK_VALUES:
            runs.append((start, end))
            start, size = end, 0
        size += tensor.numel()
    if start < len(tensors):
        runs.append((start, len(tensors)))
    return runs


def _shared_edges(bins: int | np.ndarray, range: tuple[float, float] | None) -> np.ndarray | None:
    """The edges every tensor shares, or None when each has its own default range."""
    if not isinstance(bins, int):
        return np.asarray(bins, dtype=np.float64)
    if range is not None:
        return _core.uniform_edges(range[0], range[1], bins)
    return None


def _check_spans(edges: np.ndarray, moments: np.ndarray, first_index: int) -> None:
    wide = np.flatnonzero(np.isnan(edges[:, 0]))
    if len(wide):
        row = int(wide[0])
        raise ValueError(
            f"tensor {first_index + row}: its finite values span more than a float64 holds "
            f"({moments[row, 1]:g} to {moments[row, 2]:g}); bin it with a range"
        )


@dataclasses.dataclass(frozen=True)
class _Flat:
    """A batch of tensors as one flat run of values on their device."""

    x: torch.Tensor
    """The values: float32 when every tensor is 32 bits or narrower (exact), else float64."""
    xd: torch.Tensor
    """The values in float64, nonfinite ones as 0."""
    seg: torch.Tensor
    """Each value's tensor."""
    finite: torch.Tensor
    weight: torch.Tensor
    """Each value's weight in the moments: 0 for nonfinite values."""
    counted: torch.Tensor
    """The values that count for the extremes: finite, of nonzero weight."""
    tallied: torch.Tensor
    """What each value adds to its bin: 1, or its weight."""
    n: int

    @classmethod
    def of(cls, tensors: Sequence[torch.Tensor], weights: Sequence[Weights] | None) -> _Flat:
        import torch

        device = tensors[0].device
        lengths = [t.numel() for t in tensors]
        total = sum(lengths)
        # Float32 and narrower (float8 included) hold every value exactly in float32.
        narrow = all(t.is_floating_point() and t.element_size() <= 4 for t in tensors)
        wide = torch.float32 if narrow else torch.float64
        x = torch.cat([t.detach().reshape(-1).to(wide) for t in tensors])
        seg = torch.repeat_interleave(
            torch.arange(len(tensors), device=device),
            torch.tensor(lengths, device=device),
            output_size=total,
        )
        finite = torch.isfinite(x)
        xd = torch.where(finite, x, 0).to(torch.float64)
        if weights is None:
            ones = torch.ones((), dtype=torch.float64, device=device).expand(total)
            return cls(x, xd, seg, finite, finite.to(torch.float64), finite, ones, len(tensors))
        w = _weights_on(weights, device)
        weight = torch.where(finite, w, 0.0)
        return cls(x, xd, seg, finite, weight, finite & (w != 0), w, len(tensors))

    def sums(self, values: torch.Tensor) -> torch.Tensor:
        """Each tensor's sum of ``values`` (float64, one per value)."""
        import torch

        out = torch.zeros(self.n, dtype=torch.float64, device=values.device)
        return out.index_add_(0, self.seg, values)


def _moments(flat: _Flat) -> torch.Tensor:
    """The batch's `MOMENTS`, one row per tensor, on its device."""
    import torch

    count = flat.sums(flat.weight)
    mean = flat.sums(flat.weight * flat.xd) / count
    inf = torch.tensor(float("inf"), dtype=flat.x.dtype, device=flat.x.device)
    low = torch.full((flat.n,), float("inf"), dtype=flat.x.dtype, device=flat.x.device)
    low = low.scatter_reduce_(0, flat.seg, torch.where(flat.counted, flat.x, inf), "amin")
    high = torch.full((flat.n,), -float("inf"), dtype=flat.x.dtype, device=flat.x.device)
    high = high.scatter_reduce_(0, flat.seg, torch.where(flat.counted, flat.x, -inf), "amax")
    deviation = torch.where(flat.finite, flat.xd - mean[flat.seg], 0)
    m2 = flat.sums(flat.weight * deviation * deviation)
    nonfinite = flat.sums(torch.where(flat.finite, 0.0, flat.tallied))
    return torch.stack([count, low.double(), high.double(), mean, m2, nonfinite], 1)


def _tally(flat: _Flat, edges: np.ndarray, equal: bool) -> torch.Tensor:
    """Each tensor's counts on its row of ``edges``, then below, above and nonfinite."""
    import torch

    bins = edges.shape[1] - 1
    # A writable copy: shared edges come as a read-only broadcast view.
    on_device = torch.as_tensor(np.array(edges, dtype=np.float64), device=flat.x.device)
    if equal:
        # A step that underflows to 0 (a span of a few subnormals) repeats edges: those
        # rows are searched instead, found here on the host so that the device never waits.
        repeated = np.flatnonzero((edges[:, -1] - edges[:, 0]) / bins == 0).tolist()
        slot = _equal_slots(flat, on_device, repeated)
    else:
        slot = _searched_slots(flat, on_device[0])
    # Slots past the bins: bins for below the edges, bins + 1 above, bins + 2 nonfinite.
    slot = torch.where(flat.finite, slot, bins + 2) + flat.seg * (bins + 3)
    tally = torch.zeros(flat.n * (bins + 3), dtype=torch.float64, device=flat.x.device)
    return tally.index_add_(0, slot, flat.tallied.to(torch.float64)).reshape(flat.n, bins + 3)


def _equal_slots(flat: _Flat, edges: torch.Tensor, repeated: list[int]) -> torch.Tensor:
    """Each value's bin among its tensor's equal edges, found by arithmetic and corrected
    against the edges, as the core does (by a search in the ``repeated`` rows, whose step
    is 0); below and above as `bins` and `bins + 1`."""
    import torch

    bins = edges.shape[1] - 1
    lo, hi = edges[:, 0], edges[:, -1]
    step = (hi - lo) / bins
    xd, seg = flat.xd, flat.seg
    flat_edges = edges.reshape(-1)
    base = seg * (bins + 1)
    # A finite, nonzero width keeps the repeated rows' indices in bounds until they are searched.
    width = torch.where(torch.isfinite(step) & (step > 0), step, 1.0)
    slot = torch.floor((xd - lo[seg]) / width[seg]).clamp_(0, bins - 1).to(torch.int64)
    # The division can land one bin off next to an edge; the edges decide.
    slot -= (xd < flat_edges[base + slot]).to(torch.int64)
    slot += ((xd >= flat_edges[base + slot + 1]) & (slot < bins - 1)).to(torch.int64)
    for row in repeated:
        mine = seg == row
        interior = edges[row, 1:-1].contiguous()
        slot[mine] = torch.searchsorted(interior, xd[mine], right=True)
    slot = torch.where(xd < lo[seg], bins, slot)
    return torch.where(xd > hi[seg], bins + 1, slot)


def _searched_slots(flat: _Flat, edges: torch.Tensor) -> torch.Tensor:
    """Each value's bin among edges shared by every tensor: below and above counted apart."""
    import torch

    bins = len(edges) - 1
    slot = torch.searchsorted(edges[1:-1].contiguous(), flat.xd, right=True)
    slot = torch.where(flat.xd < edges[0], bins, slot)
    return torch.where(flat.xd > edges[-1], bins + 1, slot)


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
