"""PyTorch tensors: recognised without importing torch, copied on their device, binned there.

A GPU tensor is binned with torch's own operations on its device, with the
Rust core's edge rules (`_core.default_range`, `_core.uniform_edges`), so
that only the counts and the statistics come to the host and the counts
equal the Rust path's.

Example:
    >>> import torch
    >>> from histoscope.write import _torch
    >>> edges, counts, stats = _torch.bin_on_device(torch.tensor([0.0, 1.0, 1.0]), 2)
    >>> counts.tolist(), stats[0]
    ([1.0, 2.0], 3.0)
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from .. import _core

if TYPE_CHECKING:
    import torch

__all__ = [
    "NUMPY_DTYPES",
    "bin_on_device",
    "check_weights_are_usable",
    "device_type",
    "flat_numpy",
    "flat_numpy_weights",
    "is_torch_tensor",
    "snapshot_tensor",
]

NUMPY_DTYPES = frozenset(
    {
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
)
"""The torch dtypes that NumPy holds as they are (bfloat16 is not among them)."""

_NAN = float("nan")

Stats = tuple[float, float, float, float, float, float, float, float]
"""(count, min, max, mean, std, nonfinite, below, above), as `_core.STAT_NAMES` names them."""

Weights = Union[np.ndarray, "torch.Tensor"]


def is_torch_tensor(values: Any) -> bool:
    """Whether ``values`` is a torch tensor, checked without importing torch for other types.

    Example:
        >>> is_torch_tensor(np.zeros(2))
        False
    """
    if not type(values).__module__.startswith("torch"):
        return False
    import torch

    return isinstance(values, torch.Tensor)


def snapshot_tensor(tensor: torch.Tensor, name: str) -> torch.Tensor:
    """A detached, dense, contiguous clone of ``tensor`` on its own device.

    Example:
        >>> import torch
        >>> snapshot_tensor(torch.ones(2), "values").tolist()
        [1.0, 1.0]
    """
    import torch

    if tensor.is_complex():
        raise TypeError(f"{name} must be real numbers, got a {tensor.dtype} tensor")
    with torch.no_grad():
        if tensor.layout != torch.strided:
            tensor = tensor.to_dense()
        return tensor.detach().clone(memory_format=torch.contiguous_format)


def device_type(tensor: torch.Tensor) -> str:
    """The kind of device a tensor is on: "cpu", "cuda", "mps", ...

    Example:
        >>> import torch
        >>> device_type(torch.zeros(1))
        'cpu'
    """
    return str(tensor.device).split(":")[0]


def check_weights_are_usable(usable: bool) -> None:
    """Raises the one ValueError every path gives for negative or nonfinite weights.

    Example:
        >>> check_weights_are_usable(True)
    """
    if not usable:
        raise ValueError("weights must be finite and not negative")


def flat_numpy(tensor: torch.Tensor) -> tuple[np.ndarray, str | None]:
    """A flat NumPy view of a CPU tensor, and "bfloat16" when its uint16s hold those bits.

    Example:
        >>> import torch
        >>> flat_numpy(torch.ones(2, 2))[0].shape
        (4,)
    """
    import torch

    flat = tensor.detach().reshape(-1).cpu()
    if flat.dtype == torch.bfloat16:
        return flat.view(torch.int16).numpy().view(np.uint16), "bfloat16"
    if str(flat.dtype).removeprefix("torch.") not in NUMPY_DTYPES:
        flat = flat.to(torch.float64)
    return flat.numpy(), None


def flat_numpy_weights(weights: torch.Tensor) -> np.ndarray:
    """A tensor's weights as flat float64 on the host, checked to be usable.

    Example:
        >>> import torch
        >>> flat_numpy_weights(torch.ones(2)).tolist()
        [1.0, 1.0]
    """
    flat = weights.detach().reshape(-1).to("cpu").double()
    check_weights_are_usable(bool((flat.isfinite() & (flat >= 0)).all()))
    return flat.numpy()


def _on_device(weights: Weights, device: torch.device) -> torch.Tensor:
    import torch

    if not isinstance(weights, np.ndarray):
        return weights.detach().reshape(-1).to(device=device, dtype=torch.float64)
    flat = np.ascontiguousarray(weights, dtype=np.float64).reshape(-1)
    return torch.from_numpy(flat).to(device)


def bin_on_device(
    tensor: torch.Tensor,
    bins: int | np.ndarray,
    range: tuple[float, float] | None = None,
    weights: Weights | None = None,
) -> tuple[np.ndarray, np.ndarray, Stats]:
    """Bins a tensor on its own device with torch's operations, as the Rust core does.

    ``bins`` is a checked number of equal bins or checked edges. Values are
    compared in float64 with the same float64 edges, so the counts equal the
    NumPy path's; only the counts and six statistics are copied to the host.
    Returns (edges, counts, stats).
    """
    import torch

    x = tensor.detach().reshape(-1).to(torch.float64)
    finite = torch.isfinite(x)
    if weights is None:
        w = torch.ones_like(x)
    else:
        w = _on_device(weights, x.device)
        check_weights_are_usable(bool((torch.isfinite(w) & (w >= 0)).all()))
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
        lo, hi = range if range is not None else _core.default_range(low_, high_)
        edges = _core.uniform_edges(lo, hi, bins)
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
    return edges, tally_[:n], stats
